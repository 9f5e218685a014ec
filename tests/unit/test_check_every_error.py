"""``roofline check`` reports every error of a file in one run (issue 24, the review's `typo.yaml`): before, a typo
in a setup section was reported alone, and the predictions' typos only once it was fixed."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pytest_roofline import cli
from pytest_roofline.errors import SpecError, SpecErrors
from pytest_roofline.format.spec import load_spec

TYPOS = """\
    hardware: h100-sxm
    model: qwen3-8b
    sweep:
      concurency: [1, 4]
    slo: {ttft: 500 parsecs}
    predictions:
      - id: a
        quantity: ttft_p99_ms
        at: {concurrency: 1}
        predicted: 50 ms
      - id: b
        quantity: weight_bytes
        predicted: 16.38 GB
        tolerence: ±5%
      - id: c
        quantity: ridge_point
        predicted: 295 FLOP/byte
"""


def _file(tmp_path: Path, text: str) -> Path:
    f = tmp_path / "typo.yaml"
    f.write_text(textwrap.dedent(text), encoding="utf-8")
    return f


def test_every_error_of_the_file_in_one_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = _file(tmp_path, TYPOS)
    assert cli.main(["check", str(f)]) == 1
    out = capsys.readouterr().out
    for line, what in ((4, "unknown key 'concurency'"), (5, "slo.ttft"), (8, "unknown quantity 'ttft_p99_ms'"),
                       (14, "unknown key 'tolerence'")):
        assert f"{f}:{line}: " in out and what in out, (line, out)
    with pytest.raises(SpecErrors) as exc:
        load_spec(f)
    assert [e.line for e in exc.value.errors] == [4, 5, 8, 14]


def test_one_error_reads_as_it_always_did(tmp_path: Path) -> None:
    f = _file(tmp_path, TYPOS.replace("    slo: {ttft: 500 parsecs}\n", "").replace("ttft_p99_ms", "ttft_p99")
              .replace("tolerence", "tolerance"))
    with pytest.raises(SpecError) as exc:
        load_spec(f)
    assert not isinstance(exc.value, SpecErrors) and exc.value.line == 4


def test_an_error_that_only_echoes_a_broken_section_is_left_out(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    # `every` needs the sweep's concurrency list; with the sweep's own typo reported, "the sweep section lists no
    # concurrency values" would send the reader to the wrong line
    f = _file(tmp_path, TYPOS.replace("    slo: {ttft: 500 parsecs}\n", "").replace(
        "at: {concurrency: 1}", "at: {concurrency: every}"))
    assert cli.main(["check", str(f)]) == 1
    out = capsys.readouterr().out
    assert "unknown key 'concurency'" in out and "unknown quantity 'ttft_p99_ms'" in out
    assert "lists no concurrency values" not in out
