"""Figures: pyplot is imported where a figure is drawn, and the backend is never switched by the library.

Importing a check module therefore leaves a notebook's backend alone.  ``python -m verify`` chooses ``Agg``
itself (``verify/__main__.py``); without a display matplotlib falls back to ``Agg`` on its own, and every figure
is saved to a file and closed (:meth:`verify.registry.CheckContext.save_figure`).
"""

from __future__ import annotations

from typing import Any


def pyplot() -> Any:
    """``matplotlib.pyplot``, imported on first use."""
    import matplotlib.pyplot as plt

    return plt
