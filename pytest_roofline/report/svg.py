"""A small, dependency-free SVG chart writer for the reports.

Charts are plain inline ``<svg>`` markup: no scripts, no external fonts or images, so a page that embeds them
renders offline and under a strict Content-Security-Policy. Tooltips are SVG ``<title>`` elements, which
browsers show on hover without any JavaScript.

The model is deliberately small: a :class:`Chart` has an x axis, a y axis and an optional second y axis (each
linear or logarithmic), and collects layers (lines, markers, reference lines, bands, labels) that are drawn in
the order they were added. ``render()`` returns the SVG text. For series of hundreds of points, ``dots`` draws a
series as one ``<path>`` and ``hover`` gives the points their tooltips as invisible strips above everything.

Two things are settled when the chart is rendered, not when a layer is added, so that they see every layer:

* **labels** (``annotate`` and the texts of ``hline``/``vline``) go to the first of their candidate positions
  whose box crosses no curve, reference line, marker or earlier label and stays inside the plot (the preferred
  position first; the least crowded one when none is free, crossing another reference line weighing more than
  crossing a curve). Where no position is free on one line, the label is tried again broken into two, then
  three lines (``<tspan>``): the label of a vertical line 70 px from the next one fits beside it, on its outer
  side, instead of running across the other line. A placed label carries ``class="rl-label"`` and
  ``data-box="x0 y0 x1 y1"``, the box the placement used (all its lines); a vertical reference line carries
  ``class="rl-vline"``, and its label ``data-vline``, the line's x;
* **markers** drawn with ``dodge=True`` (values in ink, the goodput star, single points) never move: on a value
  axis a marker moved off its value shows another number (on a log axis, a few pixels are tens of percent). One
  that would cover a marker drawn before it is drawn *beneath* it instead (above the rings), and where that
  marker would hide its centre it is grown just enough (``NEST_MARGIN`` px; at most ``NEST_MAX`` × its size,
  and inside any ring around the point) to show as a frame around it, so both stay visible at their own values;
  its label steps aside (with a pointer when it has to go far). Every marker carries ``data-r``, its reach, so
  its extent can be checked.
"""

from __future__ import annotations

import bisect
import hashlib
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal
from xml.sax.saxutils import escape as _xml_escape

__all__ = ["Axis", "Chart", "Legend", "PALETTE", "esc", "compact_number", "nice_ticks", "log_ticks"]

#: Okabe–Ito colours (distinguishable with the common colour-vision deficiencies), plus greys
PALETTE = {
    "blue": "#0072B2", "orange": "#E69F00", "green": "#009E73", "red": "#D55E00", "purple": "#CC79A7",
    "sky": "#56B4E9", "yellow": "#F0E442", "black": "#222222", "grey": "#8a8a8a", "lightgrey": "#d9d9d9",
}
FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"
_CHAR_W = 0.62  # average glyph width as a fraction of the font size, for layout estimates (DejaVu Sans: ~0.6)


#: the same for the bold (font-weight 600) notes
_BOLD_CHAR_W = 0.66


def _wrap_words(text: str, room: int) -> list[str]:
    """``text`` in lines of at most ``room`` characters, broken between words (a word longer than that alone)."""
    lines: list[str] = []
    for word in text.split(" "):
        if lines and len(lines[-1]) + 1 + len(word) <= room:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


def esc(text: object) -> str:
    """Escape text for SVG/HTML element content and double-quoted attributes."""
    return _xml_escape(str(text), {'"': "&quot;"})


def _num(x: float) -> str:
    """A coordinate with at most two decimals and no trailing zeros."""
    s = f"{x:.2f}".rstrip("0").rstrip(".")
    return "0" if s in ("-0", "") else s


def compact_number(x: float, digits: int = 3) -> str:
    """Tick labels: 2000 → '2,000'; 12_500 → '12.5k'; 3.2e12 → '3.2T'; 0.0125 → '0.0125'."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    a = abs(x)
    for threshold, scale, suffix in ((1e15, 1e15, "P"), (1e12, 1e12, "T"), (1e9, 1e9, "G"), (1e6, 1e6, "M"),
                                     (1e4, 1e3, "k")):
        if a >= threshold:
            return f"{x / scale:.{digits}g}{suffix}"
    if a >= 1000:
        return f"{x:,.0f}"
    return f"{x:.{digits}g}"


def nice_ticks(lo: float, hi: float, target: int = 6) -> list[float]:
    """Ticks at 1, 2 or 5 × 10^k steps covering [lo, hi]."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo]
    raw = (hi - lo) / max(1, target)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.ceil(lo / step - 1e-9) * step
    out, t = [], start
    while t <= hi + step * 1e-9:
        out.append(0.0 if abs(t) < step * 1e-9 else t)
        t += step
    return out


def log_ticks(lo: float, hi: float) -> list[float]:
    """Decade ticks (1, 10, 100...), with 2 and 5 added when the range spans fewer than three decades."""
    if lo <= 0 or hi <= lo:
        return [lo]
    d0, d1 = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    mults = (1, 2, 5) if d1 - d0 <= 3 else (1,)
    out = [m * 10 ** d for d in range(d0, d1 + 1) for m in mults if lo * (1 - 1e-9) <= m * 10 ** d <= hi * (1 + 1e-9)]
    return out or [lo, hi]


@dataclass
class Axis:
    """One axis: its range, scale ("linear" or "log"), label and tick labels."""

    lo: float
    hi: float
    scale: str = "linear"
    label: str = ""
    ticks: Sequence[float] | None = None
    fmt: Callable[[float], str] = compact_number
    base: float = 10.0  # log base; only affects default ticks (2 → powers of two)

    def __post_init__(self) -> None:
        if self.scale == "log":
            self.lo = max(self.lo, 1e-300)
            self.hi = max(self.hi, self.lo * 1.0001)
        elif self.hi <= self.lo:
            self.hi = self.lo + (abs(self.lo) or 1.0)

    def frac(self, v: float) -> float:
        """0 at ``lo``, 1 at ``hi`` (outside values extrapolate)."""
        if self.scale == "log":
            v = max(v, 1e-300)
            return (math.log(v) - math.log(self.lo)) / (math.log(self.hi) - math.log(self.lo))
        return (v - self.lo) / (self.hi - self.lo)

    def tick_values(self) -> list[float]:
        if self.ticks is not None:
            return [t for t in self.ticks if self.contains(t)]
        if self.scale == "log" and self.base == 2:
            k0, k1 = math.ceil(math.log2(self.lo) - 1e-9), math.floor(math.log2(self.hi) + 1e-9)
            return [2.0 ** k for k in range(k0, k1 + 1)]
        if self.scale == "log":
            return log_ticks(self.lo, self.hi)
        return nice_ticks(self.lo, self.hi)

    def contains(self, v: float) -> bool:
        eps = 1e-9 * max(abs(self.lo), abs(self.hi), 1e-300)
        return self.lo - eps <= v <= self.hi + eps


def _radius(shape: str, size: float) -> float:
    """How far a marker reaches from its centre (stroke included), for overlaps and label placement."""
    return size * {"diamond": 1.35, "triangle": 1.3, "up": 1.3, "down": 1.3, "star": 1.6}.get(shape, 1.0) + 1


@dataclass
class _MarkerRec:
    cx: float
    cy: float
    shape: str
    color: str
    size: float
    hollow: bool
    tip: str | None
    stroke: str | None
    css_class: str
    overlay: bool
    dodge: bool
    ring: bool
    under: bool = False  # drawn beneath the other markers (it frames one it would cover); it never moves
    grow: float = 0.0  # added to its size, as such a frame

    @property
    def r(self) -> float:
        return _radius(self.shape, self.size + self.grow)

    @property
    def x(self) -> float:
        return self.cx

    @property
    def y(self) -> float:
        return self.cy

    def svg(self) -> str:
        return _marker_svg(self.x, self.y, self.shape, self.color, self.size + self.grow, self.hollow, self.tip,
                           self.stroke, self.css_class, self.ring)


@dataclass
class _LabelRec:
    text: str
    color: str
    size: float
    weight: str
    candidates: list[tuple[float, float, str]]  # (x, baseline y, anchor), preferred first
    own: tuple[tuple[float, float], tuple[float, float]] | None = None  # the reference line it labels
    marker: _MarkerRec | None = None  # the marker it labels (a pointer joins them when the label goes far)
    at_y: float | None = None  # the y a label broken into lines grows away from (its point, its line); None: down
    vline: str = ""  # the x of the vertical line it labels, as written in the line's markup


Box = tuple[float, float, float, float]


#: how far (px) a marker drawn beneath another, as a frame around it, reaches beyond it (``Chart._nest``)
NEST_MARGIN = 3.0
#: the most a marker is grown into such a frame, as a multiple of its size
NEST_MAX = 2.0
#: the distance between the baselines of a label's lines, as a multiple of its font size
LINE_HEIGHT = 1.2
#: how far a label keeps from a reference line other than its own, as a fraction of its width (3 px at least)
REF_MARGIN = 0.06
#: a segment at most this wide (px) is looked up by its x when a label is placed; a wider one is always tested
_SHORT_SEGMENT = 40.0


def text_box(x: float, y: float, text: str, size: float, anchor: str) -> Box:
    """The estimated box (x0, y0, x1, y1) of a text whose baseline starts / is centred / ends at (x, y)."""
    return lines_box(x, y, (text,), size, anchor)


def lines_box(x: float, y: float, lines: Sequence[str], size: float, anchor: str) -> Box:
    """The estimated box of a text in ``lines``, each aligned on x by ``anchor``, the first one's baseline at y
    and each next one ``LINE_HEIGHT`` × ``size`` below."""
    w = max((len(line) for line in lines), default=0) * size * _CHAR_W
    x0 = x if anchor == "start" else (x - w / 2 if anchor == "middle" else x - w)
    return (x0, y - size * 0.8, x0 + w, y + (len(lines) - 1) * size * LINE_HEIGHT + size * 0.25)


def _wraps(text: str, most: int = 3) -> list[tuple[str, ...]]:
    """``text`` broken between words into 2, 3 … ``most`` lines, each the narrowest such break (none for a text
    of one word)."""
    out: list[tuple[str, ...]] = []
    words = text.split(" ")
    for room in range(max(len(w) for w in words), len(text)):
        lines = tuple(_wrap_words(text, room))
        if 1 < len(lines) <= most and all(len(lines) != len(o) for o in out):
            out.append(lines)
    return sorted(out, key=len)


def segment_hits_box(a: tuple[float, float], b: tuple[float, float], box: Box) -> bool:
    """Whether the segment a–b crosses or lies in the box (Liang–Barsky clipping)."""
    x0, y0, x1, y1 = box
    (ax, ay), (bx, by) = a, b
    if max(ax, bx) < x0 or min(ax, bx) > x1 or max(ay, by) < y0 or min(ay, by) > y1:
        return False
    dx, dy = bx - ax, by - ay
    t0, t1 = 0.0, 1.0
    for p, q in ((-dx, ax - x0), (dx, x1 - ax), (-dy, ay - y0), (dy, y1 - ay)):
        if p == 0:
            if q < 0:
                return False
            continue
        t = q / p
        if p < 0:
            t0 = max(t0, t)
        else:
            t1 = min(t1, t)
        if t0 > t1:
            return False
    return True


def boxes_overlap(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


#: what a legend swatch draws
LegendKind = Literal["line", "marker", "band", "whisker"]


@dataclass
class Legend:
    """One legend entry: a swatch of ``kind`` (a line, a marker, a shaded band or a capped whisker) and its
    label."""

    label: str
    color: str
    kind: LegendKind
    dash: str | None = None
    marker: str = "circle"
    hollow: bool = False
    width: float = 2.0


@dataclass
class Chart:
    """A chart with one x axis, a y axis and an optional second y axis (``y2``) on the right."""

    x: Axis
    y: Axis
    width: int = 560
    height: int = 300
    title: str = ""
    subtitle: str = ""
    y2: Axis | None = None
    description: str = ""  # for screen readers (aria-label / <desc>)
    margin_left: int = 64
    margin_right: int = 16
    margin_top: int = 0
    margin_bottom: int = 44
    _layers: list[str] = field(default_factory=list)
    _overlay: list[str] = field(default_factory=list)
    _legend: list[Legend] = field(default_factory=list)
    _notes: list[tuple[str, str]] = field(default_factory=list)
    _segments: list[tuple[tuple[float, float], tuple[float, float]]] = field(default_factory=list)
    _refs: set[tuple[tuple[float, float], tuple[float, float]]] = field(default_factory=set)  # hline/vline segments
    _markers: list[_MarkerRec] = field(default_factory=list)
    _labels: list[_LabelRec] = field(default_factory=list)
    _dots: list[str] = field(default_factory=list)  # one <path> per dots() call
    _dot_boxes: list[Box] = field(default_factory=list)  # each dot's extent, for label placement
    _hover: list[str] = field(default_factory=list)  # one <g> of invisible hover targets per hover() call

    # --- geometry -----------------------------------------------------------------------------------------
    def _subtitle_lines(self) -> list[str]:
        """The subtitle, wrapped at word boundaries to the chart's width."""
        if not self.subtitle:
            return []
        room = max(10, int((self.width - self.margin_left - 8) / (10.5 * _CHAR_W)))
        key = (self.subtitle, room)
        if self.__dict__.get("_wrapped_key") == key:  # px/py ask for every point: wrap once
            return list(self.__dict__["_wrapped"])
        lines = _wrap_words(self.subtitle, room)
        self.__dict__["_wrapped_key"], self.__dict__["_wrapped"] = key, tuple(lines)
        return lines

    def _note_lines(self) -> list[tuple[str, str]]:
        """The notes, each wrapped at word boundaries to the chart's width (bold glyphs: a little wider), as
        (line, colour): a note longer than the chart is never cut at its right edge."""
        room = max(10, int((self.width - self.margin_left - 8) / (10.5 * _BOLD_CHAR_W)))
        key = (tuple(self._notes), room)
        if self.__dict__.get("_notes_key") != key:  # px/py ask for every point: wrap once
            self.__dict__["_notes_key"] = key
            self.__dict__["_notes_wrapped"] = tuple(
                (line, color) for text, color in self._notes for line in _wrap_words(text, room))
        return list(self.__dict__["_notes_wrapped"])

    @property
    def _top(self) -> float:
        notes = len(self._note_lines())
        return (self.margin_top + (22 if self.title else 6) + 16 * len(self._subtitle_lines())
                + 15 * notes + (4 if notes else 0))

    @property
    def _right(self) -> float:
        return self.width - self.margin_right - (52 if self.y2 is not None else 0)

    @property
    def _plot_h(self) -> float:
        return self._height - self._top - self.margin_bottom

    @property
    def _height(self) -> float:
        """``height``, and 15 px more for each line a long note wraps onto: the plot keeps its height."""
        return self.height + 15 * (len(self._note_lines()) - len(self._notes))

    def px(self, v: float) -> float:
        return self.margin_left + self.x.frac(v) * (self._right - self.margin_left)

    def py(self, v: float, axis: str = "y") -> float:
        ax = self.y2 if axis == "y2" and self.y2 is not None else self.y
        return self._top + (1 - ax.frac(v)) * self._plot_h

    def _ax(self, axis: str) -> Axis:
        return self.y2 if axis == "y2" and self.y2 is not None else self.y

    def _mapping(self, axis: str = "y") -> tuple[Callable[[float], float], Callable[[float], float]]:
        """``px`` and ``py`` with the plot's geometry worked out once, for layers of many points."""
        left, w = float(self.margin_left), self._right - self.margin_left
        top, h = self._top, self._plot_h
        fx, fy = self.x.frac, self._ax(axis).frac
        return (lambda v: left + fx(v) * w), (lambda v: top + (1 - fy(v)) * h)

    # --- layers -------------------------------------------------------------------------------------------
    def line(self, pts: Iterable[tuple[float, float]], *, color: str, width: float = 2.0, dash: str | None = None,
             label: str | None = None, axis: str = "y", title: str | None = None, opacity: float = 1.0,
             step: bool = False) -> None:
        """A polyline through ``pts`` (points with non-finite or, on log axes, non-positive values break it)."""
        ax = self._ax(axis)
        segments: list[list[tuple[float, float]]] = [[]]
        prev = None
        for x, y in pts:
            ok = (x is not None and y is not None and math.isfinite(x) and math.isfinite(y)
                  and (self.x.scale != "log" or x > 0) and (ax.scale != "log" or y > 0))
            if not ok:
                segments.append([])
                prev = None
                continue
            if step and prev is not None:
                segments[-1].append((self.px(x), self.py(prev[1], axis)))
            segments[-1].append((self.px(x), self.py(y, axis)))
            prev = (x, y)
        attrs = (f'fill="none" stroke="{color}" stroke-width="{_num(width)}" stroke-linejoin="round" '
                 f'stroke-linecap="round"' + (f' stroke-dasharray="{dash}"' if dash else "")
                 + (f' opacity="{_num(opacity)}"' if opacity != 1 else ""))
        for seg in segments:
            if len(seg) < 2:
                continue
            d = " ".join(f"{_num(a)},{_num(b)}" for a, b in seg)
            self._segments.extend(zip(seg[:-1], seg[1:]))
            tip = f"<title>{esc(title)}</title>" if title else ""
            self._layers.append(f'<polyline points="{d}" {attrs}>{tip}</polyline>' if tip else
                                f'<polyline points="{d}" {attrs}/>')
        if label:
            self._legend.append(Legend(label, color, "line", dash, width=width))

    def markers(self, pts: Iterable[tuple[float, float]], *, color: str, marker: str = "circle", size: float = 4.5,
                label: str | None = None, titles: Sequence[str] | None = None, hollow: bool = False,
                axis: str = "y", stroke: str | None = None, css_class: str = "", overlay: bool = True,
                dodge: bool = False, ring: bool = False) -> None:
        """One marker per point; ``titles`` become hover tooltips. Markers outside the axes are clamped to the
        edge and drawn as an arrowhead so an off-scale value is still visible; so is a value of 0 (or less) on a
        log axis, at its floor. ``dodge``: where this marker would
        cover one drawn before it, draw it beneath that one, grown into a frame around it (it stays at its value,
        see :meth:`_nest`); ``ring``: an outline with no fill, marking a point another series draws
        without hiding it."""
        ax = self._ax(axis)
        for i, (x, y) in enumerate(pts):
            if x is None or y is None or not (math.isfinite(x) and math.isfinite(y)):
                continue
            if self.x.scale == "log" and x <= 0:
                continue
            shape = marker
            if ax.scale == "log" and y <= 0:  # 0 (or less) has no place on a log axis: below it (s16 review L6)
                y, shape = ax.lo, "down"
            elif not ax.contains(y):
                y = ax.hi if ax.frac(y) > 1 else ax.lo
                shape = "up" if y == ax.hi else "down"
            cx, cy = self.px(x), self.py(y, axis)
            tip = titles[i] if titles and i < len(titles) else None
            self._markers.append(_MarkerRec(cx, cy, shape, color, size, hollow or ring, tip, stroke, css_class,
                                            overlay, dodge, ring))
        if label:
            self._legend.append(Legend(label, color, "marker", marker=marker, hollow=hollow or ring))

    def dots(self, pts: Iterable[tuple[float, float]], *, color: str, size: float = 3.0, label: str | None = None,
             axis: str = "y", css_class: str = "") -> None:
        """Filled circles of radius ``size`` (as ``markers`` draws them), all in ONE ``<path>``: each point a
        zero-length subpath ``Mx,yh0`` whose round cap paints the disc (SVG 2, stroke-linecap: a zero-length
        subpath with round caps is stroked as a full circle, https://www.w3.org/TR/SVG2/painting.html#LineCaps;
        Chromium does, as tests/test_trend.py's browser tests check). For long series (hundreds of points):
        a few bytes a point instead of an element. No tooltips: give them with :meth:`hover`. A point outside
        the y axis is drawn as :meth:`markers` draws it (an arrowhead at the edge)."""
        ax = self._ax(axis)
        px, py = self._mapping(axis)
        x_log, y_log = self.x.scale == "log", ax.scale == "log"
        r = _radius("circle", size)
        d: list[str] = []
        off: list[tuple[float, float]] = []
        boxes = self._dot_boxes
        for x, y in pts:
            if x is None or y is None or not (math.isfinite(x) and math.isfinite(y)):
                continue
            if (x_log and x <= 0) or (y_log and y <= 0):
                continue
            if not ax.contains(y):
                off.append((x, y))
                continue
            cx, cy = px(x), py(y)
            d.append(f"M{cx:.1f},{cy:.1f}h0")
            boxes.append((cx - r, cy - r, cx + r, cy + r))
        if d:
            cls = f' class="{esc(css_class)}"' if css_class else ""
            self._dots.append(f'<path{cls} d="{"".join(d)}" fill="none" stroke="{color}" '
                              f'stroke-width="{_num(2 * size + 1)}" stroke-linecap="round" data-r="{_num(r)}"/>')
        if off:
            self.markers(off, color=color, size=size, axis=axis, css_class=css_class)
        if label:
            self._legend.append(Legend(label, color, "marker"))

    def whiskers(self, items: Iterable[tuple[float, float | None, float, float | None]], *, color: str,
                 width: float = 1.5, cap: float = 6.0, label: str | None = None, axis: str = "y") -> None:
        """Error bars: an item ``(x, lo, y, hi)`` is a vertical line from ``lo`` to ``hi`` through the point
        ``(x, y)``, with a cap ``2 * cap`` pixels wide at each bounded end (``None``: that side is unbounded, the
        line stops at ``y`` and has no cap there). All of a call's whiskers are one ``<g class="rl-whisker">``,
        a ``<path>`` each, drawn with the layers, under the markers: give ``cap`` more than a marker's radius
        so a dot never hides a whisker, however short. The legend swatch is a capped whisker too."""
        ax = self._ax(axis)
        px, py = self._mapping(axis)
        out = []
        for x, lo, y, hi in items:
            ends = [v for v in (lo, y, hi) if v is not None]
            if (lo is None and hi is None) or not all(math.isfinite(v) for v in (x, *ends)):
                continue
            if (self.x.scale == "log" and x <= 0) or (ax.scale == "log" and min(ends) <= 0):
                continue
            xx = px(x)
            y0, y1 = py(lo if lo is not None else y), py(hi if hi is not None else y)
            d = f"M{xx:.1f},{y0:.1f}V{y1:.1f}"
            d += "".join(f"M{xx - cap:.1f},{py(e):.1f}h{2 * cap:.1f}" for e in (lo, hi) if e is not None)
            out.append(f'<path d="{d}"/>')
            self._segments.append(((xx, y0), (xx, y1)))
        if out:
            self._layers.append(f'<g class="rl-whisker" fill="none" stroke="{color}" stroke-width="{_num(width)}" '
                                f'stroke-linecap="butt" data-cap="{_num(cap)}">{"".join(out)}</g>')
            if label:
                self._legend.append(Legend(label, color, "whisker", width=width))

    def ribbon(self, items: Iterable[tuple[float, float, float]], *, color: str, opacity: float = 0.14,
               title: str = "", css_class: str = "rl-sband", label: str | None = None, axis: str = "y") -> bool:
        """A shaded ribbon from each item's ``lo`` to its ``hi`` (items ``(x, lo, hi)``, sorted by x and joined
        point to point), clamped to the axis, drawn with the layers where it is called (under what follows). Its
        two edges count as drawn lines, so no label is placed across them; ``label`` adds a band swatch to the
        legend. Needs two drawable items; returns whether it drew."""
        ax = self._ax(axis)
        px, py = self._mapping(axis)
        pts = sorted((x, lo, hi) for x, lo, hi in items
                     if all(math.isfinite(v) for v in (x, lo, hi)) and lo <= hi
                     and (self.x.scale != "log" or x > 0) and (ax.scale != "log" or lo > 0))
        if len(pts) < 2:
            return False

        def clamp(v: float) -> float:
            return min(max(v, ax.lo), ax.hi)

        upper = [(px(x), py(clamp(hi))) for x, _lo, hi in pts]
        lower = [(px(x), py(clamp(lo))) for x, lo, _hi in pts]
        ring = " ".join(f"{a:.1f},{b:.1f}" for a, b in upper + lower[::-1])
        tip = f"<title>{esc(title)}</title>" if title else ""
        self._layers.append(f'<polygon class="{esc(css_class)}" points="{ring}" fill="{color}" '
                            f'fill-opacity="{opacity:g}" stroke="none">{tip}</polygon>')
        self._segments.extend(zip(upper[:-1], upper[1:]))
        self._segments.extend(zip(lower[:-1], lower[1:]))
        if label:
            self._legend.append(Legend(label, color, "band"))
        return True

    def add_legend(self, entry: Legend) -> None:
        """Add a legend entry made elsewhere (a swatch drawn by the caller's own rule)."""
        self._legend.append(entry)

    def hover(self, items: Iterable[tuple[float, float, float, str]], *, thickness: float = 10.0,
              max_width: float | None = None, axis: str = "y") -> None:
        """Invisible hover targets, each carrying a tooltip: an item ``(x0, x1, y, title)`` is a strip from x0 to
        x1 (axis units), ``thickness`` pixels tall and centred on y (clamped to the axis); ``max_width`` (pixels)
        narrows a wider strip about its centre. They paint nothing (stroke-opacity 0) yet take the pointer
        (``pointer-events="stroke"``: the stroke's area is hit whatever its paint, and the hit element's ``<title>``
        is the tooltip; SVG 2, https://www.w3.org/TR/SVG2/interact.html#PointerEventsProp), and they are drawn above
        every layer and label, so a point's strip wins over whatever is drawn there."""
        ax = self._ax(axis)
        px, py = self._mapping(axis)
        y_lo, y_hi = ax.lo, ax.hi
        out = []
        for x0, x1, y, title in items:
            if not (math.isfinite(x0) and math.isfinite(x1) and math.isfinite(y)) or not title:
                continue
            a, b = px(x0), px(x1)
            if b < a:
                a, b = b, a
            if max_width is not None and b - a > max_width:
                mid = (a + b) / 2
                a, b = mid - max_width / 2, mid + max_width / 2
            yy = py(y_lo if y < y_lo else (y_hi if y > y_hi else y))
            out.append(f'<path d="M{a:.1f},{yy:.1f}H{b:.1f}"><title>{esc(title)}</title></path>')
        if out:
            self._hover.append(f'<g class="rl-hover" fill="none" stroke="#000" stroke-opacity="0" '
                               f'stroke-width="{_num(thickness)}" pointer-events="stroke">{"".join(out)}</g>')

    def step_band(self, spans: Iterable[tuple[float, float, float | None, float | None]], *, color: str,
                  opacity: float = 0.22, label: str | None = None, titles: Sequence[str | None] | None = None,
                  axis: str = "y") -> None:
        """A band whose bounds step: one shaded rectangle ``x0..x1`` × ``lo..hi`` per span (None: open on that
        side, drawn to the axis' edge), e.g. a tolerance band that changed between nights. ``titles[i]`` is
        span i's tooltip. A span with lo == hi is a thin strip (1.5 px), still visible."""
        ax = self._ax(axis)
        drawn = False
        for i, (x0, x1, lo, hi) in enumerate(spans):
            y_lo = ax.lo if lo is None else max(ax.lo, min(ax.hi, lo))
            y_hi = ax.hi if hi is None else max(ax.lo, min(ax.hi, hi))
            if y_hi < y_lo:
                continue
            xa, xb = self.px(x0), self.px(x1)
            ya, yb = self.py(y_hi, axis), self.py(y_lo, axis)
            h = max(yb - ya, 1.5)
            title = titles[i] if titles is not None and i < len(titles) else None
            rect = (f'<rect class="rl-band" x="{_num(xa)}" y="{_num(ya - (h - (yb - ya)) / 2)}" '
                    f'width="{_num(xb - xa)}" height="{_num(h)}" fill="{color}" opacity="{_num(opacity)}"')
            self._layers.append(f"{rect}><title>{esc(title)}</title></rect>" if title else f"{rect}/>")
            drawn = True
        if drawn and label:
            self._legend.append(Legend(label, color, "band"))

    def hline(self, y: float, *, color: str, label: str | None = None, dash: str | None = "6 4", axis: str = "y",
              text: str | None = None, width: float = 1.5, text_anchor: str = "end") -> None:
        """A horizontal reference line across the plot (skipped when outside the axis)."""
        ax = self._ax(axis)
        if y is None or not math.isfinite(y) or not ax.contains(y):
            return
        yy = self.py(y, axis)
        seg = ((float(self.margin_left), yy), (float(self._right), yy))
        self._segments.append(seg)
        self._refs.add(seg)
        self._layers.append(f'<line x1="{_num(self.margin_left)}" y1="{_num(yy)}" x2="{_num(self._right)}" '
                            f'y2="{_num(yy)}" stroke="{color}" stroke-width="{_num(width)}"'
                            + (f' stroke-dasharray="{dash}"' if dash else "") + "/>")
        if text:
            lx, rx = self.margin_left + 4, self._right - 4
            ends = [(rx, "end"), (lx, "start")] if text_anchor == "end" else [(lx, "start"), (rx, "end")]
            xs = ends + [(lx + (rx - lx) * f, "middle") for f in (0.5, 0.3, 0.7, 0.15, 0.85, 0.4, 0.6, 0.2, 0.8)]
            # beside the line first (above, then below), then a line's height further off, where curves leave room
            cands = [(tx, yy + dy, anc) for dy in (-4.0, 13.0, -16.0, 25.0) for tx, anc in xs]
            self._labels.append(_LabelRec(text, color, 11, "normal", cands, own=seg, at_y=yy))
        if label:
            self._legend.append(Legend(label, color, "line", dash, width=width))

    def vline(self, x: float, *, color: str, label: str | None = None, dash: str | None = "6 4",
              text: str | None = None, width: float = 1.5, text_pos: float = 0.02, text_side: str = "right") -> None:
        """A vertical reference line (``text`` is written beside it, ``text_pos`` down from the top)."""
        if x is None or not math.isfinite(x) or not self.x.contains(x):
            return
        xx = self.px(x)
        seg = ((xx, float(self._top)), (xx, float(self._top + self._plot_h)))
        self._segments.append(seg)
        self._refs.add(seg)
        self._layers.append(f'<line class="rl-vline" x1="{_num(xx)}" y1="{_num(self._top)}" x2="{_num(xx)}" '
                            f'y2="{_num(self._top + self._plot_h)}" stroke="{color}" stroke-width="{_num(width)}"'
                            + (f' stroke-dasharray="{dash}"' if dash else "") + "/>")
        if text:
            sides = [(xx + 4, "start"), (xx - 4, "end")]
            if text_side != "right":
                sides.reverse()
            poss = [text_pos] + [k / 10 for k in range(10) if abs(k / 10 - text_pos) > 1e-9]
            cands = [(tx, self._top + 11 + p * (self._plot_h - 14), anc) for p in poss for tx, anc in sides]
            self._labels.append(_LabelRec(text, color, 11, "normal", cands, own=seg, vline=_num(xx)))
        if label:
            self._legend.append(Legend(label, color, "line", dash, width=width))

    def hband(self, y0: float, y1: float, *, color: str, opacity: float = 0.15, label: str | None = None,
              axis: str = "y") -> None:
        """A shaded horizontal band between y0 and y1 (clamped to the axis)."""
        ax = self._ax(axis)
        lo, hi = sorted((y0, y1))
        lo, hi = max(lo, ax.lo), min(hi, ax.hi)
        if hi <= lo:
            return
        ya, yb = self.py(hi, axis), self.py(lo, axis)
        self._layers.append(f'<rect x="{_num(self.margin_left)}" y="{_num(ya)}" '
                            f'width="{_num(self._right - self.margin_left)}" height="{_num(yb - ya)}" fill="{color}" '
                            f'opacity="{_num(opacity)}"/>')
        if label:
            self._legend.append(Legend(label, color, "band"))

    def vband(self, x0: float, x1: float, *, color: str, opacity: float = 0.15, label: str | None = None) -> None:
        lo, hi = sorted((x0, x1))
        lo, hi = max(lo, self.x.lo), min(hi, self.x.hi)
        if hi <= lo:
            return
        xa, xb = self.px(lo), self.px(hi)
        self._layers.append(f'<rect x="{_num(xa)}" y="{_num(self._top)}" width="{_num(xb - xa)}" '
                            f'height="{_num(self._plot_h)}" fill="{color}" opacity="{_num(opacity)}"/>')
        if label:
            self._legend.append(Legend(label, color, "band"))

    def annotate(self, x: float, y: float, text: str, *, color: str = "#333", axis: str = "y", dx: float = 6,
                 dy: float = -6, anchor: str = "start", size: float = 10.5, weight: str = "normal") -> None:
        """Text placed at a data point (offset by dx, dy pixels), kept inside the plot area."""
        if x is None or y is None or not (math.isfinite(x) and math.isfinite(y)):
            return
        ax = self._ax(axis)
        if self.x.scale == "log" and x <= 0:
            return
        px, py = self.px(x), self.py(min(max(y, ax.lo), ax.hi), axis)  # 0 on a log axis: at its floor, as markers
        flip = {"start": "end", "end": "start", "middle": "middle"}
        g = max(abs(dx), abs(dy), 7.0)
        cands = [(dx, dy, anchor), (-dx, dy, flip[anchor]), (dx, -dy + size * 0.7, anchor),
                 (-dx, -dy + size * 0.7, flip[anchor])]
        for k in (1.0, 1.7, 2.6, 3.8, 5.2, 7.0):
            d = g * k
            cands += [(-d, -d * 0.6, "end"), (d, -d * 0.6, "start"), (-d, d * 0.6 + size * 0.7, "end"),
                      (d, d * 0.6 + size * 0.7, "start"), (0, -d, "middle"), (0, d + size * 0.7, "middle"),
                      (-d, size * 0.35, "end"), (d, size * 0.35, "start")]
        # the marker drawn at this point, the latest one (a ring drawn around a series' markers is not the last)
        marker = next((m for m in reversed(self._markers) if abs(m.cx - px) < 0.01 and abs(m.cy - py) < 0.01), None)
        if marker is not None:  # further along its row too: a label that far off gets a pointer to its marker
            for k in (9.5, 12.5, 16.0, 20.0):
                d = g * k
                cands += [(-d, size * 0.35, "end"), (d, size * 0.35, "start"), (-d, -g, "end"), (d, -g, "start"),
                          (-d, g + size * 0.7, "end"), (d, g + size * 0.7, "start")]
        self._labels.append(_LabelRec(text, color, size, weight, [(px + a, py + b, c) for a, b, c in cands],
                                      marker=marker, at_y=py))

    def note(self, text: str, *, color: str = "#555") -> None:
        """A line of text between the subtitle and the plot (call before adding layers: it moves the plot down)."""
        if self._layers or self._overlay or self._markers or self._labels or self._dots or self._hover:
            raise RuntimeError("Chart.note() must be called before anything is drawn")
        self._notes.append((text, color))

    # --- placement ----------------------------------------------------------------------------------------
    def _nest(self) -> None:
        """Settle the ``dodge`` markers, in the order they were added, against the markers placed before them (every
        other marker first). None moves: a marker on a value axis stands for its value, and moved it would show
        another (on a log axis a few pixels are tens of percent). One that would cover a marker with a fill
        (centres closer than 0.8 × the sum of their reaches; a ring hides nothing and is not counted) is drawn
        beneath the filled markers instead; where one of them would hide its centre (their centres closer than
        that marker's reach) it is also grown until its reach is ``NEST_MARGIN`` px beyond it: a frame around the
        covered point, both at their own values. It grows to ``NEST_MAX`` × its size at most, and never past the
        inner edge of a ring its centre lies in (the ring around a contaminated point stays in view). Rendering
        draws these above the rings and below the filled markers, the last one first, so a later (larger) frame
        never hides an earlier one."""
        placed = [m for m in self._markers if not m.dodge]
        for m in (m for m in self._markers if m.dodge):
            m.under, m.grow = False, 0.0  # rendered again: settled afresh
            hit = [(math.hypot(m.x - o.x, m.y - o.y), o) for o in placed if not o.ring]
            hit = [(d, o) for d, o in hit if d < (m.r + o.r) * 0.8]
            if hit:
                m.under = True
                # grown only over a marker that would hide its centre: one off to a side leaves it in view
                need = max((d + o.r for d, o in hit if d < o.r), default=0.0) + NEST_MARGIN
                # a ring's stroke is 2 px wide: its inner edge is 1 px inside its size
                room = min((o.size - 1 - math.hypot(m.x - o.x, m.y - o.y) for o in placed
                            if o.ring and math.hypot(m.x - o.x, m.y - o.y) < o.size - 1), default=math.inf)
                most = m.size * (NEST_MAX - 1)
                while m.r < need and m.grow < most and _radius(m.shape, m.size + m.grow + 0.25) <= room:
                    m.grow = min(most, m.grow + 0.25)
            placed.append(m)

    def _place_labels(self) -> list[str]:
        left, right, top, bottom = self.margin_left, self._right, self._top, self._top + self._plot_h
        boxes: list[Box] = []
        out: list[str] = []
        lines: list[str] = []  # the pointers from far labels to their markers, drawn under every label
        if not self._labels:
            return out
        # what a label should not cover: every marker (after its dodge) and every dot, sorted by their left edge so
        # that a label's box is tested only against those whose x range can reach it (a 500-point chart stays fast)
        marks = sorted([(m.x - m.r, m.y - m.r, m.x + m.r, m.y + m.r) for m in self._markers] + self._dot_boxes)
        mark_x0 = [m[0] for m in marks]
        mark_w = max((m[2] - m[0] for m in marks), default=0.0)

        # the lines a label should not cross: the reference lines (hline, vline), the long segments, and the short
        # ones (a curve of many points) sorted by their left end, tested only where their x range can reach a box
        refs = [s for s in self._segments if s in self._refs]
        wide: list[tuple[tuple[float, float], tuple[float, float]]] = []
        short: list[tuple[float, tuple[float, float], tuple[float, float]]] = []
        for a, b in self._segments:
            if (a, b) not in self._refs:
                if abs(a[0] - b[0]) > _SHORT_SEGMENT:
                    wide.append((a, b))
                else:
                    short.append((min(a[0], b[0]), a, b))
        short.sort(key=lambda t: t[0])
        short_x0 = [t[0] for t in short]

        def cost_of(lab: _LabelRec, box: Box) -> float:
            cost = 0.0
            # a browser's glyphs may run a few percent wider than the estimate: a label keeps that far from a
            # reference line that is not its own (in the margin it would touch, or be cut by, the line)
            pad = max(3.0, (box[2] - box[0]) * REF_MARGIN)
            padded = (box[0] - pad, box[1], box[2] + pad, box[3])
            for a, b in refs:
                if (a, b) != lab.own and segment_hits_box(a, b, padded):
                    cost += 2  # across another reference line: worse than across a curve
            lo = bisect.bisect_left(short_x0, box[0] - _SHORT_SEGMENT - 1e-6)
            near_lines = [(a, b) for _x, a, b in short[lo:bisect.bisect_right(short_x0, box[2])]]
            for a, b in wide + near_lines:
                if cost >= 3:
                    break
                cost += segment_hits_box(a, b, box)
            near = marks[bisect.bisect_left(mark_x0, box[0] - mark_w - 1e-6):bisect.bisect_left(mark_x0, box[2])]
            cost += sum(2 for m in near if boxes_overlap(box, m))
            return cost + sum(3 for o in boxes if boxes_overlap((box[0] - 3, box[1] - 1, box[2] + 3, box[3] + 1), o))

        for lab in self._labels:
            best: tuple[float, tuple[float, float, str], Box, tuple[str, ...]] | None = None
            # on one line at each candidate position, then (none being free) broken into two lines, then three
            for text in [(lab.text,), *_wraps(lab.text)]:
                for cx, cy, anc in lab.candidates:
                    y = cy
                    if lab.at_y is not None and cy < lab.at_y:  # above its point or line: the lines grow upwards
                        y -= (len(text) - 1) * lab.size * LINE_HEIGHT
                    box = lines_box(cx, y, text, lab.size, anc)
                    if box[0] < left + 1 or box[2] > right - 1 or box[1] < top + 1 or box[3] > bottom - 1:
                        continue
                    cost = cost_of(lab, box)
                    if best is None or cost < best[0]:
                        best = (cost, (cx, y, anc), box, text)
                    if cost == 0:
                        break
                if best is not None and best[0] == 0:
                    break
            if best is None:  # no candidate fits in the plot: keep the preferred one, clamped inside
                cx, cy, anc = lab.candidates[0]
                w = len(lab.text) * lab.size * _CHAR_W
                if anc == "start":
                    cx = min(cx, right - 1 - w)
                elif anc == "end":
                    cx = max(cx, left + 1 + w)
                cy = min(max(cy, top + lab.size), bottom - 2)
                best = (0.0, (cx, cy, anc), text_box(cx, cy, lab.text, lab.size, anc), (lab.text,))
            _, (x, y, anc), box, text = best
            boxes.append(box)
            if lab.marker is not None:
                pointer = _pointer(lab.marker, box)
                if pointer is not None:  # the label had to go further off: a thin line says whose it is
                    (ax_, ay_), (bx_, by_) = pointer
                    self._segments.append(pointer)
                    wide.append(pointer)  # a later label does not cross it either
                    lines.append(f'<line class="rl-pointer" x1="{_num(ax_)}" y1="{_num(ay_)}" x2="{_num(bx_)}" '
                                 f'y2="{_num(by_)}" stroke="#8a8a8a" stroke-width="0.8"/>')
            data = " ".join(_num(v) for v in box)
            own = f' data-vline="{lab.vline}"' if lab.vline else ""
            # a white halo under the glyphs: a reference line that must cross a label does not strike it through
            out.append(_label(x, y, text[0], lab.color, anchor=anc, size=lab.size, weight=lab.weight,
                              extra=f' class="rl-label" data-box="{data}"{own} stroke="white" stroke-width="3" '
                                    'stroke-linejoin="round" paint-order="stroke"',
                              more=[(x, lab.size * LINE_HEIGHT, t) for t in text[1:]]))
        return lines + out

    # --- output -------------------------------------------------------------------------------------------
    def _legend_rows(self) -> list[list[tuple[Legend, float]]]:
        rows: list[list[tuple[Legend, float]]] = [[]]
        avail = self.width - self.margin_left - 8
        used = 0.0
        for item in self._legend:
            w = 30 + len(item.label) * 10.5 * _CHAR_W + 14
            if rows[-1] and used + w > avail:
                rows.append([])
                used = 0.0
            rows[-1].append((item, w))
            used += w
        return rows if rows[0] else []

    def render(self) -> str:
        legend_rows = self._legend_rows()
        legend_h = 16 * len(legend_rows) + (6 if legend_rows else 0)
        total_h = self._height + legend_h
        key = hashlib.sha1(("".join(self._layers) + "".join(self._dots) + self.title).encode()).hexdigest()[:10]
        clip = f"rl-clip-{key}"
        left, right, top, bottom = self.margin_left, self._right, self._top, self._top + self._plot_h
        out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="rl-chart" viewBox="0 0 {self.width} {total_h}" '
               f'width="{self.width}" height="{total_h}" role="img" aria-label="{esc(self.title or self.description)}" '
               f'font-family="{esc(FONT)}" font-size="11">']
        if self.title:
            out.append(f"<title>{esc(self.title)}</title>")
        if self.description:
            out.append(f"<desc>{esc(self.description)}</desc>")
        out.append(f'<defs><clipPath id="{clip}"><rect x="{_num(left)}" y="{_num(top - 2)}" '
                   f'width="{_num(right - left)}" height="{_num(bottom - top + 4)}"/></clipPath></defs>')
        if self.title:
            out.append(_label(left, self.margin_top + 15, self.title, "#111", anchor="start", size=13, weight="600"))
        sub = self._subtitle_lines()
        for i, text in enumerate(sub):
            out.append(_label(left, self.margin_top + 31 + 16 * i, text, "#555", anchor="start", size=10.5))
        y0 = self.margin_top + (22 if self.title else 6) + 16 * len(sub)
        for i, (text, color) in enumerate(self._note_lines()):
            out.append(_label(left, y0 + 13 + 15 * i, text, color, anchor="start", size=10.5, weight="600"))
        out.append(f'<rect x="{_num(left)}" y="{_num(top)}" width="{_num(right - left)}" '
                   f'height="{_num(bottom - top)}" fill="#fcfcfd" stroke="#c8c8c8"/>')
        # grid and ticks
        xfmt, yfmt = _tick_format(self.x), _tick_format(self.y)
        for t in self.x.tick_values():
            xx = self.px(t)
            if not (left - 0.5 <= xx <= right + 0.5):
                continue
            out.append(f'<line x1="{_num(xx)}" y1="{_num(top)}" x2="{_num(xx)}" y2="{_num(bottom)}" stroke="#ececec"/>')
            out.append(_label(xx, bottom + 14, xfmt(t), "#444", anchor="middle"))
        for t in self.y.tick_values():
            yy = self.py(t)
            if not (top - 0.5 <= yy <= bottom + 0.5):
                continue
            out.append(f'<line x1="{_num(left)}" y1="{_num(yy)}" x2="{_num(right)}" y2="{_num(yy)}" stroke="#ececec"/>')
            out.append(_label(left - 5, yy + 3.5, yfmt(t), "#444", anchor="end"))
        if self.y2 is not None:
            for t in self.y2.tick_values():
                yy = self.py(t, "y2")
                if not (top - 0.5 <= yy <= bottom + 0.5):
                    continue
                out.append(_label(right + 5, yy + 3.5, self.y2.fmt(t), "#444", anchor="start"))
            if self.y2.label:
                cx, cy = self.width - 10, (top + bottom) / 2
                out.append(f'<text x="{_num(cx)}" y="{_num(cy)}" fill="#333" text-anchor="middle" '
                           f'transform="rotate(90 {_num(cx)} {_num(cy)})">{esc(self.y2.label)}</text>')
        if self.x.label:
            out.append(_label((left + right) / 2, bottom + 32, self.x.label, "#333", anchor="middle"))
        if self.y.label:
            cx, cy = 13, (top + bottom) / 2
            out.append(f'<text x="{_num(cx)}" y="{_num(cy)}" fill="#333" text-anchor="middle" '
                       f'transform="rotate(-90 {_num(cx)} {_num(cy)})">{esc(self.y.label)}</text>')
        self._nest()
        out.append(f'<g clip-path="url(#{clip})">')
        out.extend(self._layers)
        out.extend(m.svg() for m in _drawing_order([m for m in self._markers if not m.overlay]))
        out.append("</g>")
        out.extend(self._overlay)
        out.extend(self._dots)
        out.extend(m.svg() for m in _drawing_order([m for m in self._markers if m.overlay]))
        out.extend(self._place_labels())
        out.extend(self._hover)  # invisible: above the labels too, so a label over a point never hides its tooltip
        # legend
        ly = self._height + 4
        for row in legend_rows:
            lx = float(left)
            for item, w in row:
                out.append(_legend_swatch(item, lx, ly + 6))
                out.append(_label(lx + 26, ly + 10, item.label, "#333", anchor="start", size=10.5))
                lx += w
            ly += 16
        out.append("</svg>")
        return "".join(out)


def _drawing_order(markers: list[_MarkerRec]) -> list[_MarkerRec]:
    """The markers as they are drawn: the rings (outlines with no fill, which hide nothing), then those settled
    beneath the filled markers (frames, :meth:`Chart._nest`), the last-settled (the largest around a point) first,
    then the rest in the order they were added. A frame is drawn over a ring, so the ring does not hide it."""
    return ([m for m in markers if m.ring and not m.under] + [m for m in reversed(markers) if m.under]
            + [m for m in markers if not m.ring and not m.under])


#: a label whose box is further than this from its marker's edge (px) gets a pointer to it
POINTER_GAP = 12.0


def _pointer(m: _MarkerRec, box: Box) -> tuple[tuple[float, float], tuple[float, float]] | None:
    """The line from a marker's edge to the nearest point of its label's box (2 px short of it), or None when the
    label sits close enough to read as the marker's own."""
    nx, ny = min(max(m.x, box[0]), box[2]), min(max(m.y, box[1]), box[3])
    d = math.hypot(nx - m.x, ny - m.y)
    if d <= m.r + POINTER_GAP:
        return None
    ux, uy = (nx - m.x) / d, (ny - m.y) / d
    return (m.x + ux * m.r, m.y + uy * m.r), (nx - ux * 2, ny - uy * 2)


def _tick_format(axis: Axis) -> Callable[[float], str]:
    """The axis' tick formatter; the default one writes every tick of an axis that reaches 10k in the same
    style (1k, 10k, not 1,000 next to 10k)."""
    if axis.fmt is not compact_number:
        return axis.fmt
    if not any(abs(t) >= 1e4 for t in axis.tick_values()):
        return compact_number

    def fmt(t: float) -> str:
        return f"{t / 1e3:.3g}k" if 1e3 <= abs(t) < 1e4 else compact_number(t)
    return fmt


def _label(x: float, y: float, text: str, color: str, *, anchor: str = "start", size: float = 11,
           weight: str = "normal", extra: str = "", more: Sequence[tuple[float, float, str]] = ()) -> str:
    """A ``<text>`` whose first line's baseline is at (x, y); each of ``more``, (x, dy, text), is a further line, a
    ``<tspan>`` at x and dy below the one before it."""
    w = f' font-weight="{weight}"' if weight != "normal" else ""
    s = f' font-size="{_num(size)}"' if size != 11 else ""
    rest = "".join(f'<tspan x="{_num(tx)}" dy="{_num(dy)}">{esc(t)}</tspan>' for tx, dy, t in more)
    return (f'<text x="{_num(x)}" y="{_num(y)}" fill="{color}" text-anchor="{anchor}"{s}{w}{extra}>'
            f"{esc(text)}{rest}</text>")


def _legend_swatch(item: Legend, x: float, y: float) -> str:
    if item.kind == "line":
        return (f'<line x1="{_num(x)}" y1="{_num(y)}" x2="{_num(x + 20)}" y2="{_num(y)}" stroke="{item.color}" '
                f'stroke-width="{_num(min(item.width, 3))}"' + (f' stroke-dasharray="{item.dash}"' if item.dash else "")
                + "/>")
    if item.kind == "whisker":  # as Chart.whiskers draws one: a vertical line with a cap at each end
        return (f'<path d="M{_num(x + 10)},{_num(y - 5)}V{_num(y + 5)}M{_num(x + 5)},{_num(y - 5)}h10'
                f'M{_num(x + 5)},{_num(y + 5)}h10" fill="none" stroke="{item.color}" '
                f'stroke-width="{_num(min(item.width, 3))}"/>')
    if item.kind == "band":
        return (f'<rect x="{_num(x)}" y="{_num(y - 5)}" width="20" height="10" fill="{item.color}" '
                f'opacity="0.3"/>')
    return _marker_svg(x + 10, y, item.marker, item.color, 4.5, item.hollow, None, None, "", legend=True)


def _marker_svg(cx: float, cy: float, shape: str, color: str, size: float, hollow: bool, tip: str | None,
                stroke: str | None, css_class: str, ring: bool = False, legend: bool = False) -> str:
    """One marker's SVG element (``data-r``, its reach, on markers in the plot; none on a legend swatch)."""
    fill = "none" if ring else ("white" if hollow else color)
    st = stroke or color
    sw = 2 if hollow else 1
    cls = f' class="{esc(css_class)}"' if css_class else ""
    s = size
    if shape == "circle":
        el = f'<circle cx="{_num(cx)}" cy="{_num(cy)}" r="{_num(s)}"'
    elif shape == "square":
        el = f'<rect x="{_num(cx - s)}" y="{_num(cy - s)}" width="{_num(2 * s)}" height="{_num(2 * s)}"'
    elif shape == "diamond":
        k = s * 1.35
        el = (f'<polygon points="{_num(cx)},{_num(cy - k)} {_num(cx + k)},{_num(cy)} {_num(cx)},{_num(cy + k)} '
              f'{_num(cx - k)},{_num(cy)}"')
    elif shape in ("triangle", "up"):
        k = s * 1.3
        el = (f'<polygon points="{_num(cx)},{_num(cy - k)} {_num(cx + k)},{_num(cy + k * 0.8)} '
              f'{_num(cx - k)},{_num(cy + k * 0.8)}"')
    elif shape == "down":
        k = s * 1.3
        el = (f'<polygon points="{_num(cx)},{_num(cy + k)} {_num(cx + k)},{_num(cy - k * 0.8)} '
              f'{_num(cx - k)},{_num(cy - k * 0.8)}"')
    elif shape == "star":
        k = s * 1.6
        pts = []
        for j in range(10):
            r = k if j % 2 == 0 else k * 0.45
            a = math.pi / 2 + j * math.pi / 5
            pts.append(f"{_num(cx + r * math.cos(a))},{_num(cy - r * math.sin(a))}")
        el = f'<polygon points="{" ".join(pts)}"'
    elif shape == "cross":
        k = s
        el = (f'<path d="M{_num(cx - k)},{_num(cy - k)}L{_num(cx + k)},{_num(cy + k)}M{_num(cx - k)},{_num(cy + k)}'
              f'L{_num(cx + k)},{_num(cy - k)}" stroke-width="2.2"')
        fill = "none"
    else:
        raise ValueError(f"unknown marker {shape!r}")
    body = (f'{el}{cls} fill="{fill}" stroke="{st}"' + (f' stroke-width="{sw}"' if shape != "cross" else "")
            + ("" if legend else f' data-r="{_num(_radius(shape, size))}"'))
    return f"{body}><title>{esc(tip)}</title></{el.split()[0][1:]}>" if tip else f"{body}/>"
