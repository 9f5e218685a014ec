"""What one stored run is: the typed contract between the history store, drift, comparison and the trend page.

A *run* here is the part of one pytest session that shares one setup (hardware × model × engine version): a
nightly session over ``predictions/`` that holds files for two setups is stored as two runs. Each run keeps its
verdicts, its results files and its environment in full, and one compact :class:`RunSummary` (the index line):
the measured, predicted and model value of every prediction, which is all that drift and the trend page read.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal, Protocol, get_args

__all__ = [
    "SCHEMA", "SCHEMA_VERSION", "SetupKey", "StoredValue", "RunSummary", "RunRecord", "HistoryStore",
    "prediction_key", "clean_name", "NAME_LIMITS", "same_prediction", "unify_keys", "mend_error_keys", "StoredOutcome",
    "as_outcome", "measurement_id", "other_workload", "MEAN_LENGTH_SLACK",
    "OUTCOME_OF_PYTEST",
]

SCHEMA = "pytest-roofline/history-run"
SCHEMA_VERSION = 1

_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")
#: control characters (C0, DEL, C1) and the bidirectional overrides: never stored raw in a name
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
#: the longest text each name may hold, in characters (the database columns are as wide; every store gets the
#: same bounded name, so a directory history and a PostgreSQL one agree)
NAME_LIMITS = {"hardware": 160, "model": 160, "engine_version": 160, "label": 255, "branch": 255, "commit": 80}


def clean_name(text: str | None, limit: int) -> str | None:
    """A name as every store keeps it: control characters (NUL, ESC, the bidi overrides) replaced by ``?`` and
    at most ``limit`` characters; a longer one keeps its head and ends with ``~`` and 8 hex digits of its full
    text's SHA-256, so two long names that differ only in their tails stay two names."""
    if text is None:
        return None
    t = _CONTROL.sub("?", str(text))
    if len(t) <= limit:
        return t
    digest = hashlib.sha256(t.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return t[: limit - 9] + "~" + digest


def _slug(text: str) -> str:
    """A path- and URL-safe form of one key part (``Llama-3.1-8B/Instruct`` → ``Llama-3.1-8B_Instruct``)."""
    s = _UNSAFE.sub("_", text.strip()).strip("._") or "unknown"
    return s[:120]


@dataclass(frozen=True)
class SetupKey:
    """What makes two runs comparable: the same hardware (the detected variant id when a GPU was detected, else
    the declared one; ``cpu`` for the CPU build), model (its name) and engine version (``unknown`` when no source
    says)."""

    hardware: str
    model: str
    engine_version: str

    def parts(self) -> tuple[str, str, str]:
        """The three path-safe parts of the key, in the store's directory order."""
        return _slug(self.hardware), _slug(self.model), _slug(self.engine_version)

    def text(self) -> str:
        return f"{self.hardware} · {self.model} · vllm {self.engine_version}"


def prediction_key(file: str, prediction_id: str, at: Mapping[str, Any] | None) -> str:
    """The identity of one prediction's test across nights (within its run's :class:`SetupKey`): its file
    relative to the file's repository root (the git top level, else the file's own folder: see
    :func:`pytest_roofline.history.identity_file`; never pytest's rootdir, which moves with how an option is
    spelled), its id and its ``at:`` point, e.g. ``predictions/day3.yaml::tput-curve::concurrency=32``."""
    at_text = ",".join(f"{k}={at[k]}" for k in sorted(at)) if at else ""
    return f"{file}::{prediction_id}" + (f"::{at_text}" if at_text else "")


#: a stored verdict's status: scoring.VerdictStatus's values, or "" where a damaged or old entry has none
StoredStatus = Literal["pass", "fail", "skip", "error", "inconclusive", ""]
#: the outcome pytest reported for a prediction's test, as the terminal counted it: an expected miss (an ``xfail:``
#: prediction whose verdict is FAIL) is "xfail", not "fail", and an unexpected pass "xpass"; "" in a run stored
#: before outcomes were kept, whose pages show the verdict status instead
#: "drifted": the test failed because its value drifted (--roofline-drift-fail), not because its verdict did: the word
#: the terminal's table prints for it, so that every artefact names that night's status alike (trial 14n, D9)
StoredOutcome = Literal["pass", "fail", "xfail", "xpass", "skip", "error", "inconclusive", "drifted", ""]
#: pytest's outcome names (a report's, or the reports' own ``outcome_of_report``) → the stored outcome
OUTCOME_OF_PYTEST = {"passed": "pass", "failed": "fail", "xfailed": "xfail", "xpassed": "xpass",
                     "skipped": "skip", "error": "error", "inconclusive": "inconclusive", "drifted": "drifted"}
#: what a stored value was checked against: scoring.VerdictMode's values, or "" where unknown
StoredCheck = Literal["math", "measured", ""]
#: how a pytest run got its numbers: an engine it started (--gpu), a server it was pointed at (--endpoint), a
#: results file (--replay), or the math alone; "" in a store written before runs kept it
RunMode = Literal["engine", "endpoint", "replay", "math", ""]


def as_kind(value: object, kind: Any) -> Any:
    """``value`` as one of the ``Literal`` alias ``kind``'s values; anything else (a damaged or newer store's
    text) reads as "" rather than a value the type does not allow."""
    text = str(value or "")
    return text if text in get_args(kind) else ""


def as_outcome(value: object) -> StoredOutcome:
    """A pytest outcome (``xfailed``, or already stored: ``xfail``) as the store keeps it; "" for anything else."""
    text = str(value or "").strip()
    stored: StoredOutcome = as_kind(OUTCOME_OF_PYTEST.get(text, text), StoredOutcome)
    return stored


#: how far two runs' mean token lengths (a peer's file: tokens ÷ requests) may differ and still be one workload:
#: 2 %, and at least one token (the replay's own rule, measure.results.match)
MEAN_LENGTH_SLACK = 0.02
_MEAN_WORKLOAD = re.compile(r"^in ~([0-9.]+) / out ~([0-9.]+) tokens \(means\)$")


def other_workload(a: str | None, b: str | None) -> bool:
    """Whether two stored workloads (:attr:`StoredValue.workload`) are other workloads, where both are known: fixed
    lengths and shapes by their text; a peer's measured means (``in ~128 / out ~64 tokens (means)``) within
    :data:`MEAN_LENGTH_SLACK` are one workload (EOS-ended replies move the mean a little night to night)."""
    if not a or not b or a == b:
        return False
    ma, mb = _MEAN_WORKLOAD.match(a), _MEAN_WORKLOAD.match(b)
    if ma and mb:
        return any(abs(float(x) - float(y)) > max(1.0, MEAN_LENGTH_SLACK * float(y))
                   for x, y in zip(ma.groups(), mb.groups(), strict=True))
    return True


@dataclass(frozen=True)
class StoredValue:
    """One prediction's numbers in one run (SI units, as :class:`pytest_roofline.scoring.Verdict` holds them)."""

    key: str
    prediction_id: str
    file: str
    quantity: str
    dimension: str
    status: StoredStatus
    mode: StoredCheck
    at: dict[str, str] = field(default_factory=dict)
    unit: str = ""
    measured: float | None = None
    model: float | None = None
    predicted: float | None = None
    lo: float | None = None  # the predicted band (None: open on that side)
    hi: float | None = None
    predicted_text: str = ""
    measured_text: str = ""
    #: the YAML's own drift threshold for this prediction (``drift: 5%``), as written; "" when it gives none
    drift_text: str = ""
    #: the measured value's confidence interval (SI; None: unbounded on that side) and how it was computed
    #: (``Interval.method``; "" when the measurement has no interval: an exact count, or a run stored before
    #: intervals were kept)
    measured_lo: float | None = None
    measured_hi: float | None = None
    interval_method: str = ""
    interval_level: float | None = None
    #: SHA-256 (16 hex) of what the prediction says (quantity, at, ink, tolerance, band, drift, and its window
    #: where that is ``steady``): the same key with another hash means "the ink moved". "" marks a value stored
    #: under the old key scheme (file relative to pytest's rootdir), which :func:`unify_keys` matches to its
    #: current key on read
    definition_hash: str = ""
    #: the window its measured figure was read over where that is part of the figure's definition
    #: (``Verdict.window``: ``steady`` for ``window: steady`` on a client figure, else ``run``); "" for a math
    #: value; None in a run stored before it was kept (not known). Another window under the same key is another
    #: figure: drift calls it ``prediction changed``, never drift
    window: str | None = None
    #: a latency quantile's per-request values at its point (SI, sorted; at most history._samples.SAMPLE_LIMIT,
    #: evenly spaced order statistics of a larger point): what drift's rank test compares. () for a figure that is
    #: not one request's (a throughput), a verdict over several points, or a run stored before samples were kept
    samples: tuple[float, ...] = ()
    #: the ids of the closed-loop points behind the value that did not hold their concurrency (their ``concurrency
    #: not held`` flag, which the verdict's notes repeat: :mod:`pytest_roofline.measure.stats.held`): such a point
    #: measured a lower load than its ``at:`` says, so drift neither judges the value nor takes it as a baseline.
    #: () for a value whose points held it, an open loop, and a value stored before this was kept (read as held)
    unheld_points: tuple[str, ...] = ()
    #: the outcome pytest reported for the test (:data:`StoredOutcome`): what the terminal, the scorecard and
    #: pytest-html showed; "" in a run stored before it was kept
    outcome: StoredOutcome = ""
    #: the slowest host probe (GFLOP/s, :mod:`pytest_roofline.measure.probe`) of the points behind the value, just
    #: before or after their load: the machine at its worst while the value was measured, which drift compares with
    #: the other nights' (:mod:`pytest_roofline.history._machine`). None for a math value, a results file without
    #: probes (a peer's, an older one) and a run stored before probes were kept
    host_probe_gflop_per_s: float | None = None
    #: how the open-loop points behind the value spread their sends (``fixed`` or ``drawn``,
    #: model/workload.py ``ARRIVAL_SPANS``; ``mixed`` when they differ): part of what an open-loop figure means,
    #: which drift compares night to night (:func:`open_loop_span`). None for a value of closed-loop points or no
    #: points, a peer's file that does not say, and a run stored before this was kept
    arrival_span: str | None = None
    #: the workload the points behind the value ran (``in 128 / out 64 tokens``, and a digest of the workload's
    #: shape where it is more than fixed lengths: a dataset, distributions, a shared prefix): part of what a measured
    #: figure means, which drift compares night to night (trial s24 M6: a prompt five times longer read as "steady"
    #: or "drifted"). None for a math value, a peer's file (its lengths are the measured means, which move night to
    #: night), and a run stored before this was kept
    workload: str | None = None
    #: which model :attr:`model` is (``roofline``, ``serving``; "" in a run stored before this was kept), and the
    #: serving model's value with its band where the verdict had one (``roofline compare`` shows it beside the
    #: model's: trial s24 M7, where the model column was a roofline ceiling twice the measured throughput)
    model_source: str = ""
    serving: float | None = None
    serving_lo: float | None = None
    serving_hi: float | None = None

    def open_loop_span(self) -> str | None:
        """:attr:`arrival_span`, or ``drawn`` for a measured value at an open-loop point (``rate`` in its ``at:``)
        stored before spans were kept (every open-loop run before 2026-12-07 was sent on the drawn schedule);
        None where it is not known or not an open-loop figure."""
        if self.arrival_span:
            return self.arrival_span
        if self.mode == "measured" and self.measured is not None and "rate" in self.at:
            return "drawn"
        return None

    @property
    def shown(self) -> str:
        """What a page shows for this night: the pytest outcome (``xfail`` for an expected miss, ``xpass``), or
        the verdict status where the run did not store one (a store written before outcomes were kept)."""
        return self.outcome or self.status

    @property
    def held(self) -> bool:
        """Every point behind the value held its concurrency (or was not a closed loop, or the value was stored
        before this was kept)."""
        return not self.unheld_points

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["samples"] = list(self.samples)
        d["unheld_points"] = list(self.unheld_points)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> StoredValue:
        names = cls.__dataclass_fields__
        kw = {k: v for k, v in d.items() if k in names}
        if "samples" in kw:
            kw["samples"] = tuple(kw["samples"] or ())
        if "unheld_points" in kw:
            kw["unheld_points"] = tuple(str(x) for x in kw["unheld_points"] or ())
        if "outcome" in kw:
            kw["outcome"] = as_outcome(kw["outcome"])
        return cls(**kw)


@dataclass(frozen=True)
class RunSummary:
    """One run as the index lists it: enough to draw a trend and compute drift without opening the run."""

    run_id: str  # unique in a store: "<YYYYmmddTHHMMSSZ>-<commit or nocommit>-<6 hex>"
    setup: SetupKey
    started_at: str  # ISO-8601, UTC ("2026-12-01T02:00:00Z")
    mode: RunMode
    commit: str | None = None
    branch: str | None = None
    label: str | None = None  # e.g. the CI runner's GPU label or job name
    counts: dict[str, int] = field(default_factory=dict)  # verdict status → count
    values: tuple[StoredValue, ...] = ()
    #: where the run's files are inside the store (a directory store: the path relative to its root)
    location: str = ""
    #: pytest outcome (:data:`StoredOutcome`) → count, as the terminal counted them (``{"pass": 26, "xfail": 10}``
    #: where ``counts`` says ``{"pass": 26, "fail": 10}``); {} in a run stored before outcomes were kept
    outcomes: dict[str, int] = field(default_factory=dict)
    #: the :func:`measurement_id` of each results file the run holds: a replay of one of them is this run's
    #: measurement, whatever time the run was stored at (a live run at its session's start, the file at its
    #: ``created_at``); () in a run stored before they were kept
    measurements: tuple[str, ...] = ()
    #: the keys of the predictions its files held that the run did not check (left out by ``-k`` or ``-m``): the
    #: trend page says so rather than "not in the latest run of its file" (removed); () when it checked them all,
    #: or in a run stored before this was kept
    unchecked: tuple[str, ...] = ()
    #: the drift policy the night's own drift was judged under (``--roofline-drift``, ``--roofline-drift-baseline``):
    #: the trend page judges it the same way unless told otherwise (trial s24 M4); "" in a run stored before they
    #: were kept, or a run stored outside pytest
    drift_threshold: str = ""
    drift_baseline: str = ""

    @property
    def files(self) -> list[str]:
        """The prediction files the run checked (their paths as the history key holds them), in its order."""
        return list(dict.fromkeys(v.file for v in self.values))

    def value(self, key: str) -> StoredValue | None:
        for v in self.values:
            if v.key == key:
                return v
        return None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["values"] = [v.to_dict() for v in self.values]
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RunSummary:
        setup = d["setup"]
        return cls(run_id=str(d["run_id"]), setup=SetupKey(str(setup["hardware"]), str(setup["model"]),
                                                           str(setup["engine_version"])),
                   started_at=str(d["started_at"]), mode=as_kind(d.get("mode"), RunMode), commit=d.get("commit"),
                   branch=d.get("branch"), label=d.get("label"), counts=dict(d.get("counts") or {}),
                   values=tuple(StoredValue.from_dict(v) for v in d.get("values") or ()),
                   location=str(d.get("location") or ""), outcomes=dict(d.get("outcomes") or {}),
                   measurements=tuple(str(x) for x in d.get("measurements") or ()),
                   unchecked=tuple(str(x) for x in d.get("unchecked") or ()),
                   drift_threshold=str(d.get("drift_threshold") or ""),
                   drift_baseline=str(d.get("drift_baseline") or ""))


def measurement_id(results: Mapping[str, Any]) -> str:
    """One results file's identity, whoever reads it (the live run storing it, a replay of it days later): 16 hex
    digits of SHA-256 over its ``created_at`` and each point's id and start and end times. Not the file's bytes:
    ``updated_at`` and the status move as a run closes. A file that states no time (a peer's file without its
    date) adds each point's client figures, so two such runs of the same points are two measurements, not one."""
    created = str(results.get("created_at") or "")
    points = [[str(p.get(k)) for k in ("id", "started_at", "finished_at")]
              + ([] if created else [json.dumps(p.get("client"), sort_keys=True, default=str)])
              for p in results.get("points") or () if isinstance(p, Mapping)]
    doc = json.dumps({"created_at": created, "points": points}, sort_keys=True)
    return hashlib.sha256(doc.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _parts(file: str) -> tuple[str, ...]:
    return tuple(p for p in file.replace("\\", "/").split("/") if p not in ("", "."))


def _suffix_related(a: str, b: str) -> bool:
    """One path is the other's tail, by whole components (``work/predictions/x.yaml`` and
    ``predictions/x.yaml``; ``x.yaml`` and ``a/x.yaml``); never two different names."""
    pa, pb = _parts(a), _parts(b)
    if not pa or not pb:
        return False
    n = min(len(pa), len(pb))
    return pa[-n:] == pb[-n:]


def same_prediction(old: StoredValue, new: StoredValue) -> bool:
    """``old`` (a value stored under the old key scheme: no definition hash) is ``new``'s prediction: the same
    id and ``at:`` and a file path one of whose tails is the other (the old scheme keyed by the path under
    pytest's rootdir, which moved with the current directory and the option's spelling)."""
    return (old.prediction_id == new.prediction_id and dict(old.at) == dict(new.at)
            and _suffix_related(old.file, new.file))


def mend_error_keys(runs: Sequence[RunSummary], current: Sequence[StoredValue] = ()) -> list[RunSummary]:
    """``runs`` with each ERROR value stored without its ``at:`` (an engine that failed to start, stored before an
    errored verdict kept its point: ``tput[concurrency=2]`` keyed as ``nightly.yaml::tput[concurrency=2]``) re-keyed
    to its prediction's key, the one value of the same file and id that has an ``at:`` (among ``current`` and the
    runs of the same setup), so a failed night is an ERROR point of its prediction's own series, not a row of its
    own. Left as it is when nothing, or more than one key, matches."""
    def has_point(v: StoredValue) -> bool:
        return bool(v.at)

    targets: dict[tuple[SetupKey | None, str, str], set[tuple[str, tuple[tuple[str, str], ...]]]] = {}
    for v in current:
        if has_point(v):
            targets.setdefault((None, v.file, v.prediction_id), set()).add((v.key, tuple(sorted(v.at.items()))))
    for r in runs:
        for v in r.values:
            if has_point(v):
                targets.setdefault((r.setup, v.file, v.prediction_id), set()).add((v.key, tuple(sorted(v.at.items()))))
    if not any(v.status == "error" and not v.at for r in runs for v in r.values):
        return list(runs)
    out = []
    for r in runs:
        values = []
        changed = False
        for v in r.values:
            if v.status == "error" and not v.at:
                hits = (targets.get((r.setup, v.file, v.prediction_id), set())
                        | targets.get((None, v.file, v.prediction_id), set()))
                if len(hits) == 1:
                    ((key, at),) = hits
                    v = replace(v, key=key, at=dict(at))
                    changed = True
            values.append(v)
        out.append(replace(r, values=tuple(values)) if changed else r)
    return out


def unify_keys(runs: Sequence[RunSummary], current: Sequence[StoredValue] = ()) -> list[RunSummary]:
    """``runs`` with each old-scheme value (no definition hash) re-keyed to the current-scheme key of the same
    prediction on the same setup — found among ``current`` (this run's values) and the runs' own current-scheme
    values — when exactly one matches (:func:`same_prediction`); the reading side of the key migration: a store
    written before keeps comparing. Old-scheme values of one prediction under different rootdir paths become
    one series this way, and stay as they are when nothing (or more than one thing) matches. ERROR values stored
    without their ``at:`` join their prediction's series first (:func:`mend_error_keys`)."""
    runs = mend_error_keys(runs, current)
    by_setup: dict[SetupKey | None, dict[str, StoredValue]] = {}
    for v in current:
        by_setup.setdefault(None, {})[v.key] = v
    for r in runs:
        for v in r.values:
            if v.definition_hash:
                by_setup.setdefault(r.setup, {})[v.key] = v
    if not any(not v.definition_hash for r in runs for v in r.values):
        return list(runs)
    out = []
    for r in runs:
        targets = {**by_setup.get(None, {}), **by_setup.get(r.setup, {})}
        by_id: dict[str, list[StoredValue]] = {}
        for t in targets.values():
            by_id.setdefault(t.prediction_id, []).append(t)
        values = []
        changed = False
        for v in r.values:
            if not v.definition_hash and v.key not in targets:
                hits = [t for t in by_id.get(v.prediction_id, ()) if same_prediction(v, t)]
                if len(hits) == 1:
                    v = replace(v, key=hits[0].key, file=hits[0].file)
                    changed = True
            values.append(v)
        out.append(replace(r, values=tuple(values)) if changed else r)
    return out


@dataclass(frozen=True)
class RunRecord:
    """A run in full: its summary plus what the scorecard of that night was drawn from."""

    summary: RunSummary
    verdicts: tuple[dict[str, Any], ...] = ()  # Verdict.to_dict() of every prediction in the run
    results: tuple[dict[str, Any], ...] = ()  # the results files' contents (measure.results)
    environment: dict[str, str] = field(default_factory=dict)  # report.environment's facts


class HistoryStore(Protocol):
    """Where runs are kept. ``add`` never overwrites (``add_values`` only adds the values a run lacks); ``runs``
    reads the index only (fast: hundreds of nights in well under a second); ``load`` opens one run in full."""

    @property
    def uri(self) -> str: ...

    def add(self, record: RunRecord) -> RunSummary: ...

    def add_values(self, run_id: str, record: RunRecord) -> tuple[RunSummary, int, int]:
        """Add to stored run ``run_id`` the values of ``record`` (a replay of its measurement) that it lacks, never
        replacing one it holds: (its summary now, values added, values it held); all or nothing."""
        ...

    def runs(self, setup: SetupKey | None = None) -> Sequence[RunSummary]:
        """Every stored run (of ``setup`` when given), oldest first."""
        ...

    def load(self, run_id: str) -> RunRecord: ...

    def close(self) -> None: ...


def sort_time(started_at: str) -> str:
    """A start time in one comparable form (UTC, ``YYYYmmddTHHMMSSZ``); an unparseable one as written."""
    try:
        t = datetime.fromisoformat(started_at.replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        return str(started_at)
    t = t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)
    return t.strftime("%Y%m%dT%H%M%S.%fZ")
