"""Trial s25c #7: a Ctrl-C between a point's last completed request and its record is noted, not raised, so the
complete point is stored and the run then stops (the sweep raises it after ``add_point``); the handler is put back
as the after-work ends, so the next Ctrl-C interrupts at once. Whatever handler was there before (pytest's, or
SIG_IGN where the shell ignores SIGINT, as in CI) is the one put back."""

from __future__ import annotations

import os
import signal

import pytest

from pytest_roofline.measure import sweep


def _raise(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def test_a_ctrl_c_in_the_after_work_is_noted_then_raised_once() -> None:
    before = signal.signal(signal.SIGINT, _raise)  # a known handler, whatever the process inherited
    try:
        assert sweep._defer_interrupts() is True
        os.kill(os.getpid(), signal.SIGINT)  # delivered to the main thread at once: noted, not raised
        assert sweep._end_deferral() is True
        assert signal.getsignal(signal.SIGINT) is _raise  # the handler is back
        with pytest.raises(KeyboardInterrupt):
            sweep._raise_deferred()
        sweep._raise_deferred()  # once: the count is cleared
    finally:
        signal.signal(signal.SIGINT, before)


def test_no_ctrl_c_no_interrupt() -> None:
    before = signal.signal(signal.SIGINT, _raise)
    try:
        assert sweep._defer_interrupts() is True
        assert sweep._end_deferral() is False and sweep._end_deferral() is False  # a second end is a no-op
        sweep._raise_deferred()
        assert signal.getsignal(signal.SIGINT) is _raise
    finally:
        signal.signal(signal.SIGINT, before)
