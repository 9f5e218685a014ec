"""Did the engine run what the prediction file says? Its self-report against the declared setup, after start.

The engine's ``/metrics`` ``vllm:cache_config_info`` carries its CacheConfig as labels (``block_size``,
``kv_cache_memory_bytes``, ``enable_prefix_caching``, ``gpu_memory_utilization``, ``cache_dtype``), and the CPU
build's startup log prints the KV space it took (``cpu_kv_cache_gib``); ``engine_report`` (``_report.build_report``)
keeps both under ``sources``. Every field the file declares and the engine reports is compared; a field either
side leaves out is not. Any difference is one error for the file (``measure.sweep`` raises it before the sweep),
naming the field, the declared and the applied value: the newcomer's ``cpu_kvcache_space: 1.5 GiB`` was run as
2 GiB while every KV verdict was checked against 1.5.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_roofline.model.engine_args import whole_arg_value
from pytest_roofline.units import GIB

__all__ = ["Difference", "applied_differences", "differences_text"]


@dataclass(frozen=True)
class Difference:
    """One declared setting the engine did not apply: its YAML field, what the file says, what the engine says."""

    field: str
    declared: str
    applied: str
    source: str  # where the applied value was read


def _bool(v: Any) -> bool | None:
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.strip().lower() in ("true", "false"):
        return v.strip().lower() == "true"
    return None


def _int(v: Any) -> int | None:
    try:
        return int(str(v))
    except (TypeError, ValueError):
        return None


def _float(v: Any) -> float | None:
    try:
        return float(str(v))
    except (TypeError, ValueError):
        return None


def _gib(n_bytes: float) -> str:
    return f"{n_bytes / GIB:g} GiB"


def applied_differences(engine: Mapping[str, Any], report: Mapping[str, Any] | None) -> list[Difference]:
    """The declared ``engine`` section (``Spec.engine``: ``cpu_kvcache_space`` in bytes, ``args``) against
    ``engine_report`` (its ``sources.metrics.cache_config`` labels and ``sources.log``)."""
    if not isinstance(report, Mapping):
        return []
    sources = report.get("sources") or {}
    cc = ((sources.get("metrics") or {}).get("cache_config") or {}) if isinstance(sources, Mapping) else {}
    log = (sources.get("log") or {}) if isinstance(sources, Mapping) else {}
    args = engine.get("args") or {}
    out: list[Difference] = []
    # the KV pool: engine.cpu_kvcache_space (VLLM_CPU_KVCACHE_SPACE) or engine.args.kv_cache_memory_bytes
    # read as the setup and the launch read it (`10GiB`, vLLM's `10G`: engine_args.whole_arg_value), one integer
    declared_kv = whole_arg_value("kv_cache_memory_bytes",
                                  args.get("kv_cache_memory_bytes", engine.get("cpu_kvcache_space")))
    field = "engine.args.kv_cache_memory_bytes" if "kv_cache_memory_bytes" in args else "engine.cpu_kvcache_space"
    if isinstance(declared_kv, str):
        declared_kv = _float(declared_kv)  # a plain number as text; anything else was refused before the launch
    if declared_kv is not None:
        applied = _int(cc.get("kv_cache_memory_bytes"))
        src = "/metrics cache_config_info kv_cache_memory_bytes"
        if applied is None and _float(log.get("cpu_kv_cache_gib")) is not None:
            applied, src = int(round(float(log["cpu_kv_cache_gib"]) * GIB)), "startup log (CPU KV cache GiB)"
        if applied is not None and applied != int(declared_kv):
            out.append(Difference(field, f"{_gib(float(declared_kv))} ({int(declared_kv):,} B)",
                                  f"{_gib(applied)} ({applied:,} B)", src))
    for key, parse in (("block_size", _int), ("enable_prefix_caching", _bool), ("gpu_memory_utilization", _float)):
        if key not in args or key not in cc:
            continue
        want, got = parse(args[key]), parse(cc[key])
        if want is not None and got is not None and want != got:
            out.append(Difference(f"engine.args.{key}", str(args[key]), str(cc[key]),
                                  f"/metrics cache_config_info {key}"))
    return out


def differences_text(diffs: list[Difference]) -> str:
    """One sentence for the file's error: each field with its declared and applied value."""
    return "the engine did not run what the file says: " + "; ".join(
        f"{d.field}: declared {d.declared}, applied {d.applied} ({d.source})" for d in diffs) + (
        ". Every prediction of the file would be checked against a setup that did not run: fix the file (vllm-cpu "
        "takes cpu_kvcache_space in whole GiB; engine.args.kv_cache_memory_bytes sets an exact pool) or the engine")
