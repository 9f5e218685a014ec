"""Probe 15's history findings (notes/s15/probe.md §1), the parts that are pure functions: the outcomes worked out
by hand from small runs. Through pytest and on each store: tests/integration/test_history_stored_replays.py."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_roofline.cli.parser import main
from pytest_roofline.history import (
    DirectoryStore,
    DriftPolicy,
    DriftStatus,
    RunRecord,
    RunSummary,
    SetupKey,
    StoredValue,
    drift_for,
    earlier_runs,
    prediction_key,
)
from pytest_roofline.history._store import merge_record
from pytest_roofline.pytest_plugin.history import compared_check
from pytest_roofline.redact import REDACTED, redact_text

SETUP = SetupKey("cpu", "roofline-tiny", "0.32.0")
OTHER = SetupKey("h100-sxm", "llama-3.1-8b", "0.11.0")
NIGHT = "2026-12-05T08:54:28Z"
MID = "m-night-12-05"


def _value(pid: str, measured: float | None, status: str = "pass", outcome: str = "") -> StoredValue:
    return StoredValue(key=prediction_key("nightly.yaml", pid, {}), prediction_id=pid, file="nightly.yaml",
                       quantity="output_throughput", dimension="throughput", status=status, mode="measured",
                       unit="tok/s", measured=measured, predicted=700.0, predicted_text="700 tok/s", outcome=outcome,
                       definition_hash="h")


def _run(run_id: str, started_at: str, *values: StoredValue, setup: SetupKey = SETUP,
         measurements: tuple[str, ...] = ()) -> RunSummary:
    return RunSummary(run_id=run_id, setup=setup, started_at=started_at, mode="replay", values=values,
                      measurements=measurements)


# ------------------------------------------------------------------------------ #2: the values a run lacks


def test_a_replay_adds_only_the_values_the_stored_run_lacks() -> None:
    # stored: the -k night, a alone (300 tok/s, passed), b and c left out. The whole replay holds a (at 999: a
    # stand-in for a value that differs), b (fail, xfailed) and c (pass): b and c are added, a keeps 300
    keys = [prediction_key("nightly.yaml", p, {}) for p in "abc"]
    old = RunRecord(summary=dataclasses.replace(
        _run("20261205T085428Z-nocommit-aaaaaa", NIGHT, _value("a", 300.0, outcome="pass"), measurements=(MID,)),
        counts={"pass": 1}, outcomes={"pass": 1}, unchecked=(keys[1], keys[2])),
        verdicts=({"id": "a"},), results=({"created_at": NIGHT, "points": []},), environment={"python": "3.12"})
    whole = (_value("a", 999.0, outcome="pass"), _value("b", 200.0, "fail", "xfail"), _value("c", 100.0, "pass"))
    new = RunRecord(summary=dataclasses.replace(_run("", NIGHT, *whole, measurements=(MID,)),
                                                counts={"pass": 2, "fail": 1}),
                    verdicts=({"id": "a", "v": 2}, {"id": "b"}, {"id": "c"}),
                    results=({"created_at": NIGHT, "points": []},),
                    environment={"python": "3.13", "vllm": "0.32.0"})
    merged, added, held = merge_record(old, new)
    assert (added, held) == (2, 1)
    s = merged.summary
    assert s.run_id == "20261205T085428Z-nocommit-aaaaaa" and s.started_at == NIGHT
    assert [(v.prediction_id, v.measured) for v in s.values] == [("a", 300.0), ("b", 200.0), ("c", 100.0)]
    assert s.counts == {"pass": 2, "fail": 1}  # 1 pass held + b fail + c pass
    assert s.outcomes == {"pass": 1, "xfail": 1}  # c has no outcome: not counted, as build_records counts
    assert s.unchecked == () and s.measurements == (MID,)
    assert merged.verdicts == ({"id": "a"}, {"id": "b"}, {"id": "c"})
    assert len(merged.results) == 1  # the same results file: held once
    assert merged.environment == {"python": "3.12", "vllm": "0.32.0"}  # what the run held wins
    # the same replay again: nothing to add, the run as it is
    again, added, held = merge_record(merged, new)
    assert (added, held) == (0, 3) and again is merged


# ------------------------------------------------------------------------------ #4: the replay's own night


def _session(runs: list[RunSummary], values: list[StoredValue], policy: DriftPolicy, *,
             measured_at: str = NIGHT, measurement: str | None = MID) -> Any:
    drifts = drift_for(values, runs, policy, setup=SETUP, before=measured_at, measurement=measurement)
    reported = {k: {**d.to_dict(), "setup": dataclasses.asdict(SETUP), "file": "nightly.yaml"}
                for k, d in drifts.items()}
    return SimpleNamespace(drift_min_compared=0.5, reported_drifts=reported, history_runs=runs, drift_fail=True,
                           measured=True, verdicts=[], reported_verdicts={}, mode="replay", measured_at=measured_at,
                           replay_measurement_id=measurement, history_store=None, drift_policy=policy)


def test_the_replays_own_stored_night_is_not_an_earlier_run() -> None:
    own = _run("20261205T085428Z-nocommit-aaaaaa", NIGHT, _value("a", 300.0), measurements=(MID,))
    older = _run("20261204T085428Z-nocommit-bbbbbb", "2026-12-04T08:54:28Z", _value("a", 310.0))
    later = _run("20261206T085428Z-nocommit-cccccc", "2026-12-06T08:54:28Z", _value("a", 320.0))
    elsewhere = _run("20261201T000000Z-nocommit-dddddd", "2026-12-01T00:00:00Z", _value("a", 1.0), setup=OTHER)
    runs = [elsewhere, older, own, later]
    assert earlier_runs(runs, setup=SETUP, before=NIGHT, measurement=MID) == ([older], [own])
    # a live night (no cut, no measurement): every run of its setup
    assert earlier_runs(runs, setup=SETUP) == ([older, own, later], [])
    # a store written before measurement ids were kept: the run started at the replayed file's time is its own
    bare = dataclasses.replace(own, measurements=())
    assert earlier_runs([bare], setup=SETUP, before=NIGHT, measurement=MID) == ([], [bare])


@pytest.mark.parametrize("baseline", ["previous", "run:20261205T085428Z-nocommit-aaaaaa"])
def test_a_re_replay_of_a_setups_only_night_fails_drift_fail_and_says_why(baseline: str) -> None:
    # the store holds the night once (run aaaaaa, the first replay's); replayed again under --roofline-drift-fail,
    # by default or pinned to that very run: 1 measured, 0 compared, and nothing before it to compare with: a night
    # that compared nothing fails (trial s26a #2, as the first replay did), naming the run that holds it;
    # --roofline-drift-min-compared 0 lets it pass, said
    own = _run("20261205T085428Z-nocommit-aaaaaa", NIGHT, _value("a", 300.0), measurements=(MID,))
    policy = DriftPolicy(baseline=baseline)
    rs = _session([own], [_value("a", 300.0)], policy)
    lines, failed = compared_check(rs)
    assert failed
    assert lines == ["roofline drift: FAILED (--roofline-drift-fail): cpu · roofline-tiny · vllm 0.32.0: the store "
                     "holds no earlier run of this setup: 1 measured, none compared (already stored: run "
                     "20261205T085428Z-nocommit-aaaaaa holds this very measurement, which a replay is not compared "
                     "with); this night is stored already, so the next new night compares with it: a night that "
                     "compares nothing cannot pass"]
    rs.drift_min_compared = 0.0
    lines, failed = compared_check(rs)
    assert not failed
    assert lines == ["roofline drift: cpu · roofline-tiny · vllm 0.32.0: the store holds no earlier run of this "
                     "setup: 1 measured, nothing to compare with yet (already stored: run "
                     "20261205T085428Z-nocommit-aaaaaa holds this very measurement, which a replay is not compared "
                     "with); not failed: --roofline-drift-min-compared 0"]


def test_a_re_replay_with_an_earlier_night_still_compares_and_fails_when_it_cannot() -> None:
    # an earlier night (12-04) measured a: the re-replay compares with it (1 of 1, no line); one that measured only
    # b leaves a uncompared: 0 of 1 under --roofline-drift-fail fails, as before
    own = _run("20261205T085428Z-nocommit-aaaaaa", NIGHT, _value("a", 300.0), measurements=(MID,))
    older = _run("20261204T085428Z-nocommit-bbbbbb", "2026-12-04T08:54:28Z", _value("a", 305.0))
    assert compared_check(_session([older, own], [_value("a", 300.0)], DriftPolicy())) == ([], False)
    other = _run("20261204T085428Z-nocommit-bbbbbb", "2026-12-04T08:54:28Z", _value("b", 305.0))
    lines, failed = compared_check(_session([other, own], [_value("a", 300.0)], DriftPolicy()))
    assert failed and lines[0].startswith("roofline drift: FAILED (--roofline-drift-fail): cpu · roofline-tiny · "
                                          "vllm 0.32.0: only 0 of 1 measured predictions were compared")


def test_a_replay_older_than_every_stored_night_has_nothing_before_it() -> None:
    # the store holds only a later night (12-06) of the setup: the 12-05 replay is compared with nothing before it
    later = _run("20261206T085428Z-nocommit-cccccc", "2026-12-06T08:54:28Z", _value("a", 320.0))
    lines, failed = compared_check(_session([later], [_value("a", 300.0)], DriftPolicy(), measurement="m-other"))
    assert failed
    assert lines[0].startswith("roofline drift: FAILED (--roofline-drift-fail): cpu · roofline-tiny · vllm 0.32.0: "
                               "the store holds no earlier run of this setup: 1 measured, none compared (its runs in "
                               "the store were measured after this replayed night)")


def test_a_baseline_pinned_to_the_replays_own_run_says_so() -> None:
    own = _run("20261205T085428Z-nocommit-aaaaaa", NIGHT, _value("a", 300.0), measurements=(MID,))
    policy = DriftPolicy(baseline="run:20261205T085428Z")
    d = drift_for([_value("a", 300.0)], [own], policy, setup=SETUP, before=NIGHT, measurement=MID)[_value("a", 1).key]
    assert d.status is DriftStatus.NEW and d.stored_as == own.run_id
    assert d.text == ("new: the pinned run 20261205T085428Z-nocommit-aaaaaa is this measurement itself, already "
                      "stored, which a replay is not compared with")


# ------------------------------------------------------------------------------ #10: the same run twice


def test_comparing_a_run_with_itself_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = DirectoryStore(tmp_path / "hist")
    a = store.add(RunRecord(summary=_run("", NIGHT, _value("a", 300.0))))
    b = store.add(RunRecord(summary=_run("", "2026-12-06T08:54:28Z", _value("a", 310.0))))
    uri = str(tmp_path / "hist")
    for second in (a.run_id, a.run_id[:20], str(tmp_path / "hist" / a.location)):  # its id, a prefix, its folder
        assert main(["compare", "--store", uri, a.run_id, second]) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err.strip() == (f"roofline: A and B are the same run ({a.run_id}): a run compared with itself "
                                        "changes by 0 everywhere; give two different runs (`roofline compare --store "
                                        "URI` with no ids lists them)")
    assert main(["compare", "--store", uri, a.run_id, b.run_id]) == 0  # two runs: the table


# ------------------------------------------------------------------------------ #9: a path is no assignment


@pytest.mark.parametrize(("text", "shown"), [
    # a path whose last component is a secret-looking word: nothing follows it as its value
    ("'../../etc/passwd': no run with that id in the store", "'../../etc/passwd': no run with that id in the store"),
    ("/etc/passwd: No such file or directory", "/etc/passwd: No such file or directory"),
    ("C:\\keys\\password: not found", "C:\\keys\\password: not found"),
    # assignments: the value masked
    ("passwd=hunter2", f"passwd={REDACTED}"),
    ("password: hunter2", f"password: {REDACTED}"),
    ("PGPASSWORD=hunter2 psql -h db", f"PGPASSWORD={REDACTED} psql -h db"),
    ("export MYSQLPASSWD=hunter2;", f"export MYSQLPASSWD={REDACTED};"),
    ('{"password": "hunter2"}', f'{{"password": "{REDACTED}"}}'),
    ("{'passwd': 'hunter2'}", f"{{'passwd': '{REDACTED}'}}"),
    ("db_password=hunter2 and --api-key sk-abcdef", f"db_password={REDACTED} and --api-key {REDACTED}"),
])
def test_free_text_masks_assignments_not_paths(text: str, shown: str) -> None:
    assert redact_text(text) == shown


@pytest.mark.parametrize(("text", "shown"), [
    # a value after a password-like key is masked when it can be a password: any quoted string, any word
    ("{'passwd': 'hunter2'}", f"{{'passwd': '{REDACTED}'}}"),
    ("{'passwd': 'no'}", f"{{'passwd': '{REDACTED}'}}"),
    ("{'password': 'None'}", f"{{'password': '{REDACTED}'}}"),  # quoted: the string "None"
    # an unquoted no / off is a boolean in YAML 1.1 but the string "no" in YAML 1.2: it may be the password itself,
    # so it stays masked (the redactor cannot tell, and a leaked password costs more than a hidden "no")
    ("'passwd': no", f"'passwd': {REDACTED}"),
    ("{'passwd': no}", f"{{'passwd': {REDACTED}}}"),
    ("password: off", f"password: {REDACTED}"),
    ("password: none", f"password: {REDACTED}"),  # YAML's null is null / Null / NULL / ~, not none
    # an environment's, a query's or a command line's value is a string, whatever it spells
    ("PGPASSWORD=null psql", f"PGPASSWORD={REDACTED} psql"),
    ("password=None", f"password={REDACTED}"),
    ("--password None", f"--password {REDACTED}"),
    ("password: 1234", f"password: {REDACTED}"),
    # null and booleans after a colon are no value in JSON, a Python repr or YAML: they say no password was given,
    # which *** would hide (it reads as "a password was given")
    ("{'password': None}", "{'password': None}"),
    ('{"password": null, "api_key": "sk-abcdef"}', f'{{"password": null, "api_key": "{REDACTED}"}}'),
    ("password: ~", "password: ~"),
    ("{'passwd': False}", "{'passwd': False}"),
    ("password: true", "password: true"),
])
def test_a_password_key_masks_a_value_that_can_be_a_password(text: str, shown: str) -> None:
    assert redact_text(text) == shown
