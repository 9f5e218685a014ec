"""The prediction format's field tables: every section's keys, their kinds, their docs and their allowed words.

One table per section (top level, a prediction, ``engine``, ``engine.reserves``, ``workload``, ``sweep``, ``slo``,
``defaults``, ``thresholds``, ``xfail``, ``table``, and ``serving``'s keys derived from the serving model's
constants). The validator (:mod:`._sections`, :mod:`._expand`) and the JSON Schema (:mod:`._schema`) both read
these, so a key, its doc and its allowed words are written once.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal, get_args

from pytest_roofline.format._types import MODEL_COLUMNS, STEADY_STATES, XFAIL_CHECKS, Api, Entrypoint
from pytest_roofline.format.tolerance import TOLERANCE_HELP
from pytest_roofline.model import serving
from pytest_roofline.model.workload import ARRIVAL_SPANS
from pytest_roofline.quantities.measurement import PointMode
from pytest_roofline.quantities.window import WINDOWS

__all__ = [
    "F", "TOP_FIELDS", "PREDICTION_FIELDS", "ENGINE_FIELDS", "WORKLOAD_FIELDS", "SWEEP_FIELDS", "SLO_FIELDS",
    "DEFAULTS_FIELDS", "THRESHOLD_FIELDS", "XFAIL_FIELDS", "TABLE_FIELDS", "BOOL_TRAPS", "SERVING_EXAMPLE",
    "serving_fields", "serving_field_table", "RESERVES_FIELDS", "SETUP_FIELDS", "FieldKind", "Entrypoint", "Api",
    "SloPercentile",
]

#: how a field's value is read: a string, a bare number, a whole number, true/false, a mapping, a list, a value
#: with its unit (``value``), a token length or its distribution (``length``, format/workloads.py), or anything
#: its section reader checks itself (``any``)
FieldKind = Literal["str", "number", "int", "bool", "map", "list", "any", "value", "length"]
#: ``slo.percentile``
SloPercentile = Literal["p50", "p90", "p95", "p99", "mean"]


@dataclass(frozen=True)
class F:
    kind: FieldKind
    doc: str
    required: bool = False
    enum: tuple[str, ...] = ()


TOP_FIELDS: dict[str, F] = {
    "title": F("str", "a title for the scorecard"),
    "description": F("str", "free text"),
    "notes": F("str", "free text"),
    "hardware": F("any", "catalog id of the exact chip (e.g. a100-sxm4-80gb), or a mapping {id: ..., <field>: "
                         "override}", required=True),
    "model": F("any", "preset name (qwen3-8b), a path to a HF config.json, or a mapping {name: ..., <field>: "
                      "override} / a nominal model {params: 8.0e9, num_layers: 32, num_kv_heads: 8, head_dim: 128}; "
                      "a weight-quantization scheme as {name: ..., quantization: {method: awq, bits: 4, group_size: "
                      "128}} (a checkpoint's config.json quantization_config is read by itself)",
               required=True),
    "engine": F("map", "the serving engine: {name: vllm, version: '0.26.0', model: <HF id or path to serve>, args: "
                       "{gpu_memory_utilization: 0.9, ...}, env: {...}, reserves: {activation: 0.4 GiB, ...}}"),
    "workload": F("map", "{input_len: 1024, output_len: 1024, kv_context: 1000, sampling: {temperature: 0.8}}"),
    "sweep": F("map", "{mode: closed, concurrency: [1, 2, 4], requests_per_point: 10x, warmup: 2}"),
    "slo": F("map", "{ttft: 500 ms, tpot: 50 ms, percentile: p99}: defaults for goodput predictions"),
    "defaults": F("map", "{tolerance: ±10%, math_tolerance: ±0.5%, xfail_strict: true}"),
    "thresholds": F("map", "{knee_gain: 10%, ttft_knee_ratio: 2, contamination: 10%}"),
    "serving": F("map", "constants of the step-level serving model, overriding its defaults and any calibration: "
                        "{hbm_efficiency: 80%, flop_efficiency: 75%, mem_latency: 3 us, step_overhead: 3.3 ms, "
                        "per_seq_overhead: 0.05 ms} (`roofline predict --simulate` shows what they give)"),
    "calibration": F("str", "a calibration file written by `roofline calibrate` (a path relative to this file): "
                            "its fitted constants replace the serving model's defaults"),
    "model_column": F("str", "which model the 'model' column shows and CPU-only mode checks the ink against: "
                             "roofline (the decode roofline where it computes the quantity) or serving (the serving "
                             "model where it does). Default: the roofline for the quantities it computes, the "
                             "serving model for the measured ones only it computes, and for predicted: model",
                      enum=MODEL_COLUMNS),
    "predictions": F("list", "the predictions, each a test", required=True),
}
PREDICTION_FIELDS: dict[str, F] = {
    "id": F("str", "a unique id; -k selects by it", required=True),
    "quantity": F("str", "a quantity from the registry (see `roofline quantities`)"),
    "at": F("map", "where it applies: {concurrency: 64}, {batch: 16}, {concurrency: every}, ..."),
    "predicted": F("value", "the value in ink with its unit ('1,742 tok/s', '56.34 GiB'), 'model' to take the "
                            "model's value, none, true/false, or a word such as memory/compute"),
    "tolerance": F("any", f"the tolerance for the measured check: {TOLERANCE_HELP}"),
    "math_tolerance": F("any", "the tolerance of the CPU-only math check (default: half a unit in the last digit "
                               "written, or defaults.math_tolerance)"),
    "drift": F("any", "this prediction's drift threshold with --roofline-history: how far its measured value may move "
                      "from the baseline run(s) on the same setup, e.g. 5% or +10%/-3% (default: defaults.drift, "
                      "else --roofline-drift)"),
    "xfail": F("any", "expected to fail: a reason, or {reason: ..., strict: true, mode: math|measured|both}"),
    "notes": F("str", "free notes, shown in the scorecard"),
    "window": F("str", "which part of a sweep point a measured client figure is scored on: run (the whole "
                       "measurement window, the figure vllm bench serve prints; the default) or steady (the steady "
                       "window, fill and drain left out; a point without a steady state scores its whole run and "
                       "says so)", enum=WINDOWS),
    "setup": F("map", "per-prediction setup overrides: {hardware: ..., model: ..., workload: {...}, engine: {...}}"),
    "marks": F("list", "extra pytest marker names for selection with -m"),
    "table": F("map", "a table of predictions: {at: batch, quantities: [t_mem, ...], rows: [[1, 4.82 ms, ...]]}"),
}
ENGINE_FIELDS: dict[str, F] = {
    "name": F("str", "the engine (vllm)", enum=("vllm",)),
    "version": F("str", "the engine version the predictions assume (its defaults are used), e.g. '0.26.0'"),
    "entrypoint": F("str", "whose defaults the model uses: serve (vllm serve, the default) or llm (the offline "
                           "LLM class; the measurement path still launches vllm serve)", enum=get_args(Entrypoint)),
    "model": F("str", "what the engine serves: a HF id or a local path (default: the model preset's HF id)"),
    "args": F("map", "engine arguments (gpu_memory_utilization, max_model_len, block_size, max_num_seqs, "
                     "max_num_batched_tokens, dtype (the activation dtype), kv_cache_dtype (auto: the activation "
                     "dtype), quantization (vLLM's --quantization: fp8, awq, awq_marlin, gptq, ...), enforce_eager, "
                     "enable_prefix_caching, ...; vLLM's command-line spelling with hyphens is the same argument)"),
    "env": F("map", "environment variables for the engine process"),
    "reserves": F("map", "non-KV memory reserves: {activation: 0.4 GiB, non_torch: 0.5 GiB, cuda_graphs: 0.5 GiB}"),
    "cpu_kvcache_space": F("value", "CPU engine KV pool (VLLM_CPU_KVCACHE_SPACE), e.g. 1 GiB"),
    "startup_timeout": F("value", "how long to wait for readiness, e.g. 10 min"),
    "python": F("str", "the Python interpreter that runs the server (python -m vllm.entrypoints.openai.api_server), "
                       "e.g. /opt/vllm-venv/bin/python: vLLM in its own venv (default: pytest's own interpreter)"),
    "command": F("list", "the server's argv as a template instead, e.g. [docker, run, --rm, --gpus, all, --network, "
                         "host, vllm/vllm-openai:v0.10.0, --model, '{model}', --port, '{port}']; placeholders "
                         "{model} {port} {host} {served_model_name} {args} (the flags from engine.args; appended "
                         "when not placed); {port} is required: the plugin picks the port and checks health on it"),
    "replicas": F("int", "--endpoint: identical engine replicas behind the endpoint's load balancer (default 1); "
                         "throughput at concurrency C scales to replicas × one replica's at C ÷ replicas, latencies "
                         "are one replica's at C ÷ replicas, KV capacity and batch-1 figures stay per replica"),
    "replica_metrics": F("list", "--endpoint: each replica's own /metrics base URL, one per replica, e.g. "
                                 "[http://10.0.0.5:8000, http://10.0.0.6:8000] (--roofline-replica-metrics wins); "
                                 "a load balancer's /metrics is one replica's at most"),
}
#: ``engine.reserves``: each a size in bytes overriding the engine version's estimate (model/setup.py)
RESERVES_FIELDS: dict[str, F] = {
    "activation": F("value", "peak activation memory of the profiling forward pass, e.g. 0.4 GiB"),
    "non_torch": F("value", "memory outside PyTorch's allocator (CUDA context, NCCL buffers), e.g. 0.5 GiB"),
    "cuda_graphs": F("value", "memory the captured CUDA graphs hold, e.g. 0.5 GiB"),
}
WORKLOAD_FIELDS: dict[str, F] = {
    "input_len": F("length", "prompt tokens per request: a number (exact), or a distribution {dist: uniform, min: 64, "
                             "max: 512} | {dist: normal, mean: 256, std: 64, min: 16, max: 1024} | {dist: file, "
                             "path: lens.txt, order: sample|sequential}"),
    "output_len": F("length", "output tokens per request (ignore_eos): a number (exact) or a distribution as "
                              "input_len"),
    "dataset": F("map", "prompts from a file: {path: prompts.jsonl, format: jsonl|sharegpt, prompt_field: prompt, "
                        "output_field: output_len, order: sequential|sample, tokenizer: path/to/tokenizer.json}"),
    "prefix_share": F("number", "share of each prompt's tokens that is a prefix common to all requests, in [0, 1)"),
    "ramp_up": F("map", "open loop: the rate rises over each point's requests, as vllm bench serve --ramp-up-*: "
                        "{strategy: linear|exponential, start_rps: 1, end_rps: 8}"),
    "kv_context": F("number", "KV tokens per sequence the decode model charges (default input_len + output_len/2)"),
    "sampling": F("map", "sampling parameters sent with each request (temperature, top_p, top_k)"),
    "shared_prefix_len": F("int", "leading tokens shared by every request of a point (default 0: none)"),
    "seed": F("int", "seed of the prompts and arrival schedules"),
    "api": F("str", "the API the load generator calls: completions (/v1/completions, token-id prompts of exactly "
                    "input_len, the default) or chat (/v1/chat/completions: a text message the server wraps in the "
                    "model's chat template, so the prompt is about input_len words plus the template's tokens; "
                    "the server's usage.prompt_tokens is recorded)", enum=get_args(Api)),
}
SWEEP_FIELDS: dict[str, F] = {
    "mode": F("str", "closed (fixed concurrency) or open (arrival rate)", enum=tuple(m.value for m in PointMode)),
    "concurrency": F("list", "closed-loop concurrencies to run"),
    "rates": F("list", "open-loop arrival rates (req/s)"),
    "burstiness": F("number", "open loop: gamma shape (1 = Poisson)"),
    "arrival_span": F("str", "open loop: fixed (the default: a point's N requests are sent over exactly N ÷ rate, "
                             "first send to last; vllm bench serve's last send is N ÷ rate after its start, one gap "
                             "before its first, so both runs last N ÷ rate + the last latency and the rate a point "
                             "is named by is the rate it sent; a duration-bound point and a ramp-up stay drawn) or "
                             "drawn (the gamma draw's own span, as GuideLLM's poisson and this "
                             "tool's runs before 2026-12-07: at 60 requests it can be a third short)",
                      enum=ARRIVAL_SPANS),
    "requests_per_point": F("value", "requests per point: a number (every point), or '10x' for 10 × concurrency "
                               "(a warning beside sweep.rates: an open point has no concurrency). Unset: 10 × C at a "
                               "closed point, max(10, rate × 30) at an open point (30 s of arrivals)"),
    "duration": F("value", "run each point this long instead, e.g. 3 min"),
    "warmup": F("int", "warm-up requests per point, excluded from statistics (closed loop: at least one per client)"),
    "batch1": F("map", "a dedicated batch-1 run: {requests: 4, output_len: 1000}"),
    "request_timeout": F("value", "per-request timeout, e.g. 120 s"),
    "timeline": F("value", "poll /metrics this often while a point runs, for the server-side timeline (e.g. "
                           "1 s; default off: before/after snapshots only — polling perturbed the CPU engine)"),
    "adaptive": F("bool", "stop each point once its predictions' verdicts are decided (requests_per_point or "
                          "duration stays the cap); default false"),
    "repeats": F("int", "run each point this many times (default 1); each figure is then the mean of the repeats "
                        "with a Student-t interval over them, and the results keep every repeat"),
    "steady_state": F("str", "detect (the default: each point's warm-up and drain are measured and left out of its "
                             "intervals) or off (the whole measurement window)", enum=STEADY_STATES),
    "processes": F("int", "client processes the load generator spreads each point over: a whole number >= 1 (default "
                          "1: one epoll loop on one core) or auto (as many as the offered token rate needs; 1 with "
                          "adaptive: true, whose stopping rule needs one process)"),
}
SLO_FIELDS = {"ttft": F("value", "TTFT SLO, e.g. 500 ms"), "tpot": F("value", "TPOT SLO, e.g. 50 ms"),
              "e2el": F("value", "E2E latency SLO, e.g. 2 s: request_goodput's only (vllm bench serve's --goodput "
                                 "e2el:); goodput and goodput_concurrency read TTFT and TPOT"),
              "percentile": F("str", "p50 | p90 | p95 | p99", enum=get_args(SloPercentile))}
DEFAULTS_FIELDS = {"tolerance": F("any", "default tolerance of measured checks"),
                   "math_tolerance": F("any", "default tolerance of math checks"),
                   "drift": F("any", "default drift threshold of this file's predictions (e.g. 5%)"),
                   "xfail_strict": F("bool", "whether xfails are strict (default true)")}
THRESHOLD_FIELDS = {"knee_gain": F("value", "throughput knee: doubling concurrency adds less than this, e.g. 10%"),
                    "queue_fraction": F("value", "a point queues when vLLM's mean queue time exceeds this share of "
                                                 "its mean E2E latency, e.g. 10%"),
                    "ttft_knee_ratio": F("number", "TTFT knee: p99 > this × p50 (default 2)"),
                    "contamination": F("value", "prefix-cache hit rate above which a point is contaminated, e.g. 10%")}
XFAIL_FIELDS = {"reason": F("str", "why it is expected to fail", required=True),
                "strict": F("bool", "an unexpected pass fails the run (default true)"),
                "mode": F("str", "which check is expected to fail", enum=XFAIL_CHECKS)}
#: a prediction's ``setup:`` overrides: the top level's setup sections, none of them required there
SETUP_FIELDS = {k: F(TOP_FIELDS[k].kind, TOP_FIELDS[k].doc) for k in ("hardware", "model", "engine", "workload")}
TABLE_FIELDS = {"at": F("str", "the at-parameter in the first column (e.g. batch)", required=True),
                "quantities": F("list", "the quantity of each further column", required=True),
                "rows": F("list", "rows: [at-value, value, value, ...]", required=True)}

BOOL_TRAPS = {"on", "off", "yes", "no", "y", "n"}


SERVING_EXAMPLE = {"time": "a time, e.g. 3.3 ms", "ratio": "a share of the peak, e.g. 80%",
                   "bandwidth": "a bandwidth, e.g. 20 GB/s", "flop_rate": "a FLOP rate, e.g. 100 GFLOP/s",
                   "exponent": "a number >= 1, e.g. 1.75 (1: the two bounds add)"}
#: ServingConstants fields that are plain numbers, not shares, times or rates
EXPONENT_CONSTANTS = frozenset({"linear_overlap_p"})


def _constant_dimension(name: str) -> str:
    if name in EXPONENT_CONSTANTS:
        return "exponent"
    if name.endswith("_bytes_per_s"):
        return "bandwidth"
    if name.endswith("_flop_per_s"):
        return "flop_rate"
    return "time" if name.endswith("_s") else "ratio"


def serving_fields() -> dict[str, str]:
    """The keys a ``serving:`` section takes: ServingConstants field -> its dimension (time for ``*_s``, a
    bandwidth for ``*_bytes_per_s``, a FLOP rate for ``*_flop_per_s``, a plain number for
    :data:`EXPONENT_CONSTANTS`, else a share of the peak)."""
    return {f.name: _constant_dimension(f.name) for f in dataclasses.fields(serving.ServingConstants)}


def serving_field_table() -> dict[str, F]:
    """The ``serving:`` section's field table, for the validator and the schema: every ServingConstants field by
    its name, and a time constant also without its ``_s`` suffix (``step_overhead: 3.3 ms``)."""
    fields = serving_fields()
    return {**{k.removesuffix("_s"): F("value", f"{k}: a time, e.g. 3.3 ms") for k, d in fields.items() if d == "time"},
            **{k: F("value", f"{k}: {SERVING_EXAMPLE[d]}") for k, d in fields.items()}}
