"""The serving band at every terminal width (trial 22, M2): a pytest run's summary table used to leave the bands
out below ~160 columns with no word, though a band can decide a verdict. At COLUMNS 80 (pytest's default, a
non-tty CI log), 120, 160 and 200 each banded prediction's band is in the table, the numbers the verdict holds."""

from __future__ import annotations

import re

import pytest
from support.pytest_run import run_pytest
from support.specs import serving_h100_head

from pytest_roofline.format.spec import load_spec
from pytest_roofline.scoring import score

SPEC = serving_h100_head([1, 64]) + """\
  - {id: tput-c64, quantity: output_throughput, at: {concurrency: 64}, predicted: 4500 tok/s}
  - {id: ttft-c1, quantity: ttft_p50, at: {concurrency: 1}, predicted: 35 ms}
  - {id: tpot-c1, quantity: tpot_p50, at: {concurrency: 1}, predicted: 7 ms}
  - {id: itl-p99-c64, quantity: itl_p99, at: {concurrency: 64}, predicted: 30 ms}
"""
BANDED = ("tput-c64", "ttft-c1", "tpot-c1")
#: the table's last line, the counts ("1 fail, 3 pass")
COUNT = re.compile(r"^\d+ [a-z]+(, \d+ [a-z]+)*$")


@pytest.fixture(scope="module")
def bands(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Each prediction's band as the table prints it (``[lo–hi]``, the units left to the serving value), from the
    verdicts the product computes; "" for one without a band (a p99 ITL: the model bands no p99)."""
    path = tmp_path_factory.mktemp("spec") / "serv.roofline.yaml"
    path.write_text(SPEC, encoding="utf-8")
    spec = load_spec(path)
    out = {}
    for pred in spec.predictions:
        rng = score(spec, pred, "math", None).serving_band_range
        lo, _, hi = rng.partition(" – ")
        out[pred.id] = f"[{lo.split(' ')[0]}–{hi.split(' ')[0]}]" if rng else ""
    return out


@pytest.mark.parametrize("columns", [80, 120, 160, 200])
def test_every_band_is_in_the_table_at_every_width(pytester: pytest.Pytester, monkeypatch, bands, columns):
    assert all(bands[p] for p in BANDED) and bands["itl-p99-c64"] == ""
    monkeypatch.setenv("COLUMNS", str(columns))
    (pytester.path / "serv.roofline.yaml").write_text(SPEC, encoding="utf-8")
    result = run_pytest(pytester, "serv.roofline.yaml", "--tb=no")
    start = next(i for i, ln in enumerate(result.outlines) if "roofline predictions" in ln)
    end = next(i for i in range(start, len(result.outlines)) if COUNT.match(result.outlines[i]))
    table = result.outlines[start + 1:end + 1]
    for pid in BANDED:
        i = next(i for i, ln in enumerate(table) if ln.startswith(pid + " "))
        # beside the serving value, or on the line under the row (indented, naming the serving value)
        shown = table[i] if bands[pid] in table[i] else table[i + 1]
        assert bands[pid] in shown, (pid, table)
        assert shown is table[i] or (shown.startswith(" ") and shown.lstrip().startswith("serving ")), shown
    # no band for the unbanded p99 (the legend line under the table, "[lo–hi]: the serving model's band, ...", is
    # not a band)
    assert sum(ln.count("[") for ln in table if not ln.lstrip().startswith("[lo–hi]")) == len(BANDED)
