"""The load generator's public data model: what to offer (:class:`LoadSpec`), what was measured per request
(:class:`RequestRecord`), the outcome of a run (:class:`LoadResult`) and progress reports (:class:`Progress`).

All ``*_s`` times are ``time.perf_counter()`` seconds; :class:`LoadResult` carries the one wall-clock anchor
that converts them.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from pytest_roofline.model import workload as _workload
from pytest_roofline.quantities.measurement import PointMode, TimestampSource

__all__ = ["LoadSpec", "RequestRecord", "LoadResult", "Progress", "RESERVED_BODY_KEYS"]

# body fields the load generator owns; ``LoadSpec.extra_body`` may not override them
RESERVED_BODY_KEYS = ("model", "prompt", "messages", "max_tokens", "max_completion_tokens", "stream")
#: the APIs the load generator speaks (their routes: ``_http1.API_PATHS``)
#: the OpenAI API a load is sent to (``LoadSpec.api``; ``engine.api`` in a prediction file)
Api = Literal["completions", "chat"]
APIS: tuple[Api, ...] = get_args(Api)
#: how a request ended (``RequestRecord.status``); discarded: left out of the sample by an adaptive stop
RequestStatus = Literal["ok", "error", "discarded"]


@dataclass(kw_only=True)
class LoadSpec:
    """What load to offer for one sweep point.

    Attributes:
        model: the ``model`` field sent in every request (the served model name).
        token_id_range: half-open range ``[low, high)`` of token ids used to build prompts; pass a range
            that avoids the model's special tokens.
        mode: ``"closed"`` (``concurrency`` workers, each sending its next request as soon as its previous
            one finished) or ``"open"`` (arrivals at ``rate_req_s`` from a seeded Poisson/gamma schedule,
            optionally capped at ``concurrency`` requests in flight; arrivals that find the cap full wait in
            a FIFO queue and the wait shows up as schedule lag).
        concurrency: closed loop: number of workers (required); open loop: optional in-flight cap.
        rate_req_s: open loop: mean arrival rate in requests per second (required in open mode).
        burstiness: open loop: gamma shape of the inter-arrival gaps (1.0 = Poisson), the same convention as
            ``vllm bench serve --burstiness``: ``shape=burstiness, scale=1/(rate*burstiness)``.
        num_requests: stop after this many measured requests (warm-up not included).
        duration_s: stop sending new measured requests after this many seconds; requests in flight at the
            deadline run to completion.  At least one of ``num_requests`` and ``duration_s`` is required;
            with both, whichever comes first stops the run.
        warmup_requests: requests sent before the measurement phase, in the same load shape, flagged
            ``warmup=True`` and excluded from statistics; the measurement phase starts once they finished.
        input_len: exact prompt length in tokens (the prompt is sent as a token-id list); with ``api="chat"``
            the number of words of the user message (the server's ``usage.prompt_tokens`` says how many tokens
            that and the chat template made).
        output_len: ``max_tokens``; ``ignore_eos`` is set so the server generates exactly this many.
        seed: seeds prompts and the arrival schedule (together with ``point_id``).
        point_id: the sweep point's id; prompts differ between points with different ids.
        shared_prefix_len: number of leading tokens shared by all requests of the point (0 = none).
        extra_body: extra JSON fields merged into every request body (``temperature``, ``top_p``, ...).
            They may not override ``model``, ``prompt``, ``max_tokens`` or ``stream``.
        request_timeout_s: a request still running after this long is aborted and counted as failed.
        max_failures: stop the run (``LoadResult.aborted`` says why) once more than this many requests
            failed, warm-up included; ``None`` (the default) never stops for failures. The sweep passes its
            allowed failures (0: a point with any failed request is an error), so a server that answers
            every request with an error, or never answers, ends the point after one timeout, not N.
        api: ``"completions"`` (``/v1/completions``, token-id prompts) or ``"chat"`` (``/v1/chat/completions``:
            one user message; tokens are the stream's non-empty ``choices[0].delta.content``).
        processes: client processes the load is spread over (``_multiproc``): 1 (the default) runs the one
            epoll loop in the calling thread; N > 1 splits the streams (closed loop) or deals out the one
            seeded arrival schedule (open loop: every N-th arrival) over N worker processes and merges their
            records; ``"auto"`` takes as many as one core cannot feed, at most the usable cores.
        input_dist, output_dist: per-request length distributions (``model.workload.LengthDist``) instead of
            the fixed ``input_len``/``output_len`` (which then stay the nominal means); drawn per request by
            ``model.workload.request_lengths``, the serving model's own draw.
        dataset: the token lengths of a dataset's entries (``model.workload.DatasetLengths``) and
            ``dataset_prompts`` their token ids (completions API) or ``dataset_texts`` their prompt texts (chat
            API: the text is the one user message, and ``dataset.input_lens`` the prompt tokens the server is
            expected to count, chat template included; ``measure.loadgen.datasets``): request i sends entry
            ``dataset.entries(...)[i]``, with its own output length when the entry has one.
        prefix_share: the first ``floor(prefix_share x input_len)`` tokens of every prompt are common to all
            requests (``model.workload.prefix_lens``); exclusive with ``shared_prefix_len``.
        ramp_up: open loop: the rate rises from ``ramp_up.start_rps`` to ``end_rps`` over ``num_requests``
            (``vllm bench serve --ramp-up-strategy``; ``model.workload.arrival_offsets_s``).
        arrival_span: open loop: ``"fixed"`` (the default) sends the ``num_requests`` over exactly
            ``num_requests / rate_req_s`` from the first send to the last, as ``vllm bench serve`` does;
            ``"drawn"`` keeps the gamma draw's own span (``model.workload.arrival_offsets_s``).
    """

    model: str
    token_id_range: tuple[int, int]
    mode: PointMode = PointMode.CLOSED
    concurrency: int | None = None
    rate_req_s: float | None = None
    burstiness: float = 1.0
    num_requests: int | None = None
    duration_s: float | None = None
    warmup_requests: int = 0
    input_len: int = 128
    output_len: int = 128
    seed: int = 0
    point_id: str = "point"
    shared_prefix_len: int = 0
    extra_body: dict[str, Any] = field(default_factory=dict)
    request_timeout_s: float = 600.0
    max_failures: int | None = None
    api: Api = "completions"
    processes: int | str = 1
    input_dist: _workload.LengthDist | None = None
    output_dist: _workload.LengthDist | None = None
    dataset: _workload.DatasetLengths | None = None
    dataset_prompts: tuple[Sequence[int], ...] = ()  # array('I') each (datasets.py)
    dataset_texts: tuple[str, ...] = ()
    prefix_share: float = 0.0
    ramp_up: _workload.RampUp | None = None
    arrival_span: _workload.ArrivalSpan = "fixed"

    @property
    def variable(self) -> bool:
        """True when requests differ in length or share a fractional prefix (the per-request path)."""
        return bool(self.input_dist is not None or self.output_dist is not None or self.dataset is not None
                    or self.prefix_share)

    def lengths(self, count: int, *, warmup: bool = False, start: int = 0) -> _workload.RequestLengths:
        """The lengths of requests ``start .. start+count-1`` of a phase: ``model.workload.request_lengths``."""
        return _workload.request_lengths(
            count, input_len=self.input_dist or _workload.LengthDist(self.input_len),
            output_len=self.output_dist or _workload.LengthDist(self.output_len), dataset=self.dataset,
            seed=self.seed, stream_id=self.point_id, warmup=warmup, start=start)

    def validate(self) -> None:
        """Raise ``ValueError`` when the spec is inconsistent."""
        if self.api not in APIS:
            raise ValueError(f"api must be one of {', '.join(APIS)}, not {self.api!r}")
        if self.mode not in tuple(PointMode):
            raise ValueError(f"mode must be 'closed' or 'open', not {self.mode!r}")
        if self.mode == PointMode.CLOSED:
            if not self.concurrency or self.concurrency < 1:
                raise ValueError("closed loop needs concurrency >= 1")
        else:
            if self.rate_req_s is None or not self.rate_req_s > 0 or math.isinf(self.rate_req_s):
                raise ValueError("open loop needs a finite rate_req_s > 0")
            if not self.burstiness > 0:
                raise ValueError("burstiness must be > 0")
            if self.arrival_span not in _workload.ARRIVAL_SPANS:
                raise ValueError(f"arrival_span must be one of {', '.join(_workload.ARRIVAL_SPANS)}, "
                                 f"not {self.arrival_span!r}")
            if self.concurrency is not None and self.concurrency < 1:
                raise ValueError("concurrency cap must be >= 1")
        if self.num_requests is None and self.duration_s is None:
            raise ValueError("give num_requests or duration_s (or both)")
        if self.num_requests is not None and self.num_requests < 0:
            raise ValueError("num_requests must be >= 0")
        if self.duration_s is not None and not self.duration_s > 0:
            raise ValueError("duration_s must be > 0")
        if self.warmup_requests < 0:
            raise ValueError("warmup_requests must be >= 0")
        if self.input_len < 1 or self.output_len < 1:
            raise ValueError("input_len and output_len must be >= 1")
        low, high = self.token_id_range
        if not (0 <= low < high):
            raise ValueError(f"token_id_range must be [low, high) with 0 <= low < high, not {self.token_id_range}")
        if not (0 <= self.shared_prefix_len <= self.input_len):
            raise ValueError("shared_prefix_len must be in [0, input_len]")
        if self.shared_prefix_len == self.input_len and (self.num_requests or 0) + self.warmup_requests > 1:
            raise ValueError("shared_prefix_len == input_len would make every prompt identical")
        if self.seed < 0:
            raise ValueError("seed must be >= 0")
        for key in RESERVED_BODY_KEYS:
            if key in self.extra_body:
                raise ValueError(f"extra_body may not override {key!r}")
        if not self.request_timeout_s > 0:
            raise ValueError("request_timeout_s must be > 0")
        if self.max_failures is not None and self.max_failures < 0:
            raise ValueError("max_failures must be >= 0 (or None)")
        if not 0.0 <= self.prefix_share < 1.0:
            raise ValueError("prefix_share must be in [0, 1)")
        if self.prefix_share and self.shared_prefix_len:
            raise ValueError("give shared_prefix_len or prefix_share, not both")
        if self.input_dist is not None and self.shared_prefix_len >= self.input_dist.bounds()[0]:
            raise ValueError("shared_prefix_len must be shorter than the shortest input length")
        if self.dataset is not None:
            if self.api == "chat":
                if len(self.dataset_texts) != len(self.dataset.input_lens) or self.dataset_prompts:
                    raise ValueError("a dataset is sent through the chat API as text: dataset_texts must hold each "
                                     "entry's prompt text (and dataset_prompts be empty)")
            elif self.dataset_texts:
                raise ValueError("dataset_texts are sent through the chat API only: give api='chat'")
            elif len(self.dataset_prompts) != len(self.dataset.input_lens) or any(
                    len(p) != n for p, n in zip(self.dataset_prompts, self.dataset.input_lens)):
                raise ValueError("dataset_prompts must hold each entry's token ids (dataset.input_lens long)")
            if self.prefix_share or self.shared_prefix_len:
                raise ValueError("a shared prefix is for synthetic prompts, not a dataset's")
        if self.ramp_up is not None and (self.mode != PointMode.OPEN or self.num_requests is None):
            raise ValueError("a ramp-up needs an open loop with num_requests (the rate rises over them)")
        if self.processes != "auto" and (isinstance(self.processes, bool) or not isinstance(self.processes, int)
                                         or self.processes < 1):
            raise ValueError(f"processes must be an integer >= 1 or 'auto', not {self.processes!r}")

    def to_dict(self) -> dict[str, Any]:
        """The spec as a JSON-serialisable dict."""
        d = dataclasses.asdict(self)
        d["token_id_range"] = list(self.token_id_range)
        for key in ("input_dist", "output_dist", "dataset", "ramp_up"):
            v = getattr(self, key)
            d[key] = v.to_dict() if v is not None else None
        d["dataset_prompts"] = len(self.dataset_prompts)  # the prompts themselves are the dataset file's
        d["dataset_texts"] = len(self.dataset_texts)
        return d


@dataclass
class RequestRecord:
    """Everything measured about one request.  All ``*_s`` times are ``time.perf_counter()`` seconds.

    Attributes:
        index: position in the run's request sequence (warm-up requests come first, then measured ones);
            it also seeds the prompt.
        request_id: the ``X-Request-Id`` header sent with the request.
        warmup: True for warm-up requests (excluded from statistics).
        input_len, output_len: the requested prompt length and ``max_tokens``.
        scheduled_s: open loop: when the schedule said to send it; ``None`` in a closed loop.
        sent_s: taken right before the request was written to the socket (``None`` if never sent).
        first_token_s: arrival of the first SSE chunk carrying tokens (non-empty ``choices``).
        chunk_times_s: arrival of every SSE chunk carrying tokens, in order (the first is ``first_token_s``).
        end_s: when the response was complete (or the request failed).
        prompt_tokens, completion_tokens: from the server's final ``usage`` chunk (``None`` if absent).
        status: ``"ok"``, ``"error"`` or ``"discarded"``: left out of the sample by an adaptive stop (in flight
            when the point was decided, its connection closed; or sent after the oldest request then in flight).
            A discarded request is neither a measurement nor a failure (:attr:`in_sample`).
        error: the error text for failed requests.
        http_status: the HTTP status code of the response, if one arrived.
        attempts: 2 when the request was re-sent because a reused keep-alive connection was closed by the
            server before any response byte arrived.
    """

    index: int
    request_id: str
    warmup: bool
    input_len: int
    output_len: int
    scheduled_s: float | None = None
    sent_s: float | None = None
    first_token_s: float | None = None
    chunk_times_s: list[float] = field(default_factory=list)
    end_s: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    status: RequestStatus = "error"
    error: str | None = None
    http_status: int | None = None
    attempts: int = 1

    @property
    def ok(self) -> bool:
        """True when the request completed successfully."""
        return self.status == "ok"

    @property
    def discarded(self) -> bool:
        """Left out of the sample by an adaptive stop (see :attr:`status`)."""
        return self.status == "discarded"

    @property
    def in_sample(self) -> bool:
        """A measured request: not a warm-up and not discarded by an adaptive stop (it may have failed)."""
        return not self.warmup and self.status != "discarded"

    @property
    def ttft_s(self) -> float | None:
        """Send → first token chunk, seconds."""
        if self.sent_s is None or self.first_token_s is None:
            return None
        return self.first_token_s - self.sent_s

    @property
    def e2e_s(self) -> float | None:
        """Send → last token chunk, seconds (vLLM's E2E latency)."""
        if self.sent_s is None or not self.chunk_times_s:
            return None
        return self.chunk_times_s[-1] - self.sent_s

    @property
    def itls_s(self) -> list[float]:
        """Gaps between consecutive token chunks, seconds."""
        t = self.chunk_times_s
        return [t[i] - t[i - 1] for i in range(1, len(t))]

    @property
    def schedule_lag_s(self) -> float | None:
        """Open loop: actual send − scheduled send, seconds."""
        if self.scheduled_s is None or self.sent_s is None:
            return None
        return self.sent_s - self.scheduled_s

    def to_dict(self) -> dict[str, Any]:
        """The record as a JSON-serialisable dict."""
        return dataclasses.asdict(self)


@dataclass
class LoadResult:
    """The outcome of :func:`~pytest_roofline.measure.loadgen.run_load`.

    Attributes:
        spec: the spec that was run.
        records: one :class:`RequestRecord` per request, warm-up included, in index order.
        run_start_s: ``perf_counter`` when the run began (warm-up included).
        measure_start_s: ``perf_counter`` when the measurement phase began (the open-loop schedule's
            time zero); statistics use the window from here to the last measured request's end.
        run_end_s: ``perf_counter`` when the run ended.
        wall_anchor: ``time.time()`` taken at ``perf_counter() == perf_anchor_s``; see :meth:`wall_time`.
        perf_anchor_s: the ``perf_counter`` half of the anchor.
        timestamp_source: ``"kernel"`` when chunk arrival times came from kernel receive timestamps,
            ``"user"`` when from ``perf_counter`` at read time, ``"mixed"`` when both were needed.
        clock_offset_drift_ns: change of the CLOCK_REALTIME − CLOCK_MONOTONIC offset over the run
            (non-zero only if the wall clock was stepped; kernel stamps are then interpolated).
        read_lag_ms: how late user space read the socket after the kernel stamped the data
            (``{"p50", "p99", "max"}``), a self-check of client overload; ``None`` without kernel stamps.
        url: the completions URL the load was sent to.
        aborted: why the run stopped early (connections kept failing), else ``None``.
        coalesced_chunks: token chunks that arrived in the same read as the previous chunk of their
            request (the client read the socket later than the gap between them); they carry that read's
            time, an upper bound.  A few are normal.  Many with a small ``read_lag_ms`` mean the server sent
            several chunks at once (seen on a saturated CPU engine, by vLLM's own client too); many with a
            large read lag mean the client read late (an overloaded client machine).
        processes: how many client processes ran the load (``LoadSpec.processes`` resolved).
        process_sync: with more than one process, how well their clocks and starts agreed:
            ``clock_bracket_ms`` (the widest parent-worker round trip that bracketed a worker's clock read:
            every worker's clock lay inside it, so they are one clock to within it) and ``start_late_ms``
            (how late the latest worker began a phase after the shared start); ``None`` for one process.
    """

    spec: LoadSpec
    records: list[RequestRecord]
    run_start_s: float
    measure_start_s: float
    run_end_s: float
    wall_anchor: float
    perf_anchor_s: float
    timestamp_source: TimestampSource = "user"
    clock_offset_drift_ns: int = 0
    read_lag_ms: dict[str, float] | None = None
    url: str = ""
    aborted: str | None = None
    coalesced_chunks: int = 0
    processes: int = 1
    process_sync: dict[str, float] | None = None

    @property
    def measured(self) -> list[RequestRecord]:
        """The measured records: neither warm-up nor discarded by an adaptive stop (:attr:`RequestRecord.in_sample`)."""
        return [r for r in self.records if r.in_sample]

    def wall_time(self, t_perf: float) -> float:
        """Convert a ``perf_counter`` time of this run to a ``time.time()`` wall-clock time."""
        return self.wall_anchor + (t_perf - self.perf_anchor_s)

    def iso(self, t_perf: float) -> str:
        """A ``perf_counter`` time of this run as an ISO-8601 UTC string."""
        t = _dt.datetime.fromtimestamp(self.wall_time(t_perf), tz=_dt.UTC)
        return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    @property
    def started_at(self) -> str:
        """Wall-clock start of the run (ISO-8601 UTC)."""
        return self.iso(self.run_start_s)

    @property
    def finished_at(self) -> str:
        """Wall-clock end of the run (ISO-8601 UTC)."""
        return self.iso(self.run_end_s)

    def to_dict(self, include_records: bool = True) -> dict[str, Any]:
        """The result as a JSON-serialisable dict (records optional)."""
        d = {
            "spec": self.spec.to_dict(),
            "url": self.url,
            "run_start_s": self.run_start_s,
            "measure_start_s": self.measure_start_s,
            "run_end_s": self.run_end_s,
            "wall_anchor": self.wall_anchor,
            "perf_anchor_s": self.perf_anchor_s,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "timestamp_source": self.timestamp_source,
            "clock_offset_drift_ns": self.clock_offset_drift_ns,
            "read_lag_ms": self.read_lag_ms,
            "aborted": self.aborted,
            "coalesced_chunks": self.coalesced_chunks,
            "processes": self.processes,
            "process_sync": self.process_sync,
        }
        if include_records:
            d["records"] = [r.to_dict() for r in self.records]
        return d


@dataclass(frozen=True)
class Progress:
    """Passed to ``on_progress`` (at most every 0.2 s and once at the end of each phase).

    Attributes:
        phase: ``"warmup"`` or ``"measure"``.
        sent, completed, failed: counts for the phase so far.
        in_flight: requests currently in flight.
        total: the phase's request count when known in advance (``None`` for duration-limited closed loops).
        elapsed_s: seconds since the phase started.
    """

    phase: str
    sent: int
    completed: int
    failed: int
    in_flight: int
    total: int | None
    elapsed_s: float
