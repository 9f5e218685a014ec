"""A newcomer's first file, end to end in real pytest runs (issue 24): ``roofline init`` for a Hub model that is not
a preset, the blanks filled, then ``pytest`` on the file — from the project folder and from inside
``predictions/`` — with the model read from a Hugging Face cache laid out on disk (HF_HUB_OFFLINE: no network).
What a first user tripped on: the Hub id, paths read from the file's folder, and ``--gpu h100`` in the CLI. The
ink is worked out by hand in support/first_file.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.first_file import HAND_INK, fill
from support.hf_cache import QWEN25_14B_ID, QWEN25_14B_INSTRUCT, lay_out
from support.pytest_run import NO_HTML


def _env(cache: Path) -> dict[str, str]:
    return {**os.environ, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_init_fill_check_and_pytest_from_anywhere(tmp_path: Path) -> None:
    cache = tmp_path / "hf-cache"
    lay_out(cache, QWEN25_14B_ID, {"config.json": QWEN25_14B_INSTRUCT})
    env = _env(cache)
    project = tmp_path / "project"
    (project / "predictions").mkdir(parents=True)
    roofline = [sys.executable, "-m", "pytest_roofline.cli"]
    r = _run([*roofline, "init", "--gpu", "h100", "--model", QWEN25_14B_ID, "-o", "predictions/qwen14b.yaml"],
             project, env)
    assert r.returncode == 0, r.stderr
    f = project / "predictions" / "qwen14b.yaml"
    f.write_text(fill(f.read_text(), HAND_INK))
    r = _run([*roofline, "check", "predictions/qwen14b.yaml"], project, env)
    assert r.returncode == 0, r.stdout + r.stderr
    pytest_cmd = [sys.executable, "-m", "pytest", *NO_HTML, "-q"]
    for cwd, path in ((project, "predictions/qwen14b.yaml"), (project / "predictions", "qwen14b.yaml")):
        r = _run([*pytest_cmd, path], cwd, env)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "12 passed, 4 skipped" in r.stdout  # the math passes; Little's law waits for a run


@pytest.mark.slow
def test_a_config_json_next_to_the_file_works_from_inside_its_folder(tmp_path: Path) -> None:
    # M2: before, `cd predictions && pytest x.yaml` failed with "no config.json at 'models/...'"
    folder = tmp_path / "predictions"
    (folder / "models" / "qwen14b").mkdir(parents=True)
    (folder / "models" / "qwen14b" / "config.json").write_text(json.dumps(QWEN25_14B_INSTRUCT))
    (folder / "x.yaml").write_text("hardware: h100\nmodel: models/qwen14b/config.json\npredictions:\n"
                                   "  - id: weights\n    quantity: weight_bytes\n    predicted: 29.54 GB\n")
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    for cwd, path in ((tmp_path, "predictions/x.yaml"), (folder, "x.yaml")):
        r = _run([sys.executable, "-m", "pytest", *NO_HTML, "-q", path], cwd, env)
        assert r.returncode == 0 and "1 passed" in r.stdout, r.stdout + r.stderr
