"""``python -m benchmarks.code_size [--json]``: the size of the library, counted with :mod:`ast`.

Over ``theory/``, ``numerics/`` and ``verify/`` (files named ``multi_head`` / ``multihead`` left out):

- code lines: lines that are not blank, not comments and not docstrings;
- all lines;
- functions with 10 or more parameters (``self`` / ``cls`` not counted, ``*args`` / ``**kwargs`` counted);
- lines that mention deprecation;
- modules that hold a claim registry (define ``register``; the claim modules call it).
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("theory", "numerics", "verify")


def _files(package: str) -> list[Path]:
    return sorted(p for p in (ROOT / package).rglob("*.py")
                  if "multi_head" not in p.name and "multihead" not in p.name)


def _docstring_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                lines.update(range(body[0].lineno, body[0].end_lineno + 1))
    return lines


def _code_lines(text: str, tree: ast.AST) -> int:
    docs = _docstring_lines(tree)
    code: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                        tokenize.ENDMARKER):
            continue
        code.update(line for line in range(tok.start[0], tok.end[0] + 1) if line not in docs)
    return len(code)


def _n_params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    a = fn.args
    names = [x.arg for x in a.posonlyargs + a.args]
    n = len(names) + len(a.kwonlyargs) + (a.vararg is not None) + (a.kwarg is not None)
    return n - (1 if names and names[0] in ("self", "cls") else 0)


def measure() -> dict:
    """The counts, per package and in total."""
    out: dict = {"packages": {}, "wide_functions": [], "deprecation_lines": 0, "registering_modules": []}
    for package in PACKAGES:
        code = total = 0
        for path in _files(package):
            text = path.read_text()
            tree = ast.parse(text)
            rel = str(path.relative_to(ROOT))
            code += _code_lines(text, tree)
            total += len(text.splitlines())
            out["deprecation_lines"] += sum("deprecat" in line.lower() for line in text.splitlines())
            registers = False
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    if _n_params(node) >= 10:
                        out["wide_functions"].append(f"{rel}:{node.lineno} {node.name} ({_n_params(node)})")
                    registers |= node.name == "register"
            if registers:
                out["registering_modules"].append(rel)
        out["packages"][package] = {"code_lines": code, "all_lines": total}
    out["code_lines"] = sum(p["code_lines"] for p in out["packages"].values())
    out["all_lines"] = sum(p["all_lines"] for p in out["packages"].values())
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.code_size", description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the counts as JSON")
    args = parser.parse_args(argv)
    m = measure()
    if args.json:
        print(json.dumps(m, indent=2))
        return 0
    for name, p in m["packages"].items():
        print(f"{name:9s} code lines {p['code_lines']:6d}   all lines {p['all_lines']:6d}")
    print(f"{'total':9s} code lines {m['code_lines']:6d}   all lines {m['all_lines']:6d}")
    print(f"functions with >= 10 parameters: {len(m['wide_functions'])}")
    for f in m["wide_functions"]:
        print(f"  {f}")
    print(f"lines mentioning deprecation: {m['deprecation_lines']}")
    print(f"modules that hold a claim registry: {len(m['registering_modules'])} ({', '.join(m['registering_modules'])})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
