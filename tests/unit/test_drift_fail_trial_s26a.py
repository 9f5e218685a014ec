"""Trial s26a's nightly findings on the compared-nothing check and the drift line, worked out by hand from small
runs (``pytest_plugin.history.compared_check``, ``history.drift_for``). Through pytest:
tests/integration/test_history_stored_replays.py and tests/integration/test_history_ini_path.py."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_roofline.history import DriftPolicy, RunSummary, SetupKey, StoredValue, drift_for, prediction_key
from pytest_roofline.pytest_plugin.history import compared_check

SETUP = SetupKey("cpu", "roofline-tiny", "0.32.0")
V33 = SetupKey("cpu", "roofline-tiny", "0.33.0")
NIGHT = "2026-12-07T23:00:00Z"


def _value(pid: str, measured: float, file: str = "nightly.yaml") -> StoredValue:
    return StoredValue(key=prediction_key(file, pid, {}), prediction_id=pid, file=file, quantity="output_throughput",
                       dimension="throughput", status="pass", mode="measured", unit="tok/s", measured=measured,
                       predicted=700.0, predicted_text="700 tok/s", definition_hash="h")


def _run(run_id: str, started_at: str, *values: StoredValue, setup: SetupKey = SETUP) -> RunSummary:
    return RunSummary(run_id=run_id, setup=setup, started_at=started_at, mode="replay", values=values)


def _session(runs: list[RunSummary], values: list[StoredValue], policy: DriftPolicy | None = None,
             share: float = 0.5) -> Any:
    policy = policy or DriftPolicy()
    drifts = drift_for(values, runs, policy, setup=SETUP, before=NIGHT)
    reported = {k: {**d.to_dict(), "setup": dataclasses.asdict(SETUP),
                    "file": next(v.file for v in values if v.key == k)} for k, d in drifts.items()}
    return SimpleNamespace(drift_min_compared=share, reported_drifts=reported, history_runs=runs, drift_fail=True,
                           measured=True, verdicts=[], reported_verdicts={}, mode="replay", measured_at=NIGHT,
                           replay_measurement_id=None, history_store=None, drift_policy=policy,
                           history_stored_setups={SETUP})


def test_a_setups_first_night_fails_naming_what_the_store_holds_of_its_files() -> None:
    # #2, #9: the store holds nightly.yaml on vLLM 0.33.0 only (2 runs); tonight is 0.32.0: 1 measured, 0 compared
    runs = [_run("20261205T020000Z-a-000001", "2026-12-05T02:00:00Z", _value("a", 300.0), setup=V33),
            _run("20261206T020000Z-a-000002", "2026-12-06T02:00:00Z", _value("a", 301.0), setup=V33)]
    lines, failed = compared_check(_session(runs, [_value("a", 300.0)]))
    assert failed
    assert lines == ["roofline drift: FAILED (--roofline-drift-fail): cpu · roofline-tiny · vllm 0.32.0: the store "
                     "holds no earlier run of this setup: 1 measured, none compared; the store holds nightly.yaml on "
                     "cpu · roofline-tiny · vllm 0.33.0 (2 runs, latest 2026-12-06): if tonight's setup was not meant "
                     "to change, see why; this night is stored now, so the next night compares with it: a night that "
                     "compares nothing cannot pass"]
    # --roofline-drift-min-compared 0 lets it pass, said
    lines, failed = compared_check(_session(runs, [_value("a", 300.0)], share=0.0))
    assert not failed and lines[0].endswith("if tonight's setup was not meant to change, see why; not failed: "
                                            "--roofline-drift-min-compared 0")


def test_a_new_file_beside_compared_ones_is_its_first_night_not_a_failure() -> None:
    # #4: nightly.yaml's 2 predictions compared; extra.yaml's 4 are new and no stored run measured extra.yaml. The
    # share is 2 of 2 (extra.yaml said, not counted): the night passes. It read "only 2 of 6 ... compares nothing"
    old = _run("20261206T020000Z-a-000001", "2026-12-06T02:00:00Z", _value("a", 300.0), _value("b", 200.0))
    tonight = [_value("a", 301.0), _value("b", 199.0), *(_value(p, 100.0, "extra.yaml") for p in "cdef")]
    lines, failed = compared_check(_session([old], tonight))
    assert not failed
    assert lines == ["roofline drift: cpu · roofline-tiny · vllm 0.32.0: first night in this store of extra.yaml "
                     "(4 measured): not counted in the compared share; the next night compares it"]
    # a file the store has measured before whose predictions all came out new is not a first night: counted, and
    # 2 of 6 compared fails, saying "too few", not "nothing"
    seen = _run("20261205T020000Z-a-000000", "2026-12-05T02:00:00Z", _value("z", 1.0, "extra.yaml"))
    lines, failed = compared_check(_session([seen, old], tonight))
    assert failed and lines[0].startswith("roofline drift: FAILED (--roofline-drift-fail): cpu · roofline-tiny · "
                                          "vllm 0.32.0: only 2 of 6 measured predictions were compared")
    assert lines[0].endswith("a night that compares too few cannot pass")


def test_a_pinned_baseline_of_another_setup_is_named_as_the_reason() -> None:
    # #3: run:ID names a 0.33.0 run; tonight is 0.32.0 and the store holds 0.32.0 nights too: nothing is compared,
    # every night, and the reason is the pin, not "its first night ... the next night compares with it"
    ours = _run("20261206T020000Z-a-000001", "2026-12-06T02:00:00Z", _value("a", 300.0))
    pin = _run("20261206T030000Z-a-000009", "2026-12-06T03:00:00Z", _value("a", 300.0), setup=V33)
    policy = DriftPolicy(baseline="run:20261206T030000Z")
    lines, failed = compared_check(_session([ours, pin], [_value("a", 300.0)], policy))
    why = ("the pinned baseline run 20261206T030000Z-a-000009 is of cpu · roofline-tiny · vllm 0.33.0, not of "
           "cpu · roofline-tiny · vllm 0.32.0: it is never this setup's baseline; pin a run of this setup "
           "(`roofline history` lists them) or use previous")
    assert failed and why in lines[0] and "first night" not in lines[0]
    rs = _session([ours, pin], [_value("a", 300.0)], policy)
    rs.drift_fail = False  # said every night, not only under --roofline-drift-fail
    lines, failed = compared_check(rs)
    assert not failed and lines == [f"roofline drift: cpu · roofline-tiny · vllm 0.32.0: nothing compared: {why}"]


def test_a_baseline_of_tonights_day_is_named_by_its_time() -> None:
    # #7: one earlier run, at 01:00 the same day as tonight's 23:00 (the replayed night's time): "2026-12-07 01:00
    # UTC", not the date alone; a baseline of another day keeps its date alone
    same = _run("20261207T010000Z-b910263-000001", "2026-12-07T01:00:00Z", _value("a", 300.0))
    d = drift_for([_value("a", 390.0)], [same], DriftPolicy(), setup=SETUP, before=NIGHT)[_value("a", 1).key]
    assert "vs previous run (2026-12-07 01:00 UTC;" in d.text
    other = _run("20261206T010000Z-b910263-000001", "2026-12-06T01:00:00Z", _value("a", 300.0))
    d = drift_for([_value("a", 390.0)], [other], DriftPolicy(), setup=SETUP, before=NIGHT)[_value("a", 1).key]
    assert "vs previous run (2026-12-06;" in d.text


def _old(pid: str, measured: float, file: str) -> StoredValue:
    """A value as the old key scheme stored it: its file under pytest's rootdir, no definition hash."""
    return dataclasses.replace(_value(pid, measured, file), definition_hash="")


def test_compare_matches_two_old_scheme_nights_through_the_stores_later_runs() -> None:
    # #8: two nights stored under the old scheme from two rootdirs (proj/predictions/nightly.yaml and nightly.yaml)
    # share no key; drift and the trend page matched them through the store's current-scheme runs, compare read
    # "NOTHING WAS COMPARED" (exit 1). The third night's current key joins them.
    from pytest_roofline.history import compare_runs, measured_in_both, render_comparison

    a = _run("20261201T020000Z-a-000001", "2026-12-01T02:00:00Z", _old("a", 300.0, "proj/predictions/nightly.yaml"))
    b = _run("20261202T020000Z-a-000002", "2026-12-02T02:00:00Z", _old("a", 330.0, "nightly.yaml"))
    c = _run("20261203T020000Z-a-000003", "2026-12-03T02:00:00Z", _value("a", 310.0, "predictions/nightly.yaml"))
    assert measured_in_both(compare_runs(a, b)) == []  # alone, nothing to meet at
    rows = compare_runs(a, b, [a, b, c])
    [row] = measured_in_both(rows)
    assert row.change_rel == pytest.approx(330.0 / 300.0 - 1)
    # #10: with a store, the footer says how many earlier nights it holds, not to pass --store
    text = " ".join(render_comparison(a, b, rows, width=100, earlier=1))
    assert "the store holds 1 before B of its setup" in text and "(--store)" not in text
    assert "(--store)" in " ".join(render_comparison(a, b, rows, width=100))


def test_a_renamed_file_beside_a_compared_one_is_named_as_maybe_moved() -> None:
    # trial s26d #5: nightly.yaml renamed renamed.yaml, run beside cpu.yaml: cpu.yaml's value compared, renamed.yaml
    # its first night (green), and nothing said that the previous run measured nightly.yaml with the same ids
    old = _run("20261206T020000Z-a-000001", "2026-12-06T02:00:00Z", _value("a", 300.0), _value("b", 200.0),
               _value("c", 100.0, "cpu.yaml"))
    tonight = [_value("c", 101.0, "cpu.yaml"), _value("a", 300.0, "renamed.yaml"), _value("b", 200.0, "renamed.yaml")]
    lines, failed = compared_check(_session([old], tonight))
    assert not failed
    assert lines == ["roofline drift: cpu · roofline-tiny · vllm 0.32.0: first night in this store of renamed.yaml "
                     "(2 measured): not counted in the compared share; the next night compares it; the setup's "
                     "previous run measured nightly.yaml (2 of the same prediction ids), not run tonight: moved or "
                     "renamed? (its series end there; a prediction's identity is its file's path from the "
                     "repository root)"]
