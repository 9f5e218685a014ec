"""The prediction-file format: loading, validation with file:line errors, and its JSON Schema.

The YAML is read as PyYAML *nodes* (``yaml.compose``), never with ``safe_load``: every value keeps its line, and
every scalar keeps the text the user wrote, so ``1e3`` is a number, ``4.80`` keeps its precision and ``on`` is
never silently ``True``. The same field tables drive the validator and :func:`json_schema`.

A problem in the setup sections makes the whole file an error; a problem in one prediction makes only that
prediction an error (reported as its own test), so one typo never hides the others.
"""

from __future__ import annotations

import codecs
import dataclasses
import difflib
import math
import re
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from pytest_roofline.errors import (
    CalibrationError,
    CalibrationMismatchWarning,
    HardwareError,
    ModelArchError,
    SetupValueError,
    SpecError,
)
from pytest_roofline.format import workloads as workload_fields
from pytest_roofline.format.engine_command import check_command
from pytest_roofline.format.limits import DEFAULT_LIMITS, MAX_DEPTH, Limits, how_to_raise
from pytest_roofline.format.tolerance import TOLERANCE_HELP, Tolerance, ToleranceError, parse_tolerance
from pytest_roofline.model import calibration, serving
from pytest_roofline.model.setup import build_setup
from pytest_roofline.quantities import registry as qreg
from pytest_roofline.redact import redact_url
from pytest_roofline.units import DEFAULT_UNIT, GB, GIB, KB, KIB, MB, MIB, UnitError, parse_number, parse_value

__all__ = [
    "SpecError", "Spec", "Prediction", "Predicted", "PredictedKind", "Expectation", "Sweep", "load_spec", "loads_spec",
    "json_schema",
    "TOP_FIELDS", "PREDICTION_FIELDS", "Limits",
]


# ----------------------------------------------------------------------------------------------------------------
# field tables (the validator and the JSON Schema both read these)
# ----------------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class F:
    kind: str  # str | number | int | bool | map | list | any | value
    doc: str
    required: bool = False
    enum: tuple[str, ...] = ()


TOP_FIELDS: dict[str, F] = {
    "title": F("str", "a title for the scorecard"),
    "description": F("str", "free text"),
    "notes": F("str", "free text"),
    "hardware": F("any", "catalog id of the exact chip (e.g. a100-sxm4-80gb), or a mapping {id: ..., <field>: "
                         "override}", required=True),
    "model": F("any", "preset name (qwen3-8b), a path to a HF config.json, or a mapping {name: ..., <field>: "
                      "override} / a nominal model {params: 8.0e9, num_layers: 32, num_kv_heads: 8, head_dim: 128}; "
                      "a weight-quantization scheme as {name: ..., quantization: {method: awq, bits: 4, group_size: "
                      "128}} (a checkpoint's config.json quantization_config is read by itself)",
               required=True),
    "engine": F("map", "the serving engine: {name: vllm, version: '0.26.0', model: <HF id or path to serve>, args: "
                       "{gpu_memory_utilization: 0.9, ...}, env: {...}, reserves: {activation: 0.4 GiB, ...}}"),
    "workload": F("map", "{input_len: 1024, output_len: 1024, kv_context: 1000, sampling: {temperature: 0.8}}"),
    "sweep": F("map", "{mode: closed, concurrency: [1, 2, 4], requests_per_point: 10x, warmup: 2}"),
    "slo": F("map", "{ttft: 500 ms, tpot: 50 ms, percentile: p99}: defaults for goodput predictions"),
    "defaults": F("map", "{tolerance: ±10%, math_tolerance: ±0.5%, xfail_strict: true}"),
    "thresholds": F("map", "{knee_gain: 10%, ttft_knee_ratio: 2, contamination: 10%}"),
    "serving": F("map", "constants of the step-level serving model, overriding its defaults and any calibration: "
                        "{hbm_efficiency: 80%, flop_efficiency: 75%, mem_latency: 3 us, step_overhead: 3.3 ms, "
                        "per_seq_overhead: 0.05 ms} (`roofline predict --simulate` shows what they give)"),
    "calibration": F("str", "a calibration file written by `roofline calibrate` (a path relative to this file): "
                            "its fitted constants replace the serving model's defaults"),
    "model_column": F("str", "which model the 'model' column shows and CPU-only mode checks the ink against: "
                             "roofline (the decode roofline where it computes the quantity) or serving (the serving "
                             "model where it does). Default: the roofline for the quantities it computes, the "
                             "serving model for the measured ones only it computes, and for predicted: model",
                      enum=("roofline", "serving")),
    "predictions": F("list", "the predictions, each a test", required=True),
}
PREDICTION_FIELDS: dict[str, F] = {
    "id": F("str", "a unique id; -k selects by it", required=True),
    "quantity": F("str", "a quantity from the registry (see `roofline quantities`)"),
    "at": F("map", "where it applies: {concurrency: 64}, {batch: 16}, {concurrency: every}, ..."),
    "predicted": F("value", "the value in ink with its unit ('1,742 tok/s', '56.34 GiB'), 'model' to take the "
                            "model's value, none, true/false, or a word such as memory/compute"),
    "tolerance": F("any", f"the tolerance for the measured check: {TOLERANCE_HELP}"),
    "math_tolerance": F("any", "the tolerance of the CPU-only math check (default: half a unit in the last digit "
                               "written, or defaults.math_tolerance)"),
    "drift": F("any", "this prediction's drift threshold with --roofline-history: how far its measured value may move "
                      "from the baseline run(s) on the same setup, e.g. 5% or +10%/-3% (default: defaults.drift, "
                      "else --roofline-drift)"),
    "xfail": F("any", "expected to fail: a reason, or {reason: ..., strict: true, mode: math|measured|both}"),
    "notes": F("str", "free notes, shown in the scorecard"),
    "setup": F("map", "per-prediction setup overrides: {hardware: ..., model: ..., workload: {...}, engine: {...}}"),
    "marks": F("list", "extra pytest marker names for selection with -m"),
    "table": F("map", "a table of predictions: {at: batch, quantities: [t_mem, ...], rows: [[1, 4.82 ms, ...]]}"),
}
ENGINE_FIELDS: dict[str, F] = {
    "name": F("str", "the engine (vllm)", enum=("vllm",)),
    "version": F("str", "the engine version the predictions assume (its defaults are used), e.g. '0.26.0'"),
    "entrypoint": F("str", "whose defaults the model uses: serve (vllm serve, the default) or llm (the offline "
                           "LLM class; the measurement path still launches vllm serve)", enum=("serve", "llm")),
    "model": F("str", "what the engine serves: a HF id or a local path (default: the model preset's HF id)"),
    "args": F("map", "engine arguments (gpu_memory_utilization, max_model_len, block_size, max_num_seqs, "
                     "max_num_batched_tokens, dtype (the activation dtype), kv_cache_dtype (auto: the activation "
                     "dtype), quantization (vLLM's --quantization: fp8, awq, awq_marlin, gptq, ...), enforce_eager, "
                     "enable_prefix_caching, ...)"),
    "env": F("map", "environment variables for the engine process"),
    "reserves": F("map", "non-KV memory reserves: {activation: 0.4 GiB, non_torch: 0.5 GiB, cuda_graphs: 0.5 GiB}"),
    "cpu_kvcache_space": F("value", "CPU engine KV pool (VLLM_CPU_KVCACHE_SPACE), e.g. 1 GiB"),
    "startup_timeout": F("value", "how long to wait for readiness, e.g. 10 min"),
    "python": F("str", "the Python interpreter that runs the server (python -m vllm.entrypoints.openai.api_server), "
                       "e.g. /opt/vllm-venv/bin/python: vLLM in its own venv (default: pytest's own interpreter)"),
    "command": F("list", "the server's argv as a template instead, e.g. [docker, run, --rm, --gpus, all, --network, "
                         "host, vllm/vllm-openai:v0.10.0, --model, '{model}', --port, '{port}']; placeholders "
                         "{model} {port} {host} {served_model_name} {args} (the flags from engine.args; appended "
                         "when not placed); {port} is required: the plugin picks the port and checks health on it"),
    "replicas": F("int", "--endpoint: identical engine replicas behind the endpoint's load balancer (default 1); "
                         "throughput at concurrency C scales to replicas × one replica's at C ÷ replicas, latencies "
                         "are one replica's at C ÷ replicas, KV capacity and batch-1 figures stay per replica"),
    "replica_metrics": F("list", "--endpoint: each replica's own /metrics base URL, one per replica, e.g. "
                                 "[http://10.0.0.5:8000, http://10.0.0.6:8000] (--roofline-replica-metrics wins); "
                                 "a load balancer's /metrics is one replica's at most"),
}
WORKLOAD_FIELDS: dict[str, F] = {
    "input_len": F("length", "prompt tokens per request: a number (exact), or a distribution {dist: uniform, min: 64, "
                             "max: 512} | {dist: normal, mean: 256, std: 64, min: 16, max: 1024} | {dist: file, "
                             "path: lens.txt, order: sample|sequential}"),
    "output_len": F("length", "output tokens per request (ignore_eos): a number (exact) or a distribution as "
                              "input_len"),
    "dataset": F("map", "prompts from a file: {path: prompts.jsonl, format: jsonl|sharegpt, prompt_field: prompt, "
                        "output_field: output_len, order: sequential|sample, tokenizer: path/to/tokenizer.json}"),
    "prefix_share": F("number", "share of each prompt's tokens that is a prefix common to all requests, in [0, 1)"),
    "ramp_up": F("map", "open loop: the rate rises over each point's requests, as vllm bench serve --ramp-up-*: "
                        "{strategy: linear|exponential, start_rps: 1, end_rps: 8}"),
    "kv_context": F("number", "KV tokens per sequence the decode model charges (default input_len + output_len/2)"),
    "sampling": F("map", "sampling parameters sent with each request (temperature, top_p, top_k)"),
    "shared_prefix_len": F("int", "leading tokens shared by every request of a point (default 0: none)"),
    "seed": F("int", "seed of the prompts and arrival schedules"),
    "api": F("str", "the API the load generator calls: completions (/v1/completions, token-id prompts of exactly "
                    "input_len, the default) or chat (/v1/chat/completions: a text message the server wraps in the "
                    "model's chat template, so the prompt is about input_len words plus the template's tokens; "
                    "the server's usage.prompt_tokens is recorded)", enum=("completions", "chat")),
}
SWEEP_FIELDS: dict[str, F] = {
    "mode": F("str", "closed (fixed concurrency) or open (arrival rate)", enum=("closed", "open")),
    "concurrency": F("list", "closed-loop concurrencies to run"),
    "rates": F("list", "open-loop arrival rates (req/s)"),
    "burstiness": F("number", "open loop: gamma shape (1 = Poisson)"),
    "requests_per_point": F("value", "requests per point: a number, or '10x' for 10 × concurrency"),
    "duration": F("value", "run each point this long instead, e.g. 3 min"),
    "warmup": F("int", "warm-up requests per point, excluded from statistics (closed loop: at least one per client)"),
    "batch1": F("map", "a dedicated batch-1 run: {requests: 4, output_len: 1000}"),
    "request_timeout": F("value", "per-request timeout, e.g. 120 s"),
    "timeline": F("value", "poll /metrics this often while a point runs, for the server-side timeline (e.g. "
                           "1 s; default off: before/after snapshots only — polling perturbed the CPU engine)"),
    "adaptive": F("bool", "stop each point once its predictions' verdicts are decided (requests_per_point or "
                          "duration stays the cap); default false"),
    "repeats": F("int", "run each point this many times (default 1); each figure is then the mean of the repeats "
                        "with a Student-t interval over them, and the results keep every repeat"),
    "steady_state": F("str", "detect (the default: each point's warm-up and drain are measured and left out of its "
                             "intervals) or off (the whole measurement window)", enum=("detect", "off")),
    "processes": F("int", "client processes the load generator spreads each point over: a whole number >= 1 (default "
                          "1: one epoll loop on one core) or auto (as many as the offered token rate needs; 1 with "
                          "adaptive: true, whose stopping rule needs one process)"),
}
SLO_FIELDS = {"ttft": F("value", "TTFT SLO, e.g. 500 ms"), "tpot": F("value", "TPOT SLO, e.g. 50 ms"),
              "percentile": F("str", "p50 | p90 | p95 | p99", enum=("p50", "p90", "p95", "p99", "mean"))}
DEFAULTS_FIELDS = {"tolerance": F("any", "default tolerance of measured checks"),
                   "math_tolerance": F("any", "default tolerance of math checks"),
                   "drift": F("any", "default drift threshold of this file's predictions (e.g. 5%)"),
                   "xfail_strict": F("bool", "whether xfails are strict (default true)")}
THRESHOLD_FIELDS = {"knee_gain": F("value", "throughput knee: doubling concurrency adds less than this, e.g. 10%"),
                    "queue_fraction": F("value", "a point queues when vLLM's mean queue time exceeds this share of "
                                                 "its mean E2E latency, e.g. 10%"),
                    "ttft_knee_ratio": F("number", "TTFT knee: p99 > this × p50 (default 2)"),
                    "contamination": F("value", "prefix-cache hit rate above which a point is contaminated, e.g. 10%")}
XFAIL_FIELDS = {"reason": F("str", "why it is expected to fail", required=True),
                "strict": F("bool", "an unexpected pass fails the run (default true)"),
                "mode": F("str", "which check is expected to fail", enum=("math", "measured", "both"))}
TABLE_FIELDS = {"at": F("str", "the at-parameter in the first column (e.g. batch)", required=True),
                "quantities": F("list", "the quantity of each further column", required=True),
                "rows": F("list", "rows: [at-value, value, value, ...]", required=True)}

_BOOL_TRAPS = {"on", "off", "yes", "no", "y", "n"}


# ----------------------------------------------------------------------------------------------------------------
# the model a loaded file becomes
# ----------------------------------------------------------------------------------------------------------------
class PredictedKind(StrEnum):
    """How the value in ink was written (``predicted:``)."""

    NUMBER = "number"  # a number with its unit, e.g. 1,742 tok/s (value: SI float)
    MODEL = "model"  # "model": the analytical model's value is the prediction (value: None)
    NONE = "none"  # "none": the quantity does not exist here, e.g. no knee (value: None)
    BOOL = "bool"  # true / false (value: bool)
    WORD = "word"  # one of the quantity's choices, e.g. memory (value: str)


@dataclass(frozen=True)
class Predicted:
    kind: PredictedKind
    value: Any  # SI float, bool, str or None
    text: str
    unit: str = ""
    half_ulp_si: float = 0.0

    def __post_init__(self) -> None:  # built with the kind's value ("number") as well as the member
        object.__setattr__(self, "kind", PredictedKind(self.kind))


@dataclass(frozen=True)
class Expectation:
    reason: str
    strict: bool = True
    mode: str = "both"  # math | measured | both

    def applies(self, mode: str) -> bool:
        return self.mode in ("both", mode)


@dataclass
class Prediction:
    """One test: a quantity at a place, a value in ink and a tolerance (after table/`every` expansion)."""

    id: str
    quantity: str
    at: dict[str, Any]
    predicted: Predicted
    tolerance: Tolerance | None
    math_tolerance: Tolerance | None
    xfail: Expectation | None
    notes: str
    setup: dict[str, Any]
    marks: list[str]
    line: int
    file: str
    at_text: dict[str, str] = field(default_factory=dict)
    error: SpecError | None = None  # a prediction that did not validate becomes an error test
    tolerance_written: bool = False  # ``tolerance`` was written on the prediction, not taken from defaults.tolerance
    #: the drift threshold written for it (``drift: 5%``, or the file's ``defaults.drift``); "" when none is written
    drift: str = ""

    @property
    def q(self) -> qreg.Quantity:
        return qreg.get_quantity(self.quantity)


@dataclass(frozen=True)
class Sweep:
    mode: str = "closed"
    concurrency: tuple[int, ...] = ()
    rates: tuple[float, ...] = ()
    burstiness: float = 1.0
    requests_per_point: int | None = None
    requests_per_concurrency: float | None = 10.0
    duration_s: float | None = None
    warmup: int = 1
    batch1: Mapping[str, Any] | None = None
    request_timeout_s: float | None = None  # None: derived from each point's lengths (measure.sweep)
    timeline_interval_s: float | None = None
    adaptive: bool = False  # sweep.adaptive: stop a point once its verdicts are decided (measure/adaptive.py)
    repeats: int = 1  # sweep.repeats: runs of each point (measure.stats.combine_repeats)
    steady_state: str = "detect"  # sweep.steady_state: detect | off (measure.stats.steady_window)
    processes: int | str = 1  # sweep.processes: an int >= 1 or "auto" (measure.loadgen.LoadSpec.processes)

    @property
    def load_processes(self) -> int | str:
        """``processes`` as the load generator is given it: ``auto`` is 1 in an adaptive sweep (the stopping rule
        watches one process's records; an explicit count > 1 with ``adaptive: true`` is refused at load time)."""
        return 1 if self.adaptive and self.processes == "auto" else self.processes

    def num_requests(self, concurrency: int | None) -> int:
        if self.requests_per_point is not None:
            return self.requests_per_point
        return max(1, int(round((self.requests_per_concurrency or 10.0) * (concurrency or 1))))


@dataclass
class Spec:
    path: str
    title: str
    hardware: str
    hardware_overrides: dict[str, Any]
    model: Any
    model_overrides: dict[str, Any]
    engine: dict[str, Any]
    workload: dict[str, Any]
    sweep: Sweep
    slo: dict[str, Any]
    thresholds: qreg.Thresholds
    default_tolerance: Tolerance | None
    default_math_tolerance: Tolerance | None
    xfail_strict: bool
    predictions: list[Prediction]
    notes: str = ""
    #: ServingConstants field -> value (SI) from the file's serving: section
    serving_overrides: dict[str, float] = field(default_factory=dict)
    calibration_path: str | None = None
    calibration: Any = None  # model.calibration.Calibration, loaded with the file
    model_column: str = "auto"  # auto | roofline | serving
    #: problems that do not stop the file (a calibration fitted on another setup), also issued as warnings
    warnings: list[str] = field(default_factory=list)
    #: the serving model's simulated sweeps, per setup (filled by scoring; one simulation per point, not per test)
    serving_cache: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)
    #: ``defaults.drift``: the drift threshold of predictions that write none ("" when the file gives none)
    default_drift: str = ""


# ----------------------------------------------------------------------------------------------------------------
# node helpers
# ----------------------------------------------------------------------------------------------------------------
class _Ctx:
    def __init__(self, file: str, limits: Limits = DEFAULT_LIMITS):
        self.file = file
        self.limits = limits

    def err(self, node: yaml.Node | None, message: str, hint: str = "") -> SpecError:
        line = node.start_mark.line + 1 if node is not None else None
        return SpecError(message, file=self.file, line=line, hint=hint)

    def mapping(self, node: yaml.Node, what: str,
                fields: Mapping[str, F] | None) -> dict[str, tuple[yaml.Node, yaml.Node]]:
        if not isinstance(node, yaml.MappingNode):
            raise self.err(node, f"{what} must be a mapping (key: value lines)", _hint_for(fields))
        out: dict[str, tuple[yaml.Node, yaml.Node]] = {}
        for k, v in node.value:
            if not isinstance(k, yaml.ScalarNode):
                raise self.err(k, f"{what}: keys must be plain words")
            key = k.value
            if key in out:
                raise self.err(k, f"{what}: key {key!r} appears twice", "remove one of them")
            if fields is not None and key not in fields:
                raise self.err(k, f"{what}: unknown key {key!r}", _did_you_mean(key, fields))
            out[key] = (k, v)
        if fields is not None:
            for name, f in fields.items():
                if f.required and name not in out:
                    raise self.err(node, f"{what}: missing required key {name!r}", f"add `{name}:` — {f.doc}")
        return out

    def scalar(self, node: yaml.Node, what: str) -> str:
        if not isinstance(node, yaml.ScalarNode):
            raise self.err(node, f"{what} must be a single value, "
                                 f"not a {'list' if isinstance(node, yaml.SequenceNode) else 'mapping'}")
        return str(node.value)

    def text(self, node: yaml.Node, what: str) -> str:
        """A scalar that is read as a number, a unit or a tolerance: at most ``limits.max_value_length`` long."""
        text = self.scalar(node, what)
        if len(text) > self.limits.max_value_length:
            raise self.err(node, f"{what}: a value of {len(text):,} characters is longer than max_value_length "
                                 f"({self.limits.max_value_length:,}); a number with its unit is a few characters",
                           how_to_raise("max_value_length"))
        return text

    def string(self, node: yaml.Node, what: str, enum: tuple[str, ...] = ()) -> str:
        text = self.scalar(node, what)
        if enum and text not in enum:
            raise self.err(node, f"{what}: {text!r} is not one of {', '.join(enum)}", _did_you_mean(text, enum))
        return text

    def boolean(self, node: yaml.Node, what: str) -> bool:
        text = self.scalar(node, what).strip()
        if text.lower() == "true":
            return True
        if text.lower() == "false":
            return False
        if text.lower() in _BOOL_TRAPS:
            raise self.err(node, f"{what}: {text!r} is ambiguous (YAML 1.1 reads it as a boolean, other parsers as a "
                                 "string)", "write true or false")
        raise self.err(node, f"{what}: expected true or false, got {text!r}", "write true or false")

    def number(self, node: yaml.Node, what: str) -> float:
        text = self.text(node, what)
        try:
            value, _half, unit = parse_number(text)
        except UnitError:
            raise self.err(node, f"{what}: {text!r} is not a number", "write e.g. 1024, 1,024, 0.9 or 8.0e9") from None
        if unit:
            multiplier = _SHORTHAND_MULTIPLIERS.get(unit)
            if multiplier is not None:  # 2k: say what it stands for, both ways people mean it
                dec, binary = value * multiplier[0], value * multiplier[1]
                fix = f"write the number itself: {dec:,.0f} (or {binary:,.0f} if '{unit}' meant a power of 2)"
            else:
                fix = f"write the number alone, without {unit[:40]!r}: {value:g}"
            raise self.err(node, f"{what}: expected a bare number, got unit {unit[:40]!r}", fix)
        return value

    def integer(self, node: yaml.Node, what: str) -> int:
        v = self.number(node, what)
        if not float(v).is_integer():
            raise self.err(node, f"{what}: expected a whole number, got {v:g}")
        return int(v)

    def value(self, node: yaml.Node, what: str, dimension: str) -> float:
        text = self.text(node, what)
        try:
            return parse_value(text, dimension).si
        except UnitError as exc:
            raise self.err(node, f"{what}: {exc}", f"write e.g. {_example(dimension)}") from None

    def plain(self, node: yaml.Node) -> Any:
        """Plain data for free-form mappings (engine args, env, sampling); scalars keep YAML 1.2-ish typing."""
        if isinstance(node, yaml.MappingNode):
            for k, _v in node.value:
                if not isinstance(k, yaml.ScalarNode):
                    raise self.err(k, "keys must be plain words, not a list or a mapping")
            return {k.value: self.plain(v) for k, v in node.value}
        if isinstance(node, yaml.SequenceNode):
            return [self.plain(v) for v in node.value]
        text = node.value
        if isinstance(node, yaml.ScalarNode) and node.style in ("'", '"'):
            return text
        try:
            return plain_scalar(text)
        except AmbiguousScalar as exc:
            raise self.err(node, str(exc), "write true or false, or quote it") from None


class AmbiguousScalar(ValueError):
    """A plain scalar YAML 1.1 would read as a boolean (``yes``, ``off``, ...): refused, never guessed."""


def plain_scalar(text: str) -> Any:
    """An unquoted scalar of a free-form mapping (engine args, env, sampling), typed YAML 1.2-ish: true/false, null
    (``~``, empty), a bare number (``8,192`` an int, ``1e3``/``0.5`` a float), else the text itself: ``4GiB``
    and ``none`` stay strings, for vLLM to read. The one rule for the YAML reader and ``roofline ... --set``
    (:class:`AmbiguousScalar` for ``yes``/``no``/``on``/``off``/``y``/``n``)."""
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("null", "~", ""):
        return None
    if low in _BOOL_TRAPS:
        raise AmbiguousScalar(f"{text!r} is ambiguous (YAML 1.1 reads it as a boolean)")
    try:
        v, _h, unit = parse_number(text)
        if not unit:
            return int(v) if re.fullmatch(r"[-+]?[\d,_]+", text.strip()) else v
    except UnitError:
        pass
    return text


#: the shorthand multipliers people write after a count (``2k`` tokens): the decimal and the binary reading
_SHORTHAND_MULTIPLIERS: dict[str, tuple[int, int]] = {
    "k": (KB, KIB), "K": (KB, KIB), "M": (MB, MIB), "G": (GB, GIB),
}


def _did_you_mean(word: str, options: Mapping[str, Any] | tuple[str, ...] | list[str]) -> str:
    names = list(options)
    close = difflib.get_close_matches(word, names, n=3, cutoff=0.5)
    if close:
        return f"did you mean {' or '.join(repr(c) for c in close)}?"
    return "known keys: " + ", ".join(names)


def _hint_for(fields: Mapping[str, F] | None) -> str:
    return ("keys: " + ", ".join(fields)) if fields else ""


def _example(dimension: str) -> str:
    return {"throughput": "1,742 tok/s", "time": "500 ms", "bytes": "56.34 GiB", "bandwidth": "2,039 GB/s",
            "flops": "16.4 GFLOP", "flop_rate": "312 TFLOP/s", "intensity": "153 FLOP/byte", "ratio": "75% or 0.75",
            "count": "22,959", "request_rate": "50 req/s"}.get(dimension, "a number")


# ----------------------------------------------------------------------------------------------------------------
# loading
# ----------------------------------------------------------------------------------------------------------------
def load_spec(path: str | Path, *, limits: Limits | None = None) -> Spec:
    """Read a prediction file (UTF-8; an OSError when it cannot be read, a SpecError for anything in it)."""
    data = Path(path).read_bytes()
    return loads_spec(_decode(data, str(path)), file=str(path), limits=limits)


def _decode(data: bytes, file: str) -> str:
    """The file's text; a file that is not UTF-8 is a SpecError at the line of its first bad byte."""
    for bom, name in ((codecs.BOM_UTF32_LE, "UTF-32"), (codecs.BOM_UTF32_BE, "UTF-32"),
                      (codecs.BOM_UTF16_LE, "UTF-16"), (codecs.BOM_UTF16_BE, "UTF-16")):
        if data.startswith(bom):
            raise SpecError(f"the file is {name} (it starts with a {name} byte-order mark); prediction files are "
                            "UTF-8", file=file, line=1, hint="save it as UTF-8 (in most editors: 'Save with "
                            "encoding' → UTF-8)")
    if data.startswith(codecs.BOM_UTF8):  # a UTF-8 BOM is allowed at the start of a YAML stream (YAML 1.2, 5.2)
        data = data[len(codecs.BOM_UTF8):]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise SpecError(f"byte 0x{data[exc.start]:02x} at column {column} is not UTF-8 ({exc.reason})", file=file,
                        line=line, hint="save the file as UTF-8 (a Latin-1 or Windows-1252 'é' is one byte that "
                                        "UTF-8 does not accept)") from None


#: characters YAML does not allow in a stream (PyYAML's reader refuses them with a traceback-only error)
_NON_PRINTABLE = re.compile("[^\x09\x0A\x0D\x20-\x7E\x85\xA0-\uD7FF\uE000-\uFFFD\U00010000-\U0010FFFF]")


def _check_characters(text: str, file: str) -> None:
    m = _NON_PRINTABLE.search(text)
    if m is None:
        return
    pos, ch = m.start(), m.group()
    line = text.count("\n", 0, pos) + 1
    column = pos - (text.rfind("\n", 0, pos) + 1) + 1
    name = {"\x00": "a NUL byte", "\x07": "a BEL character", "\x1b": "an ESC character"}.get(ch, "a control character")
    hint = "remove it" + (" (a NUL byte often means the file is UTF-16 or binary, not UTF-8 text)"
                          if ch == "\x00" else "; write control characters in a quoted string as escapes (\"\\t\")")
    raise SpecError(f"{name} (U+{ord(ch):04X}) at column {column}: YAML does not allow it", file=file, line=line,
                    hint=hint)


class _LimitedLoader(yaml.SafeLoader):
    """PyYAML's safe composer, counting as it composes: nesting depth, recursive aliases and the number of nodes
    with every alias expanded — so an alias bomb is refused when it is counted, never expanded."""

    def __init__(self, stream: str, limits: Limits, file: str):
        super().__init__(stream)
        self.limits, self.file = limits, file
        self._depth = 0
        self._open: list[str] = []  # anchors of the collections being composed
        self._sizes: dict[int, int] = {}  # id(node) -> its node count with aliases expanded

    def _error(self, mark: Any, message: str, hint: str) -> SpecError:
        return SpecError(message, file=self.file, line=mark.line + 1 if mark is not None else None, hint=hint)

    def fetch_flow_collection_start(self, TokenClass: Any) -> None:  # noqa: N803 - PyYAML's name
        # refused while scanning: PyYAML's scanner does work per open flow level for every token (quadratic)
        if self.flow_level >= MAX_DEPTH:
            raise self._error(self.get_mark(), f"mappings and lists nest more than {MAX_DEPTH} levels deep here",
                              "a prediction file nests a few levels; flatten this value")
        super().fetch_flow_collection_start(TokenClass)

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()  # type: ignore[no-untyped-call]  # types-PyYAML leaves Parser's methods untyped
        if isinstance(event, yaml.AliasEvent):
            if event.anchor in self._open:
                self.get_event()  # type: ignore[no-untyped-call]  # types-PyYAML leaves Parser's methods untyped
                raise self._error(event.start_mark, f"the alias *{event.anchor} is inside its own anchor "
                                  f"&{event.anchor} (a recursive alias has no end)",
                                  "copy the values instead of referring to the mapping or list that holds them")
            return super().compose_node(parent, index)
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise self._error(event.start_mark, f"mappings and lists nest more than {MAX_DEPTH} levels deep here",
                              "a prediction file nests a few levels; flatten this value")
        anchor = getattr(event, "anchor", None)
        if anchor is not None:
            self._open.append(anchor)
        try:
            node: Any = super().compose_node(parent, index)
        finally:
            self._depth -= 1
            if anchor is not None:
                self._open.pop()
        if isinstance(node, yaml.SequenceNode):
            size = 1 + sum(self._sizes.get(id(child), 1) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            size = 1 + sum(self._sizes.get(id(k), 1) + self._sizes.get(id(v), 1) for k, v in node.value)
        else:
            size = 1
        self._sizes[id(node)] = size
        if size > self.limits.max_yaml_nodes:
            raise self._error(node.start_mark, f"this value holds more than max_yaml_nodes "
                              f"({self.limits.max_yaml_nodes:,}) YAML nodes once its aliases are expanded "
                              f"({size:,}; an alias bomb?)", how_to_raise("max_yaml_nodes"))
        return node


def _compose(text: str, file: str, limits: Limits) -> yaml.Node | None:
    _check_characters(text, file)
    loader = _LimitedLoader(text, limits, file)
    try:
        return loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise SpecError(f"YAML does not parse: {exc.problem or exc}", file=file,
                        line=mark.line + 1 if mark else None,
                        hint="check indentation and quoting; quote values containing ': ' or '#'") from None
    except yaml.YAMLError as exc:  # a reader error the character check did not foresee
        raise SpecError(f"YAML does not parse: {exc}", file=file, hint="save the file as plain UTF-8 text") from None
    except RecursionError:
        raise SpecError("the YAML nests too deeply to be read", file=file,
                        hint="a prediction file nests a few levels; flatten it") from None
    finally:
        loader.dispose()


def loads_spec(text: str, *, file: str = "<string>", limits: Limits | None = None) -> Spec:
    """Load a prediction file's text; every problem in it is a :class:`SpecError` naming the file and line."""
    limits = limits or DEFAULT_LIMITS
    ctx = _Ctx(file, limits)
    root = _compose(text, file, limits)
    if root is None:
        raise SpecError("the file is empty", file=file, hint="start with hardware:, model: and predictions:")
    top = ctx.mapping(root, "the file", TOP_FIELDS)

    hw_node = top["hardware"][1]
    hardware, hw_over = _hardware(ctx, hw_node)
    model, model_over = _model(ctx, top["model"][1])
    engine = _engine(ctx, top["engine"][1]) if "engine" in top else {"name": "vllm"}
    workload = _workload(ctx, top["workload"][1]) if "workload" in top else {}
    sweep = _sweep(ctx, top["sweep"][1]) if "sweep" in top else Sweep()
    slo = _slo(ctx, top["slo"][1]) if "slo" in top else {}
    thresholds = _thresholds(ctx, top["thresholds"][1]) if "thresholds" in top else qreg.Thresholds()
    dtol = dmtol = None
    xfail_strict = True
    default_drift = ""
    if "defaults" in top:
        d = ctx.mapping(top["defaults"][1], "defaults", DEFAULTS_FIELDS)
        if "tolerance" in d:
            dtol = _tolerance(ctx, d["tolerance"][1], "ratio", "", "defaults.tolerance", relative_only=True)
        if "math_tolerance" in d:
            dmtol = _tolerance(ctx, d["math_tolerance"][1], "ratio", "", "defaults.math_tolerance", relative_only=True)
        if "xfail_strict" in d:
            xfail_strict = ctx.boolean(d["xfail_strict"][1], "defaults.xfail_strict")
        default_drift = _drift(ctx, d["drift"][1], "defaults.drift") if "drift" in d else ""

    spec = Spec(
        path=file, title=ctx.scalar(top["title"][1], "title") if "title" in top else Path(file).stem,
        hardware=hardware, hardware_overrides=hw_over, model=model, model_overrides=model_over, engine=engine,
        workload=workload, sweep=sweep, slo=slo, thresholds=thresholds, default_tolerance=dtol,
        default_math_tolerance=dmtol, xfail_strict=xfail_strict, predictions=[],
        notes=ctx.scalar(top["notes"][1], "notes") if "notes" in top else "",
    )
    spec.default_drift = default_drift
    _check_setup(ctx, spec, hw_node, top["model"][1], root)
    if "serving" in top:
        spec.serving_overrides = _serving(ctx, top["serving"][1])
    if "model_column" in top:
        spec.model_column = ctx.string(top["model_column"][1], "model_column", TOP_FIELDS["model_column"].enum)
    if "calibration" in top:
        _calibration(ctx, spec, top["calibration"][1])
    preds_node = top["predictions"][1]
    if not isinstance(preds_node, yaml.SequenceNode):
        raise ctx.err(preds_node, "predictions must be a list (each item starts with '- id: ...')")
    if not preds_node.value:
        raise ctx.err(preds_node, "predictions is empty", "add at least one prediction")
    seen: dict[str, int] = {}
    for node in preds_node.value:
        for pred in _predictions(ctx, spec, node):
            if len(spec.predictions) >= limits.max_tests_per_file:
                raise SpecError(f"the file expands into more than max_tests_per_file "
                                f"({limits.max_tests_per_file:,}) tests (reached at this prediction)", file=file,
                                line=pred.line, hint=how_to_raise("max_tests_per_file"))
            if pred.id in seen and pred.error is None:
                pred.error = SpecError(f"prediction id {pred.id!r} is used twice (first on line {seen[pred.id]})",
                                       file=file, line=pred.line, hint="give each prediction a unique id")
            seen.setdefault(pred.id, pred.line)
            spec.predictions.append(pred)
    return spec


def _find(node: yaml.Node | None, path: str) -> yaml.Node | None:
    """The node at a dotted ``path`` under a mapping node, or the deepest one found on the way."""
    for key in path.split("."):
        if not isinstance(node, yaml.MappingNode):
            return node
        nxt: yaml.Node | None = next((v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == key),
                                     None)
        if nxt is None:
            return node
        node = nxt
    return node


def _setup_error_node(exc: BaseException, section: yaml.Node | None) -> yaml.Node | None:
    """Where in a setup section (the file, or a prediction's setup:) the value an error is about was written."""
    if isinstance(exc, SetupValueError):
        return _find(section, exc.field)
    for kind, key in ((HardwareError, "hardware"), (ModelArchError, "model")):
        if isinstance(exc, kind):
            node = _find(section, key)
            if isinstance(node, yaml.MappingNode):  # an override: the key the message names
                for k, v in node.value:
                    if isinstance(k, yaml.ScalarNode) and re.search(rf"\b{re.escape(k.value)}\b", str(exc)):
                        return v if isinstance(v, yaml.Node) else node
            return node
    return None


def _check_setup(ctx: _Ctx, spec: Spec, hw_node: yaml.Node, model_node: yaml.Node | None = None,
                 root: yaml.Node | None = None) -> None:
    """Resolve hardware/model once so a typo there is reported at its line, with did-you-mean."""
    from pytest_roofline.model import architecture, hardware

    try:
        hardware.get_hardware(spec.hardware)
    except Exception as exc:  # UnknownHardwareError carries its own did-you-mean
        raise ctx.err(hw_node, str(exc), "`roofline hardware` lists the catalog ids") from None
    try:
        from pytest_roofline.model.setup import build_setup

        build_setup(hardware_ref=spec.hardware, hardware_overrides=spec.hardware_overrides, model_ref=spec.model,
                    model_overrides=spec.model_overrides, engine=spec.engine, workload=spec.workload)
    except architecture.UnknownModelError as exc:  # its message carries the did-you-mean and the presets
        raise ctx.err(model_node, f"setup does not resolve: {exc}",
                      "write a preset name, a path to a config.json, or a nominal model mapping") from None
    except (ValueError, KeyError, TypeError) as exc:
        node = _setup_error_node(exc, root)
        raise SpecError(f"setup does not resolve: {exc}", file=ctx.file,
                        line=node.start_mark.line + 1 if node is not None else None,
                        hint="check the hardware:, model:, engine: and workload: sections") from None


_SERVING_EXAMPLE = {"time": "a time, e.g. 3.3 ms", "ratio": "a share of the peak, e.g. 80%",
                    "bandwidth": "a bandwidth, e.g. 20 GB/s", "flop_rate": "a FLOP rate, e.g. 100 GFLOP/s"}


def _constant_dimension(name: str) -> str:
    if name.endswith("_bytes_per_s"):
        return "bandwidth"
    if name.endswith("_flop_per_s"):
        return "flop_rate"
    return "time" if name.endswith("_s") else "ratio"


def serving_fields() -> dict[str, str]:
    """The keys a ``serving:`` section takes: ServingConstants field -> its dimension (time for ``*_s``, a
    bandwidth for ``*_bytes_per_s``, a FLOP rate for ``*_flop_per_s``, else a share of the peak)."""
    return {f.name: _constant_dimension(f.name) for f in dataclasses.fields(serving.ServingConstants)}


def _serving(ctx: _Ctx, node: yaml.Node) -> dict[str, float]:
    fields = serving_fields()
    # a time constant may be written without its unit suffix (step_overhead: 3.3 ms for step_overhead_s)
    accepted = {**{k.removesuffix("_s"): F("value", "") for k, d in fields.items() if d == "time"},
                **{k: F("value", "") for k in fields}}
    m = ctx.mapping(node, "serving", accepted)
    out: dict[str, float] = {}
    for key, (kn, v) in m.items():
        name = key if key in fields else key + "_s"
        if name in out:
            raise ctx.err(kn, f"serving: {key!r} is given twice (as {name} and {name.removesuffix('_s')})",
                          "keep one of them")
        what = f"serving.{key}"
        if fields[name] == "time":
            value = ctx.value(v, what, "time")
            if not 0.0 <= value < 10.0:
                raise ctx.err(v, f"{what}: {ctx.scalar(v, what)} is not a plausible per-step time",
                              "write a time between 0 and a few ms, e.g. 3.3 ms or 5 us")
        elif fields[name] in ("bandwidth", "flop_rate"):
            value = ctx.value(v, what, fields[name])
            if not value > 0:
                raise ctx.err(v, f"{what}: must be positive", f"write e.g. {_example(fields[name])}")
        else:
            value = ctx.value(v, what, "ratio")
            if not 0.0 < value <= 1.0:
                raise ctx.err(v, f"{what}: {ctx.scalar(v, what)} is not a share of the peak (0 < x <= 1)",
                              "write e.g. 80% or 0.8")
        out[name] = value
    return out


def _calibration(ctx: _Ctx, spec: Spec, node: yaml.Node) -> None:
    text = ctx.scalar(node, "calibration").strip()
    path = Path(text) if Path(text).is_absolute() else Path(spec.path).parent / text
    try:
        cal = calibration.load_calibration(path)
    except OSError as exc:
        raise ctx.err(node, f"calibration: cannot read {path}: {exc.strerror or exc}",
                      "write the path of a file `roofline calibrate -o FILE` wrote, relative to this file") from None
    except (CalibrationError, ValueError, KeyError, TypeError, yaml.YAMLError) as exc:
        raise ctx.err(node, f"calibration: {path} is not a calibration file: {exc}",
                      "regenerate it with `roofline calibrate RESULTS.json -o FILE`") from None
    spec.calibration_path, spec.calibration = str(path), cal
    try:
        setup = build_setup(hardware_ref=spec.hardware, hardware_overrides=spec.hardware_overrides,
                            model_ref=spec.model, model_overrides=spec.model_overrides, engine=spec.engine,
                            workload=spec.workload)
    except (ValueError, KeyError, TypeError):
        return
    differs = list(cal.mismatches(setup))
    if differs:
        msg = (f"{ctx.file}:{node.start_mark.line + 1}: calibration {text} was fitted on another setup "
               f"({'; '.join(differs)}); its constants are used anyway — recalibrate on this setup to trust them")
        spec.warnings.append(msg)
        warnings.warn(CalibrationMismatchWarning(msg), stacklevel=2)


def _hardware(ctx: _Ctx, node: yaml.Node) -> tuple[str, dict[str, Any]]:
    if isinstance(node, yaml.ScalarNode):
        return node.value, {}
    m = ctx.mapping(node, "hardware", None)
    if "id" not in m:
        raise ctx.err(node, "hardware mapping needs an id", "hardware: {id: a100-sxm4-80gb, hbm_bytes_per_s: 1.8e12}")
    over = {k: _override_value(ctx, v) for k, (kn, v) in m.items() if k != "id"}
    return ctx.scalar(m["id"][1], "hardware.id"), over


def _override_value(ctx: _Ctx, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        text = node.value
        for dim in ("bytes", "bandwidth", "flop_rate"):
            try:
                v = parse_value(text, dim)
                if v.unit:
                    return v.si
            except UnitError:
                continue
    return ctx.plain(node)


def _model(ctx: _Ctx, node: yaml.Node) -> tuple[Any, dict[str, Any]]:
    if isinstance(node, yaml.ScalarNode):
        return node.value, {}
    m = ctx.mapping(node, "model", None)
    data = {k: _override_value(ctx, v) for k, (kn, v) in m.items()}
    if "params" in data:
        for key in ("num_layers", "num_kv_heads", "head_dim"):
            if key not in data:
                raise ctx.err(node, f"a nominal model needs {key}",
                              "model: {name: nominal-8b, params: 8.0e9, num_layers: 32, num_kv_heads: 8, "
                              "head_dim: 128}")
        return data, {}
    if "name" not in data:
        raise ctx.err(node, "model mapping needs a name (a preset or a path) or params (a nominal model)")
    name = data.pop("name")
    return name, data


def _engine(ctx: _Ctx, node: yaml.Node) -> dict[str, Any]:
    m = ctx.mapping(node, "engine", ENGINE_FIELDS)
    out: dict[str, Any] = {"name": "vllm"}
    for key, (_kn, v) in m.items():
        if key == "version" and isinstance(v, yaml.ScalarNode) and v.tag.endswith((":float", ":int")):
            # YAML (and the JSON Schema an editor checks) reads an unquoted 0.10 as the number 0.1
            raise ctx.err(v, f"engine.version: {v.value} unquoted is a number to YAML (0.10 would read as 0.1)",
                          f"write it quoted: version: \"{v.value}\"")
        if key in ("name", "version", "model", "entrypoint"):
            out[key] = ctx.string(v, f"engine.{key}", ENGINE_FIELDS[key].enum)
        elif key in ("args", "env"):
            out[key] = ctx.plain(ctx_map_check(ctx, v, f"engine.{key}"))
        elif key == "reserves":
            r = ctx.mapping(v, "engine.reserves", {"activation": F("value", ""), "non_torch": F("value", ""),
                                                   "cuda_graphs": F("value", "")})
            out[key] = {k: ctx.value(vv, f"engine.reserves.{k}", "bytes") for k, (kk, vv) in r.items()}
        elif key == "cpu_kvcache_space":
            out[key] = ctx.value(v, "engine.cpu_kvcache_space", "bytes")
        elif key == "startup_timeout":
            out[key] = ctx.value(v, "engine.startup_timeout", "time")
        elif key == "python":
            out[key] = ctx.string(v, "engine.python")
        elif key == "replicas":
            out[key] = ctx.integer(v, "engine.replicas")
            if not 1 <= out[key] <= 4096:
                raise ctx.err(v, f"engine.replicas: {out[key]} is not a number of replicas",
                              "write how many identical engines serve behind the endpoint, e.g. replicas: 2")
        elif key == "replica_metrics":
            if not isinstance(v, yaml.SequenceNode) or not v.value:
                raise ctx.err(v, "engine.replica_metrics must be a list of URLs, one per replica",
                              "e.g. replica_metrics: [http://10.0.0.5:8000, http://10.0.0.6:8000]")
            urls = [ctx.string(i, "engine.replica_metrics") for i in v.value]
            for item, url in zip(v.value, urls, strict=True):
                if urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).netloc:
                    raise ctx.err(item, f"engine.replica_metrics: {redact_url(url)!r} is not an http(s) URL",
                                  "write the replica's base URL, e.g. http://10.0.0.5:8000 (/metrics is added)")
            out[key] = urls
        elif key == "command":
            if not isinstance(v, yaml.SequenceNode):
                raise ctx.err(v, "engine.command must be a list (an argv), e.g. [docker, run, ..., --port, '{port}']")
            out[key] = [ctx.string(i, "engine.command") for i in v.value]
            try:
                check_command(out[key])
            except ValueError as e:
                raise ctx.err(v, str(e)) from None
    if "python" in out and "command" in out:
        raise ctx.err(node, "give engine.python or engine.command, not both (a command names its own interpreter)")
    if "replica_metrics" in out and len(out["replica_metrics"]) != out.get("replicas", 1):
        raise ctx.err(m["replica_metrics"][1], f"engine.replica_metrics names {len(out['replica_metrics'])} URL(s) "
                      f"for replicas: {out.get('replicas', 1)}", "give one /metrics URL per replica")
    args = out.get("args") or {}
    for key in ("gpu_memory_utilization",):
        if key in args and not isinstance(args[key], (int, float)):
            raise ctx.err(node, f"engine.args.{key} must be a number, got {args[key]!r}")
    return out


def ctx_map_check(ctx: _Ctx, node: yaml.Node, what: str) -> yaml.Node:
    if not isinstance(node, yaml.MappingNode):
        raise ctx.err(node, f"{what} must be a mapping")
    return node


def _workload(ctx: _Ctx, node: yaml.Node) -> dict[str, Any]:
    m = ctx.mapping(node, "workload", WORKLOAD_FIELDS)
    out: dict[str, Any] = {}
    for key, (_kn, v) in m.items():
        f = WORKLOAD_FIELDS[key]
        if f.kind == "length" or key in ("dataset", "prefix_share", "ramp_up"):  # format/workloads.py
            out.update(workload_fields.parse_field(ctx, key, v))
        elif f.kind == "int":
            out[key] = ctx.integer(v, f"workload.{key}")
        elif f.kind == "number":
            out[key] = ctx.number(v, f"workload.{key}")
        elif f.kind == "str":
            out[key] = ctx.string(v, f"workload.{key}", f.enum)
        else:
            out[key] = ctx.plain(ctx_map_check(ctx, v, f"workload.{key}"))
    return out


def _sweep(ctx: _Ctx, node: yaml.Node) -> Sweep:
    m = ctx.mapping(node, "sweep", SWEEP_FIELDS)
    kw: dict[str, Any] = {}
    for key, (_kn, v) in m.items():
        if key == "mode":
            kw["mode"] = ctx.string(v, "sweep.mode", SWEEP_FIELDS["mode"].enum)
        elif key == "concurrency":
            items = v.value if isinstance(v, yaml.SequenceNode) else [v]
            kw["concurrency"] = tuple(ctx.integer(i, "sweep.concurrency") for i in items)
            if any(c < 1 for c in kw["concurrency"]):
                raise ctx.err(v, "sweep.concurrency values must be >= 1")
        elif key == "rates":
            items = v.value if isinstance(v, yaml.SequenceNode) else [v]
            kw["rates"] = tuple(ctx.value(i, "sweep.rates", "request_rate") for i in items)
        elif key == "burstiness":
            kw["burstiness"] = ctx.number(v, "sweep.burstiness")
        elif key == "requests_per_point":
            text = ctx.scalar(v, "sweep.requests_per_point").strip()
            if text.endswith("x"):
                kw["requests_per_concurrency"] = ctx.number(yaml.ScalarNode("tag:yaml.org,2002:str", text[:-1],
                                                                            v.start_mark, v.end_mark),
                                                            "sweep.requests_per_point")
            else:
                kw["requests_per_point"] = ctx.integer(v, "sweep.requests_per_point")
                kw["requests_per_concurrency"] = None
        elif key == "duration":
            kw["duration_s"] = ctx.value(v, "sweep.duration", "time")
        elif key == "warmup":
            kw["warmup"] = ctx.integer(v, "sweep.warmup")
        elif key == "batch1":
            kw["batch1"] = ctx.plain(ctx_map_check(ctx, v, "sweep.batch1"))
        elif key == "request_timeout":
            kw["request_timeout_s"] = ctx.value(v, "sweep.request_timeout", "time")
        elif key == "adaptive":
            kw["adaptive"] = ctx.boolean(v, "sweep.adaptive")
        elif key == "repeats":
            kw["repeats"] = ctx.integer(v, "sweep.repeats")
            if kw["repeats"] < 1:
                raise ctx.err(v, "sweep.repeats must be >= 1")
        elif key == "steady_state":
            kw["steady_state"] = ctx.string(v, "sweep.steady_state", SWEEP_FIELDS["steady_state"].enum)
        elif key == "processes":
            kw["processes"] = _processes(ctx, v)
        elif key == "timeline":
            if ctx.scalar(v, "sweep.timeline").strip().lower() in ("off", "false", "none", "no"):
                kw["timeline_interval_s"] = None
            else:
                kw["timeline_interval_s"] = ctx.value(v, "sweep.timeline", "time")
    if kw.get("adaptive") and isinstance(kw.get("processes"), int) and kw["processes"] > 1:
        raise ctx.err(m["processes"][1], f"sweep.processes: {kw['processes']} client processes cannot stop a point "
                      f"early, and sweep.adaptive: true (line {m['adaptive'][1].start_mark.line + 1}) needs that",
                      "write processes: 1 (or auto, which is 1 in an adaptive sweep), or adaptive: false to run "
                      "every point to its cap over several processes")
    return Sweep(**kw)


_PROCESSES_HINT = "write a whole number of client processes >= 1 (e.g. processes: 2) or processes: auto"


def _processes(ctx: _Ctx, node: yaml.Node) -> int | str:
    """``sweep.processes``: a whole number >= 1 or ``auto``. More processes than this machine's CPUs is allowed
    (the file may be checked on a laptop and measured on a bigger box; the point records ``client_cores``)."""
    if not isinstance(node, yaml.ScalarNode):
        raise ctx.err(node, "sweep.processes must be a single value, not a "
                            f"{'list' if isinstance(node, yaml.SequenceNode) else 'mapping'}", _PROCESSES_HINT)
    text = ctx.scalar(node, "sweep.processes").strip()
    if text == "auto":
        return "auto"
    if text.lower() in ("true", "false") or text.lower() in _BOOL_TRAPS:
        raise ctx.err(node, f"sweep.processes: {text!r} is not a number of processes", _PROCESSES_HINT)
    try:
        value = ctx.number(node, "sweep.processes")
    except SpecError:
        raise ctx.err(node, f"sweep.processes: {text!r} is not a number of processes", _PROCESSES_HINT) from None
    if not float(value).is_integer() or value < 1:
        raise ctx.err(node, f"sweep.processes: {text} is not a number of processes (a whole number >= 1)",
                      _PROCESSES_HINT)
    return int(value)


def _slo(ctx: _Ctx, node: yaml.Node) -> dict[str, Any]:
    m = ctx.mapping(node, "slo", SLO_FIELDS)
    out: dict[str, Any] = {}
    for key, (_kn, v) in m.items():
        if key == "percentile":
            out[key] = ctx.string(v, "slo.percentile", SLO_FIELDS["percentile"].enum)
        else:
            out[key] = ctx.value(v, f"slo.{key}", "time")
    return out


def _thresholds(ctx: _Ctx, node: yaml.Node) -> qreg.Thresholds:
    m = ctx.mapping(node, "thresholds", THRESHOLD_FIELDS)
    kw = {}
    for key, (_kn, v) in m.items():
        kw[key] = ctx.number(v, f"thresholds.{key}") if key == "ttft_knee_ratio" else ctx.value(
            v, f"thresholds.{key}", "ratio")
    return qreg.Thresholds(**kw)


def _tolerance(ctx: _Ctx, node: yaml.Node, dimension: str, unit: str, what: str, *, relative_only: bool = False
               ) -> Tolerance:
    try:
        if isinstance(node, yaml.SequenceNode):
            return parse_tolerance([ctx.text(n, what) for n in node.value], dimension, unit)
        tol = parse_tolerance(ctx.text(node, what), dimension, unit)
    except ToleranceError as exc:
        raise ctx.err(node, f"{what}: {exc}", TOLERANCE_HELP) from None
    if relative_only and (tol.abs_lo is not None or tol.abs_hi is not None or tol.lower is not None
                          or tol.upper is not None):
        raise ctx.err(node, f"{what}: a default tolerance must be relative (it applies to every quantity)",
                      "write e.g. ±10%")
    return tol


DRIFT_HELP = ("write a relative threshold: 5% (either way), +10%/-3% (a rise of 10% or a fall of 3%) or "
              "<= +10% (rises only)")


def parse_drift_threshold(text: str) -> Tolerance:
    """A drift threshold (``drift: 5%`` in the YAML, ``--roofline-drift 5%``): how far a measured value may move
    from its baseline, relative to the baseline. The tolerance grammar's relative forms (``5%``, ``±5%``,
    ``+10%/-3%``, ``<= +10%``, ``exact``); an absolute one is refused, since one threshold serves every quantity."""
    tol = parse_tolerance(str(text), "ratio")
    if any(v is not None for v in (tol.abs_lo, tol.abs_hi, tol.lower, tol.upper)):
        raise ToleranceError(f"drift threshold {str(text)!r} is not relative to the baseline; {DRIFT_HELP}")
    return tol


def _drift(ctx: _Ctx, node: yaml.Node, what: str) -> str:
    text = ctx.text(node, what)
    try:
        parse_drift_threshold(text)
    except ToleranceError as exc:
        raise ctx.err(node, f"{what}: {exc}", DRIFT_HELP) from None
    return text


# ----------------------------------------------------------------------------------------------------------------
# predictions
# ----------------------------------------------------------------------------------------------------------------
def _predictions(ctx: _Ctx, spec: Spec, node: yaml.Node) -> Iterator[Prediction]:
    line = node.start_mark.line + 1
    pid = f"line{line}"
    if isinstance(node, yaml.MappingNode):  # name the error test by its id even when another key is wrong
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode) and k.value == "id" and isinstance(v, yaml.ScalarNode) and re.fullmatch(
                    r"[\w.\-]+", v.value):
                pid = v.value
    try:
        m = ctx.mapping(node, "prediction", PREDICTION_FIELDS)
        pid = ctx.scalar(m["id"][1], "id") if "id" in m else pid
        if not re.fullmatch(r"[\w.\-]+", pid):
            raise ctx.err(m["id"][1], f"id {pid!r} may only contain letters, digits, '_', '-' and '.'",
                          "write e.g. throughput-c64")
        if "table" in m:
            yield from _table(ctx, spec, m, pid, line)
            return
        for key in ("quantity", "predicted"):
            if key not in m:
                raise ctx.err(node, f"prediction {pid!r}: missing {key!r}", PREDICTION_FIELDS[key].doc)
        yield from _one(ctx, spec, m, pid, line, m["quantity"][1], m["predicted"][1], m.get("at", (None, None))[1])
    except SpecError as exc:
        yield _error_prediction(spec, pid, line, exc)


def _error_prediction(spec: Spec, pid: str, line: int, exc: SpecError) -> Prediction:
    return Prediction(id=pid, quantity="", at={}, predicted=Predicted(PredictedKind.NONE, None, ""), tolerance=None,
                      math_tolerance=None, xfail=None, notes="", setup={}, marks=[], line=exc.line or line,
                      file=spec.path, error=exc)


def _quantity(ctx: _Ctx, node: yaml.Node) -> qreg.Quantity:
    name = ctx.scalar(node, "quantity")
    if name not in qreg.QUANTITIES:
        raise ctx.err(node, f"unknown quantity {name!r}", _did_you_mean(name, qreg.QUANTITIES)
                      + " (`roofline quantities` lists them all)")
    return qreg.QUANTITIES[name]


def _at(ctx: _Ctx, spec: Spec, q: qreg.Quantity, node: yaml.Node | None) -> list[tuple[dict[str, Any], dict[str, str]]]:
    """Parse at:, expanding 'every' and lists into one (values, texts) pair per test."""
    if node is None:
        combos: list[tuple[dict[str, Any], dict[str, str]]] = [({}, {})]
    else:
        m = ctx.mapping(node, "at", None)
        combos = [({}, {})]
        expanded: list[tuple[str, list[tuple[Any, str]]]] = []
        for key, (kn, v) in m.items():
            if key not in q.at:
                allowed = ", ".join(q.at) or "nothing (remove at:)"
                close = difflib.get_close_matches(key, q.at, n=3, cutoff=0.5)
                raise ctx.err(kn, f"quantity {q.name!r} takes no at-parameter {key!r}",
                              (_did_you_mean(key, close) + " " if close else "") + f"it takes: {allowed}")
            param = qreg.AT_PARAMS[key]
            expanded.append((key, _at_values(ctx, spec, param, v)))
        tests = math.prod(len(options) for _key, options in expanded)
        if tests > ctx.limits.max_tests_per_prediction:
            sizes = " × ".join(f"{len(options)} {key}" for key, options in expanded)
            raise ctx.err(node, f"at: expands into {tests:,} tests ({sizes}), more than max_tests_per_prediction "
                                f"({ctx.limits.max_tests_per_prediction:,})",
                          "split it into several predictions, or " + how_to_raise("max_tests_per_prediction"))
        for key, options in expanded:
            combos = [({**vals, key: val}, {**texts, key: text}) for vals, texts in combos for val, text in options]
    out = []
    for vals, texts in combos:
        _defaults_for_at(spec, q, vals, texts)
        missing = [r for r in q.required_at if r not in vals]
        if missing:
            raise ctx.err(node, f"quantity {q.name!r} needs at: {{{', '.join(f'{r}: ...' for r in missing)}}}",
                          "; ".join(f"{r}: {qreg.AT_PARAMS[r].description}" for r in missing))
        out.append((vals, texts))
    return out


def _defaults_for_at(spec: Spec, q: qreg.Quantity, vals: dict[str, Any], texts: dict[str, str]) -> None:
    for key in ("ttft", "tpot", "percentile"):
        if key in q.at and key not in vals:
            if key in spec.slo:
                vals[key] = spec.slo[key]
            elif key == "percentile":
                vals[key] = "p99"
    if q.name in ("goodput", "goodput_concurrency") and not {"ttft", "tpot"} <= vals.keys():
        vals.setdefault("ttft", float("inf"))
        vals.setdefault("tpot", float("inf"))


def _at_values(ctx: _Ctx, spec: Spec, param: qreg.AtParam, node: yaml.Node) -> list[tuple[Any, str]]:
    what = f"at.{param.name}"
    if param.dimension == "lengths":
        if not isinstance(node, yaml.SequenceNode):
            raise ctx.err(node, f"{what} must be a list of token counts", "write e.g. [20, 50, 80, 200]")
        vals = [ctx.integer(n, what) for n in node.value]
        return [(vals, "[" + ", ".join(map(str, vals)) + "]")]
    if isinstance(node, yaml.ScalarNode) and node.value in ("every", "each", "all"):
        if not param.expandable:
            raise ctx.err(node, f"{what}: 'every' only applies to concurrency and rate")
        pool = spec.sweep.concurrency if param.name == "concurrency" else spec.sweep.rates
        if not pool:
            raise ctx.err(node, f"{what}: every — but the sweep section lists no {param.name} values",
                          "add sweep: {"
                          f"{'concurrency: [1, 2, 4]' if param.name == 'concurrency' else 'rates: [1, 2]'}}}")
        return [(float(x) if param.name == "rate" else x, f"{x:g}") for x in pool]
    nodes = node.value if isinstance(node, yaml.SequenceNode) else [node]
    out: list[tuple[Any, str]] = []
    for n in nodes:
        text = ctx.scalar(n, what)
        if param.dimension == "choice":
            out.append((ctx.string(n, what, param.choices), text))
        elif param.dimension == "count":
            v = ctx.number(n, what)
            out.append((int(v) if float(v).is_integer() else v, text))
        else:
            out.append((ctx.value(n, what, param.dimension), text))
    return out


def _predicted(ctx: _Ctx, q: qreg.Quantity, node: yaml.Node, what: str) -> Predicted:
    text = ctx.text(node, what).strip()
    low = text.lower()
    if low == "model":
        if q.model is None and q.serving is None:
            raise ctx.err(node, f"{what}: quantity {q.name!r} has no model value", "write the value you predict")
        return Predicted(PredictedKind.MODEL, None, text)
    if q.kind is qreg.QuantityKind.BOOL:
        if low in ("true", "pass", "fits", "feasible"):
            return Predicted(PredictedKind.BOOL, True, text)
        if low in ("false", "fail", "fails", "infeasible"):
            return Predicted(PredictedKind.BOOL, False, text)
        raise ctx.err(node, f"{what}: quantity {q.name!r} is true/false, got {text!r}", "write true or false")
    if q.kind is qreg.QuantityKind.ENUM:
        if low not in q.choices:
            raise ctx.err(node, f"{what}: {text!r} is not one of {', '.join(q.choices)}", _did_you_mean(low, q.choices))
        return Predicted(PredictedKind.WORD, low, text)
    if low in ("none", "null", "~"):
        if q.kind is not qreg.QuantityKind.OPTIONAL_NUMBER:
            raise ctx.err(node, f"{what}: quantity {q.name!r} always has a value; 'none' does not fit",
                          f"write e.g. {_example(q.dimension)}")
        return Predicted(PredictedKind.NONE, None, text)
    if low in _BOOL_TRAPS or low in ("true", "false"):
        raise ctx.err(node, f"{what}: {text!r} is not a number (YAML 1.1 would read it as a boolean)",
                      f"write e.g. {_example(q.dimension)}")
    try:
        v = parse_value(text, q.dimension)
    except UnitError as exc:
        raise ctx.err(node, f"{what}: {exc}", f"write e.g. {_example(q.dimension)}") from None
    return Predicted(PredictedKind.NUMBER, v.si, text, v.unit, v.half_ulp_si)


def _common(ctx: _Ctx, spec: Spec, m: Mapping[str, tuple[yaml.Node, yaml.Node]], q: qreg.Quantity | None,
            unit: str) -> dict[str, Any]:
    out: dict[str, Any] = {"notes": "", "setup": {}, "marks": [], "xfail": None, "tolerance": None,
                           "math_tolerance": None,
                           "drift": _drift(ctx, m["drift"][1], "drift") if "drift" in m else spec.default_drift}
    dim = q.dimension if q else "ratio"
    if "tolerance" in m:
        out["tolerance"] = _tolerance(ctx, m["tolerance"][1], dim, unit, "tolerance")
    if "math_tolerance" in m:
        out["math_tolerance"] = _tolerance(ctx, m["math_tolerance"][1], dim, unit, "math_tolerance")
    if "notes" in m:
        out["notes"] = ctx.scalar(m["notes"][1], "notes")
    if "setup" in m:
        s = ctx.mapping(m["setup"][1], "setup", {k: F(TOP_FIELDS[k].kind, TOP_FIELDS[k].doc)
                                                  for k in ("hardware", "model", "engine", "workload")})
        setup: dict[str, Any] = {}
        for key, (_kn, v) in s.items():
            if key == "hardware":
                setup["hardware"], setup["hardware_overrides"] = _hardware(ctx, v)
            elif key == "model":
                setup["model"], setup["model_overrides"] = _model(ctx, v)
            elif key == "engine":
                setup["engine"] = {**spec.engine, **_engine(ctx, v)}
            elif key == "workload":
                own = _workload(ctx, v)  # a length written here replaces the file's distribution too
                prefix = {"prefix_share", "shared_prefix_len"}  # and either prefix form replaces the other
                base = {k: x for k, x in spec.workload.items()
                        if not (k in ("input_dist", "output_dist") and k.replace("_dist", "_len") in own)
                        and not (k in prefix and prefix & set(own))}
                if "input_len" in own and "dataset" in base and "dataset" not in own:
                    raise ctx.err(next((vn for kn2, vn in v.value if kn2.value == "input_len"), v),
                                  "setup.workload.input_len: the file's workload.dataset sets every prompt's length, "
                                  "so this input_len would be neither sent nor simulated",
                                  "give this prediction a dataset: of its own here, or move it to a file without one")
                setup["workload"] = {**base, **own}
        out["setup"] = setup
    if "marks" in m:
        v = m["marks"][1]
        items = v.value if isinstance(v, yaml.SequenceNode) else [v]
        out["marks"] = [ctx.string(i, "marks") for i in items]
        for name in out["marks"]:
            if not re.fullmatch(r"[A-Za-z_]\w*", name):
                raise ctx.err(v, f"marks: {name!r} is not a valid marker name", "use letters, digits and '_'")
    if "xfail" in m:
        v = m["xfail"][1]
        if isinstance(v, yaml.ScalarNode):
            out["xfail"] = Expectation(v.value, spec.xfail_strict, "both")
        else:
            x = ctx.mapping(v, "xfail", XFAIL_FIELDS)
            out["xfail"] = Expectation(
                ctx.scalar(x["reason"][1], "xfail.reason"),
                ctx.boolean(x["strict"][1], "xfail.strict") if "strict" in x else spec.xfail_strict,
                ctx.string(x["mode"][1], "xfail.mode", XFAIL_FIELDS["mode"].enum) if "mode" in x else "both",
            )
    return out


def _resolve_setup_check(ctx: _Ctx, spec: Spec, setup: Mapping[str, Any], node: yaml.Node) -> None:
    if not setup:
        return
    from pytest_roofline.model.setup import build_setup

    try:
        build_setup(hardware_ref=setup.get("hardware", spec.hardware),
                    hardware_overrides=setup.get("hardware_overrides",
                                                 spec.hardware_overrides if "hardware" not in setup else {}),
                    model_ref=setup.get("model", spec.model),
                    model_overrides=setup.get("model_overrides", spec.model_overrides if "model" not in setup else {}),
                    engine=setup.get("engine", spec.engine), workload=setup.get("workload", spec.workload))
    except Exception as exc:
        raise ctx.err(_setup_error_node(exc, node) or node, f"setup override does not resolve: {exc}",
                      "fix this value of the prediction's setup: (it overrides the file's sections)") from None


def _one(ctx: _Ctx, spec: Spec, m: Mapping[str, tuple[yaml.Node, yaml.Node]], pid: str, line: int,
         qnode: yaml.Node, pnode: yaml.Node, atnode: yaml.Node | None) -> Iterator[Prediction]:
    q = _quantity(ctx, qnode)
    predicted = _predicted(ctx, q, pnode, "predicted")
    unit = predicted.unit or DEFAULT_UNIT.get(q.dimension, "")
    common = _common(ctx, spec, m, q, unit)
    if "setup" in m:
        _resolve_setup_check(ctx, spec, common["setup"], m["setup"][1])
    if (common["tolerance"] is not None
            and predicted.kind in (PredictedKind.BOOL, PredictedKind.WORD, PredictedKind.NONE)
            and not (common["tolerance"].lower is not None or common["tolerance"].upper is not None)):
        raise ctx.err(m["tolerance"][1], f"a tolerance does not apply to a {predicted.kind} prediction",
                      "remove tolerance: (the check is exact)")
    combos = _at(ctx, spec, q, atnode)
    for vals, texts in combos:
        suffix = "" if len(combos) == 1 else "[" + ",".join(f"{k}={t}" for k, t in texts.items()) + "]"
        yield Prediction(id=pid + suffix, quantity=q.name, at=vals, predicted=predicted,
                         tolerance=common["tolerance"] or spec.default_tolerance,
                         tolerance_written=common["tolerance"] is not None,
                         math_tolerance=common["math_tolerance"], drift=common["drift"],
                         xfail=common["xfail"], notes=common["notes"], setup=common["setup"], marks=common["marks"],
                         line=line, file=spec.path, at_text=texts)


def _table(ctx: _Ctx, spec: Spec, m: Mapping[str, tuple[yaml.Node, yaml.Node]], pid: str, line: int
           ) -> Iterator[Prediction]:
    for key in ("quantity", "predicted"):
        if key in m:
            raise ctx.err(m[key][0], f"a table prediction takes no {key!r}; the table holds them")
    fixed = m["at"][1] if "at" in m else None  # at-parameters shared by every cell (e.g. {k: 4096, m: 4096})
    t = ctx.mapping(m["table"][1], "table", TABLE_FIELDS)
    at_name = ctx.scalar(t["at"][1], "table.at")
    if at_name not in qreg.AT_PARAMS:
        raise ctx.err(t["at"][1], f"table.at: unknown at-parameter {at_name!r}", _did_you_mean(at_name, qreg.AT_PARAMS))
    qnodes = t["quantities"][1]
    if not isinstance(qnodes, yaml.SequenceNode):
        raise ctx.err(qnodes, "table.quantities must be a list of quantity names")
    qs = []
    for qn in qnodes.value:
        try:
            qs.append(_quantity(ctx, qn))
        except SpecError as exc:
            yield _error_prediction(spec, pid, line, exc)
            return
    rows = t["rows"][1]
    if not isinstance(rows, yaml.SequenceNode):
        raise ctx.err(rows, "table.rows must be a list of rows")
    for row in rows.value:
        rline = row.start_mark.line + 1
        try:
            if not isinstance(row, yaml.SequenceNode) or len(row.value) != len(qs) + 1:
                raise ctx.err(row, f"each row needs {len(qs) + 1} cells ({at_name}, then one per quantity)")
            shared = list(fixed.value) if isinstance(fixed, yaml.MappingNode) else []
            at_node = yaml.MappingNode("tag:yaml.org,2002:map", [(yaml.ScalarNode("tag:yaml.org,2002:str", at_name,
                                                                                  row.start_mark, row.end_mark),
                                                                  row.value[0]), *shared], row.start_mark,
                                       row.end_mark)
            for q, cell in zip(qs, row.value[1:]):
                predicted = _predicted(ctx, q, cell, f"row {at_name}={row.value[0].value} {q.name}")
                unit = predicted.unit or DEFAULT_UNIT.get(q.dimension, "")
                common = _common(ctx, spec, m, q, unit)
                for vals, texts in _at(ctx, spec, q, at_node):
                    cid = f"{pid}[{at_name}={texts.get(at_name, row.value[0].value)}:{q.name}]"
                    yield Prediction(id=cid, quantity=q.name, at=vals, predicted=predicted,
                                     tolerance=common["tolerance"] or spec.default_tolerance,
                                     tolerance_written=common["tolerance"] is not None,
                                     math_tolerance=common["math_tolerance"], drift=common["drift"],
                                     xfail=common["xfail"], notes=common["notes"], setup=common["setup"],
                                     marks=common["marks"], line=rline, file=spec.path, at_text=texts)
        except SpecError as exc:
            yield _error_prediction(spec, f"{pid}[line{rline}]", rline, exc)


# ----------------------------------------------------------------------------------------------------------------
# JSON Schema, generated from the same tables
# ----------------------------------------------------------------------------------------------------------------
def _schema_of(fields: Mapping[str, F], extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    props: dict[str, Any] = {}
    for name, f in fields.items():
        s: dict[str, Any] = {"description": f.doc}
        if f.kind == "str":
            s["type"] = "string"
        elif f.kind in ("number", "int"):
            s["type"] = ["number", "string"] if f.kind == "number" else ["integer", "string"]
        elif f.kind == "bool":
            s["type"] = "boolean"
        elif f.kind == "map":
            s["type"] = "object"
        elif f.kind == "list":
            s["type"] = "array"
        elif f.kind == "value":
            s["type"] = ["string", "number"]
        if f.enum:
            s["enum"] = list(f.enum)
        props[name] = s
    if extra:
        for k, v in extra.items():
            props[k] = {**props.get(k, {}), **v}
    out = {"type": "object", "additionalProperties": False, "properties": props}
    req = [n for n, f in fields.items() if f.required]
    if req:
        out["required"] = req
    return out


def json_schema() -> dict[str, Any]:
    """A JSON Schema (draft 2020-12) of the prediction format, for editors with a YAML language server."""
    from pytest_roofline.model import hardware

    quantity_names = sorted(qreg.QUANTITIES)
    hw_ids = sorted(hardware.CATALOG)
    at_props = {}
    for p in qreg.AT_PARAMS.values():
        s: dict[str, Any] = {"description": p.description}
        if p.dimension == "lengths":
            s["type"] = "array"
            s["items"] = {"type": "integer"}
        elif p.choices:  # one choice, or a list of them (one test each)
            s["anyOf"] = [{"enum": list(p.choices)}, {"type": "array", "items": {"enum": list(p.choices)}}]
        else:  # a value, a list of values (one test each), or 'every' for a sweep's points
            s["type"] = ["number", "string", "array"]
        at_props[p.name] = s
    prediction = _schema_of(PREDICTION_FIELDS, {
        "quantity": {"enum": quantity_names},
        "at": {"type": "object", "additionalProperties": False, "properties": at_props},
        "xfail": {"oneOf": [{"type": "string"}, _schema_of(XFAIL_FIELDS)]},
        "table": _schema_of(TABLE_FIELDS, {"quantities": {"type": "array", "items": {"enum": quantity_names}}}),
        "predicted": {"type": ["string", "number", "boolean", "null"]},
        "tolerance": {"type": ["string", "array"]},
        "math_tolerance": {"type": ["string", "array"]},
        "drift": {"type": "string"},
    })
    prediction["anyOf"] = [{"required": ["quantity", "predicted"]}, {"required": ["table"]}]
    prediction["required"] = ["id"]
    hw_schema = {"anyOf": [{"type": "string", "enum": hw_ids}, {"type": "string"},
                           {"type": "object", "required": ["id"], "properties": {"id": {"enum": hw_ids}}}]}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://pytest-roofline.invalid/predictions.schema.json",
        "title": "pytest-roofline prediction file",
        **_schema_of(TOP_FIELDS, {
            "hardware": hw_schema,
            "model": {"type": ["string", "object"]},
            "engine": _schema_of(ENGINE_FIELDS),
            "workload": _schema_of(WORKLOAD_FIELDS, {k: {"type": ["integer", "string", "object"]}
                                                     for k in ("input_len", "output_len")}),
            "sweep": _schema_of(SWEEP_FIELDS, {"processes": {"anyOf": [  # a whole number >= 1, or auto
                {"type": "integer", "minimum": 1}, {"type": "string", "pattern": "^(auto|[1-9][0-9]*)$"}]}}),
            "slo": _schema_of(SLO_FIELDS),
            "defaults": _schema_of(DEFAULTS_FIELDS),
            "thresholds": _schema_of(THRESHOLD_FIELDS),
            "serving": _schema_of({**{k.removesuffix("_s"): F("value", f"{k}: a time, e.g. 3.3 ms")
                                      for k, d in serving_fields().items() if d == "time"},
                                   **{k: F("value", f"{k}: {_SERVING_EXAMPLE[d]}")
                                      for k, d in serving_fields().items()}}),
            "predictions": {"type": "array", "items": prediction},
        }),
    }
