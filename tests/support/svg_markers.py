"""The markers a chart drew, read back from its SVG: shape, centre, reach and tooltip (one parser for the chart
tests that check where markers sit and what they cover)."""

from __future__ import annotations

from typing import Any
from xml.etree import ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"


def markers(root: ET.Element, *, other_polygons: bool = True) -> list[dict[str, Any]]:
    """Every marker (an element with ``data-r``) in drawing order: ``shape`` (circle, square, diamond, star,
    triangle), centre ``cx``/``cy``, reach ``r``, ``fill``, ``stroke``, tooltip ``tip`` and the element ``el``. A
    polygon that is neither a diamond nor a star (an arrowhead: a value off the axis, drawn at its edge) is a
    ``triangle`` at its vertices' mean, or left out with ``other_polygons=False`` (it stands for no value on the
    axis)."""
    out = []
    for e in root.iter():
        if e.get("data-r") is None:
            continue
        tag = e.tag.replace(NS, "")
        if tag == "circle":
            shape, cx, cy = "circle", float(e.get("cx", 0)), float(e.get("cy", 0))
        elif tag == "rect":
            shape = "square"
            cx = float(e.get("x", 0)) + float(e.get("width", 0)) / 2
            cy = float(e.get("y", 0)) + float(e.get("height", 0)) / 2
        elif tag == "polygon":
            pts = [tuple(map(float, p.split(","))) for p in (e.get("points") or "").split()]
            if len(pts) == 4:  # a diamond: the centre of its top and bottom vertices
                shape, cx, cy = "diamond", pts[0][0], (pts[0][1] + pts[2][1]) / 2
            elif len(pts) == 10:  # a star: its vertices are symmetric about its centre
                shape, cx, cy = "star", sum(p[0] for p in pts) / 10, sum(p[1] for p in pts) / 10
            elif other_polygons and pts:
                shape, cx, cy = "triangle", sum(p[0] for p in pts) / len(pts), sum(p[1] for p in pts) / len(pts)
            else:
                continue
        else:
            continue
        title = e.find(f"{NS}title")
        out.append({"shape": shape, "cx": cx, "cy": cy, "r": float(e.get("data-r", 0)), "fill": e.get("fill"),
                    "stroke": e.get("stroke"), "tip": (title.text or "") if title is not None else "", "el": e})
    return out
