"""A night whose every measured prediction changed definition compared nothing (trial s24 H1), through pytest."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from support.paths import CPU_TINY
from support.pytest_run import NO_CACHE


def test_a_night_whose_every_prediction_changed_compared_nothing(tmp_path: Path) -> None:
    """Trial s24 H1: a night whose every measured prediction changed definition since the baseline (here its
    quantity: kv_cache_tokens, then num_gpu_blocks, the same id) printed "1 compared (1 prediction changed)" and
    passed --roofline-drift-fail having judged nothing. Now it is 0 compared, and under --roofline-drift-fail the
    night fails saying why."""
    from support.paths import RECORDED

    head = CPU_TINY.read_text().split("\npredictions:")[0]
    spec = tmp_path / "predictions" / "cpu-tiny.yaml"
    spec.parent.mkdir()
    store = tmp_path / "history"

    def night(results: str, prediction: str, *extra: str) -> subprocess.CompletedProcess[str]:
        spec.write_text(head + "\npredictions:\n" + prediction)
        env = {k: v for k, v in os.environ.items() if k != "ROOFLINE_HISTORY"}
        env["COLUMNS"] = "400"
        return subprocess.run([sys.executable, "-m", "pytest", *NO_CACHE, "-p", "no:randomly", "-p", "no:html",
                               "--no-roofline-progress", str(spec), "--replay", str(RECORDED / results),
                               f"--roofline-history={store}", *extra], cwd=tmp_path, capture_output=True,
                              text=True, timeout=300, env=env)

    first = night("cpu-tiny-2026-12-01.results.json", "  - {id: kv, quantity: kv_cache_tokens, predicted: 2097152}\n")
    assert first.returncode == 0, first.stdout[-3000:]
    second = night("cpu-tiny-2026-12-05.results.json", "  - {id: kv, quantity: num_gpu_blocks, predicted: 16384}\n",
                   "--roofline-drift-fail")
    out = second.stdout
    assert "roofline drift: 0 compared, 1 prediction changed (measured against another definition" in out, out[-3000:]
    assert "it measures num_gpu_blocks, where it measured kv_cache_tokens" in out
    assert "%" not in next(line for line in out.splitlines() if line.startswith("kv ") and "CHANGED" in line)
    assert "FAILED (--roofline-drift-fail)" in out and "changed definition since the baseline" in out
    assert second.returncode != 0
