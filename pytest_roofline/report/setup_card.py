"""The scorecard's setup card: what the prediction file declares beside what the run says it ran (hardware, model,
engine, KV pool, the engine's self-report and its cross-check). Split out of :mod:`.scorecard` (issue 19): one
concept, "the setup this page is about"."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pytest_roofline import redact
from pytest_roofline.errors import SetupError
from pytest_roofline.format.spec import Spec
from pytest_roofline.model.setup import Setup
from pytest_roofline.quantities.kv import cross_check_status
from pytest_roofline.report.common import esc
from pytest_roofline.units import decimal_bytes_unit, format_value

__all__ = ["setup_card", "definition_list"]


def setup_card(spec: Spec, setup: Setup | None, results: Mapping[str, Any] | None) -> str:
    out = ['<div class="card setup"><h3>Setup</h3>']
    rsetup = (results or {}).get("setup") or {}
    hw_det = (rsetup.get("hardware") or {}).get("detected")
    chip: list[tuple[str, Any]] = []
    model: list[tuple[str, Any]] = []
    if setup is not None:
        d = setup.describe()
        chip.append(("declared", d.get("hardware")))
        if isinstance(hw_det, Mapping):
            chip.append(("detected", f"{hw_det.get('name')} [{hw_det.get('variant') or 'not in catalog'}]"
                         + (f", driver {hw_det['driver_version']}" if hw_det.get("driver_version") else "")))
        elif results is not None:
            chip.append(("detected", "— (not detected: " + str(results.get("source", "?")) + " run)"))
        for k in ("hbm_bandwidth", f"peak_{setup.compute_dtype}", "memory"):
            if d.get(k):
                chip.append((k.replace("_", " "), d[k]))
        try:
            chip.append(("ridge", f"{setup.peak_flop_per_s / setup.hbm_bytes_per_s:,.1f} FLOP/byte"))
        except SetupError:
            pass
        model += [("model", d.get("model")), ("parameters", d.get("params")), ("weights", d.get("weights")),
                  ("KV per token", d.get("kv_bytes_per_token")), ("KV context", d.get("kv_context")),
                  ("KV per sequence", format_value(setup.kv_bytes_per_seq, "bytes",
                                                   decimal_bytes_unit(setup.kv_bytes_per_seq), digits=4))]
    else:
        chip.append(("declared", spec.hardware))
        model.append(("model", spec.model if isinstance(spec.model, str) else str(spec.model)))
        model.append(("", "the setup does not resolve, so the model's curves are not drawn"))
    eng = spec.engine
    engine = [("engine", f"{eng.get('name', 'vllm')} {eng.get('version') or '(version not given)'}"),
              ("serves", eng.get("model"))]
    if eng.get("args"):
        engine.append(("args", ", ".join(f"{k}={v}" for k, v in redact.redact_mapping(eng["args"]).items())))
    if setup is not None:
        # the KV pool as this device sizes it: a share of GPU memory, or the CPU engine's fixed KV space
        pool = (f"KV space {format_value(setup.kv_cache_memory_bytes, 'bytes', 'GiB', digits=4)}"
                if setup.device == "cpu" and setup.kv_cache_memory_bytes is not None
                else f"gpu_memory_utilization {setup.gpu_memory_utilization:g}")
        engine.append(("defaults used", f"{pool}, block_size {setup.block_size}, max_num_seqs "
                                        f"{setup.max_num_seqs}, max_num_batched_tokens "
                                        f"{setup.max_num_batched_tokens:,}"))
    if setup is not None:
        source = (f"calibration {Path(spec.calibration_path or '').name}" if spec.calibration is not None
                  else "default constants") + (" + the file's serving: constants" if spec.serving_overrides else "")
        engine.append(("serving model", f"{source}; model column: "
                       + {"auto": "roofline where it computes, else serving"}.get(spec.model_column,
                                                                                   spec.model_column)))
    rep = (results or {}).get("engine_report") or {}
    if rep:
        bits = []
        if rep.get("version"):
            bits.append(f"version {rep['version']}")
        if rep.get("num_gpu_blocks") is not None:
            bits.append(f"{rep['num_gpu_blocks']:,} blocks")
        if rep.get("kv_cache_tokens") is not None:
            bits.append(f"{rep['kv_cache_tokens']:,} KV tokens")
        if rep.get("available_kv_cache_gib") is not None:
            bits.append(f"{rep['available_kv_cache_gib']:g} GiB pool")
        if rep.get("kv_device"):
            bits.append(f"KV on {rep['kv_device']}")
        engine.append(("engine says", ", ".join(bits)))
        status = cross_check_status(rep)
        if status is not None:
            engine.append(("cross-check", f"{status[0]} — {status[1]}"))
    wl = spec.workload
    work: list[tuple[str, Any]] = []
    if wl.get("input_len") or wl.get("output_len"):
        work.append(("lengths", f"{wl.get('input_len', '?')} in / {wl.get('output_len', '?')} out"))
    if wl.get("kv_context"):
        work.append(("KV context", f"{float(wl['kv_context']):,.0f} tokens"))
    if wl.get("sampling"):
        work.append(("sampling", ", ".join(f"{k}={v}" for k, v in wl["sampling"].items())))
    sw = spec.sweep
    if sw.concurrency:
        work.append(("sweep", f"{sw.mode} loop, concurrency {', '.join(str(c) for c in sw.concurrency)}"))
    if sw.rates:
        work.append(("rates", ", ".join(f"{r:g}" for r in sw.rates) + " req/s"))
    slo = spec.slo or {}
    if slo:
        work.append(("SLO", " and ".join(f"{k.upper()} ≤ {v * 1e3:g} ms" for k, v in slo.items() if k != "percentile")
                     + (f" at {slo['percentile']}" if slo.get("percentile") else "")))
    th = spec.thresholds
    work.append(("thresholds", f"knee: doubling adds < {th.knee_gain:.0%}; TTFT knee: p99 > {th.ttft_knee_ratio:g}"
                               f" × p50; contaminated: prefix-cache hits > {th.contamination:.0%}"))
    run = []
    if results is not None:
        run += [("source", results.get("source")), ("status", results.get("status")),
                ("created", results.get("created_at")), ("host", rsetup.get("host")),
                ("commit", rsetup.get("commit"))]
    for title, items in (("Chip", chip), ("Model", model), ("Engine", engine), ("Workload", work), ("Run", run)):
        items = [(k, v) for k, v in items if v not in (None, "")]
        if items:
            out.append(f'<div class="sg"><h4>{title}</h4>{definition_list(items)}</div>')
    out.append("</div>")
    return "".join(out)


def definition_list(items: Iterable[tuple[str, Any]]) -> str:
    return "<dl>" + "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in items if v not in (None, "")) + "</dl>"
