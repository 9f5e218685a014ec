"""Why a serving-model value has no band, and what a KV pool on more than one GPU is worth: the words
``roofline predict --simulate`` prints (and its ``--json`` ``band_notes``), the scorecard's "no band" notes and the
KV pool's caveat share, in the model layer so both the CLI and the reports read them from one home."""

from __future__ import annotations

__all__ = ["NO_BAND_REASON", "NO_BAND_OTHER", "TP_POOL_CAVEAT_TEXT", "ENGINE_FIGURES", "not_reported"]

#: what a pool under tensor or pipeline parallelism is worth: the public TP startup logs measured it smaller than
#: the model's (per-rank memory vLLM holds that the reserves do not: benchmarks/kv_capacity.py)
#: (the mean error there: docs/explanation/models.md and benchmarks/RESULTS-kv-capacity.md, "tensor parallel")
TP_POOL_CAVEAT_TEXT = ("more than one GPU: public startup logs have measured such pools smaller than this model's, "
                       "never larger; read it as an upper bound: benchmarks/RESULTS-kv-capacity.md, "
                       "docs/explanation/models.md")


#: why a value ``--simulate`` prints has no band, for the metrics outside ``model.bands.BAND_METRICS``: a band
#: needs measured values from several public sources (model/bands.py), and the accuracy corpus
#: (benchmarks/data/corpus: LambdaLabsML/vllm-benchmark and the five sources of v1-public-runs.json) has at most
#: one source for each of these (tests/unit/test_predict_refusals.py reads the corpus to check it)
NO_BAND_REASON: dict[str, str] = {
    "per_request_output_tok_per_s": "no band: no public source of the accuracy corpus reports per-request tok/s",
    "ttft_p99_ms": "no band: one public source of the accuracy corpus reports TTFT p99 (LambdaLabsML/vllm-benchmark, "
                   "vLLM 0.5.4), too few sources to bound a new one's error",
    "tpot_p99_ms": "no band: no public source of the accuracy corpus reports TPOT p99",
    "itl_p99_ms": "no band: no public source of the accuracy corpus reports ITL p99",
}
#: the engine figures of vLLM's /metrics ``--simulate`` prints, by field: what the accuracy corpus would have to report
ENGINE_FIGURES: dict[str, str] = {
    "mean_running_batch": "the running batch", "max_running_batch": "the running batch",
    "max_kv_usage": "KV-cache usage", "mean_kv_usage": "KV-cache usage", "preemptions": "preemptions",
    "mean_queue_ms": "the time in the engine's queue", "prefix_cache_hit_rate": "the prefix-cache hit rate"}


def not_reported(what: str, *, figures: str = "an engine figure") -> str:
    return f"no public source of the accuracy corpus reports {what} ({figures} of vLLM's /metrics)"


#: why the other values ``--simulate`` prints (the table's last columns, and the --json fields beside the columns')
#: have no band: what the accuracy corpus reports of each (tests/unit/test_simulate_band_notes.py reads the corpus)
NO_BAND_OTHER: dict[str, str] = {
    "request_throughput_req_per_s": "no band: the accuracy corpus holds output tok/s from nine public sources, two "
                                    "report requests/s; with every output of the same length it is agg tok/s ÷ that "
                                    "length",
    "ttft_mean_ms": "no band: one public source of the accuracy corpus reports mean TTFT (gpustack-qwen3-bursts), too "
                    "few sources to bound a new one's error",
    "tpot_mean_ms": "no band: one public source of the accuracy corpus reports mean TPOT (gpustack-qwen3-bursts), too "
                    "few sources to bound a new one's error",
    "itl_p50_ms": "no band: no public source of the accuracy corpus reports ITL p50",
    **{f"e2e_{stat}_ms": "no band: no public source of the accuracy corpus reports end-to-end latency"
       for stat in ("mean", "p50", "p99")},
    **{name: f"no band: {not_reported(what)}" for name, what in ENGINE_FIGURES.items()},
    "duration_s": "no band: the run's length, the request count ÷ the request throughput (agg tok/s's band)",
    "steps": "no band: the simulator's count of engine steps, no measured figure",
    "time_shares": "no band: the model's own split of its step time (the dominant term), no measured figure",
    "arrival_to_completion_ratio": "no band: the simulator's own stability estimate (requests that arrived ÷ requests "
                                   "that finished, about 1 at every stable load), no measured figure",
    "served_rate_req_per_s": "no band: the simulator's own stability estimate (offered ÷ served requests), no "
                             "measured figure",
    "api_server_busy_share": "no band: the simulator's own share of the run the API server was busy, no measured "
                             "figure (benchmarks/api_server_cost.py measures its CPU per request and per token)",
}
