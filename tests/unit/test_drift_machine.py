"""Drift and a night whose machine ran apart (issue 21): the host probe (measure/probe.py) timed around each point
tells a slower machine from a slower engine. Tonight's value on such a machine is uncertain, never drifted or
steady; an earlier such night is no baseline and no part of the nights' spread; compare says "machine". Every number
is worked out by hand in the test."""

from __future__ import annotations

import pytest

from pytest_roofline.history import DriftPolicy, DriftStatus, RunSummary, SetupKey, StoredValue, drift_for
from pytest_roofline.history._compare import compare_runs, comparison_json, render_comparison
from pytest_roofline.history._drift import compared_count, drift_counts, night_machine, nights_values
from pytest_roofline.history._machine import MACHINE_SHIFT, machine_apart, machine_moved, value_probe
from pytest_roofline.measure.probe import HostProbe, probe_host, probe_threads

SETUP = SetupKey("cpu", "roofline-tiny", "0.32.0")
KEY = "p.yaml::tput-c4::concurrency=4"


def value(measured: float, probe: float | None) -> StoredValue:
    # no interval: an exact value, so only the threshold, the nights' spread and the machine decide
    return StoredValue(key=KEY, prediction_id="tput-c4", file="p.yaml", quantity="output_throughput",
                       dimension="throughput", status="pass", mode="measured", at={"concurrency": "4"}, unit="tok/s",
                       measured=measured, predicted_text="1,000 tok/s", definition_hash="h",
                       host_probe_gflop_per_s=probe)


def night(day: int, measured: float, probe: float | None) -> RunSummary:
    return RunSummary(run_id=f"202611{day:02d}T020000Z-c{day}-aaaaaa", setup=SETUP,
                      started_at=f"2026-11-{day:02d}T02:00:00Z", mode="engine", values=(value(measured, probe),))


#: --roofline-drift-machine 20%: the rule on
RULE = DriftPolicy("10%", "previous", "20%")


def one(now: StoredValue, nights: list[RunSummary], policy: DriftPolicy | None = None):
    return drift_for([now], nights, policy or RULE, setup=SETUP)[KEY]


# --------------------------------------------------------------------------- the rule's pieces


def test_a_value_keeps_the_slowest_probe_of_its_points() -> None:
    results = {"points": [
        {"id": "closed-c4", "host_probe": {"before_gflop_per_s": 7.5, "after_gflop_per_s": 7.1}},
        {"id": "closed-c8", "host_probe": {"before_gflop_per_s": 3.9, "after_gflop_per_s": 7.4}},
        {"id": "closed-c16"},  # a point written before probes were kept
    ]}
    assert value_probe(results, ["closed-c4"]) == 7.1
    assert value_probe(results, ["closed-c4", "closed-c8"]) == 3.9  # the machine at its worst
    assert value_probe(results, ["closed-c16"]) is None
    assert value_probe({"points": [{"id": "x", "host_probe": {"before_gflop_per_s": float("nan"),
                                                             "after_gflop_per_s": -1}}]}, ["x"]) is None


def test_apart_means_more_than_the_shift_either_way() -> None:
    assert MACHINE_SHIFT == 0.20
    assert not machine_apart(6.3, 7.5)  # 16 % slower: the same machine
    assert machine_apart(5.9, 7.5)  # 21.3 % slower
    assert machine_apart(9.1, 7.5)  # 21.3 % faster
    assert not machine_apart(8.9, 7.5)  # 18.7 % faster
    assert not machine_apart(None, 7.5) and not machine_apart(4.0, None)
    why = machine_moved(3.75, 7.5)
    assert "50% slower" in why and "3.75 vs 7.5 GFLOP/s" in why and "beyond 20%" in why
    assert not machine_apart(5.9, 7.5, None)  # the rule off
    assert machine_apart(6.3, 7.5, 0.15)  # 16 % slower, beyond a 15 % shift
    assert machine_moved(7.0, 7.5) == ""


def test_the_probe_runs_on_every_usable_cpu_and_says_what_it_did() -> None:
    p = probe_host(budget_s=0.02, settle=False)
    assert isinstance(p, HostProbe) and p.threads == probe_threads() >= 1
    # every thread works at least the budget from its own start, and wall_s spans the first start to the last end
    assert p.gflop_per_s > 0 and p.wall_s >= 0.02
    assert set(p.to_dict()) == {"gflop_per_s", "threads", "wall_s"}


# --------------------------------------------------------------------------- drift


NIGHTS = [night(1, 1000.0, 7.5), night(2, 1010.0, 7.4), night(3, 990.0, 7.6)]


def test_a_slow_machine_tonight_is_uncertain_not_drifted() -> None:
    # the three nights' spread: mean 1000, sd 10, t(0.975, 2) = 4.303 × 10 × √(4/3) = 49.7; 600 is 40 % off and far
    # outside it: on the same machine, drifted
    same = one(value(600.0, 7.45), NIGHTS)
    assert same.status is DriftStatus.DRIFTED and not same.machine
    # the machine tonight ran at 3.7 against the nights' median 7.5 (50.7 % slower): not judged
    slow = one(value(600.0, 3.7), NIGHTS)
    assert slow.status is DriftStatus.UNCERTAIN
    assert "not judged" in slow.text and "51% slower" in slow.text and "3.7 vs 7.5 GFLOP/s" in slow.text
    assert compared_count([slow]) == (0, 1)  # measured, not compared: a night on another machine compared nothing
    assert "1 not judged (the machine itself ran apart from the other nights)" in drift_counts([slow])


def test_without_the_rule_the_night_is_judged_and_its_line_says_what_the_probe_saw() -> None:
    # the shipped default (no --roofline-drift-machine): -40 % beyond the nights' spread is drifted, with the note
    d = one(value(600.0, 3.7), NIGHTS, DriftPolicy("10%"))
    assert d.status is DriftStatus.DRIFTED and not d.machine
    assert "note: the machine itself ran 51% slower than on the other nights (host probe 3.7 vs 7.5 GFLOP/s" in d.text
    assert "--roofline-drift-machine 20% leaves such a night unjudged" in d.text
    # and a slow earlier night stays a baseline: the previous night's 550 against tonight's 1,005 is +82.7 %
    assert one(value(1005.0, 7.5), [*NIGHTS, night(4, 550.0, 3.8)], DriftPolicy("10%")).baseline == 550.0


def test_the_rule_takes_a_share_above_zero() -> None:
    assert RULE.machine_shift == pytest.approx(0.2) and DriftPolicy("10%").machine_shift is None
    with pytest.raises(ValueError, match="above 0"):
        DriftPolicy("10%", "previous", "0%")


def test_tonight_without_a_probe_is_judged_as_before() -> None:
    assert one(value(600.0, None), NIGHTS).status is DriftStatus.DRIFTED  # a replay of an older file: no probe


def test_a_slow_earlier_night_is_no_baseline_and_no_part_of_the_spread() -> None:
    # night 4 ran on a machine half as fast (its value 550: every figure slower); tonight 1005 on the usual machine.
    # Without the machine rule the previous night (550) is the baseline: +82.7 %, drifted by a machine.
    nights = [*NIGHTS, night(4, 550.0, 3.8)]
    d = one(value(1005.0, 7.5), nights)
    assert d.baseline == 990.0  # night 3, the latest night on the usual machine
    assert d.status is DriftStatus.STEADY  # +1.5 %
    assert "1 earlier night skipped: its machine ran more than 20% apart" in d.text
    # the spread leaves night 4 out: the median of the probes 7.5, 7.4, 7.6, 3.8 is 7.45, and 3.8 is 49 % below it
    assert night_machine(KEY, nights) == pytest.approx(7.45)
    assert nights_values(KEY, nights, machine=7.45, shift=0.2) == [990.0, 1010.0, 1000.0]
    assert nights_values(KEY, nights, machine=7.45) == [550.0, 990.0, 1010.0, 1000.0]  # the rule off
    assert nights_values(KEY, nights) == [550.0, 990.0, 1010.0, 1000.0]


def test_nights_without_probes_change_nothing() -> None:
    plain = [night(1, 1000.0, None), night(2, 1010.0, None), night(3, 550.0, None)]
    d = one(value(1005.0, 7.5), plain)
    assert night_machine(KEY, plain) is None and not d.machine
    assert d.baseline == 550.0  # the previous night, as before probes were kept


def test_the_machine_is_not_known_before_three_earlier_nights_kept_a_probe() -> None:
    # as the nights' spread (MIN_NIGHTS): with one or two earlier probes their median is those nights themselves, so
    # drift, the rule on, says nothing of the machine: no reason not to judge, no note, no night skipped
    two = NIGHTS[:2]  # probes 7.5 and 7.4
    assert night_machine(KEY, two) is None and night_machine(KEY, NIGHTS[:1]) is None
    d = one(value(600.0, 3.7), two)  # 3.7 is 50 % below either night, but their machine is not known yet
    assert not d.machine and "machine" not in d.text
    # -40 % from the previous night (1010), exact values: beyond the threshold and distinguishable, but 2 of 3
    # earlier nights: uncertain for the run-to-run noise, as without probes
    assert d.status is DriftStatus.UNCERTAIN
    assert "2 of 3 earlier nights: the run-to-run noise is not known yet" in d.text
    assert d == one(value(600.0, None), two)  # the very drift of a value without a probe
    assert compared_count([d]) == (1, 1)  # judged (as far as two nights allow), not "not judged: machine"
    # without the rule, no note either
    assert "machine" not in one(value(600.0, 3.7), two, DriftPolicy("10%")).text
    # the fault this fixes: a slow first night (probe 4.2) and the usual machine after it (7.5). Night 2 was "the
    # machine ran 79% faster" (7.5 / 4.2 = 1.786) and, the rule on, not judged; it is judged now: +0.5 %, steady
    slow_first = [night(1, 1000.0, 4.2)]
    second = one(value(1005.0, 7.5), slow_first)
    assert second.status is DriftStatus.STEADY and not second.machine and "machine" not in second.text
    # night 3 read "25% faster" (7.5 against median(4.2, 7.5) = 5.85: 1.282) and both earlier nights, 28 % from that
    # median either way, were skipped as baselines (it was "new"); now night 2 is its baseline: 1005 -> 1008, steady
    third = one(value(1008.0, 7.5), [*slow_first, night(2, 1005.0, 7.5)])
    assert third.status is DriftStatus.STEADY and third.baseline == 1005.0 and "machine" not in third.text
    # from three earlier probes the median holds against the one odd night: median(4.2, 7.5, 7.5) = 7.5
    nights = [*slow_first, night(2, 1005.0, 7.5), night(3, 1008.0, 7.5)]
    assert night_machine(KEY, nights) == 7.5
    assert not one(value(1002.0, 7.5), nights).machine
    # and night 1, the slow one, is no baseline (4.2 / 7.5 = 0.56: 44 % slower): the previous held night is night 3
    d4 = one(value(1002.0, 7.5), nights)
    assert d4.baseline == 1008.0 and d4.status is DriftStatus.STEADY


def test_a_slow_night_after_three_usual_ones_is_not_judged() -> None:
    # night 4 at 4.2 against median(7.5, 7.4, 7.6) = 7.5: 4.2 / 7.5 = 0.56, 44 % slower, beyond 20 %
    d = one(value(1001.0, 4.2), NIGHTS)
    assert d.status is DriftStatus.UNCERTAIN
    assert "not judged: the machine itself ran 44% slower than on the other nights (host probe 4.2 vs 7.5" in d.text


def test_a_pinned_baseline_is_kept_whatever_its_machine() -> None:
    nights = [*NIGHTS, night(4, 550.0, 3.8)]
    d = one(value(1005.0, 7.5), nights, DriftPolicy("10%", "run:20261104", "20%"))
    assert d.baseline == 550.0  # the user named that run: it is the baseline (tonight's machine is the usual one)


# --------------------------------------------------------------------------- compare


def test_compare_does_not_judge_two_runs_on_machines_apart() -> None:
    a, b = night(1, 1000.0, 7.5), night(2, 600.0, 3.7)
    assert compare_runs(a, b)[0].significance != "machine"  # roofline compare without --machine: judged
    rows = compare_runs(a, b, machine_shift=0.2)
    assert rows[0].significance == "machine"
    text = "\n".join(render_comparison(a, b, rows, width=160))
    assert "not judged (machine)" in text
    assert "1 not judged (machine): the two runs' host probes are further apart than --machine allows" in text
    j = comparison_json(a, b, rows)
    assert j["compared"] == 0 and j["measured_in_both"] == 1
    same = compare_runs(a, night(2, 600.0, 7.2), machine_shift=0.2)
    assert same[0].significance != "machine"
