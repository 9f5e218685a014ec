"""Trial s25c #7: a Ctrl-C between a point's last completed request and its storing is noted, not raised, so the
complete point is stored and the run then stops (the sweep raises it after ``add_point``); the handler is put back
after, so the next Ctrl-C interrupts at once."""

from __future__ import annotations

import os
import signal

import pytest

from pytest_roofline.measure import sweep


def test_a_ctrl_c_in_the_after_work_waits_for_the_point_and_the_next_one_interrupts() -> None:
    before = signal.getsignal(signal.SIGINT)
    sweep._defer_interrupts()
    os.kill(os.getpid(), signal.SIGINT)  # delivered to the main thread at once: noted, not raised
    assert sweep._end_deferral() is True
    assert signal.getsignal(signal.SIGINT) is before
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
        signal.sigtimedwait([], 0.01)  # a bytecode boundary for the handler to run at


def test_no_ctrl_c_no_interrupt() -> None:
    sweep._defer_interrupts()
    assert sweep._end_deferral() is False and sweep._end_deferral() is False  # a second end is a no-op
