"""Probe 15's history findings (notes/s15/probe.md §1), the parts that are pure functions: the outcomes worked out
by hand from small runs. Through pytest and on each store: tests/integration/test_history_stored_replays.py."""

from __future__ import annotations

import dataclasses

from pytest_roofline.history import (
    RunRecord,
    RunSummary,
    SetupKey,
    StoredValue,
    prediction_key,
)
from pytest_roofline.history._store import merge_record

SETUP = SetupKey("cpu", "roofline-tiny", "0.32.0")
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
