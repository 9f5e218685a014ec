"""Transcribe kvcached's public H100 runs of plain vLLM 0.19.0 (Qwen3-0.6B, vllm bench serve) into the accuracy
corpus.

    .venv/bin/python benchmarks/corpus_kvcached.py REPO [--write]

REPO is a clone of github.com/ovg-project/kvcached (a bare one works: every file is read with ``git show``), read at
commit 751b1813acaf2c95b365cfd1c0f342d6791ff7e5 ("perf test on H100", 2026-05-13): ``benchmarks/bench_layout/
run_sweep.sh`` (the server and client commands) and ``benchmarks/bench_layout/sweep_results/``, whose configs ``A``
(rate inf) and ``F`` (rate 16) are vanilla vLLM, no kvcached: ``A_vanilla_inf.seed{42,99,7}.json`` and
``F_vanilla_r16.seed{42,99,7}.json``, vllm bench serve's ``--save-result`` files (summary fields only). The GPU and the
vLLM release are stated in ``benchmarks/bench_layout/H100_results.md`` at commit
c41e22af024ae4166f175e52f43e070cb148b7c5 ("NVIDIA H100 80GB HBM3", "vLLM: 0.19.0"), whose table is these six files'
means. (The folder's README describes
earlier runs on a GB10; its numbers are not these.)

Each rate is a run; its measured figures are the mean over the three seeds of ``output_throughput``,
``median_tpot_ms`` and ``median_ttft_ms`` (vllm bench serve's own definitions: output tokens ÷ duration, the median
over requests of (E2E − TTFT) ÷ (output tokens − 1), the median TTFT), each seed's figures kept under ``published``.
"""

from __future__ import annotations

import json
import statistics
import subprocess
from pathlib import Path

SOURCE = "kvcached-h100-qwen3-0.6b"
COMMIT = "751b1813acaf2c95b365cfd1c0f342d6791ff7e5"
RESULTS_MD_COMMIT = "c41e22af024ae4166f175e52f43e070cb148b7c5"
FOLDER = "benchmarks/bench_layout"
SEEDS = (42, 99, 7)
#: the config's file stem per rate: vanilla vLLM at rate inf (A) and at 16 req/s (F)
CONFIGS = {"inf": "A_vanilla_inf", "16": "F_vanilla_r16"}


def _show(repo: Path, path: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "show", f"{COMMIT}:{path}"], check=True, capture_output=True,
                          text=True).stdout


def _sweep_setting(script: str, name: str) -> str:
    """A ``NAME=value`` line of run_sweep.sh."""
    for line in script.splitlines():
        if line.startswith(f"{name}="):
            return line.split("=", 1)[1].strip().strip('"')
    raise SystemExit(f"run_sweep.sh at {COMMIT[:12]} has no {name}= line")


def source_entry(repo: Path) -> dict:
    script = _show(repo, f"{FOLDER}/run_sweep.sh")
    model_id = _sweep_setting(script, "MODEL")
    util, max_len = float(_sweep_setting(script, "GPU_MEM_UTIL")), int(_sweep_setting(script, "MAX_MODEL_LEN"))
    n, inp, out = (int(_sweep_setting(script, k)) for k in ("NUM_PROMPTS", "INPUT_LEN", "OUTPUT_LEN"))
    runs = []
    for rate, stem in CONFIGS.items():
        seeds = []
        for seed in SEEDS:
            d = json.loads(_show(repo, f"{FOLDER}/sweep_results/{stem}.seed{seed}.json"))
            if (d["model_id"], d["num_prompts"], d["completed"], str(d["request_rate"]).replace(".0", "")) != (
                    model_id, n, n, rate):
                raise SystemExit(f"{stem}.seed{seed}.json is not the run run_sweep.sh describes")
            if (d["total_input_tokens"], d["total_output_tokens"]) != (n * inp, n * out):
                raise SystemExit(f"{stem}.seed{seed}.json: lengths are not all {inp}/{out}: not simulated fixed")
            seeds.append({"seed": seed, "output_throughput_tok_per_s": round(d["output_throughput"], 2),
                          "median_tpot_ms": round(d["median_tpot_ms"], 4),
                          "median_ttft_ms": round(d["median_ttft_ms"], 3), "duration_s": round(d["duration"], 3),
                          "completed": d["completed"], "max_concurrent_requests": d["max_concurrent_requests"],
                          "total_input_tokens": d["total_input_tokens"],
                          "total_output_tokens": d["total_output_tokens"]})
        run: dict = {"tp": 1, "input_len": inp, "output_len": out, "num_prompts": n}
        if rate == "inf":
            run["concurrency"] = n  # every request sent at t = 0: a closed loop of N clients with one request each
        else:
            run["request_rate"] = float(rate)
            # vllm bench serve from vLLM PR #21108 sends its N requests over exactly N / rate (the seeds'
            # durations, 31.49-31.54 s for 500 at 16 req/s): the model's arrival_span fixed (model/workload.py)
            run["arrival_span"] = "fixed"
        run["repetitions"] = ["cold"]
        run["measured"] = {
            "output_throughput_tok_per_s": round(statistics.fmean(s["output_throughput_tok_per_s"] for s in seeds), 2),
            "tpot_p50_ms": round(statistics.fmean(s["median_tpot_ms"] for s in seeds), 4),
            "ttft_p50_ms": round(statistics.fmean(s["median_ttft_ms"] for s in seeds), 3)}
        run["published"] = {"seeds": seeds}
        run["from"] = (f"{FOLDER}/sweep_results/{stem}.seed{{42,99,7}}.json at {COMMIT[:12]}: the mean over the "
                       "three seeds of output_throughput, median_tpot_ms and median_ttft_ms")
        runs.append(run)
    return {
        "source": SOURCE,
        "url": f"https://github.com/ovg-project/kvcached/tree/{COMMIT}/{FOLDER}",
        "how_read": (f"benchmarks/corpus_kvcached.py over the project's stored copy of the public repository: "
                     f"{FOLDER}/run_sweep.sh and the six vanilla-vLLM result files of sweep_results/ at commit "
                     f"{COMMIT[:12]} (2026-05-13 runs); the GPU and vLLM release from H100_results.md at "
                     f"{RESULTS_MD_COMMIT[:12]}; read on 2026-12-07"),
        "setup": {
            "engine": (f"vLLM 0.19.0 (V1; async scheduling on, the default from 0.14), `vllm serve {model_id} "
                       f"--gpu-memory-utilization {util} --max-model-len {max_len}`, every other engine arg default "
                       "(prefix caching on, chunked prefill, CUDA graphs)"),
            "model": f"{model_id} (bf16, the checkpoint's dtype)",
            "gpus": "one NVIDIA H100 80GB HBM3 (the SXM card; the PCIe H100 has HBM2e)",
            "client": (f"vllm bench serve --backend vllm (the completions endpoint) --dataset-name random "
                       f"--random-input-len {inp} --random-output-len {out} --num-prompts {n} --request-rate inf or "
                       "16 (Poisson, burstiness 1), seeds 42, 99 and 7 in turn after a 100-prompt warm-up at the "
                       "same rate (seed 1) on the same server"),
        },
        "notes": [
            f"Every run reports {n * inp:,} input and {n * out:,} output tokens for {n} requests: every prompt "
            f"{inp} tokens and every output {out}, simulated fixed.",
            "Random prompts of different seeds share no prefix, so every run is simulated cold (the warm-up's "
            "seed differs too).",
            f"Request rate inf sends all {n} at once ('max_concurrent_requests' {n}): a closed loop of {n} "
            f"clients with one request each. Their KV, {n} x {inp + out} tokens, is 97% of the model's pool for "
            f"this setup (329,488 tokens at gpu_memory_utilization {util}).",
            "A blind test of the async-scheduling step cost (model/serving/cost.py, 2026-12-07): found and "
            "transcribed after that change was committed; nothing was set from it. A 0.6B model on an H100 is "
            "where per-step CPU and kernel-launch costs dominate the weight read (1.2 GB, ~0.45 ms at 80% of "
            "3.35 TB/s).",
        ],
        "gpu": "h100-sxm",
        "model": "qwen3-0.6b",
        "model_config": "configs/qwen3-0.6b.json",
        "vllm": "0.19.0",
        "engine_args": {"gpu_memory_utilization": util, "max_model_len": max_len},
        "runs": runs,
    }


def main(argv: list[str] | None = None) -> int:
    from corpus_blis import run_main
    return run_main(argv, __doc__, SOURCE, name="repo", entry_of=source_entry)


if __name__ == "__main__":
    raise SystemExit(main())
