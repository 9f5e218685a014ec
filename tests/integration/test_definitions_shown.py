"""The newcomer's replay, end to end: a measured verdict's failure text, its pytest-html extra and the scorecard each
say how the figure is defined ("the whole run, as `vllm bench serve` defines `output_throughput`"), from the one
``definition`` row (tests/unit/test_definitions.py checks the row itself)."""

from __future__ import annotations

import html
import json
import os
import subprocess
import sys
from pathlib import Path

from support.paths import CPU_TINY
from support.pytest_run import NO_CACHE
from support.recordings import recording_path
from support.specs import DEFINITION_MISSES

from pytest_roofline.quantities.definitions import definition_text

MISSES = DEFINITION_MISSES


def test_replayed_misses_name_their_definition_in_the_terminal_pytest_html_and_the_scorecard(tmp_path: Path) -> None:
    yaml = tmp_path / "cpu-tiny.yaml"
    yaml.write_text(CPU_TINY.read_text(encoding="utf-8") + MISSES, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "ROOFLINE_HISTORY"}
    env["COLUMNS"] = "200"
    r = subprocess.run([sys.executable, "-m", "pytest", *NO_CACHE, "-p", "no:randomly", "--no-roofline-progress",
                        "--replay", str(recording_path("cpu-tiny")), str(yaml), "--html", str(tmp_path / "r.html"),
                        "--roofline-scorecard", str(tmp_path / "sc.html")],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 1, r.stdout + r.stderr
    tput, ttft = definition_text("output_throughput"), definition_text("ttft_p50")
    assert f"definition: {tput}" in r.stdout and f"definition: {ttft}" in r.stdout, r.stdout
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    blob = json.loads(html.unescape(page.split('data-jsonblob="', 1)[1].split('"></div>', 1)[0]))
    report = html.unescape(json.dumps(blob, ensure_ascii=False))  # the extras' HTML, escaped once more inside
    assert "vllm bench serve" in report and tput in report and ttft in report
    scorecard = html.unescape((tmp_path / "sc.html").read_text(encoding="utf-8"))
    assert tput in scorecard and ttft in scorecard
