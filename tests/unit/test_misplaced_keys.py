"""A file-level key written on a prediction (trial s26b L15: ``model_column: serving`` on a prediction got the list
of prediction keys and nothing more) is named as the top level's, with where it goes."""

from __future__ import annotations

from pytest_roofline.errors import SpecError
from pytest_roofline.format.spec import loads_spec

HEAD = "hardware: h100-sxm\nmodel: llama-3.1-8b\npredictions:\n"


def _error(extra: str) -> SpecError:
    """The prediction's error (a file's other predictions still load: the error is that prediction's)."""
    text = HEAD + f"  - {{id: t, quantity: batch1_ceiling, predicted: 208.6 tok/s, {extra}}}\n"
    err = loads_spec(text, file="k.yaml").predictions[0].error
    assert isinstance(err, SpecError)
    return err


def test_a_top_level_key_on_a_prediction_says_where_it_goes() -> None:
    err = _error("model_column: serving")
    assert err.line == 4 and "unknown key 'model_column'" in err.message
    assert err.hint == ("model_column: is a key of the file's top level (it applies to every prediction): move it "
                        "there, unindented")


def test_a_setup_section_on_a_prediction_names_its_setup_too() -> None:
    err = _error("hardware: a100-sxm4-80gb")
    assert err.hint.endswith("; for this prediction alone write it under its setup: (setup: {hardware: ...})")


def test_a_typo_still_gets_its_did_you_mean() -> None:
    assert _error("toleranse: ±5%").hint == "did you mean 'tolerance' or 'math_tolerance'?"
