"""The startup-log parser at every vLLM version 0.4 to 0.11: each line below is what the cited format string
renders (version and path of the format string in vLLM's source distribution of that version, the same path at
git tag v<version> of github.com/vllm-project/vllm), with values worked out by hand.

GB vs GiB: every "GB" line below is computed with ``/ float(2**30)`` in vLLM (cited per test), so the printed
number is GiB and is read as such; a GB=1e9 reading would be 7.4% larger.
"""

from __future__ import annotations

import pytest

from pytest_roofline.measure.engine.startup_log import (
    LOG_FIELDS,
    parse_log_prefix,
    parse_startup_log,
    read_startup_log,
    startup_failure_reason,
)

# Llama-2-7b-hf: the safetensors index's total_size is 13,476,839,424 B (fp16, model card: 7B params).
# 13,476,839,424 / 2**30 = 12.5513 GiB (printed "%.4f"); read as GB (1e9) it would be 13.48.
LLAMA2_7B_GIB = 12.5513


def test_v041_v0_lines():
    # 0.4.1 llm_engine.py: f"Initializing an LLM engine (v{vllm.__version__}) with config: model={..!r}, ..."
    # 0.4.1 worker/model_runner.py:173: f"Loading model weights took {usage / float(2**30):.4f} GB"
    # 0.4.1 executor/gpu_executor.py:119: f"# GPU blocks: {n}, # CPU blocks: {m}"
    # 0.4.1 worker/model_runner.py:1057: f"Graph capturing finished in {elapsed_time:.0f} secs."
    log = (
        "INFO 04-25 10:00:00 llm_engine.py:99] Initializing an LLM engine (v0.4.1) with config: "
        "model='meta-llama/Llama-2-7b-hf', speculative_config=None, tokenizer='meta-llama/Llama-2-7b-hf', "
        "skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, tokenizer_revision=None, "
        "trust_remote_code=False, dtype=torch.float16, max_seq_len=4096, download_dir=None, load_format=auto, "
        "tensor_parallel_size=1, disable_custom_all_reduce=False, quantization=None, enforce_eager=False, "
        "kv_cache_dtype=auto, quantization_param_path=None, device_config=cuda, "
        "decoding_config=DecodingConfig(guided_decoding_backend='outlines'), seed=0)\n"
        "INFO 04-25 10:00:05 model_runner.py:173] Loading model weights took 12.5513 GB\n"
        "INFO 04-25 10:00:06 gpu_executor.py:119] # GPU blocks: 7406, # CPU blocks: 512\n"
        "INFO 04-25 10:00:11 model_runner.py:1057] Graph capturing finished in 5 secs.\n"
    )
    d = parse_startup_log(log)
    assert d["version"] == "0.4.1" and d["engine"] == "V0"
    assert d["weights_gib"] == LLAMA2_7B_GIB  # GiB as printed, not 13.48
    assert d["num_gpu_blocks"] == 7406 and d["num_cpu_blocks"] == 512 and d["kv_device"] == "GPU"
    assert d["graph_capture_s"] == 5.0 and d["graph_capture_gib"] is None  # no size before 0.6.4
    cfg = d["engine_config"]
    assert cfg["model"] == "meta-llama/Llama-2-7b-hf" and cfg["max_seq_len"] == 4096
    assert cfg["tensor_parallel_size"] == 1 and cfg["quantization"] is None and cfg["kv_cache_dtype"] == "auto"
    assert cfg["dtype"] == "torch.float16"  # not the kv_cache_dtype's "auto"
    assert d["unparsed"] is None and d["failure_reason"] is None


def test_v054_tp2_weights_per_worker():
    # 0.5.4 worker/model_runner.py:732 "Loading model weights took %.4f GB" (/ float(2**30)); TP=2 halves the
    # weights per GPU: 12.5513 / 2 = 6.2757 GiB. The second worker writes behind "(VllmWorkerProcess pid=N) "
    # (0.5.4 executor/multiproc_worker_utils.py _add_prefix).
    log = (
        "(VllmWorkerProcess pid=4242) INFO 08-05 10:00:05 model_runner.py:732] Loading model weights took "
        "6.2757 GB\n"
        "INFO 08-05 10:00:05 model_runner.py:732] Loading model weights took 6.2757 GB\n"
        "INFO 08-05 10:00:06 distributed_gpu_executor.py:56] # GPU blocks: 15320, # CPU blocks: 1024\n"
    )
    s = read_startup_log(log)
    assert s.facts["weights_gib"] == 6.2757 and s.facts["weights_gib_per_worker"] == [6.2757, 6.2757]
    assert s.facts["draft_weights_gib"] is None
    assert [o.worker for o in s.occurrences if o.pattern == "v0_loading_model_weights"] == [
        "VllmWorkerProcess pid=4242", None]
    assert s.values("v0_blocks", "blocks") == [15320]


def test_v063_blocks_concurrency_and_speculative_draft():
    # 0.6.3 executor/gpu_executor.py:122/126: "# GPU blocks: %d, # CPU blocks: %d" and
    # "Maximum concurrency for %s tokens per request: %.2fx" with max_model_len unformatted;
    # concurrency = blocks * block_size / max_model_len = 27153 * 16 / 4096 = 106.07.
    # Speculative decoding: the draft (JackFram/llama-68m, 68M params * 2 B / 2**30 = 0.1267 GiB) loads after
    # the target on the same worker (0.6.3 worker/model_runner.py:1071 "Loading model weights took %.4f GB").
    log = (
        "INFO 10-14 10:12:00 llm_engine.py:237] Initializing an LLM engine (v0.6.3) with config: "
        "model='meta-llama/Llama-2-7b-hf', speculative_config=SpeculativeConfig(draft_model='JackFram/llama-68m', "
        "num_spec_tokens=5), tokenizer='meta-llama/Llama-2-7b-hf', dtype=torch.float16, max_seq_len=4096, "
        "tensor_parallel_size=1, pipeline_parallel_size=1, quantization=None, enforce_eager=False, "
        "kv_cache_dtype=auto, chunked_prefill_enabled=False multi_step_stream_outputs=True, "
        "enable_prefix_caching=False, use_async_output_proc=False)\n"
        "INFO 10-14 10:12:05 model_runner.py:1071] Loading model weights took 12.5513 GB\n"
        "INFO 10-14 10:12:06 model_runner.py:1071] Loading model weights took 0.1267 GB\n"
        "INFO 10-14 10:12:07 gpu_executor.py:122] # GPU blocks: 27153, # CPU blocks: 2048\n"
        "INFO 10-14 10:12:07 gpu_executor.py:126] Maximum concurrency for 4096 tokens per request: 106.07x\n"
    )
    d = parse_startup_log(log)
    assert d["weights_gib"] == LLAMA2_7B_GIB and d["draft_weights_gib"] == 0.1267
    assert d["weights_gib_per_worker"] == [LLAMA2_7B_GIB]
    assert d["num_gpu_blocks"] == 27153 and d["max_concurrency"] == pytest.approx(27153 * 16 / 4096, abs=0.005)
    assert d["max_concurrency_tokens_per_request"] == 4096
    assert d["engine_config"]["enable_prefix_caching"] is False
    assert d["engine_config"]["chunked_prefill_enabled"] is False
    assert d["engine_config"]["speculative_config"] == ("SpeculativeConfig(draft_model='JackFram/llama-68m', "
                                                         "num_spec_tokens=5)")


def test_v064_memory_profiling_results_and_v1_blocks():
    # 0.6.4 worker/worker.py:233: "Memory profiling results: total_gpu_memory=%.2fGiB initial_memory_usage=%.2fGiB
    # peak_torch_memory=%.2fGiB memory_usage_post_profile=%.2fGib non_torch_memory=%.2fGiB kv_cache_size=%.2fGiB
    # gpu_memory_utilization=%.2f" (all / 1024**3; "Gib" sic). kv = total*util - (peak_torch + non_torch)
    # = 79.15 * 0.90 - (13.86 + 0.49) = 56.885 -> printed from bytes as 56.89.
    # 0.6.4 worker/model_runner.py:1518 "Graph capturing finished in %.0f secs, took %.2f GiB".
    log = (
        "INFO 11-15 09:00:10 worker.py:232] Memory profiling results: total_gpu_memory=79.15GiB "
        "initial_memory_usage=13.01GiB peak_torch_memory=13.86GiB memory_usage_post_profile=13.06Gib "
        "non_torch_memory=0.49GiB kv_cache_size=56.89GiB gpu_memory_utilization=0.90\n"
        "INFO 11-15 09:00:30 model_runner.py:1518] Graph capturing finished in 12 secs, took 0.53 GiB\n"
    )
    d = parse_startup_log(log)
    assert d["available_kv_cache_gib"] == 56.89 == pytest.approx(79.15 * 0.90 - 13.86 - 0.49, abs=0.01)
    assert d["total_gpu_memory_gib"] == 79.15 and d["gpu_memory_utilization"] == 0.90
    assert d["non_torch_memory_gib"] == 0.49
    assert d["graph_capture_s"] == 12.0 and d["graph_capture_gib"] == 0.53
    # 0.6.4 V1 (VLLM_USE_V1=1): v1/engine/core.py:57 "Initializing an LLM engine (v%s) with config: %s" (same words
    # as V0, told apart by the file), v1/executor/gpu_executor.py:63 "# GPU blocks: %d" (no CPU part),
    # v1/worker/gpu_model_runner.py:534 "Loading model weights took %.4f GB" (/ float(2**30)).
    v1 = parse_startup_log(
        "INFO 11-15 09:00:00 core.py:57] Initializing an LLM engine (v0.6.4) with config: "
        "model='meta-llama/Llama-2-7b-hf', tensor_parallel_size=1\n"
        "INFO 11-15 09:00:05 gpu_model_runner.py:534] Loading model weights took 12.5513 GB\n"
        "INFO 11-15 09:00:06 gpu_executor.py:63] # GPU blocks: 7406\n")
    assert v1["engine"] == "V1" and v1["version"] == "0.6.4"
    assert v1["num_gpu_blocks"] == 7406 and v1["num_cpu_blocks"] is None and v1["weights_gib"] == LLAMA2_7B_GIB


@pytest.mark.parametrize("version,file", [("0.6.5", "worker.py:225]"), ("0.7.2", "worker.py:251]"),
                                          ("0.8.5", "[worker.py:272]"), ("0.10.0", "[worker.py:279]")])
def test_v065_to_010_memory_profiling_message(version, file):
    # worker/worker.py (0.6.5-0.10) logs ONE message over three lines:
    #   f"Memory profiling takes {t:.2f} seconds\n"
    #   "the current vLLM instance can use total_gpu_memory ({total:.2f}GiB) x gpu_memory_utilization ({u:.2f})
    #    = {budget:.2f}GiB\n"
    #   "model weights take {w:.2f}GiB; non_torch_memory takes {nt:.2f}GiB; PyTorch activation peak memory takes
    #    {a:.2f}GiB; the rest of the memory reserved for KV Cache is {kv:.2f}GiB."   (all / GiB_bytes)
    # kv = budget - (w + nt + a) = 71.24 - (12.55 + 0.15 + 1.23) = 57.31.
    # A TP worker's process prefix is written on every line, continuation lines too (_add_prefix).
    head = f"INFO 01-23 10:00:00 {file} "
    driver = (head + "Memory profiling takes 5.12 seconds\n"
              "the current vLLM instance can use total_gpu_memory (79.15GiB) x gpu_memory_utilization (0.90) = "
              "71.24GiB\n"
              "model weights take 12.55GiB; non_torch_memory takes 0.15GiB; PyTorch activation peak memory takes "
              "1.23GiB; the rest of the memory reserved for KV Cache is 57.31GiB.\n")
    w = "(VllmWorkerProcess pid=77) "
    worker = (w + head + "Memory profiling takes 5.20 seconds\n"
              + w + "the current vLLM instance can use total_gpu_memory (79.15GiB) x gpu_memory_utilization (0.90)"
              " = 71.24GiB\n"
              + w + "model weights take 12.55GiB; non_torch_memory takes 0.41GiB; PyTorch activation peak memory "
              "takes 1.23GiB; the rest of the memory reserved for KV Cache is 57.05GiB.\n")
    s = read_startup_log(driver + worker)
    f = s.facts
    assert f["available_kv_cache_gib_per_worker"] == [57.31, 57.05]
    assert f["available_kv_cache_gib"] == 57.05 == pytest.approx(71.24 - (12.55 + 0.41 + 1.23))  # min (tightest)
    assert f["profile_weights_gib"] == 12.55 and f["activation_peak_gib"] == 1.23
    assert f["total_gpu_memory_gib"] == 79.15 and f["gpu_memory_utilization"] == 0.90
    assert f["memory_profiling_s"] == 5.20
    assert [o.worker for o in s.occurrences if o.pattern == "v0_memory_profile"] == [None, "VllmWorkerProcess pid=77"]
    assert s.unparsed == []


def test_v072_v0_and_v1():
    # 0.7.2 engine/llm_engine.py:235 "Initializing a V0 LLM engine (v%s) with config: %s, use_cached_outputs=%s, "
    # with VllmConfig.__str__ (config.py): "model=%r, ... tensor_parallel_size=4, pipeline_parallel_size=1, ...".
    # 0.7.2 executor/executor_base.py:110 "# %s blocks: %d, # CPU blocks: %d" with current_platform.dispatch_key
    # ("CUDA", platforms/cuda.py) and :115 "Maximum concurrency for %s tokens per request: %.2fx":
    # 25640 * 16 / 2048 = 200.31.
    v0 = parse_startup_log(
        "INFO 02-18 10:12:00 llm_engine.py:235] Initializing a V0 LLM engine (v0.7.2) with config: "
        "model='neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8', speculative_config=None, "
        "tokenizer='neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8', skip_tokenizer_init=False, dtype=torch.bfloat16, "
        "max_seq_len=2048, download_dir=None, load_format=LoadFormat.AUTO, tensor_parallel_size=4, "
        "pipeline_parallel_size=1, disable_custom_all_reduce=False, quantization=fp8, enforce_eager=False, "
        "kv_cache_dtype=auto,  device_config=cuda, seed=0, enable_prefix_caching=False, "
        "chunked_prefill_enabled=False, use_async_output_proc=True, use_cached_outputs=False, \n"
        "INFO 02-18 10:13:03 executor_base.py:110] # CUDA blocks: 25640, # CPU blocks: 3276\n"
        "INFO 02-18 10:13:03 executor_base.py:115] Maximum concurrency for 2048 tokens per request: 200.31x\n")
    assert v0["version"] == "0.7.2" and v0["engine"] == "V0"
    assert v0["engine_config"]["tensor_parallel_size"] == 4 and v0["engine_config"]["quantization"] == "fp8"
    assert v0["engine_config"]["max_seq_len"] == 2048 and v0["engine_config"]["kv_cache_dtype"] == "auto"
    assert v0["kv_device"] == "CUDA" and v0["num_gpu_blocks"] == 25640 and v0["num_cpu_blocks"] == 3276
    assert v0["max_concurrency"] == pytest.approx(25640 * 16 / 2048, abs=0.005)
    # 0.7.2 V1: v1/engine/core.py:47 "Initializing a V1 LLM engine (v%s) with config: %s";
    # v1/core/kv_cache_utils.py:407 "# GPU blocks: %d" and :410 the uncommaed "Maximum concurrency ..." line.
    v1 = parse_startup_log(
        "INFO 02-18 10:12:00 core.py:47] Initializing a V1 LLM engine (v0.7.2) with config: model='m', "
        "max_seq_len=2048, tensor_parallel_size=1\n"
        "INFO 02-18 10:13:03 kv_cache_utils.py:407] # GPU blocks: 25640\n"
        "INFO 02-18 10:13:03 kv_cache_utils.py:410] Maximum concurrency for 2048 tokens per request: 200.31x\n")
    assert v1["engine"] == "V1" and v1["num_gpu_blocks"] == 25640 and v1["num_cpu_blocks"] is None
    assert v1["max_concurrency_tokens_per_request"] == 2048


def test_v080_model_loading_gb_is_gib():
    # 0.8.0 v1/worker/gpu_model_runner.py:1140 (and worker/model_runner.py:1146): "Model loading took %.4f GB and
    # %.6f seconds" with self.model_memory_usage / float(2**30). Llama-3.1-8B: 8,030,261,248 params (model card
    # 8.03B) * 2 B = 16,060,522,496 B / 2**30 = 14.9575 GiB (as GB it would be 16.06).
    # 0.8.0 v1/core/kv_cache_utils.py:537 "GPU KV cache size: %s tokens" (f"{n:,}").
    d = parse_startup_log(
        "INFO 03-18 10:00:05 [gpu_model_runner.py:1140] Model loading took 14.9575 GB and 4.123456 seconds\n"
        "INFO 03-18 10:00:20 [kv_cache_utils.py:537] GPU KV cache size: 410,240 tokens\n"
        "INFO 03-18 10:00:20 [kv_cache_utils.py:540] Maximum concurrency for 8,192 tokens per request: 50.08x\n")
    assert d["weights_gib"] == 14.9575 and d["weights_load_s"] == 4.123456
    assert d["kv_cache_tokens"] == 410240 and d["max_concurrency_tokens_per_request"] == 8192
    assert d["max_concurrency"] == pytest.approx(410240 / 8192, abs=0.005)  # 50.08


def test_v085_v1_model_loading_gib():
    # 0.8.5 v1/engine/core.py:58 "Initializing a V1 LLM engine (v%s) with config: %s";
    # v1/worker/gpu_model_runner.py:1347 "Model loading took %.4f GiB and %.6f seconds".
    d = parse_startup_log(
        "INFO 05-01 10:00:00 [core.py:58] Initializing a V1 LLM engine (v0.8.5) with config: "
        "model='meta-llama/Llama-3.1-8B-Instruct', max_seq_len=8192, tensor_parallel_size=1, "
        "pipeline_parallel_size=1, quantization=None, enforce_eager=False, kv_cache_dtype=auto, "
        "enable_prefix_caching=True, chunked_prefill_enabled=True\n"
        "INFO 05-01 10:00:05 [gpu_model_runner.py:1347] Model loading took 14.9575 GiB and 3.500000 seconds\n")
    assert d["engine"] == "V1" and d["version"] == "0.8.5" and d["weights_gib"] == 14.9575
    assert d["engine_config"]["enable_prefix_caching"] is True


@pytest.mark.parametrize("line,engine", [
    # 0.9.0 v1/metrics/loggers.py:135: "vllm cache_config_info with initialization after num_gpu_blocks is: %d"
    ("INFO 05-20 10:00:30 [loggers.py:134] vllm cache_config_info with initialization after num_gpu_blocks is: "
     "25640", None),
    # 0.9.2-0.11 v1/metrics/loggers.py: "Engine %03d: vllm cache_config_info with initialization after ..."
    ("(APIServer pid=1) INFO 09-01 10:00:30 [loggers.py:147] Engine 000: vllm cache_config_info with "
     "initialization after num_gpu_blocks is: 25640", 0),
])
def test_v09_stat_logger_blocks(line, engine):
    s = read_startup_log(line)
    assert s.facts["num_gpu_blocks"] == 25640 and s.values("cache_config_info_log", "engine") == [engine]


def test_v010_tp4_available_kv_per_worker_is_min():
    # 0.10.0 v1/worker/gpu_worker.py:255 "Available KV cache memory: %.2f GiB"; TP workers write behind
    # "(VllmWorker rank=N pid=M) " (0.10.0 v1/executor/multiproc_executor.py:370 _add_prefix).
    log = "".join(f"(VllmWorker rank={r} pid={100 + r}) INFO 08-01 10:00:10 [gpu_worker.py:255] Available KV cache "
                  f"memory: {v} GiB\n" for r, v in enumerate([51.47, 51.47, 51.22, 51.47]))
    s = read_startup_log(log)
    assert s.facts["available_kv_cache_gib"] == 51.22
    assert s.facts["available_kv_cache_gib_per_worker"] == [51.47, 51.47, 51.22, 51.47]
    assert [o.worker for o in s.occurrences][2] == "VllmWorker rank=2 pid=102"


def test_negative_available_kv_is_the_failure_reason():
    # 0.10.0 v1/worker/gpu_worker.py:255 prints the negative figure, then v1/core/kv_cache_utils.py:672
    # check_enough_kv_cache_memory raises "No available memory for the cache blocks. Try increasing
    # `gpu_memory_utilization` when initializing the engine." (available_memory <= 0).
    log = ("(VllmWorker rank=0 pid=100) INFO 08-01 10:00:10 [gpu_worker.py:255] Available KV cache memory: "
           "-0.53 GiB\n"
           "(EngineCore_0 pid=90) ERROR 08-01 10:00:11 [core.py:632]   File \"/x/kv_cache_utils.py\", line 672\n"
           "(EngineCore_0 pid=90) ERROR 08-01 10:00:11 [core.py:632] ValueError: No available memory for the cache "
           "blocks. Try increasing `gpu_memory_utilization` when initializing the engine.\n")
    d = parse_startup_log(log)
    assert d["available_kv_cache_gib"] == -0.53
    assert d["kv_cache_tokens"] is None and d["num_gpu_blocks"] is None
    assert "-0.53 GiB" in d["failure_reason"]
    assert startup_failure_reason(log) == d["failure_reason"]
    # V0 0.6.5-0.10 worker/worker.py: the negative rest, then worker.py raise_if_cache_size_invalid's error.
    v0 = ("model weights take 75.02GiB; non_torch_memory takes 0.20GiB; PyTorch "
          "activation peak memory takes 1.40GiB; the rest of the memory reserved for KV Cache is -5.38GiB.\n"
          "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
          "initializing the engine.\n")
    assert "-5.38 GiB" in startup_failure_reason(v0)  # 71.24 - (75.02 + 0.20 + 1.40) = -5.38
    # Only the error line: it is named as printed.
    only = startup_failure_reason("ValueError: No available memory for the cache blocks. Try increasing "
                                  "`gpu_memory_utilization` when initializing the engine.")
    assert only is not None and "No available memory for the cache blocks" in only


def test_kv_too_small_errors():
    # 0.7.0 v1/core/kv_cache_utils.py:340: "To serve at least one request with the models's max seq len (%d),
    # (%.2f GB KV cache is needed, which is larger than the available KV cache memory (%.2f GB). ..." with
    # bytes/1024/1024/1024 (GiB). Llama-3.1-8B: 32 layers * 8 KV heads * 128 * 2 (K,V) * 2 B = 131,072 B/token;
    # * 131,072 tokens = 2**34 B = 16.00 GiB.
    r = startup_failure_reason(
        "ValueError: To serve at least one request with the models's max seq len (131072), (16.00 GB KV cache is "
        "needed, which is larger than the available KV cache memory (9.35 GB). Try increasing "
        "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.")
    assert r is not None and "131072" in r and "16.00 GiB" in r and "9.35 GiB" in r
    # 0.32 (installed CPU build) v1/core/kv_cache_utils.py: "... model's max seq len (%d), (%s GiB KV cache ..."
    r = startup_failure_reason(
        "(EngineCore pid=5) ERROR 11-29 12:50:17 [core.py:900] ValueError: To serve at least one request with the "
        "model's max seq len (131072), (16.0 GiB KV cache is needed, which is larger than the available KV cache "
        "memory (1.0 GiB). Based on the available memory, the estimated maximum model length is 8192. Try ...")
    assert r is not None and "16.00 GiB" in r and "1.00 GiB" in r
    # V0 worker/worker.py (0.4.1-0.10): "The model's max seq len (%d) is larger than the maximum number of tokens
    # that can be stored in KV cache (%d). ..."; 4680 blocks * 16 = 74,880 tokens.
    r = startup_failure_reason(
        "ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can be "
        "stored in KV cache (74880). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
        "initializing the engine.")
    assert r is not None and "131072" in r and "74880" in r


def test_a_successful_start_has_no_failure_reason():
    assert parse_startup_log("INFO 08-01 10:00:10 [gpu_worker.py:255] Available KV cache memory: 51.47 GiB\n"
                             "INFO 08-01 10:00:11 [kv_cache_utils.py:833] GPU KV cache size: 421,600 tokens\n"
                             )["failure_reason"] is None


def test_ray_prefix_and_repeated_suffix():
    # Ray's worker prefix "(RayWorkerWrapper pid=N, ip=A)" and its deduplication suffix; 0.6.3
    # worker/model_runner.py:1071. Llama-2-70B fp16 at TP=4: 68,976,648,192 params * 2 B / 4 / 2**30 = 32.12 GiB.
    line = ("(RayWorkerWrapper pid=2345, ip=10.0.0.2) INFO 10-14 10:12:05 model_runner.py:1071] Loading model "
            "weights took 32.1198 GB [repeated 2x across cluster]")
    s = read_startup_log("INFO 10-14 10:12:05 model_runner.py:1071] Loading model weights took 32.1198 GB\n" + line)
    assert s.facts["weights_gib_per_worker"] == [32.1198, 32.1198]
    o = s.occurrences[-1]
    assert o.worker == "RayWorkerWrapper pid=2345, ip=10.0.0.2" and o.repeated == 2
    p = parse_log_prefix(line)
    assert p is not None and p["process"] == "RayWorkerWrapper" and p["pid"] == 2345
    assert "[repeated" not in p["message"]


def test_milliseconds_and_container_timestamps():
    line = "2025-07-31T12:34:56.789012Z INFO 07-31 12:34:56.789 [kv_cache_utils.py:833] GPU KV cache size: 1,234 tokens"
    assert parse_startup_log(line)["kv_cache_tokens"] == 1234
    p = parse_log_prefix(line)
    assert p is not None and p["time"] == "12:34:56.789" and p["file"] == "kv_cache_utils.py"
    assert parse_log_prefix("INFO 2025-07-31 12:34:56,789 [x.py:1] hi")["date"] == "07-31"


def test_several_starts_weights_from_the_last():
    log = ("INFO 10-14 10:12:00 llm_engine.py:237] Initializing an LLM engine (v0.6.3) with config: model='a'\n"
           "INFO 10-14 10:12:05 model_runner.py:1071] Loading model weights took 12.5513 GB\n"
           "INFO 10-14 11:12:00 llm_engine.py:237] Initializing an LLM engine (v0.6.3) with config: model='b'\n"
           "INFO 10-14 11:12:05 model_runner.py:1071] Loading model weights took 6.2757 GB\n")
    d = parse_startup_log(log)
    assert d["weights_gib"] == 6.2757 and d["draft_weights_gib"] is None  # a restart is not a draft model
    assert d["engine_config"] == {"model": "b"}


@pytest.mark.parametrize("line", [
    "INFO 01-01 00:00:00 [gpu_model_runner.py:1] Model loading took 15.27 GB of memory",  # changed wording
    "INFO 01-01 00:00:00 [kv_cache_utils.py:1] GPU KV cache size: unknown tokens",
    "INFO 01-01 00:00:00 [gpu_worker.py:1] Available KV cache memory: 12 TiB",
    "INFO 01-01 00:00:00 [executor.py:1] # GPU blocks: twelve",
    "INFO 01-01 00:00:00 openvino_executor.py:90] OpenVINO CPU: # device blocks: 100; # swap blocks: 0",
])
def test_unknown_format_is_unparsed_not_a_number(line):
    d = parse_startup_log(line)
    assert d["unparsed"] == [line]
    assert all(d[k] is None for k in LOG_FIELDS if k != "unparsed")


def test_result_is_json_serialisable():
    import json

    s = read_startup_log("(VllmWorkerProcess pid=1) INFO 10-14 10:12:05 model_runner.py:1071] Loading model "
                         "weights took 12.5513 GB")
    d = json.loads(json.dumps(s.as_dict()))
    assert d["occurrences"][0]["worker"] == "VllmWorkerProcess pid=1"
    assert d["occurrences"][0]["values"] == {"weights_gib": LLAMA2_7B_GIB}




def test_kv_memory_min_is_taken_within_the_last_start():
    # A failed start (-0.53 GiB) then a restart in the same log that fits (51.47 GiB): the headline is the
    # restart's figure and no failure is reported (the restart printed its KV cache size after the error).
    init = "INFO 08-01 10:00:00 [core.py:70] Initializing a V1 LLM engine (v0.10.0) with config: model='m'\n"
    log = (init + "INFO 08-01 10:00:10 [gpu_worker.py:255] Available KV cache memory: -0.53 GiB\n"
           "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
           "initializing the engine.\n"
           + init + "INFO 08-01 10:05:10 [gpu_worker.py:255] Available KV cache memory: 51.47 GiB\n"
           "INFO 08-01 10:05:11 [kv_cache_utils.py:833] GPU KV cache size: 421,600 tokens\n")
    d = parse_startup_log(log)
    assert d["available_kv_cache_gib"] == 51.47 and d["available_kv_cache_gib_per_worker"] == [51.47]
    assert d["failure_reason"] is None
    assert [o["values"]["kv_gib"] for o in d["occurrences"] if o["pattern"] == "available_kv"] == [-0.53, 51.47]


def test_v064_tinyllama_h200_numbers_are_consistent():
    # A 0.6.4 start of TinyLlama-1.1B (config.json: 22 layers, 4 KV heads, head_dim 64, bf16) on one H200
    # (139.80 GiB as torch reports it), lines from the 0.6.4 format strings (worker/worker.py:233,
    # executor/gpu_executor.py:113/117). By hand: kv = 139.80 * 0.90 - (2.38 + 0.73) = 122.71 GiB; a 16-token
    # block is 22 * 4 * 64 * 2 (K,V) * 2 B * 16 = 360,448 B; 365,549 blocks * 360,448 B = 122.7124 GiB, which
    # "%.2f" prints as 122.71 (any count in 122.705..122.715 GiB / 360,448 B = 365,527..365,557 would);
    # concurrency = 365,549 * 16 / 2048 = 2855.85.
    d = parse_startup_log(
        "INFO 04-28 04:07:51 worker.py:232] Memory profiling results: total_gpu_memory=139.80GiB "
        "initial_memory_usage=2.71GiB peak_torch_memory=2.38GiB memory_usage_post_profile=2.81Gib "
        "non_torch_memory=0.73GiB kv_cache_size=122.71GiB gpu_memory_utilization=0.90\n"
        "INFO 04-28 04:07:52 gpu_executor.py:113] # GPU blocks: 365549, # CPU blocks: 11915\n"
        "INFO 04-28 04:07:52 gpu_executor.py:117] Maximum concurrency for 2048 tokens per request: 2855.85x\n")
    assert d["available_kv_cache_gib"] == 122.71 == pytest.approx(139.80 * 0.90 - (2.38 + 0.73))
    block_b = 22 * 4 * 64 * 2 * 2 * 16
    assert d["num_gpu_blocks"] == 365549
    assert 122.705 * 2**30 // block_b <= d["num_gpu_blocks"] <= 122.715 * 2**30 // block_b
    assert d["max_concurrency"] == pytest.approx(365549 * 16 / 2048, abs=0.005)


def test_published_ray_log_vllm_issue_12773():
    # Lines as published in https://github.com/vllm-project/vllm/issues/12773 (DeepSeek-R1 on MI300A nodes,
    # V0 with Ray; worker/model_runner.py "Loading model weights took %.4f GB" with / float(2**30)).
    log = ("INFO 02-05 09:11:53 model_runner.py:1118] Loading model weights took 18.4303 GB\n"
           "(RayWorkerWrapper pid=1039658) INFO 02-05 09:11:53 model_runner.py:1118] Loading model weights took "
           "18.4303 GB\n"
           "(RayWorkerWrapper pid=394715, ip=10.65.144.3) DEBUG 02-05 09:08:18 shm_broadcast.py:282] Connecting to "
           "tcp://127.0.0.1:49717 [repeated 23x across cluster]\n"
           "(RayWorkerWrapper pid=394716, ip=10.65.144.3) INFO 02-05 09:08:19 rocm.py:121] Using Triton MLA "
           "backend. [repeated 31x across cluster]\n")
    s = read_startup_log(log)
    assert s.facts["weights_gib"] == 18.4303 and s.facts["weights_gib_per_worker"] == [18.4303, 18.4303]
    assert [o.worker for o in s.occurrences] == [None, "RayWorkerWrapper pid=1039658"]
    assert s.unparsed == [] and s.facts["failure_reason"] is None
    assert parse_log_prefix(log.splitlines()[3])["message"] == "Using Triton MLA backend."


def test_published_v1_lines_vllm_issue_21348():
    # Lines as published in https://github.com/vllm-project/vllm/issues/21348 (Qwen3-235B-A22B-FP8, TP=4, V1):
    # v1/worker/gpu_worker.py "Available KV cache memory: %.2f GiB", v1/core/kv_cache_utils.py
    # "GPU KV cache size: %s tokens" (f"{n:,}").
    d = parse_startup_log("Available KV cache memory: 8.11 GiB\nGPU KV cache size: 178,880 tokens\n")
    assert d["available_kv_cache_gib"] == 8.11 and d["kv_cache_tokens"] == 178880 and d["kv_device"] == "GPU"


@pytest.mark.parametrize("device", ["cuda", "rocm"])
def test_v073_to_011_device_name_blocks(device):
    # 0.7.3-0.11 executor/executor_base.py: "# %s blocks: %d, # CPU blocks: %d" with current_platform.device_name
    # ("cuda" in platforms/cuda.py, "rocm" in platforms/rocm.py).
    d = parse_startup_log(f"INFO 09-01 10:00:00 [executor_base.py:114] # {device} blocks: 11180, # CPU blocks: 4096")
    assert d["kv_device"] == device and d["num_gpu_blocks"] == 11180 and d["num_cpu_blocks"] == 4096


def test_engine_report_names_a_failed_start_as_the_reason():
    from pytest_roofline.measure.engine._report import build_report

    log = parse_startup_log("INFO 08-01 10:00:10 [gpu_worker.py:255] Available KV cache memory: -0.53 GiB\n"
                            "ValueError: No available memory for the cache blocks. Try increasing "
                            "`gpu_memory_utilization` when initializing the engine.\n")
    rep = build_report(log=log, log_reason=None, metrics=None, metrics_reason="engine not running",
                       version=None, version_source=None, max_model_len=None, configured_block_size=16)
    assert "-0.53 GiB" in rep["reasons"]["kv_cache_tokens"]


def test_a_failed_start_names_the_workers_exception_not_the_re_raise():
    """Trial s25c #8: vLLM 0.32's CPU engine refused block_size 100 in a worker; the log ends with the engine core's
    and the API server's re-raises ("Engine core initialization failed. See root cause above"), and the cause reached
    the terminal 0 times. The lines are the real log's (its process prefixes and headers)."""
    log = "\n".join([
        "(APIServer pid=25347) WARNING 12-07 21:23:39 [system_utils.py:255] Found ulimit of 20000 and failed to "
        "automatically increase with error current limit exceeds maximum limit. This can cause fd limit errors like "
        "`OSError: [Errno 24] Too many open files`. Consider increasing with ulimit -n",
        "(Worker pid=25373) ERROR 12-07 21:23:55 [multiproc_executor.py:1063]     raise ValueError(",
        "(Worker pid=25373) ERROR 12-07 21:23:55 [multiproc_executor.py:1063] ValueError: No common block size for "
        "100 (CPU_ATTN: [MultipleOf(32)]).",
        "(EngineCore pid=25360) ERROR 12-07 21:23:55 [core.py:1510] RuntimeError: Worker failed with error 'No common "
        "block size for 100 (CPU_ATTN: [MultipleOf(32)]).', please check the stack trace above for the root cause",
        "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
    ])
    assert startup_failure_reason(log) == "ValueError: No common block size for 100 (CPU_ATTN: [MultipleOf(32)])."
    pydantic = ("Traceback (most recent call last):\n"
                "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig\n"
                "  Value error, User-specified max_model_len (8192) is greater than the derived max_model_len\n"
                "    For further information visit https://errors.pydantic.dev/2.14/v/value_error\n")
    assert startup_failure_reason(pydantic) == (
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig Value error, "
        "User-specified max_model_len (8192) is greater than the derived max_model_len")
    only_wrapper = "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}"
    assert startup_failure_reason(only_wrapper) == only_wrapper
