"""Replayable nights made from the recorded cpu-tiny night: its times shifted, every TTFT figure (the points'
percentiles, steady values and intervals) scaled by a factor per night, and a commit of its own (the trial 21
night generator)."""

from __future__ import annotations

import copy
import datetime as dt
import json
from pathlib import Path
from typing import Any

from support.recordings import recording_path


def _shift(text: str, delta: dt.timedelta) -> str:
    t = dt.datetime.fromisoformat(text.replace("Z", "+00:00")) + delta
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ") if "." in text else t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _scale(d: dict[str, Any], factor: float) -> None:
    for k in list(d):
        if isinstance(d[k], (int, float)):
            d[k] = d[k] * factor


def write_nights(out: Path, factors: list[float], *, start: str = "2026-12-06T02:00:00",
                 step_hours: float = 24.0) -> list[Path]:
    """``night000.results.json`` ... in ``out``, one per factor, ``step_hours`` apart from ``start`` (UTC)."""
    out.mkdir(parents=True, exist_ok=True)
    data = json.loads(recording_path("cpu-tiny").read_text())
    t0 = dt.datetime.fromisoformat(data["created_at"].replace("Z", "+00:00"))
    base = dt.datetime.fromisoformat(start + "+00:00")
    paths = []
    for i, factor in enumerate(factors):
        d = copy.deepcopy(data)
        delta = base + dt.timedelta(hours=step_hours * i) - t0
        for k in ("created_at", "updated_at"):
            if d.get(k):
                d[k] = _shift(d[k], delta)
        for p in d["points"]:
            for k in ("started_at", "finished_at"):
                if p.get(k):
                    p[k] = _shift(p[k], delta)
            c = p["client"]
            _scale(c["ttft_ms"], factor)
            if isinstance(c.get("steady"), dict) and isinstance(c["steady"].get("ttft_ms"), dict):
                _scale(c["steady"]["ttft_ms"], factor)
            for iv in ("intervals", "steady_intervals"):
                for k, v in (c.get(iv) or {}).items():
                    if k.startswith("ttft_ms.") and isinstance(v, dict):
                        for f in ("estimate", "lo", "hi"):
                            if isinstance(v.get(f), (int, float)):
                                v[f] *= factor
        d["setup"]["commit"] = f"{0xabc000 + i:07x}"
        path = out / f"night{i:03d}.results.json"
        path.write_text(json.dumps(d))
        paths.append(path)
    return paths
