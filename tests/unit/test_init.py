"""``roofline init`` (issue 24): a prediction file in the Day 3 notebook's style — each prediction with its
derivation and the model's value as comments, ``predicted:`` blank — that ``roofline check`` refuses while a blank
is left and accepts once the ink is written, and whose math checks then pass. The ink is worked out by hand in
tests/support/first_file.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support.first_file import HAND_INK, fill
from support.hf_cache import QWEN25_14B_ID, QWEN25_14B_PARAMS

from pytest_roofline import cli
from pytest_roofline.cli.init import render
from pytest_roofline.format.spec import load_spec
from pytest_roofline.scoring import VerdictStatus, score


def test_init_writes_the_notebooks_style_with_the_ink_blank(hub_cache: Path) -> None:
    text = render(gpu="h100", model=QWEN25_14B_ID)
    assert "hardware: h100-sxm" in text and f"model: {QWEN25_14B_ID}" in text
    assert "# --gpu h100 -> h100-sxm" in text
    blocks = text.split("\n  - id: ")[1:]
    assert [b.split("\n")[0] for b in blocks] == list(HAND_INK.keys())[:8] + ["kv-blocks"] + list(HAND_INK)[8:]
    for block in blocks:  # every prediction: its derivation, the model's value, a blank for the ink
        assert "# derivation: " in block and "# model: " in block
        assert re.search(r"^    predicted: +# <- your value", block, re.M)
    assert "# model: 29.54 GB" in text and "# model: 196,608 B" in text and "# model: none" in text
    # the batch-1 ceiling: 3.35e12 / 29.54e9 = 113.4 tok/s, checked as arithmetic (trial s26b #2, s26d #3)
    ceiling = 3.35e12 / (2 * QWEN25_14B_PARAMS)
    assert (f"# model: {ceiling:.1f} tok/s; checked as arithmetic, to the precision written: a run's batch-1 figure, "
            "below it, is batch1_throughput" in text)


def test_check_names_every_blank_then_accepts_the_filled_file(hub_cache: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "predictions" / "qwen14b.yaml"
    f.parent.mkdir()
    assert cli.main(["init", "--gpu", "h100", "--model", QWEN25_14B_ID, "-o", str(f)]) == 0
    capsys.readouterr()
    assert cli.main(["check", str(f)]) == 1
    out = capsys.readouterr().out
    blanks = [n for n, line in enumerate(f.read_text().splitlines(), 1) if line.startswith("    predicted:")]
    assert len(blanks) == 13
    for n in blanks:  # all at once, each at its line
        assert f"{f}:{n}: predicted" in out
    f.write_text(fill(f.read_text(), HAND_INK))
    assert cli.main(["check", str(f)]) == 0, capsys.readouterr().out
    # and the math passes: every prediction the model computes, within the file's math tolerance
    spec = load_spec(f)
    verdicts = {p.id: score(spec, p, "math") for p in spec.predictions}
    assert {i: v.status for i, v in verdicts.items() if v.status != VerdictStatus.PASS} == {
        f"littles-law[concurrency={c}]": VerdictStatus.SKIP for c in (1, 4, 16, 64)}


def test_init_refuses_to_overwrite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "x.yaml"
    f.write_text("mine\n")
    assert cli.main(["init", "--gpu", "h100", "--model", "qwen3-8b", "-o", str(f)]) == 2
    assert "exists" in capsys.readouterr().err and f.read_text() == "mine\n"


def test_init_with_tp_and_a_workload(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["init", "--gpu", "h100-sxm", "--model", "llama-3.1-70b", "--tp", "4",
                     "--workload", "2048/256"]) == 0
    text = capsys.readouterr().out
    assert "args: {tensor_parallel_size: 4}" in text and "workload: {input_len: 2048, output_len: 256}" in text
    assert "quantity: weight_bytes_per_gpu" in text


def test_a_bad_workload_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["init", "--gpu", "h100", "--model", "qwen3-8b", "--workload", "1024"])
    assert "INPUT/OUTPUT" in capsys.readouterr().err


def test_init_writes_a_max_model_len_the_pool_holds_where_the_default_would_not_start() -> None:
    # Qwen3-8B on one L4 (23,034 MiB): its default max_model_len 40,960 is more than the KV pool holds, so vLLM would
    # refuse to start and roofline check would refuse the file (sweep of 1,316 init files, s14: 171 such files). init
    # writes the largest multiple of 1,024 the pool holds instead: that one starts, 1,024 more would not
    import re

    from pytest_roofline.model.setup import build_setup, max_model_len_problem

    text = render(gpu="l4", model="qwen3-8b")
    m = re.search(r"^  args: \{max_model_len: (\d+)\}$", text, re.M)
    assert m, text[:1500]
    mml = int(m.group(1))
    assert mml % 1024 == 0 and 2048 <= mml < 40960
    assert "less than one request of the model's default 40,960" in text

    def setup(n: int):
        return build_setup(hardware_ref="l4", model_ref="qwen3-8b", workload={"input_len": 1024, "output_len": 1024},
                           engine={"name": "vllm", "args": {"max_model_len": n}})

    assert max_model_len_problem(setup(mml)) is None and max_model_len_problem(setup(mml + 1024)) is not None
    # where the default starts, nothing is written
    assert "max_model_len" not in render(gpu="h100", model="qwen3-8b").split("predictions:")[0]


def test_a_throughput_ceiling_the_pool_cannot_hold_says_so() -> None:
    # Qwen3-8B on one L4, 1,024/1,024: a sequence's KV context is 1,024 + 1,024/2 = 1,536 tokens = 96 blocks of 16,
    # so 64 at once need 6,144 blocks; the pool holds 1,733 (init writes max_model_len 27,648 for it). The c64
    # ceiling is arithmetic vLLM cannot run (roofline predict marks that row *); c16 (1,536 blocks) it can
    text = render(gpu="l4", model="qwen3-8b")
    model_line = {m.group(1): m.group(2) for m in
                  re.finditer(r"- id: (throughput-c\d+)\n(?:    .*\n)*?    # model: (.*)\n", text)}
    assert set(model_line) == {"throughput-c4", "throughput-c16", "throughput-c64"}
    assert "6,144 KV blocks > the pool's" in model_line["throughput-c64"]
    assert "vLLM cannot run 64 at once here" in model_line["throughput-c64"]
    assert "cannot run" not in model_line["throughput-c16"] and "cannot run" not in model_line["throughput-c4"]
    # on an H100 the pool holds 64 such sequences: no caveat anywhere
    assert "cannot run" not in render(gpu="h100", model="qwen3-8b")


@pytest.mark.parametrize("gpu", ["rtx-4090", "rtx-a6000", "rtx-6000-ada", "mi250x", "h100-sxm", "a100-sxm4-80gb"])
def test_the_ridge_derivation_recomputes_to_its_model_line(gpu: str) -> None:
    # a reader recomputes the ridge from the derivation's own figures: peak ÷ bandwidth. Peaks printed to whole
    # TFLOP/s put that 0.1-0.3% off the model line (MI250X 192 ÷ 1,638 = 117.2 against 116.9)
    text = render(gpu=gpu, model="qwen2.5-7b")
    m = re.search(r"- id: ridge\n(?:    .*\n)*?    # derivation: peak ([\d,.]+) TFLOP/s .*?÷ bandwidth ([\d,.]+) GB/s"
                  r".*\n    # model: ([\d,.]+) FLOP/byte", text)
    assert m, text
    peak, bw, model = (float(g.replace(",", "")) for g in m.groups())
    assert peak * 1e12 / (bw * 1e9) == pytest.approx(model, rel=6e-4)  # the model line's own 4-figure rounding
