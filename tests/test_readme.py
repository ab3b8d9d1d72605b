"""The README's promises: the quick-start commands are the ones CI runs, and its sympy session runs."""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, flags=re.S)


def test_quick_start_is_two_commands_and_ci_runs_the_test_one():
    quick = README.split("## Quick start", 1)[1]
    lines = [ln for ln in _blocks("bash")[0].splitlines() if ln.strip()]
    assert lines[0] == "python -m venv .venv && . .venv/bin/activate"  # the block opens with a virtual environment
    commands = lines[1:]
    assert len(commands) == 2
    assert commands[0].endswith("python -m verify") and commands[0] in quick
    assert "pytest" in commands[1]
    ci = (ROOT / ".ci" / "run").read_text()
    install, test = [c.strip() for c in commands[1].split("&&")]
    assert install in ci and test in ci


def test_interactive_session_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = _blocks("python")[0]
    ns: dict = {}
    exec(compile(code, "README.md", "exec"), ns)  # noqa: S102 - our own README
    assert (tmp_path / "ridge_error.png").exists()
    sp = ns["sp"]
    assert sp.simplify(sp.limit(ns["finite_sample_slope"](ns["M"], ns["beta"]), ns["M"], sp.oo)
                       + 2 * ns["beta"] / (2 * ns["beta"] + 1)) == 0
    assert ns["min_samples"](1, 5, 2) == 32462
