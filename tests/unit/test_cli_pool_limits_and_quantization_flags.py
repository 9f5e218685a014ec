"""``roofline predict`` (trial s13, items 5, 8 and 10): a knee or half-saturation batch the KV pool cannot hold at
the context says so on its line and in ``--json``; the cannot-run line says why its pool is one block short of the
KV-pool line's (vLLM V1's null block); a block of 655,360 B prints as 0.625 MiB; ``--quantization awq`` gives the
method to ``--set model.quantization.<key>``, and its refusal names the flags, not the YAML.

Hand figures (tests/unit/test_cli_setups.py works the pools out term by term):

* Llama-3.1-70B at TP 4 on H100 SXM, vLLM 0.33.0: 26,585 blocks of 16 tokens. vLLM V1 keeps block 0 as its
  null block (vllm/v1/core/block_pool.py ``BlockPool.__init__``: ``self.null_block =
  self.free_block_queue.popleft()``), so 26,584 are usable; a sequence of 1,024 tokens fills 64, so the pool holds
  26,584 // 64 = 415 of them (416 × 64 = 26,624 > 26,584). One GPU: weights W = 141,107,412,992 ÷ 4 =
  35,276,853,248 B, FLOPs per token F = 2 × 70,553,706,496 ÷ 4 = 35,276,853,248, KV per sequence at 1,024 tokens
  kv = 1,024 × 81,920 = 83,886,080 B; ridge 989e12 ÷ 3.35e12. Knee B* = W ÷ (F ÷ ridge − kv) = 990.8; the
  half-saturation batch W ÷ kv = 420.5: both beyond 415.
* At 512 tokens a sequence fills 32 blocks: 26,584 // 32 = 830 sequences; kv = 41,943,040 B, B* = 454.9 (held),
  W ÷ kv = 841.1 (not held).
* Llama-3.1-70B at TP 8 on A100: 80 layers × 1 KV head × 128 × 2 × 2 B × 16 tokens = 655,360 B a block =
  0.625 MiB.
* Llama-3.1-8B with AWQ W4 g128 (zero points, fp16 scales): 6,979,321,856 ÷ 2 + 54,525,952 groups × 2.5 B +
  1,050,939,392 × 2 B = 5,727,854,592 B (tests/unit/test_init_derivations.py has the groups).
"""

from __future__ import annotations

import json

import pytest

from pytest_roofline import cli

BASE70 = ("predict", "--hardware", "h100-sxm", "--model", "llama-3.1-70b", "--tp", "4", "--engine-version", "0.33.0",
          "--context", "1024")  # the worked figures below are at 1,024 tokens of context
W = 141_107_412_992 / 4
F = 2 * 70_553_706_496 / 4
RIDGE = 989e12 / 3.35e12


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = cli.main(list(argv))
    got = capsys.readouterr()
    return rc, got.out, got.err


def _knee(kv: float) -> float:
    return W / (F / RIDGE - kv)


def test_a_knee_beyond_the_pool_says_how_many_sequences_the_pool_holds(capsys: pytest.CaptureFixture[str]) -> None:
    kv = 1024 * 81_920
    assert round(_knee(kv), 1) == 990.8 and round(W / kv, 1) == 420.5
    rc, out, err = run(capsys, *BASE70, "--batch", "1,415,416")
    assert rc == 0, err
    lines = out.splitlines()
    held = "beyond the 415 sequences the KV pool holds at 1,024 tokens, 26,584 usable blocks ÷ 64 each"
    assert lines[-1] == f"knee: {_knee(kv):.1f} ({held}: the roofline's arithmetic only)"
    assert f"half-saturation B {W / kv:.1f} ({held}) · " in lines[-2]
    # the rows agree: 415 runs, 416 is marked, and the pool's two counts are told apart
    rows = {ln.split()[0]: ln for ln in lines if ln[:5].strip().isdigit()}
    assert not rows["415"].endswith("*") and rows["416"].endswith("*")
    assert ("26,624 KV blocks > the pool's 26,584 usable, 26,585 less vLLM's null block" in out
            and "26,585 GPU blocks × 16 tokens" in out)
    rc, out, err = run(capsys, *BASE70, "--batch", "1", "--json")
    d = json.loads(out.splitlines()[0])
    assert d["kv_pool_max_sequences"] == 415 and d["half_saturation_note"] == held
    assert d["knee_batch"] == pytest.approx(_knee(kv), rel=1e-9)
    assert d["knee_reason"].startswith("knee at B = 990.8: KV-inclusive intensity asymptote 420.5 FLOP/byte > ridge")
    assert d["knee_reason"].endswith(f"; {held}: the roofline's arithmetic only, a batch vLLM cannot run")


def test_a_knee_the_pool_holds_is_bare(capsys: pytest.CaptureFixture[str]) -> None:
    kv = 512 * 81_920
    assert round(_knee(kv), 1) == 454.9 and 26_584 // 32 == 830 and W / kv > 830
    rc, out, err = run(capsys, *BASE70, "--context", "512", "--batch", "1")
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[-1] == f"knee: {_knee(kv):.1f}"
    assert (f"half-saturation B {W / kv:.1f} (beyond the 830 sequences the KV pool holds at 512 tokens, 26,584 "
            "usable blocks ÷ 32 each)") in lines[-2]
    d = json.loads(run(capsys, *BASE70, "--context", "512", "--batch", "1", "--json")[1].splitlines()[0])
    assert d["kv_pool_max_sequences"] == 830 and "beyond" not in d["knee_reason"]


def test_a_knee_beyond_max_num_seqs_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    # max_num_seqs 256 shrinks the profile run's logits, 256 instead of 1,024 rows of 128,256 × 22 B: 2,167,013,376 B
    # more for KV, 34,845,597,207 + 2,167,013,376 = 37,012,610,583 B // 1,310,720 = 28,238 blocks, 28,237 usable,
    # 28,237 // 64 = 441 sequences
    assert (34_845_597_207 + 768 * 128_256 * 22) // 1_310_720 == 28_238 and 28_237 // 64 == 441
    rc, out, err = run(capsys, *BASE70, "--max-num-seqs", "256", "--batch", "1")
    assert rc == 0, err
    assert out.splitlines()[-1] == ("knee: 990.8 (beyond the 441 sequences the KV pool holds at 1,024 tokens, "
                                    "28,237 usable blocks ÷ 64 each; beyond max_num_seqs 256: the roofline's "
                                    "arithmetic only)")


def test_a_block_of_655360_bytes_is_0_625_mib(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(capsys, "predict", "--hardware", "a100-sxm4-80gb", "--model", "llama-3.1-70b", "--tp", "8",
                       "--engine-version", "0.33.0", "--batch", "1")
    assert rc == 0, err
    assert 655_360 / 2**20 == 0.625
    assert "88,386 GPU blocks × 16 tokens = 1,414,176 KV tokens · 0.625 MiB per block" in out
    rc, out, err = run(capsys, *BASE70, "--batch", "1")
    assert "· 1.25 MiB per block" in out  # two decimals where they are exact, as before


def test_quantization_awq_gives_the_method_to_the_set_keys(capsys: pytest.CaptureFixture[str]) -> None:
    base = ("predict", "--hardware", "h100-sxm", "--model", "llama-3.1-8b", "--engine-version", "0.33.0", "--batch",
            "1", "--json")
    keys = ("--set", "model.quantization.bits=4", "--set", "model.quantization.group_size=128")
    rc, out, err = run(capsys, *base, "--quantization", "awq", *keys)
    assert rc == 0, err
    d = json.loads(out.splitlines()[0])
    assert d["quantization"] == "awq W4A16 g128 +zero"
    assert d["weight_bytes"] == 6_979_321_856 // 2 + 54_525_952 * 5 // 2 + 2 * 1_050_939_392 == 5_727_854_592
    # the same as naming the method a third time; awq_marlin (vLLM's kernel name) reads the same checkpoint
    assert json.loads(run(capsys, *base, "--quantization", "awq", *keys, "--set",
                          "model.quantization.method=awq")[1].splitlines()[0])["weight_bytes"] == d["weight_bytes"]
    assert json.loads(run(capsys, *base, "--quantization", "awq_marlin", *keys)[1].splitlines()[0])[
        "weight_bytes"] == d["weight_bytes"]
    # a method that names another scheme is refused, naming both
    rc, out, err = run(capsys, *base, "--quantization", "awq", *keys, "--set", "model.quantization.method=gptq")
    assert rc == 2 and out == "" and "--quantization awq and model.quantization.method gptq" in err


def test_the_quantization_refusals_name_the_flags(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(capsys, *BASE70, "--quantization", "awq", "--batch", "1")
    assert rc == 2 and out == ""
    assert err.startswith("roofline: --quantization awq: llama-3.1-70b has no quantization_config")
    assert "--set model.quantization.bits=4 --set model.quantization.group_size=128" in err
    assert "model: {name:" not in err  # the YAML spelling is a prediction file's, not this command line's
    rc, out, err = run(capsys, *BASE70, "--set", "engine.args.quantization=awq", "--batch", "1")
    assert rc == 2 and err.startswith("roofline: --set engine.args.quantization=awq: ")
    # the keys without a method, and no --quantization: the flag that gives it is named
    rc, out, err = run(capsys, *BASE70, "--set", "model.quantization.bits=4", "--batch", "1")
    assert rc == 2 and "add --quantization awq" in err and "method: ''" not in err
