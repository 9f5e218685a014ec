"""The reading defects the s15 reliability probe found (notes/s15/probe.md §1), each refused at its YAML line
with the exact words: absurd integer engine args (#3, #11)."""

from __future__ import annotations

import pytest

from pytest_roofline import cli
from pytest_roofline.errors import SpecError
from pytest_roofline.format.spec import loads_spec

H100 = ("hardware: h100-sxm\nmodel: llama-3.1-8b\nengine:\n  name: vllm\n  version: \"0.11.0\"\n  args:\n"
        "    max_model_len: 8192\n")
WEIGHTS = "predictions:\n  - id: weights\n    quantity: weight_bytes\n    predicted: 16.06 GB\n"
INT64 = "9,223,372,036,854,775,807"


@pytest.mark.parametrize(("arg", "what"), [
    ("max_num_seqs", "sequences per step"), ("max_num_batched_tokens", "tokens per step"),
    ("block_size", "tokens per KV block"), ("tensor_parallel_size", "devices"),
    ("max_model_len", "tokens per sequence")])
def test_an_engine_arg_of_1e308_is_refused_at_its_line_as_written(arg, what):
    # #3: max_num_seqs / max_num_batched_tokens / block_size: 1e308 raised OverflowError from the KV accounting;
    # #11: max_model_len / tensor_parallel_size: 1e308 printed the 309 digits of int(1e308)
    text = H100.replace("    max_model_len: 8192\n", "") + f"    {arg}: 1e308\n" + "    max_model_len: 8192\n" * (
        arg != "max_model_len") + "workload:\n  input_len: 1024\n  output_len: 256\n" + WEIGHTS
    with pytest.raises(SpecError) as exc:
        loads_spec(text, file="o.yaml")
    assert exc.value.line == 7
    assert exc.value.message == (f"setup does not resolve: engine.args.{arg}: 1e+308 is impossible: it must be >= 1 "
                                 f"and <= {INT64}, the largest 64-bit integer, the most an engine can hold ({what})")


def test_the_largest_64_bit_integer_is_read_exactly(tmp_path, capsys):
    # 2**63 - 1 is allowed (the pool refusal follows); 2**63 is not, and is printed as written, not rounded by float()
    f = tmp_path / "o.yaml"
    f.write_text(H100 + "    max_num_seqs: 9_223_372_036_854_775_808\nworkload:\n  input_len: 1024\n"
                 "  output_len: 256\n" + WEIGHTS)
    assert cli.main(["check", str(f)]) == 1
    out = capsys.readouterr().out
    assert (f"o.yaml:8: setup does not resolve: engine.args.max_num_seqs: 9223372036854775808 is impossible: it must "
            f"be >= 1 and <= {INT64}, the largest 64-bit integer, the most an engine can hold (sequences per step)"
            in out) and "Traceback" not in out
    f.write_text(H100 + "    max_num_seqs: 9223372036854775807\nworkload:\n  input_len: 1024\n"
                 "  output_len: 256\n" + WEIGHTS)
    assert cli.main(["check", str(f)]) == 1
    out = capsys.readouterr().out
    assert "o.yaml:7: vLLM will not start this setup: the KV pool holds 0 tokens" in out


def test_kv_cache_memory_bytes_of_1e308_is_refused():
    with pytest.raises(SpecError) as exc:
        loads_spec(H100 + "    kv_cache_memory_bytes: 1e308\nworkload:\n  input_len: 1024\n  output_len: 256\n"
                   + WEIGHTS, file="o.yaml")
    assert exc.value.line == 8 and exc.value.message.startswith(
        f"setup does not resolve: engine.args.kv_cache_memory_bytes: 1e+308 is impossible: it must be > 0 and <= "
        f"{INT64}")
