"""What one sweep point sends: the arrival process, the request lengths and their count (``Workload``), built
from a Setup as the load generator would (``workload_for_point``), and the open-loop send times
(``arrival_times``: the load generator's own schedule, ``model.workload.arrival_offsets_s``)."""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import Any

from pytest_roofline.errors import SimulationError
from pytest_roofline.model import workload as _schedule
from pytest_roofline.model.setup import Setup
from pytest_roofline.model.workload import ARRIVAL_SPANS, ArrivalSpan, DatasetLengths, LengthDist, RampUp

__all__ = ["ArrivalKind", "LengthDist", "Workload", "workload_for_point", "arrival_times"]


class ArrivalKind(enum.Enum):
    CLOSED = "closed"
    POISSON = "poisson"
    GAMMA = "gamma"


# LengthDist: the one length distribution, model.workload.LengthDist (imported above, re-exported here)


@dataclass(frozen=True)
class Workload:
    input_len: LengthDist
    output_len: LengthDist
    num_requests: int
    arrival: ArrivalKind = ArrivalKind.CLOSED
    concurrency: int | None = None
    rate_req_per_s: float | None = None
    burstiness: float = 1.0
    seed: int = 0
    ignore_eos: bool = True
    prefix_hit_rate: float = 0.0
    point_id: str = "point"  # the load generator's LoadSpec.point_id (and default): seeds the arrival schedule
    dataset: DatasetLengths | None = None  # per-request lengths from a dataset's entries (workload.request_lengths)
    prefix_share: float = 0.0  # the shared prefix the load generator's prompts carry (workload.prefix_lens)
    shared_prefix_len: int = 0
    ramp_up: RampUp | None = None  # open loop: the rate rises over the requests (workload.arrival_offsets_s)
    arrival_span: ArrivalSpan = "fixed"  # open loop: how the sends span (workload.arrival_offsets_s)
    warmup_requests: int = 0  # the load generator's warm-up: not simulated, but its prefixes are cached
    #: open loop: the sends a run recorded (s after its first send, one per request, in send order): simulated in
    #: place of the drawn schedule, so a peer's file whose schedule is unknown is simulated on what it sent
    sent_offsets_s: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        if self.num_requests < 1:
            raise SimulationError("a workload needs num_requests >= 1")
        if self.arrival is ArrivalKind.CLOSED:
            if not self.concurrency or self.concurrency < 1:
                raise SimulationError("a closed-loop workload needs concurrency >= 1")
        else:
            r = self.rate_req_per_s
            if r is None or not (r > 0) or math.isinf(r):
                raise SimulationError("an open-loop workload needs a finite rate_req_per_s > 0")
            if not self.burstiness > 0:
                raise SimulationError("burstiness must be > 0")
            if self.arrival_span not in ARRIVAL_SPANS:
                raise SimulationError(f"arrival_span must be one of {', '.join(ARRIVAL_SPANS)}, "
                                      f"not {self.arrival_span!r}")
        if self.sent_offsets_s is not None:
            _check_sent_offsets(self.sent_offsets_s, self.num_requests, closed=self.arrival is ArrivalKind.CLOSED)
        if not 0.0 <= self.prefix_hit_rate < 1.0:
            raise SimulationError("prefix_hit_rate must be in [0, 1)")
        if not 0.0 <= self.prefix_share < 1.0:
            raise SimulationError("prefix_share must be in [0, 1)")
        if not self.ignore_eos:
            raise SimulationError("the serving model generates exactly output_len tokens: ignore_eos must be "
                                  "true (EOS timing is not modelled)")



def _check_sent_offsets(offsets: tuple[float, ...], num_requests: int, *, closed: bool) -> None:
    """Recorded sends (``Workload.sent_offsets_s``): an open loop's, one per request, finite, from 0, in order."""
    if closed:
        raise SimulationError("sent_offsets_s are an open loop's recorded sends: a closed loop sends as requests end")
    if len(offsets) != num_requests:
        raise SimulationError(f"sent_offsets_s holds {len(offsets)} sends for {num_requests} requests")
    prev = 0.0
    for i, t in enumerate(offsets):
        if not (isinstance(t, float) and math.isfinite(t) and t >= prev):
            raise SimulationError(f"sent_offsets_s[{i}] = {t!r}: recorded sends are finite seconds after the first "
                                  "send (the first 0), in send order")
        prev = t


def arrival_times(workload: Workload) -> list[float]:
    """The open-loop send times: the sends the run recorded (``sent_offsets_s``) where given, else the load
    generator's schedule for the same (rate, burstiness, seed, point_id, span)."""
    if workload.sent_offsets_s is not None:
        return list(workload.sent_offsets_s)
    shape = float(workload.burstiness) if workload.arrival is ArrivalKind.GAMMA else 1.0
    rate = workload.rate_req_per_s
    if rate is None:  # Workload refuses an open-loop point without one; a closed loop has no send times
        raise SimulationError("open-loop arrival times need rate_req_per_s")
    offsets: list[float] = _schedule.arrival_offsets_s(rate_req_per_s=float(rate), burstiness=shape,
                                                       seed=workload.seed, stream_id=workload.point_id,
                                                       count=workload.num_requests,
                                                       ramp_up=workload.ramp_up,
                                                       span=workload.arrival_span).tolist()
    return offsets



def workload_for_point(setup: Setup, *, concurrency: int | None = None, rate_req_per_s: float | None = None,
                       num_requests: int | None = None, requests_per_concurrency: float = 10.0,
                       burstiness: float = 1.0, seed: int = 0, input_len: int | LengthDist | None = None,
                       output_len: int | LengthDist | None = None, prefix_hit_rate: float = 0.0,
                       point_id: str = "point", dataset: DatasetLengths | None = None, prefix_share: float = 0.0,
                       shared_prefix_len: int = 0, ramp_up: RampUp | None = None,
                       warmup_requests: int = 0, arrival_span: ArrivalSpan = "fixed",
                       sent_offsets_s: tuple[float, ...] | None = None) -> Workload:
    """The workload a sweep point sends (lengths from the Setup unless given), as the load generator does:
    closed loop at ``concurrency`` with ``num_requests`` (default ``requests_per_concurrency x C``), or open loop
    at ``rate_req_per_s`` (Poisson when ``burstiness`` is 1, gamma otherwise; default ``max(10, 30 x rate)``
    requests, as measure/plan.py). ``seed`` and ``point_id`` are the load generator's (the prediction file's
    ``workload.seed`` and the sweep point's id): together they give the same arrival times it sends on, and
    the same per-request lengths (``dataset``, ``prefix_share``, ``shared_prefix_len``, ``ramp_up``,
    ``warmup_requests`` and ``arrival_span`` are the rest of the load generator's description: model/workload.py).
    ``sent_offsets_s``: an open loop's recorded sends (s after the first), simulated in place of any schedule;
    the point's request count is theirs."""
    def dist(x: int | LengthDist | None, default: int) -> LengthDist:
        if isinstance(x, LengthDist):
            return x
        return LengthDist(int(x if x is not None else default))

    shape: dict[str, Any] = {"dataset": dataset, "prefix_share": float(prefix_share),
                             "shared_prefix_len": int(shared_prefix_len), "warmup_requests": int(warmup_requests)}
    if ramp_up is not None:
        shape["ramp_up"] = ramp_up
    inp = dist(input_len, int(setup.input_len))
    out = dist(output_len, int(setup.output_len))
    if rate_req_per_s is not None:
        n = num_requests if num_requests is not None else max(10, int(rate_req_per_s * 30))
        if sent_offsets_s is not None:
            shape["sent_offsets_s"] = tuple(float(t) for t in sent_offsets_s)
            n = len(sent_offsets_s)
        kind = ArrivalKind.POISSON if burstiness == 1.0 else ArrivalKind.GAMMA
        return Workload(input_len=inp, output_len=out, num_requests=int(n), arrival=kind,
                        concurrency=concurrency, rate_req_per_s=float(rate_req_per_s), burstiness=float(burstiness),
                        seed=seed, prefix_hit_rate=prefix_hit_rate, point_id=point_id, arrival_span=arrival_span,
                        **shape)
    if concurrency is None:
        raise SimulationError("give concurrency (closed loop) or rate_req_per_s (open loop)")
    n = num_requests if num_requests is not None else max(1, int(round(requests_per_concurrency * concurrency)))
    return Workload(input_len=inp, output_len=out, num_requests=int(n), arrival=ArrivalKind.CLOSED,
                    concurrency=int(concurrency), seed=seed, prefix_hit_rate=prefix_hit_rate, point_id=point_id,
                    **shape)
