"""KV-capacity predictions against published vLLM startup logs on other setups.

Reads ``benchmarks/data/kv_reports.json`` (every report with its public URL and only the fields the page states),
builds each report's setup through the public path -- ``pytest_roofline.model.setup.build_setup`` with the
hardware / model / engine{version, entrypoint, args} / workload a prediction file would give -- and takes the
model values from the quantity registry (``num_gpu_blocks``, ``kv_cache_tokens``, ``available_kv_bytes``), the
same functions a YAML prediction is checked against. It prints one row per report (predicted vs published,
error) and the mean / max absolute error per group:

* single GPU, version named (stated on the page, or read off the log's own format);
* tensor parallel (per-rank pool), version named;
* the same expressible reports as if the version were not named (the newest release's defaults), to show what
  naming the version buys.

A report the project cannot express yet (a GPU missing from the catalog, an architecture ``from_hf_config`` does
not read, a checkpoint the page does not name) is listed as ``not expressible: <reason>``, never dropped, so the
figures improve by themselves as the catalog and the model grow. A field the page does not state is left to
the engine's default and the row says which default was assumed.

    .venv/bin/python benchmarks/kv_capacity.py            # the table
    .venv/bin/python benchmarks/kv_capacity.py --json     # machine-readable rows

No engine, no GPU, no network: it runs in well under a second.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pytest_roofline.errors import RooflineError
from pytest_roofline.model import architecture, vllm_defaults
from pytest_roofline.model import hardware as hw_catalog
from pytest_roofline.model.setup import Setup, build_setup, kv_accounting
from pytest_roofline.quantities.registry import get_quantity
from pytest_roofline.units import GIB

DATA = Path(__file__).resolve().parent / "data" / "kv_reports.json"

#: the published figure compared, in order of preference (the most direct reading of vLLM's own pool first)
METRICS = ("num_gpu_blocks", "kv_tokens", "available_kv_gib")

#: published figures shown beside the compared one, to locate a miss (never scored)
DIAGNOSTICS = ("weights_gib",)

#: engine arguments a report may state, passed to ``engine.args`` under vLLM's own names
_ARG_FIELDS = ("gpu_memory_utilization", "max_model_len", "tensor_parallel_size", "pipeline_parallel_size",
               "kv_cache_dtype", "dtype", "quantization", "max_num_seqs", "max_num_batched_tokens", "enforce_eager")


def load(path: Path = DATA) -> dict[str, Any]:
    """The whole data file (``about``, ``targets``, ``reports``)."""
    return json.loads(path.read_text(encoding="utf-8"))


def load_reports(path: Path = DATA) -> list[dict[str, Any]]:
    return list(load(path)["reports"])


def named_version(report: Mapping[str, Any]) -> str | None:
    """The version the page states, else the one its log format shows (None: unknown)."""
    return report.get("version") or report.get("version_inferred")


@dataclass
class Outcome:
    """One report scored: ``status`` is ``ok`` or ``not expressible``."""

    id: str
    url: str
    status: str
    reason: str = ""
    group: str = ""
    version_used: str | None = None
    metric: str | None = None
    published: float | None = None
    predicted: float | None = None
    error_pct: float | None = None
    others: dict[str, tuple[float, float | None]] = field(default_factory=dict)
    assumed: list[str] = field(default_factory=list)
    diagnostics: list[str] = field(default_factory=list)
    xfail: str | None = None

    @property
    def abs_error_pct(self) -> float | None:
        return None if self.error_pct is None else abs(self.error_pct)


def _outside_known_versions(version: str) -> bool:
    """A named release the defaults table does not cover (the setup warns and takes the nearest one)."""
    oldest = getattr(vllm_defaults, "OLDEST_KNOWN_VERSION", (0, 4, 0))
    newest = getattr(vllm_defaults, "NEWEST_KNOWN_VERSION", None)
    v = vllm_defaults.parse_version(version)
    return v < oldest or (newest is not None and v > newest)


def group_of(report: Mapping[str, Any]) -> str:
    """tensor parallel; single GPU (version named and known); single GPU with the version unknown or outside
    the releases the project knows (only the first group carries the 5% target)."""
    tp = int(report.get("tensor_parallel_size") or 1)
    if tp > 1:
        return "tensor parallel"
    version = named_version(report)
    if not version:
        return "single GPU, version unknown"
    return "single GPU, version outside 0.4-newest" if _outside_known_versions(version) else "single GPU"


# --------------------------------------------------------------------------------------------------- setup
_CONFIG_DIR: Path | None = None


def _config_path(report_id: str, config: Mapping[str, Any]) -> str:
    """An inline HF config written as the config.json a YAML ``model:`` path would name."""
    global _CONFIG_DIR
    if _CONFIG_DIR is None:
        _CONFIG_DIR = Path(tempfile.mkdtemp(prefix="kv-reports-"))
    d = _CONFIG_DIR / report_id
    d.mkdir(parents=True, exist_ok=True)
    p = d / "config.json"
    p.write_text(json.dumps(config), encoding="utf-8")
    return str(p)


class NotExpressible(Exception):
    """The project cannot express this report yet; the message says why."""


def _hardware(report: Mapping[str, Any]) -> str:
    names = list(report.get("hardware") or [])
    if not names:
        raise NotExpressible("the page does not name the GPU")
    for name in names:
        try:
            hw_catalog.get_hardware(name)
        except (RooflineError, LookupError):
            continue
        return name
    raise NotExpressible(f"GPU {report.get('gpu') or names[0]!r} is not in the catalog (tried {', '.join(names)})")


def _model(report: Mapping[str, Any]) -> tuple[Any, Any]:
    """(model_ref for build_setup, the ModelArch it resolves to)."""
    model = report.get("model")
    if model is None:
        raise NotExpressible(f"no config facts for {report.get('model_stated')!r}")
    ref = model if isinstance(model, str) else _config_path(str(report["id"]), model["config"])
    try:
        arch = architecture.get_model(ref)
    except (RooflineError, ValueError, KeyError, TypeError) as exc:
        raise NotExpressible(f"model {report.get('model_stated')!r}: {exc}") from None
    return ref, arch


def build_report_setup(report: Mapping[str, Any], *, name_version: bool = True,
                       memory_bytes: float | None = None) -> tuple[Setup, list[str]]:
    """The report's setup as a prediction file would state it, and the defaults assumed for unstated fields.

    ``memory_bytes`` overrides the catalog's device memory (a diagnostic only: the scored prediction always
    uses the catalog). Raises :class:`NotExpressible` with the reason when the project cannot express it."""
    hw_ref = _hardware(report)
    model_ref, arch = _model(report)
    assumed: list[str] = []
    args: dict[str, Any] = {k: report[k] for k in _ARG_FIELDS if report.get(k) is not None}
    if "max_model_len" not in args:
        mpe = getattr(arch, "max_position_embeddings", None)
        if mpe:
            # vLLM's default max_model_len is the model's own context (config.json max_position_embeddings)
            args["max_model_len"] = int(mpe)
            assumed.append(f"max_model_len={int(mpe)} (the model's max_position_embeddings, vLLM's default)")
    engine: dict[str, Any] = {"name": "vllm", "args": args}
    if report.get("engine_env"):
        # the engine the log ran when vLLM chose it itself in a way the project does not model (a V0 fallback)
        engine["env"] = dict(report["engine_env"])
    version = named_version(report) if name_version else None
    if version:
        engine["version"] = version
    if report.get("entrypoint"):
        engine["entrypoint"] = report["entrypoint"]
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            setup = build_setup(hardware_ref=hw_ref, model_ref=model_ref, engine=engine, workload={},
                                hardware_overrides={"memory_bytes": int(memory_bytes)} if memory_bytes else None)
    except (RooflineError, ValueError, KeyError, TypeError) as exc:
        raise NotExpressible(f"setup: {exc}") from None
    for w in caught:
        assumed.append(f"warning: {w.message}")
    for name in ("gpu_memory_utilization", "max_num_seqs", "max_num_batched_tokens"):
        if report.get(name) is None:
            assumed.append(f"{name}={getattr(setup, name)} (default of vLLM "
                           f"{version or 'newest known'})")
    if report.get("kv_cache_dtype") is None:
        assumed.append(f"kv_cache_dtype=auto -> {setup.kv_dtype}")
    return setup, assumed


def _model_values(setup: Setup) -> dict[str, float]:
    """The registry's model values for the three published figures (KV per GPU / per TP rank)."""
    out: dict[str, float] = {}
    out["num_gpu_blocks"] = float(get_quantity("num_gpu_blocks").model(setup, {}).value)  # type: ignore[misc]
    out["kv_tokens"] = float(get_quantity("kv_cache_tokens").model(setup, {}).value)  # type: ignore[misc]
    out["available_kv_gib"] = float(get_quantity("available_kv_bytes").model(setup, {}).value) / GIB  # type: ignore[misc]
    # the weights the KV accounting subtracts (one rank's), beside the model-loading line
    out["weights_gib"] = float(kv_accounting(setup).weight_bytes) / GIB
    return out


def error_pct(predicted: float, published: float) -> float | None:
    """Signed relative error in percent; None where the published figure is 0 (no scale to compare on)."""
    if published == 0:
        return None
    return (predicted - published) / abs(published) * 100.0


def score(report: Mapping[str, Any], *, name_version: bool = True) -> Outcome:
    out = Outcome(id=str(report["id"]), url=str(report["url"]), status="ok", group=group_of(report),
                  xfail=report.get("xfail"))
    try:
        setup, out.assumed = build_report_setup(report, name_version=name_version)
        values = _model_values(setup)
    except NotExpressible as exc:
        out.status, out.reason = "not expressible", str(exc)
        return out
    except (RooflineError, ValueError, KeyError, TypeError, ZeroDivisionError) as exc:
        out.status, out.reason = "not expressible", f"model: {type(exc).__name__}: {exc}"
        return out
    out.version_used = setup.engine_version
    published = {k: v for k, v in (report.get("published") or {}).items()
                 if k in METRICS + DIAGNOSTICS and v is not None}
    for name in METRICS + DIAGNOSTICS:
        if name not in published:
            continue
        pub = float(published[name])
        if out.metric is None and name in METRICS and not (name == "num_gpu_blocks" and pub == 0):
            out.metric, out.published, out.predicted = name, pub, values[name]
            out.error_pct = error_pct(values[name], pub)
        out.others[name] = (pub, values[name])
    if out.metric is None:
        out.status, out.reason = "not expressible", "no published figure to compare"
        return out
    total_gib = (report.get("published") or {}).get("total_gpu_memory_gib")
    if total_gib and name_version:
        # how much of the error is the catalog's memory figure: the same setup with the total the log printed
        # (torch's view, what vLLM budgets) in place of the catalog's
        try:
            alt, _ = build_report_setup(report, name_version=True, memory_bytes=float(total_gib) * GIB)
            alt_value = _model_values(alt)[out.metric]
            out.diagnostics.append(
                f"with the log's own device total ({float(total_gib):.2f} GiB, catalog "
                f"{float(setup.hardware.memory_bytes) / GIB:.2f} GiB): {_fmt(out.metric, alt_value)} "
                f"({_err(error_pct(alt_value, float(out.published or 0)))})")
        except (NotExpressible, RooflineError, ValueError, KeyError, TypeError):
            pass
    return out


def score_all(reports: Iterable[Mapping[str, Any]], *, name_version: bool = True) -> list[Outcome]:
    return [score(r, name_version=name_version) for r in reports]


# --------------------------------------------------------------------------------------------------- summary
def summarize(outcomes: Iterable[Outcome]) -> dict[str, dict[str, float]]:
    """{group: {n, mean_abs_pct, max_abs_pct}} over the scored reports of each group."""
    groups: dict[str, list[float]] = {}
    for o in outcomes:
        if o.status == "ok" and o.abs_error_pct is not None:
            groups.setdefault(o.group, []).append(o.abs_error_pct)
    return {g: {"n": len(v), "mean_abs_pct": sum(v) / len(v), "max_abs_pct": max(v)} for g, v in groups.items()}


def _fmt(metric: str | None, x: float | None) -> str:
    if x is None or metric is None:
        return "-"
    if metric in ("available_kv_gib", "weights_gib"):
        return f"{x:,.2f} GiB"
    return f"{x:,.0f}"


def _err(e: float | None) -> str:
    return "-" if e is None else f"{e:+.1f}%"


def render(named: list[Outcome], unnamed: list[Outcome], targets: Mapping[str, float]) -> str:
    """The table: one row per scored report (and its other published figures), the assumed defaults, the
    reports not expressible yet with the reason, and the mean / max |error| per group."""
    lines: list[str] = []
    w = max((len(o.id) for o in named), default=10)
    vw = max([9] + [len(o.version_used or "-") for o in named])  # 0.5.3.post1 is 11 wide
    lines.append(f"{'report':<{w}}  {'version':<{vw}} {'metric':<16} {'published':>13} {'predicted':>13} {'error':>8}  "
                 "(as if unnamed)")
    by_id = {o.id: o for o in unnamed}
    pad = " " * w
    for o in named:
        if o.status != "ok":
            continue
        u = by_id.get(o.id)
        mark = "  XFAIL" if o.xfail else ""
        lines.append(f"{o.id:<{w}}  {o.version_used or '-':<{vw}} {o.metric or '-':<16} "
                     f"{_fmt(o.metric, o.published):>13} {_fmt(o.metric, o.predicted):>13} "
                     f"{_err(o.error_pct):>8}  ({_err(u.error_pct if u else None)}){mark}")
        for name, (pub, pred) in o.others.items():
            if name == o.metric:
                continue
            e = error_pct(pred, pub) if pred is not None else None
            lines.append(f"{pad}  {'':<{vw}} {name:<16} {_fmt(name, pub):>13} {_fmt(name, pred):>13} {_err(e):>8}")
        lines.extend(f"{pad}    assumed: {a}" for a in o.assumed)
        lines.extend(f"{pad}    diagnostic: {d}" for d in o.diagnostics)
        if o.xfail:
            lines.append(f"{pad}    known miss: {o.xfail}")
    lines.append("")
    lines.append("not expressible yet:")
    missing = [o for o in named if o.status != "ok"]
    lines.extend(f"  {o.id}: {o.reason}" for o in missing)
    if not missing:
        lines.append("  (none)")
    lines.append("")
    gw = 60
    lines.append(f"{'group':<{gw}} {'n':>3} {'mean |err|':>11} {'max |err|':>10}  target")
    tgt = {"single GPU": targets.get("single_gpu_named_version_pct"),
           "tensor parallel": targets.get("tensor_parallel_pct")}
    for label, outs in (("", named), (" (version not named)", unnamed)):
        for g, s in sorted(summarize(outs).items()):
            t = tgt.get(g) if not label else None
            within = sum(1 for o in outs if o.group == g and o.abs_error_pct is not None and t is not None
                         and o.abs_error_pct <= t)
            mark = "" if t is None else (f"<= {t:g}%: {within} of {s['n']:.0f} within"
                                         + (" (met)" if s["max_abs_pct"] <= t else " (MISSED)"))
            lines.append(f"{g + label:<{gw}} {s['n']:>3.0f} {s['mean_abs_pct']:>10.1f}% {s['max_abs_pct']:>9.1f}%  "
                         f"{mark}")
    n_ok = sum(1 for o in named if o.status == "ok")
    lines.append(f"\n{len(named)} reports: {n_ok} scored, {len(named) - n_ok} not expressible yet")
    return "\n".join(lines)


def markdown(named: list[Outcome], unnamed: list[Outcome], reports: Iterable[Mapping[str, Any]],
             targets: Mapping[str, float]) -> str:
    """The README's accuracy table: one row per report (scored or not, with the reason), then the groups."""
    meta = {str(r["id"]): r for r in reports}
    by_id = {o.id: o for o in unnamed}
    rows = ["| report (source) | vLLM | GPU x TP | figure | published | predicted | error | version not named |",
            "|---|---|---|---|---|---|---|---|"]
    for o in named:
        r = meta[o.id]
        ver = r.get("version") or (f"{r['version_inferred']}*" if r.get("version_inferred") else "?")
        gpu = f"{(r.get('hardware') or ['?'])[0]} x {r.get('tensor_parallel_size') or 1}"
        src = f"[{o.id}]({o.url})"
        if o.status != "ok":
            rows.append(f"| {src} | {ver} | {gpu} | - | - | - | not expressible: {o.reason} | |")
            continue
        u = by_id.get(o.id)
        err = _err(o.error_pct) + (" (known miss)" if o.xfail else "")
        rows.append(f"| {src} | {ver} | {gpu} | {o.metric} | {_fmt(o.metric, o.published)} | "
                    f"{_fmt(o.metric, o.predicted)} | {err} | {_err(u.error_pct if u else None)} |")
    rows += ["", "| group | reports | mean abs error | max abs error | target |", "|---|---|---|---|---|"]
    tgt = {"single GPU": targets.get("single_gpu_named_version_pct"),
           "tensor parallel": targets.get("tensor_parallel_pct")}
    s_named, s_unnamed = summarize(named), summarize(unnamed)
    for g in sorted(set(s_named) | set(s_unnamed)):
        for label, summ in (("version named", s_named), ("version not named", s_unnamed)):
            if g not in summ:
                continue
            t = tgt.get(g) if label == "version named" else None
            met = "" if t is None else (f"{t:g}% " + ("met" if summ[g]["max_abs_pct"] <= t else "missed"))
            rows.append(f"| {g}, {label} | {summ[g]['n']:.0f} | {summ[g]['mean_abs_pct']:.1f}% | "
                        f"{summ[g]['max_abs_pct']:.1f}% | {met} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    ap.add_argument("--markdown", action="store_true", help="print the README's Markdown table instead")
    ap.add_argument("--write", type=Path, default=None, metavar="MD",
                    help="also write the table to this Markdown file (benchmarks/RESULTS-kv-capacity.md)")
    ns = ap.parse_args(argv)
    doc = load(ns.data)
    reports = doc["reports"]
    named = score_all(reports, name_version=True)
    unnamed = score_all(reports, name_version=False)
    if ns.markdown:
        print(markdown(named, unnamed, reports, doc.get("targets", {})))
        return 0
    if ns.json:
        print(json.dumps({"named": [asdict(o) for o in named], "unnamed": [asdict(o) for o in unnamed],
                          "summary": summarize(named), "summary_unnamed": summarize(unnamed)}, indent=1))
    else:
        table = render(named, unnamed, doc.get("targets", {}))
        print(table)
        if ns.write is not None:
            ns.write.write_text(_results_md(table), encoding="utf-8")
    return 0


def _results_md(table: str) -> str:
    import datetime

    day = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (
        "# KV capacity against published vLLM reports\n\n"
        f"Figures of {day}, printed by\n\n"
        "```\n.venv/bin/python benchmarks/kv_capacity.py --write benchmarks/RESULTS-kv-capacity.md\n```\n\n"
        "Each report is a public page (URL in `benchmarks/data/kv_reports.json`) with the numbers vLLM printed "
        "there; the setup is built from only what the page states, the rest left to the engine's defaults "
        "(listed under each row as `assumed`). Figures are per GPU (per tensor-parallel rank). `XFAIL` rows "
        "carry the reason the model misses them; `(as if unnamed)` is the error with the version left out "
        "(the newest release's defaults). Targets: 5% on one GPU once the version is named, 10% under tensor "
        "parallelism.\n\n"
        f"```\n{table}\n```\n"
    )


if __name__ == "__main__":
    sys.exit(main())
