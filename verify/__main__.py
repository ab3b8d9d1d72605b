"""``python -m verify``: see :mod:`verify.cli`.  A Ctrl-C while the imports run exits 130 with one line, without a
traceback; during the checks :func:`verify.cli.main` handles it (the finished checks are written first)."""

import sys

try:
    import matplotlib

    matplotlib.use("Agg")

    from .cli import main  # noqa: E402

    code = main()
except KeyboardInterrupt:
    print("interrupted before any check finished: nothing to write; run the same command again", file=sys.stderr)
    code = 130
sys.exit(code)
