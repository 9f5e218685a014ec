"""``roofline compare`` labels a results file by what it is (notes/s16/trial21.md L6)."""

from __future__ import annotations

from pathlib import Path

import pytest


def test_compare_labels_a_results_file_by_what_it_is(capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # trial 21, L6: `roofline compare <rundir> <live results.json>` labelled the live run's file `replay`
    from pytest_roofline.cli.commands import _results_kind
    from pytest_roofline.cli.parser import main

    assert _results_kind({"source": "measured", "setup": {"mode": "engine"}}) == ("engine", "live results file")
    assert _results_kind({"source": "measured", "setup": {"mode": "endpoint"}}) == ("endpoint", "live results file")
    assert _results_kind({"source": "GuideLLM", "setup": {"mode": "imported"}}) == (
        "replay", "peer results file (GuideLLM)")
    assert _results_kind({"source": "transcribed", "setup": {"mode": "transcribed"}}) == (
        "replay", "transcribed results file")
    repo = Path(__file__).resolve().parents[2]
    monkeypatch.chdir(repo)
    monkeypatch.setenv("COLUMNS", "300")  # the head lines whole, whatever terminal (or xdist worker) runs this
    a, b = (f"predictions/recorded/{n}.results.json" for n in ("cpu-tiny-2026-12-01", "day3-2026-07-31"))
    main(["compare", a, b, "--predictions", "predictions/cpu-tiny.yaml"])
    head = capsys.readouterr().out.splitlines()[:4]
    assert head[0].startswith(f"A: {a} · ") and head[0].endswith(" · live results file")
    assert head[1].endswith(" · engine")
    assert head[2].startswith(f"B: {b} · ") and head[2].endswith(" · transcribed results file")
    assert "replay" not in head[0] + head[1]

