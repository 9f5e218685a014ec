"""The history's pytest glue: the option parsers, the index sent to xdist workers, and storing the session's
runs at its end. What a run *is* and how drift is computed live in :mod:`pytest_roofline.history`."""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_roofline import redact
from pytest_roofline.errors import HistoryError, SpecError, ToleranceError
from pytest_roofline.format.spec import load_spec, parse_drift_threshold
from pytest_roofline.history import (
    MACHINE_SHIFT,
    RunSummary,
    SetupKey,
    build_records,
    compared_count,
    earlier_runs,
    file_prediction_keys,
    identity_file,
    machine_count,
    not_judged_count,
    parse_baseline,
    parse_share,
    repository_root,
    results_for_file,
    spec_setup_key,
    verdict_key,
)
from pytest_roofline.measure.results import git_branch, git_commit
from pytest_roofline.pytest_plugin.collect import limits_from_ini
from pytest_roofline.pytest_plugin.session import RooflineSession, session_results
from pytest_roofline.redact import printable
from pytest_roofline.report.common import outcome_of_report
from pytest_roofline.report.environment import environment_from_results, environment_from_specs
from pytest_roofline.scoring import Verdict, VerdictMode, VerdictStatus

__all__ = ["parse_drift_option", "parse_baseline_option", "parse_share_option", "HistoryToWorkers", "store_session",
           "compared_check", "whole_night_command"]

_WORKER_KEY = "roofline_history_runs"


def _option_type(check: Callable[[str], object], errors: tuple[type[Exception], ...]) -> Callable[[str], str]:
    """An argparse ``type=`` that runs ``check`` on the value (a bad one is a usage error before collection) and
    keeps the text, stripped."""
    def parse(value: str) -> str:
        try:
            check(value)
        except errors as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        return value.strip()
    return parse


#: ``--roofline-drift``, ``--roofline-drift-baseline`` and ``--roofline-drift-min-compared``, checked where they
#: are declared
parse_drift_option = _option_type(parse_drift_threshold, (ToleranceError,))
parse_baseline_option = _option_type(parse_baseline, (ValueError,))
parse_share_option = _option_type(parse_share, (ValueError,))


def _key_of(file: str, held: set[str]) -> str:
    """How a prediction file is named in the history (its key's file part), and why when it is not its path from a
    repository root: outside a git checkout the key is the file's name alone, so the store's series of the same
    file measured from a checkout (``predictions/x.yaml``) is not this one (trial 21, M2)."""
    key = identity_file(file)
    try:
        in_git = repository_root(Path(file).resolve().parent) is not None
    except (OSError, RuntimeError):
        in_git = True
    if in_git:
        return key
    elsewhere = sorted(f for f in held if f.endswith("/" + key))
    return (f"{key} (no git checkout found above {Path(file).name}, so its key is its name alone"
            + (f"; this setup's runs in the store hold {', '.join(elsewhere)}, measured from a git checkout: run "
               "from a checkout with its .git for the nights to join" if elsewhere else "") + ")")


def _why_not_compared(drifts: list[dict[str, Any]], baseline: str, stored: bool = False,
                      held: set[str] | None = None, pinned_elsewhere: str = "") -> str:
    """Why a setup's measured predictions found no baseline: a pinned baseline run of another setup
    (``pinned_elsewhere``, its text: it can never be this setup's baseline, trial s26a #3), the prediction files
    whose every measured prediction is new (no earlier run of this setup measured any of them: the file's first
    night on this setup, or it was moved or renamed), else the baseline that matched no run."""
    if pinned_elsewhere:
        return pinned_elsewhere
    by_file: dict[str, list[str]] = {}
    for d in drifts:
        if d.get("status") != "not_measured":
            by_file.setdefault(str(d.get("file") or "?"), []).append(str(d.get("status")))
    changed = sum(1 for statuses in by_file.values() for x in statuses if x == "prediction_changed")
    if changed:
        # the predictions' definitions moved (quantity, at:, window ...): their values are measured, not judged
        return (f"{changed} measured prediction{'s' if changed != 1 else ''} changed definition since the baseline "
                f"({'their' if changed != 1 else 'its'} drift lines say what changed): a move across definitions is "
                "not judged as drift; "
                + ("this night is stored now, so the next night compares the new definitions" if stored else
                   "record it once without --roofline-drift-fail, so the next night compares the new definitions"))
    fresh = sorted(f for f, statuses in by_file.items() if all(x == "new" for x in statuses))
    if fresh:
        named = ", ".join(_key_of(f, held or set()) for f in fresh)
        return (f"no earlier run of this setup measured any prediction of {named}: "
                f"{'their' if len(fresh) > 1 else 'its'} first night in this store, or the file was moved or renamed "
                "(a prediction's identity is its file's path from the repository root and its id); "
                + ("this night is stored now, so the next night compares with it" if stored else
                   "a first night has nothing to compare: record it once without --roofline-drift-fail"))
    return (f"the store holds runs of this setup, but none of them is a baseline ({baseline}) for these "
            "predictions")


def unmeasured_counts(verdicts: list[Verdict]) -> str:
    """What happened to the predictions of a session that measured nothing, counted (s16 review L3): those the
    math answered, those skipped because they need a measurement (nothing checked them) and any that errored;
    e.g. "22 predictions, none measured (6 checked by the math, 16 skipped for want of a measurement)"."""
    skipped = sum(1 for v in verdicts if v.status is VerdictStatus.SKIP)
    errored = sum(1 for v in verdicts if v.status is VerdictStatus.ERROR)
    checked = len(verdicts) - skipped - errored
    parts = [f"{checked} checked by the math"]
    if skipped:
        parts.append(f"{skipped} skipped for want of a measurement")
    if errored:
        parts.append(f"{errored} errored")
    n = len(verdicts)
    return f"{n} prediction{'s' if n != 1 else ''}, none measured ({', '.join(parts)})"


def _pinned_elsewhere(rs: RooflineSession, setup: SetupKey) -> str:
    """Where the pinned baseline (``--roofline-drift-baseline run:ID``) is a run of another setup than ``setup``: that
    it can never be its baseline, naming both (trial s26a #3: every night compared nothing, and the failure said
    "its first night in this store ... the next night compares with it"); "" otherwise."""
    pinned = rs.drift_policy.pinned
    if pinned is None:
        return ""
    runs = [r for r in rs.history_runs if r.run_id.startswith(pinned)]
    if len(runs) != 1 or runs[0].setup == setup:
        return ""
    return (f"the pinned baseline run {runs[0].run_id} is of {runs[0].setup.text()}, not of {setup.text()}: it is "
            "never this setup's baseline; pin a run of this setup (`roofline history` lists them) or use previous")


def _held_elsewhere(rs: RooflineSession, setup: SetupKey, drifts: list[dict[str, Any]]) -> str:
    """What the store holds of this night's prediction files on other setups (trial s26a #9: "no earlier run of this
    setup" with the file's 5 runs on vLLM 0.32.0 unsaid, where an accidental setup change, a model spelt as a path
    one night and a Hub id the next, needs it seen): '; the store holds predictions/x.yaml on cpu · tiny · vllm
    0.32.0 (5 runs, latest 2026-12-05)', or ''."""
    files = {identity_file(str(d["file"])) for d in drifts if d.get("file")}
    by_setup: dict[SetupKey, list[Any]] = {}
    for r in rs.history_runs:
        if r.setup != setup and files & set(r.files):
            by_setup.setdefault(r.setup, []).append(r)
    if not by_setup:
        return ""
    named = ", ".join(sorted(files))
    parts = [f"{k.text()} ({len(v)} run{'s' if len(v) != 1 else ''}, latest {max(r.started_at for r in v)[:10]})"
             for k, v in sorted(by_setup.items(), key=lambda kv: max(r.started_at for r in kv[1]), reverse=True)[:3]]
    more = f" and {len(by_setup) - 3} more setups" if len(by_setup) > 3 else ""
    return f"; the store holds {named} on {', '.join(parts)}{more}: if tonight's setup was not meant to change, see why"


def _first_night_files(rs: RooflineSession, drifts: list[dict[str, Any]]) -> dict[str, int]:
    """The prediction files of a night whose first night in the store this is: every measured prediction of the file
    new, and no stored run (of any setup) measured the file. By file, how many measured predictions each has."""
    held = {f for r in rs.history_runs for f in r.files}
    by_file: dict[str, list[str]] = {}
    for d in drifts:
        if d.get("status") != "not_measured" and d.get("file"):
            by_file.setdefault(str(d["file"]), []).append(str(d.get("status")))
    return {f: len(st) for f, st in by_file.items()
            if all(x == "new" for x in st) and identity_file(f) not in held}


def _moved_files(rs: RooflineSession, setup: SetupKey, drifts: list[dict[str, Any]], first: dict[str, int]) -> str:
    """Where a file new to the store shares prediction ids with a file the setup's latest earlier run measured and
    tonight did not run: that it may be that file moved or renamed, whose series then end (trial s26d #5: a renamed
    file beside a compared one was green and said nothing of the file the store held); "" otherwise."""
    earlier, _own = earlier_runs(rs.history_runs, setup=setup, before=rs.measured_at if rs.mode == "replay" else None,
                                 measurement=rs.replay_measurement_id)
    tonight_ids = set(getattr(rs, "history_stored_run_ids", ()) or ())
    earlier = [r for r in earlier if r.run_id not in tonight_ids]
    if not earlier:
        return ""
    latest = max(earlier, key=lambda r: r.started_at)
    tonight = {identity_file(str(d["file"])) for d in drifts if d.get("file")}
    # the prediction ids of the new files, from their tests' node ids (``file::id[at]``; a drift's own key is
    # redacted where it travels, as any field named "key" is)
    new_ids = {node.split("::", 1)[1].split("[", 1)[0] for node, d in rs.reported_drifts.items()
               if d.get("file") in first and "::" in node}
    gone: dict[str, set[str]] = {}
    for v in latest.values:
        if v.file not in tonight and v.prediction_id in new_ids:
            gone.setdefault(v.file, set()).add(v.prediction_id)
    if not gone:
        return ""
    named = ", ".join(f"{f} ({len(ids)} of the same prediction ids)" for f, ids in sorted(gone.items()))
    return (f"; the setup's previous run measured {named}, not run tonight: moved or renamed? (its series end "
            "there; a prediction's identity is its file's path from the repository root)")


def compared_check(rs: RooflineSession) -> tuple[list[str], bool]:
    """How many measured predictions were compared with a baseline, per setup, and whether that is too few: with
    ``--roofline-drift-fail``, a setup the store already held a run of whose compared share is below
    ``--roofline-drift-min-compared`` fails the session (a night that compared nothing must not pass, whatever
    happened to the server). A setup the store holds no earlier run of compared nothing either: with
    ``--roofline-drift-fail`` that fails too, naming what the store does hold of the night's files (trial s26a #2: a
    CI whose cache restore missed was green forever). A prediction file new to the store, beside files that were
    compared, is its first night: said, and left out of the share (trial s26a #4)."""
    share = rs.drift_min_compared
    by_setup: dict[SetupKey, list[dict[str, Any]]] = {}
    for d in rs.reported_drifts.values():
        s = d.get("setup") or {}
        if s:
            by_setup.setdefault(SetupKey(str(s["hardware"]), str(s["model"]), str(s["engine_version"])), []).append(d)
    # the setups with a run this night can be compared with: not the replay's own stored measurement (a re-replay
    # of a night stored as its setup's only one, or pinned as its baseline, has nothing before it, as the first
    # replay had), nor, for a replay, a night measured after it
    before = rs.measured_at if rs.mode == "replay" else None
    stored: set[SetupKey] = set()
    itself: dict[SetupKey, list[str]] = {}
    for setup in by_setup:
        earlier, own = earlier_runs(rs.history_runs, setup=setup, before=before,
                                    measurement=rs.replay_measurement_id)
        if earlier:
            stored.add(setup)
        itself[setup] = [r.run_id for r in own]
    lines: list[str] = []
    failed = False
    if rs.drift_fail and not rs.measured and by_setup:
        # no --gpu, --endpoint nor --replay: every prediction was checked by the math alone (trial 21, H2)
        verdicts = list(rs.verdicts) or list(rs.reported_verdicts.values())
        return [f"roofline drift: FAILED (--roofline-drift-fail): this session measured nothing: no --gpu, "
                f"--endpoint or --replay was given: {unmeasured_counts(verdicts)}; pass --gpu or --replay to "
                "measure; a night that compares nothing cannot pass"], True
    if rs.drift_fail and rs.measured and by_setup and not any(compared_count(ds)[1] for ds in by_setup.values()):
        # -k that selects only math checks, a math-only file: the night compared nothing (issue 21); or the engine
        # (or the measurement) failed, and its measured predictions are ERRORs: said as such, not as math checks
        checked = sum(len(ds) for ds in by_setup.values())
        errored = sum(1 for v in (list(rs.verdicts) or list(rs.reported_verdicts.values()))
                      if v.status is VerdictStatus.ERROR and v.mode is VerdictMode.MEASURED)
        math_only = max(0, checked - errored)
        if errored:
            why = (f"the engine or its measurement failed: {errored} measured prediction{'s' if errored != 1 else ''} "
                   f"errored" + (f", {math_only} checked by the math alone" if math_only else "")
                   + "; see the ERRORs above")
        else:
            why = (f"{checked} prediction{'s' if checked != 1 else ''} checked by the math alone, none measured")
        return [f"roofline drift: FAILED (--roofline-drift-fail): this session measured nothing ({why}): a night "
                "that compares nothing cannot pass"], True
    for setup, drifts in by_setup.items():
        compared, measured = compared_count(drifts)
        if not measured:
            continue
        if setup not in stored:
            empty = ""
            if itself.get(setup):
                many = len(itself[setup]) > 1
                empty = (f" (already stored: run{'s' if many else ''} {', '.join(itself[setup])} "
                         f"hold{'' if many else 's'} this very measurement, which a replay is not compared with)")
            elif any(r.setup == setup for r in rs.history_runs):
                empty = " (its runs in the store were measured after this replayed night)"
            if not rs.history_runs:  # no run of any setup: a new store, or a path that is not the nightly's store
                store = rs.history_store
                root = getattr(store, "root", None)
                where = (str(Path(root).resolve()) if root is not None
                         else redact.redact_url(str(getattr(store, "uri", ""))))
                empty = (f" (the store at {where} held no run at all: if this night meant an existing store, check "
                         f"the path; a relative one is read from where pytest runs, {Path.cwd()})")
            elsewhere = _held_elsewhere(rs, setup, drifts)
            if not rs.drift_fail or share == 0:  # --roofline-drift-min-compared 0: a setup's first night is said
                lines.append(f"roofline drift: {setup.text()}: the store holds no earlier run of this setup: "
                             f"{measured} measured, nothing to compare with yet{empty}{elsewhere}"
                             + ("; not failed: --roofline-drift-min-compared 0" if rs.drift_fail else ""))
                continue
            failed = True
            # stored tonight, or already (a retry replaying the stored night, trial s26d #10): the next new night
            # compares with it, and recording it again changes nothing
            now = setup in getattr(rs, "history_stored_setups", ())
            lines.append(f"roofline drift: FAILED (--roofline-drift-fail): {setup.text()}: the store holds no earlier "
                         f"run of this setup: {measured} measured, none compared{empty}{elsewhere}; "
                         + ("this night is stored now, so the next night compares with it" if now else
                            "this night is stored already, so the next new night compares with it"
                            if itself.get(setup) else
                            "a setup's first night has nothing to compare: record it once without "
                            "--roofline-drift-fail, or let a setup's first night pass with "
                            "--roofline-drift-min-compared 0")
                         + ": a night that compares nothing cannot pass")
            continue
        pinned = _pinned_elsewhere(rs, setup)
        if pinned and not compared and not rs.drift_fail:  # said every night, not only when it fails the session
            lines.append(f"roofline drift: {setup.text()}: nothing compared: {pinned}")
        first = _first_night_files(rs, drifts) if compared else {}
        if first:  # files new to the store beside files that were compared: their first night, said, not counted
            measured -= sum(first.values())
            lines.append(f"roofline drift: {setup.text()}: first night in this store of "
                         + ", ".join(f"{identity_file(f)} ({n} measured)" for f, n in first.items())
                         + ": not counted in the compared share; the next night compares "
                         + ("them" if len(first) > 1 else "it") + _moved_files(rs, setup, drifts, first))
        if rs.drift_fail and compared < share * measured or (rs.drift_fail and compared == 0):
            failed = True
            unheld = not_judged_count(drifts)
            keys = _why_not_compared(drifts, rs.drift_policy.describe(),
                                     stored=setup in getattr(rs, "history_stored_setups", ()),
                                     held={v.file for r in rs.history_runs if r.setup == setup for v in r.values},
                                     pinned_elsewhere=pinned)
            if not unheld:
                why = keys
            else:
                by_machine = machine_count(drifts)
                parts = [p for n, p in (
                    (unheld - by_machine, f"{unheld - by_machine} were measured at points that did not hold their "
                                          "concurrency (not judged: the load generator fell behind; see the verdicts' "
                                          "notes)"),
                    (by_machine, f"{by_machine} were measured while the machine itself ran more than "
                                 f"{MACHINE_SHIFT:.0%} apart from the other nights (not judged: the host probe; see "
                                 "their drift lines)")) if n]
                why = " and ".join(parts)
                if unheld < measured - compared:
                    why += f", and for the rest {keys}"
            need = (f"(at least {share:.0%} must be)" if share > 0 else
                    "(--roofline-drift-min-compared 0 passes a setup's first night only, and the store holds this "
                    "setup's runs)")
            lines.append(f"roofline drift: FAILED (--roofline-drift-fail): {setup.text()}: only {compared} of "
                         f"{measured} measured predictions were compared with a baseline {need}; {why}: "
                         + ("a night that compares nothing cannot pass" if not compared else
                            "a night that compares too few cannot pass"))
    return lines, failed


class HistoryToWorkers:
    """Sends each xdist worker the part of the index its baselines need (the controller read it once)."""

    def __init__(self, rs: RooflineSession):
        self.rs = rs

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[_WORKER_KEY] = self.rs.runs_for_workers()

    @staticmethod
    def runs_from(workerinput: dict[str, Any]) -> list[RunSummary]:
        return [RunSummary.from_dict(d) for d in workerinput.get(_WORKER_KEY) or ()]


def _outcomes(rs: RooflineSession) -> dict[str, str]:
    """The outcome pytest reported for each prediction's test (``xfailed``, ``xpassed``, ``passed``...), by its
    history key: read from the reports the terminal counted (on an xdist controller, the workers' reports), with
    the function the terminal summary and pytest-html name them by. Empty without a terminal reporter (then the
    store keeps the verdict status alone, as before outcomes were kept)."""
    tr = rs.config.pluginmanager.get_plugin("terminalreporter")
    out: dict[str, str] = {}
    for reports in (getattr(tr, "stats", None) or {}).values():
        for report in reports:
            verdict = getattr(report, "roofline", None)  # on the call report, or on a setup report that failed
            if isinstance(verdict, dict) and verdict:
                outcome = outcome_of_report(report)
                drift = getattr(report, "roofline_drift", None) or {}
                if (outcome == "failed" and rs.drift_fail and drift.get("status") == "drifted"
                        and verdict.get("status") != "fail"):
                    outcome = "drifted"  # failed by its drift, as the terminal's table says: DRIFTED, not FAIL
                out[verdict_key(verdict)] = outcome
    return out


def _file_keys(rs: RooflineSession, verdicts: Sequence[Verdict]) -> dict[str, list[str]]:
    """Each prediction file's keys of every prediction it holds, so that a run keeps those it did not check (``-k``,
    ``-m``). This process's loaded files; on an xdist controller, which collects nothing, each verdict's file read
    again (one that no longer loads is left out: its run then keeps no such keys, as before they were kept)."""
    out = {path: file_prediction_keys(spec) for path, spec in rs.specs.items()}
    for file in dict.fromkeys(str(v.file) for v in verdicts if v.file):
        if file not in out:
            try:
                out[file] = file_prediction_keys(load_spec(file, limits=limits_from_ini(rs.config)))
            except (SpecError, OSError, pytest.UsageError):
                continue
    return out


def whole_night_command(results_files: Sequence[str], specs: Sequence[str], uri: str) -> str:
    """The command lines that store a night from its results files (one ``pytest --replay`` per file), each word
    quoted as a shell reads it (``shlex.join``): a folder with a space in its name, or a URI with ``&``, stays one
    word. "" without a results file."""
    return " ; ".join(shlex.join(["pytest", "--replay", f, *(specs or ["FILE.yaml"]), "--roofline-history", uri])
                      for f in results_files)


def _replay_dated(rs: RooflineSession) -> bool:
    """Whether the replayed file states when it was measured (``created_at``; a peer's file: the date its files
    give), so that a replay is stored at that time rather than at the session's."""
    try:
        return bool(rs.replay_data().get("created_at"))
    except Exception:  # noqa: BLE001 - a file that cannot be read again: say the session's time
        return False


def _add_to_stored(rs: RooflineSession, same: RunSummary, rec: Any, where: str) -> tuple[str, bool]:
    """A replay of a measurement that run ``same`` already holds: the values of it that the run lacks (a ``-k``
    replay stored first, then the whole night) are added to that run, the same run id and night, and the line says
    so; a replay that holds nothing new is not stored (one measurement, one night: stored twice it would make a
    spread of 0). (The line, whether adding failed.)"""
    setup = rec.summary.setup.text()
    held = {v.key for v in same.values}
    lacking = [v for v in rec.summary.values if v.key not in held]
    adder = getattr(rs.history_store, "add_values", None)
    if lacking and adder is not None:
        try:
            stored, added, had = adder(same.run_id, rec)
        except Exception as exc:  # HistoryError, OSError, or a driver's own error: never a silent green night
            detail = str(exc) if isinstance(exc, (HistoryError, OSError)) else f"{type(exc).__name__}: {exc}"
            return (f"roofline history: {'WARNING' if rs.history_optional else 'ERROR'}: could not add "
                    f"{len(lacking)} value{'s' if len(lacking) != 1 else ''} of this measurement to run "
                    f"{same.run_id} of {setup} in {where}: {redact.redact_text(detail)}"
                    + ("" if rs.history_optional else " (the session fails; --roofline-history-optional makes "
                                                      "this a warning)")), True
        if added:
            rs.history_added[stored.run_id] = rs.history_added.get(stored.run_id, 0) + added
            # tonight's values are stored now (in that run): the next night compares with them, so the drift check's
            # advice does not ask for a night recorded without --roofline-drift-fail (trial s24 M7)
            rs.history_stored_setups.add(stored.setup)
            files = ", ".join(dict.fromkeys(v.file for v in same.values))
            return (f"roofline history: added {added} value{'s' if added != 1 else ''} to run {stored.run_id}, which "
                    f"held {had} other value{'s' if had != 1 else ''} of this measurement (of {files}; {setup}; the "
                    f"night it was measured, {rec.summary.started_at})"), False
    return (f"roofline history: not stored: run {same.run_id} of {setup} already holds the measurement this replay "
            f"was made at ({rec.summary.started_at}, "
            + ("its results file's created_at" if _replay_dated(rs) else "this replay's time: its file states none")
            + "), every value of it; a replay "
            "stores a measurement once"), False


def _checkout_of(rs: RooflineSession, verdicts: Sequence[Verdict]) -> str:
    """The folder whose git checkout a live run's commit, branch and environment are read from: the first prediction
    file's (as its identity is, ``history._recording.identity_file``), not pytest's rootdir, which moves with how
    the options are spelt (``--roofline-history DIR`` with a space makes it ``/``: trial 21, M1); the rootdir
    when no prediction file is found."""
    rootdir = Path(rs.config.rootpath)
    for f in [*rs.specs, *(str(v.file) for v in verdicts if v.file)]:
        for path in (Path(f), rootdir / f, Path.cwd() / f):
            if path.is_file():
                return str(path.resolve().parent)
    return str(rootdir)


def store_session(rs: RooflineSession, *, stopped: str = "") -> tuple[list[str], bool]:
    """Add the session's runs (one per setup) to the store; the lines to print (where each went, or why not) and
    whether a run could not be stored (a session failure unless ``--roofline-history-optional``: a night whose
    run is lost must not look green). A session that was ``stopped`` (interrupted, or -x) before every prediction
    was scored stores nothing: a part of a night stored as a night would read as the whole night (its missing
    predictions "not in the latest run of its file", drift's spread short of them). Its results file keeps every
    measured point, and the line says how to store the whole night from it (trial 14n, D3)."""
    store = rs.history_store
    verdicts = list(rs.verdicts) or list(rs.reported_verdicts.values())
    if store is None or not verdicts:
        return [], False
    if not rs.measured:  # math only: no night to store, whoever exported $ROOFLINE_HISTORY (trial 21, H2)
        return [f"roofline history: not stored: this session measured nothing (no --gpu, --endpoint or --replay: "
                f"{unmeasured_counts(verdicts)}); a session that measured nothing is not stored as a night"], False
    results = session_results(rs)
    if stopped:
        files = [str(r.get("_path")) for r in results if r.get("_path")]
        how = whole_night_command(files, sorted(rs.specs), redact.redact_url(store.uri)) or "rerun the night"
        return [printable(f"roofline history: not stored: the session was {stopped} after {len(verdicts)} "
                          f"prediction(s) were scored, and a part of a night is not stored as a night; the results "
                          f"file{'s' if len(files) > 1 else ''} keep{'' if len(files) > 1 else 's'} every measured "
                          f"point: {how} stores the whole night")], False
    rootdir = rs.config.rootpath
    setups: dict[str, SetupKey] = {}
    for d in rs.reported_drifts.values():  # as the workers (or this process) looked the baselines up
        s = d.get("setup") or {}
        if s:
            setups[str(d.get("file"))] = SetupKey(str(s["hardware"]), str(s["model"]), str(s["engine_version"]))
    for path, spec in rs.specs.items():  # this process scored them: the setup with every result now known
        setups[path] = spec_setup_key(spec, rs.results_for_spec(spec) or results_for_file(results, path), rs.gpu)
    drift_texts = {}
    for d in rs.reported_drifts.values():
        if d.get("drift_text"):
            drift_texts[str(d.get("key"))] = str(d["drift_text"])
    checkout = _checkout_of(rs, verdicts)
    env = environment_from_specs(list(rs.specs.values()), rs.mode, cwd=checkout) if rs.specs else {}
    for r in results:
        env.update(environment_from_results(dict(r)))
    replayed_commit, replayed = rs.measured_commit
    written = next((str(c) for r in results if (c := (r.get("setup") or {}).get("commit"))), None)
    commit = replayed_commit if replayed else git_commit(checkout) or written
    branch = None if replayed else git_branch(checkout)  # a replay's branch is the file's, which it does not say
    records = build_records(verdicts, setups=setups, results=results, environment=redact.redact_data(env),
                            started_at=rs.measured_at, mode=rs.mode, commit=commit, branch=branch,
                            label=rs.history_label, rootdir=rootdir, drift_texts=drift_texts,
                            outcomes=_outcomes(rs), file_keys=_file_keys(rs, verdicts),
                            sample_cache=rs.sample_cache,
                            drift_policy=(rs.drift_policy.threshold_text, rs.drift_policy.baseline))
    lines = []
    failed = False
    where = redact.redact_url(store.uri)
    for rec in records:
        if rs.measured and not any(v.mode == "measured" for v in rec.summary.values):
            # a measured night that set out to measure nothing (-k selecting only math checks): not a night of this
            # setup. (A night whose engine failed is one: its measured predictions are stored as its ERRORs.)
            lines.append(f"roofline history: not stored: this session measured nothing on "
                         f"{rec.summary.setup.text()} ({len(rec.summary.values)} checked by the math alone); a night "
                         "that measured nothing is not stored as a night")
            continue
        def holds(r: RunSummary, rec: Any = rec) -> bool:  # a stored run of this very measurement
            # by its results files' ids; by the time alone only for a run stored before ids were kept (a peer's
            # folder dated by its earliest file shares that time with another night's: trial s24c H1)
            return bool(replayed and r.setup == rec.summary.setup and (
                set(r.measurements) & set(rec.summary.measurements)
                or (not r.measurements and r.started_at == rec.summary.started_at)))

        same = next((r for r in rs.history_runs if holds(r)), None)
        stored = None
        try:
            if same is None and replayed and hasattr(store, "add_unless"):
                # checked again under the store's lock (its transaction): another replay of this file may have
                # stored it since the session read the index (trial 21, M5)
                held, added = store.add_unless(rec, holds)
                stored, same = (held, None) if added else (None, held)
            elif same is None:
                stored = store.add(rec)
        except Exception as exc:  # HistoryError, OSError, or a driver's own error: never a silent green night
            failed = True
            detail = str(exc) if isinstance(exc, (HistoryError, OSError)) else f"{type(exc).__name__}: {exc}"
            lines.append(f"roofline history: {'WARNING' if rs.history_optional else 'ERROR'}: could not store the "
                         f"run of {rec.summary.setup.text()} in {where}: {redact.redact_text(detail)}"
                         + ("" if rs.history_optional else " (the session fails; --roofline-history-optional "
                                                           "makes this a warning)"))
            continue
        if same is not None:  # one measurement, one night: stored twice it would make a spread of 0
            line, bad = _add_to_stored(rs, same, rec, where)
            lines.append(line)
            failed = failed or bad
            continue
        assert stored is not None
        rs.history_stored_setups.add(stored.setup)
        rs.history_stored_run_ids.add(stored.run_id)
        lines.append(f"roofline history: stored run {stored.run_id} ({stored.setup.text()}) in {where}")
    return [printable(x) for x in lines], failed and not rs.history_optional
