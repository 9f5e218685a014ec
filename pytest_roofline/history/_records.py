"""What one stored run is: the typed contract between the history store, drift, comparison and the trend page.

A *run* here is the part of one pytest session that shares one setup (hardware × model × engine version): a
nightly session over ``predictions/`` that holds files for two setups is stored as two runs. Each run keeps its
verdicts, its results files and its environment in full, and one compact :class:`RunSummary` (the index line):
the measured, predicted and model value of every prediction, which is all that drift and the trend page read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

__all__ = [
    "SCHEMA", "SCHEMA_VERSION", "SetupKey", "StoredValue", "RunSummary", "RunRecord", "HistoryStore",
    "prediction_key",
]

SCHEMA = "pytest-roofline/history-run"
SCHEMA_VERSION = 1

_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")


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
    """The identity of one prediction's test across nights: its file (relative to the project root, so runners
    with different checkout paths agree), its id and its ``at:`` point, e.g.
    ``predictions/day3.yaml::tput-curve::concurrency=32``."""
    at_text = ",".join(f"{k}={at[k]}" for k in sorted(at)) if at else ""
    return f"{file}::{prediction_id}" + (f"::{at_text}" if at_text else "")


@dataclass(frozen=True)
class StoredValue:
    """One prediction's numbers in one run (SI units, as :class:`pytest_roofline.scoring.Verdict` holds them)."""

    key: str
    prediction_id: str
    file: str
    quantity: str
    dimension: str
    status: str  # the verdict's status: pass | fail | skip | error
    mode: str  # math | measured
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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> StoredValue:
        names = cls.__dataclass_fields__
        return cls(**{k: v for k, v in d.items() if k in names})


@dataclass(frozen=True)
class RunSummary:
    """One run as the index lists it: enough to draw a trend and compute drift without opening the run."""

    run_id: str  # unique in a store: "<YYYYmmddTHHMMSSZ>-<commit or nocommit>-<6 hex>"
    setup: SetupKey
    started_at: str  # ISO-8601, UTC ("2026-12-01T02:00:00Z")
    mode: str  # engine | endpoint | replay | math
    commit: str | None = None
    branch: str | None = None
    label: str | None = None  # e.g. the CI runner's GPU label or job name
    counts: dict[str, int] = field(default_factory=dict)  # verdict status → count
    values: tuple[StoredValue, ...] = ()
    #: where the run's files are inside the store (a directory store: the path relative to its root)
    location: str = ""

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
                   started_at=str(d["started_at"]), mode=str(d.get("mode") or ""), commit=d.get("commit"),
                   branch=d.get("branch"), label=d.get("label"), counts=dict(d.get("counts") or {}),
                   values=tuple(StoredValue.from_dict(v) for v in d.get("values") or ()),
                   location=str(d.get("location") or ""))


@dataclass(frozen=True)
class RunRecord:
    """A run in full: its summary plus what the scorecard of that night was drawn from."""

    summary: RunSummary
    verdicts: tuple[dict[str, Any], ...] = ()  # Verdict.to_dict() of every prediction in the run
    results: tuple[dict[str, Any], ...] = ()  # the results files' contents (measure.results)
    environment: dict[str, str] = field(default_factory=dict)  # report.environment's facts


class HistoryStore(Protocol):
    """Where runs are kept. ``add`` never overwrites; ``runs`` reads the index only (fast: hundreds of nights in
    well under a second); ``load`` opens one run in full."""

    @property
    def uri(self) -> str: ...

    def add(self, record: RunRecord) -> RunSummary: ...

    def runs(self, setup: SetupKey | None = None) -> Sequence[RunSummary]:
        """Every stored run (of ``setup`` when given), oldest first."""
        ...

    def load(self, run_id: str) -> RunRecord: ...

    def close(self) -> None: ...
