"""Live measurement: start (or reach) the engine, run the planned sweep points, write results as they finish.

:class:`Measurements` is the object behind the ``roofline_measurements`` fixture. For each prediction file it
resolves a *target* — a vLLM engine it launches (``--gpu``) or a running server (``--endpoint``) — shared by
every file with the same engine configuration, runs exactly the points the selected predictions need
(plan.py), once each, and serves them to the quantity registry like a replayed file. A point that cannot be
measured (the engine died, or any of its requests failed: :data:`ALLOWED_FAILED_REQUESTS`) becomes a
:class:`~pytest_roofline.errors.PointError` carrying the engine log tail, never a stored point; every point
measured before it stays in the results file.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from pytest_roofline import redact
from pytest_roofline.errors import NotMeasured, PointError, ResultsError, SetupValueError, SpecError, WorkloadError
from pytest_roofline.format.spec import Spec
from pytest_roofline.measure import gpu as gpu_mod
from pytest_roofline.measure.engine import LAUNCH_HEADER_PREFIX, applied
from pytest_roofline.measure.plan import PointPlan, is_knee_only, needs_engine, plan_points, unmeasured_reason
from pytest_roofline.measure.progress import EngineWait, PointUpdate, SweepProgress, output_tok_per_s
from pytest_roofline.measure.results import RecordedMeasurement, ResultsWriter, new_results, point_record
from pytest_roofline.measure.target import MeasurementProvider, Target
from pytest_roofline.model import engine_args
from pytest_roofline.model import hardware as hw_mod
from pytest_roofline.model.tiny import TINY_MODEL
from pytest_roofline.quantities.analysis import SMALL_SAMPLE_PREFIX
from pytest_roofline.quantities.measurement import (
    ClientStats,
    EngineReport,
    EngineReportMode,
    LoadgenChecks,
    PointMode,
    PointRecord,
    ServerStats,
)
from pytest_roofline.units import GIB

if TYPE_CHECKING:
    from pytest_roofline.measure.engine import Device
    from pytest_roofline.measure.loadgen import Api
    from pytest_roofline.measure.plan.stopping import AdaptiveStop

__all__ = ["Measurements", "engine_config_for", "TINY_MODEL", "run_point", "default_request_timeout_s",
           "failed_point_reason", "ALLOWED_FAILED_REQUESTS", "replica_count", "replica_metrics_for"]

DEFAULT_TOKEN_ID_RANGE = (1000, 20000)  # ordinary BPE ids for real models (no special tokens there)

#: failed requests a point may have and still be measured: none. A point with any failed request (an HTTP error,
#: an error event, a malformed or cut stream, a timeout) is an ERROR, and the load generator stops the point at
#: the first one (LoadSpec.max_failures): latencies and throughputs over the requests that happened to succeed
#: describe another experiment than the one predicted, and a point of failures has none to give.
ALLOWED_FAILED_REQUESTS = 0

#: the default per-request timeout (sweep.request_timeout unset): a floor plus the request's tokens at floor rates
#: far below any serving engine's (5 output tok/s, 200 prompt tok/s): 10 s + 64 / 5 + 128 / 200 = 23.4 s for the
#: tiny CPU workload, 10 + 1024 / 5 + 1024 / 200 = 220 s for the notebook's 1k/1k; a server that never answers
#: then ends the point in one timeout
REQUEST_TIMEOUT_FLOOR_S = 10.0
REQUEST_TIMEOUT_OUTPUT_TOK_S = 5.0
REQUEST_TIMEOUT_PROMPT_TOK_S = 200.0


def default_request_timeout_s(input_len: int, output_len: int) -> float:
    """The per-request timeout when the file sets none, from the point's lengths (see REQUEST_TIMEOUT_*)."""
    return (REQUEST_TIMEOUT_FLOOR_S + output_len / REQUEST_TIMEOUT_OUTPUT_TOK_S
            + input_len / REQUEST_TIMEOUT_PROMPT_TOK_S)


def failed_point_reason(result: Any, *, allowed: int = ALLOWED_FAILED_REQUESTS) -> str | None:
    """Why a load run is not a measurement (None when it is): more failed requests than ``allowed``, a run the
    load generator aborted, or no measured request completed. Says how many failed and the first reasons."""
    from pytest_roofline.measure import stats

    records = list(result.records)
    measured = [r for r in records if r.in_sample]  # a request an adaptive stop discarded is neither
    warm = [r for r in records if r.warmup]
    failed = sum(1 for r in measured if not r.ok)
    warm_failed = sum(1 for r in warm if not r.ok)
    completed = len(measured) - failed
    if failed + warm_failed <= allowed and result.aborted is None and completed > 0:
        return None
    planned = result.spec.num_requests
    parts = [f"{failed} of {len(measured)} measured requests failed"
             + (f", {planned - len(measured)} of {planned} planned never sent"
                if planned is not None and planned > len(measured) else "")]
    if warm:
        parts.append(f"{warm_failed} of {len(warm)} warm-up requests failed")
    what = "; ".join(parts)
    if failed + warm_failed == 0 and result.aborted is None:
        return f"{what}: no measured request completed, so nothing was measured"
    reasons = "; ".join(f"{why!r} ×{n}" for why, n in stats.failure_reasons(records))
    rule = ("any failed request makes a point an error" if allowed == 0
            else f"at most {allowed} failed requests are allowed")
    out = f"{what} ({rule}; no figure is taken from it)"
    if reasons:
        out += f"; first reasons: {reasons}"
    if result.aborted:
        out += f"; the load generator stopped the point ({result.aborted})"
    return out


def partial_requests_name(requests_file: Path) -> Path:
    """Where an interrupted point's finished requests go: ``<point>.partial.requests.jsonl`` beside the point's
    file, a name no results file points at (so no replay reads it as a measurement)."""
    return requests_file.with_name(requests_file.name.removesuffix(".requests.jsonl") + ".partial.requests.jsonl")


def _keep_partial_records(exc: BaseException, requests_file: Path) -> None:
    """On a Ctrl-C or SIGTERM inside a point's load: write the requests that had finished (the load generator
    hands them over on ``exc.partial_records``) to :func:`partial_requests_name`, each marked ``"partial": true``,
    and say where on ``exc.partial_requests_file``. A failure to write is never raised over the interrupt."""
    records = getattr(exc, "partial_records", None)
    if isinstance(exc, Exception) or records is None:
        return
    path = partial_requests_name(requests_file)
    with contextlib.suppress(OSError), _interrupts_held():
        with path.open("w", encoding="utf-8") as fh:
            for rec in records:
                fh.write(json.dumps(redact.redact_data({**rec.to_dict(), "partial": True})) + "\n")
        warm = sum(1 for r in records if getattr(r, "warmup", False))
        exc.partial_requests_file = (path, len(records), warm)  # type: ignore[attr-defined]


def small_sample_flag(completed: Any) -> str | None:
    """The flag of a point too small for the figures its row shows: fewer completed measured requests than a p99
    needs for an upper bound at 95% (:func:`measure.stats.min_samples_for_bound`: ln(0.025)/ln(0.99) → 368), so
    its p99 is the largest sample with no bound above it, and its intervals are wide or absent. None otherwise."""
    from pytest_roofline.measure import stats

    need = stats.min_samples_for_bound(0.99)
    if not isinstance(completed, int) or isinstance(completed, bool) or completed >= need:
        return None
    return (f"{SMALL_SAMPLE_PREFIX} {completed} completed request{'s' if completed != 1 else ''} (a p99 needs "
            f"≥ {need} for an upper bound at 95%: its p99 has none)")


#: how long a point waits, after an adaptive stop cancelled requests, for the server to show none running
ABORT_SETTLE_TIMEOUT_S = 5.0


def _settle_after_discards(result: Any, sources: list[str], snapshot: Any) -> float | None:
    """After an adaptive stop closed the connections of requests in flight, wait (at most
    :data:`ABORT_SETTLE_TIMEOUT_S`) until every source's ``vllm:num_requests_running`` and ``..._waiting`` read 0,
    so that the point's after-scrape and the next point do not see the aborted requests still scheduled. Returns
    the seconds waited (None: nothing was cancelled or no /metrics to read; the timeout: they never all read 0)."""
    if not sources or not any(r.discarded for r in result.records):
        return None
    t0 = time.monotonic()
    while True:
        snaps = [snapshot(u) for u in sources]
        if all(s is None or (not s.get("num_requests_running") and not s.get("num_requests_waiting"))
               for s in snaps):
            return time.monotonic() - t0
        if time.monotonic() - t0 > ABORT_SETTLE_TIMEOUT_S:
            return time.monotonic() - t0
        time.sleep(0.05)


def _is_tiny(spec: Spec) -> bool:
    return bool(spec.model == TINY_MODEL)


def _engine_arg_line(path: str, key: str, names: tuple[str, ...] = ("engine", "args")) -> int | None:
    """The line of ``engine.args.<key>`` (else of ``engine.args``, else ``engine``) in the YAML file; None if unread.
    ``names``: the mappings above ``key`` (``("engine",)`` for ``engine.<key>``)."""
    import yaml

    try:
        root = yaml.compose(Path(path).read_text())
    except (OSError, yaml.YAMLError):
        return None
    node: Any = root
    line = None
    for name in (*names, key):
        if not isinstance(node, yaml.MappingNode):
            break
        hit = next(((k, v) for k, v in node.value if getattr(k, "value", None) == name), None)
        if hit is None:
            break
        line, node = hit[0].start_mark.line + 1, hit[1]
    return line


#: how an engine.model value that names a local directory starts (anything else is a Hub id)
_PATH_PREFIXES = ("/", "./", "../", "~")


def _check_model_path(spec: Spec) -> None:
    """Refuse, at its line and before the engine starts, an ``engine.model`` that looks like a local path (``/``,
    ``./``, ``../``, ``~``) and is not there: vLLM would spend its start and then read it as a Hub repo id, the cause
    the last of ~120 traceback lines. Checked at launch only (the file is written for the GPU box that has the
    path; the math and a replay read it anywhere), and not when ``engine.command`` runs it (a container's path)."""
    value = spec.engine.get("model")
    if not value or "command" in spec.engine or not str(value).startswith(_PATH_PREFIXES):
        return
    path = Path(str(value)).expanduser()
    if not path.exists():
        where = "" if path.is_absolute() else f" (relative to the current directory, {Path.cwd()})"
        raise SpecError(f"engine.model: {value!r} looks like a local path, and {path}{where} does not exist on this "
                        "machine, so the engine cannot start", file=spec.path,
                        line=_engine_arg_line(spec.path, "model", ("engine",)),
                        hint="give the directory that holds the model's config.json and weights, or a Hub id "
                            "(org/name) to download")


#: engine.args keys that spread one server over several nodes: the single-box GPU count says nothing then
_MULTI_NODE_ARGS = ("nnodes", "node_rank", "data_parallel_size_local", "data_parallel_address")


def engine_config_for(spec: Spec, *, device: Device, gpus_visible: int | None = None) -> Any:
    """The vLLM launch configuration a prediction file describes (``engine.args`` map to CLI flags).

    ``gpus_visible``: the GPUs detected on this machine; a single-node ``mp`` run whose tensor x pipeline x data
    parallel workers need more is refused here, at the file's ``engine.args`` line, before any engine starts."""
    from pytest_roofline.measure.engine import EngineConfig

    args = dict(spec.engine.get("args") or {})
    if _is_tiny(spec):
        from pytest_roofline.measure.engine import tiny_model

        model = str(tiny_model.make_tiny_model(tiny_model.default_model_dir()))
        served = TINY_MODEL
    else:
        model = spec.engine.get("model") or str(spec.model)
        served = None
        _check_model_path(spec)
    known = {}
    multi_node = any(k in args for k in _MULTI_NODE_ARGS)
    for key in ("dtype", "max_model_len", "tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size",
                "distributed_executor_backend", "gpu_memory_utilization", "block_size",
                "max_num_seqs", "max_num_batched_tokens", "enforce_eager", "enable_prefix_caching"):
        if key in args:
            # vLLM's human-readable integers (`32k`) and byte units read as the setup read them (one number)
            known[key] = engine_args.whole_arg_value(key, args.pop(key))
    extra: list[str] = []
    for key, value in args.items():
        flag = "--" + key.replace("_", "-")
        if key in engine_args.FLAG_ARGS:
            # an on/off arg goes as --flag or --no-flag, read as the check read it (a bare key, `maybe` or 2 is
            # refused there: never dropped, never passed as `--flag maybe`)
            try:
                value = engine_args.read_flag(value, f"engine.args.{key}")
            except SetupValueError as e:
                raise SpecError(str(e), file=spec.path, line=_engine_arg_line(spec.path, key)) from None
        value = engine_args.whole_arg_value(key, value)
        if value is True:
            extra.append(flag)
        elif value is False:
            extra.append("--no-" + key.replace("_", "-"))
        elif value is not None:
            extra += [flag, str(value)]
    kv_space = spec.engine.get("cpu_kvcache_space")
    try:
        cfg = EngineConfig(
            model=model, served_model_name=served, device=device,
            kv_cache_space_gib=int(round(kv_space / GIB)) if kv_space else None,
            extra_args=extra, env={str(k): str(v) for k, v in (spec.engine.get("env") or {}).items()},
            python=spec.engine.get("python"), command=spec.engine.get("command"), **known,
        )
    except ValueError as e:
        bad = next((k for k in known if k in str(e)), "")
        raise SpecError(f"engine.args: {e}", file=spec.path, line=_engine_arg_line(spec.path, bad)) from None
    world = cfg.world_size()
    if (gpus_visible is not None and device == "cuda" and world > gpus_visible and not multi_node
            and cfg.distributed_executor_backend != "ray"):
        # one node, vLLM's multiprocessing executor: every worker needs a GPU of this machine
        dims = " x ".join(f"{n} {cfg_v}" for n, cfg_v in (("TP", cfg.tensor_parallel_size),
                                                           ("PP", cfg.pipeline_parallel_size),
                                                           ("DP", cfg.data_parallel_size)) if cfg_v > 1)
        key = next((k for k in ("pipeline_parallel_size", "data_parallel_size", "tensor_parallel_size")
                    if getattr(cfg, k) > 1), "tensor_parallel_size")
        raise SpecError(
            f"engine.args: {dims} = {world} workers, one GPU each, but this machine shows {gpus_visible} GPU"
            f"{'s' if gpus_visible != 1 else ''}", file=spec.path, line=_engine_arg_line(spec.path, key),
            hint="lower the parallel sizes to fit this machine, or run across nodes with "
                 "distributed_executor_backend: ray (README: Scaling out)")
    return cfg


def run_point(target: Target, plan: PointPlan, spec: Spec, *, out_dir: Path, token_id_range: tuple[int, int],
              contamination: float, api_key: str | None = None,
              on_progress: Callable[[Any], None] | None = None,
              replica_metrics: list[str] | None = None, stop_check: AdaptiveStop | None = None
              ) -> PointRecord:
    """Measure one point: offer the load, scrape /metrics around and during it, summarise both sides.
    ``on_progress`` receives the load generator's ``loadgen.Progress`` while the load runs.

    ``replica_metrics``: the base URLs of each replica's own /metrics behind a load balancer (the deployment's
    shape, :func:`replica_metrics_for`); each is scraped before, after (and, with ``sweep.timeline``, during) the
    point and the point's server figures are summed or maxed over them (``metrics.aggregate_replicas``). A replica
    whose /metrics does not answer makes the point an error naming it. With several replicas and no such URLs the
    load balancer's /metrics (one replica's numbers at best) is not read at all.

    ``stop_check``: an adaptive sweep's :class:`~pytest_roofline.measure.plan.stopping.AdaptiveStop`: the point ends
    once its targets are decided (its ``summary`` becomes the point's ``adaptive`` section). A multi-process load
    generator cannot stop early: the point then runs to its cap, and the section says so."""
    from pytest_roofline.measure import loadgen, stats
    from pytest_roofline.measure.engine import metrics
    from pytest_roofline.measure.loadgen import datasets

    sampling = dict(spec.workload.get("sampling") or {})
    served = target.served_model_name
    if served is None:  # a started engine or a connected endpoint has learnt it from /v1/models
        raise PointError(f"point {plan.id}: the target has no served model name to send requests to")
    shape = workload_shape(spec, plan, for_load=True)  # lengths, dataset, prefix, ramp-up: measure/loadgen/datasets.py
    check_dataset_fits(spec, shape, getattr(target, "max_model_len", None))
    # a workload.prefix_share's hits are deliberate: only hits beyond that share contaminate the point
    contamination = min(1.0, contamination + shape.prefix_share)
    load = loadgen.LoadSpec(
        model=served, token_id_range=token_id_range, mode=plan.mode,
        concurrency=plan.concurrency, rate_req_s=plan.rate_req_s, burstiness=plan.burstiness,
        arrival_span=plan.arrival_span, num_requests=plan.num_requests, duration_s=plan.duration_s,
        warmup_requests=plan.warmup_requests,
        input_len=plan.input_len, output_len=plan.output_len, seed=int(spec.workload.get("seed", 0)),
        point_id=plan.id, shared_prefix_len=int(spec.workload.get("shared_prefix_len", 0)), extra_body=sampling,
        request_timeout_s=spec.sweep.request_timeout_s or default_request_timeout_s(plan.input_len, plan.output_len),
        max_failures=ALLOWED_FAILED_REQUESTS, api=cast("Api", str(spec.workload.get("api", "completions"))),
        processes=spec.sweep.load_processes,  # sweep.processes (auto is 1 when adaptive: format/spec.py)
        **shape.load_kwargs(),
    )

    urls = list(replica_metrics or [])
    replicas = replica_count(spec)

    # where the point's server figures come from: the endpoint's own /metrics (optional: a server may not expose
    # it), or each replica's behind a load balancer (required: a replica that does not answer is an error). With
    # several replicas and no per-replica URLs, none: the balancer's /metrics is one replica's, never the whole
    sources = urls if urls else ([target.base_url] if replicas == 1 else [])

    def snapshot(url: str) -> dict[str, Any] | None:
        try:
            return metrics.scrape_metrics(url, api_key=api_key, model_name=target.served_model_name)
        except Exception as exc:
            if not urls:  # /metrics is optional (an endpoint may not expose it)
                return None
            raise PointError(redact.redact_text(  # a replica that cannot be read: an error, never a silent zero
                f"point {plan.id}: replica /metrics {redact.redact_url(url)} could not be read "
                f"({type(exc).__name__}: {exc}); every replica's /metrics must answer to measure the deployment",
                [api_key])) from None

    befores = [snapshot(u) for u in sources]
    from pytest_roofline.measure import probe

    probe_before = probe.probe_host()  # the machine just before the load (measure/probe.py), the engine idle
    # The server-side timeline is opt-in (sweep.timeline): on this project's 2-core machine, polling the CPU
    # engine's /metrics while a point ran — from a thread or from a child process, every 0.25 s or every 2 s —
    # cut a closed loop of 8 to 1.3–2.6 requests in flight and delayed the client's reads by up to 1.1 s;
    # without polling the same point held 7.9 in flight. Counters and histograms need only before/after.
    interval = spec.sweep.timeline_interval_s
    scrapers = [metrics.ProcessScraper(u, interval_s=interval, api_key=api_key,
                                      model_name=target.served_model_name).start()
                for u in (sources if interval else [])]
    from pytest_roofline.measure.loadgen import _multiproc

    one_process = _multiproc.resolve_processes(load) == 1
    repeats = max(1, spec.sweep.repeats)
    if repeats > 1:  # sweep.repeats: every repeat runs to its cap (the adaptive rule decides single runs)
        stop_check = None
    results: list[Any] = []  # one per repeat; repeat k > 0 sends fresh prompts (seed + k): no repeat hits the cache
    files: list[str] = []
    try:
        for k in range(repeats):
            run = load if k == 0 else dataclasses.replace(load, seed=load.seed + k)
            requests_file = out_dir / (f"{plan.id}.requests.jsonl" if k == 0 else f"{plan.id}.r{k + 1}.requests.jsonl")
            try:
                result = loadgen.run_load(target.base_url, run, api_key=api_key, on_progress=on_progress,
                                          stop_check=stop_check if one_process else None)
            except BaseException as exc:  # Ctrl-C, SIGTERM: keep what had finished, marked partial, never scored
                _keep_partial_records(exc, requests_file)
                raise
            results.append(result)
            files.append(requests_file.name)
            with requests_file.open("w", encoding="utf-8") as fh:
                for rec in result.records:
                    fh.write(json.dumps(redact.redact_data(rec.to_dict())) + "\n")
            failure = failed_point_reason(result)
            if failure is not None:  # not a measurement: the sweep records the error, the point is never stored
                raise PointError(f"{failure} (requests: {requests_file.name})")
    finally:
        timelines = [sc.stop() for sc in scrapers] if scrapers else [[] for _ in sources]
    held = _defer_interrupts()  # every request completed: a Ctrl-C now waits until the point is stored (the sweep
    try:                        # raises it after storing it: _raise_deferred)
        result, requests_file = results[0], out_dir / files[0]
        settle_s = _settle_after_discards(result, sources, snapshot)
        afters = [snapshot(u) for u in sources]
        probe_after = probe.probe_host()  # and just after it
        # each repeat's figures with its steady window and intervals (measure.stats.steady_summary); several repeats
        # are averaged, with a Student-t interval over them (stats.combine_repeats)
        client = stats.combine_repeats([stats.summarize(r, steady_state=spec.sweep.steady_state) for r in results])
        slo_ms = stats.slo_ms_of(spec.slo)
        if slo_ms:  # vLLM's request_goodput under the file's slo: (measure.stats.goodput), every repeat's requests
            client["goodput"] = stats.goodput_of_records([rec for r in results for rec in r.records], slo_ms,
                                                         client.get("request_throughput_req_s"))
        server: dict[str, Any] | None
        if urls:  # counters summed, gauge peaks maxed over the replicas (metrics.aggregate_replicas)
            server = metrics.aggregate_replicas(urls, befores, afters, timelines, contamination_threshold=contamination)
        elif sources:
            server = metrics.summarize(befores[0], afters[0], timelines[0], contamination_threshold=contamination)
        else:
            server = {"replica_count": replicas, "replicas": [], "note": (
                f"{replicas} replicas and no per-replica /metrics (--roofline-replica-metrics or "
                "engine.replica_metrics): the load balancer's /metrics shows one replica at most, so no server-side "
                "figure was taken")}
        record = point_record(plan.to_dict(), started_at=result.started_at, finished_at=results[-1].finished_at,
                              duration_s=sum(stats.measured_duration_s(r) for r in results) / len(results),
                              client=cast(ClientStats, client),
                              server=cast("ServerStats | None", server), requests_file=requests_file.name,
                              loadgen=cast(LoadgenChecks, stats.loadgen_checks(result)),
                              flags=[f for f in (small_sample_flag(client.get("completed")),
                                                 stats.burst_flag(client.get("bursts")),
                                                 stats.held_flag(client, plan.concurrency if plan.mode == "closed"
                                                                 else None, result.read_lag_ms, plan.num_requests),
                                                 # open loop: the engine completed requests below the offered rate
                                                 stats.rate_flag(result.records, plan.rate_req_s if plan.mode == "open"
                                                                 else None, plan.burstiness))
                                     if f])
        record["host_probe"] = {"before_gflop_per_s": round(probe_before.gflop_per_s, 4),
                                "after_gflop_per_s": round(probe_after.gflop_per_s, 4),
                                "threads": probe_before.threads, "method": probe.PROBE_METHOD}
        if len(results) > 1:  # every repeat's per-request file (the first is requests_file)
            record["requests_files"] = files  # type: ignore[typeddict-unknown-key]
        if shape != datasets.ResolvedWorkload():  # the workload as run: its description and realised lengths
            record["workload"] = {**shape.to_dict(),  # type: ignore
                                  "realised": datasets.realised([x for r in results for x in r.records])}
        if stop_check is not None:  # the adaptive sweep's decision: looks, targets, why it stopped (plan/stopping.py)
            record["adaptive"] = {**stop_check.summary(result.records),  # type: ignore[typeddict-unknown-key]
                                  "discarded": sum(1 for r in result.records if r.discarded),
                                  "abort_settle_s": settle_s,
                                  **({} if one_process else {"note": "multi-process load generator: ran to the cap"})}
            if stop_check.stopped is not None and plan.num_requests is not None:
                # what ran, not the cap (the cap keeps its own name): the measured requests sent before the stop
                record["num_requests_cap"] = plan.num_requests  # type: ignore[typeddict-unknown-key]
                record["num_requests"] = sum(1 for r in result.records if r.in_sample)
        return record
    finally:
        if held:
            _end_deferral()


def workload_shape(spec: Spec, plan: PointPlan | None = None, *, for_load: bool = False,
                   workload: Mapping[str, Any] | None = None) -> Any:
    """The file's shared workload description (``measure.loadgen.datasets.resolve``); the batch-1 run keeps its fixed
    lengths. A dataset is tokenized with the served model's tokenizer (the tiny model's own). ``workload``: a
    prediction's ``setup: {workload: ...}`` (already merged over the file's by format/spec.py) in its place."""
    from pytest_roofline.measure.loadgen import datasets

    if plan is not None and plan.id == "batch1":
        return datasets.ResolvedWorkload()
    model_dir = None
    if _is_tiny(spec):
        from pytest_roofline.measure.engine import tiny_model

        model_dir = tiny_model.default_model_dir()
    elif spec.engine.get("model") and Path(str(spec.engine["model"])).is_dir():
        model_dir = Path(str(spec.engine["model"]))
    args = spec.engine.get("args") or {}  # a chat dataset is counted with the template the server is given
    template = args.get("chat_template", args.get("chat-template"))
    try:
        return datasets.resolve(spec.workload if workload is None else workload, model_dir=model_dir,
                                 for_load=for_load, chat_template=str(template) if template else None)
    except WorkloadError as exc:
        raise PointError(f"{spec.path}: {exc}") from None


def check_dataset_fits(spec: Spec, shape: Any, max_model_len: int | None) -> None:
    """Refuse, before a request is sent, a dataset whose prompt is longer than the served ``max_model_len``:
    vLLM answers such a request with HTTP 400 (the prompt does not fit its context), so the point could only
    error after its load ran. ``shape``: the resolved workload; ``max_model_len``: the target's (from
    ``/v1/models``, else ``engine.args.max_model_len``), None when unknown (nothing checked)."""
    ds = getattr(shape, "dataset", None)
    if ds is None or not max_model_len or ds.estimated or (shape.chat is not None and shape.chat.estimated):
        return  # an estimated length (chars/4, a per-message guess) refuses nothing
    over = [k for k, n in enumerate(ds.input_lens) if n > max_model_len]
    if over:
        k = over[0]
        raise PointError(f"{spec.path}: workload.dataset {ds.source}: {len(over)} of {len(ds.input_lens)} prompts "
                         f"are longer than the server's max_model_len {max_model_len} (entry {k + 1} of the file: "
                         f"{ds.input_lens[k]} tokens); vLLM refuses them "
                         "(HTTP 400). Raise engine.args.max_model_len or drop those entries")


def replica_count(spec: Spec) -> int:
    """Replicas behind the measured endpoint (``engine.replicas``; 1 when the file does not say)."""
    return int(spec.engine.get("replicas") or 1)


def replica_metrics_for(spec: Spec, cli_urls: list[str] | None) -> list[str]:
    """The per-replica /metrics base URLs of a file's deployment: ``--roofline-replica-metrics`` (the command line
    wins), else ``engine.replica_metrics``; empty when neither says. Their number must be ``engine.replicas``."""
    urls = [u.strip().rstrip("/") for u in (cli_urls or spec.engine.get("replica_metrics") or [])]
    replicas = replica_count(spec)
    if urls and len(urls) != replicas:
        where = "--roofline-replica-metrics" if cli_urls else "engine.replica_metrics"
        raise PointError(f"{spec.path}: {where} names {len(urls)} /metrics URL(s) for engine.replicas: {replicas}; "
                         "give one per replica")
    return urls


@dataclass
class _Run:
    """The state of one (spec, target) sweep."""

    spec: Spec
    plans: list[PointPlan]
    writer: ResultsWriter | None = None
    done: bool = False
    failed: dict[str, PointError] = field(default_factory=dict)
    fatal: PointError | None = None
    hardware_override: str | None = None
    #: the point being measured: (id, its place counted from 1, the points planned); None between points
    current: tuple[str, int, int] | None = None

    def measurement(self) -> _LiveMeasurement:
        return _LiveMeasurement(self)


class _LiveMeasurement(RecordedMeasurement):
    def __init__(self, run: _Run):
        super().__init__(run.writer.data if run.writer else {"points": []}, source="live sweep")
        self.run = run

    def point(self, *, concurrency: int | None = None, rate: float | None = None) -> PointRecord:
        try:
            return super().point(concurrency=concurrency, rate=rate)
        except NotMeasured:
            for pid, err in self.run.failed.items():
                p = next((p for p in self.run.plans if p.id == pid), None)
                if p and ((concurrency is not None and p.concurrency == concurrency and p.mode == PointMode.CLOSED)
                          or (rate is not None and p.rate_req_s == rate)):
                    raise err from None
            raise

    def points(self) -> list[PointRecord]:
        if self.run.failed:
            first = next(iter(self.run.failed.values()))
            raise PointError(f"the sweep is incomplete ({', '.join(self.run.failed)} not measured): {first}",
                             first.log_tail)
        return super().points()

    def engine_report(self) -> EngineReport | None:
        rep = super().engine_report()
        if rep is None and self.run.fatal is not None:
            raise self.run.fatal
        return rep


def _engine_death(target: Any, exc: BaseException) -> str | None:
    """One line when the point failed because the engine's process died (which process, its exit code or signal,
    the log's path); None for an endpoint (not ours to watch) and for a point that failed with the engine alive."""
    from pytest_roofline.errors import EngineDied

    death = getattr(target, "death", None)
    if death is None or isinstance(exc, EngineDied):  # EngineDied says it on its first line already
        return None
    line = death()
    if line is None or line in str(exc):
        return None
    return str(line)


def _interrupt_name(exc: BaseException) -> str:
    """How the run was stopped, in words: a SIGTERM reaches it as ``KeyboardInterrupt("SIGTERM")``
    (``measure.engine._process.install_hooks``), a Ctrl-C as a plain KeyboardInterrupt."""
    if isinstance(exc, KeyboardInterrupt):
        return "SIGTERM" if str(exc) == "SIGTERM" else "Ctrl-C (SIGINT)"
    return type(exc).__name__


@contextlib.contextmanager
def _interrupts_held() -> Iterator[None]:
    """Ctrl-C is held off while an interrupted run writes down how it ended (the results file's status, the
    engine log's note). ``timeout -s INT`` signals the run and then its whole process group, the run again, and
    people press Ctrl-C twice: the second KeyboardInterrupt landed inside the results file's write, which then
    still said ``running`` (and, once the run was gone, its guard's "killed"). The run is ending already, so a
    Ctrl-C in that moment is dropped; only the main thread can set the handler (elsewhere nothing is held)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    try:
        previous = signal.signal(signal.SIGINT, lambda signum, frame: None)
    except (ValueError, OSError):
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous if previous is not None else signal.default_int_handler)


#: the SIGINT handler a point's after-work replaced (:func:`_defer_interrupts`), and the interrupts it deferred
_DEFERRAL: dict[str, Any] = {"previous": None, "held": False, "seen": 0}


def _defer_interrupts() -> bool:
    """From the end of a point's load to its record: a Ctrl-C is noted, not raised, so a point whose every request
    completed is stored before the run stops (trial s25c #7: a Ctrl-C during the final /metrics scrape and host probe
    left a complete 60-request point out of results.json, its records on disk and never named). The after-work takes
    about 2 s; :func:`_end_deferral` puts the handler back as it ends, whatever ends it, and the sweep raises the
    noted Ctrl-C once the point is stored (:func:`_raise_deferred`). Whether it took the handler (only the main
    thread can)."""
    if threading.current_thread() is not threading.main_thread() or _DEFERRAL["held"]:
        return False
    def note(signum: int, frame: Any) -> None:
        _DEFERRAL["seen"] += 1
    try:
        _DEFERRAL["previous"] = signal.signal(signal.SIGINT, note)
    except (ValueError, OSError):
        return False
    _DEFERRAL["held"], _DEFERRAL["seen"] = True, 0
    return True


def _end_deferral() -> bool:
    """Restore the handler :func:`_defer_interrupts` replaced; whether a Ctrl-C came while it was held (the count is
    kept for :func:`_raise_deferred`)."""
    if not _DEFERRAL["held"]:
        return False
    previous = _DEFERRAL["previous"]
    signal.signal(signal.SIGINT, previous if previous is not None else signal.default_int_handler)
    _DEFERRAL["held"] = False
    return bool(_DEFERRAL["seen"])


def _raise_deferred() -> None:
    """Raise the Ctrl-C a point's after-work noted (once: the count is cleared)."""
    if _DEFERRAL["seen"]:
        _DEFERRAL["seen"] = 0
        raise KeyboardInterrupt


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _sweep_interrupted(run: _Run, how: str, *, for_file: bool = False,
                       partial: tuple[Path, int, int] | None = None) -> str:
    """What an interrupted sweep says: where it was, which points were measured and kept, and (for the terminal)
    where, and that no measured prediction was scored. ``for_file``: the results file's error message.
    ``partial``: the file the interrupted point's finished requests were kept in, how many, how many warm-up."""
    assert run.writer is not None
    kept = [str(p.get("id")) for p in run.writer.data.get("points", [])]
    where = (f"during point {run.current[0]} ({run.current[1]}/{run.current[2]})" if run.current
             else "between points")
    part = (f"; its {_plural(partial[1], 'finished request')}{f' ({partial[2]} warm-up)' if partial[2] else ''} "
            f"kept in {partial[0].name} (partial: not a measurement, never scored)" if partial is not None else "")
    if for_file:
        return (f"interrupted by {how} {where}; "
                + (f"the {_plural(len(kept), 'point')} above ({', '.join(kept)}) "
                   f"{'was' if len(kept) == 1 else 'were'} measured before it and kept"
                   if kept else "no point was measured before it") + part)
    return (f"{how} {where} of {Path(run.spec.path).name}: "
            + (f"{_plural(len(kept), 'measured point')} kept ({', '.join(kept)})" if kept else "no point measured")
            + f" in {run.writer.path} (status: interrupted){part}; no measured prediction was scored")


def _start_interrupted(name: str, log_path: Path, waited_s: float, stop_s: float | None, exc: BaseException) -> str:
    """What an interrupt during the engine's start says, on the terminal and at the end of the engine's log (which
    keeps whatever the engine printed; an empty one gets the note too, so it does not read as a lost log)."""
    how = _interrupt_name(exc)
    try:
        with open(log_path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            written = fh.tell() > 0
            if written:
                fh.seek(-1, os.SEEK_END)
            open_line = written and fh.read(1) != b"\n"
            fh.seek(0)  # the engine printed something: a line that is not the plugin's own launch header
            printed = written and any(line.strip() and not line.startswith(LAUNCH_HEADER_PREFIX.encode())
                                      for line in fh)
    except OSError:
        printed = open_line = False
    note = (f"[pytest-roofline] interrupted by {how} {waited_s:.0f} s into the engine's start: the engine was "
            "stopped before it was ready" + ("" if printed else "; it had printed nothing by then"))
    with contextlib.suppress(OSError), open(log_path, "a", encoding="utf-8") as fh:
        fh.write(("\n" if open_line else "") + note + "\n")
    stopped = f" (its stop took {stop_s:.0f} s)" if stop_s is not None and stop_s >= 1 else ""
    return (f"{how} during engine start for {name}, {waited_s:.0f} s in: the engine was stopped before it was "
            f"ready{stopped}; nothing was measured or scored; engine log ("
            + ("what it printed" if printed else "it printed nothing by then") + f"): {log_path}")


def _gb_per_s(bytes_per_s: float | None) -> str:
    """A memory bandwidth for a message, in GB/s (1e9 bytes/s)."""
    return f"{bytes_per_s / 1e9:,.0f} GB/s" if bytes_per_s else "no bandwidth figure"


class _PointTracker:
    """Turns the load generator's progress of one point into :class:`PointUpdate` events."""

    def __init__(self, owner: Measurements, file: str, plan: PointPlan, index: int, count: int):
        self.owner, self.file, self.plan, self.index, self.count = owner, file, plan, index, count
        self.t0 = time.monotonic()
        self.last = PointUpdate(file, plan.id, index, count, "start", 0.0, 0, 0, plan.num_requests, 0, None)
        owner._tell("point_started", self.last)

    def on_progress(self, p: Any) -> None:  # loadgen.Progress, from inside the load generator's event loop
        self.last = PointUpdate(self.file, self.plan.id, self.index, self.count, p.phase, p.elapsed_s, p.completed,
                                p.failed, p.total, p.in_flight,
                                output_tok_per_s(p.completed, self.plan.output_len, p.elapsed_s)
                                if p.phase == "measure" else None)
        self.owner._tell("point_update", self.last)

    def done(self, error: str | None, *, stopped: str | None = None) -> None:
        last = self.last
        self.owner._tell("point_done", PointUpdate(
            last.file, last.point_id, last.index, last.count, last.phase, time.monotonic() - self.t0,
            last.completed, last.failed, last.total, last.in_flight, last.output_tok_per_s, stopped), error)


class Measurements(MeasurementProvider):
    """Live measurement provider for one pytest session."""

    def __init__(self, *, mode: EngineReportMode, gpu: str | None, endpoint: str | None, endpoint_key_env: str | None,
                 out_dir: Path, reanchor: bool, plans: dict[str, list[PointPlan]],
                 replica_metrics: list[str] | None = None, knee_only: dict[str, set[str]] | None = None):
        self.mode, self.gpu, self.endpoint, self.endpoint_key_env = mode, gpu, endpoint, endpoint_key_env
        #: --roofline-replica-metrics: each replica's /metrics base URL behind --endpoint (None: the files say)
        self.replica_metrics = list(replica_metrics) if replica_metrics else None
        self.out_dir = Path(out_dir)
        self.reanchor = reanchor
        self.plans = plans
        #: per file, the ids of points only a throughput knee reads (an adaptive sweep bisects over them)
        self.knee_only = dict(knee_only or {})
        self.targets: dict[str, Target] = {}
        self.target_errors: dict[str, PointError] = {}
        self.runs: dict[str, _Run] = {}
        self.detected: gpu_mod.DetectedGPU | None = None
        self._detected_done = False
        self.timings: list[tuple[str, float]] = []
        #: told of the engine's start and of each point as it runs (the pytest glue draws it); None: silent
        self.progress: SweepProgress | None = None
        #: set when a Ctrl-C (or SIGTERM) stopped the run: one line saying where it was, what was measured and kept,
        #: and where (the pytest glue ends the run with it instead of a traceback)
        self.interruption: str | None = None

    @classmethod
    def from_options(cls, rs: Any, items: list[Any]) -> Measurements:
        by_spec: dict[str, list[Any]] = {}
        specs: dict[str, Spec] = {}
        for item in items:
            by_spec.setdefault(item.spec.path, []).append(item.prediction)
            specs[item.spec.path] = item.spec
        # a prediction whose setup: is not what the file's run launches or sends is checked against the model only
        # (plan.unmeasured_reason): it needs neither a point nor an engine
        plans = {path: plan_points(specs[path], preds) for path, preds in by_spec.items()
                 if needs_engine([p for p in preds if unmeasured_reason(specs[path], p) is None])}
        knee_only = {path: {p.id for p in pts if is_knee_only(p, by_spec[path])} for path, pts in plans.items()}
        return cls(mode=rs.mode, gpu=rs.gpu, endpoint=rs.endpoint, endpoint_key_env=rs.endpoint_key_env,
                   out_dir=rs.out_dir, reanchor=rs.reanchor, plans=plans,
                   replica_metrics=getattr(rs, "replica_metrics", None), knee_only=knee_only)

    # ---- hardware -----------------------------------------------------------------------------------------
    @property
    def detected_gpu(self) -> gpu_mod.DetectedGPU | None:
        """The GPU detected for this run, once a sweep looked (``--gpu FAMILY``); None before, or with none."""
        return self.detected

    def _detect(self) -> gpu_mod.DetectedGPU | None:
        if not self._detected_done:
            self._detected_done = True
            self.detected = gpu_mod.detect() if self.gpu and self.gpu != "cpu" else None
        return self.detected

    def _check_hardware(self, spec: Spec) -> str | None:
        """None when the spec's hardware is what runs; the detected id when re-anchoring; else an error."""
        declared = hw_mod.get_hardware(spec.hardware)
        if self.mode != "engine" or self.gpu is None:  # engine mode is the one with --gpu (pytest_plugin.session)
            return None
        if self.gpu == "cpu":
            if declared.family != "cpu":
                raise PointError(f"--gpu cpu runs the CPU build of vLLM, but {spec.path} declares hardware "
                                 f"{declared.id} ({declared.name}); use a prediction file for hardware: cpu "
                                 "(e.g. predictions/cpu-tiny.yaml)")
            return None
        det = self._detect()
        if det is None:
            raise PointError(f"--gpu {self.gpu}: no NVIDIA GPU detected on this machine (nvidia-smi not found "
                             "or it lists no GPU; nor an AMD GPU from amd-smi / rocm-smi); run without --gpu for "
                             "the math alone, or --gpu cpu")
        if det.variant is None:
            raise PointError(f"detected GPU {det.name!r} is not in the hardware catalog; measure it with "
                             f"--reanchor after adding it, or declare its figures in the YAML")
        try:  # the catalog's one rule: the detected device must be a variant of --gpu's family (or its id)
            runs = hw_mod.resolve(self.gpu, detected=det.variant)
        except hw_mod.HardwareError as exc:
            raise PointError(f"--gpu {self.gpu}: {exc}") from None
        if runs.id == declared.id:
            return None
        if self.reanchor:
            return runs.id
        raise PointError(
            f"the YAML plans on {declared.id} but this machine has {runs.id} ({det.name}).\n"
            f"  declared: {_gb_per_s(declared.hbm_bytes_per_s)}, "
            f"{declared.peak_for('bf16') / 1e12:,.0f} TFLOP/s bf16, ridge {declared.ridge_flop_per_byte():.1f}\n"
            f"  detected: {_gb_per_s(runs.hbm_bytes_per_s)}, {runs.peak_for('bf16') / 1e12:,.0f} TFLOP/s "
            f"bf16, ridge {runs.ridge_flop_per_byte():.1f}\n"
            "  fix the YAML's hardware, or pass --reanchor to compute model values for the detected device "
            "(values in ink never move)")

    def hardware_override(self, spec: Spec) -> str | None:
        run = self.runs.get(spec.path)
        return run.hardware_override if run else None

    # ---- targets ------------------------------------------------------------------------------------------
    def _target(self, spec: Spec) -> Target:
        from pytest_roofline.measure.engine import Endpoint, EndpointError, EngineError

        if self.mode == "endpoint":
            key = "endpoint"
            if key not in self.targets and key not in self.target_errors:
                try:
                    key_env = self.endpoint_key_env
                    if key_env is None and os.environ.get("OPENAI_API_KEY"):
                        key_env = "OPENAI_API_KEY"
                    if self.endpoint is None:  # endpoint mode is the one with --endpoint URL (pytest_plugin.session)
                        raise EndpointError("no --endpoint URL given")
                    self.targets[key] = Endpoint(self.endpoint, api_key_env=key_env or None).connect()
                except (EndpointError, OSError) as exc:
                    self.target_errors[key] = PointError(f"--endpoint: {exc}")
        else:
            det = self._detect() if self.gpu and self.gpu != "cpu" else None
            try:
                cfg = engine_config_for(spec, device="cpu" if self.gpu == "cpu" else "cuda",
                                        gpus_visible=det.count if det is not None else None)
            except SpecError as exc:  # e.g. TP x PP beyond this machine's GPUs: every prediction of the file errors
                raise PointError(str(exc)) from None
            key = cfg.key()
            if key not in self.targets and key not in self.target_errors:
                from pytest_roofline.measure.engine import Engine

                self.out_dir.mkdir(parents=True, exist_ok=True)
                log_path = self.out_dir / f"engine-{key}.log"
                eng = Engine(cfg, log_path)
                t0 = time.monotonic()
                name = Path(spec.path).name
                try:
                    timeout = float(spec.engine.get("startup_timeout") or 900.0)
                    eng.start(timeout_s=timeout, on_wait=self._engine_waiter(name, eng, t0))
                    self.targets[key] = eng
                    self.timings.append((f"engine start ({name})", time.monotonic() - t0))
                    self._tell("engine_done", name, time.monotonic() - t0, None)
                except EngineError as exc:
                    self.target_errors[key] = PointError(f"the engine did not start: {exc}",
                                                         getattr(exc, "log_tail", "") or eng.log_tail(60))
                    self._tell("engine_done", name, time.monotonic() - t0, str(exc).splitlines()[0])
                except KeyboardInterrupt as exc:  # Engine.start has stopped the engine before this
                    with _interrupts_held():
                        after = eng.interrupted_after_s
                        self.interruption = _start_interrupted(
                            name, eng.log_path, after if after is not None else time.monotonic() - t0,
                            eng.interrupt_stop_s, exc)
                    raise
        if key in self.target_errors:
            raise self.target_errors[key]
        return self.targets[key]

    # ---- the sweep ----------------------------------------------------------------------------------------
    def for_spec(self, spec: Spec) -> _LiveMeasurement:
        run = self.runs.get(spec.path)
        if run is None:
            run = self.runs[spec.path] = _Run(spec, self.plans.get(spec.path, []))
            try:
                run.hardware_override = self._check_hardware(spec)
                self._sweep(run)
            except PointError as exc:
                run.fatal = exc
            except KeyboardInterrupt as exc:  # before the first point (the engine's report, the setup)
                if self.interruption is None:
                    self.interruption = (f"{_interrupt_name(exc)} while {Path(spec.path).name} was being set up, "
                                         "before its first point: nothing was measured or scored")
                raise
        if run.fatal is not None and run.writer is None:
            raise run.fatal
        return run.measurement()

    def _sweep(self, run: _Run) -> None:
        spec = run.spec
        if self.mode != "endpoint" and replica_count(spec) > 1:
            raise PointError(f"{spec.path}: engine.replicas: {replica_count(spec)} describes a deployment of several "
                             "replicas behind a load balancer; --gpu starts one engine: measure the deployment with "
                             "--endpoint URL --roofline-replica-metrics URL ... (one per replica)")
        replica_urls = replica_metrics_for(spec, self.replica_metrics)
        target = self._target(spec)
        stem = Path(spec.path).stem
        out = self.out_dir / stem
        out.mkdir(parents=True, exist_ok=True)
        det = self._detect()
        setup = {
            "predictions_file": spec.path,
            "hardware": {"declared": spec.hardware, "detected": det.to_dict() if det else None,
                         "reanchored_to": run.hardware_override},
            "model": {"name": spec.model if isinstance(spec.model, str) else spec.model.get("name"),
                      "path": getattr(getattr(target, "config", None), "model", None)},
            "engine": target.launch_info(),
            "workload": dict(spec.workload),
            "mode": self.mode,
        }
        if replica_count(spec) > 1 or replica_urls:
            setup["deployment"] = {"replicas": replica_count(spec),
                                   "replica_metrics": [redact.redact_url(u) for u in replica_urls]}
        if hasattr(target, "metrics_base_url"):  # an endpoint: its KV report from a replica's own /metrics
            target.metrics_base_url = replica_urls[0] if replica_urls else None
        report = target.report()
        if self.mode == "engine":  # the engine started here must run what the file says: one error for the file
            diffs = applied.applied_differences(spec.engine, report)
            if diffs:
                raise PointError(f"{spec.path}: {applied.differences_text(diffs)}")
        run.writer = ResultsWriter(out / "results.json", new_results(setup), guard=True)
        run.writer.set_engine_report(report)
        token_range = tuple(spec.workload.get("token_id_range") or ())
        if not token_range:
            if _is_tiny(spec):
                from pytest_roofline.measure.engine import tiny_model

                token_range = (tiny_model.PROMPT_TOKEN_ID_MIN, tiny_model.PROMPT_TOKEN_ID_MAX + 1)
            else:
                token_range = DEFAULT_TOKEN_ID_RANGE
        api_key = target.api_key
        order: Any = run.plans
        if spec.sweep.adaptive:  # the highest concurrency first (its latency verdicts decide the points below it),
            from pytest_roofline.measure.plan import stopping  # then a knee's points as its bisection asks for them

            order = stopping.SweepOrder(run.plans, self.knee_only.get(spec.path, ()), spec.thresholds.knee_gain)
        try:
            self._run_points(spec, run, target, order, out, token_range, api_key, replica_urls, stem)
        except BaseException as exc:  # Ctrl-C (KeyboardInterrupt), SIGTERM's SystemExit: the file says so, then go on
            self._record_interrupt(run, exc)
            raise

    def _record_interrupt(self, run: _Run, exc: BaseException) -> None:
        """A sweep stopped by ``exc``: its results file says ``interrupted`` (with where, and which points were kept,
        for a Ctrl-C or SIGTERM) and :attr:`interruption` the terminal's line. A second Ctrl-C meanwhile is held
        off: it once cut the write short and left the file saying ``running``."""
        assert run.writer is not None
        with _interrupts_held():
            if run.writer.data.get("status") == "running":
                with contextlib.suppress(Exception):
                    if not isinstance(exc, Exception):
                        run.writer.add_error(run.current[0] if run.current else None,
                                             _sweep_interrupted(run, _interrupt_name(exc), for_file=True,
                                                                partial=getattr(exc, "partial_requests_file", None)))
                    run.writer.finish("interrupted")
            if not isinstance(exc, Exception):
                self.interruption = _sweep_interrupted(run, _interrupt_name(exc),
                                                       partial=getattr(exc, "partial_requests_file", None))

    def _run_points(self, spec: Spec, run: Any, target: Any, order: Any, out: Path, token_range: Any,
                    api_key: str | None, replica_urls: list[str], stem: str) -> None:
        """Measure the points in ``order`` into ``run.writer``, stopping at the first that cannot be measured."""
        from pytest_roofline.measure.plan import stopping

        assert run.writer is not None
        decided: list[tuple[PointPlan, list[Any]]] = []
        measured_ids: set[str] = set()
        fastest_probe: float | None = None  # the host probe of the run's fastest point so far (GFLOP/s)
        for i, plan in enumerate(order):
            stop: Any = None
            implied: list[Any] = []
            if spec.sweep.adaptive:
                reduced, implied = stopping.implied_by(plan, decided)
                stop = stopping.AdaptiveStop(reduced)
            t0 = time.monotonic()
            run.current = (plan.id, i + 1, len(run.plans))
            tracker = _PointTracker(self, Path(spec.path).name, plan, i + 1, len(run.plans))
            try:
                target.check_alive()
                point = run_point(target, plan, spec, out_dir=out, token_id_range=token_range,
                                  contamination=spec.thresholds.contamination, api_key=api_key,
                                  on_progress=tracker.on_progress if self.progress is not None else None,
                                  replica_metrics=replica_urls, stop_check=stop)
                target.check_alive()
                tracker.done(None, stopped=(point.get("adaptive") or {}).get("stopped"))  # type: ignore[attr-defined]
                if stop is not None and "adaptive" in point:  # (sweep.repeats > 1: every repeat ran to its cap)
                    decided.append((plan, list(stop.decisions) + implied))
                    point["adaptive"]["implied"] = [d.to_dict() for d in implied]  # type: ignore[typeddict-item]
                if spec.sweep.adaptive:
                    order.record(plan, point)
                from pytest_roofline.measure import probe

                hp = point.get("host_probe") or {}
                here = (hp.get("before_gflop_per_s", 0.0) + hp.get("after_gflop_per_s", 0.0)) / 2
                flag = probe.slower_machine_flag(here, fastest_probe)
                if flag:
                    point["flags"] = [*(point.get("flags") or []), flag]
                fastest_probe = max(fastest_probe or 0.0, here) or None
                run.writer.add_point(point)  # a disk that is full: this point and the rest are errors, said once
                if _DEFERRAL["seen"]:  # a Ctrl-C during its after-work: the point is stored, now the run stops
                    measured_ids.add(plan.id)
                    run.current = None
                    _raise_deferred()
            except Exception as exc:  # engine died, or the load could not run: this point and the rest fail
                died = _engine_death(target, exc)
                if died:  # said first, on a line of its own; the requests' failure reasons follow it
                    exc = PointError(f"{died}\n{exc}", getattr(exc, "log_tail", ""))
                tracker.done(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
                tail = target.log_tail(60)
                err = PointError(f"point {plan.id} could not be measured: {exc}", tail)
                for rest in [plan] + [p for p in run.plans if p.id not in measured_ids and p is not plan]:
                    run.failed[rest.id] = err if rest is plan else PointError(
                        f"point {rest.id} was not measured: the sweep stopped at {plan.id} ({exc})", tail)
                with contextlib.suppress(ResultsError):  # the file may be what failed (a full disk)
                    run.writer.add_error(plan.id, str(exc), tail)
                with contextlib.suppress(ResultsError):
                    run.writer.finish("aborted")
                return
            measured_ids.add(plan.id)
            run.current = None
            self.timings.append((f"{stem}:{plan.id}", time.monotonic() - t0))
        if spec.sweep.adaptive and order.skipped:  # knee-only points the bisection did not need: not run
            run.writer.data["setup"]["adaptive_not_run"] = {
                "points": [p.id for p in order.skipped],
                "reason": "only the throughput knee reads them, and its bisection over the grid did not need them"}
        run.writer.finish("complete")

    # ---- progress -----------------------------------------------------------------------------------------
    def _tell(self, method: str, *args: Any) -> None:
        """Pass one event to the progress reporter; one that raises is switched off, the sweep goes on."""
        if self.progress is None:
            return
        try:
            getattr(self.progress, method)(*args)
        except Exception:  # noqa: BLE001 - a display must never cost a measurement
            self.progress = None

    def _engine_waiter(self, name: str, eng: Any, t0: float) -> Callable[[str], None]:
        last = [-1.0]

        def on_wait(stage: str) -> None:  # called at 4 Hz: tell about once a second (it reads the log's tail)
            now = time.monotonic()
            if self.progress is None or now - last[0] < 1.0:
                return
            last[0] = now
            tail = eng.log_tail(1).strip().splitlines()
            line = tail[-1] if tail and not tail[-1].startswith(LAUNCH_HEADER_PREFIX) else ""  # vLLM's, not ours
            self._tell("engine_waiting", EngineWait(name, now - t0, stage, line))
        return on_wait

    def results_paths(self) -> list[Path]:
        return [r.writer.path for r in self.runs.values() if r.writer is not None]

    def summary_lines(self) -> list[str]:
        lines = []
        for path in self.results_paths():
            lines.append(f"roofline results: {path}")
        for _key, t in self.targets.items():
            if hasattr(t, "log_path"):
                lines.append(f"roofline engine log: {t.log_path}")
        if self.timings:
            total = sum(s for _, s in self.timings)
            lines.append("roofline timings: " + ", ".join(f"{n} {s:.1f}s" for n, s in self.timings)
                         + f" (total {total:.1f}s)")
        return lines

    def close(self) -> None:
        for t in self.targets.values():
            try:
                t.stop()
            except Exception:  # teardown must never mask the run's outcome
                pass
