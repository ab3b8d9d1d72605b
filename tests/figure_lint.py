"""A linter of the report's figures, for the tests: every axis that shows numbers is labelled, log axes carry
readable ticks, nothing overlaps, colours come from the palette, a title names the claim.  :func:`figure_problems`
lists what it finds (an empty list: the figure reads at a glance)."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from verify.figures import OKABE_ITO

def _drawn_tick_labels(axis: Any) -> list[Any]:
    """The tick labels (major and minor, both sides) that are drawn: inside the view, visible, not empty."""
    scale = axis.get_transform()  # compare in the axis' own scale (log, symlog, linear)
    lo, hi = sorted(float(v) for v in scale.transform(np.asarray(axis.get_view_interval(), dtype=float)))
    tol = 1e-9 * max(hi - lo, 1e-300)
    out = []
    for ticks in (axis.get_major_ticks(len(axis.get_majorticklocs())),
                  axis.get_minor_ticks(len(axis.get_minorticklocs()))):
        for t in ticks:
            loc = float(scale.transform(np.array([t.get_loc()], dtype=float))[0])
            if not (np.isfinite(loc) and lo - tol <= loc <= hi + tol):
                continue
            out += [lab for lab in (t.label1, t.label2) if lab.get_visible() and lab.get_text().strip()]
    return out


def _overlap(a: Any, b: Any, pad: float = 0.5) -> bool:
    return a.x0 < b.x1 - pad and b.x0 < a.x1 - pad and a.y0 < b.y1 - pad and b.y0 < a.y1 - pad


def _series(ax: Any) -> list[Any]:
    """The data series of an axes: errorbar / bar containers, and lines and collections outside them."""
    inside = set()
    for c in ax.containers:
        for part in c.get_children():
            inside.add(id(part))
    lines = [ln for ln in ax.lines if id(ln) not in inside and len(np.atleast_1d(ln.get_xdata())) > 0]
    colls = [c for c in ax.collections if id(c) not in inside]
    return list(ax.containers) + lines + colls


def _colours(ax: Any) -> list[tuple[float, float, float]]:
    from matplotlib.colors import to_rgb

    out = []
    for ln in ax.lines:
        if ln.get_linestyle() not in ("None", "none", "", " "):
            out.append(to_rgb(ln.get_color()))
        if ln.get_marker() not in (None, "None", "none", "", " "):
            out += [to_rgb(c) for c in (ln.get_markeredgecolor(), ln.get_markerfacecolor())
                    if not (isinstance(c, str) and c.lower() == "none")]
    for c in ax.collections:
        for rgba in list(c.get_facecolor()) + list(c.get_edgecolor()):
            if len(rgba) and rgba[3] > 0:
                out.append(tuple(float(v) for v in rgba[:3]))
    return out


def _on_palette(rgb: tuple[float, float, float]) -> bool:
    from matplotlib.colors import to_rgb

    if max(rgb) - min(rgb) < 0.02:  # black, white, greys
        return True
    return any(max(abs(a - b) for a, b in zip(rgb, to_rgb(c))) < 0.02 for c in OKABE_ITO.values())


_FUNCTION_NAME = re.compile(r"\b[a-z]{2,}_[a-z]{2,}\w*|\w+\(\)")


def _axes_problems(ax: Any, where: str) -> list[str]:
    out = []
    shows_x = bool(_drawn_tick_labels(ax.xaxis))
    if shows_x and not ax.xaxis.label.get_text().strip():
        out.append(f"{where}: x axis without a label")
    if bool(_drawn_tick_labels(ax.yaxis)) and not ax.yaxis.label.get_text().strip():
        out.append(f"{where}: y axis without a label")
    n_series = len(_series(ax))
    has_legend = ax.get_legend() is not None or bool(ax.figure.legends)
    if n_series > 1 and not has_legend:
        out.append(f"{where}: {n_series} series and no legend")
    leg = ax.get_legend()
    for t in ([] if leg is None else leg.get_texts()):
        if _FUNCTION_NAME.search(t.get_text().replace("$", " ")):
            out.append(f"{where}: legend entry {t.get_text()!r} names a function, not a quantity")
    for rgb in _colours(ax):
        if not _on_palette(rgb):
            out.append(f"{where}: colour {rgb} is not on the colour-blind-safe palette")
            break
    return out


def _tick_overlaps(ax: Any, where: str, renderer: Any) -> list[str]:
    out = []
    for name in ("x", "y"):
        labs = _drawn_tick_labels(getattr(ax, f"{name}axis"))
        boxes = [(lab.get_text(), lab.get_window_extent(renderer)) for lab in labs]
        for i in range(len(boxes)):
            for j in range(i + 1, len(boxes)):
                if _overlap(boxes[i][1], boxes[j][1]):
                    out.append(f"{where}: {name} tick labels {boxes[i][0]!r} and {boxes[j][0]!r} overlap")
    return out


def _texts(ax: Any, renderer: Any) -> list[tuple[str, Any]]:
    """Boxes of an axes' axis labels, title and tick labels (what must stay off other panels)."""
    items = ([ax.xaxis.label, ax.yaxis.label, ax.title, ax.xaxis.get_offset_text(), ax.yaxis.get_offset_text()]
             + _drawn_tick_labels(ax.xaxis) + _drawn_tick_labels(ax.yaxis))
    return [(t.get_text(), t.get_window_extent(renderer)) for t in items if t.get_visible() and t.get_text().strip()]


def _all_axes(fig: Any) -> list[Any]:
    out = []
    for ax in fig.axes:
        out.append(ax)
        out += [c for c in getattr(ax, "child_axes", []) if c not in out]
    return out


def _family(ax: Any) -> set[int]:
    """The axes and its secondary (child) axes, or its parent: they share one panel."""
    parent = getattr(ax, "_parent", None) or getattr(ax, "_axes", None)
    fam = {id(ax)} | {id(c) for c in getattr(ax, "child_axes", [])}
    if parent is not None and parent is not ax:
        fam |= {id(parent)} | {id(c) for c in getattr(parent, "child_axes", [])}
    return fam


def _cross_panel_overlaps(fig: Any, renderer: Any, gap: float = 2.0) -> list[str]:
    """Text of one panel that overlaps (or comes within ``gap`` pixels of) another panel's area or text."""
    def near(a: Any, b: Any) -> bool:
        return _overlap(a, b, pad=-gap)

    out = []
    axes = [a for a in _all_axes(fig) if a.get_visible()]
    for i, a in enumerate(axes):
        for b in axes[i + 1:]:
            if id(b) in _family(a):  # one panel: only text against text
                out += [f"panel {i}: text {ta!r} overlaps {tb!r}" for ta, ba in _texts(a, renderer)
                        for tb, bb in _texts(b, renderer) if near(ba, bb)]
                continue
            area_b, area_a = b.get_window_extent(renderer), a.get_window_extent(renderer)
            for (ta, ba) in _texts(a, renderer):
                if near(ba, area_b) or any(near(ba, bb) for _, bb in _texts(b, renderer)):
                    out.append(f"panels {i} and {axes.index(b)}: text {ta!r} runs into the other panel")
            for (tb, bb) in _texts(b, renderer):
                if near(bb, area_a):
                    out.append(f"panels {i} and {axes.index(b)}: text {tb!r} runs into the other panel")
    return out


def figure_problems(fig: Any) -> list[str]:
    """What a reader would stumble on in ``fig``: an empty list for a figure fit for the report.

    Checked: every axis that shows tick labels has a label; an axes with more than one series has a legend
    (and its entries name quantities, not functions); tick labels of one axis do not overlap; no axis label,
    title or tick label runs into another panel; every colour is a grey or on :data:`OKABE_ITO`; the figure
    has a title (its own or every panel's).
    """
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    out: list[str] = []
    axes = [a for a in _all_axes(fig) if a.get_visible()]
    for k, ax in enumerate(axes):
        where = f"panel {k} ({ax.title.get_text() or ax.yaxis.label.get_text() or '?'})"
        out += _axes_problems(ax, where) + _tick_overlaps(ax, where, renderer)
    out += _cross_panel_overlaps(fig, renderer)
    has_title = (bool(fig._suptitle is not None and fig._suptitle.get_text())
                 or all(a.title.get_text() for a in fig.axes))
    if not has_title:
        out.append("figure without a title")
    return out


