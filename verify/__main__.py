"""``python -m verify``: see :mod:`verify.cli`."""

import sys

import matplotlib

matplotlib.use("Agg")

from .cli import main  # noqa: E402

sys.exit(main())
