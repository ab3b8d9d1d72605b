"""Sweep cache keys follow the code of the sweep function (numerics.sweep.cache_key, source=True).

A function redefined with another body (an edited notebook cell) must get new keys, so that ``run_sweep`` computes
it again instead of returning the values cached for the old body; the same code must give the same key in every
process (the cache is shared between runs).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import types

from numerics.sweep import Workers, cache_key, cell_seed, run_sweep

CELL = {"a": 1}


def _module(name: str, body: str) -> types.ModuleType:
    """A module ``name`` made from ``body`` with exec and no source file (as code typed at a prompt)."""
    mod = types.ModuleType(name)
    exec(compile(textwrap.dedent(body), f"<{name}>", "exec"), mod.__dict__)
    return mod


def _file_module(tmp_path, name: str, body: str) -> types.ModuleType:
    """A module ``name`` imported from a file under ``tmp_path`` (its source is available to inspect)."""
    import importlib.util

    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(body))
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


F1 = """
def f(cell, seed):
    return {"x": cell["a"] + seed}
"""
F2 = """
def f(cell, seed):
    return {"x": 2 * cell["a"] + seed}
"""


def test_redefined_function_gets_another_key_with_and_without_source(tmp_path):
    """Same qualified name ``m.f``, different bodies: different keys, from the source (a file) and from the code
    object (no source available)."""
    for make in (lambda name, body: _module(name, body), lambda name, body: _file_module(tmp_path / name, name, body)):
        (tmp_path / "m").mkdir(exist_ok=True)
        (tmp_path / "n").mkdir(exist_ok=True)
        one, two = make("m", F1).f, make("n", F2).f
        two.__module__ = one.__module__ = "m"
        assert one.__qualname__ == two.__qualname__
        assert cache_key(one, CELL, 0) != cache_key(two, CELL, 0)
        assert cache_key(one, CELL, 0, source=False) == cache_key(two, CELL, 0, source=False)


def test_layout_comments_and_docstrings_do_not_change_the_key(tmp_path):
    a = _file_module(tmp_path, "lay_a", F1).f
    b = _file_module(tmp_path, "lay_b", '''
        def f(cell,   seed):
            """A docstring."""
            # a comment
            return {"x": cell["a"]
                    + seed}
        ''').f
    b.__module__ = a.__module__
    assert cache_key(a, CELL, 0) == cache_key(b, CELL, 0)


def test_an_edited_helper_changes_the_key():
    """The code of the functions ``func`` calls (its module's, by global name) is part of the key."""
    mod = _module("helpers", """
        def helper(a):
            return a + 1

        def f(cell, seed):
            return {"x": helper(cell["a"]) + seed}
        """)
    before = cache_key(mod.f, CELL, 0)
    exec(compile("def helper(a):\n    return a + 2\n", "<edit>", "exec"), mod.__dict__)
    assert cache_key(mod.f, CELL, 0) != before


def test_run_sweep_recomputes_a_redefined_function(tmp_path):
    """The notebook case end to end: a cached sweep of ``f``, then ``f`` redefined under the same name."""
    cache = tmp_path / "cache"
    one = _file_module(tmp_path, "sweepmod", F1).f
    first = run_sweep(one, [CELL], seeds=[3], cache_dir=cache, workers=Workers(n_jobs=1))
    assert first.n_computed == 1 and first[0]["x"] == 4
    assert run_sweep(one, [CELL], seeds=[3], cache_dir=cache, workers=Workers(n_jobs=1)).n_cached == 1
    (tmp_path / "v2").mkdir()
    two = _file_module(tmp_path / "v2", "sweepmod", F2).f
    again = run_sweep(two, [CELL], seeds=[3], cache_dir=cache, workers=Workers(n_jobs=1))
    assert again.n_computed == 1 and again[0]["x"] == 5


_CHILD = """
import sys, types, importlib.util
sys.path.insert(0, {path!r})
from numerics.sweep import cache_key, cell_seed
import keymod
mod = types.ModuleType("nosrc")
exec(compile({body!r}, "<nosrc>", "exec"), mod.__dict__)
print(cache_key(keymod.f, {{"a": 1}}, 0), cache_key(mod.f, {{"a": 1}}, 0), cache_key(cell_seed, {{"a": 1}}, 0))
"""


def test_the_key_is_the_same_in_another_process(tmp_path):
    """A function of a file, one without source (code object) and a project function: one key in both processes."""
    (tmp_path / "keymod.py").write_text(F1)
    sys.path.insert(0, str(tmp_path))
    try:
        import keymod
    finally:
        sys.path.remove(str(tmp_path))
    nosrc = _module("nosrc", F2)
    here = f"{cache_key(keymod.f, CELL, 0)} {cache_key(nosrc.f, CELL, 0)} {cache_key(cell_seed, CELL, 0)}"
    child = subprocess.run([sys.executable, "-c", _CHILD.format(path=str(tmp_path), body=F2)],
                           capture_output=True, text=True, timeout=60, check=True)
    assert child.stdout.split() == here.split()
