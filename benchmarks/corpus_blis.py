"""Transcribe BLIS's public vLLM ground-truth runs (GuideLLM results + vLLM's own OpenTelemetry traces) into the
accuracy corpus, with the per-request split of every TTFT vLLM's traces give.

    .venv/bin/python benchmarks/corpus_blis.py DIR [DIR ...] [--write]

Each DIR is one experiment folder of github.com/inference-sim/inference-sim at commit
e7a4aa3715982f089bddd0441e85e0a7d1690ec2, ``eval/ground_truth/<name>/`` (``exp-config.yaml``, ``profile.yaml``,
``guidellm-results.json``, ``traces.json``, ``vllm.log``); read them with ``git show <commit>:<path>`` from a clone.
Only the two experiments whose GuideLLM file is stored there are usable (``jan20-codellama-prefill-1`` and
``jan20-prefill-llama7b-tp1-1``; the other two hold traces alone). Without ``--write`` it prints the source entry;
with it, it replaces (or appends) the ``blis-h100-codellama34b`` source in benchmarks/data/corpus/v1-public-runs.json.

What is read, per GuideLLM benchmark (one sweep point), all as published:

* the client's figures, by this project's GuideLLM reader (measure/results/peers/guidellm.py): TTFT p50 (GuideLLM's
  ``time_to_first_token_ms``, send to first token), output throughput (successful output tokens ÷ the benchmark's
  duration); GuideLLM's ``throughput`` strategy (every request at once), which that reader refuses, is read here
  from the same fields;
* the requests of the benchmark's window (``scheduler_metrics.request_start_time`` .. ``request_end_time``) from
  vLLM's traces (``llm_request`` spans, one per request: ``gen_ai.usage.prompt_tokens`` / ``completion_tokens``,
  ``gen_ai.latency.time_to_first_token`` / ``e2e`` / ``time_in_queue`` / ``time_in_model_prefill``, in seconds):
  their lengths in arrival order (the corpus simulates these very lengths) and TPOT p50 as vLLM defines it,
  (e2e − TTFT) ÷ (output − 1) per request with more than one output token, the median over requests (GuideLLM's
  own TPOT is token-weighted; see its reader);
* the split of a TTFT (means over the window's requests): the server's TTFT (vLLM's arrival stamp in the API
  server → first token in its output processor), the engine core's queue and prefill, and what is left of the
  server's TTFT (API server ↔ engine core), and the client's TTFT minus the server's (HTTP, tokenisation before the
  stamp, the network between GuideLLM and the server).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS_FILE = ROOT / "benchmarks" / "data" / "corpus" / "v1-public-runs.json"
SOURCE = "blis-h100-codellama34b"
COMMIT = "e7a4aa3715982f089bddd0441e85e0a7d1690ec2"
sys.path.insert(0, str(ROOT))


def _spans(path: Path) -> list[dict]:
    """Every ``llm_request`` span of an OTLP/JSON export (one JSON document per line), as {name: value}, with its
    start (the request's arrival, s since the epoch)."""
    out = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        for rs in json.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for sp in ss["spans"]:
                    if sp.get("name") != "llm_request":
                        continue
                    a = {x["key"]: next(iter(x["value"].values())) for x in sp["attributes"]}
                    out.append({"t": int(sp["startTimeUnixNano"]) / 1e9,
                                "in": int(a["gen_ai.usage.prompt_tokens"]),
                                "out": int(a["gen_ai.usage.completion_tokens"]),
                                "ttft_ms": float(a["gen_ai.latency.time_to_first_token"]) * 1e3,
                                "e2e_ms": float(a["gen_ai.latency.e2e"]) * 1e3,
                                "queue_ms": float(a["gen_ai.latency.time_in_queue"]) * 1e3,
                                "prefill_ms": float(a["gen_ai.latency.time_in_model_prefill"]) * 1e3})
    return sorted(out, key=lambda s: s["t"])


def _yaml_scalars(path: Path) -> dict[str, str]:
    """exp-config.yaml is flat ``key: value`` lines."""
    out = {}
    for line in path.read_text().splitlines():
        if ":" in line:
            k, v = line.split(":", 1)
            out[k.strip()] = v.strip()
    return out


def experiment_runs(folder: Path) -> tuple[dict, list[dict]]:
    from pytest_roofline.measure.results.peers import guidellm
    cfg = _yaml_scalars(folder / "exp-config.yaml")
    log = (folder / "vllm.log").read_text()
    version = re.search(r"vLLM API server version (\S+)", log)
    weights = re.search(r"Model loading took ([\d.]+) GiB", log)
    kv = re.search(r"GPU KV cache size: ([\d,]+) tokens", log)
    kv_mem = re.search(r"Available KV cache memory: ([\d.]+) GiB", log)
    doc = json.loads((folder / "guidellm-results.json").read_text())
    data = doc["args"]["data"][0]
    prefix = int(re.search(r"'prefix_tokens': (\d+)", data).group(1))
    spans = _spans(folder / "traces.json")
    facts = {"experiment": folder.name, "vllm": version.group(1) if version else None,
             "max_model_len": int(cfg["max_model_len"]), "max_num_batched_tokens": int(cfg["max_num_batched_tokens"]),
             "max_num_seqs": int(cfg["max_num_seqs"]), "tensor_parallelism": int(cfg["tensor_parallelism"]),
             "guidellm_data": data, "guidellm_version": doc["metadata"]["guidellm_version"],
             "shared_prefix_len": prefix,
             "log": {"model_loading_gib": float(weights.group(1)) if weights else None,
                     "available_kv_cache_gib": float(kv_mem.group(1)) if kv_mem else None,
                     "gpu_kv_cache_tokens": int(kv.group(1).replace(",", "")) if kv else None}}
    runs = []
    for i, bench in enumerate(doc["benchmarks"]):
        strat = bench["config"]["strategy"]
        sm = bench["scheduler_metrics"]
        t0, t1 = sm["request_start_time"], sm["request_end_time"]
        win = [s for s in spans if t0 <= s["t"] <= t1]
        m = bench["metrics"]
        ok = m["request_totals"]["successful"]
        out_sum = m["output_token_count"]["successful"]["total_sum"]
        client_ttft = m["time_to_first_token_ms"]["successful"]
        if strat["type_"] != "throughput":  # the project's own reader, where it reads the strategy
            point = guidellm.guidellm_point(bench, f"{folder.name}: benchmarks[{i}]")
            thr = point["client"]["output_throughput_tok_s"]
            assert abs(point["client"]["ttft_ms"]["p50"] - client_ttft["median"]) < 1e-9
        else:
            thr = out_sum / bench["duration"]
        tpots = [(s["e2e_ms"] - s["ttft_ms"]) / (s["out"] - 1) for s in win if s["out"] > 1]
        run: dict = {"tp": int(cfg["tensor_parallelism"]), "experiment": folder.name, "benchmark": i,
                     "strategy": strat["type_"], "num_prompts": int(ok),
                     "input_len": round(sum(s["in"] for s in win) / len(win)),
                     "output_len": round(sum(s["out"] for s in win) / len(win)),
                     "input_lens": [s["in"] for s in win], "output_lens": [s["out"] for s in win],
                     "shared_prefix_len": prefix,
                     # GuideLLM's sweep runs its strategies one after another on one server: the shared prefix is
                     # in the prefix cache from the first benchmark's first request on
                     "prefix_cached_before": i > 0,
                     "measured": {"output_throughput_tok_per_s": round(thr, 3),
                                  "tpot_p50_ms": round(statistics.median(tpots), 3),
                                  "ttft_p50_ms": round(client_ttft["median"], 3)},
                     "ttft_split_mean_ms": {
                         "client": round(client_ttft["mean"], 3),
                         "server": round(statistics.fmean(s["ttft_ms"] for s in win), 3),
                         "queue": round(statistics.fmean(s["queue_ms"] for s in win), 3),
                         "prefill": round(statistics.fmean(s["prefill_ms"] for s in win), 3),
                         "api_server_engine_core": round(statistics.fmean(
                             s["ttft_ms"] - s["queue_ms"] - s["prefill_ms"] for s in win), 3),
                         "http_and_network": round(client_ttft["mean"] - statistics.fmean(
                             s["ttft_ms"] for s in win), 3)},
                     "from": f"eval/ground_truth/{folder.name}/guidellm-results.json benchmarks[{i}] "
                             f"({strat['type_']}); traces.json, {len(win)} llm_request spans in its window"}
        if strat["type_"] == "synchronous":
            run["concurrency"] = 1
        elif strat["type_"] == "throughput":
            run["concurrency"] = int(ok)  # every request at once: a closed loop of N clients, one request each
        else:
            run["request_rate"] = strat["rate"]
            run["arrivals"] = strat["type_"]  # constant: evenly spaced
            late_s = float(sm["request_targeted_start_delay_avg"])
            bunched = sum(b["t"] - a["t"] < 0.1 / strat["rate"] for a, b in zip(win, win[1:]))
            if late_s > 0.5 / strat["rate"]:  # GuideLLM's own account of sending late (measure/results/peers)
                run["excluded"] = (f"GuideLLM sent its requests {late_s:.2f} s late on average "
                                   f"(request_targeted_start_delay_avg; the interval is {1 / strat['rate']:.2f} s): "
                                   f"vLLM's traces show {bunched + 1} of them arriving within "
                                   f"{win[bunched]['t'] - win[0]['t']:.2f} s, not the constant rate it names")
        if len(win) != ok:
            run["note"] = f"{len(win)} spans for {ok} successful requests"
        runs.append(run)
    return facts, runs


def source_entry(folders: list[Path]) -> dict:
    runs, facts = [], []
    for f in folders:
        fa, rs = experiment_runs(f)
        facts.append(fa)
        for r in rs:
            r["engine_args"] = {"max_model_len": fa["max_model_len"],
                                "max_num_batched_tokens": fa["max_num_batched_tokens"],
                                "max_num_seqs": fa["max_num_seqs"]}
        runs += rs
    return {
        "source": SOURCE,
        "url": f"https://github.com/inference-sim/inference-sim/tree/{COMMIT}/eval/ground_truth",
        "how_read": (f"benchmarks/corpus_blis.py over the experiment folders of inference-sim/inference-sim at commit "
                     f"{COMMIT[:12]} (2026-01-20 runs, BLIS's simulator-validation ground truth): each GuideLLM "
                     "benchmark is a run; lengths and TPOT from vLLM's own per-request traces in its window, TTFT "
                     "p50 and throughput from GuideLLM's file"),
        "setup": {
            "engine": "vLLM 0.11.0, V1 engine (vllm.log: 'vLLM API server version 0.11.0', 'Initializing a V1 LLM "
                      "engine'); prefix caching and chunked prefill on (the engine's config line); CUDA graphs "
                      "(piecewise, capture sizes to 64); OTLP tracing on",
            "model": "codellama/CodeLlama-34b-Instruct-hf, bf16 (config.json: benchmarks/data/corpus/configs/)",
            "gpu": "one NVIDIA H100 80 GB, assumed SXM: the log states no GPU name; 62.86 GiB of weights and "
                   "8.18 GiB of KV cache at gpu_memory_utilization 0.9 fit an 80 GB card, and a 26 ms batch-1 "
                   "decode step reads the 67.5 GB of weights at 2.6 TB/s, above a PCIe card's 2.0 TB/s peak",
            "client": "GuideLLM 0.6.0.dev2 --profile sweep --max-requests 40 over HTTP/2 from another host of the "
                      "cluster; synthetic prompts: a 1,024-token prefix common to every request + ~2,048 +/- 500 "
                      "tokens (100-4,096), outputs 32 +/- 16 (1-64)"},
        "notes": [
            "Experiments: " + "; ".join(f"{fa['experiment']}: max_num_batched_tokens {fa['max_num_batched_tokens']}"
                                         f", max_num_seqs {fa['max_num_seqs']}, max_model_len {fa['max_model_len']} "
                                         f"(log: {fa['log']['gpu_kv_cache_tokens']:,} KV tokens)" for fa in facts),
            "Each benchmark's requests are simulated with their own prompt and output lengths, in arrival order; "
            "every prompt starts with the shared 1,024-token prefix (cached from the sweep's first request on). "
            "GuideLLM's constant rate sends evenly spaced requests (simulated as gamma arrivals of shape 10^6: a "
            "coefficient of variation of 0.1%); its throughput strategy sends all requests at once.",
            "TPOT p50 is vLLM's per-request TPOT from its traces (server side, which a client's differs from by "
            "the streaming of the last chunk only), not GuideLLM's token-weighted median.",
            "Held out: no default of the serving model was set from these runs. Their TTFT split (ttft_split_mean_ms) "
            "is checked against the frontend default in tests/unit/test_frontend_gpu_host.py.",
        ],
        "gpu": "h100-sxm",
        "model": "codellama-34b-instruct",
        "model_config": "configs/codellama-34b-instruct-hf.json",
        "vllm": "0.11.0",
        "engine_args": {},
        # (c) in model_accuracy.py: roofline calibrate's rule fitted on each experiment's C = 1 benchmark, the
        # other runs predicted with the fitted constants
        "calibrate_on": [f"{fa['experiment']}/0" for fa in facts],
        "runs": runs,
    }


def append_source(entry: dict) -> None:
    """Append a source to v1-public-runs.json in the file's own layout (two-space indent, lists of numbers on one
    line), the other sources' text untouched; refuses a source already there."""
    text = json.dumps(entry, indent=2, ensure_ascii=False)
    text = re.sub(r"\[\s*(-?[\d.]+(?:,\s*-?[\d.]+)*)\s*\]", lambda m: "[" + re.sub(r",\s*", ", ", m.group(1)) + "]",
                  text)
    text = "\n".join("    " + line for line in text.splitlines())
    doc_text = CORPUS_FILE.read_text()
    doc = json.loads(doc_text)
    if any(s["source"] == entry["source"] for s in doc["sources"]):
        raise SystemExit(f"{entry['source']} is already in {CORPUS_FILE.name}: remove it first")
    tail = "\n  ]\n}\n"
    if not doc_text.endswith(tail):
        raise SystemExit(f"{CORPUS_FILE.name} does not end as expected")
    CORPUS_FILE.write_text(doc_text[:-len(tail)] + ",\n" + text + tail)
    assert json.loads(CORPUS_FILE.read_text())["sources"][-1] == json.loads(json.dumps(entry))


def run_main(argv: list[str] | None, doc: str, source: str, *,
             name: str, nargs: str | None = None, entry_of=None) -> int:
    """The command line both corpus scripts share: print the source entry, or with ``--write`` append it
    (:func:`append_source`)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument(name, nargs=nargs, type=Path)
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args(argv)
    entry = entry_of(getattr(args, name))
    if not args.write:
        print(json.dumps(entry, indent=1))
        return 0
    append_source(entry)
    print(f"wrote {source}: {len(entry['runs'])} runs")
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_main(argv, __doc__, SOURCE, name="dirs", nargs="+", entry_of=source_entry)


if __name__ == "__main__":
    raise SystemExit(main())
