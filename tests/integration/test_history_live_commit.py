"""A live night's stored commit and branch are those of its prediction file's checkout, as its identity is, not
of pytest's rootdir (trial 21, M1): ``--roofline-history DIR`` with a space makes DIR a path argument, the rootdir
their common folder (outside the checkout), and the run was stored as ``nocommit``. The night here is a live one
whose engine cannot start (``--gpu a100`` on a machine that reports an A100-SXM4): such a night is stored, its
measured predictions as ERRORs."""

from __future__ import annotations

import subprocess

import pytest
from support.gpu import A100_SXM4_SMI_LINE, fake_smi
from support.pytest_run import NO_HTML
from support.specs import A100_PCIE_PLAN

from pytest_roofline.history import open_store


def _git(cwd, *args: str) -> str:  # noqa: ANN001
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


def test_a_live_nights_commit_is_its_prediction_files(pytester: pytest.Pytester,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    proj = pytester.path / "proj"
    proj.mkdir()
    (proj / "plan.roofline.yaml").write_text(A100_PCIE_PLAN)
    _git(proj, "init", "-q", "-b", "nightly")
    _git(proj, "-c", "user.email=t@example.com", "-c", "user.name=t", "add", "plan.roofline.yaml")
    _git(proj, "-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", "plan")
    head = _git(proj, "rev-parse", "--short", "HEAD")
    hist = pytester.path / "hist"
    hist.mkdir()
    monkeypatch.setenv("PATH", fake_smi(pytester.path, A100_SXM4_SMI_LINE))
    for var in ("GITHUB_HEAD_REF", "GITHUB_REF_NAME", "ROOFLINE_HISTORY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(proj)
    r = pytester.runpytest_subprocess(*NO_HTML, "--gpu", "a100", "plan.roofline.yaml", "--roofline-history",
                                      str(hist))
    out = r.stdout.str()
    assert f"rootdir: {pytester.path}" in out  # the space spelling moved pytest's rootdir out of the checkout
    assert "roofline history: stored run" in out, out
    (run,) = open_store(str(hist)).runs()
    assert run.commit == head and run.branch == "nightly"
    assert f"-{head}-" in run.run_id
