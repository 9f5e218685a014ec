"""``roofline predict``'s --max-model-len and --max-num-batched-tokens read vLLM's human-readable integers as a
prediction file's ``engine.args`` do (review s16 L2: ``--max-model-len 8K`` was refused while ``max_model_len: 8K``
meant 8,192): ``8K`` = 8 x 1,024 = 8,192, ``2k`` = 2 x 1,000 = 2,000, ``3K`` = 3,072 (lowercase decimal, uppercase
binary, vllm/utils/argparse_utils.py at v0.32.0)."""

from __future__ import annotations

import json

import pytest

from pytest_roofline import cli

L8 = ("predict", "--simulate", "--hardware", "h100-sxm", "--model", "llama-3.1-8b", "--input-len", "512",
      "--output-len", "128", "--concurrency", "1", "--json")


def _row(capsys, *flags: str) -> dict:
    rc = cli.main([*L8, *flags])
    out, err = capsys.readouterr()
    assert rc == 0, err
    return json.loads(out.splitlines()[0])


@pytest.mark.parametrize(("written", "tokens"), [("8K", 8_192), ("8192", 8_192), ("2k", 2_000)])
def test_max_model_len_takes_vllms_form(capsys, written, tokens) -> None:
    assert _row(capsys, "--max-model-len", written)["max_model_len_tokens"] == tokens


@pytest.mark.parametrize(("written", "tokens"), [("3K", 3_072), ("2k", 2_000), ("4096", 4_096)])
def test_max_num_batched_tokens_takes_vllms_form(capsys, written, tokens) -> None:
    row = _row(capsys, "--max-num-batched-tokens", written)
    assert row["engine_settings"]["max_num_batched_tokens"]["value"] == tokens


@pytest.mark.parametrize("written", ["1.5K", "8Q", "0k"])
def test_a_value_neither_form_reads_is_a_usage_error(capsys, written) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main([*L8, "--max-model-len", written])
    assert exc.value.code == 2
    assert "must be a whole number >= 1" in capsys.readouterr().err
