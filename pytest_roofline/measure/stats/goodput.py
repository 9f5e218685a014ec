"""vLLM's request goodput at one point: the completed requests meeting every SLO ÷ the point's duration (req/s),
by ``vllm bench serve --goodput``'s rule (vllm/benchmarks/serve.py ``calculate_metrics``): a request is good when
each given SLO is at least its value; TTFT and E2E latency per request, TPOT = (E2E − TTFT) ÷ (output tokens − 1),
taken as 0 for a request of one output token. The duration is the request throughput's, so request_goodput =
request throughput × good ÷ completed.

The interval: the good share is binomial, its 95% Wilson score interval times the request throughput (the
request throughput taken as fixed: its own interval is not folded in).

This module never imports pytest.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pytest_roofline.measure.stats.intervals import z_quantile
from pytest_roofline.model.serving.prediction import meets_slos

__all__ = ["SLO_KEYS", "slo_ms_of", "is_good", "wilson", "request_goodput", "goodput_of_records",
           "with_request_goodput"]

#: the SLOs vLLM's --goodput takes that a results file's ``slo:`` can give, as ``client.goodput.slo_ms`` keys
SLO_KEYS = ("ttft_ms", "tpot_ms")

#: how a request-goodput interval is made, for ``client.goodput.interval.method``
METHOD = "Wilson score interval of the good share × request throughput"


def slo_ms_of(slo: Mapping[str, Any] | None) -> dict[str, float] | None:
    """A file's ``slo:`` (seconds; ``ttft``/``tpot``) as the ms SLOs of ``client.goodput.slo_ms``; None without
    any (an unbounded one is left out, as vLLM's --goodput would not name it)."""
    out: dict[str, float] = {}
    for key in ("ttft", "tpot", "e2el"):
        val = (slo or {}).get(key)
        if isinstance(val, (int, float)) and math.isfinite(float(val)):
            out[f"{key}_ms"] = float(val) * 1e3
    return out or None


def is_good(ttft_s: float | None, e2e_s: float | None, output_tokens: int, slo_ms: Mapping[str, float]) -> bool:
    """vLLM's rule for one completed request: every given SLO ≥ the request's value (TPOT 0 for one token). The
    rule's one home is ``model.serving.prediction.meets_slos``, which the serving model counts its simulated
    requests by too."""
    return meets_slos(ttft_s, e2e_s, output_tokens, slo_ms)


def wilson(good: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of a binomial share ``good`` of ``n`` at ``level``."""
    if n <= 0:
        return 0.0, 1.0
    z = z_quantile(level)
    p, z2 = good / n, z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def request_goodput(requests: Iterable[tuple[float | None, float | None, int]], slo_ms: Mapping[str, float],
                    req_s: float | None, level: float = 0.95) -> dict[str, Any]:
    """``client.goodput`` from the completed requests' (TTFT s, E2E s, output tokens) and the point's request
    throughput: the SLOs used, ``good``, ``completed``, ``req_s`` (None without a request throughput) and the
    interval."""
    reqs = list(requests)
    good = sum(1 for t, e, n in reqs if is_good(t, e, n, slo_ms))
    completed = len(reqs)
    out: dict[str, Any] = {"slo_ms": dict(slo_ms), "good": good, "completed": completed, "req_s": None,
                           "interval": None, "source": "vllm bench serve's request_goodput rule"}
    if req_s is None or completed == 0:
        return out
    lo, hi = wilson(good, completed, level)
    out["req_s"] = req_s * good / completed
    out["interval"] = {"lo": req_s * lo, "hi": req_s * hi, "level": level, "method": METHOD, "n": completed}
    return out


def goodput_of_records(records: Iterable[Any], slo_ms: Mapping[str, float], req_s: float | None,
                       level: float = 0.95) -> dict[str, Any]:
    """:func:`request_goodput` over a point's measured, completed request records (``RequestRecord``)."""
    from pytest_roofline.measure.stats.glossary import output_tokens

    done = [r for r in records if r.in_sample and r.ok]
    return request_goodput(((r.ttft_s, r.e2e_s, output_tokens(r)) for r in done), slo_ms, req_s, level)


def _same(a: Any, b: Mapping[str, float]) -> bool:
    return (isinstance(a, Mapping) and set(a) == set(b)
            and all(isinstance(a[k], (int, float)) and math.isclose(float(a[k]), b[k], rel_tol=1e-9) for k in b))


def _point_records(folder: Path, pt: Mapping[str, Any]) -> tuple[list[Any] | None, str]:
    """The measured records of every repeat of a point, read back from its ``*.requests.jsonl`` files (repeat k > 1
    in ``<id>.r<k>.requests.jsonl``), or None with why not."""
    from pytest_roofline.measure.loadgen import RequestRecord

    name = pt.get("requests_file")
    if not isinstance(name, str) or not name:
        return None, "the results file names no requests file for it"
    repeats = (pt.get("client") or {}).get("repeats")
    n = len(repeats) if isinstance(repeats, list) and repeats else 1
    stem = name.removesuffix(".requests.jsonl")
    paths = [folder / name, *(folder / f"{stem}.r{k}.requests.jsonl" for k in range(2, n + 1))]
    fields = set(RequestRecord.__dataclass_fields__)
    out: list[Any] = []
    for path in paths:
        if not path.is_file():
            return None, f"its requests file {path.name} is not beside the results file"
        try:
            with path.open(encoding="utf-8") as fh:
                out.extend(RequestRecord(**{k: v for k, v in json.loads(line).items() if k in fields})
                           for line in fh if line.strip())
        except (OSError, ValueError, TypeError) as exc:
            return None, f"its requests file {path.name} could not be read ({exc})"
    return out, ""


def with_request_goodput(data: Mapping[str, Any], slo_ms: Mapping[str, float], folder: Path | None,
                         ) -> dict[str, Any]:
    """A replayed results document whose points' ``client.goodput`` is under ``slo_ms`` (a replay's file ``slo:``):
    a point that recorded it under the same SLOs is kept; any other is recomputed from its requests files in
    ``folder`` where they are there, else its ``client.goodput`` says why it is not measured (``not_measured``)."""
    points = []
    for pt in data.get("points") or []:
        client = pt.get("client") if isinstance(pt, Mapping) else None
        if not isinstance(client, Mapping) or _same((client.get("goodput") or {}).get("slo_ms"), slo_ms):
            points.append(pt)
            continue
        old = client.get("goodput")
        records, why = _point_records(folder, pt) if folder is not None else (None, "no folder to read it from")
        arrays = client.get("goodput_requests")  # a vllm bench serve --save-detailed file's (peers._vllm_detail)
        if records is not None:
            gp = goodput_of_records(records, slo_ms, client.get("request_throughput_req_s"))
            gp["source"] += ", recomputed on replay from the point's requests file"
        elif isinstance(arrays, list) and arrays:
            gp = request_goodput(((t, e, int(n)) for t, e, n in arrays), slo_ms,
                                 client.get("request_throughput_req_s"))
            gp["source"] += ", recomputed on replay from the vllm bench serve file's per-request arrays"
        else:
            had = ("it recorded no request goodput" if not isinstance(old, Mapping) else
                   "it recorded request goodput under SLOs the file does not name" if not old.get("slo_ms") else
                   "it recorded request goodput under other SLOs")
            if isinstance(old, Mapping) and old.get("slo_note"):  # a vllm bench serve file without the arrays
                why = ("the file keeps no per-request arrays (vllm bench serve --save-detailed writes them); "
                       f"{old['slo_note']}")
            gp = {"slo_ms": dict(slo_ms), "req_s": None,
                  "not_measured": f"{had}; it cannot be recomputed under the file's slo: {why}"}
        points.append({**pt, "client": {**client, "goodput": gp}})
    return {**data, "points": points}
