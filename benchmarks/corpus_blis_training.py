"""Transcribe BLIS's public training runs (vLLM 0.15.1 on H100s at TP 1, 2 and 4, inference-perf at constant
rates) into the accuracy corpus.

    .venv/bin/python benchmarks/corpus_blis_training.py REPO [--write]

REPO is a clone of github.com/inference-sim/training (a bare one works: every file is read with ``git show``). Read
at two commits: ed5c1d26900e6909758d5e1641a18edaf56a1caf (``default_args/<experiment>/``: ``profile.yaml``, the
inference-perf profile, JSON; ``exp-config.yaml``; ``results/stage_<i>_lifecycle_metrics.json``, inference-perf's
per-stage report) and c4f03409b4489891482bcd63797cfe3a92fc262d (``replay_data/<experiment>.json``: every request's
arrival time and token counts, and the GPU's KV blocks; ``replay_data/<experiment>_ground_truth.json``: every
request's E2E and TTFT, s, and whether it failed; removed from the repository later). The setup every experiment
shares is stated in github.com/inference-sim/sim-to-real-accuracy-validation (commit dcec3fd4711c,
``docs/plans/2026-03-04-sim-to-real-accuracy-validation-design.md``, "All experiments"): vLLM v0.15.1, H100,
max_model_len 4,096, max_num_batched_tokens 2,048, max_num_seqs 128, prefix caching and chunked prefill on, fp16,
KV-cache CPU offloading (8 GiB, OffloadingConnector).

Each inference-perf stage is a run: a constant rate for its duration. Measured, as published or from the published
per-request files:

* TTFT p50: the stage report's ``time_to_first_token.median`` (client side, s → ms);
* TPOT p50: vLLM's definition, (E2E − TTFT) ÷ (output tokens − 1) per request of the stage (the ground-truth file's
  E2E and TTFT, the replay file's output tokens; requests with one output token or an error left out), the median
  over requests. inference-perf's own ``inter_token_latency`` is not that figure (about half of it here);
* output throughput: the stage report's ``throughput.output_tokens_per_sec``.

A stage's requests are the next ``count`` of the replay file in arrival order (the stage report's ``load_summary.
count``). The client cycles through 100 fixed prompts (:func:`prompt_period`), so after the first cycle every prompt
is in vLLM's prefix cache; the corpus simulates the stage's requests (the first stage's after that first cycle)
with their own lengths at the stage's rate, every prompt cached, so that the model's throughput covers a stage as
long as the measured one. A stage with failed requests is kept but not scored (``excluded``).
"""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS_FILE = ROOT / "benchmarks" / "data" / "corpus" / "v1-public-runs.json"
SOURCE = "blis-training-h100"
ARGS_COMMIT = "ed5c1d26900e6909758d5e1641a18edaf56a1caf"
REPLAY_COMMIT = "c4f03409b4489891482bcd63797cfe3a92fc262d"
#: each model's config.json, committed beside the corpus (the Hugging Face configuration, as BLIS stores it)
CONFIGS = {"meta-llama/Llama-2-7b-hf": "configs/llama-2-7b-hf.json",
           "meta-llama/Llama-2-70b-hf": "configs/llama-2-70b-hf.json",
           "mistralai/Mixtral-8x7B-v0.1": "configs/mixtral-8x7b-v0.1.json",
           "codellama/CodeLlama-34b-Instruct-hf": "configs/codellama-34b-instruct-hf.json"}


def _show(repo: Path, commit: str, path: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "show", f"{commit}:{path}"], check=True, capture_output=True,
                          text=True).stdout


def _experiments(repo: Path) -> list[str]:
    out = subprocess.run(["git", "-C", str(repo), "ls-tree", "--name-only", f"{ARGS_COMMIT}:default_args"],
                         check=True, capture_output=True, text=True).stdout
    return sorted(x for x in out.split() if re.match(r"2026021\d-\d{6}-", x))


def _flat_yaml(text: str) -> dict[str, str]:
    return {k.strip(): v.strip() for k, v in (ln.split(":", 1) for ln in text.splitlines() if ":" in ln)}


def prompt_period(reqs: list[dict]) -> int:
    """The number of distinct prompts the client cycles through, read off the requests' prompt lengths: the smallest
    lag at which over 90% of them repeat (100 in every experiment here: 10 groups x 10 prompts)."""
    lens = [r["input_tokens"] for r in reqs]
    for lag in range(1, min(1000, len(lens) // 2)):
        if sum(a == b for a, b in zip(lens, lens[lag:])) > 0.9 * (len(lens) - lag):
            return lag
    raise SystemExit("no repeating prompt cycle found")


def experiment_runs(repo: Path, name: str) -> tuple[dict, list[dict]]:
    base = f"default_args/{name}"
    profile = json.loads(_show(repo, ARGS_COMMIT, f"{base}/profile.yaml"))
    cfg = _flat_yaml(_show(repo, ARGS_COMMIT, f"{base}/exp-config.yaml"))
    replay = json.loads(_show(repo, REPLAY_COMMIT, f"replay_data/{name}.json"))
    truth = {r["index"]: r for r in json.loads(_show(repo, REPLAY_COMMIT, f"replay_data/{name}_ground_truth.json"))}
    reqs = sorted(replay["requests"], key=lambda r: (r["arrival_time_us"], r["index"]))
    period = prompt_period(reqs)
    model = profile["server"]["model_name"]
    prefix = profile["data"]["shared_prefix"]
    facts = {"experiment": name, "model": model, "tp": int(cfg["tensor_parallelism"]), "prompt_period": period,
             "kv_blocks_total_gpu": replay["config"]["kv_blocks_total_gpu"],
             "block_size": replay["config"]["block_size"], "shared_prefix": prefix}
    runs, start = [], 0
    for i, stage in enumerate(profile["load"]["stages"]):
        rep = json.loads(_show(repo, ARGS_COMMIT, f"{base}/results/stage_{i}_lifecycle_metrics.json"))
        count = int(rep["load_summary"]["count"])
        mine = reqs[start:start + count]
        start += count
        ok = rep["successes"]
        failed = int((rep.get("failures") or {}).get("count") or 0)
        tpots = [(truth[r["index"]]["e2e_s"] - truth[r["index"]]["ttft_s"]) / (r["output_tokens"] - 1) * 1e3
                 for r in mine if r["output_tokens"] > 1 and not truth[r["index"]]["has_error"]]
        # inference-perf's shared_prefix data cycles through num_groups x num_prompts_per_group fixed prompts (the
        # resolved results/config.yaml), so after one cycle every prompt is one the prefix cache has seen: the
        # simulated requests start after the first cycle (the stage's steady state), every prompt cached
        skip = period if start - count == 0 else 0
        sim = mine[skip:]
        run: dict = {
            "tp": facts["tp"], "experiment": name, "benchmark": i, "strategy": "constant",
            "request_rate": float(stage["rate"]), "arrivals": "constant", "stage_duration_s": stage["duration"],
            "num_prompts": len(sim), "stage_requests": count,
            "input_len": round(sum(r["input_tokens"] for r in sim) / len(sim)),
            "output_len": round(sum(r["output_tokens"] for r in sim) / len(sim)),
            "input_lens": [r["input_tokens"] for r in sim], "output_lens": [r["output_tokens"] for r in sim],
            # every prompt seen before: every full block but the one holding the last prompt token hits
            "repetitions": ["cached"],
            "prompts_repeat_every": period,
            "measured": {"output_throughput_tok_per_s": round(ok["throughput"]["output_tokens_per_sec"], 3),
                         "tpot_p50_ms": round(statistics.median(tpots), 3) if tpots else None,
                         "ttft_p50_ms": round(ok["latency"]["time_to_first_token"]["median"] * 1e3, 3)},
            "published": {"achieved_rate_req_s": round(rep["load_summary"]["achieved_rate"], 4),
                          "successes": int(ok["count"]), "failures": failed,
                          "ttft_mean_ms": round(ok["latency"]["time_to_first_token"]["mean"] * 1e3, 3),
                          "e2e_p50_ms": round(ok["latency"]["request_latency"]["median"] * 1e3, 3),
                          "inference_perf_itl_mean_ms": round(ok["latency"]["inter_token_latency"]["mean"] * 1e3, 3)},
            "engine_args": {"max_model_len": int(cfg["max_model_len"]),
                            "max_num_batched_tokens": int(cfg["max_num_batched_tokens"]),
                            "max_num_seqs": int(cfg["max_num_seqs"]), "dtype": "float16"},
            "model": model, "model_config": CONFIGS[model],
            "from": f"{base}/results/stage_{i}_lifecycle_metrics.json (commit {ARGS_COMMIT[:12]}); "
                    f"replay_data/{name}.json and _ground_truth.json (commit {REPLAY_COMMIT[:12]}), requests "
                    f"{start - count}-{start - 1} in arrival order",
        }
        if failed:
            run["excluded"] = (f"{failed:,} of {failed + int(ok['count']):,} requests failed in this stage (the "
                               f"server was overloaded at {stage['rate']} req/s): a rate it did not serve")
        runs.append(run)
    return facts, runs


def source_entry(repo: Path) -> dict:
    runs, facts = [], []
    for name in _experiments(repo):
        fa, rs = experiment_runs(repo, name)
        facts.append(fa)
        runs += rs
    models = sorted({f["model"] for f in facts})
    return {
        "source": SOURCE,
        "url": f"https://github.com/inference-sim/training/tree/{ARGS_COMMIT}/default_args",
        "how_read": (f"benchmarks/corpus_blis_training.py over inference-sim/training at commits {ARGS_COMMIT[:12]} "
                     f"(profiles, engine args, inference-perf's stage reports) and {REPLAY_COMMIT[:12]} (per-request "
                     "arrivals, token counts, E2E and TTFT), each stage of each 2026-02-17/18 experiment a run"),
        "setup": {
            "engine": "vLLM v0.15.1 (sim-to-real-accuracy-validation, commit dcec3fd4711c, docs/plans/2026-03-04-"
                      "sim-to-real-accuracy-validation-design.md: 'All experiments: vLLM v0.15.1, H100 GPU, "
                      "max_model_len=4096, max_num_batched_tokens=2048, max_num_seqs=128, prefix caching enabled, "
                      "chunked prefill enabled, fp16', with KV-cache CPU offloading, 8 GiB); each experiment's "
                      "exp-config.yaml gives the same limits; gpu_memory_utilization assumed 0.9 (vLLM's default, "
                      "not published)",
            "models": ", ".join(models) + " (config.json files under benchmarks/data/corpus/configs/)",
            "gpu": "NVIDIA H100 80GB HBM3 (SXM), 1, 2 or 4 of them (tensor parallelism as named)",
            "client": "inference-perf, streaming completions, ignore_eos, load.type constant, shared_prefix data "
                      "(system prompts of 100 tokens shared by their users, questions of 447-650 tokens, ~248 "
                      "output tokens)"},
        "notes": [
            "Experiments: " + "; ".join(f"{f['experiment']} (TP {f['tp']}, {f['kv_blocks_total_gpu']:,} GPU KV "
                                         f"blocks of {f['block_size']})" for f in facts),
            "Each stage simulated with its requests' own lengths at the stage's constant rate (the first stage "
            "from its second cycle of prompts on). inference-perf's shared_prefix data "
            "cycles through 100 fixed prompts (results/config.yaml: num_groups 10, num_prompts_per_group 10; the "
            "replay files' prompt lengths repeat with that period for 98% of requests), so after the first cycle "
            "every prompt is in the prefix cache: simulated cached (every full block but the last hits), from the "
            "first stage's second cycle on.",
            "Not modelled: the KV-cache CPU offloading (8 GiB); at these loads the GPU pools are not filled "
            "(a stage's running requests need a few percent of them), so nothing is offloaded.",
            "TPOT p50 follows vLLM's definition from the per-request files; inference-perf's inter_token_latency "
            "mean is about half of it (published, inference_perf_itl_mean_ms) and is not used.",
            "The 'reasoning' experiments are kept but not scored: thousands of their requests failed (overload).",
            "Held out: no default of the serving model was set from these runs.",
        ],
        "gpu": "h100-sxm",
        "model": "per run",
        "vllm": "0.15.1",
        "engine_args": {},
        "runs": runs,
    }


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from corpus_blis import run_main
    return run_main(argv, __doc__, SOURCE, name="repo", entry_of=source_entry)


if __name__ == "__main__":
    raise SystemExit(main())
