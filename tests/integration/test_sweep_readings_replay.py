"""One replay of each recorded run through pytest (trial s16 M2, M3): the closed run's TTFT knee and goodput, whose
percentiles' intervals leave them undecided, read INCONCLUSIVE in the terminal table; the open run's output
throughput is scored at a rate. The expected values are worked out in tests/unit/test_sweep_readings_intervals.py."""

from __future__ import annotations

import pytest
from support.paths import DATA, RECORDED
from support.pytest_run import NO_CACHE
from support.specs import t3_closed_probe_head

CLOSED = DATA / "s17" / "closed-c1-4-16.results.json"

CLOSED_YAML = t3_closed_probe_head(ttft="210 ms", tpot="10 ms") + """\
  - {id: tk, quantity: ttft_knee_concurrency, predicted: 16, tolerance: exact}
  - {id: gp, quantity: goodput, predicted: 800 tok/s}
"""


def _rows(out: str, *ids: str) -> dict[str, str]:
    return {line.split()[0]: line for line in out.splitlines() if line.split() and line.split()[0] in ids}


def test_a_replayed_closed_run_reads_the_knee_and_goodput_inconclusive(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", probe=CLOSED_YAML)
    res = pytester.runpytest("probe.yaml", "--replay", str(CLOSED), *NO_CACHE)
    out = res.stdout.str()
    rows = _rows(out, "tk", "gp")
    assert rows["tk"].split()[-1] == "INCONCLUSIVE", out  # before: FAIL, "measured gives none"
    assert rows["gp"].split()[-1] == "INCONCLUSIVE", out
    assert "809.83 tok/s" in rows["gp"]


def test_a_replayed_open_run_scores_output_throughput_at_a_rate(pytester: pytest.Pytester) -> None:
    text = (RECORDED.parent / "cpu-open-loop.yaml").read_text(encoding="utf-8")
    pytester.makefile(".yaml", probe=text.split("\npredictions:")[0] + "\npredictions:\n"
                      "  - {id: ot, quantity: output_throughput, at: {rate: 8 req/s}, predicted: 560 tok/s}\n")
    res = pytester.runpytest("probe.yaml", "--replay", str(RECORDED / "cpu-open-loop-2026-12-05.results.json"),
                             *NO_CACHE)
    out = res.stdout.str()
    assert "takes no at-parameter" not in out
    assert "562.99 tok/s" in _rows(out, "ot")["ot"], out
