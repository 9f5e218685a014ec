"""A nightly of several prediction files, reproduced through pytest: recorded CPU runs replayed
into a history store, each prediction file in its own pytest session on each of two nights, as a nightly that runs
``pytest --gpu cpu FILE`` per file stores them; and predictions/day3.yaml's replay, stored once and replayed again.

Every expected figure comes from pytest's own output (its counts line, its ``-rxX`` lines) or from the recorded
results files, never from the store the code under test wrote:

* H1: the store keeps the outcome pytest reported (day3: "26 passed, 10 xfailed"; cpu-tiny on 12-05: "1 xpassed"),
  and the trend page and ``roofline compare`` show it;
* H2: with one run per file, every file's predictions are judged at their file's latest run: 2 nights, not 6;
* M6, L9: ``roofline compare`` and its run list fit 80 columns and name each run's file;
* L10: the second replay of day3 says it compared nothing because the store already holds that measurement.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.paths import PREDICTIONS, RECORDED, REPO
from support.pytest_run import NO_CACHE

from pytest_roofline.cli.parser import main
from pytest_roofline.history import RunSummary, open_store
from pytest_roofline.report.trend import render_trend

pytestmark = pytest.mark.slow  # eight replays through pytest

FILES = ("cpu-tiny", "cpu-kv-pressure", "cpu-prefill-heavy")
DAYS = ("2026-12-01", "2026-12-05")


def pytest_run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "ROOFLINE_HISTORY"}
    env["COLUMNS"] = "200"
    return subprocess.run([sys.executable, "-m", "pytest", *NO_CACHE, "-p", "no:randomly", "-p", "no:html",
                           "--no-roofline-progress", "-rxX", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=300, env=env)


def counts(out: str) -> dict[str, int]:
    """pytest's own final counts line (``21 passed, 1 xpassed in 4.2s``) as {outcome: n}."""
    last = [ln for ln in out.splitlines() if re.search(r"\d+ (passed|failed|xfailed|xpassed)", ln)][-1]
    return {word: int(n) for n, word in re.findall(r"(\d+) (passed|failed|xfailed|xpassed|skipped|error)", last)}


def listed(out: str, word: str) -> set[str]:
    """The prediction ids pytest's short summary lists as ``XFAIL`` / ``XPASS`` (``-rxX``)."""
    return set(re.findall(rf"^{word} \S+?::([^\s]+)", out, flags=re.M))


@pytest.fixture(scope="module")
def trial(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("trial")
    nightly, day3 = tmp / "nightly", tmp / "day3"
    out: dict[str, Any] = {"nightly": nightly, "day3": day3}
    for f in FILES:  # file by file, as the trial did: the store is written out of time order too
        for d in DAYS:
            res = pytest_run("--replay", str(RECORDED / f"{f}-{d}.results.json"), str(PREDICTIONS / f"{f}.yaml"),
                             "--roofline-history", str(nightly))
            assert res.returncode == 0, res.stdout + res.stderr
            out[f, d] = res.stdout
    for i in (1, 2):
        res = pytest_run("--replay", str(RECORDED / "day3-2026-07-31.results.json"), str(PREDICTIONS / "day3.yaml"),
                         "--roofline-history", str(day3))
        assert res.returncode == 0, res.stdout + res.stderr
        out["day3", i] = res.stdout
    return out


def runs_of(store: Path) -> list[RunSummary]:
    return list(open_store(str(store)).runs())


def section_rows(html: str) -> dict[str, str]:
    rows = re.findall(r'<tr class="st-[a-z]*">.*?</tr>', html, flags=re.S)
    out = {}
    for row in rows:
        pid = re.sub(r"<[^>]+>", "", re.search(r'<td class="pid">(.*?)</td>', row, flags=re.S).group(1))  # type: ignore[union-attr]
        out[pid] = row
    return out


# ------------------------------------------------------------------------------------------------ H1


def test_the_store_keeps_the_outcomes_pytest_reported(trial: dict[str, Any]) -> None:
    out = trial["day3", 1]
    assert counts(out) == {"passed": 26, "xfailed": 10}  # what the terminal said
    xfailed = listed(out, "XFAIL")
    assert len(xfailed) == 10
    (run,) = runs_of(trial["day3"])  # the second replay was not stored (L10)
    assert run.outcomes == {"pass": 26, "xfail": 10}
    assert run.counts == {"pass": 26, "fail": 10}  # the verdicts: an expected miss is a FAIL verdict
    assert {v.prediction_id for v in run.values if v.outcome == "xfail"} == xfailed
    assert all(v.status == "fail" for v in run.values if v.outcome == "xfail")
    # cpu-tiny on 12-05: one unexpected pass, which its verdict calls a pass
    tiny = trial["cpu-tiny", "2026-12-05"]
    assert counts(tiny) == {"passed": 21, "xpassed": 1} and listed(tiny, "XPASS") == {"knee"}
    (night,) = [r for r in runs_of(trial["nightly"])
                if r.files == ["predictions/cpu-tiny.yaml"] and r.started_at.startswith("2026-12-05")]
    assert night.outcomes == {"pass": 21, "xpass": 1}
    knee = next(v for v in night.values if v.prediction_id == "knee")
    assert (knee.status, knee.outcome) == ("pass", "xpass")


def test_the_trend_page_says_xfail_where_the_terminal_did(trial: dict[str, Any]) -> None:
    html = render_trend(runs_of(trial["day3"]))
    xfailed = listed(trial["day3", 1], "XFAIL")
    rows = section_rows(html)
    assert {pid for pid, row in rows.items() if ">xfail</span>" in row} == xfailed
    assert ">FAIL</span>" not in html  # no FAIL badge, pill or legend anywhere: pytest reported none
    assert "measured · FAIL" not in html and "measured · xfail" in html
    assert re.search(r">xfail</span> 10 <span[^>]*>pass</span> 26", html)  # the group's pills


def test_compare_says_xpass_where_the_terminal_did(trial: dict[str, Any], capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    tiny = sorted((r for r in runs_of(trial["nightly"]) if r.files == ["predictions/cpu-tiny.yaml"]),
                  key=lambda r: r.started_at)
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["compare", "--store", str(trial["nightly"]), tiny[0].run_id, tiny[1].run_id]) == 0
    lines = capsys.readouterr().out.splitlines()
    # M6: the trial's 96-102-character rows now fit 80 columns, the significance column included
    assert max(len(ln) for ln in lines) <= 80, [ln for ln in lines if len(ln) > 80]
    assert any(ln.rstrip().endswith("beyond noise     model") or "beyond noise" in ln for ln in lines)
    knee = lines[next(i for i, ln in enumerate(lines) if ln.startswith("knee ")) + 1].split()
    # A and B: knee's outcome as each night's terminal reported it (12-05: XPASS)
    a_word = "xpass" if "knee" in listed(trial["cpu-tiny", "2026-12-01"], "XPASS") else "pass"
    assert knee[1:4] == [a_word, "8", "xpass"]
    assert main(["compare", "--store", str(trial["nightly"]), tiny[0].run_id, tiny[1].run_id, "--json"]) == 0
    rows = {r["prediction_id"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert (rows["knee"]["status_b"], rows["knee"]["outcome_b"]) == ("pass", "xpass")


# ------------------------------------------------------------------------------------------------ H2


def _p50_c32_ms(day: str) -> float:
    data = json.loads((RECORDED / f"cpu-tiny-{day}.results.json").read_text())
    (point,) = [p for p in data["points"] if p.get("concurrency") == 32]
    return float(point["client"]["ttft_ms"]["p50"])


def test_each_file_is_judged_at_its_own_latest_run(trial: dict[str, Any]) -> None:
    html = render_trend(runs_of(trial["nightly"]))
    rows = section_rows(html)
    assert not [pid for pid, row in rows.items() if "not in the latest run" in row]  # every file ran on 12-05
    # queueing-past-the-cap: ttft_p50 at C=32 of the two recordings, as the 12-05 terminal reported its drift
    change = _p50_c32_ms("2026-12-05") / _p50_c32_ms("2026-12-01") - 1
    expected = f"{change * 100:+.1f}%"
    # (one earlier night: the night-to-night noise is not known yet, so the move is UNCERTAIN, never DRIFTED)
    assert re.search(rf"queueing-past-the-cap\s+UNCERTAIN\s+{re.escape(expected)} vs previous run",
                     trial["cpu-tiny", "2026-12-05"])
    assert f"{expected} vs previous run" in rows["queueing-past-the-cap"]
    head = re.sub(r"<[^>]+>", "", re.search(r'<div class="meta">(.*?)</div>', html, flags=re.S).group(1))  # type: ignore[union-attr]
    assert "2 nights (6 runs of 3 prediction files; a night is one run of a file)" in head
    # the pills: each file's 12-05 outcomes, as the three 12-05 terminals counted them
    late = [counts(trial[f, "2026-12-05"]) for f in FILES]
    passed, xpassed = sum(c.get("passed", 0) for c in late), sum(c.get("xpassed", 0) for c in late)
    assert re.findall(r"(XPASS|pass) (\d+)", head) == [("XPASS", str(xpassed)), ("pass", str(passed))]
    # each chart: its file's two runs, "12-01" and "12-05", no empty places for the other files' runs
    ticks = re.findall(r'text-anchor="middle"[^>]*>(\d\d-\d\d[^<]*)</text>', html)
    assert set(ticks) == {"12-01", "12-05"}


# ------------------------------------------------------------------------------------------------ L9


def test_the_run_list_names_the_files(trial: dict[str, Any], capsys: pytest.CaptureFixture[str],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["compare", "--store", str(trial["nightly"])]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(len(ln) for ln in lines) <= 80
    for f in FILES:
        assert sum(f"predictions/{f}.yaml" in ln for ln in lines) == 2  # two nights each


# ------------------------------------------------------------------------------------------------ L10


def test_a_second_replay_says_why_it_compared_nothing(trial: dict[str, Any]) -> None:
    first, second = trial["day3", 1], trial["day3", 2]
    stored = re.search(r"roofline history: stored run (\S+) ", first)
    assert stored is not None
    run_id = stored.group(1)
    assert f"roofline history: not stored: run {run_id} " in second
    # as the first replay: nothing before it to compare with, the reason named (probe 15 #4)
    assert (f"roofline drift: a100-sxm4-80gb · qwen3-8b · vllm 0.26.0: the store holds no earlier run of this setup: "
            f"21 measured, nothing to compare with yet (already stored: run {run_id} holds this very measurement, "
            "which a replay is not compared with)") in second.splitlines()
    line = next(ln for ln in second.splitlines() if ln.startswith("roofline drift: 0 compared"))
    assert line.startswith("roofline drift: 0 compared, 21 new (this measurement is already stored as run "
                           f"{run_id}: a replay is not compared with it, nor stored again)")
    # the first replay had nothing stored before it: no such words
    first_line = next(ln for ln in first.splitlines() if ln.startswith("roofline drift: "))
    assert "already stored" not in first_line
