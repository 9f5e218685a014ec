"""tests/support/patience.py: bounds scale with what is awaited, and a timeout says what it waited for."""

from __future__ import annotations

import pytest
from support import patience


def test_bounds_scale_with_the_typical_duration_and_the_patience_factor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROOFLINE_TEST_PATIENCE", raising=False)
    assert patience.bound_s(0.5) == 60.0  # the floor: below a minute, a loaded machine's noise dominates
    assert patience.bound_s(45) == 900.0  # an engine start: 20x its idle 45 s
    monkeypatch.setenv("ROOFLINE_TEST_PATIENCE", "3")
    assert patience.bound_s(45) == 2700.0


def test_a_wait_that_runs_out_says_what_it_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROOFLINE_TEST_PATIENCE", "0.0005")  # a 30 ms bound
    calls = []
    with pytest.raises(patience.TookTooLong, match=r"waited 0 s for the stand-in to exit; that normally takes "
                                                   r"about 2 s on an idle 2-core machine"):
        patience.wait_until(lambda: calls.append(1), what="the stand-in to exit", typical_s=2, interval_s=0.001)
    assert len(calls) >= 2  # polled until the bound, not once
    assert patience.wait_until(lambda: "ready", what="x", typical_s=1) == "ready"
