"""Environment facts of a run (GPU declared and detected, model, engine, workload, commit), for the pytest-html
environment table and the scorecard's setup panel."""

from __future__ import annotations

from typing import Any

from pytest_roofline.errors import SetupError
from pytest_roofline.format.spec import Spec
from pytest_roofline.measure.results import git_commit
from pytest_roofline.model.setup import Setup, build_setup

__all__ = ["spec_setup", "environment_from_specs", "environment_from_results"]


def spec_setup(spec: Spec) -> Setup | None:
    """The file-level setup of a prediction file (None when it does not resolve)."""
    try:
        return build_setup(hardware_ref=spec.hardware, hardware_overrides=spec.hardware_overrides,
                           model_ref=spec.model, model_overrides=spec.model_overrides, engine=spec.engine,
                           workload=spec.workload)
    except (SetupError, ValueError, KeyError, TypeError):
        return None


def _join(values: list[str]) -> str:
    seen: list[str] = []
    for v in values:
        if v and v not in seen:
            seen.append(v)
    return "; ".join(seen)


def environment_from_specs(specs: list[Any], mode: str, cwd: str | None = None) -> dict[str, str]:
    """GPU (declared), model, engine, workload from the prediction files of the run."""
    gpus, models, engines, workloads = [], [], [], []
    for spec in specs:
        setup = spec_setup(spec)
        if setup is not None:
            gpus.append(f"{setup.hardware.id} ({setup.hardware.name})")
            models.append(f"{setup.model.name}" + (f" — serves {spec.engine.get('model')}" if spec.engine.get("model")
                                                   else ""))
        else:
            gpus.append(str(spec.hardware))
            models.append(str(spec.model if isinstance(spec.model, str) else getattr(spec.model, "get",
                                                                                     lambda k: None)("name")))
        eng = spec.engine or {}
        engines.append(f"{eng.get('name', 'vllm')} {eng.get('version') or '(version not given)'}")
        wl = spec.workload or {}
        if wl:
            workloads.append(", ".join(f"{k}={v}" for k, v in wl.items() if not isinstance(v, dict)))
    out = {"Roofline mode": {"math": "math only (analytical model, no measurement)", "engine": "engine (--gpu)",
                             "endpoint": "endpoint (--endpoint)", "replay": "replay (--replay)"}.get(mode, mode)}
    if specs:
        out["GPU (declared)"] = _join(gpus)
        out["Model"] = _join(models)
        out["Engine"] = _join(engines)
        if workloads:
            out["Workload"] = _join(workloads)
    out["Commit"] = git_commit(cwd) or "unknown (not a git checkout)"
    return out


def environment_from_results(data: dict[str, Any]) -> dict[str, str]:
    """GPU (detected), driver, engine version, commit and the results file from a results dict."""
    out: dict[str, str] = {}
    setup = data.get("setup") or {}
    hw = setup.get("hardware") or {}
    det = hw.get("detected")
    if isinstance(det, dict) and det:
        name = det.get("name") or "?"
        count = det.get("count") or 1
        variant = det.get("variant")
        mem = det.get("memory_total_mib")
        out["GPU (detected)"] = (f"{count} × " if count and count > 1 else "") + name + (
            f" [{variant}]" if variant else " [not in the catalog]") + (f", {mem:,} MiB" if mem else "")
        if det.get("driver_version"):
            out["GPU driver"] = str(det["driver_version"])
    elif det:
        out["GPU (detected)"] = str(det)
    elif hw.get("declared"):
        out["GPU (detected)"] = (f"none recorded (the results are {data.get('source', 'measured')}; declared "
                                 f"{hw['declared']})")
    eng = setup.get("engine") or {}
    rep = data.get("engine_report") or {}
    version = rep.get("version") or eng.get("version")
    if eng.get("name") or version:
        out["Engine"] = f"{eng.get('name', 'vllm')} {version or '?'}" + (
            f" (KV on {rep['kv_device']})" if rep.get("kv_device") else "")
    model = setup.get("model") or {}
    if model.get("name"):
        out["Model"] = str(model["name"]) + (f" ({model['path']})" if model.get("path") else "")
    wl = setup.get("workload") or {}
    if wl:
        out["Workload"] = ", ".join(f"{k}={v}" for k, v in wl.items() if not isinstance(v, (dict, list)))
    if setup.get("commit"):
        out["Commit"] = str(setup["commit"])
    if data.get("_path"):
        out["Results file"] = f"{data['_path']} ({data.get('source', 'measured')}, {data.get('status', '?')})"
    return out


