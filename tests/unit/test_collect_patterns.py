"""Which YAML files are collected as prediction files: patterns match path segments, ``*`` never crosses ``/``."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_roofline.pytest_plugin.collect import matches_patterns
from pytest_roofline.pytest_plugin.session import DEFAULT_PATTERNS

ROOT = Path("/proj")


@pytest.mark.parametrize("rel, expected", [
    ("predictions/day3.yaml", True),
    ("predictions/day3.yml", True),
    ("sub/predictions/day3.yaml", True),            # a tail match, as before
    ("predictions/recorded/day3.calibration.yaml", False),  # * does not cross a folder
    ("predictions/recorded/run42.yaml", False),
    ("configs/model.yaml", False),
    ("anywhere/deep/x.roofline.yaml", True),
    ("x.roofline.yml", True),
])
def test_default_patterns(rel: str, expected: bool) -> None:
    assert matches_patterns(ROOT / rel, ROOT, DEFAULT_PATTERNS) is expected


def test_double_star_spans_folders() -> None:
    assert matches_patterns(ROOT / "predictions/a/b/c.yaml", ROOT, ["predictions/**/*.yaml"])
    assert matches_patterns(ROOT / "predictions/c.yaml", ROOT, ["predictions/**/*.yaml"])
    assert not matches_patterns(ROOT / "other/c.yaml", ROOT, ["predictions/**/*.yaml"])
