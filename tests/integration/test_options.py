"""Options are validated where they are declared, once: a bad value is one usage error before collection."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support.pytest_run import NO_CACHE

LESSON = Path(__file__).resolve().parents[2] / "predictions" / "batching-and-throughput.yaml"


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    shutil.copy(LESSON, pytester.path / "lesson.roofline.yaml")
    return pytester


def test_unknown_gpu_is_a_usage_error(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess("--gpu", "a1000", *NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "--gpu" in err and "a1000" in err and "a100" in err  # names the value and a suggestion
    assert "collected" not in result.stdout.str()


@pytest.mark.parametrize("value", ["a100", "A100", "a100-sxm4-80gb", "cpu"])
def test_known_gpu_values_parse(value: str) -> None:
    from pytest_roofline.pytest_plugin.plugin import parse_gpu

    assert parse_gpu(value) == value


@pytest.mark.slow
def test_bad_default_tolerance_is_one_usage_error(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\nroofline_default_tolerance = about ten percent\n")
    result = project.runpytest_subprocess(*NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "roofline_default_tolerance" in result.stderr.str()
