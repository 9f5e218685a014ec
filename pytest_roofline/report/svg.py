"""A small, dependency-free SVG chart writer for the reports.

Charts are plain inline ``<svg>`` markup: no scripts, no external fonts or images, so a page that embeds them
renders offline and under a strict Content-Security-Policy. Tooltips are SVG ``<title>`` elements, which
browsers show on hover without any JavaScript.

The model is deliberately small: a :class:`Chart` has an x axis, a y axis and an optional second y axis (each
linear or logarithmic), and collects layers (lines, markers, reference lines, bands, labels) that are drawn in
the order they were added. ``render()`` returns the SVG text.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from xml.sax.saxutils import escape as _xml_escape

__all__ = ["Axis", "Chart", "PALETTE", "esc", "compact_number", "nice_ticks", "log_ticks"]

#: Okabe–Ito colours (distinguishable with the common colour-vision deficiencies), plus greys
PALETTE = {
    "blue": "#0072B2", "orange": "#E69F00", "green": "#009E73", "red": "#D55E00", "purple": "#CC79A7",
    "sky": "#56B4E9", "yellow": "#F0E442", "black": "#222222", "grey": "#8a8a8a", "lightgrey": "#d9d9d9",
}
FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"
_CHAR_W = 0.56  # average glyph width as a fraction of the font size, for layout estimates


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


@dataclass
class _Legend:
    label: str
    color: str
    kind: str  # line | marker | band
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
    _legend: list[_Legend] = field(default_factory=list)
    _notes: list[tuple[str, str]] = field(default_factory=list)

    # --- geometry -----------------------------------------------------------------------------------------
    @property
    def _top(self) -> float:
        return (self.margin_top + (22 if self.title else 6) + (16 if self.subtitle else 0) + 15 * len(self._notes)
                + (4 if self._notes else 0))

    @property
    def _right(self) -> float:
        return self.width - self.margin_right - (52 if self.y2 is not None else 0)

    @property
    def _plot_h(self) -> float:
        return self.height - self._top - self.margin_bottom

    def px(self, v: float) -> float:
        return self.margin_left + self.x.frac(v) * (self._right - self.margin_left)

    def py(self, v: float, axis: str = "y") -> float:
        ax = self.y2 if axis == "y2" and self.y2 is not None else self.y
        return self._top + (1 - ax.frac(v)) * self._plot_h

    def _ax(self, axis: str) -> Axis:
        return self.y2 if axis == "y2" and self.y2 is not None else self.y

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
            tip = f"<title>{esc(title)}</title>" if title else ""
            self._layers.append(f'<polyline points="{d}" {attrs}>{tip}</polyline>' if tip else
                                f'<polyline points="{d}" {attrs}/>')
        if label:
            self._legend.append(_Legend(label, color, "line", dash, width=width))

    def markers(self, pts: Iterable[tuple[float, float]], *, color: str, marker: str = "circle", size: float = 4.5,
                label: str | None = None, titles: Sequence[str] | None = None, hollow: bool = False,
                axis: str = "y", stroke: str | None = None, css_class: str = "", overlay: bool = True) -> None:
        """One marker per point; ``titles`` become hover tooltips. Markers outside the axes are clamped to the
        edge and drawn as an arrowhead so an off-scale value is still visible."""
        ax = self._ax(axis)
        for i, (x, y) in enumerate(pts):
            if x is None or y is None or not (math.isfinite(x) and math.isfinite(y)):
                continue
            if (self.x.scale == "log" and x <= 0) or (ax.scale == "log" and y <= 0):
                continue
            shape = marker
            if not ax.contains(y):
                y = ax.hi if ax.frac(y) > 1 else ax.lo
                shape = "up" if y == ax.hi else "down"
            cx, cy = self.px(x), self.py(y, axis)
            tip = titles[i] if titles and i < len(titles) else None
            self._marker(cx, cy, shape, color, size, hollow, tip, stroke, css_class, overlay)
        if label:
            self._legend.append(_Legend(label, color, "marker", marker=marker, hollow=hollow))

    def _marker(self, cx: float, cy: float, shape: str, color: str, size: float, hollow: bool, tip: str | None,
                stroke: str | None, css_class: str, overlay: bool) -> None:
        fill = "white" if hollow else color
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
        body = f'{el}{cls} fill="{fill}" stroke="{st}"' + (f' stroke-width="{sw}"' if shape != "cross" else "")
        target = self._overlay if overlay else self._layers
        target.append(f"{body}><title>{esc(tip)}</title></{el.split()[0][1:]}>" if tip else f"{body}/>")

    def hline(self, y: float, *, color: str, label: str | None = None, dash: str | None = "6 4", axis: str = "y",
              text: str | None = None, width: float = 1.5, text_anchor: str = "end") -> None:
        """A horizontal reference line across the plot (skipped when outside the axis)."""
        ax = self._ax(axis)
        if y is None or not math.isfinite(y) or not ax.contains(y):
            return
        yy = self.py(y, axis)
        self._layers.append(f'<line x1="{_num(self.margin_left)}" y1="{_num(yy)}" x2="{_num(self._right)}" '
                            f'y2="{_num(yy)}" stroke="{color}" stroke-width="{_num(width)}"'
                            + (f' stroke-dasharray="{dash}"' if dash else "") + "/>")
        if text:
            tx = self._right - 4 if text_anchor == "end" else self.margin_left + 4
            self._overlay.append(_label(tx, yy - 4, text, color, anchor=text_anchor))
        if label:
            self._legend.append(_Legend(label, color, "line", dash, width=width))

    def vline(self, x: float, *, color: str, label: str | None = None, dash: str | None = "6 4",
              text: str | None = None, width: float = 1.5, text_pos: float = 0.02, text_side: str = "right") -> None:
        """A vertical reference line (``text`` is written beside it, ``text_pos`` down from the top)."""
        if x is None or not math.isfinite(x) or not self.x.contains(x):
            return
        xx = self.px(x)
        self._layers.append(f'<line x1="{_num(xx)}" y1="{_num(self._top)}" x2="{_num(xx)}" '
                            f'y2="{_num(self._top + self._plot_h)}" stroke="{color}" stroke-width="{_num(width)}"'
                            + (f' stroke-dasharray="{dash}"' if dash else "") + "/>")
        if text:
            ty = self._top + 11 + text_pos * self._plot_h
            if text_side == "right":
                self._overlay.append(_label(xx + 4, ty, text, color, anchor="start"))
            else:
                self._overlay.append(_label(xx - 4, ty, text, color, anchor="end"))
        if label:
            self._legend.append(_Legend(label, color, "line", dash, width=width))

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
            self._legend.append(_Legend(label, color, "band"))

    def vband(self, x0: float, x1: float, *, color: str, opacity: float = 0.15, label: str | None = None) -> None:
        lo, hi = sorted((x0, x1))
        lo, hi = max(lo, self.x.lo), min(hi, self.x.hi)
        if hi <= lo:
            return
        xa, xb = self.px(lo), self.px(hi)
        self._layers.append(f'<rect x="{_num(xa)}" y="{_num(self._top)}" width="{_num(xb - xa)}" '
                            f'height="{_num(self._plot_h)}" fill="{color}" opacity="{_num(opacity)}"/>')
        if label:
            self._legend.append(_Legend(label, color, "band"))

    def annotate(self, x: float, y: float, text: str, *, color: str = "#333", axis: str = "y", dx: float = 6,
                 dy: float = -6, anchor: str = "start", size: float = 10.5, weight: str = "normal") -> None:
        """Text placed at a data point (offset by dx, dy pixels), kept inside the plot area."""
        if x is None or y is None or not (math.isfinite(x) and math.isfinite(y)):
            return
        ax = self._ax(axis)
        if (self.x.scale == "log" and x <= 0) or (ax.scale == "log" and y <= 0):
            return
        tx, ty = self.px(x) + dx, self.py(min(max(y, ax.lo), ax.hi), axis) + dy
        w = len(text) * size * _CHAR_W
        if anchor == "start" and tx + w > self._right:
            tx, anchor = self.px(x) - dx, "end"
        elif anchor == "end" and tx - w < self.margin_left:
            tx, anchor = self.px(x) - dx, "start"
        ty = min(max(ty, self._top + size), self._top + self._plot_h - 2)
        self._overlay.append(_label(tx, ty, text, color, anchor=anchor, size=size, weight=weight))

    def note(self, text: str, *, color: str = "#555") -> None:
        """A line of text between the subtitle and the plot (call before adding layers: it moves the plot down)."""
        if self._layers or self._overlay:
            raise RuntimeError("Chart.note() must be called before anything is drawn")
        self._notes.append((text, color))

    # --- output -------------------------------------------------------------------------------------------
    def _legend_rows(self) -> list[list[tuple[_Legend, float]]]:
        rows: list[list[tuple[_Legend, float]]] = [[]]
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
        total_h = self.height + legend_h
        key = hashlib.sha1(("".join(self._layers) + self.title).encode()).hexdigest()[:10]
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
        if self.subtitle:
            out.append(_label(left, self.margin_top + 31, self.subtitle, "#555", anchor="start", size=10.5))
        y0 = self.margin_top + (22 if self.title else 6) + (16 if self.subtitle else 0)
        for i, (text, color) in enumerate(self._notes):
            out.append(_label(left, y0 + 13 + 15 * i, text, color, anchor="start", size=10.5, weight="600"))
        out.append(f'<rect x="{_num(left)}" y="{_num(top)}" width="{_num(right - left)}" '
                   f'height="{_num(bottom - top)}" fill="#fcfcfd" stroke="#c8c8c8"/>')
        # grid and ticks
        for t in self.x.tick_values():
            xx = self.px(t)
            if not (left - 0.5 <= xx <= right + 0.5):
                continue
            out.append(f'<line x1="{_num(xx)}" y1="{_num(top)}" x2="{_num(xx)}" y2="{_num(bottom)}" stroke="#ececec"/>')
            out.append(_label(xx, bottom + 14, self.x.fmt(t), "#444", anchor="middle"))
        for t in self.y.tick_values():
            yy = self.py(t)
            if not (top - 0.5 <= yy <= bottom + 0.5):
                continue
            out.append(f'<line x1="{_num(left)}" y1="{_num(yy)}" x2="{_num(right)}" y2="{_num(yy)}" stroke="#ececec"/>')
            out.append(_label(left - 5, yy + 3.5, self.y.fmt(t), "#444", anchor="end"))
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
        out.append(f'<g clip-path="url(#{clip})">')
        out.extend(self._layers)
        out.append("</g>")
        out.extend(self._overlay)
        # legend
        ly = self.height + 4
        for row in legend_rows:
            lx = float(left)
            for item, w in row:
                out.append(_legend_swatch(item, lx, ly + 6))
                out.append(_label(lx + 26, ly + 10, item.label, "#333", anchor="start", size=10.5))
                lx += w
            ly += 16
        out.append("</svg>")
        return "".join(out)


def _label(x: float, y: float, text: str, color: str, *, anchor: str = "start", size: float = 11,
           weight: str = "normal", extra: str = "") -> str:
    w = f' font-weight="{weight}"' if weight != "normal" else ""
    s = f' font-size="{_num(size)}"' if size != 11 else ""
    return (f'<text x="{_num(x)}" y="{_num(y)}" fill="{color}" text-anchor="{anchor}"{s}{w}{extra}>'
            f"{esc(text)}</text>")


def _legend_swatch(item: _Legend, x: float, y: float) -> str:
    if item.kind == "line":
        return (f'<line x1="{_num(x)}" y1="{_num(y)}" x2="{_num(x + 20)}" y2="{_num(y)}" stroke="{item.color}" '
                f'stroke-width="{_num(min(item.width, 3))}"' + (f' stroke-dasharray="{item.dash}"' if item.dash else "")
                + "/>")
    if item.kind == "band":
        return (f'<rect x="{_num(x)}" y="{_num(y - 5)}" width="20" height="10" fill="{item.color}" '
                f'opacity="0.3"/>')
    tmp = Chart(Axis(0, 1), Axis(0, 1))
    tmp._marker(x + 10, y, item.marker, item.color, 4.5, item.hollow, None, None, "", True)
    return tmp._overlay[0]
