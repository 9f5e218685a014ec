"""A session's verdicts, results and environment → the :class:`RunRecord` s a store keeps (one per setup).

Pure: the plugin gathers the verdict dicts, the results dicts, the environment facts, the commit and the label,
and this module groups them by :class:`SetupKey` and builds the records. :func:`setup_key` is the one function
that says which setup a prediction file ran on; the plugin uses it both to store a run and to pick the runs
drift compares with, so the two cannot disagree.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_roofline.format.spec import Spec
from pytest_roofline.history._machine import value_probe
from pytest_roofline.history._records import (
    NAME_LIMITS,
    RunMode,
    RunRecord,
    RunSummary,
    SetupKey,
    StoredCheck,
    StoredStatus,
    StoredValue,
    as_kind,
    as_outcome,
    clean_name,
    measurement_id,
    prediction_key,
)
from pytest_roofline.history._samples import point_samples
from pytest_roofline.measure.results.match import recorded_span
from pytest_roofline.measure.stats import unheld_points
from pytest_roofline.scoring import Verdict

__all__ = ["setup_key", "spec_setup_key", "topology_suffix", "identity_file", "relative_file", "definition_hash",
           "stored_value", "value_arrival_span", "value_workload", "results_for_file", "build_records", "clean_setup",
           "verdict_key", "file_prediction_keys"]


def _text(x: Any) -> str:
    return str(x).strip() if x not in (None, "") else ""


def setup_key(*, hardware: str, model: str, engine_version: str | None = None,
              results: Mapping[str, Any] | None = None, gpu: str | None = None) -> SetupKey:
    """The setup a prediction file ran on.

    hardware: the detected GPU's catalog variant (``setup.hardware.detected.variant`` of the results file) when a
    GPU was detected and is in the catalog, ``cpu`` with ``--gpu cpu``, else the declared id (the results file's,
    else the YAML's). model: the results file's model name, else the YAML's. engine version: the engine's own
    report (``engine_report.version``: its startup log or ``/version``), the results file's launch record, the
    YAML's ``engine.version``, else ``unknown``."""
    setup = (results or {}).get("setup") or {}
    hw = setup.get("hardware") or {}
    detected = hw.get("detected") if isinstance(hw, Mapping) else None
    variant = _text(detected.get("variant")) if isinstance(detected, Mapping) else ""
    if variant:
        hw_id = variant
    elif gpu is not None and gpu.strip().lower() == "cpu":
        hw_id = "cpu"
    else:
        hw_id = (_text(hw.get("declared")) if isinstance(hw, Mapping) else "") or _text(hardware) or "unknown"
    m = setup.get("model") or {}
    model_name = (_text(m.get("name")) if isinstance(m, Mapping) else "") or _text(model) or "unknown"
    report = (results or {}).get("engine_report") or {}
    engine = setup.get("engine") or {}
    version = (_text(report.get("version")) if isinstance(report, Mapping) else "") or (
        _text(engine.get("version")) if isinstance(engine, Mapping) else "") or _text(engine_version) or "unknown"
    return clean_setup(SetupKey(hw_id, model_name, version))


def spec_setup_key(spec: Spec, results: Mapping[str, Any] | None = None, gpu: str | None = None) -> SetupKey:
    """:func:`setup_key` of a loaded prediction file (and the results measured for it, when there are any)."""
    model = spec.model if isinstance(spec.model, str) else (spec.model or {}).get("name") or "custom"
    key = setup_key(hardware=str(spec.hardware), model=str(model), engine_version=spec.engine.get("version"),
                    results=results, gpu=gpu)
    suffix = topology_suffix(spec.engine)
    return clean_setup(SetupKey(key.hardware + suffix, key.model, key.engine_version)) if suffix else key


def topology_suffix(engine: Mapping[str, Any]) -> str:
    """How many GPUs and replicas a setup spans, as a suffix of its hardware id (``-tp4``, ``-tp2-pp2``, ``-r2``;
    empty for one GPU and one replica): a TP=8 run and a TP=4 run of one model on one chip are different setups,
    and neither is a baseline of the other."""
    args = engine.get("args") or {}
    parts = []
    for key, tag in (("tensor_parallel_size", "tp"), ("pipeline_parallel_size", "pp"), ("data_parallel_size", "dp")):
        value = args.get(key) if isinstance(args, Mapping) else None
        if isinstance(value, int) and not isinstance(value, bool) and value > 1:
            parts.append(f"{tag}{value}")
    replicas = engine.get("replicas")
    if isinstance(replicas, int) and not isinstance(replicas, bool) and replicas > 1:
        parts.append(f"r{replicas}")
    return "".join(f"-{p}" for p in parts)


@functools.lru_cache(maxsize=256)
def repository_root(folder: Path) -> Path | None:
    """The nearest folder at or above ``folder`` holding ``.git`` (a directory, or a file in a worktree or a
    submodule): git's top level, found without running git."""
    for d in (folder, *folder.parents):
        if (d / ".git").exists():
            return d
    return None


def identity_file(file: str) -> str:
    """A prediction file's path as its history key holds it: relative to its repository root (the git top level
    above it), else its name alone (relative to its own folder). Independent of pytest's rootdir, the current
    directory and how ``--roofline-history`` was spelled (``--roofline-history DIR`` makes pytest take ``DIR`` for
    a path argument and can move the rootdir); two checkouts of one repository agree wherever they lie."""
    if not file:
        return file
    try:
        path = Path(file).resolve()
    except (OSError, RuntimeError):
        return Path(file).as_posix()
    root = repository_root(path.parent)
    if root is None:
        return path.name
    return path.relative_to(root).as_posix()


def relative_file(file: str, rootdir: str | os.PathLike[str] | None = None) -> str:
    """:func:`identity_file` (``rootdir`` is no longer used: the key must not move with pytest's rootdir)."""
    return identity_file(file)


def definition_hash(verdict: Mapping[str, Any], drift_text: str = "") -> str:
    """16 hex digits of SHA-256 over what a prediction says, as its verdict carries it: the quantity, ``at:``,
    the ink, its unit, the tolerance, the band, the drift threshold, and the window its figure is read over where
    that is not the whole run (everything :func:`~pytest_roofline.quantities.definitions.definition_text` reads:
    the quantity and the window). Two nights of one key with different hashes: "the ink moved" (the measured
    change may be the user's edit, not the server's); an edited quantity or window is a redefinition, which drift
    reads from :attr:`StoredValue.quantity` and :attr:`StoredValue.window`. The whole-run window is left out of
    the hashed text, so the hash of every value stored before the window was kept is unchanged."""
    doc = {k: verdict.get(k) for k in ("quantity", "predicted_text", "unit", "tolerance_text", "lo", "hi")}
    doc["at"] = {str(k): str(v) for k, v in (verdict.get("at") or {}).items()}
    doc["drift"] = drift_text
    if verdict.get("window") not in (None, "", "run"):
        doc["window"] = str(verdict.get("window"))
    text = json.dumps(doc, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def file_prediction_keys(spec: Spec) -> list[str]:
    """The history key of every prediction a loaded file holds (each expanded point its own), in its order: what
    :func:`build_records` tells a run's unchecked predictions from its checked ones by."""
    file = identity_file(spec.path)
    return [prediction_key(file, p.id, {str(k): str(x) for k, x in p.at_text.items()}) for p in spec.predictions]


def _number(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return None
    return float(x)


def verdict_key(verdict: Mapping[str, Any]) -> str:
    """The history key of a verdict dict (``Verdict.to_dict()``: its file as given, its id and ``at:``), as
    :func:`build_records` keys the value it stores: what ``outcomes`` is keyed by."""
    at = {str(k): str(x) for k, x in (verdict.get("at") or {}).items()}
    return prediction_key(identity_file(str(verdict.get("file") or "")), str(verdict.get("id") or ""), at)


def stored_value(verdict: Mapping[str, Any], *, file: str, drift_text: str = "", outcome: str = "") -> StoredValue:
    """One verdict dict (``Verdict.to_dict()``) as the index keeps it; ``file`` is the path relative to the root;
    ``outcome`` the pytest outcome its test reported (``xfailed``, ``passed``...; "" when unknown).
    A value whose notes flag a point that did not hold its concurrency keeps those points (:func:`unheld_points`)."""
    at = {str(k): str(v) for k, v in (verdict.get("at") or {}).items()}
    pid = str(verdict.get("id") or "")
    interval = verdict.get("interval") or {}
    return StoredValue(
        key=prediction_key(file, pid, at), prediction_id=pid, file=file, quantity=str(verdict.get("quantity") or ""),
        dimension=str(verdict.get("dimension") or ""), status=as_kind(verdict.get("status"), StoredStatus),
        mode=as_kind(verdict.get("mode"), StoredCheck), at=at, unit=str(verdict.get("unit") or ""),
        measured=_number(verdict.get("measured_value")), model=_number(verdict.get("model_value")),
        predicted=_number(verdict.get("predicted_value")), lo=_number(verdict.get("lo")),
        hi=_number(verdict.get("hi")), predicted_text=str(verdict.get("predicted_text") or ""),
        measured_text=str(verdict.get("measured_text") or ""), drift_text=drift_text,
        measured_lo=_number(verdict.get("measured_lo")), measured_hi=_number(verdict.get("measured_hi")),
        interval_method=str(interval.get("method") or "") if isinstance(interval, Mapping) else "",
        interval_level=_number(interval.get("level")) if isinstance(interval, Mapping) else None,
        definition_hash=definition_hash(verdict, drift_text), window=str(verdict.get("window") or ""),
        unheld_points=unheld_points(verdict.get("measured_notes") or ()), outcome=as_outcome(outcome),
        model_source=str(verdict.get("model_source") or ""), serving=_number(verdict.get("serving_value")),
        serving_lo=_number(verdict.get("serving_band_lo")), serving_hi=_number(verdict.get("serving_band_hi")))


def value_arrival_span(results: Mapping[str, Any], point_ids: Sequence[str]) -> str | None:
    """How the open-loop points ``point_ids`` of a results file spread their sends (each point's
    :func:`~pytest_roofline.measure.results.match.recorded_span`), ``mixed`` when they differ; None without
    open-loop points among them, or for a peer's file that does not say."""
    want = {str(p) for p in point_ids}
    spans = {s for p in results.get("points") or ()
             if isinstance(p, Mapping) and str(p.get("id")) in want and (s := recorded_span(results, p)) is not None}
    if not spans:
        return None
    return spans.pop() if len(spans) == 1 else "mixed"


def value_workload(results: Mapping[str, Any], point_ids: Sequence[str]) -> str | None:
    """The workload the points ``point_ids`` of a results file ran (:attr:`StoredValue.workload`): their prompt and
    output lengths, and a digest of the workload's shape where the point recorded one (a dataset, distributions, a
    shared prefix; its realised lengths left out); ``mixed`` when the points differ. A peer's file gives its measured
    mean lengths (``in ~128 / out ~64 tokens (means)``), which :func:`other_workload` compares within 2 %: two
    vllm bench serve runs of 64 and 32 output tokens were compared as one figure (trial s25b #10). None for points
    that say no lengths."""
    imported = str((results.get("setup") or {}).get("mode") or "") == "imported"  # a peer's (measure.results.peers)
    want = {str(p) for p in point_ids}
    texts = set()
    for p in results.get("points") or ():
        if not (isinstance(p, Mapping) and str(p.get("id")) in want):
            continue
        n_in, n_out = p.get("input_len"), p.get("output_len")
        if not isinstance(n_in, int) or not isinstance(n_out, int):
            return None
        if imported:
            texts.add(f"in ~{n_in} / out ~{n_out} tokens (means)")
            continue
        text = f"in {n_in} / out {n_out} tokens"
        shape = p.get("workload")
        if isinstance(shape, Mapping):
            core = json.dumps({k: v for k, v in shape.items() if k != "realised"}, sort_keys=True, default=str)
            text += f", workload {hashlib.sha256(core.encode()).hexdigest()[:8]}"
        texts.add(text)
    if not texts:
        return None
    return texts.pop() if len(texts) == 1 else "mixed"


def results_for_file(results: Sequence[Mapping[str, Any]], file: str) -> Mapping[str, Any] | None:
    """The results dict measured for a prediction file: the one whose ``setup.predictions_file`` is that file
    (same path, else same name), else the only one there is (a replayed file), else None."""
    def named(r: Mapping[str, Any]) -> str:
        return str((r.get("setup") or {}).get("predictions_file") or "")

    target = Path(file)
    for r in results:  # the same path
        if named(r) and Path(named(r)).resolve() == target.resolve():
            return r
    for r in results:  # the same file name (recorded on another machine)
        if named(r) and Path(named(r)).name == target.name:
            return r
    return results[0] if len(results) == 1 else None


def clean_setup(key: SetupKey) -> SetupKey:
    """``key`` with each name bounded and without control characters (:func:`clean_name`), as every store
    keeps it: a 204-character model name or a NUL in it is stored, not refused by a database column."""
    return SetupKey(*(clean_name(getattr(key, f), NAME_LIMITS[f]) or "unknown"
                      for f in ("hardware", "model", "engine_version")))


def build_records(verdicts: Iterable[Verdict | Mapping[str, Any]], *, setups: Mapping[str, SetupKey],
                  results: Sequence[Mapping[str, Any]] = (), environment: Mapping[str, str] | None = None,
                  started_at: str, mode: RunMode, commit: str | None = None, branch: str | None = None,
                  label: str | None = None, rootdir: str | os.PathLike[str] | None = None,
                  drift_texts: Mapping[str, str] | None = None,
                  outcomes: Mapping[str, str] | None = None,
                  file_keys: Mapping[str, Sequence[str]] | None = None,
                  sample_cache: dict[Path, dict[str, tuple[float, ...]]] | None = None,
                  drift_policy: tuple[str, str] = ("", "")) -> list[RunRecord]:
    """The session's runs, one per setup (in the order their first verdict came).

    ``setups`` maps each verdict's ``file`` to its SetupKey (from :func:`spec_setup_key`); a verdict whose file
    has none goes under the key of its file's name with unknown parts. ``drift_texts`` maps a prediction key to its
    YAML ``drift:`` text, ``outcomes`` to the outcome pytest reported for its test (``xfailed``, ``xpassed``,
    ``passed``...: what the terminal counted; a value without one stores "" and pages show its verdict status). The
    run id is left to the store (``HistoryStore.add`` gives it). Files are keyed by
    :func:`identity_file` (``rootdir`` is not used: kept so older callers still work). Names are bounded and
    cleaned here, before any store sees them (:func:`clean_setup`, :func:`clean_name`). ``file_keys`` maps a
    verdict's ``file`` to the keys of every prediction that file holds (:func:`file_prediction_keys`): those the
    run has no verdict of were left out by ``-k`` or ``-m``, and the run keeps them (``RunSummary.unchecked``).
    ``drift_policy``: the (threshold, baseline) the night's drift was judged under, kept so the trend page judges it
    alike (``RunSummary.drift_threshold``, ``drift_baseline``)."""
    groups: dict[SetupKey, list[Mapping[str, Any]]] = {}
    # the store keeps JSON: a Verdict becomes its dict form here, at the history's boundary
    for v in (x.to_dict() if isinstance(x, Verdict) else x for x in verdicts):
        file = str(v.get("file") or "")
        key = setups.get(file) or SetupKey("unknown", "unknown", "unknown")
        groups.setdefault(key, []).append(v)
    records = []
    # each requests file read once (point_samples); the session's drift read them already and passes its cache
    sample_cache = {} if sample_cache is None else sample_cache
    for key, vs in groups.items():
        values = []
        counts: dict[str, int] = {}
        seen: dict[str, int] = {}
        files = {str(v.get("file") or "") for v in vs}
        for v in vs:
            rel = identity_file(str(v.get("file") or ""))
            at = {str(k): str(x) for k, x in (v.get("at") or {}).items()}
            key_of = prediction_key(rel, str(v.get("id") or ""), at)
            sv = stored_value(v, file=rel, drift_text=(drift_texts or {}).get(key_of, ""),
                              outcome=(outcomes or {}).get(key_of, ""))
            measured_in = results_for_file(results, str(v.get("file") or "")) if sv.mode == "measured" else None
            if measured_in is not None and sv.measured is not None:
                points = [str(p) for p in v.get("measured_points") or ()]
                sv = replace(sv, samples=point_samples(measured_in, points, sv.quantity, sample_cache),
                             host_probe_gflop_per_s=value_probe(measured_in, points),
                             arrival_span=value_arrival_span(measured_in, points),
                             workload=value_workload(measured_in, points))
            values.append(sv)
            counts[sv.status] = counts.get(sv.status, 0) + 1
            if sv.outcome:
                seen[sv.outcome] = seen.get(sv.outcome, 0) + 1
        own: list[Mapping[str, Any]] = []
        for f in sorted(files):
            r = results_for_file(results, f)
            if r is not None and all(r is not o for o in own):
                own.append(r)
        have = {v.key for v in values}
        unchecked = tuple(dict.fromkeys(k for f in sorted(files) for k in (file_keys or {}).get(f, ())
                                        if k not in have))
        summary = RunSummary(run_id="", setup=clean_setup(key), started_at=started_at, mode=mode,
                             unchecked=unchecked,
                             measurements=tuple(measurement_id(r) for r in own),
                             commit=clean_name(commit, NAME_LIMITS["commit"]),
                             branch=clean_name(branch, NAME_LIMITS["branch"]),
                             label=clean_name(label, NAME_LIMITS["label"]), counts=counts, values=tuple(values),
                             outcomes=seen, drift_threshold=drift_policy[0], drift_baseline=drift_policy[1])
        records.append(RunRecord(summary=summary, verdicts=tuple(dict(v) for v in vs),
                                 results=tuple({k: x for k, x in r.items() if k != "_path"} for r in own),
                                 environment=dict(environment or {})))
    return records
