"""The commands of ``roofline`` other than ``predict`` (:mod:`pytest_roofline.cli.predict`): the catalogs
(``quantities``, ``hardware``, ``schema``), ``check``, ``report``, ``history``, ``compare``, ``tiny-model`` and
``calibrate``. Each ``cmd_*`` takes the parsed namespace and returns the exit status; errors propagate to
:func:`pytest_roofline.cli.parser.main`, which prints them on one line.

The report and history layers are imported inside the commands that use them: they cost about 0.6 s and 0.25 s
at start-up, which every other command (``roofline predict``, ``roofline quantities | head``) would pay.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import shutil
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_roofline import redact
from pytest_roofline.cli import jsonout
from pytest_roofline.errors import (
    ArrivalSpanWarning,
    CalibrationError,
    CalibrationMismatchWarning,
    HistoryError,
    RequestCountWarning,
    UnsimulatedSettingWarning,
)
from pytest_roofline.format.limits import DEFAULT_LIMITS, Limits, parse_limit
from pytest_roofline.format.spec import SpecError, json_schema, load_spec
from pytest_roofline.measure.engine import tiny_model as tinymodel
from pytest_roofline.measure.results import match, named_prediction_file
from pytest_roofline.measure.results.calibration_points import measured_points, parse_point_selector, select_points
from pytest_roofline.measure.results.match import recorded_span
from pytest_roofline.measure.results.peers import load_any
from pytest_roofline.model import calibration, hardware, serving
from pytest_roofline.model.setup import RequestLengthWarning, build_setup, effective_max_model_len
from pytest_roofline.quantities.measurement import PointMode, point_mode
from pytest_roofline.quantities.registry import QUANTITIES
from pytest_roofline.units import GB, GIB

if TYPE_CHECKING:
    from pytest_roofline.history import RunMode

__all__ = ["cmd_calibrate", "cmd_check", "cmd_compare", "cmd_hardware", "cmd_history", "cmd_quantities", "cmd_report",
           "cmd_schema", "cmd_tiny_model", "drift_baseline", "drift_threshold"]


def cmd_quantities(args: argparse.Namespace) -> int:
    for q in sorted(QUANTITIES.values(), key=lambda q: q.name):
        modes = "+".join(q.modes)
        at = ", ".join(q.at) or "—"
        print(f"{q.name:<36} {q.dimension:<12} {modes:<14} at: {at}\n    {q.description}")
    return 0


def cmd_hardware(args: argparse.Namespace) -> int:
    print(f"{'id':<16} {'memory':>12} {'GB/s':>7} {'bf16 TF':>8} {'fp8 TF':>8} {'ridge':>7}  name")
    for hid, h in hardware.CATALOG.items():
        if h.hbm_bytes_per_s:
            fp8 = h.peak_flop_per_s.get("fp8")
            fp8_text = f"{fp8 / 1e12:,.1f}" if fp8 else "—"  # no FP8 tensor cores (A100)
            mem_text = f"{h.memory_bytes / GIB:>8.2f} GiB" if h.memory_bytes else "—"
            print(f"{hid:<16} {mem_text:>12} {h.hbm_bytes_per_s / GB:>7,.0f} "
                  f"{h.peak_flop_per_s['bf16'] / 1e12:>8,.1f} {fp8_text:>8} "
                  f"{h.ridge_flop_per_byte():>7.1f}  {h.name}")
        else:
            print(f"{hid:<16} {'—':>12} {'—':>7} {'—':>8} {'—':>8} {'—':>7}  {h.name}")
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    text = jsonout.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"
    if args.output:
        _write(args.output, text)
    else:
        sys.stdout.write(text)
    return 0


def _write(path: str | Path, text: str) -> None:
    """Write an output file; a missing folder or no permission is one line (``OSError`` caught by main)."""
    p = Path(path)
    if p.is_dir():
        raise IsADirectoryError(21, "is a directory; give a file name", str(p))
    if not p.parent.is_dir():
        raise FileNotFoundError(2, "its folder does not exist; create it first", str(p))
    p.write_text(text, encoding="utf-8")


def _limits(args: argparse.Namespace) -> Limits:
    changes = dict(parse_limit(text) for text in (getattr(args, "limit", None) or []))
    return DEFAULT_LIMITS.with_changes(**changes)


def cmd_check(args: argparse.Namespace) -> int:
    bad = 0
    limits = _limits(args)
    for f in args.files:
        try:
            # a file's warnings (a calibration fitted elsewhere, requests past max_model_len) are printed below as
            # one line each, the file's own spec.warnings, not as Python warnings with the plugin's source line
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", CalibrationMismatchWarning)
                warnings.simplefilter("ignore", RequestLengthWarning)
                warnings.simplefilter("ignore", RequestCountWarning)
                warnings.simplefilter("ignore", ArrivalSpanWarning)
                warnings.simplefilter("ignore", UnsimulatedSettingWarning)
                spec = load_spec(f, limits=limits)
        except SpecError as exc:
            print(exc)
            bad += 1
            continue
        except OSError as exc:
            print(f"{f}: cannot read: {exc.strerror or exc}")
            bad += 1
            continue
        # each error once: a setting the serving model refuses is the error of every prediction that takes its value
        # (of the math check only for a number in ink, Prediction.math_error: its message says so)
        for w in spec.warnings:
            print(f"warning: {w}")
        math_errors = [p.error_in("math") for p in spec.predictions]
        errors = list(dict.fromkeys(str(e) for e in math_errors if e is not None))
        for e in errors:
            print(e)
        bad += bool(errors)
        # a prediction as written (one entry, one line), whatever number of tests it expands into (at: every)
        written: dict[int, bool] = {}
        math_only: set[int] = set()
        for p, err in zip(spec.predictions, math_errors, strict=True):
            written[p.line] = written.get(p.line, True) and err is None
            if p.error is None and err is not None:
                math_only.add(p.line)
        tests = f" ({len(spec.predictions)} tests)" if len(spec.predictions) != len(written) else ""
        only = f", {len(math_only)} of them in the math check only" if math_only else ""
        print(f"{f}: {sum(written.values())} predictions ok, {len(written) - sum(written.values())} with errors"
              + only + tests)
    return 1 if bad else 0


def cmd_report(args: argparse.Namespace) -> int:
    from pytest_roofline.report.scorecard import render_from_files

    out = Path(args.output)
    if not out.parent.is_dir():  # before the work: a typo in -o must not cost a render
        raise FileNotFoundError(2, "its folder does not exist; create it first", str(out))
    if args.predictions and Path(args.predictions).is_dir():  # results may be a folder (vllm bench serve files)
        raise IsADirectoryError(21, "is a directory; give the prediction file (e.g. DIR/x.yaml)", args.predictions)
    html = render_from_files(Path(args.predictions), Path(args.results) if args.results else None,
                             allow_mismatch=args.allow_mismatch)
    _write(out, html)
    print(f"wrote {args.output}")
    # the page shows a prediction the file gets wrong as an error row; the exit status says so too, as `check`
    # does (issue 23, case 7.24: a file holding 1e999 rendered and exited 0)
    # a setting the serving model refuses errors a number in ink where the model checks it (no results, or a
    # quantity no run measures), as score_spec renders it
    errors = [e for p in load_spec(args.predictions).predictions
              if (e := p.error or p.error_in("measured" if args.results and p.q.measure is not None else "math"))
              is not None]
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        print(f"{args.predictions}: {len(errors)} prediction(s) with errors (rendered as errors)", file=sys.stderr)
    return 1 if errors else 0


def drift_threshold(text: str) -> str:
    from pytest_roofline.history import DriftPolicy

    return DriftPolicy(text).threshold_text  # a bad threshold: argparse's one-line usage error


def drift_baseline(text: str) -> str:
    from pytest_roofline.history import parse_baseline

    parse_baseline(text)
    return text.strip()


def cmd_history(args: argparse.Namespace) -> int:
    """``roofline history URI``: the trend page of a history store (its index only), written to ``-o``."""
    from pytest_roofline.history import open_store
    from pytest_roofline.report.trend import DEFAULT_OUTPUT, write_trend

    out = Path(args.output or DEFAULT_OUTPUT)
    if not out.parent.is_dir():  # before opening the store: a typo in -o must not cost a render
        raise FileNotFoundError(2, "its folder does not exist; create it first", str(out))
    redact.remember_url_secrets(str(args.uri))
    with _store_notes() as notes:
        store = open_store(args.uri, create=False)
        try:
            if args.baseline:
                _check_pinned_baseline(store, args.baseline)
            # not given: each setup's columns judge as its latest night was judged (RunSummary.drift_baseline)
            path, n = write_trend(store, out, setup=args.setup or (), last=args.last,
                                  drift=args.drift or None, baseline=args.baseline or None)
        finally:
            store.close()
    if notes and not n:
        raise HistoryError(f"{redact.redact_url(str(args.uri))}: no readable run ({notes[0]})")
    print(f"wrote {path} ({n} run{'s' if n != 1 else ''})")
    return 0


def _check_pinned_baseline(store: Any, baseline: str) -> None:
    """``--baseline run:ID`` names one stored run (its id, or a beginning no other run shares), as pytest's
    ``--roofline-drift-baseline`` requires; else a usage error (exit status 2) rather than a page whose every
    row says the run is missing."""
    from pytest_roofline.history import pinned_run

    pinned = pinned_run(baseline)
    if pinned is None:
        return
    ids = {r.run_id for r in store.runs()}
    hits = {pinned} & ids or {i for i in ids if i.startswith(pinned)}
    if len(hits) != 1:
        many = f"{len(hits)} runs begin with that id" if hits else "no run with that id"
        raise HistoryError(f"--baseline {baseline}: {many} in the store (`roofline compare --store URI` lists its "
                           "runs; give a stored run's id or a beginning of it that no other run shares)")


@contextlib.contextmanager
def _store_notes() -> Iterator[list[str]]:
    """A damaged index the store rebuilt, said once on stderr as ``roofline: note: ...`` (not a Python warning
    with the package's source line); the notes are kept for the caller."""
    from pytest_roofline.errors import HistoryIndexRebuiltWarning

    notes: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", HistoryIndexRebuiltWarning)
        try:
            yield notes
        finally:
            for w in caught:
                if issubclass(w.category, HistoryIndexRebuiltWarning):
                    notes.append(redact.redact_text(str(w.message)))
                    print(f"roofline: note: {notes[-1]}", file=sys.stderr)
                else:
                    warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def _stored_runs(uri: str) -> list[Any]:
    """The runs of the store at ``uri``, oldest first (its index only); a store that is not there is an error."""
    from pytest_roofline.history import open_store

    redact.remember_url_secrets(uri)
    with _store_notes():
        store = open_store(uri, create=False)
        try:
            return list(store.runs())
        finally:
            store.close()


#: the ``source`` of a results file another tool's files were read into (measure.results.peers)
_PEER_SOURCES = ("vllm bench serve", "GuideLLM", "AIPerf")


def _results_kind(data: Mapping[str, Any]) -> tuple[RunMode, str]:
    """What a results file given to ``roofline compare`` is, from its own fields (trial 21, L6: a live run's file
    read ``replay``): the mode a session measuring it would have stored (``engine`` or ``endpoint`` for a live
    run's file; ``replay`` for one read from a peer tool or transcribed, which only a replay can score) and a label
    saying which: ``live results file``, ``peer results file (GuideLLM)``, ``transcribed results file``."""
    source = str(data.get("source") or "")
    made = str((data.get("setup") or {}).get("mode") or "")
    if source in _PEER_SOURCES or made == "imported":
        return "replay", f"peer results file ({source or 'imported'})"
    if source == "transcribed" or made == "transcribed":
        return "replay", "transcribed results file"
    if made == "engine":
        return "engine", "live results file"
    if made == "endpoint":
        return "endpoint", "live results file"
    return "replay", "results file"


def _compare_side(ref: str, store_uri: str | None, predictions: str | None,
                  stored: Callable[[str], list[Any]] | None = None) -> Any:
    """One side of ``roofline compare``: a stored run's directory, a results.json (scored against its prediction
    file, the way --replay would), or a run id (or its unique prefix) in the store."""
    from pytest_roofline.history import build_records, read_run_dir, spec_setup_key, verdict_key
    from pytest_roofline.report.common import outcome_of_verdict
    from pytest_roofline.report.scorecard import score_spec

    path = Path(ref)
    if path.is_dir() and (path / "run.json").is_file():
        return read_run_dir(path).summary
    if path.is_file() or path.is_dir() and not (path / "run.json").exists():
        # a results file, or a peer's output folder (a folder of vllm bench serve files, GuideLLM's, AIPerf's)
        data = load_any(path)  # this tool's results.json or a peer's file, as --replay reads it
        named = predictions or str((data.get("setup") or {}).get("predictions_file") or "")
        found = (Path(named) if Path(named).is_file() else None) if predictions else named_prediction_file(named, path)
        if found is None:
            raise FileNotFoundError(2, "its prediction file is not here; name it with --predictions FILE.yaml",
                                    named or str(path))
        spec = load_spec(found)
        verdicts = score_spec(spec, data, source=f"results file {path}")
        setup = data.get("setup") or {}
        mode, label = _results_kind(data)
        # the outcome pytest would report for each (an expected miss is xfail, not fail: trial s24 M7)
        outcomes = {verdict_key(v.to_dict()): outcome_of_verdict(v, pred.xfail)
                    for pred, v in zip(spec.predictions, verdicts, strict=False)}
        rec = build_records(verdicts, setups={spec.path: spec_setup_key(spec, data)}, results=[data],
                            started_at=str(data.get("created_at") or ""), mode=mode,
                            commit=setup.get("commit"), rootdir=Path.cwd(), label=label, outcomes=outcomes)[0]
        return dataclasses.replace(rec.summary, run_id=str(path))
    uri = store_uri or os.environ.get("ROOFLINE_HISTORY")
    if not uri:
        raise FileNotFoundError(2, "not a run directory nor a results file; for a run id give --store URI "
                                   "(or set ROOFLINE_HISTORY)", ref)
    runs = (stored or _stored_runs)(uri)
    hits = [r for r in runs if r.run_id == ref] or [r for r in runs if r.run_id.startswith(ref)]
    if len(hits) != 1:
        raise ValueError(f"{redact.printable(ref)!r}: {'no run' if not hits else f'{len(hits)} runs'} with that id "
                         "in the store"
                         + (" (`roofline compare --store URI` with no ids lists its runs)" if not hits else
                            " (give more of the id)"))
    return hits[0]


def _list_runs(args: argparse.Namespace) -> int:
    """``roofline compare --store URI``: the store's runs, newest last, to pick two ids from."""
    from pytest_roofline.history import render_run_list, run_list_json

    uri = args.store or os.environ.get("ROOFLINE_HISTORY")
    if not uri:
        raise ValueError("no runs named: give two runs to compare (A B), or --store URI (or set ROOFLINE_HISTORY) "
                         "to list a store's runs")
    runs = _stored_runs(uri)
    if args.json:
        print(jsonout.dumps(run_list_json(runs), indent=2, ensure_ascii=False))
    elif runs:
        print("\n".join(render_run_list(runs)))
    else:
        print(f"{redact.printable(redact.redact_url(uri))}: no run stored yet")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    """``roofline compare A B``: two runs side by side (run ids in --store, run directories or results.json); exit
    status 1 when the two share no measured prediction (NOTHING WAS COMPARED), so that a script can tell.
    ``roofline compare --store URI`` alone lists the store's runs; one run alone is a usage error."""
    from pytest_roofline.history import (
        compare_runs,
        comparison_json,
        earlier_nights,
        measured_in_both,
        render_comparison,
    )

    if args.a is None:
        return _list_runs(args)
    if args.b is None:
        message = "give two runs to compare (A B), or none to list the runs of --store URI"
        if getattr(args, "usage_error", None):
            args.usage_error(message)  # argparse's usage line, exit status 2
        raise ValueError(message)
    read: dict[str, list[Any]] = {}

    def stored(uri: str) -> list[Any]:  # the store's index, read once for both sides and the earlier nights
        if uri not in read:
            read[uri] = _stored_runs(uri)
        return read[uri]

    a = _compare_side(args.a, args.store, args.predictions, stored)
    b = _compare_side(args.b, args.store, args.predictions, stored)
    if a.run_id == b.run_id or (Path(args.a).exists() and Path(args.a).resolve() == Path(args.b).resolve()):
        # a usage error, as an unknown id is: a table of 0.0 % would read as "nothing changed" (exit status 0) to a
        # script whose "previous" and "latest" picked the same night (a store of one run), or after a mistyped id
        raise ValueError(f"A and B are the same run ({redact.printable(str(a.run_id))}): a run compared with itself "
                         "changes by 0 everywhere; give two different runs (`roofline compare --store URI` with no "
                         "ids lists them)")
    uri = args.store or os.environ.get("ROOFLINE_HISTORY")
    history: list[Any] = []
    if uri:  # the store's earlier nights of B's setup: B is also tested against their spread, as drift tests
        try:
            history = stored(uri)
        except (HistoryError, OSError) as exc:
            if args.store:
                raise
            print(f"roofline: note: ROOFLINE_HISTORY not read ({redact.redact_text(str(exc))}): without earlier "
                  "nights a move beyond the runs' own intervals is 'uncertain', as drift says", file=sys.stderr)
    rows = compare_runs(a, b, history, machine_shift=getattr(args, "machine", None))
    if args.json:
        print(jsonout.dumps(comparison_json(a, b, rows), indent=2, ensure_ascii=False))
    else:
        width = min(shutil.get_terminal_size((120, 24)).columns, 200)  # the terminal table's cap too
        before = len(earlier_nights(b, history)) if history else None
        print("\n".join(render_comparison(a, b, rows, width=width, earlier=before)))
    return 0 if measured_in_both(rows) else 1


def cmd_tiny_model(args: argparse.Namespace) -> int:
    dest = Path(args.dest).expanduser() if args.dest else tinymodel.default_model_dir()
    if not tinymodel.is_tiny_model(dest):  # a real write probe first: a bad destination is one line, not a child's
        try:  # traceback minutes later
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.rmdir(tempfile.mkdtemp(prefix=f".{dest.name}.probe.", dir=dest.parent))
        except OSError as exc:
            raise OSError(exc.errno, f"cannot write the model there ({exc.strerror or exc})", str(dest)) from None
    try:
        print(tinymodel.make_tiny_model(dest))
    except RuntimeError as exc:
        lines = [ln for ln in str(exc).splitlines() if ln.strip()]
        print(f"roofline: making the tiny model in {dest} failed: {lines[-1] if lines else exc}", file=sys.stderr)
        return 1
    return 0


def _distinct_points(docs: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """The results documents with every point that an earlier one already holds (the same record, byte for byte
    once keys are sorted: the same file given twice, or a copy of it) left out, and a note saying so: a point
    counted twice is fitted as two independent measurements, shrinking every 1σ by 1/√2 (issue 23, case 9.52)."""
    seen: dict[str, str] = {}
    out = []
    for f, d in docs:
        kept, dropped = [], []
        for p in d.get("points") or ():
            key = json.dumps(p, sort_keys=True, default=str)
            if key in seen:
                dropped.append((p.get("id"), seen[key]))
            else:
                seen[key] = str(f)
                kept.append(p)
        if dropped:
            print(f"note: {f}: {len(dropped)} point(s) left out, the same measurement as in {dropped[0][1]} "
                  f"({', '.join(str(i) for i, _ in dropped)}); each measurement is fitted once")
        failed = [p.get("id") for p in kept if ((p.get("client") or {}).get("failed") or 0) > 0]
        if failed:
            print(f"note: {f}: {len(failed)} point(s) left out with failed requests ({', '.join(map(str, failed))}):"
                  " a point with a failed request is never a measurement")
        out.append((f, {**d, "points": kept}))
    return out


def _calibrate_fields(args: argparse.Namespace) -> list[str] | None:
    """``--fit``'s constants, checked before any work (a typo is one line and exit status 2, not a fit's preamble
    and then an error): the model's constants, and without ``--joint`` those a metric of their own fits."""
    if getattr(args, "joint", False) and getattr(args, "by_metric", False):
        raise CalibrationError("--joint and --by-metric are two ways to fit: pass one")
    fields = [f.strip() for f in args.fit.split(",") if f.strip()] if args.fit else None
    calibration.check_fields(fields, {f.name for f in dataclasses.fields(serving.ServingConstants)},
                             joint=bool(getattr(args, "joint", False)))
    return fields


def _calibrate_predictions(named: str, results: Path) -> Path:
    """The prediction file a results file names (:func:`~pytest_roofline.measure.results.named_prediction_file`)."""
    found = named_prediction_file(named, results)
    if found is None:
        raise FileNotFoundError(2, f"the prediction file {results} names is not here, nor under the results "
                                   "file's folder or a folder above it; name it with --predictions FILE.yaml", named)
    return found


def _setup_differences(docs: list[tuple[str, Any]]) -> list[str]:
    """Where results files disagree about their setup: hardware, model and engine version where both say (a peer's
    file without its server log does not say the version: not a difference), and this tool's own files' workload
    (a peer's lengths are its points', which the fit simulates one by one)."""
    def fields(d: Mapping[str, Any]) -> dict[str, Any]:
        st = d.get("setup") or {}
        out = {"hardware": (st.get("hardware") or {}).get("declared"), "model": (st.get("model") or {}).get("name"),
               "engine version": (st.get("engine") or {}).get("version")}
        if d.get("source") not in match.PEER_FORMATS:
            out["workload"] = json.dumps(st.get("workload") or {}, sort_keys=True)
        return out

    first_f, first = docs[0][0], fields(docs[0][1])
    out = []
    for f, d in docs[1:]:
        for k, v in fields(d).items():
            if v is not None and first.get(k) is not None and v != first[k]:
                out.append(f"{k}: {first[k]} in {first_f}, {v} in {f}")
    return out


def _schedule_notes(doc: Mapping[str, Any]) -> list[str]:
    """How each open-loop point of a results document is simulated when its sends were not recorded and its file
    does not say how they spanned (a peer's summary file): on a drawn schedule, which a current ``vllm bench
    serve`` does not send (model/workload.py), so the fit may read the schedule's span as the engine's speed."""
    out = []
    for p in doc.get("points") or ():
        if point_mode(p) is not PointMode.OPEN or p.get("sent_offsets_s") or recorded_span(doc, p):
            continue
        out.append(f"{p.get('id')}: the file records neither its open-loop sends nor how they spanned; simulated "
                   "on a drawn schedule at its rate (GuideLLM's poisson; vllm bench serve before vLLM PR #21108, "
                   "merged 2025-07, since which its N sends span N / rate); vllm bench serve --save-detailed keeps "
                   "the sends, and they are simulated as sent")
    return out


def cmd_calibrate(args: argparse.Namespace) -> int:
    """Fit the serving model's constants to measured points; print values ± 1σ and residuals; write the file."""
    fields = _calibrate_fields(args)
    joint = bool(getattr(args, "joint", False))
    # this tool's results files and peers' (vllm bench serve, GuideLLM, AIPerf: measure.results.peers), read as
    # --replay reads them; a peer's file names no prediction file, so --predictions gives the setup
    docs = _distinct_points([(f, load_any(f)) for f in args.results])

    differ = _setup_differences(docs)
    if differ:
        raise CalibrationError("the results files are not of one setup: " + "; ".join(differ))
    named = (docs[0][1].get("setup") or {}).get("predictions_file")
    if not args.predictions and not named:
        raise CalibrationError("the results file does not name its predictions file: pass --predictions FILE.yaml")
    spec = load_spec(args.predictions or _calibrate_predictions(str(named), Path(docs[0][0])))
    # the files must be of the prediction file's setup, as --replay checks them (measure.results.match): the fit is
    # written as that setup's calibration (trial s23b H1: a CPU run of the tiny model was written as an A100's).
    # Its points and lengths may differ: each point is simulated at its own load and lengths
    wrong = [f"{f}: {d}" for f, doc in docs for d in match.compare(doc, spec).differences
             if not d.startswith(("sweep points:", "workload:", "arrivals:"))]
    if wrong:
        raise CalibrationError(f"the results are not of {spec.path}'s setup, so a fit on them is not its "
                               f"calibration: {'; '.join(wrong)}; name the prediction file they were measured "
                               "with (--predictions FILE.yaml)")
    setup = build_setup(hardware_ref=spec.hardware, hardware_overrides=spec.hardware_overrides,
                        model_ref=spec.model, model_overrides=spec.model_overrides, engine=spec.engine,
                        workload=spec.workload)
    points = [p for _, d in docs for p in measured_points(d)]
    for f, d in docs:
        for note in _schedule_notes(d):
            print(f"note: {f}: {note}")
    held: list[calibration.MeasuredPoint] = []
    if args.points:
        chosen = select_points(points, parse_point_selector(args.points))
        held = [p for p in points if p not in chosen]
        points = chosen
    contamination = spec.thresholds.contamination
    points, screened, why = calibration.screen_points_why(points, setup, contamination=contamination)
    for note in screened:
        print(f"note: {note}")
    # the results' other points, screened alike: the notes name one of them where it has what the fit lacks
    spare, _, why_held = calibration.screen_points_why(held, setup, contamination=contamination)
    base = serving.default_constants(setup)
    tried = fields or (type(base).FIELDS_FITTABLE if joint else calibration.STEP_FIELDS + calibration.TTFT_FIELDS)
    seed = int(spec.workload.get("seed", 0))  # with each point's id: the load generator's arrivals
    predict = calibration.serving_predictor(setup, seed=seed)
    if not joint:  # fit_by_metric leaves out what this engine hides, and says why
        tried = tuple(n for n in tried if n not in predict.hidden)
    print(f"calibrating {setup.hardware.id} / {setup.model.name} / {setup.engine_name} "
          f"{setup.engine_version or ''} on {', '.join(p.label for p in points)} "
          f"({', '.join(tried)})", flush=True)
    if joint:
        result = calibration.fit(points, base, predict=predict, fields=fields, held=type(base).FIELDS_FITTABLE,
                                 screened=why)
    else:  # each constant on the metric that measures it (the default)
        # the longest prompt the engine serves beside these outputs: no note asks for a longer one (trial s23b L1)
        mml = effective_max_model_len(setup.max_model_len, setup.model)
        outs = [int(p.output_len) for p in [*points, *held] if p.output_len]
        max_prompt = mml - max(outs or [1]) if mml else None
        result = calibration.fit_by_metric(points, base, predict=predict, fields=fields,
                                           screened={**why_held, **why}, held_out=spare,
                                           max_prompt=max_prompt if max_prompt and max_prompt > 0 else None
                                           ).as_fit_result()
    if held:  # the results' other points: how the fitted constants predict what they were not fitted on
        # a held-out TTFT the screen would leave out of a fit (prefix-cache hits, below the prefill's floor) is
        # shown with why: it is not the model's to match (trial s24 M5)
        shown = calibration.residuals_at(result.constants, held, predict=predict)
        shown = tuple(dataclasses.replace(p, caveats={"ttft_p50_ms": why_held[p.label].split(", ", 1)[-1]})
                      if p.label in why_held and "ttft_p50_ms" in p.measured else p for p in shown)
        result = dataclasses.replace(result, held_out=shown)
    print(result.describe())
    cal = calibration.calibration_from_fit(result, setup, sources=[str(f) for f, _ in docs],
                                           notes=args.notes or "")
    if args.output:
        # a folder the file names is made, as `roofline init -o` makes one: calibration.md's `-o calib/x.yaml` failed
        # after the whole fit on a fresh checkout (trial s26c #5)
        Path(args.output).expanduser().parent.mkdir(parents=True, exist_ok=True)
        calibration.dump_calibration(cal, args.output)
        print(f"wrote {args.output}")
    return 0
