"""A setup whose KV pool holds less than one request of max_model_len is one vLLM will not start (trial s14,
finding 6): ``roofline check`` and the CPU-only math check refuse it at the line that fixes it, naming both figures
and the fix; ``roofline predict`` and ``roofline init`` still warn (tests/unit/test_predict_refusals.py).

The pool is set by hand so every figure is arithmetic, not read back from the code:

* Qwen3-8B (its config.json: 36 layers, 8 KV heads of 128, bf16): KV per token 2 (K and V) x 36 x 8 x 128 x 2 B =
  147,456 B; a block of 16 tokens (vLLM's default block size) is 2,359,296 B (2.25 MiB).
* ``kv_cache_memory_bytes: 1073741824`` (1 GiB, the pool's memory given outright): 1,073,741,824 // 2,359,296 =
  455 blocks (455.11), 455 x 16 = 7,280 tokens.
* max_model_len: Qwen3-8B's max_position_embeddings is 40,960 (vLLM's default max_model_len); one request of it
  needs cdiv(40,960, 16) = 2,560 blocks; 455 / 2,560 = 0.177... -> "0.17x".  A request of 7,280 tokens needs 455
  blocks (fits); one of 7,281 needs 456 (455 / 456 = 0.9978 -> "0.99x", never rounded up to 1.00x).

A prediction's own ``setup:`` is held to the same rule (s14 review 1.5): its engine args replace the file's, so the
tests below give it the same 1 GiB pool; the error is at its ``max_model_len`` line where it writes one, else at its
``setup:`` line.

vLLM refuses such a pool at start: V1's check_enough_kv_cache_memory ("To serve at least one request with the
model's max seq len ... larger than the available KV cache memory", vllm/v1/core/kv_cache_utils.py) and V0's
raise_if_cache_size_invalid (vllm/worker/worker.py, 0.6.3).
"""

from __future__ import annotations

import pytest

from pytest_roofline import cli
from pytest_roofline.format.spec import SpecError, loads_spec

BLOCK = 2 * 36 * 8 * 128 * 2 * 16  # 2,359,296 B
POOL_BYTES = 2**30
POOL_TOKENS = POOL_BYTES // BLOCK * 16  # 455 blocks x 16 = 7,280 tokens
assert BLOCK == 2_359_296 and POOL_TOKENS == 7_280

HEAD = """\
hardware: l4
model: qwen3-8b
"""
PRED = """\
predictions:
  - id: blocks
    quantity: num_gpu_blocks
    predicted: 455
"""


def _file(args: str) -> str:
    return (HEAD + "engine:\n  name: vllm\n  version: \"0.11.0\"\n  args:\n"
            f"    kv_cache_memory_bytes: {POOL_BYTES}\n{args}" + PRED)


def test_the_default_max_model_len_is_refused_at_the_engine_args_with_both_figures() -> None:
    with pytest.raises(SpecError) as info:
        loads_spec(_file(""), file="nostart.yaml")
    err = info.value
    # line 7: the engine.args mapping (its first key), where max_model_len: N is to be written
    assert err.line == 7
    text = str(err)
    assert "the KV pool holds 7,280 tokens, less than one request of max_model_len 40,960" in text
    assert "max_position_embeddings" in text and "(0.17x)" in text
    assert "engine.args.max_model_len to 7,280 or less" in text
    assert "engine.args.kv_cache_memory_bytes" in text  # the pool's memory is given outright: that is what grows it


def test_a_given_max_model_len_is_refused_at_its_own_line() -> None:
    with pytest.raises(SpecError) as info:
        loads_spec(_file("    max_model_len: 7281\n"), file="nostart.yaml")
    assert info.value.line == 8
    assert "less than one request of max_model_len 7,281 (0.99x)" in str(info.value)


def test_a_max_model_len_the_pool_holds_is_accepted() -> None:
    spec = loads_spec(_file(f"    max_model_len: {POOL_TOKENS}\n"), file="ok.yaml")
    assert [p.error for p in spec.predictions] == [None]


def test_without_an_engine_section_the_model_line_is_named() -> None:
    # Qwen3-8B on one L4 at vLLM's defaults: the weights (16.38 GB) leave a pool short of 40,960 tokens
    # (roofline predict --gpu l4 --model qwen3-8b warns the same); no engine: section, so the model: line
    with pytest.raises(SpecError) as info:
        loads_spec(HEAD + PRED, file="nostart.yaml")
    assert info.value.line == 2
    assert "less than one request of max_model_len 40,960" in str(info.value)
    assert "add engine: {args: {max_model_len: N}}" in str(info.value)


def test_check_reports_it_once_with_file_and_line(tmp_path, capsys) -> None:
    f = tmp_path / "nostart.yaml"
    f.write_text(_file(""))
    rc = cli.main(["check", str(f)])
    out = capsys.readouterr().out
    assert rc == 1
    assert out.count("less than one request of max_model_len") == 1
    assert f"{f}:7: vLLM will not start this setup" in out


def _own_setup(setup: str) -> str:
    """The file's setup holds one request (max_model_len 7,280: 455 blocks, all of the pool); prediction ``own``
    (line 13) carries ``setup``, written from line 17 on."""
    return (_file(f"    max_model_len: {POOL_TOKENS}\n")
            + "  - id: own\n    quantity: num_gpu_blocks\n    predicted: 455\n    setup:\n" + setup)


def _errors(text: str) -> dict[str, SpecError | None]:
    return {p.id: p.error for p in loads_spec(text, file="own.yaml").predictions}


def test_a_predictions_own_max_model_len_past_the_pool_is_its_error_at_that_line() -> None:
    errors = _errors(_own_setup(f"      engine:\n        args:\n          kv_cache_memory_bytes: {POOL_BYTES}\n"
                                "          max_model_len: 7281\n"))
    assert errors["blocks"] is None  # the file's own setup starts
    err = errors["own"]
    assert err is not None and err.line == 20  # the prediction's max_model_len: 7281
    text = str(err)
    assert text.startswith("own.yaml:20: vLLM will not start this prediction's setup: the KV pool holds 7,280 tokens, "
                           "less than one request of max_model_len 7,281 (0.99x)")
    assert "lower setup.engine.args.max_model_len to 7,280 or less" in text


def test_a_predictions_own_setup_keeps_the_files_max_model_len() -> None:
    # its engine args are merged over the file's, arg by arg: the file's max_model_len 7,280 stays, and the pool holds
    # one request of it (it was Qwen3-8B's default 40,960 when an own setup replaced the file's args whole)
    errors = _errors(_own_setup(f"      engine: {{args: {{kv_cache_memory_bytes: {POOL_BYTES}}}}}\n"))
    assert errors == {"blocks": None, "own": None}


def test_a_predictions_own_setup_without_max_model_len_is_refused_at_its_setup_line() -> None:
    # a file without max_model_len: the own setup's (twice the file's) pool still holds less than 40,960 tokens
    text = (_file("").replace(f"    kv_cache_memory_bytes: {POOL_BYTES}\n", f"    kv_cache_memory_bytes: {POOL_BYTES}\n"
                                                                          f"    max_model_len: {POOL_TOKENS}\n")
            + "  - id: own\n    quantity: num_gpu_blocks\n    predicted: 455\n    setup:\n"
            + f"      engine: {{args: {{kv_cache_memory_bytes: {2 * POOL_BYTES}, max_model_len: 40960}}}}\n")
    err = _errors(text)["own"]
    assert err is not None
    # twice the pool: 910 blocks x 16 = 14,560 tokens; 14,560 / 40,960 = 0.355, which the refusal cuts to 0.35
    assert "the KV pool holds 14,560 tokens, less than one request of max_model_len 40,960 (0.35x)" in str(err)


def test_a_predictions_own_setup_the_pool_holds_is_accepted() -> None:
    errors = _errors(_own_setup(f"      engine:\n        args:\n          kv_cache_memory_bytes: {POOL_BYTES}\n"
                                f"          max_model_len: {POOL_TOKENS}\n"))
    assert errors == {"blocks": None, "own": None}


def test_a_tables_own_setup_is_held_to_it_too() -> None:
    text = (_file(f"    max_model_len: {POOL_TOKENS}\n")
            + "  - id: t\n    table:\n      at: concurrency\n      quantities: [output_throughput]\n"
              "      rows:\n        - [1, 10 tok/s]\n"
              f"    setup: {{engine: {{args: {{kv_cache_memory_bytes: {POOL_BYTES}, max_model_len: 8192}}}}}}\n")
    errors = _errors(text)
    err = errors["t"]
    assert err is not None and err.line == 19
    assert "less than one request of max_model_len 8,192 (0.88x)" in str(err)  # 455 of cdiv(8,192, 16) = 512


def test_check_and_the_math_check_report_a_predictions_own_setup(tmp_path, capsys) -> None:
    f = tmp_path / "own.yaml"
    f.write_text(_own_setup(f"      engine:\n        args:\n          kv_cache_memory_bytes: {POOL_BYTES}\n"
                            "          max_model_len: 7281\n"))
    rc = cli.main(["check", str(f)])
    out = capsys.readouterr().out
    assert rc == 1
    assert f"{f}:20: vLLM will not start this prediction's setup" in out
    assert f"{f}: 1 predictions ok, 1 with errors" in out


def test_a_pool_of_no_block_names_only_the_memory_fix() -> None:
    # 1 MiB is less than one 2,359,296 B block: 0 blocks, 0 tokens; no max_model_len is short enough to lower to
    with pytest.raises(SpecError) as info:
        loads_spec(_file("    max_model_len: 4096\n").replace(str(POOL_BYTES), str(2**20)),
                   file="empty.yaml")
    text = str(info.value)
    assert "the KV pool holds 0 tokens, less than one request of max_model_len 4,096 (0.00x)" in text
    assert "lower engine.args.max_model_len" not in text.split("fix:")[0]
    assert "refuses to start a pool that cannot hold one; raise engine.args.kv_cache_memory_bytes" in text
