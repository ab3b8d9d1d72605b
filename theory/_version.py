"""The toolkit's version, one source of truth: ``version`` in ``pyproject.toml``.

Read from the installed distribution's metadata (:func:`importlib.metadata.version`); in a source tree that was never
installed, from ``pyproject.toml`` next to the packages; else ``"0+unknown"``. ``theory.__version__``,
``numerics.__version__``, ``verify.__version__`` and ``python -m verify --version`` all show this one value.
"""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

__all__ = ["DISTRIBUTION", "__version__"]

#: the distribution name in ``pyproject.toml``
DISTRIBUTION = "attention-theory-verify"


def _version() -> str:
    """The installed distribution's version, else the one of ``pyproject.toml``, else ``"0+unknown"``."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
        try:
            found = re.search(r'^version\s*=\s*"([^"]+)"', pyproject.read_text(), flags=re.M)
        except OSError:
            found = None
        return found.group(1) if found else "0+unknown"


__version__ = _version()
