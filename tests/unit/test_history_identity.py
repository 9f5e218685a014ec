"""Issue 21 in-process: a prediction's history key that does not move with pytest's rootdir, old-scheme stores read
on, drift that tells noise from change (the review's own intervals), pinned baselines, bounded names, damaged
index lines, a run that cannot be written leaving nothing behind, passwords redacted, escapes printed escaped."""

from __future__ import annotations

import json
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from pytest_roofline import redact
from pytest_roofline.errors import HistoryError, HistoryIndexRebuiltWarning
from pytest_roofline.history import (
    DirectoryStore,
    DriftPolicy,
    DriftStatus,
    RunRecord,
    RunSummary,
    SetupKey,
    StoredValue,
    clean_name,
    compare_runs,
    compared_count,
    drift_counts,
    drift_for,
    identity_file,
    prediction_key,
    render_comparison,
    unify_keys,
)
from pytest_roofline.measure.stats.intervals import mean_interval

SETUP = SetupKey("cpu", "roofline-tiny", "0.32.0")


def val(pid: str, measured: float, *, file: str = "my-cpu.yaml", lo: float | None = None, hi: float | None = None,
        method: str = "", at: dict[str, str] | None = None, hashed: bool = True, quantity: str = "output_throughput",
        dimension: str = "throughput", unit: str = "tok/s") -> StoredValue:
    at = at or {}
    return StoredValue(key=prediction_key(file, pid, at), prediction_id=pid, file=file, quantity=quantity,
                       dimension=dimension, status="pass", mode="measured", at=at, unit=unit, measured=measured,
                       predicted_text="ink", measured_lo=lo, measured_hi=hi, interval_method=method,
                       definition_hash="h1" if hashed else "")


def night(day: int, *values: StoredValue, setup: SetupKey = SETUP, hour: int = 2) -> RunSummary:
    return RunSummary(run_id=f"202612{day:02d}T{hour:02d}0000Z-nocommit-{day:06x}", setup=setup,
                      started_at=f"2026-12-{day:02d}T{hour:02d}:00:00Z", mode="engine", values=values)


# ------------------------------------------------------------------------------------------------ identity


def test_identity_is_relative_to_the_git_top_level_whatever_the_cwd(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "scratch"
    (repo / "work" / "predictions").mkdir(parents=True)
    (repo / ".git").mkdir()
    f = repo / "work" / "predictions" / "my-cpu.yaml"
    f.write_text("x")
    monkeypatch.chdir(repo / "work")
    from_work = identity_file("predictions/my-cpu.yaml")
    monkeypatch.chdir(tmp_path)
    from_outside = identity_file("scratch/work/predictions/my-cpu.yaml")
    assert from_work == from_outside == "work/predictions/my-cpu.yaml"
    # a worktree or submodule has a .git *file*: still the top level
    (repo / ".git").rmdir()
    (repo / ".git").write_text("gitdir: elsewhere")
    assert identity_file(str(f)) == "work/predictions/my-cpu.yaml"


def test_identity_without_git_is_the_files_own_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "work" / "predictions").mkdir(parents=True)
    f = tmp_path / "work" / "predictions" / "my-cpu.yaml"
    f.write_text("x")
    monkeypatch.chdir(tmp_path / "work")
    assert identity_file("predictions/my-cpu.yaml") == "my-cpu.yaml"
    monkeypatch.chdir(tmp_path)
    assert identity_file("work/predictions/my-cpu.yaml") == "my-cpu.yaml"


def test_old_scheme_keys_are_matched_to_the_current_key() -> None:
    # the review's store: night A keyed under rootdir scratch/work, night B under rootdir scratch (old scheme: no
    # hash); tonight's key is relative to the file's folder (no git)
    a = night(1, val("tput-c4", 1000.0, file="predictions/my-cpu.yaml", hashed=False))
    b = night(2, val("tput-c4", 1010.0, file="work/predictions/my-cpu.yaml", hashed=False))
    now = val("tput-c4", 1020.0, file="my-cpu.yaml")
    ua, ub = unify_keys([a, b], [now])
    assert ua.values[0].key == ub.values[0].key == now.key == "my-cpu.yaml::tput-c4"
    d = drift_for([now], [a, b], DriftPolicy("10%", "median:2"), setup=SETUP)[now.key]
    # median(1000, 1010) = 1005; (1020 − 1005) / 1005 = +1.49%
    assert d.status is DriftStatus.STEADY and d.baseline == 1005.0 and d.change_rel == pytest.approx(15 / 1005)
    # another file of the same name in another folder, or another id, is never taken for it
    other = night(3, val("tput-c4", 1.0, file="predictions/other/my-cpu2.yaml", hashed=False),
                  val("tput-c8", 1.0, file="predictions/my-cpu.yaml", hashed=False))
    assert [v.key for v in unify_keys([other], [now])[0].values] == [
        "predictions/other/my-cpu2.yaml::tput-c4", "predictions/my-cpu.yaml::tput-c8"]


def test_ambiguous_old_keys_stay_as_they_were() -> None:
    # two current files a/x.yaml and b/x.yaml: an old value under "x.yaml" could be either
    old = night(1, val("p", 1.0, file="x.yaml", hashed=False))
    cur = [val("p", 1.0, file="a/x.yaml"), val("p", 1.0, file="b/x.yaml")]
    assert unify_keys([old], cur)[0].values[0].key == "x.yaml::p"


# ------------------------------------------------------------------------------------------------ significance


def test_the_reviews_noise_is_uncertain_and_its_real_change_drifts() -> None:
    """Issue 21's nights: C=4 night A [518, 1878] vs night B [704, 2552] overlap (noise); C=8 night B [999,
    1654] vs night C [432, 637] do not (max_num_seqs 4 → 2)."""
    policy = DriftPolicy("10%")
    # C=4: A 1000 → B 1360 (+36%, beyond 10%). Facing half-widths: B downwards 1360 − 704 = 656, A upwards
    # 1878 − 1000 = 878; √(656² + 878²) = 1096 > 360: the intervals cannot tell the move from noise
    a = night(1, val("tput-c4", 1000.0, lo=518.0, hi=1878.0, method="batch-means"))
    b4 = val("tput-c4", 1360.0, lo=704.0, hi=2552.0, method="batch-means")
    d4 = drift_for([b4], [a], policy, setup=SETUP)[b4.key]
    assert d4.status is DriftStatus.UNCERTAIN and d4.noise == pytest.approx((656**2 + 878**2) ** 0.5)
    assert "beyond 10% but within the measurements' noise (±1,096 tok/s)" in d4.text
    # C=8: B 1250 → C 520 (−58.4%). Facing: C upwards 637 − 520 = 117, B downwards 1250 − 999 = 251;
    # √(117² + 251²) = 276.9 < 730: beyond the intervals. Against B alone that is still uncertain (1 of 3 earlier
    # nights: the night-to-night noise is not known); after three such nights (spread 0), drifted
    b = night(2, val("tput-c8", 1250.0, lo=999.0, hi=1654.0, method="batch-means"))
    c8 = val("tput-c8", 520.0, lo=432.0, hi=637.0, method="batch-means")
    alone = drift_for([c8], [b], policy, setup=SETUP)[c8.key]
    assert alone.status is DriftStatus.UNCERTAIN and "1 of 3 earlier nights" in alone.text
    bs = [night(i, val("tput-c8", 1250.0, lo=999.0, hi=1654.0, method="batch-means")) for i in (2, 3, 4)]
    d8 = drift_for([c8], bs, policy, setup=SETUP)[c8.key]
    assert d8.status is DriftStatus.DRIFTED and d8.change_rel == pytest.approx(-730 / 1250)
    # within the threshold stays steady, however narrow the intervals
    s = drift_for([val("tput-c8", 1300.0, lo=1299.0, hi=1301.0, method="batch-means")], [b], policy,
                  setup=SETUP)
    assert s[c8.key].status is DriftStatus.STEADY
    # an interval unbounded on the facing side can tell nothing apart
    u = drift_for([val("tput-c8", 2000.0, lo=None, hi=None, method="order-statistic")], [b], policy, setup=SETUP)
    assert u[c8.key].status is DriftStatus.UNCERTAIN and "an unbounded interval" in u[c8.key].text
    assert drift_counts([d4, d8]) == "2 compared (1 drifted, 1 uncertain)"
    assert compared_count([d4, d8]) == (2, 2)


#: the starved recording's request file (2026-12-01; support.recordings): its TTFTs are bimodal, the case this checks
REQUESTS = Path(__file__).resolve().parents[2] / "predictions" / "recorded" / \
    "cpu-prefill-heavy-2026-12-01.closed-c2.requests.jsonl"


def _ttft_ms_samples() -> np.ndarray:
    rows = [json.loads(line) for line in REQUESTS.read_text().splitlines() if line.strip()]
    return np.array([(r["first_token_s"] - r["sent_s"]) * 1e3 for r in rows
                     if not r["warmup"] and r["status"] == "ok"])


def _night_mean(samples: np.ndarray) -> StoredValue:
    iv = mean_interval(samples)  # the project's own batch-means t-interval of the mean
    return val("ttft-c2", iv.estimate, lo=iv.lo, hi=iv.hi, method=iv.method, quantity="ttft_mean", dimension="time",
               unit="ms")


def test_resampled_identical_nights_rarely_drift_and_a_real_change_does() -> None:
    """Nights drawn (with replacement) from one recorded CPU-engine point (32 requests, TTFT bimodal at ~110 and
    ~235 ms) are identical configurations: of 40 pairs at most 2 (5 %) may be called drifted; with every TTFT
    twice as long, all 40 are. (Resampling keeps the within-run spread only; benchmarks/drift_false_alarms.py
    says what that misses.)"""
    ttft = _ttft_ms_samples()
    assert ttft.size == 32
    rng = np.random.default_rng(21)
    policy = DriftPolicy("10%")
    same, changed = [], []
    for _ in range(40):  # three earlier nights each: with fewer, nothing is ever drifted
        nights = [night(i, _night_mean(rng.choice(ttft, ttft.size))) for i in (1, 2, 3)]
        b = _night_mean(rng.choice(ttft, ttft.size))
        same.append(drift_for([b], nights, policy, setup=SETUP)[b.key].status)
        slow = _night_mean(rng.choice(ttft, ttft.size) * 2.0)
        changed.append(drift_for([slow], nights, policy, setup=SETUP)[slow.key].status)
    assert same.count(DriftStatus.DRIFTED) <= 2
    assert changed.count(DriftStatus.DRIFTED) == 40


def test_median_of_n_needs_the_change_to_leave_the_nights_own_spread() -> None:
    # five nights 1000, 1100, 900, 1050, 950 (no intervals: exact values): mean 1000, squared deviations 0, 10,000,
    # 10,000, 2,500, 2,500 → s = √(25,000 / 4) = 79.06; t(0.975, 4) = 2.776; × √(1 + 1/5) = 1.0954 → ±240.4. A
    # night at 1150 (+15%, beyond 10%) is inside that spread: uncertain; at 1300 (+30%): drifted.
    runs = [night(d, val("p", x)) for d, x in zip(range(1, 6), (1000.0, 1100.0, 900.0, 1050.0, 950.0))]
    p = DriftPolicy("10%", "median:5")
    assert drift_for([val("p", 1150.0)], runs, p, setup=SETUP)["my-cpu.yaml::p"].status is DriftStatus.UNCERTAIN
    d = drift_for([val("p", 1300.0)], runs, p, setup=SETUP)["my-cpu.yaml::p"]
    assert d.status is DriftStatus.DRIFTED and d.noise == pytest.approx(2.776445 * 6250 ** 0.5 * 1.2 ** 0.5, rel=1e-4)


def test_the_nights_spread_is_measured_from_their_mean_not_from_the_previous_night() -> None:
    # three nights 100, 101, 99 (exact values): mean 100, s = 1; t(0.975, 2) = 4.303 x sqrt(1 + 1/3) = 1.1547 ->
    # a prediction interval for one more night of 100 +/- 4.97. The baseline is the previous night, 99, and the
    # threshold 2%. Tonight 104.5 is +5.6% from 99 and 5.5 from it, but 4.5 from the mean: inside the interval,
    # so uncertain (measured from the baseline it would have drifted). Tonight 94.8 is -4.2% from 99 and only 4.2
    # from it, but 5.2 from the mean: outside, so drifted (from the baseline: uncertain).
    runs = [night(d, val("p", x)) for d, x in zip(range(1, 4), (100.0, 101.0, 99.0))]
    p = DriftPolicy("2%")
    key = "my-cpu.yaml::p"
    up = drift_for([val("p", 104.5)], runs, p, setup=SETUP)[key]
    assert up.baseline == 99.0 and up.status is DriftStatus.UNCERTAIN
    assert up.noise == pytest.approx(4.302653 * 1.0 * (4 / 3) ** 0.5, rel=1e-5)
    down = drift_for([val("p", 94.8)], runs, p, setup=SETUP)[key]
    assert down.baseline == 99.0 and down.status is DriftStatus.DRIFTED


def test_pinned_baseline() -> None:
    runs = [night(1, val("p", 1000.0)), night(2, val("p", 1300.0)), night(3, val("p", 1310.0)),
            night(5, val("p", 1290.0))]
    p = DriftPolicy("10%", "run:20261201")
    assert p.describe() == "the pinned run 20261201"
    # 1300 vs the pinned 1000: +30%. The nights' spread (1000, 1300, 1310, 1290: s = 150.22, t(0.975, 3) = 3.182,
    # × √(1 + 1/4)) = ±534.5 holds the move: uncertain; 2050 (+105%) leaves it: drifted
    d = drift_for([val("p", 2050.0)], runs, p, setup=SETUP)["my-cpu.yaml::p"]
    assert d.baseline == 1000.0 and d.status is DriftStatus.DRIFTED and "vs pinned run 20261201T020000Z" in d.text
    u = drift_for([val("p", 1300.0)], runs, p, setup=SETUP)["my-cpu.yaml::p"]
    assert u.status is DriftStatus.UNCERTAIN and u.noise == pytest.approx(3.182446 * 150.222 * 1.25**0.5, rel=1e-4)
    # a bare run id is a pinned run too; one that is not stored leaves every value new, saying why
    q = drift_for([val("p", 2050.0)], runs, DriftPolicy("10%", "20261109"), setup=SETUP)["my-cpu.yaml::p"]
    assert q.status is DriftStatus.NEW and "no run 20261109 of this setup" in q.text


def test_the_ink_moved_is_told_by_the_definition_hash() -> None:
    before = night(1, val("p", 1000.0))
    now = replace(val("p", 1300.0), definition_hash="h2")  # same key, same ink text, another definition
    d = drift_for([now], [before], DriftPolicy("10%"), setup=SETUP)[now.key]
    # an edit that leaves the quantity is a note; the +30 % is judged (one earlier night: uncertain)
    assert d.status is DriftStatus.UNCERTAIN
    assert "note: the prediction's ink changed since (its tolerance, band or drift threshold)" in d.text


def test_a_move_from_zero_is_in_the_values_unit() -> None:
    # issue 21: "tpot-c1 DRIFTED 0 → 0.00260475" (seconds where everything else is in ms)
    zero = night(1, val("tpot-c1", 0.0, quantity="tpot_p50", dimension="time", unit="ms"))
    now = val("tpot-c1", 0.00260475, quantity="tpot_p50", dimension="time", unit="ms")
    d = drift_for([now], [zero], DriftPolicy("10%"), setup=SETUP)[now.key]
    assert d.text.startswith("0 ms → 2.605 ms vs previous run")


# ------------------------------------------------------------------------------------------------ compare


def test_compare_cuts_ids_in_the_middle_and_says_what_is_significant() -> None:
    ids = [f"littles-law[concurrency={c}]" for c in (1, 2, 4, 8)]
    long_ids = [f"clean-cache-hit-rate-under-load-{'x' * 30}[concurrency={c}]" for c in (1, 2)]
    a = night(1, *(val(i, 1000.0, lo=900.0, hi=1100.0, method="batch-means") for i in ids + long_ids))
    b = night(2, *(val(i, 1500.0, lo=1450.0, hi=1550.0, method="batch-means") for i in ids[:2] + long_ids),
              *(val(i, 1050.0, lo=950.0, hi=1150.0, method="batch-means") for i in ids[2:]))
    lines = render_comparison(a, b, width=120)
    text = "\n".join(lines)
    assert all(len(line) <= 120 for line in lines)
    for i in ids + long_ids[:1]:  # a cut id is printed whole on its own line: the points stay apart
        assert i in text
    rows = {r.prediction_id: r for r in compare_runs(a, b)}
    # 1000 → 1500: facing half-widths 1100 − 1000 = 100 and 1500 − 1450 = 50, √(100² + 50²) = 111.8 < 500:
    # beyond both intervals, but no earlier night is known (no store): uncertain, as drift says before three;
    # 1000 → 1050: 100 and 1050 − 950 = 100, √2 · 100 = 141.4 > 50: noise
    assert rows[ids[0]].significance == "uncertain" and rows[ids[2]].significance == "noise"
    assert rows[ids[0]].noise == pytest.approx((100**2 + 50**2) ** 0.5)
    assert rows[ids[2]].noise == pytest.approx(2**0.5 * 100)
    footer = " ".join(lines[len(lines) - lines[::-1].index(""):])  # the summary after the table's last blank line
    assert "6 measured in both runs; 0 moved beyond the noise (both runs' 95 % intervals; the run-to-run" in footer
    assert "; 4 uncertain (beyond both runs' intervals, but fewer than 3 earlier nights" in footer
    # three earlier nights of B's setup that agree with A exactly (spread 0, known): the four moves are significant
    earlier = [replace(a, run_id=f"2026110{d}T020000Z-nocommit-00000{d}", started_at=f"2026-11-0{d}T02:00:00Z")
               for d in (1, 2, 3)]
    rows = {r.prediction_id: r for r in compare_runs(a, b, [*earlier, a])}
    assert rows[ids[0]].significance == "significant" and rows[ids[0]].nights == 4
    assert rows[ids[2]].significance == "noise"


def test_compare_escapes_terminal_sequences_and_says_when_nothing_was_compared() -> None:
    a = replace(night(1, val("p", 1.0, file="a.yaml")), label="\x1b]0;pwned\x07\x1b[2J")
    b = night(2, val("q", 1.0, file="b.yaml"))
    text = "\n".join(render_comparison(a, b))
    assert "\x1b" not in text and "\\x1b]0;pwned" in text
    assert "0 measured in both runs: NOTHING WAS COMPARED" in text


# ------------------------------------------------------------------------------------------------ stores


def test_names_are_bounded_and_cleaned() -> None:
    label = "L" * 300
    cleaned = clean_name(label, 255)
    assert cleaned is not None and len(cleaned) == 255 and cleaned.startswith("L" * 246 + "~")
    assert clean_name("L" * 299 + "M", 255) != cleaned  # the tails differ: the names stay apart
    assert clean_name("mo\x00del\x1b[31m", 160) == "mo?del?[31m"
    assert clean_name("ok", 160) == "ok"


def _record(setup: SetupKey = SETUP, label: str | None = None) -> RunRecord:
    return RunRecord(summary=RunSummary(run_id="", setup=setup, started_at="2026-12-04T02:00:00Z", mode="replay",
                                        label=label, values=(val("p", 1.0),)))


@pytest.mark.parametrize("line", [
    # measured values as texts, a status a list, a unit an object, the label a number (reliability 9.03)
    '{"schema":"pytest-roofline/history-run","schema_version":1,"run_id":"20261201T000000Z-x-aaaaaa",'
    '"setup":{"hardware":"cpu","model":"m","engine_version":"1"},"started_at":"2026-12-01T00:00:00Z",'
    '"label":7,"values":[{"key":"k","prediction_id":"p","file":"f","quantity":"q","dimension":"time",'
    '"status":["x"],"mode":"measured","unit":{},"measured":"12"}]}',
    '[1, 2, 3]',
    "[" * 100_000 + "]" * 100_000,  # nested 100,000 deep (reliability 9.26)
])
def test_a_damaged_index_line_is_rebuilt_not_a_traceback(tmp_path: Path, line: str) -> None:
    store = DirectoryStore(tmp_path / "h")
    stored = store.add(_record())
    with open(store.index_path, "a", encoding="utf-8") as fh:
        fh.write(line + "\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        runs = DirectoryStore(tmp_path / "h").runs()
    assert [r.run_id for r in runs] == [stored.run_id]  # the good run kept, the bad line dropped
    assert any(issubclass(w.category, HistoryIndexRebuiltWarning) for w in caught)


def test_a_run_that_cannot_be_written_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = DirectoryStore(tmp_path / "h")
    first = store.add(_record())

    def full(_summary: RunSummary) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(store, "_append_index", full)
    with pytest.raises(HistoryError, match="No space left on device.*nothing of it was kept"):
        store.add(_record())
    assert [p.name for p in (tmp_path / "h").glob("*/*/*/*") if p.is_dir()] == [first.run_id]


def test_long_and_control_names_are_stored_cleaned(tmp_path: Path) -> None:
    from pytest_roofline.history import build_records

    recs = build_records([{"id": "p", "file": "x.yaml", "status": "pass", "mode": "math", "at": {}}],
                         setups={"x.yaml": SetupKey("cpu", "org/" + "m" * 200, "0.32\x00.0")},
                         started_at="2026-12-04T02:00:00Z", mode="math", label="nightly\x1b[2J" + "L" * 300)
    s = recs[0].summary
    assert len(s.setup.model) == 160 and "\x00" not in s.setup.engine_version and len(s.label or "") == 255
    stored = DirectoryStore(tmp_path / "h").add(recs[0])
    assert stored.setup == s.setup


# ------------------------------------------------------------------------------------------------ redaction


@pytest.mark.parametrize("password", ["ok/SLASH-SECRET5", "pw?Q-SECRET3", "pw@AT-SECRET4"])
def test_database_passwords_are_redacted_by_pattern(password: str) -> None:
    url = f"postgresql+psycopg://roofline:{password}@127.0.0.1:41075/postgres"
    out = redact.redact_text(f"roofline history: stored run x in {url}: done")
    assert "SECRET" not in out and "postgresql+psycopg://***@127.0.0.1:41075/postgres: done" in out
    assert "SECRET" not in redact.redact_text("postgresql://u@h:5432/db?sslmode=require&password=Q-SECRET9")


def test_a_password_with_a_space_is_redacted_once_remembered() -> None:
    url = "postgresql+psycopg://roofline:pw SPACE-SECRET1@127.0.0.1:41075/postgres"
    try:
        redact.remember_url_secrets(url)
        assert "SPACE-SECRET1" not in redact.redact_text(f"cannot open {url} (refused)")
    finally:
        redact.forget_all()


def test_printable_escapes_control_characters() -> None:
    assert redact.printable("a\x1b[2Jb\x00c\u202ed\tok\n") == "a\\x1b[2Jb\\x00c\\u202ed\tok\n"


# ------------------------------------------------------------------------------------------------ trend page


def test_trend_page_has_whiskers_and_the_time_of_same_day_nights() -> None:
    from pytest_roofline.report.trend import render_trend

    def v(x: float) -> StoredValue:
        return val("tput-c4", x, lo=x - 100.0, hi=x + 150.0, method="batch-means")

    page = render_trend([night(4, v(1000.0), hour=9), night(4, v(1100.0), hour=10), night(4, v(900.0), hour=11)])
    assert "12-04 09:00" in page and "12-04 11:00" in page  # not "12-04 12-04 12-04"
    assert "95 % interval" in page
    assert "[900 tok/s, 1,150 tok/s]" in page  # night 1's interval in its tooltip
    # old-scheme nights join the current series: one chart, not two
    old = night(3, val("tput-c4", 950.0, file="work/my-cpu.yaml", hashed=False))
    page2 = render_trend([old, night(4, v(1000.0))])
    assert page2.count("output_throughput — my-cpu.yaml") == 1 and "work/my-cpu.yaml" not in page2


@pytest.mark.slow  # SQLite's busy timeout (5 s) runs out before the refusal
def test_a_locked_sqlite_store_refuses_the_run_with_a_history_error(tmp_path: Path) -> None:
    """reliability 9.15: SQLite locked by another process when the run is stored. The store says so as a
    HistoryError (which the plugin turns into a session failure), and the run is not half-stored."""
    import sqlite3

    from pytest_roofline.history import SqlStore

    db = tmp_path / "h.db"
    store = SqlStore(f"sqlite:///{db}")
    holder = sqlite3.connect(db, timeout=0.1)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(HistoryError, match="cannot store run .*database is locked"):
            store.add(_record())
    finally:
        holder.rollback()
        holder.close()
    assert store.runs() == []
    store.close()
