"""Runs over time: a store of past runs (a directory by default, a database by URI), drift and comparison.

:func:`open_store` turns a ``--roofline-history`` value into a :class:`HistoryStore`:

- a plain path or ``file://...`` → :class:`DirectoryStore` (plain JSON files; the default);
- ``sqlite:///path.db``, ``postgresql+psycopg://user@host:port/db``, ``mysql+pymysql://...`` → :class:`SqlStore`
  (SQLAlchemy Core, imported only then; ``pip install 'pytest-roofline[history]'``);
- anything else (``s3://``, ``gs://``, ``http://``) is refused with a :class:`~pytest_roofline.errors.HistoryError`
  that says what is supported: object stores offer neither an atomic append nor, portably, a conditional write,
  which an index several runners add to at once needs. Keep a directory and sync it to the bucket instead.

Credentials in a URI never reach a message: every one is passed through :func:`pytest_roofline.redact.redact_url`.
"""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path
from urllib.parse import unquote, urlsplit

from pytest_roofline.errors import HistoryError, HistoryIndexRebuiltWarning
from pytest_roofline.history._compare import (
    ComparisonRow,
    compare_runs,
    comparison_json,
    earlier_nights,
    measured_in_both,
    render_comparison,
    render_run_list,
    run_list_json,
)
from pytest_roofline.history._drift import (
    COMPARED,
    DEFAULT_BASELINE,
    DEFAULT_DRIFT,
    DEFAULT_MIN_COMPARED,
    MIN_NIGHTS,
    SPREAD_RUNS,
    Drift,
    DriftPolicy,
    DriftStatus,
    Move,
    changed_badge,
    compared_count,
    distinguishable,
    drift_counts,
    drift_for,
    earlier_runs,
    judge_move,
    machine_count,
    night_machine,
    night_probe,
    not_judged_count,
    parse_baseline,
    parse_share,
    pinned_run,
    runs_drift_reads,
)
from pytest_roofline.history._machine import (
    MACHINE_SHIFT,
    machine_apart,
    machine_moved,
    reference_probe,
    value_probe,
)
from pytest_roofline.history._recording import (
    build_records,
    clean_setup,
    definition_hash,
    file_prediction_keys,
    identity_file,
    relative_file,
    repository_root,
    results_for_file,
    setup_key,
    spec_setup_key,
    stored_value,
    value_arrival_span,
    value_workload,
    verdict_key,
)
from pytest_roofline.history._records import (
    SCHEMA,
    SCHEMA_VERSION,
    HistoryStore,
    RunMode,
    RunRecord,
    RunSummary,
    SetupKey,
    StoredCheck,
    StoredStatus,
    StoredValue,
    clean_name,
    measurement_id,
    other_workload,
    prediction_key,
    same_prediction,
    unify_keys,
)
from pytest_roofline.history._samples import point_samples
from pytest_roofline.history._sql import SqlStore
from pytest_roofline.history._store import DirectoryStore, new_run_id, read_run_dir
from pytest_roofline.redact import redact_text, redact_url

__all__ = [
    "SCHEMA", "SCHEMA_VERSION", "SetupKey", "StoredValue", "StoredStatus", "StoredCheck", "RunMode",
    "RunSummary", "RunRecord", "HistoryStore",
    "prediction_key", "HistoryError", "HistoryIndexRebuiltWarning",
    "DirectoryStore", "SqlStore", "open_store", "new_run_id", "read_run_dir", "SQL_SCHEMES",
    # drift, comparison and recording (H2)
    "DEFAULT_DRIFT", "DEFAULT_BASELINE", "DriftPolicy", "DriftStatus", "Drift", "drift_for", "drift_counts",
    "parse_baseline", "ComparisonRow", "compare_runs", "earlier_nights", "render_comparison", "comparison_json",
    "build_records",
    "setup_key", "spec_setup_key", "relative_file", "stored_value",
    # identity, significance, bounded names (issue 21)
    "identity_file", "definition_hash", "unify_keys", "same_prediction", "clean_name", "clean_setup",
    "distinguishable", "pinned_run", "changed_badge", "compared_count", "not_judged_count", "COMPARED", "parse_share",
    "DEFAULT_MIN_COMPARED", "open_store_quietly", "render_run_list", "run_list_json", "measured_in_both",
    "measurement_id", "file_prediction_keys", "judge_move", "Move", "earlier_runs", "runs_drift_reads",
    # a checkout's top level and a verdict's key, for the pytest plugin (s16 review L4)
    "repository_root", "results_for_file", "verdict_key",
    # the host probe: a night whose machine ran apart (issue 21, 2026-12-07)
    "MACHINE_SHIFT", "machine_count", "value_probe", "value_arrival_span", "value_workload", "other_workload",
    # the machine rule's reference and decision, for the trend page's marks (issue 21 leftover, T2)
    "night_machine", "night_probe", "machine_apart", "machine_moved", "reference_probe", "SPREAD_RUNS",
    "MIN_NIGHTS",
    # tonight's value as the store keeps it, for drift at test time (the rank test's samples)
    "point_samples",
]

#: the URI schemes (before any ``+driver``) that open a database store
SQL_SCHEMES = ("sqlite", "postgresql", "postgres", "mysql", "mariadb")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):")


def open_store(uri: str | os.PathLike[str], *, create: bool = True) -> HistoryStore:
    """The history store ``uri`` names: a directory (a path or ``file://``) or a database (an SQLAlchemy URL).

    Raises :class:`HistoryError` for a scheme that is not supported, a missing driver (naming what to install)
    or a database that cannot be reached; the URI in every message has its credentials redacted."""
    if isinstance(uri, os.PathLike):
        return DirectoryStore(Path(uri), create=create)
    text = str(uri).strip()
    if not text:
        raise HistoryError("an empty history URI: give a directory, file://..., sqlite:///x.db or postgresql+psycopg://...")
    m = _SCHEME.match(text)
    if m is None:  # a plain path (a one-letter "scheme" is a Windows drive: a path too)
        return DirectoryStore(Path(text), create=create)
    scheme = m.group(1).lower()
    if scheme == "file":
        parts = urlsplit(text)
        if parts.netloc not in ("", "localhost"):
            raise HistoryError(f"{redact_url(text)}: a file:// URI names a path on this machine "
                               "(file:///abs/path or file://localhost/abs/path), not on a host")
        return DirectoryStore(Path(unquote(parts.path)), create=create)
    if scheme.split("+", 1)[0] in SQL_SCHEMES:
        return SqlStore(text, create=create)  # imports SQLAlchemy only now; says what to install when missing
    raise HistoryError(
        f"{redact_url(text)}: history storage {scheme}:// is not supported. Use a directory (a path or file://...; "
        "the default: plain JSON files that git and CI artefacts keep) or a database by SQLAlchemy URL "
        "(sqlite:///history.db, postgresql+psycopg://<user>@host:5432/db). Object stores (s3://, gs://, az://) are "
        "not supported on purpose: several runners append to one index at once, which needs an atomic append or a "
        "transaction, and object stores offer neither append nor, portably, a conditional write. Keep the history "
        "in a directory and sync that directory with the bucket (aws s3 sync, gsutil rsync) before and after the "
        "run, or point several runners at one database.")


def open_store_quietly(uri: str) -> tuple[HistoryStore, list[RunSummary], list[str]]:
    """:func:`open_store` and its index, with what the store had to say (a damaged index it rebuilt) as plain
    ``roofline history: ...`` lines for the terminal instead of Python warnings carrying the package's source
    line; any other warning goes on as it came."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", HistoryIndexRebuiltWarning)
        store = open_store(uri)
        runs = list(store.runs())
    notes = []
    for w in caught:
        if issubclass(w.category, HistoryIndexRebuiltWarning):
            notes.append(f"roofline history: {redact_text(str(w.message))}")
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return store, runs, notes
