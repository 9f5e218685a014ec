"""The open-loop arrival schedule: one seeded function that the load generator and the serving model share.

A measured open-loop point and its simulation must see the *same* arrivals, or a comparison at a nominal rate
compares two different samples of it (at 2 req/s over 120 requests, two Poisson samples differ in their
realised rate by ~10% at one standard deviation). :func:`arrival_offsets_s` is that schedule: gaps are
``gamma(shape=burstiness, scale=1/(rate x burstiness))`` (1.0 = Poisson; the convention of
``vllm bench serve --burstiness``, vllm/benchmarks/serve.py, ``get_request``), drawn from numpy's PCG64 generator
seeded by (seed, stream id) through :class:`numpy.random.SeedSequence`. The load generator
(``pytest_roofline.measure.loadgen._prompts.arrival_offsets``) passes its ``LoadSpec.seed`` and
``LoadSpec.point_id``; the simulator (``model.serving``) passes ``Workload.seed`` and ``Workload.point_id``.

**The span of a point's sends** (``arrival_span``, :data:`ARRIVAL_SPANS`). A drawn schedule's span varies with the
draw: the N - 1 gaps of N requests sum to (N - 1) / rate only on average, with a relative spread of 1 / sqrt(N - 1)
for Poisson arrivals, so a point of 60 requests at 2 req/s can send them at 2.9 req/s (seed 0, ``open-r2``: the
last send at 20.6 s instead of 30). ``vllm bench serve`` rescales its draw so that its N-th request goes out exactly
N / rate after the run's start (vllm/benchmarks/serve.py ``get_request`` at v0.32.0: ``target_total_delay_s =
total_requests / request_rate``; github.com/vllm-project/vllm/pull/21108), so the rate it prints a run at is the
rate it sent. The default, ``fixed``, does the same to this schedule: the times are scaled so that the last send
is N / rate after the first. The run's duration here starts at the first send (vLLM's at the start of its gather,
one drawn gap before its first send), so both runs last N / rate plus the last request's latency, and an
unsaturated point's request throughput is N / (N / rate + that latency) in both. ``drawn`` keeps the draw:
GuideLLM's poisson profile, ``vllm bench serve`` before the rescaling, and every open-loop run this tool recorded
before 2026-12-07 (a results point without ``arrival_span`` was sent so). A duration-bound point (no N) and a
ramp-up are never rescaled (:func:`fixed_span_applies`).

numpy is used (not ``random``) because the load generator's schedule was drawn with it from the start: the
recorded open-loop runs under ``predictions/recorded/`` were sent on numpy's draws, and only the same generator
reproduces them.

The rest of a point's workload lives here too, so that the load generator and the simulator read one
description and draw the same per-request values:

* :class:`LengthDist`: a request's input or output length in tokens: ``fixed``, ``uniform`` (``low``..``high``
  inclusive), ``normal`` (``mean``, ``std``, rounded to the nearest integer, half to even, and clipped to
  [``low`` or 1, ``high``]) or ``file`` (a list of lengths: drawn with replacement (``order="sample"``, the
  default) or taken in file order, cycling (``order="sequential"``)). :func:`request_lengths` draws them per
  request as a pure function of (seed, point id, phase, index): request ``i`` of a phase gets the same length
  however many requests are drawn, and the warm-up phase draws from its own streams.
* :class:`DatasetLengths`: the token lengths of a dataset's entries (a ShareGPT-style conversation file or a
  JSONL of prompts, parsed from text by :func:`parse_sharegpt` / :func:`parse_jsonl`); a request takes one
  entry (its prompt length, and its output length when the entry has one).
* a shared prefix (:func:`prefix_lens`): ``prefix_share`` s makes the first ``floor(s x input_len)`` tokens of
  every prompt a prefix common to all requests (or ``shared_prefix_len`` tokens), and :func:`prefix_cache_hits`
  counts the prompt tokens vLLM's prefix cache then serves: whole blocks only, never the last prompt token.
* :class:`RampUp`: ``vllm bench serve --ramp-up-strategy linear|exponential --ramp-up-start-rps
  --ramp-up-end-rps`` (vllm/benchmarks/serve.py at v0.32.0, ``_get_current_request_rate``): request ``i`` of
  ``n`` arrives at the rate ``start + (end - start) x i/(n - 1)`` (linear) or ``start x (end/start)^(i/(n-1))``
  (exponential); :func:`arrival_offsets_s` draws the gap before request ``i`` at that rate.

Pure: no I/O, no clock; the same arguments always give the same array (parsers take the text, not a path).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pytest_roofline import bounded
from pytest_roofline.errors import BoundedInputError, WorkloadError

if TYPE_CHECKING:  # numpy is imported where a schedule is drawn, not when the plugin loads (every pytest start)
    import numpy as np

__all__ = ["seeded_rng", "arrival_offsets_s", "ArrivalSpan", "ARRIVAL_SPANS", "fixed_span_applies",
           "STREAM_PROMPT", "STREAM_PREFIX", "STREAM_SCHEDULE",
           "STREAM_WARMUP_SCHEDULE", "STREAM_PERMUTATION", "STREAM_INPUT_LEN", "STREAM_OUTPUT_LEN",
           "STREAM_DATASET_ENTRY", "LengthDist", "DatasetLengths", "DatasetEntry", "RampUp", "RequestLengths",
           "request_lengths", "prefix_lens", "prefix_cache_hits", "parse_length", "parse_length_file", "parse_sharegpt",
           "parse_jsonl", "jsonl_entry", "MAX_OUTPUT_LEN",
           "length_stats", "estimate_tokens", "CHAT_TOKENS_PER_MESSAGE", "CHAT_REPLY_PRIMING_TOKENS",
           "LENGTH_KINDS", "ORDERS", "RAMP_STRATEGIES"]

#: spawn keys of the seeded streams of one point (one per use, so that they never overlap)
STREAM_PROMPT, STREAM_PREFIX, STREAM_SCHEDULE, STREAM_WARMUP_SCHEDULE, STREAM_PERMUTATION = range(5)
#: the per-request length and dataset-entry streams (spawn key (stream, phase, block): phase 0 measured, 1 warm-up)
STREAM_INPUT_LEN, STREAM_OUTPUT_LEN, STREAM_DATASET_ENTRY = 5, 6, 7

LENGTH_KINDS = ("fixed", "uniform", "normal", "file")
ORDERS = ("sample", "sequential")
#: the largest output length a dataset entry may ask for (no served context holds ten million tokens; a larger
#: integer is a typo or a hostile file, never a request to send)
MAX_OUTPUT_LEN = 10_000_000
RAMP_STRATEGIES = ("linear", "exponential")
#: how an open-loop point's N send times span: ``fixed`` (N / rate from the first send to the last, the schedule
#: ``vllm bench serve`` sends) or ``drawn`` (as the gamma draw falls): :func:`arrival_offsets_s`
ArrivalSpan = Literal["fixed", "drawn"]
ARRIVAL_SPANS: tuple[ArrivalSpan, ...] = ("fixed", "drawn")

_BLOCK = 1024  # gaps drawn per call to the generator (the draws do not depend on it: numpy fills in order)
_LEN_BLOCK = 1024  # per-request draws come in blocks of this many, each from its own generator (spawn key)


def _entropy(seed: int, stream_id: str) -> list[int]:
    digest = hashlib.sha256(stream_id.encode("utf-8")).digest()
    return [int(seed), int.from_bytes(digest[:8], "little"), int.from_bytes(digest[8:16], "little")]


def seeded_rng(seed: int, stream_id: str, *spawn_key: int) -> np.random.Generator:
    """The generator of one stream of one point: seeded by (seed, sha256(stream_id)) and the spawn key."""
    import numpy as np
    return np.random.default_rng(np.random.SeedSequence(_entropy(seed, stream_id), spawn_key=spawn_key))


# ---------------------------------------------------------------------------------------------------------
# ramp-up and the arrival schedule
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RampUp:
    """A request rate that rises over a point's ``n`` requests, as ``vllm bench serve --ramp-up-strategy``."""

    strategy: str
    start_rps: float
    end_rps: float

    def __post_init__(self) -> None:
        if self.strategy not in RAMP_STRATEGIES:
            raise WorkloadError(f"ramp_up.strategy must be linear or exponential, not {self.strategy!r}")
        for name, v in (("start_rps", self.start_rps), ("end_rps", self.end_rps)):
            if not (isinstance(v, (int, float)) and v > 0 and math.isfinite(v)):
                raise WorkloadError(f"ramp_up.{name} must be a finite rate > 0, got {v!r}")

    def rate_at(self, index: int, count: int) -> float:
        """The rate request ``index`` of ``count`` arrives at (vLLM's ``_get_current_request_rate``)."""
        progress = index / max(count - 1, 1)
        if self.strategy == "linear":
            return self.start_rps + (self.end_rps - self.start_rps) * progress
        return float(self.start_rps * (self.end_rps / self.start_rps) ** progress)

    def to_dict(self) -> dict[str, Any]:
        return {"strategy": self.strategy, "start_rps": self.start_rps, "end_rps": self.end_rps}


def fixed_span_applies(*, count: int | None, ramp_up: RampUp | None) -> bool:
    """Whether an ``arrival_span: fixed`` schedule is rescaled: a point of ``count`` requests (2 or more) at one
    rate. A duration-bound point (no count) has no N to span, and a ramp-up keeps its drawn gaps, as ``vllm bench
    serve`` rescales only without ``--ramp-up-strategy``."""
    return count is not None and count >= 2 and ramp_up is None


def arrival_offsets_s(*, rate_req_per_s: float, burstiness: float = 1.0, seed: int = 0, stream_id: str = "point",
                      count: int | None = None, horizon_s: float | None = None,
                      warmup: bool = False, ramp_up: RampUp | None = None,
                      span: ArrivalSpan = "fixed") -> np.ndarray:
    """Send times of an open-loop point's requests, seconds after the phase start (the first is 0).

    ``count`` arrivals, or (with ``horizon_s``) those before the horizon, whichever comes first; one of them is
    required. ``warmup`` draws the warm-up phase's schedule from its own stream. ``burstiness=inf`` makes the
    gaps exactly ``1/rate`` (vLLM's convention for an infinite burstiness). ``ramp_up`` (needs ``count``)
    replaces ``rate_req_per_s``: the gap before request ``i`` is drawn at ``ramp_up.rate_at(i, count)``, so with
    an infinite burstiness ``t_i = sum_{k=1..i} 1 / rate_at(k, count)``.

    ``span`` (:data:`ARRIVAL_SPANS`): ``"fixed"`` rescales the drawn times so that the last of ``count`` requests
    goes out exactly ``count / rate`` after the first (where :func:`fixed_span_applies`; else the draw is kept),
    the schedule ``vllm bench serve`` sends (the module's docstring); ``"drawn"`` keeps the draw, whose span
    varies with it (GuideLLM's poisson, vllm bench serve before the rescaling).
    """
    if span not in ARRIVAL_SPANS:
        raise ValueError(f"span must be one of {', '.join(ARRIVAL_SPANS)}, not {span!r}")
    rescale = span == "fixed" and fixed_span_applies(count=count, ramp_up=ramp_up)
    times = _drawn_offsets_s(rate_req_per_s=rate_req_per_s, burstiness=burstiness, seed=seed, stream_id=stream_id,
                             count=count, horizon_s=horizon_s, warmup=warmup, ramp_up=ramp_up, whole=rescale)
    if rescale and len(times) >= 2 and times[-1] > 0:
        times = times * (float(count) / float(rate_req_per_s) / float(times[-1]))  # type: ignore[arg-type]
        if horizon_s is not None:
            times = times[times < horizon_s]
    return times


def _drawn_offsets_s(*, rate_req_per_s: float, burstiness: float, seed: int, stream_id: str, count: int | None,
                     horizon_s: float | None, warmup: bool, ramp_up: RampUp | None, whole: bool) -> np.ndarray:
    """The drawn schedule (``span="drawn"``); ``whole``: all ``count`` times, the horizon not applied (the fixed
    span rescales them first)."""
    import numpy as np

    if whole:
        horizon_s = None

    if not (rate_req_per_s > 0 and np.isfinite(rate_req_per_s)):
        raise ValueError("arrival_offsets_s needs a finite rate_req_per_s > 0")
    if not burstiness > 0:
        raise ValueError("burstiness must be > 0")
    if count is None and horizon_s is None:
        raise ValueError("give count or horizon_s")
    rng = seeded_rng(seed, stream_id, STREAM_WARMUP_SCHEDULE if warmup else STREAM_SCHEDULE)
    if ramp_up is not None:
        if count is None:
            raise WorkloadError("a ramp-up needs the point's request count (its rate rises over the requests)")
        rates = np.array([ramp_up.rate_at(i, count) for i in range(count)], dtype=float)
        if math.isinf(burstiness):
            gaps = 1.0 / rates[1:]
        else:  # the same gamma draws as a constant rate, rescaled per request: gap_i = g_i x rate / rate_i
            gaps = rng.gamma(float(burstiness), 1.0 / float(burstiness), size=max(count - 1, 0)) / rates[1:]
        times = np.concatenate(([0.0], np.cumsum(gaps)))[:count]
        return times[times < horizon_s] if horizon_s is not None else times
    if math.isinf(burstiness):
        n = count if count is not None else int(math.ceil(float(horizon_s or 0.0) * rate_req_per_s)) + 1
        res = np.arange(n, dtype=float) / float(rate_req_per_s)
        if horizon_s is not None:
            res = res[res < horizon_s]
        return res[:count] if count is not None else res
    shape = float(burstiness)
    scale = 1.0 / (float(rate_req_per_s) * shape)
    out: list[np.ndarray] = []
    t = 0.0
    n = 0
    while count is None or n < count:
        gaps = rng.gamma(shape, scale, size=_BLOCK)
        times = t + np.concatenate(([0.0], np.cumsum(gaps)))
        offs, t = times[:-1], float(times[-1])
        if horizon_s is not None:
            offs = offs[offs < horizon_s]
        out.append(offs)
        n += len(offs)
        if horizon_s is not None and t >= horizon_s:
            break
    res = np.concatenate(out) if out else np.zeros(0)
    return res[:count] if count is not None else res


# ---------------------------------------------------------------------------------------------------------
# lengths
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LengthDist:
    """Token lengths of a request's input or output (integers >= 1).

    ``fixed`` at ``mean``; ``uniform`` in [``low``, ``high``] inclusive (default [mean/2, 3 mean/2], the
    ``--random-range-ratio 0.5`` shape); ``normal`` with ``std``, rounded (half to even) and clipped to
    [``low`` or 1, ``high`` or inf]; ``file``: the lengths in ``values`` (``order`` ``sample``: with
    replacement, seeded; ``sequential``: in order, cycling), ``source`` naming the file. ``mean`` is the
    distribution's nominal mean (a ``file``'s rounded mean), the length the decode roofline charges.
    """

    mean: int
    kind: str = "fixed"
    low: int | None = None
    high: int | None = None
    std: float | None = None
    values: tuple[int, ...] = ()
    order: str = "sample"
    source: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in LENGTH_KINDS:
            raise WorkloadError(f"length dist must be one of {', '.join(LENGTH_KINDS)}, not {self.kind!r}")
        if not (isinstance(self.mean, int) and not isinstance(self.mean, bool) and self.mean >= 1):
            raise WorkloadError(f"length mean must be an integer >= 1, got {self.mean!r}")
        if self.kind == "normal" and (self.std is None or not self.std >= 0 or not math.isfinite(self.std)):
            raise WorkloadError("a normal length needs a finite std >= 0")
        if self.kind == "file":
            if not self.values:
                raise WorkloadError("a length file needs at least one length")
            if any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in self.values):
                bad = next(v for v in self.values if isinstance(v, bool) or not isinstance(v, int) or v < 1)
                raise WorkloadError(f"lengths must be whole numbers >= 1, got {bad!r}")
            if self.order not in ORDERS:
                raise WorkloadError(f"order must be sample or sequential, not {self.order!r}")
        lo, hi = self.bounds()
        if lo < 1 or hi < lo:
            raise WorkloadError(f"length bounds must satisfy 1 <= min <= max, got [{lo}, {hi}]")

    # -- constructors ------------------------------------------------------------------------------------
    @classmethod
    def fixed(cls, n: int) -> LengthDist:
        return cls(int(n))

    @classmethod
    def uniform(cls, low: int, high: int) -> LengthDist:
        return cls(max(1, (int(low) + int(high)) // 2), "uniform", low=int(low), high=int(high))

    @classmethod
    def normal(cls, mean: int, std: float, low: int | None = None, high: int | None = None) -> LengthDist:
        return cls(int(mean), "normal", low=low, high=high, std=float(std))

    @classmethod
    def from_values(cls, values: Sequence[int], *, order: str = "sample", source: str | None = None) -> LengthDist:
        vals = tuple(values)
        if not vals:
            raise WorkloadError(f"{source or 'the length list'} holds no lengths")
        mean = max(1, int(round(sum(vals) / len(vals))))
        return cls(mean, "file", values=vals, order=order, source=source)

    # -- properties --------------------------------------------------------------------------------------
    def bounds(self) -> tuple[int, float]:
        if self.kind == "uniform":
            lo = self.low if self.low is not None else max(1, self.mean // 2)
            hi = self.high if self.high is not None else self.mean + self.mean // 2
            return int(lo), int(hi)
        if self.kind == "file":
            return min(self.values), max(self.values)
        if self.kind == "fixed":
            return self.mean, self.mean
        return (int(self.low) if self.low is not None else 1,
                float(self.high) if self.high is not None else math.inf)

    @property
    def max_len(self) -> float:
        """The longest length a draw can give (inf for an unbounded normal)."""
        return self.bounds()[1]

    def to_dict(self) -> dict[str, Any]:
        """The distribution's parameters, for the results file (a file's lengths as their count and source)."""
        if self.kind == "fixed":
            return {"dist": "fixed", "value": self.mean}
        if self.kind == "uniform":
            lo, hi = self.bounds()
            return {"dist": "uniform", "min": lo, "max": int(hi)}
        if self.kind == "normal":
            d: dict[str, Any] = {"dist": "normal", "mean": self.mean, "std": self.std}
            if self.low is not None:
                d["min"] = self.low
            if self.high is not None:
                d["max"] = self.high
            return d
        return {"dist": "file", "source": self.source, "count": len(self.values), "order": self.order,
                "mean": self.mean}

    # -- draws -------------------------------------------------------------------------------------------
    def draw(self, count: int, *, seed: int = 0, stream_id: str = "point", stream: int = STREAM_INPUT_LEN,
             warmup: bool = False, start: int = 0) -> list[int]:
        """The lengths of requests ``start .. start+count-1`` of a phase, a pure function of (seed, stream_id,
        stream, phase, index): block ``b`` of 1,024 requests is drawn from its own generator."""
        if count <= 0:
            return []
        if self.kind == "fixed":
            return [self.mean] * count
        if self.kind == "file" and self.order == "sequential":
            vals, n = self.values, len(self.values)
            return [vals[(start + k) % n] for k in range(count)]
        import numpy as np

        phase = 1 if warmup else 0
        out: list[int] = []
        first, last = start // _LEN_BLOCK, (start + count - 1) // _LEN_BLOCK
        for b in range(first, last + 1):
            rng = seeded_rng(seed, stream_id, stream, phase, b)
            block = self._block(rng, np)
            lo = max(start - b * _LEN_BLOCK, 0)
            hi = min(start + count - b * _LEN_BLOCK, _LEN_BLOCK)
            out.extend(block[lo:hi])
        return out

    def _block(self, rng: Any, np: Any) -> list[int]:
        lo, hi = self.bounds()
        if self.kind == "uniform":
            return [int(x) for x in rng.integers(int(lo), int(hi) + 1, size=_LEN_BLOCK)]
        if self.kind == "normal":
            x = np.rint(rng.normal(float(self.mean), float(self.std or 0.0), size=_LEN_BLOCK))
            x = np.clip(x, lo, hi if math.isfinite(hi) else None)
            return [int(v) for v in x]
        idx = rng.integers(0, len(self.values), size=_LEN_BLOCK)
        return [self.values[int(i)] for i in idx]

    def sample(self, rng: Any, n: int) -> list[int]:
        """``n`` lengths seeded by a ``random.Random`` (the seed is taken from it): :meth:`draw` underneath."""
        return self.draw(n, seed=int(rng.getrandbits(63)), stream_id="sample")


def parse_length(value: Any, what: str = "length") -> LengthDist:
    """A length as written in a prediction file (already plain data): an integer (fixed), or a mapping
    ``{dist: fixed, value: N}``, ``{dist: uniform, min: A, max: B}``, ``{dist: normal, mean: M, std: S, min:, max:}``
    or ``{dist: file, values: [...], order: sample|sequential, source: name}`` (the reader put the file's
    lengths in ``values``)."""
    if isinstance(value, bool):
        raise WorkloadError(f"{what}: expected a whole number of tokens or a distribution, got {value!r}")
    if isinstance(value, int):
        if value < 1:
            raise WorkloadError(f"{what}: {value} is impossible: it must be >= 1 tokens")
        return LengthDist(value)
    if isinstance(value, float) and value.is_integer():
        return parse_length(int(value), what)
    if not isinstance(value, Mapping):
        raise WorkloadError(f"{what}: expected a whole number of tokens or {{dist: uniform, min: 64, max: 512}}, "
                            f"got {value!r}")
    kind = value.get("dist")
    allowed = {"fixed": {"value"}, "uniform": {"min", "max"}, "normal": {"mean", "std", "min", "max"},
               "file": {"values", "order", "source", "path", "sha256"}}
    if kind not in allowed:
        raise WorkloadError(f"{what}.dist must be one of {', '.join(LENGTH_KINDS)}, got {kind!r}")
    extra = set(value) - allowed[kind] - {"dist"}
    if extra:
        raise WorkloadError(f"{what}: a {kind} length takes {', '.join(sorted(allowed[kind]))}, not "
                            f"{', '.join(sorted(extra))}")

    def whole(key: str, required: bool = True) -> int | None:
        v = value.get(key)
        if v is None:
            if required:
                raise WorkloadError(f"{what}: a {kind} length needs {key}")
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not float(v).is_integer() or v < 1:
            raise WorkloadError(f"{what}.{key}: expected a whole number of tokens >= 1, got {v!r}")
        return int(v)

    if kind == "fixed":
        return LengthDist(whole("value") or 1)
    if kind == "uniform":
        lo, hi = whole("min"), whole("max")
        assert lo is not None and hi is not None
        if hi < lo:
            raise WorkloadError(f"{what}: uniform min {lo} is above max {hi}")
        return LengthDist.uniform(lo, hi)
    if kind == "normal":
        mean, lo, hi = whole("mean"), whole("min", False), whole("max", False)
        std = value.get("std")
        if isinstance(std, bool) or not isinstance(std, (int, float)) or not std >= 0:
            raise WorkloadError(f"{what}.std: expected a number of tokens >= 0, got {std!r}")
        if lo is not None and hi is not None and hi < lo:
            raise WorkloadError(f"{what}: normal min {lo} is above max {hi}")
        assert mean is not None
        return LengthDist.normal(mean, float(std), lo, hi)
    order = value.get("order", "sample")
    if order not in ORDERS:
        raise WorkloadError(f"{what}.order must be sample (with replacement) or sequential, got {order!r}")
    vals = value.get("values")
    if not isinstance(vals, Sequence) or isinstance(vals, str):
        raise WorkloadError(f"{what}: a file length needs its lengths (values)")
    return LengthDist.from_values([int(v) for v in vals], order=order, source=value.get("source") or value.get("path"))


def parse_length_file(text: str, source: str = "the length file") -> list[int]:
    """The lengths of a file's text: a JSON list of integers, or one integer per line (blank lines and lines
    starting with ``#`` are skipped). A bad value raises :class:`WorkloadError` with its line."""
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            data = bounded.loads_json(text, source)
        except json.JSONDecodeError as exc:
            raise WorkloadError(f"{source}: not a JSON list of lengths: {exc.msg}", line=exc.lineno) from None
        except BoundedInputError as exc:
            raise WorkloadError(str(exc), line=exc.line) from None
        if not isinstance(data, list):
            raise WorkloadError(f"{source}: not a JSON list of lengths (a {type(data).__name__})", line=1)
        out = []
        for k, v in enumerate(data):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise WorkloadError(f"{source}: item {k} is {v!r}, not a whole number of tokens >= 1")
            out.append(v)
        return out
    out = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        t = line.strip()
        if not t or t.startswith("#"):
            continue
        try:
            v = int(t)
        except ValueError:
            raise WorkloadError(f"{source}:{lineno}: {t[:40]!r} is not a whole number of tokens", line=lineno) from None
        if v < 1:
            raise WorkloadError(f"{source}:{lineno}: {v} is impossible: a length must be >= 1", line=lineno)
        out.append(v)
    if not out:
        raise WorkloadError(f"{source}: holds no lengths")
    return out


# ---------------------------------------------------------------------------------------------------------
# datasets
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DatasetEntry:
    """One request of a dataset: its prompt text and, when the dataset says, its output length or the text of
    the completion whose token count is the output length (ShareGPT's second turn). ``line``: where it starts."""

    prompt: str
    line: int
    output_len: int | None = None
    completion: str | None = None


def parse_sharegpt(text: str, source: str = "the dataset") -> list[DatasetEntry]:
    """A ShareGPT-style file: a JSON list of ``{"conversations": [{"from": "human", "value": ...},
    {"from": "gpt", "value": ...}, ...]}``. As ``vllm bench serve --dataset-name sharegpt`` does
    (``ShareGPTDataset`` in vllm/benchmarks/datasets/datasets.py at v0.32.0), entries with fewer than two turns
    are skipped, the first turn is the prompt and the second turn's token count the output length. vLLM's
    shuffle and its length filter (4 <= prompt <= 1024, prompt + output <= 2048) are not applied: the entries
    are taken as the file has them."""
    try:
        data = bounded.loads_json(text, source)
    except json.JSONDecodeError as exc:
        raise WorkloadError(f"{source}:{exc.lineno}: not JSON: {exc.msg}", line=exc.lineno) from None
    except BoundedInputError as exc:
        raise WorkloadError(str(exc), line=exc.line) from None
    if not isinstance(data, list):
        raise WorkloadError(f"{source}: a ShareGPT file is a JSON list of conversations, got a "
                            f"{type(data).__name__}", line=1)
    out = []
    for k, entry in enumerate(data):
        conv = entry.get("conversations") if isinstance(entry, Mapping) else None
        if not isinstance(conv, list) or len(conv) < 2:
            continue
        turns = []
        for turn in conv[:2]:
            v = turn.get("value") if isinstance(turn, Mapping) else None
            if not isinstance(v, str):
                raise WorkloadError(f"{source}: conversation {k}: a turn without a text 'value': {turn!r:.60}")
            turns.append(v)
        out.append(DatasetEntry(prompt=turns[0], completion=turns[1], line=k + 1))
    if not out:
        raise WorkloadError(f"{source}: no conversation with two turns (a prompt and a completion)")
    return out


def parse_jsonl(text: str, source: str = "the dataset", *, prompt_field: str = "prompt",
                output_fields: Sequence[str] = ("output_len", "max_tokens")) -> list[DatasetEntry]:
    """A JSONL file of prompts: one JSON object per line with the prompt text in ``prompt_field`` and,
    optionally, the output length in the first of ``output_fields`` present. Blank lines are skipped; a line that
    is not a JSON object with a text prompt raises :class:`WorkloadError` naming its line."""
    out = [e for lineno, line in enumerate(text.splitlines(), start=1)
           if (e := jsonl_entry(line, lineno, source, prompt_field=prompt_field, output_fields=output_fields))]
    if not out:
        raise WorkloadError(f"{source}: holds no prompts")
    return out


def jsonl_entry(line: str, lineno: int, source: str = "the dataset", *, prompt_field: str = "prompt",
                output_fields: Sequence[str] = ("output_len", "max_tokens")) -> DatasetEntry | None:
    """One line of a JSONL dataset as its entry (``None`` for a blank line); :class:`WorkloadError` naming the
    line otherwise. A file is read a line at a time through this (``format.workloads.DatasetFile``)."""
    if not line.strip():
        return None
    try:
        obj = bounded.loads_json(line, source, line=lineno)
    except json.JSONDecodeError as exc:
        raise WorkloadError(f"{source}:{lineno}: not a JSON object: {exc.msg}", line=lineno) from None
    except BoundedInputError as exc:
        raise WorkloadError(str(exc), line=lineno) from None
    if not isinstance(obj, Mapping):
        raise WorkloadError(f"{source}:{lineno}: expected a JSON object, got {type(obj).__name__}", line=lineno)
    prompt = obj.get(prompt_field)
    if not isinstance(prompt, str) or not prompt:
        raise WorkloadError(f"{source}:{lineno}: no text in the prompt field {prompt_field!r}", line=lineno)
    n: int | None = None
    for f in output_fields:
        if f in obj:
            v = obj[f]
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= MAX_OUTPUT_LEN:
                raise WorkloadError(f"{source}:{lineno}: {f} must be a whole number of tokens in [1, "
                                    f"{MAX_OUTPUT_LEN:,}], got {v!r:.40}", line=lineno)
            n = v
            break
    return DatasetEntry(prompt=prompt, output_len=n, line=lineno)


def estimate_tokens(text: str) -> int:
    """A token count without a tokenizer: ``ceil(chars / 4)`` (OpenAI's rule of thumb of ~4 characters per
    English token, https://help.openai.com/en/articles/4936856), at least 1. Results flag it as estimated."""
    return max(1, -(-len(text) // 4))


#: The prompt tokens a chat template adds around one message, and those that prime the reply, when the real
#: template cannot be rendered (no tokenizer or template at hand): OpenAI's count for its chat models, "every
#: message follows <|start|>{role/name}\n{content}<|end|>\n" (3 tokens, plus the role's own, 1 for "user") and
#: "every reply is primed with <|start|>assistant<|message|>" (3), num_tokens_from_messages in
#: https://github.com/openai/openai-cookbook/blob/main/examples/How_to_count_tokens_with_tiktoken.ipynb. Other
#: templates differ (a system prompt, a BOS token); results flag such counts as estimated.
CHAT_TOKENS_PER_MESSAGE, CHAT_REPLY_PRIMING_TOKENS = 3 + 1, 3


@dataclass(frozen=True)
class DatasetLengths:
    """The token lengths of a dataset's entries: what the simulator needs of a dataset (the load generator also
    has the prompts' token ids). ``output_lens[k]`` None: entry k has no output length (the workload's
    ``output_len`` applies). ``order``: ``sequential`` (entry ``i mod n`` for request i, the default) or
    ``sample`` (with replacement, seeded). ``estimated``: lengths from :func:`estimate_tokens`, not a tokenizer."""

    input_lens: tuple[int, ...]
    output_lens: tuple[int | None, ...]
    order: str = "sequential"
    source: str = ""
    sha256: str = ""
    estimated: bool = False
    tokenizer: str = ""

    def __post_init__(self) -> None:
        if not self.input_lens or len(self.input_lens) != len(self.output_lens):
            raise WorkloadError("a dataset needs one input and one output length per entry")
        if any(n < 1 for n in self.input_lens):
            raise WorkloadError("a dataset prompt must be at least one token")
        if self.order not in ORDERS:
            raise WorkloadError(f"dataset order must be sample or sequential, not {self.order!r}")

    def entries(self, count: int, *, seed: int = 0, stream_id: str = "point", warmup: bool = False,
                start: int = 0) -> list[int]:
        """The entry each of requests ``start .. start+count-1`` of a phase takes."""
        n = len(self.input_lens)
        if self.order == "sequential":
            return [(start + k) % n for k in range(count)]
        idx = LengthDist.from_values(list(range(1, n + 1)), order="sample")
        return [i - 1 for i in idx.draw(count, seed=seed, stream_id=stream_id, stream=STREAM_DATASET_ENTRY,
                                        warmup=warmup, start=start)]

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "sha256": self.sha256, "entries": len(self.input_lens), "order": self.order,
                "tokenizer": self.tokenizer, "estimated": self.estimated}


@dataclass(frozen=True)
class RequestLengths:
    """Per-request lengths of a phase: ``input_lens[k]``/``output_lens[k]`` of request ``start + k``;
    ``entries[k]`` the dataset entry it takes (empty without a dataset)."""

    input_lens: list[int]
    output_lens: list[int]
    entries: list[int] = field(default_factory=list)


def request_lengths(count: int, *, input_len: LengthDist, output_len: LengthDist,
                    dataset: DatasetLengths | None = None, seed: int = 0, stream_id: str = "point",
                    warmup: bool = False, start: int = 0) -> RequestLengths:
    """The lengths of requests ``start .. start+count-1`` of a point's phase: the ONE draw the load generator
    sends and the simulator simulates. With a dataset, the input is the entry's prompt length and the output
    the entry's own length, else a draw of ``output_len``."""
    kw: dict[str, Any] = {"seed": seed, "stream_id": stream_id, "warmup": warmup, "start": start}
    outs = output_len.draw(count, stream=STREAM_OUTPUT_LEN, **kw)
    if dataset is None:
        return RequestLengths(input_len.draw(count, stream=STREAM_INPUT_LEN, **kw), outs)
    ent = dataset.entries(count, **kw)
    ins = [dataset.input_lens[e] for e in ent]
    outs = [o if (o := dataset.output_lens[e]) is not None else d for e, d in zip(ent, outs)]
    return RequestLengths(ins, outs, ent)


def length_stats(lengths: Sequence[int]) -> dict[str, float]:
    """Realised mean, p50, p99, min and max of per-request lengths (percentiles by linear interpolation)."""
    if not lengths:
        return {}
    xs = sorted(lengths)

    def pct(q: float) -> float:
        pos = q / 100.0 * (len(xs) - 1)
        lo = int(math.floor(pos))
        hi = min(lo + 1, len(xs) - 1)
        return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)

    return {"mean": sum(xs) / len(xs), "p50": pct(50), "p99": pct(99), "min": float(xs[0]), "max": float(xs[-1])}


# ---------------------------------------------------------------------------------------------------------
# shared prefix
# ---------------------------------------------------------------------------------------------------------


def prefix_lens(input_lens: Sequence[int], *, prefix_share: float = 0.0, shared_prefix_len: int = 0) -> list[int]:
    """The leading tokens of each prompt that are common to every request of the point: ``shared_prefix_len``
    tokens, or ``floor(prefix_share x input_len)`` (all prompts' prefixes are the start of one token sequence),
    never the whole prompt."""
    if not 0.0 <= prefix_share < 1.0:
        raise WorkloadError(f"prefix_share must be in [0, 1), got {prefix_share!r}")
    if shared_prefix_len and prefix_share:
        raise WorkloadError("give shared_prefix_len or prefix_share, not both")
    if shared_prefix_len:
        return [min(int(shared_prefix_len), n) for n in input_lens]
    return [int(math.floor(prefix_share * n)) for n in input_lens]


def prefix_cache_hits(input_lens: Sequence[int], prefixes: Sequence[int], *, block_size: int,
                      warm_prefix: int = 0) -> list[int]:
    """Prompt tokens vLLM's prefix cache serves each request, in arrival order: whole blocks of the prefix that
    an earlier request (or the warm-up, whose longest prefix is ``warm_prefix``) already computed, and never the
    last prompt token. vLLM hashes full blocks only and looks up at most ``num_tokens - 1`` tokens
    (``KVCacheManager.get_computed_blocks``, vllm/v1/core/kv_cache_manager.py at v0.32.0: "set
    max_cache_hit_length to prompt_length - 1"). Evictions under pool pressure are not modelled."""
    out = []
    cached = int(warm_prefix)
    for n, p in zip(input_lens, prefixes, strict=True):
        common = min(int(p), cached, int(n) - 1)
        out.append(max(common, 0) // block_size * block_size)
        cached = max(cached, int(p))
    return out
