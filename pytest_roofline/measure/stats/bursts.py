"""Bursts: a server that delivers a reply's tokens several at a time (coalesced chunks, zero gaps), detected and
named.

TPOT and ITL follow ``vllm bench serve``'s definitions (vllm/benchmarks/serve.py and
vllm/benchmarks/lib/endpoint_request_func.py at v0.32.0): one arrival time per streamed chunk, ITL the gaps
between them, TPOT = (E2E − TTFT) ÷ (output tokens − 1). Those figures time the *delivery*. When the server
flushes a reply's tokens in a few bursts (the CPU build of vLLM on a busy machine does: most of a reply's chunks
reach the client in one read), most gaps are 0 and TPOT can be 0 ms: true of the delivery, and nothing like the
engine's step time. Such a point is flagged, with the share of requests affected, and every verdict at it says so.

The rule: a request is *delivered in bursts* when its output tokens arrived at fewer distinct times than
:data:`BURST_ARRIVAL_SHARE` of its tokens (two arrivals closer than :data:`SAME_ARRIVAL_S` are one: chunks of one
socket read share a kernel timestamp; a peer's user-space stamps of one read differ by microseconds). A point is
flagged when at least :data:`BURST_FLAG_SHARE` of its completed requests were.

A peer's file without per-request chunk times (``vllm bench serve`` without ``--save-detailed``, AIPerf's profile
export, GuideLLM's benchmarks JSON) is judged from its summary (:func:`summary_burst_flag`), by what the summary
proves: a TPOT p50 × (output tokens − 1) under :data:`SAME_ARRIVAL_S` means at least half the requests got every
token after the first in one arrival (each in bursts, so a share of at least 50%); an ITL p50 under
:data:`SAME_ARRIVAL_S` means at least half of all chunk gaps were one arrival.

This module never imports pytest.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pytest_roofline.measure.loadgen import RequestRecord
from pytest_roofline.measure.stats.glossary import output_tokens

__all__ = ["SAME_ARRIVAL_S", "BURST_ARRIVAL_SHARE", "BURST_FLAG_SHARE", "arrivals", "is_burst", "bursts",
           "bursts_from_gaps", "burst_flag", "summary_burst_flag"]

#: two token arrivals closer than this are one arrival (seconds): 0.1 ms, under any engine's step time
SAME_ARRIVAL_S = 1e-4
#: a request is delivered in bursts when its distinct arrival times are fewer than this share of its output tokens
BURST_ARRIVAL_SHARE = 0.5
#: a point is flagged when at least this share of its completed requests were delivered in bursts
BURST_FLAG_SHARE = 0.10
#: what every bursts flag ends with
_RESTS_ON = ("TPOT and ITL here time how the server delivered the stream, not its generation step (a TPOT or ITL "
             "verdict at this point rests on that)")


def arrivals(gaps_s: Iterable[float]) -> int:
    """Distinct arrival times of a streamed reply from its chunk gaps (seconds): the first chunk, then every gap
    of at least :data:`SAME_ARRIVAL_S`."""
    return 1 + sum(1 for g in gaps_s if g >= SAME_ARRIVAL_S)


def is_burst(n_arrivals: int, n_tokens: int) -> bool:
    """Whether a reply of ``n_tokens`` output tokens that arrived at ``n_arrivals`` distinct times came in bursts."""
    return n_tokens > 1 and n_arrivals < BURST_ARRIVAL_SHARE * n_tokens


def bursts_from_gaps(replies: Iterable[tuple[Sequence[float], int]]) -> dict[str, Any]:
    """The ``client.bursts`` object from ``(chunk gaps in seconds, output tokens)`` per completed request: how many
    requests came in bursts, of how many, their share, and the zero gaps among all gaps (pooled, as ITL is)."""
    n = k = zero = gaps = 0
    for gaps_s, n_tokens in replies:
        n += 1
        a = arrivals(gaps_s)
        zero += len(gaps_s) - (a - 1)
        gaps += len(gaps_s)
        k += is_burst(a, n_tokens)
    return {"requests": k, "of": n, "share": (k / n) if n else None, "zero_gaps": zero, "gaps": gaps,
            "rule": (f"a request is in bursts when its tokens arrived at fewer than {BURST_ARRIVAL_SHARE:.0%} as "
                     f"many distinct times (gaps < {SAME_ARRIVAL_S * 1e3:g} ms are one arrival)")}


def bursts(records: Iterable[RequestRecord]) -> dict[str, Any]:
    """``client.bursts`` of a point's completed measured requests (see :func:`bursts_from_gaps`)."""
    return bursts_from_gaps((r.itls_s, output_tokens(r)) for r in records if r.ok and r.in_sample)


def burst_flag(b: Mapping[str, Any] | None) -> str | None:
    """The point's flag when enough of its requests came in bursts (:data:`BURST_FLAG_SHARE`), else None."""
    if not isinstance(b, Mapping):
        return None
    share, k, n = b.get("share"), b.get("requests"), b.get("of")
    if not isinstance(share, (int, float)) or share < BURST_FLAG_SHARE:
        return None
    return (f"bursts: {k} of {n} requests ({share:.0%}) got their tokens in bursts (zero gaps: {b.get('zero_gaps')} "
            f"of {b.get('gaps')}): {_RESTS_ON}")


def summary_burst_flag(*, tpot_p50_ms: float | None, itl_p50_ms: float | None, output_tokens: float | None,
                       tool: str) -> str | None:
    """The bursts flag of a peer's point that records no per-request chunk times, from its summary (``tool`` names
    the peer), or None when the summary does not show bursts. TPOT counts when TPOT p50 × (``output_tokens`` − 1)
    is under :data:`SAME_ARRIVAL_S` (with ``output_tokens`` unknown, only a TPOT p50 of 0): half the requests or
    more then got every token after the first in one arrival, each in bursts by :func:`is_burst`. ITL counts when
    its p50 is under :data:`SAME_ARRIVAL_S`: half of all chunk gaps or more were one arrival."""
    same_ms = SAME_ARRIVAL_S * 1e3
    said = []
    n = output_tokens
    if tpot_p50_ms is not None and tpot_p50_ms >= 0 and (n is None or n >= 3):  # 1 or 2 tokens: never in bursts
        if tpot_p50_ms * (n - 1) < same_ms if n is not None else tpot_p50_ms == 0:
            said.append(f"TPOT p50 {tpot_p50_ms:.4g} ms" + (f" over {n:g}-token replies" if n is not None else "")
                        + f" (half the requests or more got every token after the first within {same_ms:g} ms)")
    if itl_p50_ms is not None and 0 <= itl_p50_ms < same_ms:
        said.append(f"ITL p50 {itl_p50_ms:.4g} ms (half the chunk gaps or more under {same_ms:g} ms)")
    if not said:
        return None
    return (f"bursts: {' and '.join(said)}: tokens came several per read ({tool} has no per-request chunk times "
            f"to count the requests): {_RESTS_ON}")
