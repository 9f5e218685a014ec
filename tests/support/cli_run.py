"""Run ``roofline`` in-process and keep what a test of its warnings needs."""

from __future__ import annotations

import warnings

import pytest

from pytest_roofline import cli
from pytest_roofline.errors import UnsimulatedSettingWarning


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str, list[str]]:
    """rc, stdout, stderr and every UnsimulatedSettingWarning the command let out."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rc = cli.main(list(argv))
    got = capsys.readouterr()
    return rc, got.out, got.err, [str(w.message) for w in caught if issubclass(w.category, UnsimulatedSettingWarning)]
