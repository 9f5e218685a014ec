"""``roofline compare``: the JSON's numbers in the unit it names, the store's runs listed when no run is named, exit
status 1 when nothing was compared, and one number style per unit in the table."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pytest_roofline.cli.parser import main
from pytest_roofline.history import (
    DirectoryStore,
    RunRecord,
    RunSummary,
    SetupKey,
    StoredValue,
    prediction_key,
    render_comparison,
)
from pytest_roofline.history._compare import SI_UNIT
from pytest_roofline.units import DIMENSIONS, unit_scale

REPO = Path(__file__).resolve().parents[2]
RECORDED = REPO / "predictions" / "recorded"
SETUP = SetupKey("cpu", "roofline-tiny", "0.32.0")


def val(pid: str, measured: float | None, *, file: str = "my-cpu.yaml", quantity: str = "output_throughput",
        dimension: str = "throughput", unit: str = "tok/s", ink: str = "ink", lo: float | None = None,
        hi: float | None = None) -> StoredValue:
    return StoredValue(key=prediction_key(file, pid, {}), prediction_id=pid, file=file, quantity=quantity,
                       dimension=dimension, status="pass", mode="measured", at={}, unit=unit, measured=measured,
                       predicted_text=ink, measured_lo=lo, measured_hi=hi, interval_method="t" if lo else "")


def night(day: int, *values: StoredValue, commit: str | None = None) -> RunSummary:
    return RunSummary(run_id=f"202612{day:02d}T020000Z-nocommit-{day:06x}", setup=SETUP,
                      started_at=f"2026-12-{day:02d}T02:00:00Z", mode="engine", commit=commit, values=values)


def cells(lines: list[str], pid: str) -> list[str]:
    """The cells of ``pid``'s row (columns are two or more spaces apart; a cell holds at most one space)."""
    (line,) = [ln for ln in lines if ln.startswith(pid + " ")]
    return re.split(r"\s{2,}", line.strip())


# ------------------------------------------------------------------------------------------------ --json units


def test_every_json_number_is_in_the_unit_the_json_names(capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The reviewer's case: queueing-past-the-cap (ttft_p50 at C=32, written in ms) read 1.3824 with "unit": "ms".
    The expected figure comes from the results files' own client figures in ms, not from the store."""
    monkeypatch.chdir(REPO)
    a, b = RECORDED / "cpu-tiny-2026-12-01.results.json", RECORDED / "cpu-tiny-2026-12-05.results.json"
    rc = main(["compare", str(a), str(b), "--predictions", "predictions/cpu-tiny.yaml", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["measured_in_both"] > 0

    def ttft_p50_ms(path: Path) -> float:
        (c32,) = [p for p in json.loads(path.read_text())["points"] if p["id"] == "closed-c32"]
        return float(c32["client"]["ttft_ms"]["p50"])

    (row,) = [r for r in out["rows"] if r["prediction_id"] == "queueing-past-the-cap"]
    assert row["written_unit"] == "ms" and row["predicted"] == "100 ms"
    to_ms = unit_scale("time", row["unit"]) / unit_scale("time", "ms")  # the JSON's unit, whichever it is, to ms
    assert row["measured_a"] * to_ms == pytest.approx(ttft_p50_ms(a))  # 1,382.4 ms, not 1.38 ms
    assert row["measured_b"] * to_ms == pytest.approx(ttft_p50_ms(b))
    assert row["change_rel"] == pytest.approx(ttft_p50_ms(b) / ttft_p50_ms(a) - 1)
    # every row names the SI base unit of its dimension (factor 1), the one its stored numbers are in
    for r in out["rows"]:
        assert unit_scale(r["dimension"], r["unit"]) == 1.0


def test_si_unit_names_a_factor_of_one_for_every_dimension() -> None:
    assert set(SI_UNIT) == set(DIMENSIONS)
    assert all(unit_scale(d, u) == 1.0 for d, u in SI_UNIT.items())


# ------------------------------------------------------------------------------------------------ listing


def _store(tmp_path: Path, *runs: RunSummary) -> str:
    store = DirectoryStore(tmp_path / "hist")
    for s in runs:
        store.add(RunRecord(summary=s))
    return str(tmp_path / "hist")


def test_no_run_named_lists_the_store_newest_last(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # one line a run (narrower: tests/unit/test_trend_trial.py)
    older = night(1, val("p", 1000.0), val("q", None), commit="abc1234")
    newer = night(2, val("p", 1100.0), val("q", 5.0), val("r", 7.0))
    uri = _store(tmp_path, newer, older)  # stored out of order: the listing orders by start time
    assert main(["compare", "--store", uri]) == 0
    lines = capsys.readouterr().out.splitlines()
    body = [ln for ln in lines if ln.startswith("202612")]
    assert [ln.split()[0] for ln in body] == [older.run_id, newer.run_id]
    assert "2026-12-01T02:00:00Z" in body[0] and SETUP.text() in body[0] and "abc1234" in body[0]
    # measured values: 1 and 3, then the prediction file (val's my-cpu.yaml)
    assert body[0].split()[-3:] == ["engine", "1", "my-cpu.yaml"] and body[1].split()[-2:] == ["3", "my-cpu.yaml"]
    assert "2 runs, newest last" in lines[-1]
    assert main(["compare", "--store", uri, "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(r["run_id"], r["measured_values"], r["commit"]) for r in listed] == [(older.run_id, 1, "abc1234"),
                                                                          (newer.run_id, 3, None)]


def test_one_run_alone_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    uri = _store(tmp_path, night(1, val("p", 1.0)))
    with pytest.raises(SystemExit) as exc:
        main(["compare", "--store", uri, "20261201"])
    assert exc.value.code == 2
    assert "give two runs to compare (A B), or none to list" in capsys.readouterr().err


def test_an_unknown_id_points_at_the_listing(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    uri = _store(tmp_path, night(1, val("p", 1.0)))
    assert main(["compare", "--store", uri, "2025", "20261201"]) == 2
    assert "with no ids lists its runs" in capsys.readouterr().err
    monkeypatch.delenv("ROOFLINE_HISTORY", raising=False)
    assert main(["compare"]) == 2  # nothing named and no store to list
    assert "--store URI" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------------ exit status


@pytest.mark.parametrize("as_json", [False, True])
def test_nothing_compared_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str], as_json: bool) -> None:
    a, b = night(1, val("p", 1.0, file="a.yaml")), night(2, val("q", 1.0, file="b.yaml"))
    c = night(3, val("p", 2.0, file="a.yaml"))
    uri = _store(tmp_path, a, b, c)
    flags = ["--json"] if as_json else []
    assert main(["compare", "--store", uri, a.run_id, b.run_id, *flags]) == 1
    out = capsys.readouterr().out
    assert json.loads(out)["measured_in_both"] == 0 if as_json else "NOTHING WAS COMPARED" in out
    assert main(["compare", "--store", uri, a.run_id, c.run_id, *flags]) == 0  # p in both: compared


# ------------------------------------------------------------------------------------------------ number style


def test_one_number_style_per_unit() -> None:
    """Four significant figures with their trailing zeros, whatever the value: 1.0, 1.0004 and 0.999996 as a
    percentage are 100, 100.04 and 99.9996 %, all ``100.0 %`` (not ``100 %``, ``100.0 %``, ``100.00 %``), 0.9999 is
    ``99.99 %``; a bare ratio stays bare (0.99984 → ``0.9998``); the ink keeps its written digits in the table's
    style (``2048x`` → ``2,048 x``); the noise, an uncertainty, gets two figures; a change that rounds to nothing
    is ``0.0 %``."""
    pct = {"pa": 1.0, "pb": 1.0004, "pc": 0.999996, "pd": 0.9999}
    a = night(1, *(val(k, 0.5, dimension="ratio", unit="%", quantity="prefix_cache_hit_rate", ink="50%")
                   for k in pct),
              val("bare", 0.99984, dimension="ratio", unit="", quantity="littles_law_ratio", ink="1.00"),
              val("conc", 2048.0, dimension="ratio", unit="x", quantity="max_concurrency", ink="2048x"),
              val("rate", 3.928, dimension="request_rate", unit="req/s", quantity="request_throughput",
                  ink="4 req/s", lo=3.428, hi=4.428),
              val("tput", 1000.0, ink="1,000 tok/s"))
    b = night(2, *(val(k, x, dimension="ratio", unit="%", quantity="prefix_cache_hit_rate", ink="50%")
                   for k, x in pct.items()),
              val("bare", 1.0, dimension="ratio", unit="", quantity="littles_law_ratio", ink="1.00"),
              val("conc", 2048.0, dimension="ratio", unit="x", quantity="max_concurrency", ink="2048x"),
              val("rate", 3.956, dimension="request_rate", unit="req/s", quantity="request_throughput",
                  ink="4 req/s", lo=3.356, hi=4.556),
              val("tput", 999.9, ink="1,000 tok/s"))
    lines = render_comparison(a, b, width=200)
    for pid, text in (("pa", "100.0 %"), ("pb", "100.0 %"), ("pc", "100.0 %"), ("pd", "99.99 %")):
        row = cells(lines, pid)
        assert row[2] == "50 %" and row[4] == "50.00 %" and row[6] == text, row
    bare = cells(lines, "bare")
    assert bare[2] == "1.00" and bare[4] == "0.9998" and bare[6] == "1.000"
    conc = cells(lines, "conc")
    assert conc[2] == conc[4] == conc[6] == "2,048 x"
    # 3.928 ± 0.5 and 3.956 ± 0.6 (half-widths 0.5 and 0.6 on each side): √(0.5² + 0.6²) = 0.781 → ±0.78
    rate = cells(lines, "rate")
    assert rate[4] == "3.928 req/s" and rate[6] == "3.956 req/s" and f"no ±{(0.5**2 + 0.6**2) ** 0.5:.2f} req/s" in rate
    tput = cells(lines, "tput")  # 1000 → 999.9: −0.01 %
    assert tput[4] == "1,000 tok/s" and tput[6] == "999.9 tok/s" and tput[7] == "0.0 %"


# ------------------------------------------------------------------------------------------------ drift's test


def test_compare_judges_a_pair_as_drift_judges_the_night_given_the_store(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """The trial's case: nights whose own intervals are narrow but whose values swing from night to night. B moves
    23 % from A, beyond both runs' intervals (±1 % each) but inside the earlier nights' spread: drift says uncertain,
    so compare given the store must not say "beyond noise: yes"; without the store it says what it tested."""
    from pytest_roofline.history import DriftPolicy, DriftStatus, compare_runs, drift_for

    def v(x: float) -> StoredValue:
        return val("ttft", x, quantity="ttft_p50", dimension="time", unit="ms", lo=0.99 * x, hi=1.01 * x)

    nights = [night(d, v(x)) for d, x in ((1, 0.40), (5, 0.70), (6, 0.45), (7, 0.60))]
    b = night(8, v(0.4617))  # 600 ms -> 461.7 ms: -23 %
    a = nights[-1]
    drift = drift_for(b.values, nights, DriftPolicy(), setup=SETUP)[b.values[0].key]
    assert drift.status == DriftStatus.UNCERTAIN and "earlier nights' spread" in drift.text
    (row,) = compare_runs(a, b, nights + [b])
    assert row.significance == "noise" and row.nights == 4
    assert row.noise == pytest.approx(drift.noise)  # the same margin drift printed
    # two run directories and no store: beyond the runs' own intervals, but no earlier night is known: uncertain,
    # never "yes" on the intervals alone (drift's MIN_NIGHTS)
    (alone,) = compare_runs(a, b)
    assert alone.significance == "uncertain" and alone.nights == 0
    uri = _store(tmp_path, *nights, b)
    assert main(["compare", "--store", uri, a.run_id, b.run_id, "--json"]) == 0
    (jrow,) = json.loads(capsys.readouterr().out)["rows"]
    assert jrow["significance"] == "noise" and jrow["nights"] == 4
    lines = render_comparison(a, b, [alone], width=120)
    assert "the run-to-run noise needs 3 or more earlier nights of B's setup in a store" in " ".join(lines)


def test_a_two_night_store_reads_the_same_in_compare_as_in_drift(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """s14 review 1.6: compare and drift make one decision (history._drift.judge_move), MIN_NIGHTS included. A at
    1,000 tok/s (±1 %: 990 .. 1,010), B 1,300 (±1 %: 1,287 .. 1,313): +30 %, beyond 10 %; the facing half-widths
    13 and 10 give a margin √(13² + 10²) = 16.40 tok/s, far below the 300 moved: apart on the intervals alone."""
    from pytest_roofline.history import DriftPolicy, DriftStatus, compare_runs, drift_for

    def v(x: float) -> StoredValue:
        return val("tput", x, lo=0.99 * x, hi=1.01 * x)

    n1, a, b = night(1, v(1000.0)), night(2, v(1000.0)), night(3, v(1300.0))
    key = b.values[0].key
    # two earlier nights: the run-to-run noise is not known yet, in both
    drift = drift_for(b.values, [n1, a], DriftPolicy(), setup=SETUP)[key]
    assert drift.status is DriftStatus.UNCERTAIN and "2 of 3 earlier nights" in drift.text
    (row,) = compare_runs(a, b, [n1, a, b])
    assert (row.significance, row.nights) == ("uncertain", 0)
    assert row.noise == pytest.approx(16.4012, abs=1e-3) == drift.noise
    uri = _store(tmp_path, n1, a, b)
    assert main(["compare", "--store", uri, a.run_id, b.run_id, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rows"][0]["significance"] == "uncertain" and (out["significant"], out["uncertain"]) == (0, 1)
    assert main(["compare", "--store", uri, a.run_id, b.run_id]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert re.search(r"\+30\.0 % uncertain\b", text) and "1 uncertain (beyond both runs' intervals" in text
    # a third earlier night that agrees (spread 0: known): drifted in drift, significant in compare
    n0 = RunSummary(run_id="20261130T020000Z-nocommit-0000ff", setup=SETUP, started_at="2026-11-30T02:00:00Z",
                    mode="engine", values=(v(1000.0),))
    drift = drift_for(b.values, [n0, n1, a], DriftPolicy(), setup=SETUP)[key]
    assert drift.status is DriftStatus.DRIFTED
    (row,) = compare_runs(a, b, [n0, n1, a, b])
    assert (row.significance, row.nights) == ("significant", 3)
    assert row.noise == pytest.approx(16.4012, abs=1e-3) == drift.noise  # max(16.40, a spread of 0)




# ------------------------------------------------------------------------------------------------ narrow terminals

@pytest.mark.parametrize("width", [60, 50, 40])
def test_below_a_tables_width_each_prediction_is_stacked_within_the_width(width: int) -> None:
    # issue 21: below about 70 columns the rows overflowed (the narrowest table, model column left out, is
    # "  predicted  A      measured A  B      measured B  change  beyond noise": 71 columns with these cells)
    pid = "littles-law[concurrency=16]"
    a = night(1, val(pid, 1000.0, lo=900.0, hi=1100.0), val("tput", 2000.0, lo=1900.0, hi=2100.0))
    b = night(2, val(pid, 1500.0, lo=1400.0, hi=1600.0), val("tput", 2000.0, lo=1900.0, hi=2100.0))
    lines = render_comparison(a, b, width=width)
    assert max(len(line) for line in lines) <= width, "\n".join(lines)
    # each id whole on its own line, with its quantity (cut at its end where the line is too short for both: at 40
    # "littles-law[concurrency=16] · output_throughput" is 47); its figures indented below it
    (at,) = [i for i, line in enumerate(lines) if line.startswith(f"{pid} · output_th")]
    assert lines[at] == f"{pid} · output_throughput"[:width - 1] + "…" if width < 47 else lines[at] == (
        f"{pid} · output_throughput")
    below = []
    for line in lines[at + 1:]:
        if not line.startswith("  "):
            break
        below.append(line)
    fields = [f.strip() for line in below for f in line.split(" · ")]
    # +50 %: 1500 / 1000 - 1; the 95 % intervals [900, 1100] and [1400, 1600] do not overlap
    assert fields[:5] == ["predicted ink", "A pass 1,000 tok/s", "B pass 1,500 tok/s", "change +50.0 %",
                          "beyond noise uncertain"], below
    assert "measured A" not in "\n".join(lines)  # no table head above stacked rows


def test_a_table_that_fits_is_kept() -> None:
    a = night(1, val("tput", 1000.0, lo=900.0, hi=1100.0))
    b = night(2, val("tput", 1500.0, lo=1400.0, hi=1600.0))
    lines = render_comparison(a, b, width=120)
    assert cells(lines, "tput")[:3] == ["tput", "output_throughput", "ink"]
