"""Parse a vLLM startup log for what the engine said about its KV cache and memory, vLLM 0.4 to the newest.

Every format below is one of vLLM's own format strings, cited next to its regex with the versions and the
source file that prints it, as published in vLLM's source distributions of those versions (the sdists on
PyPI, ``vllm-<version>.tar.gz``; the same paths at the git tag ``v<version>`` of github.com/vllm-project/vllm).

**GB vs GiB.** Old vLLM prints "GB" but divides by ``2**30``: ``"Loading model weights took %.4f GB",
self.model_memory_usage / float(2**30)`` (vllm/worker/model_runner.py, 0.4.1-0.7.3, and
vllm/v1/worker/gpu_model_runner.py 0.6.4-0.7.3), ``"Model loading took %.4f GB and %.6f seconds"`` with the same
``/ float(2**30)`` (0.8.0, both runners), and the V1 "KV cache is needed" error ``/1024/1024/1024`` labelled "GB"
(vllm/v1/core/kv_cache_utils.py 0.7.x-0.8.x). So every "GB" value here *is* GiB and is stored as printed, under
a ``*_gib`` name. No vLLM format read here divides by 1e9.

**Line prefix** (vllm/logger.py ``_FORMAT``; the parser does not anchor on it):

- 0.4-0.7.3: ``INFO 07-31 12:34:56 worker.py:249] msg`` (``%(filename)s:%(lineno)d]``, no ``[``)
- 0.8-0.10: ``INFO 07-31 12:34:56 [worker.py:249] msg``; 0.11: ``[%(fileinfo)s:%(lineno)d]`` (a path may show)
- later (0.32 / 0.33): ``(EngineCore_DP0 pid=123) INFO 07-31 12:34:56 [kv_cache_utils.py:2327] msg``
- a multiprocessing worker's ``(VllmWorkerProcess pid=12) `` (V0, vllm/executor/multiproc_worker_utils.py
  ``_add_prefix``, on every line it writes, continuation lines included), ``(VllmWorker rank=0 pid=12) ``
  (V1 0.10, v1/executor/multiproc_executor.py), Ray's ``(RayWorkerWrapper pid=123, ip=10.0.0.1) `` and its log
  deduplication suffix `` [repeated 3x across cluster]``; milliseconds (``12:34:56.789``) or a leading
  container timestamp from a custom logging config. ANSI colour codes are stripped first.

**Repeated lines.** Every match is kept as an :class:`Occurrence` (pattern, worker, values, line number), so
per-worker and target-vs-draft values are never lost. The headline value of each fact follows one rule:

- KV memory per worker (``available_kv_cache_gib``): the minimum over the reports of the last engine start
  (V1 "Available KV cache memory", V0 0.6.5+ "the rest of the memory reserved for KV Cache", 0.6.4
  "kv_cache_size="; an engine start begins at each "Initializing ... LLM engine" line): vLLM sizes the
  cache for the tightest worker (V0 executor/distributed_gpu_executor.py ``determine_num_available_blocks`` takes
  the ``min`` over workers; V1 v1/core/kv_cache_utils.py ``unify_kv_cache_configs`` gives every worker the
  minimum block count, 0.10).
- Weights (``weights_gib``): each "Initializing ... LLM engine" line starts a new engine start; within the last
  start that loaded a model, a worker's first load is the target model and its later loads are draft models
  (speculative decoding loads the draft after the target). The headline is the first worker's target load;
  ``weights_gib_per_worker`` lists every worker's target load, ``draft_weights_gib`` the first draft load.
- Everything printed once per engine (KV tokens, blocks, concurrency, times, version): the last occurrence
  (a log holding several starts is read as its last start).

**Failed starts.** A negative KV memory (``Available KV cache memory: -0.53 GiB``), ``No available memory for
the cache blocks`` and the "larger than the available KV cache memory" / "larger than the maximum number of
tokens that can be stored in KV cache" errors become ``failure_reason``, a sentence naming the numbers.

**Unknown formats.** A line that carries one of the anchors of the formats above (e.g. "KV cache size:",
"Model loading took") but matches no pattern is listed in ``unparsed``; no number is read from it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pytest_roofline.units import parse_printed_number as parse_number  # "2,097,152" -> 2097152

__all__ = [
    "parse_startup_log",
    "read_startup_log",
    "startup_failure_reason",
    "first_exception",
    "parse_log_prefix",
    "parse_number",
    "LOG_FIELDS",
    "Occurrence",
    "StartupLog",
    "workers_seen",
]

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

# One "(name pid=N)" or Ray's "(name pid=N, ip=A.B.C.D)" process prefix; name may hold spaces ("VllmWorker rank=0").
_PROC = r"\((?P<pname>[^()]*?)pid=(?P<ppid>\d+)(?:, ip=(?P<pip>[0-9A-Fa-f.:]+))?\)"
_PROC_RE = re.compile(_PROC)
_PROC_NC = r"\([^()]*?pid=\d+(?:, ip=[0-9A-Fa-f.:]+)?\)"  # the same, without groups
_PROCS = r"(?:" + _PROC_NC + r"\s*)*"

# [junk] [(proc pid=N) ...] LEVEL [YYYY-]MM-DD HH:MM:SS[.mmm] [file.py:line] message
_PREFIX = re.compile(
    r"^(?P<before>.*?)"
    r"(?P<procs>" + _PROCS + r")"
    r"(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+"
    r"(?:\d{4}-)?(?P<date>\d\d-\d\d)\s+(?P<time>\d\d:\d\d:\d\d(?:[.,]\d{1,6})?)\s+"
    r"\[?(?P<file>[\w./-]+):(?P<lineno>\d+)\]\s?"
    r"(?P<message>.*)$"
)
# A continuation line of a multi-line message, behind a worker prefix only (no level, no time).
_PROC_ONLY = re.compile(r"^\s*(?P<procs>(?:" + _PROC_NC + r"\s*)+)(?P<message>.*)$")
# Ray's log deduplication (ray/_private/ray_logging.py LogDeduplicator): "... [repeated 3x across cluster]".
_REPEATED = re.compile(r"\s*\[repeated (\d+)x across cluster\]\s*$")

_MAX_LINE = 400  # matched lines are kept, cut to this length (the config line is kilobytes)
_NUM = r"(\d[\d,]*(?:\.\d+)?)"  # 2,097,152 | 2048.00 | 56.34
_FLOAT = r"(\d+(?:\.\d+)?)"  # vLLM: "([\d.]+) GiB" covers both %.2f and format_gib
_SFLOAT = r"(-?\d+(?:\.\d+)?)"  # memory figures that go negative on a failed start
_GIB = r" ?(?:GiB|GB|Gib)"  # every one of these is a GiB figure (module docstring)

# name -> compiled regex. Searched anywhere in the message (not anchored unless the format is a whole line).
_PATTERNS: dict[str, re.Pattern[str]] = {
    # vLLM V1 0.8.0-0.27: "GPU KV cache size: %s tokens" (own line; v1/core/kv_cache_utils.py); 0.28-0.29: same
    # text followed by ", Maximum concurrency ..." on one line; 0.30+: "%s KV cache size: %s tokens, ..."
    # with %s = "GPU" for cuda else device_type.upper() (so "CPU"), optionally + " + host".
    "kv_cache_size": re.compile(
        r"(?P<device>[A-Za-z]+(?: \+ host)?) KV cache size: " + _NUM + r" tokens"
    ),
    # vLLM: "Maximum concurrency for %s tokens per request: %.2fx" — V0 0.6.3-0.6.6 executor/gpu_executor.py,
    # 0.7-0.11 executor/executor_base.py and V1 0.7.2-0.7.3 v1/core/kv_cache_utils.py pass max_model_len
    # unformatted ("2048"); V1 0.8+ passes f"{max_model_len:,}" ("2,048").
    "max_concurrency": re.compile(
        r"Maximum concurrency for " + _NUM + r" tokens per request: " + _NUM + r"x"
    ),
    # vLLM V0 0.4.1: f"# GPU blocks: {n}, # CPU blocks: {m}" (executor/gpu_executor.py, ray_gpu_executor.py);
    # 0.4.3-0.6.6: "# GPU blocks: %d, # CPU blocks: %d" (gpu_executor.py, distributed_gpu_executor.py; "# TPU",
    # "# HPU" on those backends); "# %s blocks: %d, # CPU blocks: %d" in executor/executor_base.py with
    # current_platform.dispatch_key in 0.7.0-0.7.2 ("# CUDA blocks: ...") and .device_name in 0.7.3-0.11
    # ("# cuda blocks: ...", "# rocm blocks: ..."; vllm/platforms/cuda.py, rocm.py).
    "v0_blocks": re.compile(
        r"# (?P<device>\w+) blocks: (?P<dev_blocks>\d+), # CPU blocks: (?P<cpu_blocks>\d+)"
    ),
    # vLLM early V1: "# GPU blocks: %d" with no CPU part — 0.6.4 v1/executor/gpu_executor.py, 0.6.5-0.6.6
    # v1/executor/uniproc_executor.py and ray_executor.py, 0.7.0-0.7.3 v1/core/kv_cache_utils.py.
    "v1_gpu_blocks": re.compile(r"^# GPU blocks: (?P<dev_blocks>\d+)\s*$"),
    # vLLM V0 CPU / OpenVINO executors 0.4-0.6: "# CPU blocks: %d" (executor/cpu_executor.py).
    "v0_cpu_blocks": re.compile(r"^# CPU blocks: (?P<cpu_blocks>\d+)\s*$"),
    # vLLM V1 stat logger: "vllm cache_config_info with initialization after num_gpu_blocks is: %d" (0.9.0
    # v1/metrics/loggers.py); "Engine %03d: vllm cache_config_info ..." from 0.9.2 on.
    "cache_config_info_log": re.compile(
        r"(?:Engine (?P<engine>\d+): )?vllm cache_config_info with initialization after num_gpu_blocks is: "
        r"(?P<blocks>\d+)"
    ),
    # vLLM V1: "Available KV cache memory: %.2f GiB" (v1/worker/gpu_worker.py 0.9.2-0.13), "%s GiB" format_gib
    # (0.14+). Negative when weights + activations exceed the budget (the start then fails).
    "available_kv": re.compile(r"Available KV cache memory: " + _SFLOAT + r" GiB"),
    # vLLM V0 0.6.5-0.10 (worker/worker.py determine_num_available_blocks), one multi-line message:
    #   "Memory profiling takes %.2f seconds\n"
    #   "the current vLLM instance can use total_gpu_memory (%.2fGiB) x gpu_memory_utilization (%.2f) = %.2fGiB\n"
    #   "model weights take %.2fGiB; non_torch_memory takes %.2fGiB; PyTorch activation peak memory takes
    #    %.2fGiB; the rest of the memory reserved for KV Cache is %.2fGiB."   (all / GiB_bytes = 1 << 30)
    "memory_profiling_time": re.compile(r"Memory profiling takes " + _FLOAT + r" seconds"),
    "v0_instance_budget": re.compile(
        r"the current vLLM instance can use total_gpu_memory \(" + _FLOAT + _GIB + r"\) x gpu_memory_utilization"
        r" \(" + _FLOAT + r"\) = " + _FLOAT + _GIB
    ),
    "v0_memory_profile": re.compile(
        r"model weights take " + _SFLOAT + _GIB + r"; non_torch_memory takes " + _SFLOAT + _GIB
        + r"; PyTorch activation peak memory takes " + _SFLOAT + _GIB
        + r"; the rest of the memory reserved for KV Cache is " + _SFLOAT + _GIB
    ),
    # vLLM 0.6.4 only (worker/worker.py): "Memory profiling results: total_gpu_memory=%.2fGiB
    # initial_memory_usage=%.2fGiB peak_torch_memory=%.2fGiB memory_usage_post_profile=%.2fGib
    # non_torch_memory=%.2fGiB kv_cache_size=%.2fGiB gpu_memory_utilization=%.2f" (/ 1024**3; "Gib" sic).
    "v064_memory_profile": re.compile(
        r"Memory profiling results: total_gpu_memory=" + _FLOAT + _GIB
        + r" initial_memory_usage=" + _SFLOAT + _GIB + r" peak_torch_memory=" + _SFLOAT + _GIB
        + r" memory_usage_post_profile=" + _SFLOAT + _GIB + r" non_torch_memory=" + _SFLOAT + _GIB
        + r" kv_cache_size=" + _SFLOAT + _GIB + r" gpu_memory_utilization=" + _FLOAT
    ),
    # vLLM "Model loading took %.4f GB and %.6f seconds" (0.8.0 worker/model_runner.py and
    # v1/worker/gpu_model_runner.py; value / float(2**30): GiB), "%.4f GiB and %.6f seconds" (0.8.1-0.11),
    # "... GiB memory and ..." (0.12+), format_gib in 0.14+.
    "model_loading": re.compile(
        r"Model loading took " + _SFLOAT + _GIB + r"(?: memory)? and " + _FLOAT + r" ?s(?:econds)?"
    ),
    # vLLM V0 "Loading model weights took %.4f GB" (worker/model_runner.py 0.4.1-0.7.3 — f-string in 0.4.1 —
    # and v1/worker/gpu_model_runner.py 0.6.4-0.7.3; value / float(2**30): GiB); "... %.4f GiB" in
    # worker/xpu_model_runner.py 0.8.5+.
    "v0_loading_model_weights": re.compile(r"Loading model weights took " + _SFLOAT + _GIB + r"\s*$"),
    # vLLM: "Loading weights took %.2f seconds" (model_executor/model_loader/default_loader.py).
    "loading_weights": re.compile(r"Loading weights took " + _FLOAT + r" ?s(?:econds)?"),
    # vLLM V0 0.4.1-0.6.3: "Graph capturing finished in %.0f secs." (worker/model_runner.py, no size);
    # 0.6.4+: "Graph capturing finished in %.0f secs, took %.2f GiB" (model_runner.py, gpu_model_runner.py).
    "graph_capture": re.compile(
        r"Graph capturing finished in " + _FLOAT + r" secs?(?:, took " + _SFLOAT + r" GiB|\.)"
    ),
    # vLLM (0.18+): "Estimated CUDA graph memory: %.2f GiB total".
    "cudagraph_estimate": re.compile(r"Estimated CUDA graph memory: " + _FLOAT + r" GiB total"),
    # vLLM CPU 0.20+ (v1/worker/cpu_worker.py): "Explicitly set (X/Y) GiB for KV cache on node N."
    # and "Auto set (X/Y) GiB for KV cache on node N, with Z GiB requested memory for the worker. ..."
    "cpu_kv_set": re.compile(
        r"(?P<mode>Explicitly|Auto) set \(" + _FLOAT + r"/" + _FLOAT
        + r"\) GiB for KV cache on node (?P<node>\d+)"
        r"(?:, with (?P<requested>\d+(?:\.\d+)?) GiB requested memory for the worker\."
        r" (?P<consumed>\d+(?:\.\d+)?) GiB memory was consumed by non-kv usages)?"
    ),
    # vLLM CPU 0.13-0.19: "VLLM_CPU_KVCACHE_SPACE not set. Using %s GiB for KV cache."
    "cpu_kv_default": re.compile(
        r"VLLM_CPU_KVCACHE_SPACE not set\. Using " + _FLOAT + r" GiB for KV cache"
    ),
    # vLLM CPU 0.10-0.12 WARNING: "Environment variable VLLM_CPU_KVCACHE_SPACE (GiB) for CPU
    # backend is not set, using 4 by default."
    "cpu_kv_default_old": re.compile(
        r"VLLM_CPU_KVCACHE_SPACE \(GiB\) for CPU backend is not set, using "
        + _FLOAT + r" by default"
    ),
    # vLLM: "init engine (profile, create kv cache, warmup model) took %.2f seconds" (V0 engine/llm_engine.py
    # and V1 v1/engine/core.py 0.6.5-0.10), "... took %.2f s" [+ " (compilation: %.2f s ...)"] later.
    "init_engine": re.compile(
        r"init engine \(profile, create kv cache, warmup model\) took " + _FLOAT
        + r" ?s(?:econds)?(?: \(compilation: " + _FLOAT + r" ?s)?"
    ),
    # Version: V0 "Initializing an LLM engine (v%s) with config: model=%r, ..." (engine/llm_engine.py
    # 0.4.1-0.6.6; 0.4.1 f-string), "Initializing a V0 LLM engine (v%s) with config: %s, ..." (llm_engine.py
    # 0.7.0-0.10); V1 "Initializing an LLM engine (v%s) with config: %s" (v1/engine/core.py 0.6.4-0.6.6),
    # "Initializing a V1 LLM engine (v%s) with config: %s" (core.py 0.7.0+); "vLLM API server version %s",
    # "vLLM server version %s, serving model %s" and the start-up banner "... version 0.32.0".
    "version": re.compile(
        r"(?:Initializing an? (?P<gen>V[01] )?LLM engine \(v?(?P<v1>[0-9][\w.+-]*)\)"
        r"|vLLM (?:API )?server version (?P<v2>[0-9][\w.+-]*?)(?:,|\s|$)"
        r"|█\s+version\s+(?P<v3>[0-9][\w.+-]*))"
    ),
    # Failed starts. "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` ..."
    # (V0 worker/worker.py 0.4-0.10 raise_if_cache_size_invalid, V1 v1/worker/gpu_worker.py 0.6.4-0.6.6,
    # v1/core/kv_cache_utils.py check_enough_kv_cache_memory 0.7+), usually inside "ValueError: ...".
    "no_cache_memory": re.compile(r"No available memory for the cache blocks"),
    # V1 kv_cache_utils.py: "To serve at least one request with the models's max seq len (%d), (%.2f GB KV cache
    # is needed, which is larger than the available KV cache memory (%.2f GB)." (0.7-0.8, /1024/1024/1024),
    # "... GiB ..." (/GiB_bytes, 0.9+; "model's" in later versions, format_gib 0.14+).
    "kv_too_small": re.compile(
        r"max seq len \((?P<max_len>\d+)\), \(" + _SFLOAT + _GIB
        + r" KV cache is needed, which is larger than the available KV cache memory \(" + _SFLOAT + _GIB + r"\)"
    ),
    # V0 worker/worker.py (and V1 gpu_worker.py 0.6.4-0.6.6): "The model's max seq len (%d) is larger than the
    # maximum number of tokens that can be stored in KV cache (%d). Try increasing `gpu_memory_utilization` ..."
    "kv_too_small_v0": re.compile(
        r"max seq len \((?P<max_len>\d+)\) is larger than the maximum number of tokens that can be stored in "
        r"KV cache \((?P<tokens>\d+)\)"
    ),
}

# A literal each pattern's match contains: a cheap test before the regex runs (kilobyte-long lines stay fast).
_NEEDS: dict[str, str] = {
    "kv_cache_size": "KV cache size: ", "max_concurrency": "Maximum concurrency for ", "v0_blocks": " blocks: ",
    "v1_gpu_blocks": "# GPU blocks: ", "v0_cpu_blocks": "# CPU blocks: ", "cache_config_info_log": "cache_config_info",
    "available_kv": "Available KV cache memory: ", "memory_profiling_time": "Memory profiling takes ",
    "v0_instance_budget": "the current vLLM instance", "v0_memory_profile": "model weights take ",
    "v064_memory_profile": "Memory profiling results: ", "model_loading": "Model loading took ",
    "v0_loading_model_weights": "Loading model weights took ", "loading_weights": "Loading weights took ",
    "graph_capture": "Graph capturing finished", "cudagraph_estimate": "Estimated CUDA graph memory",
    "cpu_kv_set": "for KV cache on node", "cpu_kv_default": "VLLM_CPU_KVCACHE_SPACE not set",
    "cpu_kv_default_old": "VLLM_CPU_KVCACHE_SPACE (GiB)", "init_engine": "init engine (", "version": "",  # "" = always
    "no_cache_memory": "No available memory", "kv_too_small": "KV cache is needed", "kv_too_small_v0": "stored in KV",
}

# A message holding one of these looks like a format above; if no pattern reads it, it is reported unparsed.
_ANCHORS = re.compile(
    r"KV cache size:|# \w+ blocks:|Maximum concurrency for|Available KV cache memory|Model loading took"
    r"|Loading model weights took|Graph capturing finished|reserved for KV Cache|Memory profiling results"
    r"|the current vLLM instance can use|cache_config_info with initialization|LLM engine \(v"
    r"|No available memory for the cache|KV cache is needed|stored in KV cache \("
)

# Config fields read from the engine-init line ("key=value, "): VllmConfig.__str__ (config.py 0.7+) and the
# V0 0.4-0.6 format string in engine/llm_engine.py both print these names.
_CONFIG_KEYS = ("model", "dtype", "max_seq_len", "tensor_parallel_size", "pipeline_parallel_size",
                "quantization", "kv_cache_dtype", "enable_prefix_caching", "chunked_prefill_enabled",
                "enforce_eager", "speculative_config")
_CONFIG_RE = re.compile(r"(?<![\w.])(" + "|".join(_CONFIG_KEYS)
                        + r")=('[^']*'|\"[^\"]*\"|[\w.]+\([^()]*\)|[^,\s)]+)")

LOG_FIELDS = (
    "version",
    "engine",
    "engine_config",
    "kv_device",
    "kv_cache_tokens",
    "kv_includes_host",
    "num_gpu_blocks",
    "num_gpu_blocks_reported",
    "num_cpu_blocks",
    "max_concurrency",
    "max_concurrency_tokens_per_request",
    "available_kv_cache_gib",
    "available_kv_cache_gib_per_worker",
    "cpu_kv_cache_gib",
    "cpu_kv_cache_mode",
    "cpu_node_total_gib",
    "weights_gib",
    "weights_gib_per_worker",
    "draft_weights_gib",
    "weights_load_s",
    "loading_weights_s",
    "profile_weights_gib",
    "non_torch_memory_gib",
    "activation_peak_gib",
    "total_gpu_memory_gib",
    "gpu_memory_utilization",
    "memory_profiling_s",
    "graph_capture_s",
    "graph_capture_gib",
    "cudagraph_estimate_gib",
    "init_engine_s",
    "compilation_s",
    "failure_reason",
    "unparsed",
)


@dataclass(frozen=True)
class Occurrence:
    """One matched line: which format, which worker printed it, and the values read from it.

    ``worker`` is the innermost process prefix (``"VllmWorkerProcess pid=77"``, ``"RayWorkerWrapper pid=5,
    ip=10.0.0.2"``) or None for the unprefixed driver process. ``repeated`` is Ray's "[repeated Nx across
    cluster]" count: N more workers printed a line like it, whose values Ray did not show. ``engine_start`` counts
    the "Initializing ... LLM engine" lines seen before this one (0 before the first)."""

    pattern: str
    values: dict[str, Any]
    worker: str | None
    lineno: int
    repeated: int = 0
    engine_start: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"pattern": self.pattern, "values": dict(self.values), "worker": self.worker,
                "lineno": self.lineno, "repeated": self.repeated, "engine_start": self.engine_start}


@dataclass
class StartupLog:
    """What a vLLM startup log said: the headline ``facts`` (every key of ``LOG_FIELDS``, None when not printed;
    rules in the module docstring), every ``occurrences`` in log order, the raw matched ``lines`` per pattern,
    and ``unparsed``: recognised-looking lines no pattern could read."""

    facts: dict[str, Any]
    occurrences: list[Occurrence] = field(default_factory=list)
    lines: dict[str, list[str]] = field(default_factory=dict)
    unparsed: list[str] = field(default_factory=list)

    @property
    def failure_reason(self) -> str | None:
        return self.facts.get("failure_reason")

    def values(self, pattern: str, key: str) -> list[Any]:
        """Every value ``key`` read from lines of ``pattern``, in log order."""
        return [o.values[key] for o in self.occurrences if o.pattern == pattern and key in o.values]

    def as_dict(self) -> dict[str, Any]:
        """The plain-dict form ``parse_startup_log`` returns (JSON-serialisable)."""
        d = dict(self.facts)
        d["lines"] = self.lines
        d["occurrences"] = [o.as_dict() for o in self.occurrences]
        return d


def _split(line: str) -> tuple[dict[str, Any] | None, str, str | None, int]:
    """(prefix fields or None, message, innermost worker, Ray repeat count) of one ANSI-stripped line."""
    repeated = 0
    rm = _REPEATED.search(line)
    if rm:
        repeated = int(rm.group(1))
        line = line[: rm.start()]
    m = _PREFIX.match(line)
    if m:
        d = m.groupdict()
        procs = list(_PROC_RE.finditer(d["procs"]))
        worker = None
        pre: dict[str, Any] = {
            "process": None, "pid": None, "level": d["level"], "date": d["date"], "time": d["time"],
            "file": d["file"], "lineno": int(d["lineno"]), "message": d["message"],
        }
        if procs:
            last = procs[-1]
            pre["process"], pre["pid"] = last.group("pname").strip(), int(last.group("ppid"))
            pre["ip"] = last.group("pip")
            worker = last.group(0)[1:-1]
        return pre, d["message"], worker, repeated
    m2 = _PROC_ONLY.match(line)
    if m2:
        procs = list(_PROC_RE.finditer(m2.group("procs")))
        return None, m2.group("message"), procs[-1].group(0)[1:-1], repeated
    return None, line, None, repeated


def parse_log_prefix(line: str) -> dict[str, Any] | None:
    """Split a vLLM log line into its prefix fields and message; None if it has no vLLM prefix.

    Keys: process, pid (the innermost "(name pid=N)" prefix, else None), level, date, time (as printed,
    milliseconds included), file, lineno, message."""
    pre, _msg, _worker, _rep = _split(_ANSI.sub("", line.rstrip("\r\n")))
    if pre is None:
        return None
    pre.pop("ip", None)
    return pre


def _values(name: str, m: re.Match[str]) -> dict[str, Any]:
    """The typed values of one match of pattern ``name``."""
    g = m.group
    if name == "kv_cache_size":
        dev = g("device")
        return {"device": dev.replace(" + host", ""), "tokens": parse_number(g(2)),
                "includes_host": dev.endswith(" + host")}
    if name == "max_concurrency":
        return {"tokens_per_request": parse_number(g(1)), "concurrency": float(parse_number(g(2)))}
    if name == "v0_blocks":
        return {"device": g("device"), "blocks": int(g("dev_blocks")), "cpu_blocks": int(g("cpu_blocks"))}
    if name == "v1_gpu_blocks":
        return {"device": "GPU", "blocks": int(g("dev_blocks"))}
    if name == "v0_cpu_blocks":
        return {"device": "CPU", "blocks": int(g("cpu_blocks"))}
    if name == "cache_config_info_log":
        return {"engine": int(g("engine")) if g("engine") else None, "blocks": int(g("blocks"))}
    if name == "available_kv":
        return {"kv_gib": float(g(1))}
    if name == "memory_profiling_time":
        return {"seconds": float(g(1))}
    if name == "v0_instance_budget":
        return {"total_gib": float(g(1)), "utilization": float(g(2)), "budget_gib": float(g(3))}
    if name == "v0_memory_profile":
        return {"weights_gib": float(g(1)), "non_torch_gib": float(g(2)), "activation_peak_gib": float(g(3)),
                "kv_gib": float(g(4))}
    if name == "v064_memory_profile":
        return {"total_gib": float(g(1)), "initial_gib": float(g(2)), "peak_torch_gib": float(g(3)),
                "post_profile_gib": float(g(4)), "non_torch_gib": float(g(5)), "kv_gib": float(g(6)),
                "utilization": float(g(7))}
    if name == "model_loading":
        return {"weights_gib": float(g(1)), "seconds": float(g(2))}
    if name == "v0_loading_model_weights":
        return {"weights_gib": float(g(1))}
    if name == "loading_weights":
        return {"seconds": float(g(1))}
    if name == "graph_capture":
        return {"seconds": float(g(1)), "gib": float(g(2)) if g(2) is not None else None}
    if name == "cudagraph_estimate":
        return {"gib": float(g(1))}
    if name == "cpu_kv_set":
        return {"mode": "explicit" if g("mode") == "Explicitly" else "auto", "kv_gib": float(g(2)),
                "node_total_gib": float(g(3))}
    if name in ("cpu_kv_default", "cpu_kv_default_old"):
        return {"mode": "default", "kv_gib": float(g(1))}
    if name == "init_engine":
        return {"seconds": float(g(1)), "compilation_s": float(g(2)) if g(2) else None}
    if name == "version":
        gen = (g("gen") or "").strip() or None
        return {"version": g("v1") or g("v2") or g("v3"), "engine": gen, "init": g("v1") is not None}
    if name == "no_cache_memory":
        return {}
    if name == "kv_too_small":
        return {"max_model_len": int(g("max_len")), "needed_gib": float(g(2)), "available_gib": float(g(3))}
    if name == "kv_too_small_v0":
        return {"max_model_len": int(g("max_len")), "kv_tokens": int(g("tokens"))}
    raise AssertionError(name)  # pragma: no cover


def _config_value(raw: str) -> Any:
    if raw[:1] in "'\"":
        return raw[1:-1]
    if raw in ("True", "False"):
        return raw == "True"
    if raw == "None":
        return None
    return int(raw) if raw.isdigit() else raw


# Patterns whose value is a per-worker KV-cache memory report, and the key holding it.
_KV_MEMORY = {"available_kv": "kv_gib", "v0_memory_profile": "kv_gib", "v064_memory_profile": "kv_gib"}
_WEIGHTS = ("model_loading", "v0_loading_model_weights")
_SUCCESS = ("kv_cache_size", "v0_blocks", "v1_gpu_blocks", "v0_cpu_blocks", "cache_config_info_log")
_FAILURE = ("no_cache_memory", "kv_too_small", "kv_too_small_v0")


def read_startup_log(text: str) -> StartupLog:
    """Read the KV-capacity and memory facts from a vLLM startup log (any version 0.4+); see the module docs."""
    f: dict[str, Any] = {k: None for k in LOG_FIELDS}
    occ: list[Occurrence] = []
    lines: dict[str, list[str]] = {}
    unparsed: list[str] = []
    start = 0
    engine_config: dict[str, Any] | None = None
    worker_of_last: str | None = None

    for i, raw in enumerate(text.splitlines(), 1):
        line = _ANSI.sub("", raw).rstrip()
        if not line:
            continue
        pre, msg, worker, repeated = _split(line)
        if pre is None and worker is None:
            worker = worker_of_last  # an unprefixed continuation line of the previous message
        elif pre is not None:
            worker_of_last = worker
        matched = False
        for name, pat in _PATTERNS.items():
            if _NEEDS[name] not in msg:
                continue
            m = pat.search(msg)
            if not m:
                continue
            matched = True
            lines.setdefault(name, []).append(line if len(line) <= _MAX_LINE else line[:_MAX_LINE] + " ...")
            vals = _values(name, m)
            if name == "version" and vals["init"]:
                start += 1
                if vals["engine"] is None and pre is not None:
                    # 0.6.4-0.6.6 V1 core.py and V0 llm_engine.py print the same words: the file tells them apart.
                    vals["engine"] = {"core.py": "V1", "llm_engine.py": "V0"}.get(pre["file"].rsplit("/", 1)[-1])
                cfg = {k: _config_value(v) for k, v in _CONFIG_RE.findall(msg[m.end():])}
                if cfg:
                    vals["config"] = cfg
                    engine_config = cfg
            occ.append(Occurrence(name, vals, worker, i, repeated, start))
        if not matched and _ANCHORS.search(msg):
            unparsed.append(line if len(line) <= _MAX_LINE else line[:_MAX_LINE] + " ...")

    for o in occ:  # last occurrence wins for once-per-engine facts
        for key, name in _FACTS.get(o.pattern, ()):
            if key in o.values and (o.values[key] or name != "engine"):  # a line without "V0"/"V1" keeps it
                f[name] = o.values[key]
    if f["engine"] is None and any(o.pattern == "v1_gpu_blocks" for o in occ):
        f["engine"] = "V1"  # "# GPU blocks: %d" with no CPU part is V1 only (0.6.4-0.7.3)
    f["engine_config"] = engine_config
    reported = [o.values["blocks"] for o in occ if o.pattern in _SUCCESS and "blocks" in o.values]
    f["num_gpu_blocks_reported"] = reported or None

    kv_occ = [o for o in occ if o.pattern in _KV_MEMORY]
    kv = [o.values[_KV_MEMORY[o.pattern]] for o in kv_occ if o.engine_start == kv_occ[-1].engine_start]
    if kv:
        f["available_kv_cache_gib"] = min(kv)
        f["available_kv_cache_gib_per_worker"] = kv

    loads = [o for o in occ if o.pattern in _WEIGHTS]
    if loads:
        seg = loads[-1].engine_start
        per_worker: dict[str | None, list[Occurrence]] = {}
        for o in loads:
            if o.engine_start == seg:
                per_worker.setdefault(o.worker, []).append(o)
        first = next(iter(per_worker.values()))
        f["weights_gib"] = first[0].values["weights_gib"]
        f["weights_load_s"] = first[0].values.get("seconds")
        f["weights_gib_per_worker"] = [w[0].values["weights_gib"] for w in per_worker.values()]
        drafts = [o for w in per_worker.values() for o in w[1:]]
        f["draft_weights_gib"] = drafts[0].values["weights_gib"] if drafts else None

    if f["kv_cache_tokens"] is not None and f["kv_includes_host"] is None:
        f["kv_includes_host"] = False
    f["failure_reason"] = _failure_reason(occ)
    f["unparsed"] = unparsed or None
    return StartupLog(facts=f, occurrences=occ, lines=lines, unparsed=unparsed)


#: which value of which line is which fact (``parse_startup_log``'s keys); a value a line does not carry is not set
_BLOCKS = (("device", "kv_device"), ("blocks", "num_gpu_blocks"), ("cpu_blocks", "num_cpu_blocks"))
_CPU_KV = (("mode", "cpu_kv_cache_mode"), ("kv_gib", "cpu_kv_cache_gib"), ("node_total_gib", "cpu_node_total_gib"))
_BUDGET = (("total_gib", "total_gpu_memory_gib"), ("utilization", "gpu_memory_utilization"))
_FACTS: dict[str, tuple[tuple[str, str], ...]] = {
    "kv_cache_size": (("device", "kv_device"), ("tokens", "kv_cache_tokens"), ("includes_host", "kv_includes_host")),
    "max_concurrency": (("tokens_per_request", "max_concurrency_tokens_per_request"),
                        ("concurrency", "max_concurrency")),
    "v0_blocks": _BLOCKS, "v1_gpu_blocks": _BLOCKS, "v0_cpu_blocks": _BLOCKS, "cache_config_info_log": _BLOCKS,
    "loading_weights": (("seconds", "loading_weights_s"),),
    "graph_capture": (("seconds", "graph_capture_s"), ("gib", "graph_capture_gib")),
    "cudagraph_estimate": (("gib", "cudagraph_estimate_gib"),),
    "cpu_kv_set": _CPU_KV, "cpu_kv_default": _CPU_KV, "cpu_kv_default_old": _CPU_KV,
    "init_engine": (("seconds", "init_engine_s"), ("compilation_s", "compilation_s")),
    "version": (("version", "version"), ("engine", "engine")),
    "memory_profiling_time": (("seconds", "memory_profiling_s"),),
    "v0_instance_budget": _BUDGET,
    "v064_memory_profile": (*_BUDGET, ("non_torch_gib", "non_torch_memory_gib")),
    "v0_memory_profile": (("weights_gib", "profile_weights_gib"), ("non_torch_gib", "non_torch_memory_gib"),
                          ("activation_peak_gib", "activation_peak_gib")),
}


def _failure_reason(occ: list[Occurrence]) -> str | None:
    """A sentence naming why the last start found no room for the KV cache; None when nothing says so."""
    ok_at = max((o.lineno for o in occ if o.pattern in _SUCCESS), default=0)
    after = [o for o in occ if o.lineno > ok_at]
    why: list[str] = []
    neg = [o.values[_KV_MEMORY[o.pattern]] for o in after if o.pattern in _KV_MEMORY
           and o.values[_KV_MEMORY[o.pattern]] <= 0]
    if neg:
        why.append(f"vLLM had {min(neg):.2f} GiB left for the KV cache after weights, activations and "
                   "non-torch memory (more than gpu_memory_utilization x total memory is already used)")
    for o in after:
        v = o.values
        if o.pattern == "kv_too_small":
            why.append(f"max_model_len {v['max_model_len']} needs {v['needed_gib']:.2f} GiB of KV cache, more "
                       f"than the {v['available_gib']:.2f} GiB available")
        elif o.pattern == "kv_too_small_v0":
            why.append(f"max_model_len {v['max_model_len']} is larger than the {v['kv_tokens']} tokens the KV "
                       "cache can hold")
    if not why and any(o.pattern == "no_cache_memory" for o in after):
        why.append("vLLM: No available memory for the cache blocks (try increasing gpu_memory_utilization)")
    seen: list[str] = []
    for w in why:  # one sentence per distinct reason (every worker prints its own)
        if w not in seen:
            seen.append(w)
    return "; ".join(seen) or None


def startup_failure_reason(text: str) -> str | None:
    """Why a vLLM start failed, read from its log: lack of KV-cache memory (a sentence with the numbers), else the
    first exception a process raised (:func:`first_exception`); None if the log says neither."""
    return read_startup_log(text).failure_reason or first_exception(text)


#: an exception as a traceback's last line prints it, after any process prefix and log header vLLM adds:
#: ``(Worker pid=25373) ERROR 12-07 21:23:55 [multiproc_executor.py:1063] ValueError: No common block size ...``
_EXCEPTION_LINE = re.compile(r"^(?:\([^)]*\)\s+)?(?:ERROR\s+\S+\s+\S+\s+\[[^\]]*\]\s+)?"
                             r"((?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception)): (\S.*)$")
#: the wrappers that only point back at the cause (vLLM's engine core and API server re-raise a worker's error)
_WRAPPERS = ("Engine core initialization failed", "Worker failed with error")


def first_exception(text: str, limit: int = 300) -> str | None:
    """The first exception a vLLM process raised, as ``Type: message`` (at most ``limit`` characters): the root
    cause, where the log's last lines hold the API server's re-raise of it ("Engine core initialization failed.
    See root cause above"). A startup that refused ``block_size: 100`` on the CPU engine ended its log with 60 lines
    of that re-raise, and the worker's ``ValueError: No common block size for 100 (CPU_ATTN: [MultipleOf(32)])``
    reached the terminal 0 times (trial s25c #8). A warning that quotes an exception name is not one."""
    wrapped: str | None = None
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = _EXCEPTION_LINE.match(line.strip())
        if not m:
            continue
        found = f"{m.group(1)}: {m.group(2).strip()}"
        nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if nxt and lines[i + 1].startswith("  ") and not nxt.startswith(("File ", "Traceback")):
            found += f" {nxt}"  # a message on the next line (pydantic)
        found = found if len(found) <= limit else found[:limit - 1] + "…"
        if not any(w in m.group(2) for w in _WRAPPERS):
            return found
        wrapped = wrapped or found
    return wrapped


def parse_startup_log(text: str) -> dict[str, Any]:
    """Read the KV-capacity and memory facts from a vLLM startup log, as a plain (JSON-serialisable) dict.

    Returns every key of ``LOG_FIELDS`` (None when not printed; rules for repeated lines in the module
    docstring), plus ``lines``: ``{pattern name: [matched line, ...]}`` (the raw lines, prefix included) and
    ``occurrences``: every match in log order (``Occurrence.as_dict``). ``kv_device`` is the word the log
    printed: ``"GPU"``, ``"CPU"`` (V1), or ``"cuda"``/``"GPU"`` (V0 "# <device> blocks" line). Before 0.30 the CPU
    backend also printed "GPU" (vLLM's kv_cache_utils.py)."""
    return read_startup_log(text).as_dict()


# --------------------------------------------------------------------------- the workers a startup log shows
#
# Which process prefixes are model workers (one per TP x PP rank of each data-parallel engine), as vLLM prints them:
#
# - V0 multiprocessing: ``(VllmWorkerProcess pid=N)`` (vllm/executor/multiproc_worker_utils.py, 0.4-0.10); the
#   rank-0 worker runs inside the engine process and prints without a prefix.
# - V1 multiprocessing: ``(VllmWorker rank=R pid=N)`` (0.8-0.9), ``(VllmWorker TP1 pid=N)`` (0.10), and in 0.11
#   and 0.32 ``(VllmWorker-R pid=N)`` (the multiprocessing.Process name ``f"VllmWorker-{rank}"``) then ``(Worker
#   pid=N)`` and, once the parallel groups exist, ``(Worker_PP1_TP0 pid=N)`` with a ``_DPd`` / ``_PPp`` / ``_TPt``
#   part for each dimension larger than 1 (WorkerProc.setup_proc_title_and_log_prefix in
#   vllm/v1/executor/multiproc_executor.py, read at v0.11.0 and v0.32.0).
# - Ray: ``(RayWorkerWrapper pid=N, ip=A)`` on every line a worker actor prints (Ray's log prefix; the ip is the
#   node's), deduplicated across the cluster unless ``RAY_DEDUP_LOGS=0``.
# - Every worker's rank, when it prints it: ``rank R in world size W is assigned as DP rank d, PP rank p, [PCP rank
#   c, ]TP rank t[, EP rank ...]`` (vllm/distributed/parallel_state.py, 0.8+; the PCP part is in 0.32, not in 0.11)
#   and ``world_size=W rank=R local_rank=L distributed_init_method=...`` (same file).
_WORKER_NAME = re.compile(r"^(?:VllmWorkerProcess|VllmWorker\b|VllmWorker-\d+|Worker(?:_|$)|RayWorkerWrapper)")
_NAME_RANK = re.compile(r"^VllmWorker(?:-| rank=)(\d+)\b")
_NAME_DIM = re.compile(r"(?:_| )(DP|PP|TP)(\d+)(?=_|\s|$)")
_ASSIGNED = re.compile(r"\brank (\d+) in world size (\d+) is assigned as DP rank (\d+), PP rank (\d+), "
                       r"(?:PCP rank \d+, )?TP rank (\d+)")
_INIT_RANK = re.compile(r"\bworld_size=(\d+) rank=(\d+) local_rank=(\d+) distributed_init_method=")


def workers_seen(text: str, *, tensor_parallel_size: int = 1, pipeline_parallel_size: int = 1) -> list[dict[str, Any]]:
    """The model workers a vLLM log shows, one dict per process: ``rank`` (the worker's index in its engine's
    data-parallel x pipeline x tensor grid, ``dp x PP x TP + pp x TP + tp``, when the log says it), ``dp_rank``,
    ``pp_rank``, ``tp_rank``, ``pid``, ``ip`` (Ray's node address; None for a local process), ``name`` (the prefix,
    e.g. ``"Worker_TP1"``; ``"driver"`` for the rank-0 worker inside a V0 engine process), ``executor``
    (``"mp"``, ``"ray"`` or ``"driver"``) and ``lineno`` (where it first appeared). Sorted by rank, unknown ranks
    last. The prefixes read are listed in the comment above."""
    tp, pp = max(1, int(tensor_parallel_size)), max(1, int(pipeline_parallel_size))
    found: dict[tuple[str | None, int | None], dict[str, Any]] = {}

    def entry(key: tuple[str | None, int | None], name: str, lineno: int) -> dict[str, Any]:
        w = found.get(key)
        if w is None:
            w = found[key] = {"rank": None, "dp_rank": None, "pp_rank": None, "tp_rank": None, "pid": key[1],
                              "ip": key[0], "name": name, "lineno": lineno,
                              "executor": "ray" if name.startswith("RayWorkerWrapper") or key[0] else
                              ("driver" if name == "driver" else "mp")}
        elif name.startswith(("Worker_", "VllmWorker ")):
            w["name"] = name  # the prefix that names the grid position ("Worker_TP1" over "VllmWorker-1")
        return w

    for i, raw in enumerate(text.splitlines(), 1):
        line = _ANSI.sub("", raw).rstrip()
        if not line:
            continue
        line = _REPEATED.sub("", line)
        pm = _PREFIX.match(line) or _PROC_ONLY.match(line)
        msg = pm.group("message") if pm else line
        procs = list(_PROC_RE.finditer(pm.group("procs"))) if pm else []
        w: dict[str, Any] | None = None
        if procs:
            last = procs[-1]
            name = last.group("pname").strip()
            if not _WORKER_NAME.match(name):
                continue  # the API server, an EngineCore, a bare Ray actor "(pid=N, ip=A)"
            w = entry((last.group("pip"), int(last.group("ppid"))), name, i)
            nr = _NAME_RANK.match(name)
            if nr and w["rank"] is None:
                w["rank"] = int(nr.group(1))
            for dim, n in _NAME_DIM.findall(name):
                w[{"DP": "dp_rank", "PP": "pp_rank", "TP": "tp_rank"}[dim]] = int(n)
        am = _ASSIGNED.search(msg)
        im = _INIT_RANK.search(msg) if am is None else None
        if (am or im) and w is None and pm is not None and not procs:
            w = entry((None, None), "driver", i)  # V0: rank 0 runs in the engine process, unprefixed
        if w is None:
            continue
        if am:
            w["rank"] = int(am.group(1))
            w["dp_rank"], w["pp_rank"], w["tp_rank"] = int(am.group(3)), int(am.group(4)), int(am.group(5))
        elif im and w["rank"] is None:
            w["rank"] = int(im.group(2))
    out = list(found.values())
    for w in out:
        if w["pp_rank"] is not None or w["tp_rank"] is not None:
            # the grid position wins over a printed rank: with data parallelism vLLM numbers ranks across engines
            w["rank"] = ((w["dp_rank"] or 0) * pp + (w["pp_rank"] or 0)) * tp + (w["tp_rank"] or 0)
    out.sort(key=lambda w: (w["rank"] is None, w["rank"] if w["rank"] is not None else 0, w["lineno"]))
    return out
