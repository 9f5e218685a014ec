"""The verdict crosses the pytest-report (and xdist) boundary as its dict form and is turned back once
(``Verdict.from_dict``); what is said after scoring reaches it as a new final verdict (``Verdict.amended``)."""

from __future__ import annotations

import dataclasses
import json

import pytest
from support.paths import DAY3, DAY3_RESULTS

from pytest_roofline.format.spec import load_spec
from pytest_roofline.measure.results import RecordedMeasurement
from pytest_roofline.scoring import Verdict, VerdictMode, VerdictStatus, score


def _verdicts() -> list[Verdict]:
    spec = load_spec(DAY3)
    meas = RecordedMeasurement(json.loads(DAY3_RESULTS.read_text()))
    return [score(spec, p, "measured" if p.q.measure is not None else "math", meas)
            for p in spec.predictions if p.error is None]


def test_the_dict_form_turns_back_into_the_same_verdict() -> None:
    for v in _verdicts():
        d = json.loads(json.dumps(v.to_dict()))  # as it travels on a pytest report
        back = Verdict.from_dict(d)
        assert back.to_dict() == v.to_dict()
        assert isinstance(back.status, VerdictStatus) and isinstance(back.mode, VerdictMode)
        with pytest.raises(dataclasses.FrozenInstanceError):
            back.reason = "edited"


def test_amended_is_a_new_final_verdict() -> None:
    v = next(v for v in _verdicts() if v.mode is VerdictMode.MEASURED)
    a = v.amended(notes_before=["first"], notes_after=["last"], reason_suffix=" [said after]")
    assert a.measured_notes == ["first", *v.measured_notes, "last"] and a.reason == v.reason + " [said after]"
    assert "first" not in v.measured_notes and not v.reason.endswith("[said after]")
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.reason = "edited"
