"""The trend page marks the nights drift would not judge as usual (issue 21's leftover): a night whose machine ran
more than 20 % slower or faster than the earlier nights of its setup (the host probe, by drift's own rule and
reference: history/_machine.py, history/_drift.py's ``night_machine``, known from three earlier probed nights; a
night with fewer is compared with the nearest other nights, later ones too) gets a shaded column behind it, and a night
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
    # night 4's earlier nights of its setup are nights 1-3: their probes' median is median(7.5, 7.0, 7.2) = 7.2, and
    # night 4's probe 0.6 × 7.2 = 4.32 is 40 % below it, beyond the 20 % rule. The nights within it: night 5 (7.6 vs
    # median(7.5, 7.0, 7.2, 4.32) = (7.0 + 7.2) / 2 = 7.1: 7 % faster); nights 1-3 have fewer than 3 earlier probed
    # nights and are compared with the nearest 4 others: night 1 7.5 vs median(7.0, 7.2, 4.32, 7.6) = 7.1, night 2
    # 7.0 vs median(7.5, 7.2, 4.32, 7.6) = 7.35, night 3 7.2 vs median(7.5, 7.0, 4.32, 7.6) = 7.25: all within 20 %
    probes = (7.5, 7.0, 7.2, 4.32, 7.6)
    html = page(nights(probes))
    svg = chart(html)
    xs = dots_x(svg)
    assert len(xs) == 5
    cols = columns(svg)
    assert len(cols) == 1
    left, right = cols[0]
    assert left < xs[3] < right and right < xs[4] and left > xs[2]  # behind night 4 alone
    tips = tooltips(svg)
    assert len(tips) == 5
    why = ("the machine itself ran 40% slower than on the other nights (host probe 4.32 vs 7.2 GFLOP/s, beyond "
           "20%)")
    assert why in tips[3] and tips[3].startswith("2026-12-04 02:00 UTC · abc4def")
    assert "nearest" not in tips[3] and "after it" not in tips[3]  # drift's own reference: the earlier nights
    assert not any("machine" in t for n, t in enumerate(tips) if n != 3)
    assert "machine ran apart (host probe)" in legend(svg)
    assert "concurrency not held" not in legend(svg)  # a mark the chart does not have is not explained
    assert note_rows(html) == ["2026-12-05 02:00", "2026-12-04 02:00",
                               "marks: machine 40% slower: host probe 4.32 vs 7.2 GFLOP/s",
                               "2026-12-03 02:00", "2026-12-02 02:00", "2026-12-01 02:00"]
    assert f'title="{why}' in html  # the whole sentence on hovering the table's note
    assert "A yellow column behind a night" in html  # the header's hint says what the marks are


def test_a_faster_machine_is_marked_too_and_the_rule_is_a_ratio_either_way() -> None:
    # night 4: 1.3 × 7.2 = 9.36 GFLOP/s, 30 % faster than nights 1-3's median 7.2 (night 5: 7.6 vs median(7.5, 7.0,
    # 7.2, 9.36) = 7.35; nights 1-3 vs the nearest others: 7.5 vs 7.4, 7.0 vs 7.55, 7.2 vs 7.55: all within 20 %)
    tips = tooltips(chart(page(nights((7.5, 7.0, 7.2, 9.36, 7.6)))))
    assert "the machine itself ran 30% faster than on the other nights (host probe 9.36 vs 7.2 GFLOP/s" in tips[3]
    assert [("machine" in t) for t in tips] == [False, False, False, True, False]
    # the rule is 1.2 times either way: 6.56 = 0.82 × 8 is 18 % slower, and 1 / 0.82 = 1.22 is beyond 1.2 (night 3,
    # with two earlier probed nights, against the nearest four others, all 8)
    tips = tooltips(chart(page(nights((8.0, 8.0, 6.56, 8.0, 8.0)))))
    assert "the machine itself ran 18% slower than on the other nights (host probe 6.56 vs 8 GFLOP/s" in tips[2]
    assert [("machine" in t) for t in tips] == [False, False, True, False, False]


def test_nights_within_twenty_percent_are_not_marked_and_render_as_without_probes() -> None:
    # night 3 at 6.1625 against its nearest four others (it has two earlier probed nights), median(7.5, 7.0, 8.0,
    # 7.2) = 7.35: 0.838, 16 % slower (1 / 0.838 = 1.19, within 1.2), and every other night within 20 % of its
    # reference (night 4: 8.0 vs median(7.5, 7.0, 6.1625) = 7.0, 1.14): no mark anywhere, and the page is byte for
    # byte the page of the same nights stored without probes
    probes = (7.5, 7.0, 6.1625, 8.0, 7.2)
    with_probes = page(nights(probes))
    assert page(nights((None,) * 5)) == with_probes
    assert "tmark" not in with_probes and not columns(chart(with_probes))


def test_the_reference_is_the_earlier_nights_of_the_same_setup() -> None:
    # drift compares a night with the earlier nights of its own setup (hardware, model, engine version): night 1 ran
    # vLLM 0.31.0 on a slow machine (4.0), nights 2-5 ran 0.32.0. Night 5's reference is nights 2-4 alone, median(7.5,
    # 7.0, 8.0) = 7.5, and its 4.35 is 4.35 / 7.5 = 0.58, 42 % slower (with night 1 it would read median(4.0, 7.5,
    # 7.0, 8.0) = 7.25: 40 %). Nights 2-4 have fewer than 3 earlier nights of their setup and are compared with its
    # other nights: 7.5 vs median(7.0, 8.0, 4.35) = 7.0, 7.0 vs median(7.5, 8.0, 4.35) = 7.5, 8.0 vs median(7.5,
    # 7.0, 4.35) = 7.0 (1.14): none beyond 20 %. Night 1, alone in its setup, is compared with nothing: never marked
    older = replace(SETUP, engine_version="0.31.0")
    tips = tooltips(chart(page(nights((4.0, 7.5, 7.0, 8.0, 4.35), setups=(older,) + (SETUP,) * 4))))
    assert [("machine" in t) for t in tips] == [False, False, False, False, True]
    assert "ran 42% slower than on the other nights (host probe 4.35 vs 7.5 GFLOP/s, beyond 20%)" in tips[4]
    assert "after it" not in tips[4] and "nearest" not in tips[4]


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


def test_a_slow_first_night_is_marked_and_the_nights_after_it_are_not() -> None:
    # the fault T3 mends: a slow first night (4.2 GFLOP/s) and 7.5 on every night after it. Night 1 has no earlier
    # night, so drift calls its value "new" and judges nothing of its machine; the page compares it with the 4 nights
    # after it: 4.2 / median(7.5 × 4) = 0.56, 44 % slower. Nights 2 and 3 have one and two earlier probed nights:
    # drift knows no machine for them (before, their median was night 1 itself, or median(4.2, 7.5) = 5.85, and they
    # read "79% faster" and "28% faster": 7.5 / 4.2 = 1.786, 7.5 / 5.85 = 1.282); the page compares each with its 4
    # nearest other nights, median(4.2, 7.5, 7.5, 7.5) = 7.5: 0 %. Nights 4 and 5, drift's reference: median(4.2, 7.5,
    # 7.5) = 7.5 and median(4.2, 7.5, 7.5, 7.5) = 7.5: 0 %. Night 1 alone is marked
    from pytest_roofline.history import DriftPolicy, drift_for

    runs = nights((4.2, 7.5, 7.5, 7.5, 7.5))
    key = runs[0].values[0].key
    rule = DriftPolicy(machine="20%")
    first = drift_for(runs[0].values, [], rule, setup=SETUP)[key]
    assert first.status.value == "new" and not first.machine  # the case drift does not mark
    for n in (1, 2):  # drift, the rule on, says nothing of the machine of nights 2 and 3
        d = drift_for(runs[n].values, runs[:n], rule, setup=SETUP)[key]
        assert not d.machine and "machine" not in d.text
    html = page(runs)
    svg = chart(html)
    tips = tooltips(svg)
    assert [("the machine itself ran" in t) for t in tips] == [True, False, False, False, False]
    assert ("the machine itself ran 44% slower than on the other nights (host probe 4.2 vs 7.5 GFLOP/s, beyond "
            "20%)" in tips[0])
    assert "compared with the 4 nights after it, since no earlier night of its setup measured it" in tips[0]
    xs, cols = dots_x(svg), columns(svg)
    assert len(cols) == 1 and cols[0][0] < xs[0] < cols[0][1] < xs[1]
    assert note_rows(html)[-2:] == [
        "2026-12-01 02:00", "marks: machine 44% slower: host probe 4.2 vs 7.5 GFLOP/s (the 4 nights after it)"]
    # the setup's only night with a probe has no other night to be compared with: never marked
    alone = page(nights((4.41, None, None, None, None)))
    assert "tmark" not in alone and alone == page(nights((None,) * 5))
    # nor with two other probed nights: the machine is known from 3 (4.2 against 7.5 and 7.5 is not marked)
    assert "tmark" not in page(nights((4.2, 7.5, 7.5, None, None)))


def test_a_night_with_too_few_earlier_nights_is_compared_with_the_nearest_ones() -> None:
    # night 3 at 4.35 has two earlier probed nights (7.5, 7.0): drift knows no machine; the page compares it with the
    # 4 nearest other nights, 7.5, 7.0, 8.0, 7.2: median (7.2 + 7.5) / 2 = 7.35, and 4.35 / 7.35 = 0.592, 41 % slower.
    # Night 4 is then compared with median(7.5, 7.0, 4.35) = 7.0 (8.0 / 7.0 = 1.14) and night 5 with median(7.5, 7.0,
    # 4.35, 8.0) = 7.25 (0.99); nights 1 and 2 with the 4 others: 7.5 vs median(7.0, 4.35, 8.0, 7.2) = 7.1, 7.0 vs
    # median(7.5, 4.35, 8.0, 7.2) = 7.35: none beyond 20 %
    html = page(nights((7.5, 7.0, 4.35, 8.0, 7.2)))
    tips = tooltips(chart(html))
    assert [("the machine itself ran" in t) for t in tips] == [False, False, True, False, False]
    assert "ran 41% slower than on the other nights (host probe 4.35 vs 7.35 GFLOP/s, beyond 20%)" in tips[2]
    assert ("compared with the 4 nearest nights of its setup (2 before it, 2 after it), since fewer than 3 earlier "
            "nights measured it with a host probe" in tips[2])
    assert "marks: machine 41% slower: host probe 4.35 vs 7.35 GFLOP/s (the 4 nearest nights)" in note_rows(html)


def test_a_slow_fifth_night_after_four_usual_ones_is_marked_by_drift_and_the_page() -> None:
    # night 5 at 4.2 against the median of nights 1-4, median(7.5, 7.0, 7.2, 8.0) = (7.2 + 7.5) / 2 = 7.35: 4.2 /
    # 7.35 = 0.571, 43 % slower. Drift, the rule on, leaves it unjudged with the same sentence; the page marks it
    # alone (nights 1-3 against their nearest others: 7.5 vs median(7.0, 7.2, 8.0, 4.2) = 7.1, 7.0 vs 7.35, 7.2 vs
    # median(7.5, 7.0, 8.0, 4.2) = 7.25; night 4 8.0 vs median(7.5, 7.0, 7.2) = 7.2, 1.11)
    from pytest_roofline.history import DriftPolicy, drift_for

    runs = nights((7.5, 7.0, 7.2, 8.0, 4.2))
    key = runs[0].values[0].key
    why = "the machine itself ran 43% slower than on the other nights (host probe 4.2 vs 7.35 GFLOP/s, beyond 20%)"
    d = drift_for(runs[4].values, runs[:4], DriftPolicy(machine="20%"), setup=SETUP)[key]
    assert d.status.value == "uncertain" and why in d.machine and f"not judged: {why}" in d.text
    tips = tooltips(chart(page(runs)))
    assert [("the machine itself ran" in t) for t in tips] == [False, False, False, False, True]
    assert why in tips[4] and "nearest" not in tips[4]


def test_a_first_night_fifteen_percent_below_the_nights_after_it_is_not_marked() -> None:
    # 0.85 × 7.5 = 6.375: 15 % below the four nights after it (all 7.5), within 20 %; nights 2 and 3 against their
    # nearest four others, median(6.375, 7.5, 7.5, 7.5) = 7.5, and nights 4 and 5 against their earlier ones, 7.5
    # too: 0 %. No mark, the page as without probes
    html = page(nights((6.375, 7.5, 7.5, 7.5, 7.5)))
    assert "tmark" not in html and html == page(nights((None,) * 5))


def test_a_night_whose_earlier_nights_all_ran_apart_is_marked() -> None:
    # night 5's four earlier nights ran at 4.0, 4.0, 9.0 and 9.0: their median is (4.0 + 9.0) / 2 = 6.5, and each of
    # them is 0.62 or 1.38 times it, so with the rule on drift takes none as a baseline and calls night 5 "new". The
    # page still marks it against that reference, drift's own: 9.75 / 6.5 = 1.5, 50 % faster. (The others, by the same
    # numbers: night 4 9.0 vs median(4.0, 4.0, 9.0) = 4.0, 125 % faster; nights 1-3 against the nearest four others:
    # 4.0 vs median(4.0, 9.0, 9.0, 9.75) = 9.0, 56 % slower, twice; 9.0 vs median(4.0, 4.0, 9.0, 9.75) = 6.5, 38 %
    # faster.)
    from pytest_roofline.history import DriftPolicy, drift_for

    runs = nights((4.0, 4.0, 9.0, 9.0, 9.75))
    fifth = drift_for(runs[4].values, runs[:4], DriftPolicy(machine="20%"), setup=SETUP)[runs[4].values[0].key]
    assert fifth.status.value == "new" and not fifth.machine
    tips = tooltips(chart(page(runs)))
    assert [("the machine itself ran" in t) for t in tips] == [True, True, True, True, True]
    assert "ran 50% faster than on the other nights (host probe 9.75 vs 6.5 GFLOP/s, beyond 20%)" in tips[4]
    assert "ran 125% faster than on the other nights (host probe 9 vs 4 GFLOP/s, beyond 20%)" in tips[3]
    assert "ran 56% slower than on the other nights (host probe 4 vs 9 GFLOP/s, beyond 20%)" in tips[1]
    assert "ran 38% faster than on the other nights (host probe 9 vs 6.5 GFLOP/s, beyond 20%)" in tips[2]


@pytest.mark.parametrize("seed", range(6))
def test_the_page_marks_the_nights_drifts_own_reference_says_ran_apart(seed: int) -> None:
    # twelve nights of probes from a quiet machine (6.5-8 GFLOP/s) with about one night in four on a busy one (half
    # that). A night is marked where drift's own reference (night_machine over the earlier nights, known from 3 of
    # them; for the first three, which it knows none for, over the nearest 5 other nights: the first 6 but itself)
    # is more than 20 % from its probe, and nowhere else. Every night drift itself, asked about each night with the
    # rule on (Drift.machine), says ran apart is among them; a night marked that drift does not say so of is one of
    # the first three (drift knows no machine yet) or one drift calls "new" (every earlier night ran apart)
    import random

    from pytest_roofline.history import MIN_NIGHTS, DriftPolicy, drift_for, machine_apart, night_machine

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
        if n < MIN_NIGHTS:  # drift knows no machine yet (None): the 5 nearest other nights, night_machine's median
            assert reference is None
            reference = night_machine(key, [o for o in runs[:6] if o is not r])
        expected.append(machine_apart(r.values[0].host_probe_gflop_per_s, reference, 0.20))
    tips = tooltips(chart(page(runs)))
    marked = [("the machine itself ran" in t) for t in tips]
    assert marked == expected
    rule = DriftPolicy(machine="20%")
    drifts = [drift_for(r.values, runs[:n], rule, setup=SETUP)[key] for n, r in enumerate(runs)]
    for n, (m, d) in enumerate(zip(marked, drifts)):
        assert m or not d.machine  # drift's every machine night is marked
        assert not m or d.machine or d.status.value == "new" or n < MIN_NIGHTS
