"""The history's pytest glue: the option parsers, the index sent to xdist workers, and storing the session's
runs at its end. What a run *is* and how drift is computed live in :mod:`pytest_roofline.history`."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import pytest

from pytest_roofline import redact
from pytest_roofline.errors import HistoryError, ToleranceError
from pytest_roofline.format.spec import parse_drift_threshold
from pytest_roofline.history import RunSummary, SetupKey, build_records, parse_baseline, spec_setup_key
from pytest_roofline.history._recording import results_for_file
from pytest_roofline.measure.results import git_branch, git_commit
from pytest_roofline.pytest_plugin.session import RooflineSession, session_results
from pytest_roofline.report.environment import environment_from_results, environment_from_specs

__all__ = ["parse_drift_option", "parse_baseline_option", "HistoryToWorkers", "store_session"]

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


#: ``--roofline-drift`` and ``--roofline-drift-baseline``, checked where they are declared
parse_drift_option = _option_type(parse_drift_threshold, (ToleranceError,))
parse_baseline_option = _option_type(parse_baseline, (ValueError,))


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


def store_session(rs: RooflineSession) -> list[str]:
    """Add the session's runs (one per setup) to the store; the lines to print (where each went, or why not)."""
    store = rs.history_store
    verdicts = list(rs.verdicts) or list(rs.reported_verdicts.values())
    if store is None or not verdicts:
        return []
    results = session_results(rs)
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
    env = environment_from_specs(list(rs.specs.values()), rs.mode, cwd=str(rootdir)) if rs.specs else {}
    for r in results:
        env.update(environment_from_results(dict(r)))
    commit = git_commit(str(rootdir))
    records = build_records(verdicts, setups=setups, results=results, environment=redact.redact_data(env),
                            started_at=rs.started_at, mode=rs.mode, commit=commit, branch=git_branch(str(rootdir)),
                            label=rs.history_label, rootdir=rootdir, drift_texts=drift_texts)
    lines = []
    where = redact.redact_url(store.uri)
    for rec in records:
        try:
            stored = store.add(rec)
        except (HistoryError, OSError) as exc:
            lines.append(f"roofline history: could not store the run of {rec.summary.setup.text()} in {where}: "
                         f"{redact.redact_text(str(exc))}")
            continue
        lines.append(f"roofline history: stored run {stored.run_id} ({stored.setup.text()}) in {where}")
    return lines
