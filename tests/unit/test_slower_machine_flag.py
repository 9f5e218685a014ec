"""Trial s25c #3: a point measured while the machine ran slower says so on every verdict at it; the run's fastest
point before it is the reference, and the shift drift allows (20 %) is the threshold."""

from __future__ import annotations

from pytest_roofline.history._machine import MACHINE_SHIFT
from pytest_roofline.measure.probe import MACHINE_SHIFT as PROBE_SHIFT
from pytest_roofline.measure.probe import slower_machine_flag


def test_the_trials_half_speed_points_are_flagged() -> None:
    # C = 1: 6.92 before, 5.81 after (mean 6.365); C = 4: 3.47 and 3.44 (mean 3.455): 0.54 of it
    flag = slower_machine_flag((3.47 + 3.44) / 2, (6.92 + 5.81) / 2)
    assert flag is not None and "3.46 GFLOP/s, 0.54x the run's fastest point before it (6.37)" in flag


def test_within_the_shift_or_without_a_reference_there_is_no_flag() -> None:
    assert MACHINE_SHIFT == PROBE_SHIFT == 0.20  # one home, re-exported for drift
    assert slower_machine_flag(5.0, 6.0) is None  # 0.83x: within 1 ÷ 1.2
    assert slower_machine_flag(4.9, 6.0) is not None  # 0.817x: just past it
    assert slower_machine_flag(3.0, None) is None  # the run's first point has nothing to compare with
