"""How wrong the serving model is, by regime: the interval (band) around each of its values.

A band is the range of ``measured / model`` ratios the model showed on public measured runs of the same regime
(``benchmarks/model_accuracy.py`` derives it from the accuracy corpus under ``benchmarks/data/corpus/`` and the
project's recordings, and writes ``model/data/bands.json``; docs/explanation/models.md has the table and the
leave-one-source-out coverage).  A regime is the metric, the load (the mean running batch: ``low`` <= 16 <
``high``), the TP degree (``tp1`` / ``tpN``) and the engine (``v0``: whole prefills, ``v1``: chunked prefill;
``cpu`` for the CPU pseudo-device).  A regime without data borrows the metric's pooled band over the regimes of
its device class (GPUs, or the CPU engine), marked ``pooled``; a metric without any data there has no band (None),
never a made-up one.

The band's nominal coverage is :data:`NOMINAL_COVERAGE` (the ratios' 10th to 90th percentile); with fewer than
:data:`MIN_POINTS` ratios in a regime the band is their min-max, widened by the spread of the pooled band.

Sources disagree: a run on a GPU, model and vLLM release the corpus has never seen is off by its own source's bias as
well as by the scatter within a source.  So every band of a metric and device class is widened by the spread
*between* sources (:func:`between_source_log_sd`: the standard deviation of the sources' median log-ratios, each
source counted once): in log space the band keeps its centre and its half-width becomes
``sqrt(h_within**2 + (z * sd_between)**2)``, ``z`` the normal quantile of the nominal coverage (1.28 for 80%): the
two variance components add, as in a random-effects model.  A metric measured by one source only cannot show that
source's bias: it borrows the between-source spread of the metric the same mechanism sets (TPOT and throughput: the
decode step; :data:`DECODE_SIBLING`), else the largest of its device class's other metrics (no device class lends to
the other); with one source in the whole class the band is unchanged.

How far to widen is itself chosen on data it is not judged on (:func:`choose_between_scale`): the ``z * sd_between``
term is multiplied by the smallest ``between_scale`` of :data:`BETWEEN_SCALES` whose leave-one-source-out coverage
(:func:`loso_inside`) over the sources at hand reaches the nominal rate, for each metric and device class.  The
committed bands use the scale chosen on every source (capped at the last of :data:`BETWEEN_SCALES` where none
reaches it); the coverage the project states is *nested*: each held-out source is judged by bands whose scale was
chosen on the other sources alone (:func:`nested_loso_inside`), never on the held-out source itself.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from statistics import NormalDist, median, stdev
from typing import Literal

__all__ = ["Band", "BAND_METRICS", "ROOFLINE_CEILINGS", "ROOFLINE_FRACTION_KEY", "roofline_fraction_band",
           "NOMINAL_COVERAGE", "MIN_POINTS", "Regime", "regime_of", "band_for", "derive_bands", "load_bands",
           "ratio_quantile", "between_source_log_sd", "BETWEEN_SCALES", "loso_inside", "choose_between_scale",
           "nested_loso_inside"]

#: the PointPrediction metrics that carry a band
BAND_METRICS: tuple[str, ...] = ("output_throughput_tok_per_s", "tpot_p50_ms", "ttft_p50_ms")
#: roofline quantities whose value is a physical ceiling on what a run can measure (tokens/s at batch 1): the CPU-only
#: math check passes realistic ink between the share of the ceiling measured runs reach and the ceiling itself
ROOFLINE_CEILINGS: frozenset[str] = frozenset({"batch1_throughput", "batch1_ceiling"})
#: the key of that share in bands.json: measured / roofline at low load (mean running batch <= 16) on GPUs
ROOFLINE_FRACTION_KEY = "roofline_fraction|low|gpu"
#: the band spans the 10th-90th percentile of measured / model
NOMINAL_COVERAGE = 0.80
#: below this many ratios a regime's band is its min-max (widened), not percentiles
MIN_POINTS = 5
#: metrics set by the same mechanism (the decode step), whose between-source spread a one-source metric borrows
DECODE_SIBLING = {"tpot_p50_ms": "output_throughput_tok_per_s", "output_throughput_tok_per_s": "tpot_p50_ms"}
#: the multipliers of the between-source term tried, smallest first (1: the random-effects 80% quantile alone); the
#: largest is a cap, so that a source unlike every other cannot make every band useless
BETWEEN_SCALES: tuple[float, ...] = tuple(round(1.0 + 0.1 * i, 1) for i in range(21))
#: the load classes' boundary, in mean running sequences
LOW_LOAD_MAX_BATCH = 16.0

Load = Literal["low", "high"]
Engine = Literal["v0", "v1", "cpu"]


@dataclass(frozen=True)
class Regime:
    metric: str
    load: Load
    tp: Literal["tp1", "tpN"]
    engine: Engine

    @property
    def key(self) -> str:
        return f"{self.metric}|{self.load}|{self.tp}|{self.engine}"

    @property
    def pooled_key(self) -> str:
        """The key of the metric's band pooled over the regimes of this device class."""
        return f"{self.metric}|*|{'cpu' if self.engine == 'cpu' else 'gpu'}"


@dataclass(frozen=True)
class Band:
    """``measured / model`` between ``lo`` and ``hi`` at the nominal coverage, from ``n`` ratios of ``sources``;
    ``pooled``: borrowed from the metric's pooled data (the regime had none)."""

    lo: float
    hi: float
    n: int
    sources: tuple[str, ...] = ()
    pooled: bool = False
    #: the between-source spread (sd of the sources' median log-ratios) the band was widened by; 0 for one source
    between_log_sd: float = 0.0

    def around(self, value: float) -> tuple[float, float]:
        """The interval around a model value (ordered, whatever the value's sign)."""
        a, b = value * self.lo, value * self.hi
        return (a, b) if a <= b else (b, a)

    def contains(self, model_value: float, measured: float) -> bool:
        lo, hi = self.around(model_value)
        return lo <= measured <= hi


def regime_of(metric: str, *, mean_running_batch: float, tp: int, chunked_prefill: bool, device: str) -> Regime:
    load: Load = "low" if mean_running_batch <= LOW_LOAD_MAX_BATCH else "high"
    engine: Engine = "cpu" if device == "cpu" else ("v1" if chunked_prefill else "v0")
    return Regime(metric, load, "tp1" if int(tp) <= 1 else "tpN", engine)


def ratio_quantile(ratios: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``ratios`` by linear interpolation."""
    xs = sorted(ratios)
    if not xs:
        raise ValueError("no ratios")
    pos = q * (len(xs) - 1)
    i = int(math.floor(pos))
    j = min(i + 1, len(xs) - 1)
    return xs[i] + (xs[j] - xs[i]) * (pos - i)


def _band(ratios: Sequence[float], sources: Sequence[str], pooled_spread: float = 0.0) -> Band:
    tail = (1.0 - NOMINAL_COVERAGE) / 2.0
    if len(ratios) >= MIN_POINTS:
        lo, hi = ratio_quantile(ratios, tail), ratio_quantile(ratios, 1.0 - tail)
    else:  # too few for percentiles: the min-max, widened by half the pooled band's log-width each way
        lo, hi = min(ratios) * math.exp(-pooled_spread / 2), max(ratios) * math.exp(pooled_spread / 2)
    return Band(lo=lo, hi=hi, n=len(ratios), sources=tuple(sorted(set(sources))))


def between_source_log_sd(ratios: Sequence[tuple[float, str]]) -> float:
    """The spread between sources of ``(measured / model, source)`` ratios: the sample standard deviation of each
    source's median log-ratio (every source counts once, however many points it has); 0 with fewer than two
    sources."""
    by_source: dict[str, list[float]] = {}
    for ratio, src in ratios:
        if ratio > 0 and math.isfinite(ratio):
            by_source.setdefault(src, []).append(math.log(ratio))
    medians = [median(v) for v in by_source.values()]
    return stdev(medians) if len(medians) >= 2 else 0.0


def _widened(b: Band, sd_between: float, between_scale: float = 1.0) -> Band:
    """``b`` with the between-source spread added in quadrature to its log half-width, around its log centre."""
    if sd_between <= 0 or not (b.lo > 0 and b.hi > 0):
        return b
    z = NormalDist().inv_cdf(0.5 + NOMINAL_COVERAGE / 2) * between_scale
    centre, half = (math.log(b.lo) + math.log(b.hi)) / 2, (math.log(b.hi) - math.log(b.lo)) / 2
    half = math.hypot(half, z * sd_between)
    return Band(math.exp(centre - half), math.exp(centre + half), b.n, b.sources, b.pooled, sd_between)


def derive_bands(samples: Sequence[tuple[Regime, float, str]], *, between_sources: bool = True,
                 between_scale: float | Mapping[str, float] = 1.0) -> dict[str, Band]:
    """Bands from ``(regime, measured / model, source)`` samples: one per regime with data, plus a pooled one per
    metric and device class (``Regime.pooled_key``); with ``between_sources`` each is widened by its metric and
    device class's spread between sources, ``between_scale`` times the nominal quantile (one number, or one per
    pooled key ``metric|*|gpu``, 1 where a key is missing; the module's docstring)."""
    by_metric: dict[str, list[tuple[float, str]]] = {}
    by_regime: dict[str, list[tuple[float, str]]] = {}
    for reg, ratio, src in samples:
        if not (ratio > 0 and math.isfinite(ratio)):
            continue
        by_metric.setdefault(reg.pooled_key, []).append((ratio, src))
        by_regime.setdefault(reg.key, []).append((ratio, src))
    out: dict[str, Band] = {}
    spread: dict[str, float] = {}
    for pkey, rs in by_metric.items():
        b = _band([r for r, _ in rs], [s for _, s in rs])
        out[pkey] = Band(b.lo, b.hi, b.n, b.sources, pooled=True)
        spread[pkey] = math.log(b.hi / b.lo) if b.lo > 0 else 0.0
    for key, rs in by_regime.items():
        metric, _load, _tp, engine = key.split("|")
        pkey = f"{metric}|*|{'cpu' if engine == 'cpu' else 'gpu'}"
        out[key] = _band([r for r, _ in rs], [s for _, s in rs], spread.get(pkey, 0.0))
    if between_sources:
        sd = {pkey: between_source_log_sd(rs) for pkey, rs in by_metric.items()}
        for pkey, rs in by_metric.items():
            if len({src for _, src in rs}) < 2:
                # one source cannot show its own bias: borrow the spread of the metric set by the same mechanism
                # (throughput and TPOT: the decode step), else the largest of the device class's other metrics
                metric, _, cls = pkey.split("|")
                sibling = f"{DECODE_SIBLING.get(metric, '')}|*|{cls}"
                if sibling in by_metric and len({src for _, src in by_metric[sibling]}) >= 2:
                    sd[pkey] = sd[sibling]
                else:
                    sd[pkey] = max((v for k, v in sd.items() if k.split("|")[2] == cls), default=0.0)
        for key, b in list(out.items()):
            parts = key.split("|")  # a regime's metric|load|tp|engine, or a pool's metric|*|gpu or cpu
            pkey = key if parts[1] == "*" else f"{parts[0]}|*|{'cpu' if parts[3] == 'cpu' else 'gpu'}"
            k = between_scale if isinstance(between_scale, (int, float)) else between_scale.get(pkey, 1.0)
            out[key] = _widened(b, sd.get(pkey, 0.0), float(k))
    return out


def loso_inside(samples: Sequence[tuple[Regime, float, str]], *, between_sources: bool = True,
                between_scale: float | Mapping[str, float] = 1.0) -> list[tuple[str, Regime, bool]]:
    """Leave one source out: ``(source, regime, inside)`` for every sample that the bands derived from the other
    sources give a band (a regime with no band there is left out)."""
    out: list[tuple[str, Regime, bool]] = []
    for src in sorted({s for _, _, s in samples}):
        derived = derive_bands([x for x in samples if x[2] != src], between_sources=between_sources,
                               between_scale=between_scale)
        for reg, ratio, s in samples:
            if s == src:
                b = band_for(reg, derived)
                if b is not None:
                    out.append((s, reg, b.lo <= ratio <= b.hi))
    return out


def choose_between_scale(samples: Sequence[tuple[Regime, float, str]],
                         scales: Sequence[float] = BETWEEN_SCALES) -> dict[str, float]:
    """Per metric and device class (``Regime.pooled_key``): the smallest of ``scales`` whose leave-one-source-out
    coverage of that metric's samples reaches :data:`NOMINAL_COVERAGE`; the largest when none does (then its bands
    are knowingly short of it).  A metric's coverage depends on its own scale only (a one-source metric borrows its
    sibling's *spread*, not its scale), so each is chosen alone; one scale for all would let a metric whose sources
    disagree (TTFT) be widened to cover another's bias."""
    keys = sorted({reg.pooled_key for reg, _, _ in samples})
    out: dict[str, float] = {}
    pending = set(keys)
    for k in scales:
        if not pending:
            break
        got: dict[str, list[bool]] = {}
        for _, reg, inside in loso_inside(samples, between_scale=k):
            got.setdefault(reg.pooled_key, []).append(inside)
        for key in sorted(pending):
            xs = got.get(key, [])
            if xs and sum(xs) / len(xs) >= NOMINAL_COVERAGE:
                out[key] = k
                pending.discard(key)
    for key in pending:
        out[key] = scales[-1]
    return out


def nested_loso_inside(samples: Sequence[tuple[Regime, float, str]], scales: Sequence[float] = BETWEEN_SCALES
                       ) -> tuple[list[tuple[str, Regime, bool]], dict[str, dict[str, float]]]:
    """Coverage on data not used to derive the band *or its width*: each source is judged by bands derived from the
    other sources with the scale :func:`choose_between_scale` picks on those other sources alone.  Returns the
    ``(source, regime, inside)`` list and the scales each held-out source was judged with."""
    out: list[tuple[str, Regime, bool]] = []
    chosen: dict[str, dict[str, float]] = {}
    for src in sorted({s for _, _, s in samples}):
        rest = [x for x in samples if x[2] != src]
        k = chosen[src] = choose_between_scale(rest, scales)
        derived = derive_bands(rest, between_scale=k)
        for reg, ratio, s in samples:
            if s == src:
                b = band_for(reg, derived)
                if b is not None:
                    out.append((s, reg, b.lo <= ratio <= b.hi))
    return out, chosen


def band_for(regime: Regime, bands: Mapping[str, Band] | None = None) -> Band | None:
    """The band of ``regime`` (its own, else the metric's pooled one for its device class), None when there is no
    data for the metric there."""
    bands = load_bands() if bands is None else bands
    return bands.get(regime.key) or bands.get(regime.pooled_key)


def roofline_fraction_band(bands: Mapping[str, Band] | None = None) -> Band | None:
    """The share of the decode roofline's throughput measured low-load GPU runs reach (``lo``..``hi``, hi <= 1 by
    construction: the roofline is a ceiling), None without data."""
    bands = load_bands() if bands is None else bands
    return bands.get(ROOFLINE_FRACTION_KEY)


def bands_to_json(bands: Mapping[str, Band]) -> dict[str, dict[str, object]]:
    return {k: {"lo": round(b.lo, 4), "hi": round(b.hi, 4), "n": b.n, "sources": list(b.sources),
                "pooled": b.pooled, "between_log_sd": round(b.between_log_sd, 4)} for k, b in sorted(bands.items())}


@lru_cache(maxsize=1)
def load_bands() -> Mapping[str, Band]:
    """The committed bands (``model/data/bands.json``, written by ``benchmarks/model_accuracy.py --write-bands``);
    empty when the file is absent."""
    try:
        text = resources.files("pytest_roofline.model").joinpath("data/bands.json").read_text(encoding="utf-8")
    except (FileNotFoundError, OSError):
        return {}
    raw = json.loads(text).get("bands", {})
    return {k: Band(lo=float(v["lo"]), hi=float(v["hi"]), n=int(v["n"]), sources=tuple(v.get("sources", ())),
                    pooled=bool(v.get("pooled", False)), between_log_sd=float(v.get("between_log_sd", 0.0)))
            for k, v in raw.items()}
