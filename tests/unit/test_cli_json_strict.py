"""Every ``--json`` of the CLI is strict JSON (trial s14 #11): a value with no finite number is ``null``, never
``NaN``/``Infinity``, which Python's json.dumps writes by default and JSON.parse, jq and most parsers refuse."""

from __future__ import annotations

import json
import math

from pytest_roofline import cli
from pytest_roofline.cli import jsonout


def _strict(line: str):
    def refuse(name: str):
        raise ValueError(f"not JSON: {name}")
    return json.loads(line, parse_constant=refuse)


def test_the_reports_reproducer_parses_with_a_strict_parser(capsys):
    # one output token: no inter-token gap at all, so TPOT and ITL have no value (the report's nan.json)
    rc = cli.main(["predict", "--simulate", "--gpu", "h100", "--model", "qwen3-8b", "--input-len", "1024",
                   "--output-len", "1", "--concurrency", "1", "--json"])
    out = capsys.readouterr().out
    assert rc == 0
    rows = [_strict(line) for line in out.splitlines()]
    assert len(rows) == 1
    row = rows[0]
    for metric in ("tpot_p50_ms", "tpot_p99_ms", "tpot_mean_ms", "itl_p50_ms", "itl_p99_ms"):
        assert row[metric] is None, metric
    # the reason travels beside the null
    assert row["band_notes"]["tpot_p50_ms"] == "no band: no finite value to band"
    assert row["ttft_p50_ms"] > 0  # finite values are unchanged


def test_the_decode_table_json_is_strict(capsys):
    rc = cli.main(["predict", "--gpu", "h100", "--model", "qwen3-8b", "--batch", "1,8", "--json"])
    out = capsys.readouterr().out
    assert rc == 0
    assert [_strict(line)["batch"] for line in out.splitlines()] == [1, 8]


def test_non_finite_numbers_become_null_at_any_depth():
    doc = {"a": math.nan, "b": [1.5, math.inf, {"c": -math.inf}], "d": (2, math.nan), "e": "NaN", "f": 0.0}
    assert _strict(jsonout.dumps(doc)) == {"a": None, "b": [1.5, None, {"c": None}], "d": [2, None], "e": "NaN",
                                           "f": 0.0}

