"""Peers' result documents that several test modules build, each once, with the figures worked by hand."""

from __future__ import annotations

from typing import Any


def vllm_bench_doc(**over: Any) -> dict[str, Any]:
    """A ``vllm bench serve --save-result`` document (the keys of vLLM 0.10-0.32): 40 of 40 requests at
    ``max_concurrency`` 4 over 120 s, 128 input and 1,024 output tokens each (5,120 and 40,960 in all), so every
    throughput is its total over 120 s; any key replaced or added by ``over``."""
    doc: dict[str, Any] = {
        "date": "20261201-120000", "backend": "openai", "model_id": "roofline-tiny", "num_prompts": 40,
        "request_rate": "inf", "burstiness": 1.0, "max_concurrency": 4, "duration": 120.0, "completed": 40,
        "failed": 0, "total_input_tokens": 5120, "total_output_tokens": 40960, "request_throughput": 40 / 120,
        "output_throughput": 40960 / 120, "total_token_throughput": 46080 / 120, "mean_ttft_ms": 20.0,
        "median_ttft_ms": 18.0, "p99_ttft_ms": 50.0, "median_tpot_ms": 11.0, "p99_tpot_ms": 12.0,
        "mean_e2el_ms": 12000.0}
    doc.update(over)
    return doc
