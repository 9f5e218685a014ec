"""Per-request samples a stored value keeps, and the rank test drift runs on them.

A measured latency quantile (``ttft_p50``, ``tpot_p90``, ``e2e_mean``, ...) is one number from a point's requests.
The history keeps, beside it, a bounded sketch of those requests' values (:func:`sketch`: at most
:data:`SAMPLE_LIMIT` evenly spaced order statistics, in seconds), so two nights can be compared on their whole
samples with a Mann–Whitney rank test (:func:`mann_whitney_p`) as well as on their two intervals. A sketch of a
point that measured more requests than the limit stands for them with fewer values, which only makes the test
more cautious (it sees ``SAMPLE_LIMIT`` values, not ``n``).

A rank test sees only the noise within each run: two runs of one configuration on a busy machine differ by more
than that, so drift combines it with the nights' own spread once three nights exist (see
:mod:`pytest_roofline.history._drift`).
"""

from __future__ import annotations

import array
import base64
import binascii
import json
import math
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["SAMPLE_LIMIT", "MIN_SAMPLES", "sketch", "mann_whitney_p", "point_samples", "per_request_metric",
           "pack_samples", "unpack_samples", "PACKED_PREFIX"]

#: the most per-request values one stored value keeps (the index holds them: ~1 KB a value, every night)
SAMPLE_LIMIT = 128
#: the fewest values each night needs before the rank test is used (else the stored intervals decide)
MIN_SAMPLES = 8
#: the longest requests file read for samples (a larger one is left alone: the value keeps no samples)
_MAX_REQUESTS_BYTES = 256 * 1024 * 1024

_QUANTITY = re.compile(r"^(ttft|tpot|e2e)_(p[0-9]+(?:\.[0-9]+)?|mean|median)$")


def _ttft(r: Mapping[str, Any]) -> float | None:
    sent, first = r.get("sent_s"), r.get("first_token_s")
    return first - sent if isinstance(sent, (int, float)) and isinstance(first, (int, float)) else None


def _e2e(r: Mapping[str, Any]) -> float | None:
    sent, chunks = r.get("sent_s"), r.get("chunk_times_s") or []
    if not isinstance(sent, (int, float)) or not chunks or not isinstance(chunks[-1], (int, float)):
        return None
    return float(chunks[-1] - sent)


def _tpot(r: Mapping[str, Any]) -> float | None:
    # the definition of measure.stats.steady: (e2e − ttft) / (output tokens − 1), for requests of 2+ tokens
    ttft, e2e = _ttft(r), _e2e(r)
    chunks = r.get("chunk_times_s") or []
    n = r.get("completion_tokens") if isinstance(r.get("completion_tokens"), int) else len(chunks)
    if ttft is None or e2e is None or n is None or n < 2:
        return None
    return (e2e - ttft) / (n - 1)


_METRICS: dict[str, Callable[[Mapping[str, Any]], float | None]] = {"ttft": _ttft, "tpot": _tpot, "e2e": _e2e}


#: how the compact form (an index line, a database row) writes a sample: this prefix, then the values as
#: little-endian IEEE 754 doubles in base64. Exact, and read in C: JSON's own number parsing made a worst-case
#: index (365 nights × 50 sampled values × 128) take 1.26 s to read (benchmarks/history_index.py --samples)
PACKED_PREFIX = "f64le:"
_PACKED_MAX_CHARS = len(PACKED_PREFIX) + 4 * math.ceil(8 * SAMPLE_LIMIT / 3)


def pack_samples(samples: Sequence[float]) -> str | None:
    """``samples`` in the compact form (:data:`PACKED_PREFIX` + base64 of little-endian doubles); None for none."""
    if not samples:
        return None
    a = array.array("d", samples)
    if sys.byteorder == "big":
        a.byteswap()
    return PACKED_PREFIX + base64.b64encode(a.tobytes()).decode("ascii")


def unpack_samples(obj: Any) -> tuple[float, ...]:
    """A stored sample as a tuple: from the compact form, from a JSON list (``run.json``, and index lines written
    before the compact form) or from null. A ValueError naming what is wrong for anything else: more than
    :data:`SAMPLE_LIMIT` values, a value that is not a finite number, a text that is not the packed form."""
    if obj is None:
        return ()
    if isinstance(obj, str):
        if not obj.startswith(PACKED_PREFIX) or len(obj) > _PACKED_MAX_CHARS:
            raise ValueError(f"samples is a text that is not {PACKED_PREFIX}<base64> of at most {SAMPLE_LIMIT} values")
        try:
            raw = base64.b64decode(obj[len(PACKED_PREFIX):], validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ValueError(f"samples is not valid base64 ({exc})") from None
        if len(raw) % 8:
            raise ValueError(f"samples holds {len(raw)} bytes, not a whole number of 8-byte values")
        a = array.array("d")
        a.frombytes(raw)
        if sys.byteorder == "big":
            a.byteswap()
        xs = tuple(a)
        if not math.isfinite(sum(xs)):  # a NaN or an infinity (or values summing past 1e308: no latency does)
            raise ValueError("samples holds a value that is not a finite number")
        return xs
    if isinstance(obj, (list, tuple)) and len(obj) <= SAMPLE_LIMIT \
            and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in obj):
        return tuple(obj)
    raise ValueError(f"samples is not a list of at most {SAMPLE_LIMIT} numbers")


def per_request_metric(quantity: str) -> str | None:
    """``ttft_p50`` → ``ttft``: the per-request metric whose distribution the quantity summarises; None for a
    quantity that is not one request's figure (a throughput, a count, a model-only quantity)."""
    m = _QUANTITY.match(quantity)
    return m.group(1) if m else None


def sketch(values: Sequence[float], limit: int = SAMPLE_LIMIT) -> tuple[float, ...]:
    """``values`` sorted, finite only, and at most ``limit`` of them: with more, the order statistics at evenly
    spaced ranks (the smallest and the largest always among them): a fixed-size quantile sketch. Each kept to 6
    significant digits (a microsecond of a second-long latency)."""
    xs = sorted(float(x) for x in values if isinstance(x, (int, float)) and math.isfinite(x))
    if len(xs) > limit >= 2:
        n = len(xs)
        xs = [xs[round(i * (n - 1) / (limit - 1))] for i in range(limit)]
    elif len(xs) > limit:
        xs = xs[:limit]
    return tuple(float(f"{x:.6g}") for x in xs)


def point_samples(results: Mapping[str, Any], point_ids: Sequence[str], quantity: str,
                  cache: dict[Path, dict[str, tuple[float, ...]]] | None = None) -> tuple[float, ...]:
    """The sketch of ``quantity``'s per-request values (seconds) at the one point of ``point_ids``, read from that
    point's requests file beside the results file (``results["_path"]``): measured requests that completed.
    Empty when the quantity is not a per-request figure, the verdict pools several points, or the file is gone,
    too large or not what the sweep writes (the value is then compared by its intervals: nothing fails).
    ``cache`` (one dict for a whole recording) keeps each file's three sketches, so a point's several latency
    predictions read its file once."""
    metric = per_request_metric(quantity)
    if metric is None or len(point_ids) != 1 or not results.get("_path"):
        return ()
    point = next((p for p in results.get("points") or () if isinstance(p, Mapping) and p.get("id") == point_ids[0]),
                 None)
    name = point.get("requests_file") if point is not None else None
    if not isinstance(name, str) or not name or Path(name).name != name:
        return ()
    path = Path(str(results["_path"])).parent / name
    sketches = cache.get(path) if cache is not None else None
    if sketches is None:
        sketches = _file_sketches(path)
        if cache is not None:
            cache[path] = sketches
    return sketches.get(metric, ())


def _file_sketches(path: Path) -> dict[str, tuple[float, ...]]:
    """Each per-request metric's sketch over one requests file, in one pass; empty when it cannot be read."""
    values: dict[str, list[float]] = {m: [] for m in _METRICS}
    try:
        if path.stat().st_size > _MAX_REQUESTS_BYTES:
            return {}
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                if not line.strip():
                    continue
                r = json.loads(line)
                if not isinstance(r, dict) or r.get("warmup") or r.get("status") != "ok":
                    continue
                for m, of in _METRICS.items():
                    x = of(r)
                    if x is not None:
                        values[m].append(x)
    except (OSError, ValueError, TypeError):
        return {}
    return {m: sketch(v) for m, v in values.items()}


def _normal_sf(z: float) -> float:
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def mann_whitney_p(a: Sequence[float], b: Sequence[float]) -> float:
    """The two-sided p-value of the Mann–Whitney U test that ``a`` and ``b`` come from one distribution: U of
    ``a`` from mid-ranks of the pooled values, its normal approximation with the tie correction of the variance
    and a continuity correction of ½ (the form of most statistics packages; fine from about 8 values a side).
    1.0 when either side is empty or every value is tied."""
    n1, n2 = len(a), len(b)
    if n1 == 0 or n2 == 0:
        return 1.0
    pooled = sorted([(x, 0) for x in a] + [(x, 1) for x in b])
    n = n1 + n2
    rank_sum_a = 0.0
    tie_term = 0.0
    i = 0
    while i < n:
        j = i
        while j + 1 < n and pooled[j + 1][0] == pooled[i][0]:
            j += 1
        mid = (i + j) / 2.0 + 1.0  # ranks i+1 .. j+1 share their mean
        t = j - i + 1
        tie_term += t ** 3 - t
        rank_sum_a += mid * sum(1 for k in range(i, j + 1) if pooled[k][1] == 0)
        i = j + 1
    u = rank_sum_a - n1 * (n1 + 1) / 2.0
    mean = n1 * n2 / 2.0
    var = n1 * n2 / 12.0 * ((n + 1) - tie_term / (n * (n - 1)))
    if var <= 0:
        return 1.0
    z = max(0.0, abs(u - mean) - 0.5) / math.sqrt(var)
    return min(1.0, 2.0 * _normal_sf(z))
