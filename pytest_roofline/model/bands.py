"""How wrong the serving model is, by regime: the interval (band) around each of its values.

A band is a range of ``measured / model`` ratios (``benchmarks/model_accuracy.py`` derives it from the accuracy
corpus under ``benchmarks/data/corpus/`` and the project's recordings, and writes ``model/data/bands.json``;
docs/explanation/models.md has the table and the leave-one-source-out coverage). A regime is the metric, the load
(the mean running batch: ``low`` <= 16 < ``high``), the TP degree (``tp1`` / ``tpN``), the engine (``v0``: whole
prefills, ``v1``: chunked prefill; ``cpu`` for the CPU pseudo-device) and the mix (``prefill``: the model spends at
least :data:`PREFILL_BOUND_SHARE` of its step time on prefill compute, ``PointPrediction.time_shares``; ``decode``
else). The share is the model's own, the "dominant term" ``roofline predict --simulate`` prints: a prompt token costs
about a hundredth of a low-batch decode token (Llama-3-8B on an A100: ~0.07 ms of compute against a ~8 ms weight
read), so the tokens' mix alone would class a 512-in / 64-out chat as prefill. Where a host runs prefill slower than
the model prices it, the model can class a prefill-heavy run as decode-bound (two of the public bursts: Qwen3-32B on
the H100, where its KV pool holds 5 and 11 of those requests). A metric's *device class* is GPUs on decode-bound
work, GPUs on prefill-bound work, or the CPU engine (whose four recordings stay one class: a split would leave its
prefill-bound class one source); no class lends to another, and a metric without data in a class has no band (None),
never a made-up one (:func:`band_note` says what its runs showed instead). Prefill-bound work is a class of its own
on GPUs because the model's errors differ in kind there: on public prefill-heavy bursts (benchmarks/data/corpus,
``gpustack-qwen3-bursts``) its throughput is up to 4.7x the measured, where decode-bound runs are within 20%, and one
class would make both bands wrong (too wide for the one, too narrow for the other).

The band is a split-conformal interval in log space, built so that a run from a source (a GPU, model and vLLM
release) the corpus has never seen lands in it at the nominal rate :data:`NOMINAL_COVERAGE`:

* **Centre** (:func:`regime_centre`): the regime's median log-ratio, each source counted once (the median of the
  sources' own medians there); a regime with data from fewer than :data:`MIN_CENTRE_SOURCES` sources takes its
  class's centre (the same median over the class's points), and its band is marked ``pooled``. One source's median
  is that source's bias (its GPU, release and harness), not the regime's: with the regime's own centre from one
  source, a held-out source in that regime was judged around another source's bias, and the class's TPOT band
  covered 61% of held-out values (blis-training-h100's 20 values around azure-a100-tp8's centre for TP > 1 at high
  load: 20%); from two sources up, 77% with a narrower band (×/÷ 1.20 against 1.38;
  benchmarks/RESULTS-model-corpus.md, 2026-12-07).
* **Scores** (:func:`out_of_source_scores`): for every point of every source, ``|log(measured / model) - centre|``
  with the centre derived from the *other* sources.  A score is the error a point showed as a source the centres had
  never seen, so the scores hold the sources' own biases as well as the scatter within each source.
* **Half-width** (:func:`conformal_half_width`): per metric and device class, the ``ceil((n + 1) * nominal)``-th
  smallest of the class's ``n`` scores (the split-conformal order statistic with its finite-sample correction); with
  too few scores for it (n < 4 at 80%) the class has no band.  A regime's band is ``exp(centre -/+ half-width)``.

No multiplier is chosen and nothing looks at which values fall inside.  The coverage the project states is
leave-one-source-out (:func:`loso_inside`): each source is judged by bands whose centres *and* half-width were derived
from the other sources alone (their scores come from leaving each of those out in turn).  The points are treated as
exchangeable with a new source's point; they are not quite (a source's points share its bias, and a source with more
points weighs more), so :func:`hierarchical_half_width` gives the rule that weighs every source once and holds for
exchangeable sources (it needs at least 4 sources at 80%), as a what-if the benchmark prints.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from statistics import median
from typing import Literal

__all__ = ["Band", "BAND_METRICS", "MOE_CEILING_NO_BAND", "MOE_SERVING_NO_BAND", "ROOFLINE_CEILINGS",
           "ROOFLINE_FRACTION_KEY",
           "roofline_fraction_band", "ceiling_no_band_reason",
           "NOMINAL_COVERAGE", "MIN_POINTS", "MIN_CENTRE_SOURCES", "PREFILL_BOUND_SHARE", "Regime", "regime_of",
           "band_for",
           "derive_bands", "load_bands", "observed_ranges", "band_note", "NOTE_RANGE_SEP", "load_observed_ranges",
           "CPU_BAND_CAVEAT", "band_caveat", "BAND_BASIS", "BAND_MEANING",
           "ratio_quantile", "percentile_band", "regime_centre", "out_of_source_scores", "conformal_half_width",
           "hierarchical_half_width", "loso_inside"]

#: the PointPrediction metrics that carry a band
BAND_METRICS: tuple[str, ...] = ("output_throughput_tok_per_s", "tpot_p50_ms", "ttft_p50_ms")
#: roofline quantities a run measures whose roofline value is a physical ceiling on it (tokens/s at batch 1): the
#: CPU-only math check passes realistic ink between the share of the ceiling measured runs reach and the ceiling
#: itself. Not ``batch1_ceiling``: that is the ceiling's own arithmetic (bandwidth ÷ weight bytes), never measured, so
#: its ink is checked as arithmetic, to the precision written (trial s26b #2: a GiB-for-GB slip, 194.3 for 208.59
#: tok/s, passed as "a realistic value")
ROOFLINE_CEILINGS: frozenset[str] = frozenset({"batch1_throughput"})
#: the key of that share in bands.json: measured / roofline at low load (mean running batch <= 16) on GPUs
ROOFLINE_FRACTION_KEY = "roofline_fraction|low|gpu"
#: the share of a never-seen source's values a band is built to cover
NOMINAL_COVERAGE = 0.80
#: below this many ratios :func:`percentile_band` is their min-max, not percentiles
MIN_POINTS = 5
#: a regime's own centre needs this many sources with data there; with fewer its band takes the class's centre (one
#: source's median is that source's bias, not the regime's: the module's docstring)
MIN_CENTRE_SOURCES = 2
#: the load classes' boundary, in mean running sequences
LOW_LOAD_MAX_BATCH = 16.0
#: a point is prefill-bound when the model spends at least this share of its step time on prefill compute (its
#: ``PointPrediction.time_shares["prefill_compute"]``): the midpoint, not fitted
PREFILL_BOUND_SHARE = 0.5

Load = Literal["low", "high"]
Engine = Literal["v0", "v1", "cpu"]
Mix = Literal["decode", "prefill"]


@dataclass(frozen=True)
class Regime:
    metric: str
    load: Load
    tp: Literal["tp1", "tpN"]
    engine: Engine
    mix: Mix = "decode"

    @property
    def key(self) -> str:
        return f"{self.metric}|{self.load}|{self.tp}|{self.engine}" + ("|prefill" if self.mix == "prefill" else "")

    @property
    def device_class(self) -> str:
        """``gpu``, ``gpu-prefill`` (prefill-bound work) or ``cpu`` (the module's docstring)."""
        if self.engine == "cpu":
            return "cpu"
        return "gpu-prefill" if self.mix == "prefill" else "gpu"

    @property
    def pooled_key(self) -> str:
        """The key of the metric's band pooled over the regimes of this device class."""
        return f"{self.metric}|*|{self.device_class}"


@dataclass(frozen=True)
class Band:
    """``measured / model`` between ``lo`` and ``hi`` at the nominal coverage, centred on ``n`` ratios of ``sources``;
    ``pooled``: the class's centre (the regime had data from fewer than MIN_CENTRE_SOURCES sources)."""

    lo: float
    hi: float
    n: int
    sources: tuple[str, ...] = ()
    pooled: bool = False
    #: the conformal half-width in log space (the band is centre x/÷ exp of it); 0 for a band not built that way
    half_width_log: float = 0.0
    #: the largest tensor-parallel degree among the runs behind the band, where the benchmark records it (the
    #: roofline-fraction band: :func:`roofline_fraction_band` gives none beyond it); None: not recorded
    tp_max: int | None = None

    def around(self, value: float) -> tuple[float, float]:
        """The interval around a model value (ordered, whatever the value's sign)."""
        a, b = value * self.lo, value * self.hi
        return (a, b) if a <= b else (b, a)

    def contains(self, model_value: float, measured: float) -> bool:
        lo, hi = self.around(model_value)
        return lo <= measured <= hi


def regime_of(metric: str, *, mean_running_batch: float, tp: int, chunked_prefill: bool, device: str,
              prefill_share: float = 0.0) -> Regime:
    """The regime of a model value: ``prefill_share`` is the model's share of step time on prefill compute at the
    point (``PointPrediction.time_shares["prefill_compute"]``)."""
    load: Load = "low" if mean_running_batch <= LOW_LOAD_MAX_BATCH else "high"
    engine: Engine = "cpu" if device == "cpu" else ("v1" if chunked_prefill else "v0")
    mix: Mix = "prefill" if engine != "cpu" and prefill_share >= PREFILL_BOUND_SHARE else "decode"
    return Regime(metric, load, "tp1" if int(tp) <= 1 else "tpN", engine, mix)


def ratio_quantile(ratios: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``ratios`` by linear interpolation."""
    xs = sorted(ratios)
    if not xs:
        raise ValueError("no ratios")
    pos = q * (len(xs) - 1)
    i = int(math.floor(pos))
    j = min(i + 1, len(xs) - 1)
    return xs[i] + (xs[j] - xs[i]) * (pos - i)


def percentile_band(ratios: Sequence[float], sources: Sequence[str]) -> Band:
    """The 10th-90th percentile of ``ratios`` (their min-max below :data:`MIN_POINTS`): the roofline-fraction band's
    rule, where the ratios are a share of a physical ceiling rather than a model's error."""
    tail = (1.0 - NOMINAL_COVERAGE) / 2.0
    if len(ratios) >= MIN_POINTS:
        lo, hi = ratio_quantile(ratios, tail), ratio_quantile(ratios, 1.0 - tail)
    else:
        lo, hi = min(ratios), max(ratios)
    return Band(lo=lo, hi=hi, n=len(ratios), sources=tuple(sorted(set(sources))))


def _usable(samples: Sequence[tuple[Regime, float, str]]) -> list[tuple[Regime, float, str]]:
    """``(regime, log ratio, source)`` of the samples whose ratio is positive and finite."""
    return [(reg, math.log(r), src) for reg, r, src in samples if r > 0 and math.isfinite(r)]


def _regime_sources(logs: Sequence[tuple[Regime, float, str]], regime: Regime) -> dict[str, list[float]]:
    by_source: dict[str, list[float]] = {}
    for reg, x, src in logs:
        if reg.key == regime.key:
            by_source.setdefault(src, []).append(x)
    return by_source


def _centre_of(logs: Sequence[tuple[Regime, float, str]], regime: Regime) -> float | None:
    by_source = _regime_sources(logs, regime)
    if len(by_source) < MIN_CENTRE_SOURCES:  # no data, or one source's bias: the class's points
        by_source = {}
        for reg, x, src in logs:
            if reg.pooled_key == regime.pooled_key:
                by_source.setdefault(src, []).append(x)
    return median(median(v) for v in by_source.values()) if by_source else None


def regime_centre(samples: Sequence[tuple[Regime, float, str]], regime: Regime) -> float | None:
    """The log centre of ``regime``'s band from ``(regime, measured / model, source)`` samples: the median of each
    source's median log-ratio in the regime (every source counted once) where at least :data:`MIN_CENTRE_SOURCES`
    sources have data there, else the same over the regime's device class (the pooled centre); None when the class
    has no data."""
    return _centre_of(_usable(samples), regime)


def _scores(logs: Sequence[tuple[Regime, float, str]], pooled_key: str) -> list[tuple[str, float]]:
    out: list[tuple[str, float]] = []
    for src in sorted({s for reg, _, s in logs if reg.pooled_key == pooled_key}):
        others = [x for x in logs if x[2] != src]
        for reg, x, s in logs:
            if s == src and reg.pooled_key == pooled_key:
                c = _centre_of(others, reg)
                if c is not None:
                    out.append((src, abs(x - c)))
    return out


def out_of_source_scores(samples: Sequence[tuple[Regime, float, str]], pooled_key: str) -> list[tuple[str, float]]:
    """``(source, score)`` for every sample of the metric and device class ``pooled_key``: the absolute log distance
    of its ratio from its regime's centre (:func:`regime_centre`) derived from the *other* sources alone; a source
    alone in its class has no score."""
    return _scores(_usable(samples), pooled_key)


def conformal_half_width(scores: Sequence[float], nominal: float = NOMINAL_COVERAGE) -> float:
    """The split-conformal quantile of ``scores``: the ``ceil((n + 1) * nominal)``-th smallest of the ``n`` scores,
    which a further exchangeable score stays at or below with probability at least ``nominal``; infinite when that
    rank exceeds ``n`` (too few scores to bound it)."""
    xs = sorted(scores)
    rank = math.ceil((len(xs) + 1) * nominal - 1e-9)
    return xs[rank - 1] if 1 <= rank <= len(xs) else math.inf


def hierarchical_half_width(scores: Sequence[tuple[str, float]], nominal: float = NOMINAL_COVERAGE) -> float:
    """The conformal quantile for a point of a new *source* when only sources are exchangeable: each of the ``K``
    sources weighs ``1 / (K + 1)``, shared evenly by its scores, and the new source's ``1 / (K + 1)`` sits at infinity;
    the smallest score whose cumulative weight reaches ``nominal`` (infinite when the ``K`` sources' weight,
    ``K / (K + 1)``, stays below it: fewer than 4 sources at 80%)."""
    by_source: dict[str, list[float]] = {}
    for src, s in scores:
        by_source.setdefault(src, []).append(s)
    k = len(by_source)
    weighted = sorted((s, 1.0 / ((k + 1) * len(v))) for v in by_source.values() for s in v)
    total = 0.0
    for s, w in weighted:
        total += w
        if total >= nominal - 1e-9:
            return s
    return math.inf


def derive_bands(samples: Sequence[tuple[Regime, float, str]]) -> dict[str, Band]:
    """Bands from ``(regime, measured / model, source)`` samples: one per regime with data and one per metric and
    device class (``Regime.pooled_key``, around the class's centre), each ``exp(centre -/+ half-width)`` with the
    class's conformal half-width of its out-of-source scores (the module's docstring); a class whose half-width is
    infinite (too few scores) has no bands."""
    logs = _usable(samples)
    out: dict[str, Band] = {}
    for pkey in sorted({reg.pooled_key for reg, _, _ in logs}):
        cls = [x for x in logs if x[0].pooled_key == pkey]
        half = conformal_half_width([s for _, s in _scores(logs, pkey)])
        if not math.isfinite(half):
            continue
        by_source: dict[str, list[float]] = {}
        for _, x, src in cls:
            by_source.setdefault(src, []).append(x)
        groups: dict[str, tuple[float, list[tuple[Regime, float, str]]]] = {
            pkey: (median(median(v) for v in by_source.values()), cls)}
        for reg in {r for r, _, _ in cls}:
            c = _centre_of(cls, reg)
            assert c is not None  # the regime has data
            groups[reg.key] = (c, [x for x in cls if x[0].key == reg.key])
        for key, (c, pts) in groups.items():
            own = key != pkey and len({s for _, _, s in pts}) >= MIN_CENTRE_SOURCES
            out[key] = Band(math.exp(c - half), math.exp(c + half), len(pts), tuple(sorted({s for _, _, s in pts})),
                            pooled=not own, half_width_log=half)
    return out


def loso_inside(samples: Sequence[tuple[Regime, float, str]]) -> list[tuple[str, Regime, bool]]:
    """Leave one source out: ``(source, regime, inside)`` for every sample that the bands derived from the other
    sources alone (centres and half-widths) give a band; a sample without one there is left out."""
    out: list[tuple[str, Regime, bool]] = []
    for src in sorted({s for _, _, s in samples}):
        derived = derive_bands([x for x in samples if x[2] != src])
        for reg, ratio, s in samples:
            if s == src:
                b = band_for(reg, derived)
                if b is not None:
                    out.append((s, reg, b.lo <= ratio <= b.hi))
    return out


def band_for(regime: Regime, bands: Mapping[str, Band] | None = None) -> Band | None:
    """The band of ``regime`` (its own, else the metric's pooled one for its device class), None when there is no
    data for the metric there."""
    bands = load_bands() if bands is None else bands
    return bands.get(regime.key) or bands.get(regime.pooled_key)


#: why an MoE model's roofline ceiling has no band: every run behind ROOFLINE_FRACTION_KEY is of a dense model
MOE_CEILING_NO_BAND = ("no band: the accuracy corpus has no MoE runs, so how far below an MoE model's ceiling (its "
                       "routed experts' read) runs land is not known; a measurement decides")


#: why a serving-model value of an MoE model on a GPU has no band: every GPU run of the corpus is of a dense model,
#: and the one public MoE run found lies outside the dense runs' band (docs/sources.md, "MoE decode")
MOE_SERVING_NO_BAND = ("no band: the accuracy corpus has one mixture-of-experts source, too few to bound the model's "
                       "error there (Mixtral-8x7B at TP 2 on H100s, vLLM 0.15.1: TPOT 11% above the measured (mean), "
                       "blis-training-h100; and one public run elsewhere, Qwen3-30B-A3B on an A100 at C = 1 with "
                       "128/128 tokens, measured TPOT 9.6 ms and TTFT 35.7 ms where the model says 6.04 ms: "
                       "github.com/tenstorrent/tt-inference-server/issues/340); a measurement or `roofline "
                       "calibrate` decides")


def roofline_fraction_band(bands: Mapping[str, Band] | None = None, *, moe: bool = False,
                           tp: int = 1) -> Band | None:
    """The share of the decode roofline's batch-1 step rate (1 ÷ the roofline's step at B = 1, weights, KV and
    all-reduces: what the benchmark divides measured TPOT into) measured low-load GPU runs reach (``lo``..``hi``,
    hi <= 1 by construction: the roofline is a ceiling); None without data, None for an MoE model (``moe``), whose
    ceiling none of those dense runs measured (:data:`MOE_CEILING_NO_BAND`), and None at a tensor-parallel degree
    above every run behind it (``tp`` > its ``tp_max``: :func:`ceiling_no_band_reason`)."""
    if moe:
        return None
    bands = load_bands() if bands is None else bands
    band = bands.get(ROOFLINE_FRACTION_KEY)
    if band is not None and band.tp_max is not None and tp > band.tp_max:
        return None
    return band


def ceiling_no_band_reason(*, moe: bool, tp: int, bands: Mapping[str, Band] | None = None) -> str:
    """Why :func:`roofline_fraction_band` gives no band for this setup (``""`` when it gives one)."""
    if moe:
        return MOE_CEILING_NO_BAND
    bands = load_bands() if bands is None else bands
    band = bands.get(ROOFLINE_FRACTION_KEY)
    if band is None:
        return "no band: no measured runs behind the ceiling's band (model/data/bands.json)"
    if band.tp_max is not None and tp > band.tp_max:
        return (f"no band: the {band.n} low-load runs behind the ceiling's band ran at tensor parallelism up to "
                f"{band.tp_max}, and at TP {tp} how far below the ceiling runs land (all-reduces and their "
                "synchronisation each step) is not known; a measurement decides")
    return ""


def bands_to_json(bands: Mapping[str, Band]) -> dict[str, dict[str, object]]:
    return {k: {"lo": round(b.lo, 4), "hi": round(b.hi, 4), "n": b.n, "sources": list(b.sources),
                "pooled": b.pooled, "half_width_log": round(b.half_width_log, 4),
                **({"tp_max": b.tp_max} if b.tp_max is not None else {})} for k, b in sorted(bands.items())}


def observed_ranges(samples: Sequence[tuple[Regime, float, str]],
                    banded: Mapping[str, Band] | None = None) -> dict[str, Band]:
    """For each metric and device class with data but no band (its scores too few: one source, or too few points
    from others), the range of ``measured / model`` its points showed (min..max), keyed by ``Regime.pooled_key``: not
    a band (nothing bounds a new source's error there), the evidence a value of that class is shown with instead.
    ``banded``: :func:`derive_bands` of the same samples, where the caller has it."""
    logs = _usable(samples)
    banded = derive_bands(samples) if banded is None else banded
    out: dict[str, Band] = {}
    for pkey in sorted({reg.pooled_key for reg, _, _ in logs} - set(banded)):
        pts = [(math.exp(x), src) for reg, x, src in logs if reg.pooled_key == pkey]
        xs = [x for x, _ in pts]
        out[pkey] = Band(min(xs), max(xs), len(xs), tuple(sorted({s for _, s in pts})), pooled=True)
    return out


#: what separates a :func:`band_note`'s reason from the range it gives (a reader that groups notes splits there)
NOTE_RANGE_SEP = "; there measured / model was "


def band_note(regime: Regime, ranges: Mapping[str, Band] | None = None) -> str | None:
    """What to show for a value of ``regime`` whose class has no band but has measured runs (:func:`observed_ranges`,
    committed in ``bands.json``'s ``unbanded``), None otherwise."""
    ranges = load_observed_ranges() if ranges is None else ranges
    r = ranges.get(regime.pooled_key)
    if r is None:
        return None
    what = {"gpu-prefill": "prefill-bound work on GPUs", "gpu": "decode-bound work on GPUs",
            "cpu": "the CPU engine"}[regime.device_class]
    return (f"no band: {what} has {r.n} measured value(s) from {len(r.sources)} public source(s) "
            f"({', '.join(r.sources)}), too few sources to bound a new one's error{NOTE_RANGE_SEP}"
            f"{r.lo:.2f}-{r.hi:.2f}")


#: how the bands are built, in one phrase (this module's docstring): ``roofline predict --simulate --json``'s
#: ``band_basis``
BAND_BASIS = ("split-conformal on the public accuracy corpus (benchmarks/data/corpus), coverage leave-one-source-out: "
              "docs/explanation/models.md")
#: what a band is, in one phrase, for every place that shows one (its coverage read from NOMINAL_COVERAGE)
BAND_MEANING = (f"where a run from a source the band was not built from lands, {NOMINAL_COVERAGE:.0%} nominal "
                "(docs/explanation/models.md)")


#: what a CPU-engine band does not say: its runs (cpu-tiny, cpu-kv-pressure, cpu-prefill-heavy, cpu-open-loop) were all
#: recorded on the project's own 2-core machine (docs/sources.md), so the band bounds that host, not another one
CPU_BAND_CAVEAT = ("CPU bands: derived from recordings on the project's own 2-core machine; another host's speed "
                   "differs: calibrate (`roofline calibrate`)")


def band_caveat(device: str) -> str | None:
    """The one-line caveat to show beside the bands of a setup on ``device`` (``Setup.device``), None if none."""
    return CPU_BAND_CAVEAT if str(device).lower() == "cpu" else None


def _load_doc() -> dict[str, object]:
    try:
        text = resources.files("pytest_roofline.model").joinpath("data/bands.json").read_text(encoding="utf-8")
    except (FileNotFoundError, OSError):
        return {}
    doc = json.loads(text)
    return doc if isinstance(doc, dict) else {}


def _bands_from_json(raw: Mapping[str, Mapping[str, object]]) -> dict[str, Band]:
    out: dict[str, Band] = {}
    for k, v in raw.items():
        srcs = v.get("sources", ())
        out[k] = Band(lo=float(str(v["lo"])), hi=float(str(v["hi"])), n=int(str(v["n"])),
                      sources=tuple(str(x) for x in srcs) if isinstance(srcs, (list, tuple)) else (),
                      pooled=bool(v.get("pooled", False)), half_width_log=float(str(v.get("half_width_log", 0.0))),
                      tp_max=int(str(v["tp_max"])) if v.get("tp_max") is not None else None)
    return out


@lru_cache(maxsize=1)
def load_bands() -> Mapping[str, Band]:
    """The committed bands (``model/data/bands.json``, written by ``benchmarks/model_accuracy.py --write-bands``);
    empty when the file is absent."""
    raw = _load_doc().get("bands", {})
    return _bands_from_json(raw) if isinstance(raw, dict) else {}


@lru_cache(maxsize=1)
def load_observed_ranges() -> Mapping[str, Band]:
    """The committed :func:`observed_ranges` (``bands.json``'s ``unbanded``); empty when there are none."""
    raw = _load_doc().get("unbanded", {})
    return _bands_from_json(raw) if isinstance(raw, dict) else {}
