"""The visual trial's findings on the trend page and ``roofline compare`` (a newcomer's visual trial of
2026-12-06; the finding codes below are its), on stored
runs built here by hand, so that every expected value below is worked out from the runs themselves:

* H1: a night's stored pytest outcome (xfail, xpass) is what the page and ``compare`` show, not the verdict status;
  a store written before outcomes were kept still reads, and shows the verdict status as before;
* H2: several prediction files on one setup, each run in its own pytest session: "latest", the nights and the
  pills are per prediction file;
* M6: ``compare`` fits its width; M12: x-axis tick labels never overlap; L7: dark-mode contrast;
* L9: the run list names each run's prediction files; L10: a replay of a stored measurement says why it compared
  nothing.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from pytest_roofline.cli.parser import main
from pytest_roofline.history import (
    DirectoryStore,
    DriftPolicy,
    RunRecord,
    RunSummary,
    SetupKey,
    StoredValue,
    build_records,
    compare_runs,
    drift_counts,
    drift_for,
    open_store,
    prediction_key,
    render_comparison,
    render_run_list,
    run_list_json,
)
from pytest_roofline.history._records import as_outcome
from pytest_roofline.history._store import INDEX_NAME
from pytest_roofline.report.terminal import drift_lines
from pytest_roofline.report.trend import TREND_CSS, render_trend

SETUP = SetupKey("cpu", "roofline-tiny", "0.32.0")
SVG_NS = "{http://www.w3.org/2000/svg}"


def val(pid: str, measured: float | None, *, file: str = "predictions/a.yaml", status: str = "pass",
        outcome: str = "", quantity: str = "ttft_p50", at: dict[str, str] | None = None,
        lo: float | None = None, hi: float | None = None) -> StoredValue:
    at = at or {}
    return StoredValue(key=prediction_key(file, pid, at), prediction_id=pid, file=file, quantity=quantity,
                       dimension="time", status=status, mode="measured" if measured is not None else "math",
                       at=at, unit="ms", measured=measured, model=0.095, predicted=0.1, lo=0.09, hi=0.11,
                       predicted_text="100 ms", outcome=outcome,
                       measured_lo=lo, measured_hi=hi, interval_method="t" if lo is not None else "")


def run(started_at: str, *values: StoredValue, run_id: str = "", commit: str | None = None) -> RunSummary:
    stamp = re.sub(r"[-:]", "", started_at)
    return RunSummary(run_id=run_id or f"{stamp}-nocommit-{abs(hash(started_at)) % 0xFFFFFF:06x}", setup=SETUP,
                      started_at=started_at, mode="engine", commit=commit, values=values)


def summary_rows(html: str) -> dict[str, str]:
    """Each summary row's HTML by its prediction id (ids are unique in these stores)."""
    table = re.search(r'<table class="summary">.*?</table>', html, flags=re.S)
    assert table is not None
    out = {}
    for row in re.findall(r"<tr class=.*?</tr>", table.group(0), flags=re.S):
        pid = re.search(r'<td class="pid"><a [^>]*>(.*?)</a>', row, flags=re.S)
        assert pid is not None
        out[re.sub(r"<[^>]+>", "", pid.group(1))] = row
    return out


def badges(html: str) -> list[str]:
    return re.findall(r'<span class="rl-badge rl-[a-z]+">([^<]*)</span>', html)


def meta(html: str) -> str:
    m = re.search(r'<div class="meta">(.*?)</div>', html, flags=re.S)
    assert m is not None
    return re.sub(r"<[^>]+>", "", m.group(0))


def charts(html: str) -> dict[str, ET.Element]:
    out = {}
    for svg in re.findall(r"<svg.*?</svg>", html, flags=re.S):
        root = ET.fromstring(svg)
        title = root.find(f"{SVG_NS}title")
        out[(title.text or "").split(" · ")[0] if title is not None else ""] = root
    return out


def x_labels(svg: ET.Element) -> list[tuple[float, str]]:
    """The x axis' tick labels (x centre, text): middle-anchored texts below the plot that are not legend text."""
    return sorted((float(t.get("x", "0")), t.text or "") for t in svg.iter(f"{SVG_NS}text")
                  if t.get("text-anchor") == "middle" and re.match(r"\d\d-\d\d", t.text or ""))


# ------------------------------------------------------------------------------------------------ H1: outcomes


def test_outcomes_are_stored_as_pytest_reported_them() -> None:
    assert [as_outcome(x) for x in ("passed", "failed", "xfailed", "xpassed", "skipped", "error", "inconclusive",
                                    "xfail", "weird", None)] == [
        "pass", "fail", "xfail", "xpass", "skip", "error", "inconclusive", "xfail", "", ""]
    verdicts = [{"id": p, "file": "/nowhere/x.yaml", "quantity": "ttft_p50", "dimension": "time", "status": st,
                 "mode": "measured", "measured_value": 0.1, "unit": "ms"}
                for p, st in (("a", "pass"), ("b", "fail"), ("c", "fail"), ("d", "pass"))]
    # a and b pass and fail as their verdicts say; c is an expected miss, d an unexpected pass; e.g. the terminal's
    # "2 passed, ..." would count a and d apart: 1 passed, 1 failed, 1 xfailed, 1 xpassed
    outcomes = {"x.yaml::a": "passed", "x.yaml::b": "failed", "x.yaml::c": "xfailed", "x.yaml::d": "xpassed"}
    (rec,) = build_records(verdicts, setups={"/nowhere/x.yaml": SETUP}, started_at="2026-12-05T02:00:00Z",
                           mode="replay", outcomes=outcomes)
    s = rec.summary
    assert s.counts == {"pass": 2, "fail": 2}  # the verdict statuses, as before
    assert s.outcomes == {"pass": 1, "fail": 1, "xfail": 1, "xpass": 1}
    assert [(v.prediction_id, v.status, v.outcome, v.shown) for v in s.values] == [
        ("a", "pass", "pass", "pass"), ("b", "fail", "fail", "fail"), ("c", "fail", "xfail", "xfail"),
        ("d", "pass", "xpass", "xpass")]


@pytest.mark.parametrize("kind", ["directory", "sqlite"])
def test_both_stores_keep_the_outcome(tmp_path: Path, kind: str) -> None:
    uri = str(tmp_path / "h") if kind == "directory" else f"sqlite:///{tmp_path / 'h.db'}"
    store = open_store(uri)
    night = replace(run("2026-12-05T02:00:00Z", val("x", 0.2, status="fail", outcome="xfail"),
                        val("u", 0.1, outcome="xpass")), outcomes={"xfail": 1, "xpass": 1})
    store.add(RunRecord(summary=night))
    (back,) = open_store(uri).runs()
    assert [(v.prediction_id, v.status, v.outcome) for v in back.values] == [("x", "fail", "xfail"),
                                                                           ("u", "pass", "xpass")]
    assert back.outcomes == {"xfail": 1, "xpass": 1}
    store.close()


def test_a_store_written_before_outcomes_reads_and_shows_the_verdict_status(tmp_path: Path) -> None:
    store = DirectoryStore(tmp_path / "h")
    for day, st in (("01", "pass"), ("02", "fail")):
        store.add(RunRecord(summary=run(f"2026-12-{day}T02:00:00Z", val("p", 0.1, status=st, outcome=st))))
    # rewrite the index as a version before outcomes were kept wrote it: no "outcome" column, no "outcomes"
    lines = []
    for line in (tmp_path / "h" / INDEX_NAME).read_text().splitlines():
        d = json.loads(line)
        i = d["values"]["fields"].index("outcome")
        d["values"]["fields"].pop(i)
        for row in d["values"]["rows"]:
            row.pop(i)
        d.pop("outcomes")
        lines.append(json.dumps(d))
    (tmp_path / "h" / INDEX_NAME).write_text("\n".join(lines) + "\n")
    runs = list(DirectoryStore(tmp_path / "h").runs())
    assert [(r.outcomes, r.values[0].outcome, r.values[0].shown) for r in runs] == [
        ({}, "", "pass"), ({}, "", "fail")]
    html = render_trend(runs)
    assert badges(summary_rows(html)["p"]) == ["FAIL"]  # the latest night failed: its verdict status, as before
    (row,) = [ln.split() for ln in render_comparison(*runs, width=200) if ln.startswith("p ")]
    assert row[4:8] == ["pass", "100.0", "ms", "fail"]  # A and B: the verdict statuses, as before


def test_the_trend_page_shows_xfail_and_xpass_as_the_terminal_did() -> None:
    # night 1: m passes, x is an expected miss (verdict fail), u an unexpected pass (verdict pass), f a failure
    values = (val("m", 0.1, outcome="pass"), val("x", 0.2, status="fail", outcome="xfail"),
              val("u", 0.1, outcome="xpass"), val("f", 0.2, status="fail", outcome="fail"))
    html = render_trend([run("2026-12-05T02:00:00Z", *values)])
    rows = summary_rows(html)
    assert {pid: badges(row) for pid, row in rows.items()} == {"m": ["pass"], "x": ["xfail"], "u": ["XPASS"],
                                                               "f": ["FAIL"]}
    assert 'class="st-xfail"' in rows["x"] and 'class="st-fail"' in rows["f"]  # only the failure is tinted red
    # the pills: one of each, worst first (error, fail, xpass, inconclusive, xfail, skip, pass)
    assert re.findall(r"(FAIL|XPASS|xfail|pass) (\d)", meta(html)) == [
        ("FAIL", "1"), ("XPASS", "1"), ("xfail", "1"), ("pass", "1")]
    # attention order: the XPASS and the failure first (in file order), the expected miss among the rest
    assert list(rows) == ["u", "f", "m", "x"]
    svg = charts(html)["x"]
    legend = [t.text for t in svg.iter(f"{SVG_NS}text") if (t.text or "").startswith("measured ·")]
    assert legend == ["measured · xfail"]
    dot = next(e for e in svg.iter() if "rl-pt-xfail" in (e.get("class") or ""))
    assert dot.get("stroke") == "#9c6ade"  # the reports' xfail colour (common.OUTCOME_COLOR), not fail's
    tip = next(t.text for t in svg.iter(f"{SVG_NS}title") if "measured 200 ms" in (t.text or ""))
    assert tip is not None and tip.endswith(": xfail (verdict fail)")


def test_compare_shows_the_outcome_and_json_carries_it() -> None:
    a = run("2026-12-01T02:00:00Z", val("k", 0.1, outcome="pass"), val("x", 0.2, status="fail", outcome="xfail"))
    b = run("2026-12-05T02:00:00Z", val("k", 0.1, outcome="xpass"), val("x", 0.2, status="fail", outcome="xfail"))
    lines = render_comparison(a, b, width=200)
    cells = {ln.split()[0]: ln.split() for ln in lines if ln.split() and ln.split()[0] in ("k", "x")}
    assert cells["k"][4:8] == ["pass", "100.0", "ms", "xpass"] and cells["x"][4:8] == ["xfail", "200.0", "ms", "xfail"]
    rows = {r.prediction_id: r.to_dict() for r in compare_runs(a, b)}
    assert (rows["k"]["status_b"], rows["k"]["outcome_b"]) == ("pass", "xpass")


# ------------------------------------------------------------------------------------------------ H2: per file


def per_file_nights() -> list[RunSummary]:
    """Two nights of three files on one setup, each file in its own session (so its own run), the way
    ``pytest --gpu cpu FILE`` per file stores them; file c dropped its prediction c2 on the second night."""
    out = []
    for day, t in (("01", 0.100), ("05", 0.150)):
        out.append(run(f"2026-12-{day}T09:00:00Z", val("a1", t, file="p/a.yaml"), val("a2", 0.1, file="p/a.yaml")))
        out.append(run(f"2026-12-{day}T09:05:00Z", val("b1", 0.1, file="p/b.yaml", status="fail", outcome="xfail")))
        cs = [val("c1", 0.1, file="p/c.yaml")] + ([val("c2", 0.1, file="p/c.yaml")] if day == "01" else [])
        out.append(run(f"2026-12-{day}T09:10:00Z", *cs))
    return out


def test_latest_nights_and_pills_are_per_prediction_file() -> None:
    html = render_trend(per_file_nights())
    rows = summary_rows(html)
    # each file ran on 12-05: only c2, which c.yaml no longer holds on 12-05, is "not in the latest run"
    stale = [pid for pid, row in rows.items() if "not in the latest run" in row]
    assert stale == ["c2"]
    # a1: 100 ms on 12-01, 150 ms on 12-05 (its file's latest run, not the setup's last one): +50.0 %
    assert "+50.0% vs previous run" in rows["a1"]
    # 6 runs, each file in 2 of them: 2 nights, not 6
    assert "2 nights (6 runs of 3 prediction files; a night is one run of a file)" in meta(html)
    # the pills count each file's latest run: a1, a2 (pass), b1 (xfail), c1 (pass) = 3 pass, 1 xfail
    assert re.findall(r"(xfail|pass) (\d)", meta(html)) == [("xfail", "1"), ("pass", "3")]
    assert all(re.search(r'<td class="num">2</td>', rows[p]) for p in ("a1", "a2", "b1", "c1"))
    assert re.search(r'<td class="num">1</td>', rows["c2"])
    # each chart has a place for its own file's two runs only: two tick labels, the two dates
    assert {pid: [t for _x, t in x_labels(svg)] for pid, svg in charts(html).items()} == {
        p: ["12-01", "12-05"] for p in ("a1", "a2", "b1", "c1", "c2")}


def test_one_session_over_all_files_reads_as_before() -> None:
    # the same numbers, all three files in one run a night: one run per night, the latest run holds every file
    nights = per_file_nights()
    merged = [run(f"2026-12-{d}T09:00:00Z", *(v for r in nights if r.started_at[8:10] == d for v in r.values))
              for d in ("01", "05")]
    html = render_trend(merged)
    assert "2 nights from 2026-12-01 09:00 to 2026-12-05 09:00 UTC" in meta(html)
    assert "latest run " + merged[-1].run_id in meta(html)
    assert [p for p, row in summary_rows(html).items() if "not in the latest run" in row] == ["c2"]


# ------------------------------------------------------------------------------------------------ M12: ticks


def test_x_tick_labels_do_not_overlap() -> None:
    # the trial's case: 8 runs on one day five minutes apart, "12-05 10:00" .. "12-05 10:35" (11 characters)
    runs = [run(f"2026-12-05T10:{5 * i:02d}:00Z", val("p", 0.1 + 0.001 * i)) for i in range(8)]
    labels = x_labels(charts(render_trend(runs))["p"])
    texts = [t for _x, t in labels]
    assert texts[0] == "12-05 10:00" and texts[-1] == "12-05 10:35"  # the first and the latest night
    # 11 characters at an 11 px font: at most 11 × 11 × 0.65 = 78.7 px wide (digits are 0.64 em in DejaVu Sans,
    # the widest common sans); centres at least that far apart never overlap
    assert all(b - a >= 11 * 11 * 0.65 for (a, _), (b, _) in zip(labels, labels[1:])), labels
    # ...and never the trial's "12-05 10:30" directly beside "12-05 10:35" (one night, 58.5 px apart)
    assert "12-05 10:30" not in texts


def test_few_short_tick_labels_are_all_shown() -> None:
    runs = [run(f"2026-12-0{i + 1}T02:00:00Z", val("p", 0.1)) for i in range(5)]
    assert [t for _x, t in x_labels(charts(render_trend(runs))["p"])] == [f"12-0{i + 1}" for i in range(5)]


# ------------------------------------------------------------------------------------------------ L7: contrast


def _luminance(hex_color: str) -> float:
    h = hex_color.lstrip("#")
    h = "".join(c * 2 for c in h) if len(h) == 3 else h
    chans = [int(h[i:i + 2], 16) / 255 for i in (0, 2, 4)]
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in chans]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def _contrast(a: str, b: str) -> float:
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def _rule(css: str, selector: str, prop: str) -> str:
    """The last value of ``prop`` in a rule whose selector list names ``selector``."""
    found = [m.group(2) for m in re.finditer(r"([^{}]+)\{([^{}]*)\}", css)
             if selector in [s.strip() for s in m.group(1).split(",")]]
    values = [v for body in found for v in re.findall(rf"(?:^|;){re.escape(prop)}:([^;]+)", body)]
    assert values, (selector, prop)
    return values[-1].strip()


def test_dark_mode_text_is_readable() -> None:
    dark = TREND_CSS[TREND_CSS.index("@media (prefers-color-scheme:dark)"):]
    new = _rule(dark, ".drift-new", "color")
    fail_tint = _rule(dark, "table.summary tr.st-fail td", "background")
    card = "#1e2127"  # the dark card behind the table (.scroll)
    assert _contrast(new, fail_tint) >= 4.5 and _contrast(new, card) >= 4.5  # WCAG AA for normal text
    # the trial's figure: #8a5a00 on #3a2620 is 2.4:1
    assert _contrast("#8a5a00", "#3a2620") == pytest.approx(2.40, abs=0.01)
    rule = _rule(dark, "table.nights th", "border-bottom-color")
    assert _luminance(rule) < 0.05  # a dark rule, not the light #e3e5e8 of the light page
    assert _luminance("#e3e5e8") > 0.7


# ------------------------------------------------------------------------------------------------ M6: compare fits


def _wide_pair() -> tuple[RunSummary, RunSummary]:
    ids = [f"prefix-cache-clean[concurrency={c}]" for c in (1, 2, 4, 8, 16, 32)]
    a = run("2026-12-01T02:00:00Z", *(val(i, 1.3824, quantity="prefix_cache_hit_rate", lo=1.3, hi=1.5)
                                      for i in ids))
    b = run("2026-12-05T02:00:00Z", *(val(i, 0.4617, quantity="prefix_cache_hit_rate", lo=0.45, hi=0.47)
                                      for i in ids))
    return a, b


@pytest.mark.parametrize("width", [80, 100, 120])
def test_compare_fits_the_width_and_keeps_the_significance(width: int) -> None:
    a, b = _wide_pair()
    lines = render_comparison(a, b, width=width)
    assert max(len(ln) for ln in lines) <= width, [ln for ln in lines if len(ln) > width]
    text = "\n".join(lines)
    assert "beyond noise" in text
    for c in (1, 2, 4, 8, 16, 32):  # every id whole (they differ at their end)
        assert f"prefix-cache-clean[concurrency={c}]" in text
    assert "prefix_cache_hit_rate" in text and "prefix_ca…" not in text  # the quantity never cut
    # 1,382 ms → 461.7 ms: -66.6 %, far beyond both intervals, but no earlier night known (no store): "uncertain"
    # in every row, as drift says before three nights
    rows = [ln for ln in lines if re.search(r"-66\.6 %\s+uncertain\b", ln)]
    assert len(rows) == 6


def test_compare_never_widens_a_column() -> None:
    a, b = _wide_pair()
    # the model column's cells are "95.00 ms" (model 0.095 s), 8 characters: the column is 8 wide at any width
    # (the trial's compare widened it to 12 to fit), and "beyond noise" is its name's 12 ("yes" is shorter)
    for width in (80, 200):
        head = next(ln for ln in render_comparison(a, b, width=width) if "beyond noise" in ln)
        assert head.endswith("change  beyond noise     model"), (width, head)
    # 72 columns: the model column is what gives way, and the table says so
    lines = render_comparison(a, b, width=72)
    assert max(len(ln) for ln in lines) <= 72
    assert next(ln for ln in lines if "beyond noise" in ln).endswith("change  beyond noise")
    assert any("model column is left out" in ln for ln in lines)


# ------------------------------------------------------------------------------------------------ L9: files


def test_the_run_list_names_each_runs_prediction_files() -> None:
    runs = per_file_nights()
    wide = render_run_list(runs, width=200)
    body = [ln for ln in wide if ln.startswith("202612")]
    assert [ln.split()[-1] for ln in body] == ["p/a.yaml", "p/b.yaml", "p/c.yaml"] * 2
    narrow = render_run_list(runs, width=80)
    assert max(len(ln) for ln in narrow) <= 80
    firsts = [i for i, ln in enumerate(narrow) if ln.startswith("202612")]
    second = [f"{SETUP.text()} · no commit · engine · p/{f}.yaml" for f in "abc"] * 2
    assert [narrow[i + 1].strip() for i in firsts] == second
    assert [r["files"] for r in run_list_json(runs)] == [["p/a.yaml"], ["p/b.yaml"], ["p/c.yaml"]] * 2


def test_the_run_list_follows_columns(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    store = DirectoryStore(tmp_path / "h")
    for r in per_file_nights():
        store.add(RunRecord(summary=r))
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["compare", "--store", str(tmp_path / "h")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert max(len(ln) for ln in out) <= 80 and sum("p/a.yaml" in ln for ln in out) == 2


# ------------------------------------------------------------------------------------------------ L10: a replay


def test_a_replay_of_a_stored_measurement_says_why_nothing_was_compared() -> None:
    stored = run("2026-07-31T00:00:00Z", val("p", 0.1), val("q", 0.2), run_id="20260731T000000Z-nocommit-2a1b85")
    now = [val("p", 0.1), val("q", 0.2), val("m", None)]
    drifts = drift_for(now, [stored], DriftPolicy(), setup=SETUP, before="2026-07-31T00:00:00Z")
    assert [d.status.value for d in drifts.values()] == ["new", "new", "not_measured"]
    assert drifts[now[0].key].stored_as == "20260731T000000Z-nocommit-2a1b85"
    assert "already holds this measurement (run 20260731T000000Z-nocommit-2a1b85)" in drifts[now[0].key].text
    line = drift_counts([d.to_dict() for d in drifts.values()])  # as the drift dicts reach the terminal
    assert line == ("0 compared, 2 new (this measurement is already stored as run 20260731T000000Z-nocommit-2a1b85:"
                    " a replay is not compared with it, nor stored again), 1 not measured")
    # a replay of a new measurement, after it: compared as always, and nothing said about a stored copy
    later = drift_for(now[:1], [stored], DriftPolicy(), setup=SETUP, before="2026-08-01T00:00:00Z")
    assert later[now[0].key].status.value == "steady" and later[now[0].key].stored_as == ""
    assert drift_counts(later.values()) == "1 compared (1 steady)"


def test_a_replay_that_added_values_to_the_stored_run_says_so() -> None:
    # the stored run held p of this measurement and the replay's store added q and m to it (HistoryStore.add_values):
    # the line said "nor stored again" for the whole measurement
    run_id = "20260731T000000Z-nocommit-2a1b85"
    stored = run("2026-07-31T00:00:00Z", val("p", 0.1), run_id=run_id)
    now = [val("p", 0.1), val("q", 0.2), val("m", None)]
    drifts = [d.to_dict() for d in drift_for(now, [stored], DriftPolicy(), setup=SETUP,
                                             before="2026-07-31T00:00:00Z").values()]
    assert drift_counts(drifts, added={run_id: 2}) == (
        f"0 compared, 2 new (this measurement is already stored as run {run_id}: a replay is not compared with it; "
        "2 values it lacked were added to it, those it held not stored again), 1 not measured")
    assert drift_counts(drifts, added={run_id: 1}).startswith(
        f"0 compared, 2 new (this measurement is already stored as run {run_id}: a replay is not compared with it; "
        "1 value it lacked was added to it, those it held")
    # values added to another run, or none: nothing of this measurement was stored again
    for added in ({"20260101T000000Z-nocommit-000000": 5}, {}, None):
        assert drift_counts(drifts, added=added) == (
            f"0 compared, 2 new (this measurement is already stored as run {run_id}: a replay is not compared with "
            "it, nor stored again), 1 not measured")
    lines = drift_lines([(str(i), d) for i, d in enumerate(drifts)], "the previous run", width=400,
                        added={run_id: 2})
    assert lines[-1].endswith("2 values it lacked were added to it, those it held not stored again), 1 not measured "
                              "vs the previous run")


# ------------------------------------------------------------------------------------------------ a trial's numbers


def test_a_ratio_written_bare_stays_bare_and_a_one_sided_band_shows_its_bound() -> None:
    """A newcomer's trial: Little's law (ink 1.00) read "measured 99.96 %" on the trend page while the terminal and
    compare print 0.9996; a prefix-cache hit rate with ink 0% and a band up to 5 % read "[−∞, 5 %]"."""
    def ratio(pid: str, measured: float, ink: str, unit: str, lo: float | None, hi: float | None) -> StoredValue:
        return StoredValue(key=prediction_key("predictions/a.yaml", pid, {}), prediction_id=pid,
                           file="predictions/a.yaml", quantity="q", dimension="ratio", status="pass", mode="measured",
                           at={}, unit=unit, measured=measured, predicted_text=ink, lo=lo, hi=hi)

    values = (ratio("littles", 0.99955, "1.00", "", 0.95, 1.05), ratio("hits", 0.0, "0%", "%", None, 0.05))
    html = render_trend([run("2026-12-05T02:00:00Z", *values), run("2026-12-06T02:00:00Z", *values)])
    rows = {pid: re.sub(r"<[^>]+>", " ", row) for pid, row in summary_rows(html).items()}
    assert "0.9996" in rows["littles"] and "99.96" not in rows["littles"]
    assert "baseline 0.9996)" in rows["littles"]  # drift's own text, stored by the run, in the same style
    text = html.replace("&lt;", "<").replace("&gt;", ">")
    assert "predicted 1.00 [0.95, 1.05]" in text and "99.96" not in text
    assert "predicted 0% (≤ 5 %)" in text and "∞" not in text
    tip = next(t.text for t in charts(html)["littles"].iter(f"{SVG_NS}title") if "measured" in (t.text or ""))
    assert "measured 0.9996" in tip


def test_a_signed_percentage_never_puts_a_sign_on_zero() -> None:
    from pytest_roofline.units import signed_percent

    assert [signed_percent(x) for x in (-0.0003, 0.0, 0.25, -0.25)] == ["0.0%", "0.0%", "+25.0%", "-25.0%"]
    assert signed_percent(0.0003, 2) == "+0.03%" and signed_percent(-0.004, 0) == "0%"


# ------------------------------------------------------------------------------------------------ the x axis


def _dot_extents(svg: ET.Element) -> tuple[float, float, float, float]:
    """(the plot frame's left and right edges, the leftmost and rightmost edge of a measured dot): each dot a
    zero-length ``Mx,yh0`` subpath whose round cap is a disc of half the path's stroke width."""
    frame = next(r for r in svg.iter(f"{SVG_NS}rect") if r.get("fill") == "#fcfcfd")
    left = float(frame.get("x", "0"))
    right = left + float(frame.get("width", "0"))
    xs: list[tuple[float, float]] = []
    for p in svg.iter(f"{SVG_NS}path"):
        if "rl-pt" in (p.get("class") or ""):
            r = float(p.get("stroke-width", "0")) / 2
            xs += [(float(x), r) for x in re.findall(r"M([0-9.]+),[0-9.]+h0", p.get("d") or "")]
    return left, right, min(x - r for x, r in xs), max(x + r for x, r in xs)


@pytest.mark.parametrize("n", [5, 60, 406])
def test_the_first_and_newest_points_are_inside_the_plot(n: int) -> None:
    # trial: on a 406-night page the newest point sat on the plot's right edge (half a night, about 0.6 px, from
    # it, a dot's radius 2.2 px): every dot, whisker caps included in the room, now lies inside the frame
    import datetime as dt

    start = dt.datetime(2025, 1, 1, 2, tzinfo=dt.UTC)
    runs = [run((start + dt.timedelta(days=2 * i)).strftime("%Y-%m-%dT%H:%M:%SZ"),
                val("p", 0.1 + 0.0001 * (i % 7), lo=0.09, hi=0.12)) for i in range(n)]
    left, right, first, newest = _dot_extents(charts(render_trend(runs))["p"])
    assert left < first and newest < right, (left, first, newest, right)


def test_the_x_axis_says_it_is_not_to_time_scale() -> None:
    # runs are evenly spaced whatever the time between them (a place per run): 12-01, 12-02 and 12-09 are one
    # step apart each, and the axis says so rather than read as a time axis
    runs = [run(f"2026-12-{d:02d}T02:00:00Z", val("p", 0.1)) for d in (1, 2, 9)]
    svg = charts(render_trend(runs))["p"]
    xs = [x for x, _t in x_labels(svg)]
    assert [t for _x, t in x_labels(svg)] == ["12-01", "12-02", "12-09"]
    assert xs[1] - xs[0] == pytest.approx(xs[2] - xs[1])
    texts = [t.text for t in svg.iter(f"{SVG_NS}text")]
    assert "runs in order, not to time scale (UTC, 2026)" in texts
