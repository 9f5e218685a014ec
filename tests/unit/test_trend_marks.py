"""The trend page marks the nights drift would not judge as usual (issue 21's leftover): a night whose machine ran
more than 20 % slower or faster than the earlier nights of its setup (the host probe, by drift's own rule and
reference: history/_machine.py, history/_drift.py's ``night_machine``) gets a shaded column behind it, and a night
measured at a point that did not hold its concurrency a ring around its dot; each says why, with its numbers, in
the point's tooltip and in a row under the night in the nights table, and the chart's legend explains a mark only
where the chart has one. A store without probes, whose points all held, renders as before.

Every expected number below is worked out here from the probes the nights are given.
"""

from __future__ import annotations

import re
from dataclasses import replace
from xml.etree import ElementTree as ET

import pytest

from pytest_roofline.history import RunSummary, SetupKey, StoredValue, prediction_key
from pytest_roofline.report import trend
from pytest_roofline.report.svg import PALETTE
from pytest_roofline.report.trend import render_trend

SVG_NS = "{http://www.w3.org/2000/svg}"
SETUP = SetupKey("cpu", "roofline-tiny", "0.32.0")
FILE = "predictions/cpu.yaml"
#: the measured TTFT (s) of the five nights, and each night's host probe (GFLOP/s)
TTFT_S = (0.100, 0.102, 0.160, 0.101, 0.099)
PROBES = (7.5, 7.0, None, 8.0, 7.2)  # night 3's is set by each test


def value(measured: float, probe: float | None, *, unheld: tuple[str, ...] = (), pid: str = "ttft",
          at: str = "8") -> StoredValue:
    return StoredValue(key=prediction_key(FILE, pid, {"concurrency": at}), prediction_id=pid, file=FILE,
                       quantity="ttft_p50", dimension="time", status="pass", mode="measured",
                       at={"concurrency": at}, unit="ms", measured=measured, model=0.095, predicted=0.1, lo=0.05,
                       hi=0.2, predicted_text="100 ms", definition_hash="d1", host_probe_gflop_per_s=probe,
                       unheld_points=unheld)


def nights(probes: tuple[float | None, ...], *, setup: SetupKey = SETUP, unheld_night: int | None = None,
           setups: tuple[SetupKey, ...] = ()) -> list[RunSummary]:
    """Five nights (2026-12-01 to 05, 02:00 UTC) of one prediction, with these probes; ``unheld_night`` (1-based):
    that night's C=8 point did not hold its concurrency; ``setups``: each night's setup (default: ``setup``)."""
    out = []
    for n, (ttft, probe) in enumerate(zip(TTFT_S, probes), start=1):
        unheld = ("closed-c8",) if n == unheld_night else ()
        out.append(RunSummary(run_id=f"2026120{n}T020000Z-abc{n}-000000", setup=setups[n - 1] if setups else setup,
                              started_at=f"2026-12-0{n}T02:00:00Z", mode="engine", commit=f"abc{n}def",
                              values=(value(ttft, probe, unheld=unheld),)))
    return out


def page(runs: list[RunSummary]) -> str:
    return render_trend(runs, source="history/", generated_at="2026-12-07 06:00 UTC")


def chart(html: str) -> ET.Element:
    svg = re.search(r'<figure class="chart trend".*?(<svg.*?</svg>)', html, flags=re.S)
    assert svg is not None
    return ET.fromstring(svg.group(1))


def dots_x(svg: ET.Element) -> list[float]:
    """The measured points' centres (px), left to right."""
    xs = [float(x) for e in svg.iter() if "rl-pt" in (e.get("class") or "")
          for x, _y in re.findall(r"M([-\d.]+),([-\d.]+)h0", e.get("d") or "")]
    return sorted(xs)


def tooltips(svg: ET.Element) -> list[str]:
    """The points' tooltips (the hover strips of ``<g class="rl-hover">``), left to right."""
    strips = []
    for g in svg.iter(f"{SVG_NS}g"):
        for path in g.iter(f"{SVG_NS}path") if "rl-hover" in (g.get("class") or "") else ():
            title = path.find(f"{SVG_NS}title")
            m = re.match(r"M([-\d.]+),", path.get("d") or "")
            if m and title is not None and (title.text or "").startswith("2026-"):
                strips.append((float(m[1]), title.text or ""))
    return [t for _x, t in sorted(strips)]


def columns(svg: ET.Element) -> list[tuple[float, float]]:
    """The shaded columns behind nights whose machine ran apart: (left, right) px (the plot's height, not the
    legend's swatch)."""
    return [(float(r.get("x", 0)), float(r.get("x", 0)) + float(r.get("width", 0)))
            for r in svg.iter(f"{SVG_NS}rect") if r.get("fill") == PALETTE["yellow"] and float(r.get("height", 0)) > 40]


def legend(svg: ET.Element) -> list[str]:
    return [t.text or "" for t in svg.iter(f"{SVG_NS}text")]


def note_rows(html: str) -> list[str]:
    """The nights table's rows, newest first: a night's cells as text, and its marks' row as ``marks: <text>``."""
    table = re.search(r'<table class="nights">(.*?)</table>', html, flags=re.S)
    assert table is not None
    rows = []
    for tr in re.findall(r"<tr[^>]*>.*?</tr>", table.group(1), flags=re.S)[1:]:
        text = " ".join(re.sub(r"<[^>]+>", " ", tr).split())
        rows.append(f"marks: {text}" if 'class="tmarks"' in tr else text.split(" ")[0] + " " + text.split(" ")[1])
    return rows


def test_a_night_on_a_machine_forty_percent_slower_is_marked_and_says_why() -> None:
    # night 3's earlier nights of its setup are nights 1 and 2: their probes' median is (7.5 + 7.0) / 2 = 7.25, and
    # night 3's probe 0.6 × 7.25 = 4.35 is 40 % below it, beyond the 20 % rule. The nights within it: night 2
    # (7.0 vs 7.5: 7 % slower), night 4 (8.0 vs median(7.5, 7.0, 4.35) = 7.0: 14 % faster), night 5 (7.2 vs
    # median(7.5, 7.0, 4.35, 8.0) = 7.25: 1 % slower); night 1 has no earlier night to be compared with
    probes = (7.5, 7.0, 4.35, 8.0, 7.2)
    html = page(nights(probes))
    svg = chart(html)
    xs = dots_x(svg)
    assert len(xs) == 5
    cols = columns(svg)
    assert len(cols) == 1
    left, right = cols[0]
    assert left < xs[2] < right and right < xs[3] and left > xs[1]  # behind night 3 alone
    tips = tooltips(svg)
    assert len(tips) == 5
    why = ("the machine itself ran 40% slower than on the other nights (host probe 4.35 vs 7.25 GFLOP/s, beyond "
           "20%)")
    assert why in tips[2] and tips[2].startswith("2026-12-03 02:00 UTC · abc3def")
    assert not any("machine" in t for n, t in enumerate(tips) if n != 2)
    assert "machine ran apart (host probe)" in legend(svg)
    assert "concurrency not held" not in legend(svg)  # a mark the chart does not have is not explained
    assert note_rows(html) == ["2026-12-05 02:00", "2026-12-04 02:00", "2026-12-03 02:00",
                               "marks: machine 40% slower: host probe 4.35 vs 7.25 GFLOP/s",
                               "2026-12-02 02:00", "2026-12-01 02:00"]
    assert f'title="{why}' in html  # the whole sentence on hovering the table's note
    assert "A yellow column behind a night" in html  # the header's hint says what the marks are


def test_a_faster_machine_is_marked_too_and_the_rule_is_a_ratio_either_way() -> None:
    # 1.3 × 7.25 = 9.425 GFLOP/s: 30 % faster than nights 1 and 2's median
    tips = tooltips(chart(page(nights((7.5, 7.0, 9.425, 8.0, 7.2)))))
    assert "the machine itself ran 30% faster than on the other nights (host probe 9.43 vs 7.25 GFLOP/s" in tips[2]
    # the rule is 1.2 times either way: 6.56 = 0.82 × 8 is 18 % slower, and 1 / 0.82 = 1.22 is beyond 1.2
    tips = tooltips(chart(page(nights((8.0, 8.0, 6.56, 8.0, 8.0)))))
    assert "the machine itself ran 18% slower than on the other nights (host probe 6.56 vs 8 GFLOP/s" in tips[2]
    assert [("machine" in t) for t in tips] == [False, False, True, False, False]


def test_nights_within_twenty_percent_are_not_marked_and_render_as_without_probes() -> None:
    # night 3 at 0.85 × 7.25 = 6.1625 (15 % slower) and every other night within 20 % of its earlier nights' median:
    # no mark anywhere, and the page is byte for byte the page of the same nights stored without probes
    probes = (7.5, 7.0, 6.1625, 8.0, 7.2)
    with_probes = page(nights(probes))
    assert page(nights((None,) * 5)) == with_probes
    assert "tmark" not in with_probes and not columns(chart(with_probes))


def test_the_reference_is_the_earlier_nights_of_the_same_setup() -> None:
    # drift compares a night with the earlier nights of its own setup (hardware, model, engine version): night 3 is
    # the first of vLLM 0.33.0, so no earlier night is its reference, and nights 4 and 5 are compared with it alone
    # (8.0 vs 4.35 GFLOP/s: 84 % faster; 7.2 vs median(4.35, 8.0) = 6.175: 17 % faster, within 20 %). The page
    # compares night 3 with the nights after it of its setup instead (T2; before, it was unmarked): median(8.0, 7.2)
    # = 7.6, and 4.35 / 7.6 = 0.572, 43 % slower. Night 1 too has no earlier night: 7.5 vs night 2's 7.0 is 7 %.
    upgraded = replace(SETUP, engine_version="0.33.0")
    tips = tooltips(chart(page(nights((7.5, 7.0, 4.35, 8.0, 7.2), setups=(SETUP, SETUP) + (upgraded,) * 3))))
    assert [("machine" in t) for t in tips] == [False, False, True, True, False]
    assert ("ran 43% slower than on the other nights (host probe 4.35 vs 7.6 GFLOP/s, beyond 20%)" in tips[2]
            and "compared with the 2 nights after it" in tips[2])
    assert "ran 84% faster than on the other nights (host probe 8 vs 4.35 GFLOP/s" in tips[3]
    assert "after it" not in tips[3]


def test_a_night_whose_point_did_not_hold_its_concurrency_is_ringed() -> None:
    html = page(nights((None,) * 5, unheld_night=4))
    svg = chart(html)
    xs = dots_x(svg)
    rings = [e for e in svg.iter() if "rl-unheld" in (e.get("class") or "")]
    assert len(rings) == 1
    assert abs(float(rings[0].get("cx", "nan")) - xs[3]) < 0.06  # around night 4's dot
    assert rings[0].get("fill") == "none" and float(rings[0].get("data-r", 0)) > 3.6 + 0.5  # wider than the dot
    tips = tooltips(svg)
    assert "point closed-c8 did not hold its concurrency this night" in tips[3]
    assert not any("concurrency" in t for n, t in enumerate(tips) if n != 3)
    assert "concurrency not held" in legend(svg) and "machine ran apart (host probe)" not in legend(svg)
    assert note_rows(html)[:3] == ["2026-12-05 02:00", "2026-12-04 02:00", "marks: concurrency not held (closed-c8)"]
    assert not columns(svg)


def test_marks_add_nothing_to_a_page_without_them(monkeypatch: pytest.MonkeyPatch) -> None:
    # the marks' machinery switched off gives the same page for nights without probes that all held: no style, no
    # hint, no legend line, no table row of its own
    runs = nights((None,) * 5)
    with_marks = page(runs)
    monkeypatch.setattr(trend, "_night_marks", lambda group, policy: {})
    assert page(runs) == with_marks
    assert trend.TREND_MARKS_CSS not in with_marks


def test_the_summary_table_marks_the_latest_night() -> None:
    # night 5 (the latest) at 4.35 GFLOP/s against the median of 7.5, 7.0, 7.2 and 8.0, (7.2 + 7.5) / 2 = 7.35:
    # 4.35 / 7.35 = 0.592, 41 % slower; the summary row, which shows the latest night, says so beside its drift
    html = page(nights((7.5, 7.0, 7.2, 8.0, 4.35)))
    summary = re.search(r'<table class="summary">(.*?)</table>', html, flags=re.S)
    assert summary is not None
    text = " ".join(re.sub(r"<[^>]+>", " ", summary.group(1)).split())
    assert "machine 41% slower: host probe 4.35 vs 7.35 GFLOP/s" in text
    # an earlier night's mark stays in the chart and its table: the summary speaks of the latest night only
    earlier = page(nights((7.5, 7.0, 4.35, 8.0, 7.2)))
    summary = re.search(r'<table class="summary">(.*?)</table>', earlier, flags=re.S)
    assert summary is not None and "tmark" not in summary.group(1)


def test_a_slow_first_night_is_marked_against_the_nights_after_it() -> None:
    # night 1 has no earlier night, so drift calls its value "new" and judges nothing of its machine; the page
    # compares it with the nights after it of its setup (T2's documented rule): median(7.5, 7.0, 8.0, 7.2) =
    # (7.2 + 7.5) / 2 = 7.35, and night 1's 0.6 × 7.35 = 4.41 is 40 % below it. Night 2, by drift's own rule, is
    # compared with night 1 alone: 7.5 / 4.41 = 1.70, 70 % faster, marked too (drift, the rule on, leaves it
    # unjudged). Night 3: 7.0 vs median(4.41, 7.5) = 5.955, 18 % faster; night 4: 8.0 vs median(4.41, 7.5, 7.0) = 7.0,
    # 14 %; night 5: 7.2 vs median(4.41, 7.5, 7.0, 8.0) = 7.25: within 20 %, unmarked
    from pytest_roofline.history import DriftPolicy, drift_for

    runs = nights((4.41, 7.5, 7.0, 8.0, 7.2))
    first = drift_for(runs[0].values, [], DriftPolicy(machine="20%"), setup=SETUP)[runs[0].values[0].key]
    assert first.status.value == "new" and not first.machine  # the case drift does not mark
    html = page(runs)
    svg = chart(html)
    tips = tooltips(svg)
    assert [("the machine itself ran" in t) for t in tips] == [True, True, False, False, False]
    assert ("the machine itself ran 40% slower than on the other nights (host probe 4.41 vs 7.35 GFLOP/s, beyond "
            "20%)" in tips[0])
    assert "compared with the 4 nights after it, since no earlier night of its setup measured it" in tips[0]
    assert "ran 70% faster than on the other nights (host probe 7.5 vs 4.41 GFLOP/s" in tips[1]
    assert "after it" not in tips[1]
    xs, cols = dots_x(svg), columns(svg)
    assert len(cols) == 2 and cols[0][0] < xs[0] < cols[0][1] < xs[1] and cols[1][0] < xs[1] < cols[1][1] < xs[2]
    assert note_rows(html)[-2:] == [
        "2026-12-01 02:00", "marks: machine 40% slower: host probe 4.41 vs 7.35 GFLOP/s (the 4 nights after it)"]
    # the setup's only night with a probe has no other night to be compared with: never marked
    alone = page(nights((4.41, None, None, None, None)))
    assert "tmark" not in alone and alone == page(nights((None,) * 5))


def test_a_first_night_fifteen_percent_below_the_nights_after_it_is_not_marked() -> None:
    # 0.85 × 7.5 = 6.375: 15 % below the four nights after it (all 7.5), within 20 %; night 2 is 7.5 / 6.375 = 1.18
    # times night 1's, night 3 7.5 / median(6.375, 7.5) = 1.08 times: no mark, the page as without probes
    html = page(nights((6.375, 7.5, 7.5, 7.5, 7.5)))
    assert "tmark" not in html and html == page(nights((None,) * 5))


def test_a_night_whose_earlier_nights_all_ran_apart_is_marked() -> None:
    # night 3's earlier nights' median is median(8.0, 4.0) = 6.0, and each of them is 1.33 times or 0.67 times it:
    # with the rule on drift takes neither as a baseline and calls night 3 "new". The page still marks it against
    # that reference, drift's own: 9.0 / 6.0 = 1.5, 50 % faster. Night 2 is 4.0 vs night 1's 8.0: 50 % slower.
    # Night 1 (vs the nights after it, median(4.0, 9.0, 8.0, 8.0) = 8.0), 4 and 5 (vs median 8.0): 0 %
    from pytest_roofline.history import DriftPolicy, drift_for

    runs = nights((8.0, 4.0, 9.0, 8.0, 8.0))
    third = drift_for(runs[2].values, runs[:2], DriftPolicy(machine="20%"), setup=SETUP)[runs[2].values[0].key]
    assert third.status.value == "new" and not third.machine
    tips = tooltips(chart(page(runs)))
    assert [("the machine itself ran" in t) for t in tips] == [False, True, True, False, False]
    assert "ran 50% slower than on the other nights (host probe 4 vs 8 GFLOP/s, beyond 20%)" in tips[1]
    assert "ran 50% faster than on the other nights (host probe 9 vs 6 GFLOP/s, beyond 20%)" in tips[2]


@pytest.mark.parametrize("seed", range(6))
def test_the_page_marks_the_nights_drifts_own_reference_says_ran_apart(seed: int) -> None:
    # twelve nights of probes from a quiet machine (6.5-8 GFLOP/s) with about one night in four on a busy one (half
    # that). A night is marked where drift's own reference (night_machine over the earlier nights; over the nights
    # after it where no earlier one kept a probe) is more than 20 % from its probe, and nowhere else. Every night
    # drift itself, asked about each night with the rule on (Drift.machine), says ran apart is among them; a night
    # marked that drift does not say so of is one drift calls "new" (no earlier night to compare with, or every
    # earlier one ran apart): the case the page marked no more before T2
    import random

    from pytest_roofline.history import DriftPolicy, drift_for, machine_apart, night_machine

    rng = random.Random(seed)
    runs = []
    for n in range(12):
        probe = round(rng.uniform(6.5, 8.0) * (0.5 if rng.random() < 0.25 else 1.0), 3)
        runs.append(RunSummary(run_id=f"202612{n + 1:02d}T020000Z-abc-000000", setup=SETUP,
                               started_at=f"2026-12-{n + 1:02d}T02:00:00Z", mode="engine", commit=f"c{n}",
                               values=(value(0.1 + 0.001 * n, probe),)))
    key = runs[0].values[0].key
    expected = []
    for n, r in enumerate(runs):
        reference = night_machine(key, runs[:n])
        if reference is None:  # night_machine reads the latest of the runs it is given: the nearest later nights
            reference = night_machine(key, runs[:n:-1])
        expected.append(machine_apart(r.values[0].host_probe_gflop_per_s, reference, 0.20))
    tips = tooltips(chart(page(runs)))
    marked = [("the machine itself ran" in t) for t in tips]
    assert marked == expected
    rule = DriftPolicy(machine="20%")
    drifts = [drift_for(r.values, runs[:n], rule, setup=SETUP)[key] for n, r in enumerate(runs)]
    for m, d in zip(marked, drifts):
        assert m or not d.machine  # drift's every machine night is marked
        assert not m or d.machine or d.status.value == "new"
