"""A vllm bench serve file whose counts cannot have been measured is refused, never scored (issue 23, the December
reliability review's case 9.34: ``completed`` 1e300 of ``num_prompts`` 10 with a negative ``duration`` gave TTFT and
TPOT a measured PASS on all three files of tests/data/peers/cpu-tiny-vllm-bench)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_roofline.errors import ResultsError
from pytest_roofline.measure.results.peers.vllm_bench import bench_point

SWEEP_C1 = Path(__file__).parents[1] / "data" / "peers" / "cpu-tiny-vllm-bench" / "sweep_c1.json"


def _doc(**change: object) -> dict:
    return {**json.loads(SWEEP_C1.read_text()), **change}


@pytest.mark.parametrize(("change", "said"), [
    ({"completed": 1e300}, r'"completed" 1e\+300 \+ "failed" 0 is more than the 10 requests'),
    ({"completed": 8, "failed": 3}, r'"completed" 8 \+ "failed" 3 is more than the 10 requests'),
    ({"completed": -10}, r'"completed" is -10, not a count'),
    ({"failed": -5}, r'"failed" is -5, not a count'),
    ({"completed": 2.5}, r'"completed" is 2.5, not a count'),
    ({"duration": -4.0}, r'"duration" is -4 s'),
    ({"duration": 0}, r'"duration" is 0 s'),
])
def test_impossible_counts_are_refused(change: dict, said: str) -> None:
    with pytest.raises(ResultsError, match=said):
        bench_point(_doc(**change), "sweep_c1.json")


def test_the_recorded_file_and_an_older_partial_one_are_read() -> None:
    """The real recording (10 of 10) and an older-format file with 1 of 10 completed (9.33: read, 9 failed)."""
    assert bench_point(_doc(), "sweep_c1.json")["client"]["completed"] == 10
    old = _doc(completed=1)
    del old["failed"]
    assert bench_point(old, "sweep_c1.json")["client"]["failed"] == 9
