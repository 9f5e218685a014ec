"""Load generator: closed- and open-loop streaming load against an OpenAI-compatible ``/v1/completions``.

The hot path is a single-threaded ``epoll`` loop over raw non-blocking TCP sockets that speak HTTP/1.1
keep-alive with chunked server-sent events.  It is built so that the client is neither the throughput
bottleneck nor a source of timing error:

* every request body (with its HTTP head) is serialised before the run starts;
* the send timestamp is taken immediately before the ``send()`` system call;
* each read is timestamped by the kernel (``SO_TIMESTAMPNS`` ancillary data from ``recvmsg``), so the
  arrival time of a token does not depend on how late user space gets to the socket; the kernel's
  ``CLOCK_REALTIME`` stamp is mapped onto ``time.perf_counter`` with an offset measured before and after
  the run (when the kernel stamp is unavailable the user-space read time is used instead);
* at read time only the HTTP framing is decoded (to know where a response ends); the SSE events and their
  JSON are parsed later, while the loop would otherwise be idle, each event getting the timestamp of the
  read that completed it.

All times in the records are ``time.perf_counter()`` seconds (``CLOCK_MONOTONIC`` on Linux); the result
carries one wall-clock anchor to convert them.  ``benchmarks/loadgen_bench.py`` measures the generator
against a server that logs the true send time of every token.

This module never imports pytest.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import datetime as _dt
import errno
import gc
import hashlib
import json
import math
import os
import select
import socket
import struct
import time
import urllib.parse
from array import array
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import numpy as np
from pytest_roofline.errors import LoadgenError

__all__ = [
    "LoadSpec",
    "RequestRecord",
    "LoadResult",
    "Progress",
    "LoadgenError",
    "run_load",
    "run_load_async",
    "build_prompt",
    "arrival_offsets",
    "request_body",
    "completions_url",
]

perf_counter = time.perf_counter
perf_counter_ns = time.perf_counter_ns

# Linux: SO_TIMESTAMPNS (== SCM_TIMESTAMPNS) is 35 on every architecture that uses asm-generic values
# (x86-64, arm64); its payload is a native ``struct timespec`` (two 64-bit integers on 64-bit kernels).
_SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
_TIMESPEC = struct.Struct("@qq")
_ANC_SIZE = socket.CMSG_SPACE(_TIMESPEC.size) if hasattr(socket, "CMSG_SPACE") else 0
_NS = 1_000_000_000

_RESERVED_BODY_KEYS = ("model", "prompt", "max_tokens", "stream")


# --------------------------------------------------------------------------------------------------------
# Spec, records, result
# --------------------------------------------------------------------------------------------------------


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
        input_len: exact prompt length in tokens (the prompt is sent as a token-id list).
        output_len: ``max_tokens``; ``ignore_eos`` is set so the server generates exactly this many.
        seed: seeds prompts and the arrival schedule (together with ``point_id``).
        point_id: the sweep point's id; prompts differ between points with different ids.
        shared_prefix_len: number of leading tokens shared by all requests of the point (0 = none).
        extra_body: extra JSON fields merged into every request body (``temperature``, ``top_p``, ...).
            They may not override ``model``, ``prompt``, ``max_tokens`` or ``stream``.
        request_timeout_s: a request still running after this long is aborted and counted as failed.
    """

    model: str
    token_id_range: tuple[int, int]
    mode: str = "closed"
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

    def validate(self) -> None:
        """Raise ``ValueError`` when the spec is inconsistent."""
        if self.mode not in ("closed", "open"):
            raise ValueError(f"mode must be 'closed' or 'open', not {self.mode!r}")
        if self.mode == "closed":
            if not self.concurrency or self.concurrency < 1:
                raise ValueError("closed loop needs concurrency >= 1")
        else:
            if self.rate_req_s is None or not self.rate_req_s > 0 or math.isinf(self.rate_req_s):
                raise ValueError("open loop needs a finite rate_req_s > 0")
            if not self.burstiness > 0:
                raise ValueError("burstiness must be > 0")
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
        for key in _RESERVED_BODY_KEYS:
            if key in self.extra_body:
                raise ValueError(f"extra_body may not override {key!r}")
        if not self.request_timeout_s > 0:
            raise ValueError("request_timeout_s must be > 0")

    def to_dict(self) -> dict[str, Any]:
        """The spec as a JSON-serialisable dict."""
        d = dataclasses.asdict(self)
        d["token_id_range"] = list(self.token_id_range)
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
        status: ``"ok"`` or ``"error"``.
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
    status: str = "error"
    error: str | None = None
    http_status: int | None = None
    attempts: int = 1

    @property
    def ok(self) -> bool:
        """True when the request completed successfully."""
        return self.status == "ok"

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

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "RequestRecord":
        """Inverse of :meth:`to_dict`."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


@dataclass
class LoadResult:
    """The outcome of :func:`run_load`.

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
            time, an upper bound.  A few are normal; many mean the client machine was overloaded.
    """

    spec: LoadSpec
    records: list[RequestRecord]
    run_start_s: float
    measure_start_s: float
    run_end_s: float
    wall_anchor: float
    perf_anchor_s: float
    timestamp_source: str = "user"
    clock_offset_drift_ns: int = 0
    read_lag_ms: dict[str, float] | None = None
    url: str = ""
    aborted: str | None = None
    coalesced_chunks: int = 0

    @property
    def measured(self) -> list[RequestRecord]:
        """The non-warm-up records."""
        return [r for r in self.records if not r.warmup]

    def wall_time(self, t_perf: float) -> float:
        """Convert a ``perf_counter`` time of this run to a ``time.time()`` wall-clock time."""
        return self.wall_anchor + (t_perf - self.perf_anchor_s)

    def iso(self, t_perf: float) -> str:
        """A ``perf_counter`` time of this run as an ISO-8601 UTC string."""
        t = _dt.datetime.fromtimestamp(self.wall_time(t_perf), tz=_dt.timezone.utc)
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


# --------------------------------------------------------------------------------------------------------
# Prompts, bodies and the arrival schedule (pure functions of the spec)
# --------------------------------------------------------------------------------------------------------

_KIND_PROMPT, _KIND_PREFIX, _KIND_SCHEDULE, _KIND_WARMUP_SCHEDULE, _KIND_PERMUTATION = range(5)

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)


def _entropy(spec: LoadSpec) -> list[int]:
    digest = hashlib.sha256(spec.point_id.encode("utf-8")).digest()
    return [int(spec.seed), int.from_bytes(digest[:8], "little"), int.from_bytes(digest[8:16], "little")]


def _rng(spec: LoadSpec, *spawn_key: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(_entropy(spec), spawn_key=spawn_key))


def _mix64(z: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser on a uint64 array (wrapping arithmetic)."""
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


class _PromptMaker:
    """Builds prompt token ids as a pure function of (seed, point_id, index), vectorised over indices.

    Token ``j`` of request ``i`` is ``low + h(key, i, j) mod V`` with ``h`` a SplitMix64 hash and ``key``
    derived from (seed, point_id); so prompts are independent uniform draws, cheap to build in batches.
    """

    def __init__(self, spec: LoadSpec) -> None:
        self.spec = spec
        low, high = spec.token_id_range
        self.low, self.vocab = int(low), int(high) - int(low)
        self.key = np.array([_rng(spec, _KIND_PROMPT).integers(0, 2**63, dtype=np.int64)], dtype=np.uint64)
        self.prefix = (
            [int(x) for x in _rng(spec, _KIND_PREFIX).integers(low, high, size=spec.shared_prefix_len)]
            if spec.shared_prefix_len
            else []
        )
        self.free = spec.input_len - spec.shared_prefix_len
        self._cols = (np.arange(1, self.free + 1, dtype=np.uint64) * _GOLDEN)[None, :]
        # Small id spaces: take the digits (base V) of a seeded affine permutation of [0, V**free), so that
        # prompts are guaranteed distinct.  Large spaces: independent uniform draws (collisions need luck
        # better than 1 in 2**62).
        self.space: int | None = None
        if self.free * math.log2(max(self.vocab, 2)) < 62:
            self.space = self.vocab**self.free
            rng = _rng(spec, _KIND_PERMUTATION)
            self.perm_a = int(rng.integers(0, self.space))
            b = 1
            for _ in range(1000):
                b = int(rng.integers(1, self.space)) if self.space > 1 else 1
                if math.gcd(b, self.space) == 1:
                    break
            else:
                b = 1
            self.perm_b = b

    def tails(self, indices: Sequence[int]) -> list[list[int]]:
        """The non-shared part of the prompts of ``indices``."""
        spec = self.spec
        if self.space is None:
            idx = np.asarray(indices, dtype=np.uint64)
            rows = _mix64(self.key ^ _mix64(idx * _GOLDEN + _GOLDEN))[:, None]
            z = _mix64(rows + self._cols)
            return (z % np.uint64(self.vocab)).astype(np.int64).__add__(self.low).tolist()
        out = []
        for index in indices:
            if index >= self.space and self.free:
                raise ValueError(
                    f"only {self.space} distinct prompts exist for input_len={spec.input_len}, "
                    f"shared_prefix_len={spec.shared_prefix_len} and {self.vocab} token ids"
                )
            x = (self.perm_a + index * self.perm_b) % self.space
            tail = []
            for _ in range(self.free):
                x, d = divmod(x, self.vocab)
                tail.append(self.low + d)
            out.append(tail)
        return out

    def many(self, indices: Sequence[int]) -> list[list[int]]:
        """The prompts of ``indices``."""
        return [self.prefix + t for t in self.tails(indices)]

    def __call__(self, index: int) -> list[int]:
        return self.many([index])[0]


def build_prompt(spec: LoadSpec, index: int) -> list[int]:
    """The prompt (token ids, exactly ``spec.input_len`` of them) of request ``index`` of the point.

    Deterministic in (seed, point_id, index); distinct for every index of a point, and (with overwhelming
    probability) across points.  The first ``shared_prefix_len`` tokens are the same for all requests.
    """
    return _PromptMaker(spec)(index)


def request_body(spec: LoadSpec, prompt: Sequence[int]) -> dict[str, Any]:
    """The JSON body sent for one request (before serialisation)."""
    body: dict[str, Any] = {
        "model": spec.model,
        "prompt": list(prompt),
        "max_tokens": spec.output_len,
        "ignore_eos": True,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    body.update(spec.extra_body)
    return body


def arrival_offsets(spec: LoadSpec, count: int | None = None, *, warmup: bool = False) -> np.ndarray:
    """Open loop: send times of the requests, seconds after the phase start (the first is 0).

    Gaps are ``gamma(shape=burstiness, scale=1/(rate*burstiness))`` drawn from a generator seeded by
    (seed, point_id) (a separate stream for the warm-up phase).  With ``count`` the first ``count`` arrivals
    are returned; otherwise the spec's limits apply (``num_requests`` and/or arrivals before ``duration_s``).
    """
    if spec.rate_req_s is None:
        raise ValueError("arrival_offsets needs rate_req_s")
    rng = _rng(spec, _KIND_WARMUP_SCHEDULE if warmup else _KIND_SCHEDULE)
    shape = float(spec.burstiness)
    scale = 1.0 / (spec.rate_req_s * shape)
    limit = count if count is not None else spec.num_requests
    horizon = None if count is not None else spec.duration_s
    out: list[np.ndarray] = []
    t = 0.0
    n = 0
    while limit is None or n < limit:
        gaps = rng.gamma(shape, scale, size=1024)
        times = t + np.concatenate(([0.0], np.cumsum(gaps)))
        offs, t = times[:-1], float(times[-1])
        if horizon is not None:
            offs = offs[offs < horizon]
        out.append(offs)
        n += len(offs)
        if horizon is not None and t >= horizon:
            break
    res = np.concatenate(out) if out else np.zeros(0)
    return res[:limit] if limit is not None else res


def completions_url(base_url: str) -> tuple[str, int, str, str]:
    """Split ``base_url`` into (host, port, path, Host header) for ``/v1/completions``.

    ``http://h:p`` and ``http://h:p/v1`` both map to ``/v1/completions``; a URL already ending in
    ``/completions`` is used as is.  Only plain ``http`` is supported by the streaming client.
    """
    u = urllib.parse.urlsplit(base_url)
    if u.scheme != "http":
        raise ValueError(f"only http:// URLs are supported by the load generator, not {base_url!r}")
    host = u.hostname or "127.0.0.1"
    port = u.port or 80
    path = u.path.rstrip("/")
    if not path.endswith("/completions"):
        path = path + "/completions" if path.endswith("/v1") else path + "/v1/completions"
    host_hdr = f"[{host}]" if ":" in host else host
    if u.port:
        host_hdr += f":{u.port}"
    return host, port, path, host_hdr


# --------------------------------------------------------------------------------------------------------
# Internal request / connection state
# --------------------------------------------------------------------------------------------------------


class _Req:
    """Hot-path state of one request (turned into a RequestRecord when it is finalised)."""

    __slots__ = (
        "index", "rid", "warmup", "payload", "scheduled", "sent", "end", "pieces", "ok",
        "error", "http_status", "attempts", "phase",
    )

    def __init__(self, index: int, rid: str, warmup: bool, payload: bytes) -> None:
        self.index = index
        self.rid = rid
        self.warmup = warmup
        self.payload = payload
        self.scheduled: float | None = None
        self.sent: float | None = None
        self.end: int | None = None  # perf_counter ns
        self.pieces: list = []  # flat: [t_ns, bytes, t_ns, bytes, ...] of de-chunked body bytes
        self.ok = False
        self.error: str | None = None
        self.http_status: int | None = None
        self.attempts = 1
        self.phase: _Phase | None = None

    def __repr__(self) -> str:  # never show the payload: it carries the Authorization header
        return f"_Req(index={self.index}, rid={self.rid!r})"


_ST_CONNECTING, _ST_IDLE, _ST_SENDING, _ST_HEAD, _ST_BODY = range(5)
_BODY_CHUNKED, _BODY_LENGTH, _BODY_CLOSE, _BODY_TRAILER = range(4)


class _Conn:
    __slots__ = ("sock", "fd", "state", "req", "out", "head", "mode", "left", "pend", "ka", "used", "t_open")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.fd = sock.fileno()
        self.state = _ST_CONNECTING
        self.req: _Req | None = None
        self.out = b""       # unsent request bytes
        self.head = b""      # partial response head
        self.mode = _BODY_CHUNKED
        self.left = 0        # chunk data left (>0), CRLF bytes left to skip (<0), or Content-Length left
        self.pend = b""      # a partial chunk-size line (or trailer section) carried to the next read
        self.ka = True       # keep-alive after this response
        self.used = 0        # responses completed on this connection
        self.t_open = perf_counter()

    def __repr__(self) -> str:
        return f"_Conn(fd={self.fd}, state={self.state})"


class _Phase:
    """One phase (warm-up or measurement) of a run."""

    def __init__(self, name: str, warmup: bool) -> None:
        self.name = name
        self.warmup = warmup
        self.reqs: list[_Req] = []      # pre-built requests, in send order
        self.next_index = 0             # index of the next request to build lazily
        self.schedule: np.ndarray | None = None  # open loop offsets (s), None = closed loop
        self.cap = 1                    # max requests in flight
        self.total: int | None = None   # request count, None = duration-limited
        self.duration: float | None = None
        self.deadline: float | None = None
        self.start = 0.0
        self.sent = 0
        self.done = 0
        self.failed = 0


# --------------------------------------------------------------------------------------------------------
# The engine
# --------------------------------------------------------------------------------------------------------


def _clock_offset_ns() -> int:
    """CLOCK_REALTIME − perf_counter in ns, from the tightest of several bracketing reads."""
    best: tuple[int, int] | None = None
    rt = time.clock_gettime_ns
    clk = time.CLOCK_REALTIME
    for _ in range(64):
        a = perf_counter_ns()
        r = rt(clk)
        b = perf_counter_ns()
        if best is None or b - a < best[0]:
            best = (b - a, r - (a + b) // 2)
    assert best is not None
    return best[1]


class _Engine:
    """The epoll loop.  Not thread-safe; one engine per run."""

    def __init__(self, base_url: str, spec: LoadSpec, api_key: str | None,
                 on_progress: Callable[[Progress], None] | None) -> None:
        self.spec = spec
        self.on_progress = on_progress
        self.host, self.port, self.path, host_hdr = completions_url(base_url)
        self.url = f"http://{host_hdr}{self.path}"
        if api_key is not None and any(c in api_key for c in "\r\n\0"):
            raise ValueError("api_key contains a control character")
        self._secret = api_key or None
        try:
            infos = socket.getaddrinfo(self.host, self.port, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise LoadgenError(f"cannot resolve {self.host}:{self.port}: {exc}") from None
        self.family, _, _, _, self.addr = infos[0]
        head = [
            f"POST {self.path} HTTP/1.1",
            f"Host: {host_hdr}",
            "User-Agent: pytest-roofline-loadgen",
            "Accept: text/event-stream",
            "Content-Type: application/json",
        ]
        if api_key:
            head.append(f"Authorization: Bearer {api_key}")
        self._head_prefix = ("\r\n".join(head) + "\r\n").encode("latin-1")
        self._make_prompt = _PromptMaker(spec)
        # the JSON body is json.dumps(request_body(...), separators=(",", ":")), assembled from a template
        marker = "\x00prompt\x00"
        tmpl = json.dumps({**request_body(spec, []), "prompt": marker}, separators=(",", ":"))
        pre, sep, post = tmpl.partition(json.dumps(marker))
        assert sep and json.dumps(marker) not in post
        self._body_pre = (pre + "[").encode()
        self._body_post = ("]" + post).encode()
        high = int(spec.token_id_range[1])
        self._tok_bytes = [str(i).encode("ascii") for i in range(high)] if high <= 1 << 21 else None
        rid = "".join(c if (c.isalnum() or c in "-_.") else "_" for c in spec.point_id)[:64]
        self._rid_prefix = f"{rid}-{os.urandom(4).hex()}"
        self.ep = select.epoll()
        self.conns: dict[int, _Conn] = {}
        self.idle: list[_Conn] = []
        self.connecting = 0
        self.in_flight = 0  # requests holding a slot (connecting, sending or awaiting the response)
        self.pending: collections.deque[_Req] = collections.deque()  # due, waiting for a slot
        self.finalize_q: collections.deque[_Req] = collections.deque()
        self.running: dict[int, _Req] = {}  # index -> sent request, for timeouts
        self.records: dict[int, RequestRecord] = {}
        self.ts_user_reads = 0
        self.read_lag = array("q")
        self.offset_ns = _clock_offset_ns()
        self.offset_ns_end = self.offset_ns
        self.t_offset0 = perf_counter_ns()
        self.t_offset1 = self.t_offset0
        self.bufsize = 65536  # larger receive buffers make every recvmsg() allocate (256 KiB: ~7x slower)
        self.phase: _Phase = _Phase("none", False)
        self._dispatching = False
        self._redispatch = False
        self.connect_failures = 0
        self.aborted: str | None = None
        self._last_progress = 0.0
        self.coalesced = 0

    # ---- request construction -------------------------------------------------------------------------

    def build(self, index: int, warmup: bool) -> _Req:
        return self.build_many(range(index, index + 1), warmup)[0]

    def build_many(self, indices: Iterable[int], warmup: bool) -> list[_Req]:
        """Pre-serialise requests (HTTP head and JSON body) for ``indices``."""
        indices = list(indices)
        out = []
        pre, post, tab, head = self._body_pre, self._body_post, self._tok_bytes, self._head_prefix
        join = b",".join
        for index, prompt in zip(indices, self._make_prompt.many(indices)):
            rid = f"{self._rid_prefix}-{index}"
            ids = join(map(tab.__getitem__, prompt)) if tab is not None else ",".join(map(str, prompt)).encode()
            body = b"".join((pre, ids, post))
            payload = b"".join((
                head,
                b"X-Request-Id: ", rid.encode("ascii"), b"\r\n",
                b"Content-Length: ", str(len(body)).encode("ascii"), b"\r\n\r\n",
                body,
            ))
            out.append(_Req(index, rid, warmup, payload))
        return out

    # ---- connections ----------------------------------------------------------------------------------

    def _open_conn(self, req: _Req | None) -> None:
        """Open a connection; send ``req`` on it once connected (or park it idle when ``req`` is None)."""
        sock = socket.socket(self.family, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        if _ANC_SIZE:
            try:
                sock.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
            except OSError:
                pass
        conn = _Conn(sock)
        err = sock.connect_ex(self.addr)
        if err == 0:
            self.conns[conn.fd] = conn
            self.ep.register(conn.fd, select.EPOLLIN)
            self._connected(conn)
        elif err in (errno.EINPROGRESS, errno.EAGAIN, errno.EWOULDBLOCK):
            self.conns[conn.fd] = conn
            self.connecting += 1
            conn.req = req
            self.ep.register(conn.fd, select.EPOLLOUT)
            return
        else:
            sock.close()
            self._connect_failed(req, err)
            return
        if req is not None:
            self._send(conn, req)

    def _connected(self, conn: _Conn) -> None:
        conn.state = _ST_IDLE
        self.connect_failures = 0

    def _on_connect_event(self, conn: _Conn, ev: int) -> None:
        self.connecting -= 1
        err = conn.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        req = conn.req
        conn.req = None
        if err or ev & (select.EPOLLERR | select.EPOLLHUP):
            self.conns.pop(conn.fd, None)
            try:
                self.ep.unregister(conn.fd)
            except (OSError, ValueError):
                pass
            conn.sock.close()
            self._connect_failed(req, err or errno.ECONNRESET)
            return
        self.ep.modify(conn.fd, select.EPOLLIN)
        self._connected(conn)
        if req is not None:
            self._send(conn, req)
        else:
            self.idle.append(conn)

    def _connect_failed(self, req: _Req | None, err: int) -> None:
        self.connect_failures += 1
        msg = f"connect to {self.host}:{self.port} failed: {os.strerror(err)}"
        if self.connect_failures > 2 * self.phase.cap + 16 and self.aborted is None:
            self.aborted = f"aborted: {msg} ({self.connect_failures} times in a row)"
        if req is not None:
            self._fail(req, msg)

    def _close_conn(self, conn: _Conn) -> None:
        if self.conns.pop(conn.fd, None) is None:
            return
        if conn.state == _ST_CONNECTING:
            self.connecting -= 1
        try:
            self.ep.unregister(conn.fd)
        except (OSError, ValueError):
            pass
        try:
            conn.sock.close()
        except OSError:
            pass
        if conn.state == _ST_IDLE and conn in self.idle:
            self.idle.remove(conn)

    def preconnect(self, n: int, timeout_s: float = 30.0) -> None:
        """Open up to ``n`` idle keep-alive connections before the run (not timed)."""
        for _ in range(max(0, n - len(self.conns))):
            self._open_conn(None)
        for conn in self.conns.values():
            if conn.state == _ST_IDLE and conn.req is None and conn not in self.idle:
                self.idle.append(conn)
        deadline = perf_counter() + timeout_s
        while self.connecting and perf_counter() < deadline:
            for fd, ev in self.ep.poll(0.05):
                conn = self.conns.get(fd)
                if conn is not None and conn.state == _ST_CONNECTING:
                    self._on_connect_event(conn, ev)
        for conn in list(self.conns.values()):
            if conn.state == _ST_CONNECTING:
                self._close_conn(conn)
        if n and not self.idle:
            raise LoadgenError(f"cannot connect to {self.host}:{self.port}")
        self.connect_failures = 0

    # ---- sending --------------------------------------------------------------------------------------

    def _send(self, conn: _Conn, req: _Req) -> None:
        conn.req = req
        conn.state = _ST_SENDING
        conn.head = b""
        conn.pend = b""
        conn.left = 0
        conn.mode = _BODY_CHUNKED
        req.pieces = []
        req.http_status = None
        data = req.payload
        t = perf_counter()
        try:
            n = conn.sock.send(data)
        except (BlockingIOError, InterruptedError):
            n = 0
        except OSError as exc:
            req.sent = t
            self._conn_error(conn, f"send failed: {exc}", before_response=True)
            return
        req.sent = t
        self.running[req.index] = req
        if n < len(data):
            conn.out = data[n:]
            self.ep.modify(conn.fd, select.EPOLLIN | select.EPOLLOUT)
        else:
            conn.out = b""
            conn.state = _ST_HEAD

    def _on_writable(self, conn: _Conn) -> None:
        try:
            n = conn.sock.send(conn.out)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._conn_error(conn, f"send failed: {exc}", before_response=True)
            return
        conn.out = conn.out[n:]
        if not conn.out:
            self.ep.modify(conn.fd, select.EPOLLIN)
            if conn.state == _ST_SENDING:
                conn.state = _ST_HEAD

    # ---- receiving (hot path) -------------------------------------------------------------------------

    def _on_readable(self, conn: _Conn) -> None:
        try:
            data, anc, _flags, _addr = conn.sock.recvmsg(self.bufsize, _ANC_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._conn_error(conn, f"recv failed: {exc}",
                             before_response=conn.state in (_ST_SENDING, _ST_HEAD) and not conn.head)
            return
        t_user = perf_counter_ns()
        if anc and len(anc[0][2]) == 16:
            s, ns = _TIMESPEC.unpack(anc[0][2])
            t = s * _NS + ns - self.offset_ns
            if t > t_user:
                t = t_user
            self.read_lag.append(t_user - t)
        else:
            t = t_user
            self.ts_user_reads += 1
        if not data:
            self._on_eof(conn, t)
            return
        req = conn.req
        if req is None:  # bytes on an idle connection: protocol violation; drop it
            self._close_conn(conn)
            return
        if conn.state != _ST_BODY or conn.mode != _BODY_CHUNKED or conn.pend:
            self._on_data_slow(conn, data, t)
            return
        left = conn.left
        if not left and data[-2:] == b"\r\n":
            # fastest path: the read is exactly one whole chunk (one server write of one event)
            i = data.find(b"\r\n")
            try:
                size = int(data[:i], 16)
            except ValueError:
                size = -1
            if size > 0 and i + size + 4 == len(data):
                req.pieces.append(t)
                req.pieces.append(data[i + 2:-2])
                return
        # fast path: chunked body, no carried partial line
        pos = 0
        n = len(data)
        pieces = req.pieces
        while pos < n:
            if left > 0:
                take = n - pos
                if take > left:
                    take = left
                pieces.append(t)
                pieces.append(data[pos:pos + take])
                pos += take
                left -= take
                if not left:
                    left = -2  # the CRLF after the chunk data
            elif left < 0:
                k = n - pos
                if k > -left:
                    k = -left
                pos += k
                left += k
            else:
                i = data.find(b"\r\n", pos)
                if i < 0:
                    conn.pend = data[pos:]
                    break
                try:
                    size = int(data[pos:i].split(b";", 1)[0], 16)
                except ValueError:
                    self._conn_error(conn, "bad chunk size", before_response=False)
                    return
                pos = i + 2
                if size == 0:
                    conn.left = 0
                    self._trailer(conn, data[pos:], t)
                    return
                left = size
        conn.left = left

    def _trailer(self, conn: _Conn, buf: bytes, t: int) -> None:
        """After the last chunk: optional trailer fields, then an empty line."""
        if buf.startswith(b"\r\n") or b"\r\n\r\n" in buf:
            conn.pend = b""
            self._complete(conn, t)
        else:
            conn.pend = buf
            conn.mode = _BODY_TRAILER

    def _on_data_slow(self, conn: _Conn, data: bytes, t: int) -> None:
        req = conn.req
        assert req is not None
        if conn.state == _ST_SENDING:
            conn.state = _ST_HEAD  # an (error) response before the request was fully written
        if conn.state == _ST_HEAD:
            head = conn.head + data
            i = head.find(b"\r\n\r\n")
            if i < 0:
                if len(head) > 65536:
                    self._conn_error(conn, "response head too large", before_response=False)
                    return
                conn.head = head
                return
            conn.head = b""
            lines = head[:i].decode("latin-1").split("\r\n")
            rest = head[i + 4:]
            try:
                version, code = lines[0].split(" ", 2)[:2]
                status = int(code)
            except ValueError:
                self._conn_error(conn, f"bad status line {lines[0][:100]!r}", before_response=False)
                return
            if 100 <= status < 200:
                if rest:
                    self._on_data_slow(conn, rest, t)
                return
            req.http_status = status
            hdrs: dict[str, str] = {}
            for line in lines[1:]:
                k, _, v = line.partition(":")
                hdrs[k.strip().lower()] = v.strip()
            conn.ka = hdrs.get("connection", "").lower() != "close" and version != "HTTP/1.0"
            conn.state = _ST_BODY
            conn.pend = b""
            if "chunked" in hdrs.get("transfer-encoding", "").lower():
                conn.mode = _BODY_CHUNKED
                conn.left = 0
            elif "content-length" in hdrs:
                conn.mode = _BODY_LENGTH
                try:
                    conn.left = int(hdrs["content-length"])
                except ValueError:
                    self._conn_error(conn, "bad Content-Length", before_response=False)
                    return
                if conn.left == 0:
                    self._complete(conn, t)
                    return
            else:
                conn.mode = _BODY_CLOSE
                conn.ka = False
            if rest:
                if conn.mode == _BODY_CHUNKED:
                    conn.pend = b""
                    self._chunked_slow(conn, rest, t)
                else:
                    self._on_data_slow(conn, rest, t)
            return
        mode = conn.mode
        if mode == _BODY_CHUNKED:
            self._chunked_slow(conn, data, t)
        elif mode == _BODY_TRAILER:
            self._trailer(conn, conn.pend + data, t)
        elif mode == _BODY_LENGTH:
            take = min(len(data), conn.left)
            req.pieces.append(t)
            req.pieces.append(data[:take])
            conn.left -= take
            if conn.left == 0:
                self._complete(conn, t)
        else:  # _BODY_CLOSE
            req.pieces.append(t)
            req.pieces.append(data)

    def _chunked_slow(self, conn: _Conn, data: bytes, t: int) -> None:
        if conn.pend:
            data = conn.pend + data
            conn.pend = b""
        # run the fast path on the merged bytes
        conn.state = _ST_BODY
        conn.mode = _BODY_CHUNKED
        req = conn.req
        assert req is not None
        left = conn.left
        pos = 0
        n = len(data)
        pieces = req.pieces
        while pos < n:
            if left > 0:
                take = min(n - pos, left)
                pieces.append(t)
                pieces.append(data[pos:pos + take])
                pos += take
                left -= take
                if not left:
                    left = -2
            elif left < 0:
                k = min(n - pos, -left)
                pos += k
                left += k
            else:
                i = data.find(b"\r\n", pos)
                if i < 0:
                    conn.pend = data[pos:]
                    break
                try:
                    size = int(data[pos:i].split(b";", 1)[0], 16)
                except ValueError:
                    self._conn_error(conn, "bad chunk size", before_response=False)
                    return
                pos = i + 2
                if size == 0:
                    conn.left = 0
                    self._trailer(conn, data[pos:], t)
                    return
                left = size
        conn.left = left

    def _on_eof(self, conn: _Conn, t: int) -> None:
        if conn.req is None:
            self._close_conn(conn)
            return
        if conn.state == _ST_BODY and conn.mode == _BODY_CLOSE:
            conn.ka = False
            self._complete(conn, t)
            return
        self._conn_error(conn, "server closed the connection before the response was complete",
                         before_response=conn.state in (_ST_SENDING, _ST_HEAD) and not conn.head)

    # ---- completion and errors ------------------------------------------------------------------------

    def _complete(self, conn: _Conn, t_ns: int) -> None:
        req = conn.req
        assert req is not None
        conn.req = None
        conn.used += 1
        req.end = t_ns
        req.ok = req.http_status == 200
        self.running.pop(req.index, None)
        self.in_flight -= 1
        self.finalize_q.append(req)
        ph = req.phase
        ph.done += 1
        if not req.ok:
            ph.failed += 1
        if conn.ka:
            conn.state = _ST_IDLE
            self.idle.append(conn)
        else:
            self._close_conn(conn)
        self._dispatch()

    def _conn_error(self, conn: _Conn, msg: str, *, before_response: bool) -> None:
        req = conn.req
        conn.req = None
        reused = conn.used > 0
        self._close_conn(conn)
        if req is None:
            return
        if before_response and reused and req.attempts == 1 and self.aborted is None:
            # a keep-alive connection the server had already closed: retry once on a fresh connection
            self.running.pop(req.index, None)
            req.attempts += 1
            req.sent = None
            self.in_flight -= 1
            self.pending.appendleft(req)
            self._dispatch()
            return
        self._fail(req, msg)

    def _fail(self, req: _Req, msg: str) -> None:
        """Mark a request (which holds a slot) as failed and free its slot."""
        self.in_flight -= 1
        self.running.pop(req.index, None)
        req.ok = False
        req.error = msg
        req.end = perf_counter_ns()
        self.finalize_q.append(req)
        req.phase.done += 1
        req.phase.failed += 1
        self._dispatch()

    # ---- dispatching ----------------------------------------------------------------------------------

    def _dispatch(self) -> None:
        """Start due requests while slots are free (re-entrant calls are folded into the outer loop)."""
        if self._dispatching:
            self._redispatch = True
            return
        self._dispatching = True
        try:
            while True:
                self._redispatch = False
                self._dispatch_once()
                if not self._redispatch:
                    break
        finally:
            self._dispatching = False

    def _dispatch_once(self) -> None:
        ph = self.phase
        cap = ph.cap
        while self.in_flight < cap and self.aborted is None:
            if self.pending:
                req = self.pending.popleft()
            else:
                req = self._next_closed()
                if req is None:
                    return
            self.in_flight += 1
            if self.idle:
                self._send(self.idle.pop(), req)
            else:
                self._open_conn(req)

    def _next_closed(self) -> _Req | None:
        """Closed loop: the next request, if the phase may still send one."""
        ph = self.phase
        if ph.schedule is not None:
            return None
        if ph.total is not None and ph.sent >= ph.total:
            return None
        if ph.deadline is not None and perf_counter() >= ph.deadline:
            return None
        return self._take(ph)

    def _take(self, ph: _Phase) -> _Req:
        i = ph.sent
        if i < len(ph.reqs):
            req = ph.reqs[i]
        else:  # only in duration-limited closed loops, when the idle-time top-up fell behind
            req = self.build(ph.next_index, ph.warmup)
            ph.next_index += 1
            ph.reqs.append(req)
        ph.reqs[i] = None  # type: ignore[call-overload]  # drop the reference once taken
        ph.sent += 1
        req.phase = ph
        return req

    def _low_on_requests(self, ph: _Phase) -> bool:
        """Duration-limited closed loop: fewer than two rounds of pre-built requests left?"""
        return ph.total is None and ph.schedule is None and len(ph.reqs) - ph.sent < 2 * ph.cap

    def _topup(self, ph: _Phase) -> None:
        """Duration-limited closed loop: pre-build a few more requests (idle-time work, ~1 ms at most)."""
        n = max(4, min(64, 16384 // self.spec.input_len))
        ph.reqs.extend(self.build_many(range(ph.next_index, ph.next_index + n), ph.warmup))
        ph.next_index += n

    # ---- finalisation (runs when the loop is idle) ----------------------------------------------------

    def _to_perf(self, t_ns: int) -> float:
        if self.offset_ns_end != self.offset_ns and self.t_offset1 > self.t_offset0:
            # the wall clock was stepped during the run: interpolate the REALTIME offset
            frac = min(max((t_ns - self.t_offset0) / (self.t_offset1 - self.t_offset0), 0.0), 1.0)
            off = self.offset_ns + (self.offset_ns_end - self.offset_ns) * frac
            return (t_ns + self.offset_ns - off) * 1e-9
        return t_ns * 1e-9

    def _finalize(self, req: _Req) -> None:
        spec = self.spec
        rec = RequestRecord(
            index=req.index, request_id=req.rid, warmup=req.warmup,
            input_len=spec.input_len, output_len=spec.output_len,
            scheduled_s=req.scheduled, sent_s=req.sent, attempts=req.attempts,
            http_status=req.http_status,
        )
        to_perf = self._to_perf
        rec.end_s = to_perf(req.end) if req.end is not None else None
        ok = req.ok
        error = req.error
        pieces = req.pieces
        req.pieces = []
        req.payload = b""
        if req.http_status is not None and req.http_status != 200:
            text = b"".join(pieces[1::2])[:500].decode("utf-8", "replace")
            ok = False
            error = f"HTTP {req.http_status}: {text}"
        elif pieces:
            chunk_times: list[float] = []
            buf = b""
            usage = None
            done = False
            loads = json.loads
            last_read = None
            drift = self.offset_ns_end != self.offset_ns
            coalesced = 0
            for k in range(0, len(pieces), 2):
                piece = pieces[k + 1]
                if not buf and piece[-2:] == b"\n\n":
                    # fast path: the read holds whole events only, and they are all plain token chunks
                    # (compact JSON, non-empty choices, no usage object, no error).  A quote inside a JSON
                    # string is escaped, so these byte patterns can only be JSON structure.
                    n = piece.count(b'"choices":[{')
                    if n and piece.count(b"data:") == n and b'"usage":{' not in piece \
                            and b'"error"' not in piece and b"\r" not in piece:
                        t_ns = pieces[k]
                        t_s = to_perf(t_ns) if drift else t_ns * 1e-9
                        coalesced += n if t_ns == last_read else n - 1
                        last_read = t_ns
                        if n == 1:
                            chunk_times.append(t_s)
                        else:
                            chunk_times.extend([t_s] * n)
                        continue
                buf = buf + piece if buf else piece
                if b"\n\n" not in buf and b"\r\n\r\n" not in buf:
                    continue
                if b"\r" in buf:
                    buf = buf.replace(b"\r\n", b"\n")
                events = buf.split(b"\n\n")
                buf = events.pop()
                t_s = None
                for ev in events:
                    for line in ev.split(b"\n"):
                        if line[:5] != b"data:":
                            continue
                        data = line[5:].strip()
                        if data == b"[DONE]":
                            done = True
                            continue
                        try:
                            obj = loads(data)
                        except ValueError:
                            if error is None:
                                error = f"unparseable SSE data: {data[:200]!r}"
                            continue
                        if not isinstance(obj, dict):
                            continue
                        if obj.get("choices"):
                            if t_s is None:
                                t_s = to_perf(pieces[k])
                            if last_read == pieces[k]:
                                coalesced += 1
                            last_read = pieces[k]
                            chunk_times.append(t_s)
                        u = obj.get("usage")
                        if u:
                            usage = u
                        e = obj.get("error")
                        if e:
                            ok = False
                            error = "stream error: " + (str(e.get("message", e)) if isinstance(e, dict) else str(e))
            self.coalesced += coalesced
            rec.chunk_times_s = chunk_times
            if chunk_times:
                rec.first_token_s = chunk_times[0]
            if isinstance(usage, dict):
                pt, ct = usage.get("prompt_tokens"), usage.get("completion_tokens")
                rec.prompt_tokens = int(pt) if pt is not None else None
                rec.completion_tokens = int(ct) if ct is not None else None
            if ok:
                if error is not None:
                    ok = False
                elif not chunk_times:
                    ok, error = False, "no token chunk received"
                elif not done:
                    ok, error = False, "stream ended without data: [DONE]"
        elif ok:
            ok, error = False, "empty response"
        rec.status = "ok" if ok else "error"
        if not ok and error is None:
            error = "request failed"
        rec.error = self._scrub(error)
        self.records[req.index] = rec

    def _scrub(self, text: str | None) -> str | None:
        if text is None or not self._secret:
            return text
        return text.replace(self._secret, "***")

    def finalize_all(self) -> None:
        q = self.finalize_q
        while q:
            self._finalize(q.popleft())

    # ---- the loop -------------------------------------------------------------------------------------

    def _progress(self, ph: _Phase, now: float, force: bool = False) -> None:
        if self.on_progress is None or (not force and now - self._last_progress < 0.2):
            return
        self._last_progress = now
        self.on_progress(Progress(phase=ph.name, sent=ph.sent, completed=ph.done - ph.failed,
                                  failed=ph.failed, in_flight=self.in_flight, total=ph.total,
                                  elapsed_s=now - ph.start))

    def _phase_over(self, ph: _Phase, next_i: int, n_sched: int) -> bool:
        if self.in_flight or self.pending:
            return False
        if self.aborted is not None:
            return True
        if ph.schedule is not None:
            return next_i >= n_sched
        if ph.total is not None and ph.sent >= ph.total:
            return True
        return ph.deadline is not None and perf_counter() >= ph.deadline

    def run_phase(self, ph: _Phase) -> None:
        self.phase = ph
        ep_poll = self.ep.poll
        conns = self.conns
        on_readable = self._on_readable
        finalize_q = self.finalize_q
        EPOLLIN = select.EPOLLIN
        EPOLLOUT = select.EPOLLOUT
        EPOLLERRHUP = select.EPOLLERR | select.EPOLLHUP
        self._last_progress = 0.0
        ph.start = perf_counter()
        if ph.duration is not None:
            ph.deadline = ph.start + ph.duration
        sched = ph.schedule
        n_sched = len(sched) if sched is not None else 0
        sched_abs = (sched + ph.start).tolist() if sched is not None else []
        next_i = 0
        next_housekeeping = ph.start + 0.1
        timeout_s = self.spec.request_timeout_s
        backlog = 2 * min(ph.cap, 4096) + 64
        self._dispatch()
        while True:
            now = perf_counter()
            if next_i < n_sched and sched_abs[next_i] <= now:
                while next_i < n_sched and sched_abs[next_i] <= now:
                    req = self._take(ph)
                    req.scheduled = sched_abs[next_i]
                    self.pending.append(req)
                    next_i += 1
                self._dispatch()
            if now >= next_housekeeping:
                next_housekeeping = now + 0.1
                self._check_timeouts(now, timeout_s)
                if ph.deadline is not None and self.in_flight < ph.cap:
                    self._dispatch()
                self._progress(ph, now)
            if self._phase_over(ph, next_i, n_sched):
                break
            if finalize_q or self._low_on_requests(ph):
                wait = 0.0
            elif next_i < n_sched:
                wait = sched_abs[next_i] - now
                # epoll_wait sleeps whole milliseconds (rounded up): sleep the whole ones, spin the rest
                wait = 0.0 if wait < 0.001 else min(math.floor(wait * 1000.0) * 0.001, 0.1)
            elif ph.deadline is not None and ph.schedule is None and now < ph.deadline:
                wait = min(max(ph.deadline - now, 0.0), 0.1)
            else:
                wait = 0.1
            events = ep_poll(wait)
            if not events:
                # idle: keep enough requests pre-built (so that building never delays a send), then
                # finalise finished requests one at a time
                if self._low_on_requests(ph):
                    self._topup(ph)
                elif finalize_q:
                    self._finalize(finalize_q.popleft())
                continue
            for fd, ev in events:
                conn = conns.get(fd)
                if conn is None:
                    continue
                if conn.state == _ST_CONNECTING:
                    self._on_connect_event(conn, ev)
                    continue
                if ev & EPOLLOUT and conn.out:
                    self._on_writable(conn)
                if ev & (EPOLLIN | EPOLLERRHUP) and conn.fd in conns:
                    on_readable(conn)
            if len(finalize_q) > backlog:
                # never idle (overload): finalise anyway so that raw response bytes do not pile up
                self._finalize(finalize_q.popleft())
        self._progress(ph, perf_counter(), force=True)

    def _check_timeouts(self, now: float, timeout_s: float) -> None:
        for conn in [c for c in self.conns.values() if c.state == _ST_CONNECTING and now - c.t_open > timeout_s]:
            req = conn.req
            conn.req = None
            self._close_conn(conn)
            if req is not None:
                self._fail(req, f"connect timed out after {timeout_s:g} s")
        late = [r for r in self.running.values() if r.sent is not None and now - r.sent > timeout_s]
        for req in late:
            for conn in list(self.conns.values()):
                if conn.req is req:
                    conn.req = None
                    self._close_conn(conn)
                    break
            self._fail(req, f"timed out after {timeout_s:g} s")

    def close(self) -> None:
        for conn in list(self.conns.values()):
            self._close_conn(conn)
        self.ep.close()


def _plan(eng: _Engine, spec: LoadSpec) -> list[_Phase]:
    """Build the phases and pre-serialise their requests."""
    phases: list[_Phase] = []
    w = spec.warmup_requests
    cap_open = spec.concurrency or 10**9
    if w:
        ph = _Phase("warmup", True)
        ph.total = w
        ph.reqs = eng.build_many(range(w), True)
        ph.next_index = w
        if spec.mode == "closed":
            ph.cap = min(spec.concurrency or 1, w)
        else:
            ph.schedule = arrival_offsets(spec, w, warmup=True)
            ph.cap = cap_open
        phases.append(ph)
    ph = _Phase("measure", False)
    if spec.mode == "closed":
        ph.cap = spec.concurrency or 1
        ph.total = spec.num_requests
        ph.duration = spec.duration_s
        n = spec.num_requests if spec.num_requests is not None else max(4 * ph.cap, 256)
    else:
        ph.schedule = arrival_offsets(spec)
        ph.cap = cap_open
        ph.total = len(ph.schedule)
        n = ph.total
    ph.reqs = eng.build_many(range(w, w + n), False)
    ph.next_index = w + n
    phases.append(ph)
    return phases


def run_load(
    base_url: str,
    spec: LoadSpec,
    *,
    api_key: str | None = None,
    on_progress: Callable[[Progress], None] | None = None,
) -> LoadResult:
    """Offer the load described by ``spec`` to ``base_url`` and record every request.

    Args:
        base_url: the server root (``http://host:port``) or its ``/v1`` URL; requests go to
            ``/v1/completions``.
        spec: the load to offer (validated first).
        api_key: sent as ``Authorization: Bearer <key>``; never stored in records, errors or reprs.
        on_progress: optional callback receiving :class:`Progress`, called from the running thread.

    Returns:
        A :class:`LoadResult` with one record per request that was sent (warm-up first).

    Raises:
        ValueError: invalid spec.
        LoadgenError: the server could not be reached at the start of the run.

    The run blocks the calling thread (one epoll loop, no threads) and pauses the cyclic garbage collector
    while it runs.  If connections keep being refused mid-run the run stops early and
    ``LoadResult.aborted`` says why.
    """
    spec.validate()
    eng = _Engine(base_url, spec, api_key, on_progress)
    gc_was_enabled = gc.isenabled()
    try:
        phases = _plan(eng, spec)
        measure = phases[-1]
        if spec.mode == "closed":
            eng.phase.cap = spec.concurrency or 1
            eng.preconnect(spec.concurrency or 1)
        else:
            eng.phase.cap = 32
            eng.preconnect(min(spec.concurrency or 32, 32, max(1, measure.total or 1)))
        if gc_was_enabled:
            gc.collect()
            gc.disable()
        perf_anchor = perf_counter()
        wall_anchor = time.time()
        run_start = perf_counter()
        for ph in phases:
            if ph is measure:
                eng.finalize_all()
            eng.run_phase(ph)
            if eng.aborted is not None:
                break
        run_end = perf_counter()
        eng.offset_ns_end = _clock_offset_ns()
        eng.t_offset1 = perf_counter_ns()
        eng.finalize_all()
    finally:
        eng.close()
        if gc_was_enabled:
            gc.enable()
    records = [eng.records[i] for i in sorted(eng.records)]
    kernel_reads = len(eng.read_lag)
    if kernel_reads and eng.ts_user_reads:
        source = "mixed"
    elif kernel_reads:
        source = "kernel"
    else:
        source = "user"
    lag = None
    if len(eng.read_lag):
        arr = np.frombuffer(eng.read_lag, dtype=np.int64).astype(np.float64) / 1e6
        lag = {"p50": float(np.percentile(arr, 50)), "p99": float(np.percentile(arr, 99)),
               "max": float(arr.max())}
    return LoadResult(
        spec=spec, records=records, run_start_s=run_start, measure_start_s=measure.start or run_start,
        run_end_s=run_end, wall_anchor=wall_anchor, perf_anchor_s=perf_anchor, timestamp_source=source,
        clock_offset_drift_ns=int(eng.offset_ns_end - eng.offset_ns), read_lag_ms=lag, url=eng.url,
        aborted=eng.aborted, coalesced_chunks=eng.coalesced,
    )


async def run_load_async(
    base_url: str,
    spec: LoadSpec,
    *,
    api_key: str | None = None,
    on_progress: Callable[[Progress], None] | None = None,
) -> LoadResult:
    """:func:`run_load` in a worker thread, for callers inside an asyncio event loop.

    ``on_progress`` is called from the worker thread.  For the best timing keep other Python threads of the
    process mostly idle while it runs: they compete for the GIL.  Kernel receive timestamps keep chunk
    arrival times exact regardless, but send times can be delayed.
    """
    return await asyncio.to_thread(run_load, base_url, spec, api_key=api_key, on_progress=on_progress)
