"""The setup sections' readers: ``hardware``, ``model``, ``engine``, ``workload``, ``sweep``, ``slo``,
``thresholds``, ``serving``, ``calibration``, tolerances and drift thresholds, each from its YAML node to checked
values with file:line errors, and the check that the file's setup resolves (:func:`check_setup`).

Each reader takes a :class:`~._reader.NodeReader` and the section's node, and reads the keys its field table in
:mod:`._fields` lists. The ``workload`` fields with distributions and files are read by
:mod:`pytest_roofline.format.workloads`.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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
    SpecErrors,
)
from pytest_roofline.format import workloads as workload_fields
from pytest_roofline.format._fields import (
    BOOL_TRAPS,
    ENGINE_FIELDS,
    RESERVES_FIELDS,
    SLO_FIELDS,
    SWEEP_FIELDS,
    THRESHOLD_FIELDS,
    WORKLOAD_FIELDS,
    serving_field_table,
    serving_fields,
)
from pytest_roofline.format._reader import NodeReader, ctx_map_check, example_of
from pytest_roofline.format._types import STEADY_STATES, PredictedKind, Prediction, Processes, Spec, Sweep
from pytest_roofline.format.engine_command import check_command
from pytest_roofline.format.tolerance import TOLERANCE_HELP, Tolerance, ToleranceError, parse_tolerance
from pytest_roofline.model import calibration, engine_args
from pytest_roofline.model.setup import (
    Setup,
    blocks_override_problem,
    build_setup,
    cpu_kvcache_space_problem,
    max_model_len_problem,
)
from pytest_roofline.model.tiny import TINY_MODEL
from pytest_roofline.quantities import registry as qreg
from pytest_roofline.quantities.measurement import PointMode
from pytest_roofline.redact import redact_url
from pytest_roofline.units import UnitError, parse_number, parse_value

__all__ = [
    "setup_error_node", "check_setup", "check_engine_arg_names", "read_serving", "read_calibration",
    "read_hardware", "read_model",
    "read_engine", "check_engine_model", "read_workload", "read_sweep", "read_slo", "read_thresholds",
    "read_tolerance", "DRIFT_HELP",
    "parse_drift_threshold", "read_drift", "takes_serving_value", "written_at",
    "prediction_setup", "OwnSetup", "own_setup_of",
]

#: the largest concurrency a sweep or an ``at: {concurrency: N}`` may name: the serving model simulates every
#: request in flight, and at 10,000 one prediction took 48 s on the 2-core machine (100,000: over 200 s, 1e40: an
#: OverflowError); vLLM's max_num_seqs defaults to 256-1024, so no server holds more sequences at once
MAX_AT_CONCURRENCY = 10_000


def _walk(node: yaml.Node | None, path: str) -> tuple[yaml.Node | None, bool]:
    """The deepest node on a dotted ``path`` under a mapping node, and whether it is the one at ``path``."""
    parts = path.split(".")
    for i, key in enumerate(parts):
        if not isinstance(node, yaml.MappingNode):
            return node, False
        is_arg = i >= 2 and parts[i - 2:i] == ["engine", "args"]
        nxt: yaml.Node | None = next(
            (v for k, v in node.value if isinstance(k, yaml.ScalarNode)
             and (k.value == key or (is_arg and engine_args.canonical_key(k.value)[0] == key))), None)
        if nxt is None:
            return node, False
        node = nxt
    return node, True


def _find(node: yaml.Node | None, path: str) -> yaml.Node | None:
    """The node at a dotted ``path`` under a mapping node, or the deepest one found on the way.  Under
    ``engine.args`` a key is matched by the argument it names (``max-num-seqs`` or ``tp`` for
    ``engine.args.max_num_seqs`` / ``engine.args.tensor_parallel_size``: ``engine_args.canonical_key``)."""
    return _walk(node, path)[0]


def written_at(node: yaml.Node | None, path: str) -> yaml.Node | None:
    """The node at a dotted ``path`` under a mapping node (matched as :func:`_find` does), or None where the section
    does not write it."""
    found, complete = _walk(node, path)
    return found if complete else None


def setup_error_node(exc: BaseException, section: yaml.Node | None) -> yaml.Node | None:
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


def check_setup(ctx: NodeReader, spec: Spec, hw_node: yaml.Node, model_node: yaml.Node | None = None,
                 root: yaml.Node | None = None) -> Setup:
    """Resolve hardware/model once so a typo there is reported at its line, with did-you-mean; the file's
    :class:`Setup`.  A setup vLLM will not start for a KV pool short of one request of max_model_len
    (``model.setup.max_model_len_problem``) is refused too, at the line that fixes it: every prediction of the file
    would be about an engine that cannot start, so no run can measure it."""
    from pytest_roofline.model import architecture, hardware

    try:
        hardware.get_hardware(spec.hardware)
    except Exception as exc:  # UnknownHardwareError carries its own did-you-mean
        raise ctx.err(hw_node, str(exc), "`roofline hardware` lists the catalog ids") from None
    try:
        from pytest_roofline.model.setup import build_setup

        setup = build_setup(hardware_ref=spec.hardware, hardware_overrides=spec.hardware_overrides,
                            model_ref=spec.model, model_overrides=spec.model_overrides, engine=spec.engine,
                            workload=spec.workload)
    except architecture.UnknownModelError as exc:  # its message carries the did-you-mean and the presets
        raise ctx.err(model_node, f"setup does not resolve: {exc}",
                      "write a Hub id (owner/name), a preset name, a path to a config.json, or a nominal model "
                      "mapping {name, params, num_layers, num_kv_heads, head_dim}") from None
    except engine_args.EngineArgsError as exc:  # every bad engine arg at once, each at its own line
        # the serving model's own refusals, warned once these are fixed: named now, so one check lists every arg
        # to change (trial s24 L8)
        also = ("; once fixed, the serving model will also warn of "
                + ", ".join(p.field + (f" (line {n.start_mark.line + 1})" if (n := _find(root, p.field)) is not None
                                       else "") for p in exc.later)
                + ": it does not simulate them") if exc.later else ""
        raise _engine_arg_error(ctx, root, exc.problems, also_last=also) from None
    except (ValueError, KeyError, TypeError) as exc:
        node = setup_error_node(exc, root)
        raise SpecError(f"setup does not resolve: {exc}", file=ctx.file,
                        line=node.start_mark.line + 1 if node is not None else None,
                        hint="check the hardware:, model:, engine: and workload: sections") from None
    _check_startable(ctx, spec, setup, model_node, root)
    # the workload's lengths are judged once the predictions are read (_lengths.check_lengths), where served
    return setup


def _child(node: yaml.Node | None, key: str) -> yaml.Node | None:
    """The value of ``key`` in the mapping ``node``, or None (where :func:`_find` gives the deepest node found)."""
    if not isinstance(node, yaml.MappingNode):
        return None
    return next((v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == key), None)


def check_engine_arg_names(ctx: NodeReader, spec: Spec, root: yaml.Node | None) -> None:
    """The engine args this project does not know (a typo: ``gpu_memory_utilisation``, with its did-you-mean) and
    two spellings of one arg, each at its line, where another section's error keeps the setup from resolving: the
    setup's own check names them too, but only once the other errors are fixed, so a file with three typos took
    three rounds of ``roofline check`` (trial s25a #14)."""
    from pytest_roofline.model import engine_args

    normal, problems = engine_args.normalise_engine_args(spec.engine.args)
    unknown = {k: v for k, v in normal.items() if k not in engine_args.KNOWN_ARGS}
    node = _child(_child(root, "engine"), "args")
    if not spec.engine.args and isinstance(node, yaml.MappingNode):
        # the engine section itself did not read (an arg written twice): its keys as written, the unknown ones
        # named all the same; the section's own error is already said (trial s25d #3)
        problems = []
        for k, _v in node.value:
            if isinstance(k, yaml.ScalarNode):
                name, _neg = engine_args.canonical_key(k.value)
                if name not in engine_args.KNOWN_ARGS:
                    unknown[name] = None
    problems += engine_args.engine_arg_problems(unknown, scope="setup")
    if problems:
        raise _engine_arg_error(ctx, root, problems)


def _engine_arg_error(ctx: NodeReader, root: yaml.Node | None, problems: Sequence[engine_args.Problem],
                      also_last: str = "") -> SpecError:
    """One error per engine-arg problem (:class:`engine_args.Problem`: its field and text; at least one), each at
    the line that writes its field, with the fix; ``also_last`` joins the last one's hint (what the serving model
    will refuse once these are fixed). The one error, or all of them as :class:`SpecErrors`."""
    errors = [SpecError(f"setup does not resolve: {p.text}", file=ctx.file,
                        line=node.start_mark.line + 1 if (node := _find(root, p.field)) is not None else None,
                        hint=f"change or remove {p.field} as the line says (the args the models read, accept and "
                             "refuse: docs/reference/refusals.md)" + (also_last if i == len(problems) - 1 else ""))
              for i, p in enumerate(problems)]
    return errors[0] if len(errors) == 1 else SpecErrors(errors)


#: the rope_scaling kinds vLLM does not lengthen max_position_embeddings by (vllm/config/model.py
#: _get_and_verify_max_len: their factor is not applied to the derived max_model_len)
_UNSCALED_ROPE = ("llama3", "su", "longrope")


def _check_model_length(ctx: NodeReader, spec: Spec, setup: Setup, root: yaml.Node | None) -> None:
    """Refuse ``engine.args.max_model_len`` above the model's ``max_position_embeddings`` where vLLM refuses it: a
    model without a ``rope_scaling`` factor vLLM applies (``llama3``'s it does not) and no
    ``VLLM_ALLOW_LONG_MAX_MODEL_LEN`` in ``engine.env``. vLLM's model config raises "User-specified max_model_len
    (N) is greater than the derived max_model_len (max_position_embeddings=M ...)" at startup
    (vllm/config/model.py ``_get_and_verify_max_len``, v0.32.0; a config.json ``model_max_length`` above the limit,
    which vLLM also accepts, is not read). Trial s25c #9: the file passed roofline check and the math, and the
    reason came at line 72 of the output after a full engine start."""
    arch = setup.model
    limit = getattr(arch, "max_position_embeddings", None)
    asked = (setup.engine_args or {}).get("max_model_len")
    rope = getattr(arch, "rope_type", None)
    # a rope_scaling factor lengthens vLLM's limit, except for the kinds it does not scale by (llama3, su, longrope:
    # vllm/config/model.py at v0.32.0 and earlier; yarn's rule changed between releases, so it is left to vLLM).
    # Llama-3.1-8B at 200,000 over its 131,072 was left alone (trial s25d #4)
    if not isinstance(asked, int) or not limit or asked <= limit or rope not in (None, "default", *_UNSCALED_ROPE):
        return
    allow = str((spec.engine.env or {}).get("VLLM_ALLOW_LONG_MAX_MODEL_LEN", "")).strip().lower()
    if allow in ("1", "true"):
        return
    node = _find(root, "engine.args.max_model_len") if root is not None else None
    raise SpecError(f"vLLM will not start this setup: engine.args.max_model_len {asked:,} is above the model's "
                    f"max_position_embeddings {limit:,}, and vLLM refuses a max_model_len above the model's own "
                    "('User-specified max_model_len ... is greater than the derived max_model_len', "
                    "vllm/config/model.py _get_and_verify_max_len)", file=ctx.file,
                    line=node.start_mark.line + 1 if node is not None else None,
                    hint=f"write max_model_len: {limit} or less, or set engine.env.VLLM_ALLOW_LONG_MAX_MODEL_LEN: 1 "
                         "as vLLM's message says (the model may then give wrong output past its trained length)")


def _check_startable(ctx: NodeReader, spec: Spec, setup: Setup, model_node: yaml.Node | None,
                     root: yaml.Node | None) -> None:
    """Refuse a pool short of one request of max_model_len (``model.setup.max_model_len_problem``) at the line that
    fixes it: ``engine.args.max_model_len`` where the file gives it, else the ``engine:`` line (where the arg goes),
    else the ``model:`` line (whose max_position_embeddings is vLLM's default max_model_len)."""
    given = "max_model_len" in (setup.engine_args or {})
    _check_model_length(ctx, spec, setup, root)
    too_many = blocks_override_problem(setup)
    if too_many is not None:
        node = _find(root, "engine.args.num_gpu_blocks_override") if root is not None else None
        raise SpecError(f"vLLM will not start this setup: {too_many}", file=ctx.file,
                        line=node.start_mark.line + 1 if node is not None else None,
                        hint="lower engine.args.num_gpu_blocks_override to what the GPU holds, or leave it out (vLLM "
                             "then sizes the pool from gpu_memory_utilization)")
    problem = max_model_len_problem(setup, fix="engine.args.max_model_len")
    if problem is None:
        return
    engine = _find(root, "engine") if root is not None else None
    engine = None if engine is root else engine  # _find gives the deepest node found: the file itself when absent
    fixes = "(N: what the pool holds or less), or give it more memory as the line says"
    if given:
        node = _find(root, "engine.args.max_model_len")
        hint = ("lower engine.args.max_model_len, or give the pool more memory, as the line says "
                "(docs/reference/refusals.md)")
    elif isinstance(engine, yaml.MappingNode):  # engine.args where the file has it, else the engine: section
        node = _find(root, "engine.args.max_model_len")
        hint = f"write max_model_len: N under engine.args {fixes}"
    else:
        node = model_node
        hint = f"add engine: {{args: {{max_model_len: N}}}} {fixes}"
    raise SpecError(f"vLLM will not start this setup: {problem}", file=ctx.file,
                    line=node.start_mark.line + 1 if node is not None else None, hint=hint)


def takes_serving_value(spec: Spec, pred: Prediction) -> bool:
    """Whether ``pred``'s model value is the serving model's in the math check: its quantity is one the serving
    model computes and the file asks for that column (``model_column: serving``), or the ink is ``predicted:
    model`` (the serving model's value, unless ``model_column: roofline`` and the roofline computes it).  The
    choice ``scoring.column_model`` makes with ``math_mode=True`` (tests/unit/test_serving_refusals_in_check.py
    holds the two to the same answers)."""
    q = pred.q
    if q.serving is None:
        return False
    if spec.model_column == "serving":
        return True
    if pred.predicted.kind is PredictedKind.MODEL:
        return spec.model_column != "roofline" or q.model is None
    return False


def prediction_sections(spec: Spec, overrides: Mapping[str, Any] | None = None, *,
                        hardware_override: str | None = None) -> dict[str, Any]:
    """The setup sections a prediction is computed against: the file's, each one its own ``setup:`` writes
    (``overrides``, :attr:`Prediction.setup`) replacing the file's (``hardware_override``: the GPU a run names, where
    the prediction names none). The one merge :func:`prediction_setup` builds and ``roofline predict --simulate``
    compares setups by."""
    overrides = overrides or {}
    return {"hardware": overrides.get("hardware", hardware_override or spec.hardware),
            "hardware_overrides": overrides.get("hardware_overrides",
                                                spec.hardware_overrides if "hardware" not in overrides else {}),
            "model": overrides.get("model", spec.model),
            "model_overrides": overrides.get("model_overrides",
                                             spec.model_overrides if "model" not in overrides else {}),
            "engine": overrides.get("engine", spec.engine), "workload": overrides.get("workload", spec.workload)}


def prediction_setup(spec: Spec, overrides: Mapping[str, Any], *, hardware_override: str | None = None) -> Setup:
    """The setup a prediction is computed against (:func:`prediction_sections`, built). The one merge the reader's
    checks and the scorer (``scoring.setup_for``) use."""
    secs = prediction_sections(spec, overrides, hardware_override=hardware_override)
    return build_setup(hardware_ref=secs["hardware"], hardware_overrides=secs["hardware_overrides"],
                       model_ref=secs["model"], model_overrides=secs["model_overrides"], engine=secs["engine"],
                       workload=secs["workload"])


@dataclass(frozen=True)
class OwnSetup:
    """One ``predictions:`` item's own ``setup:`` (a prediction's or a table's): its key and value nodes, and the
    tests the item expands into (each with that setup in :attr:`Prediction.setup`)."""

    key: yaml.Node
    node: yaml.Node
    predictions: list[Prediction]


def own_setup_of(item: yaml.Node, predictions: list[Prediction]) -> OwnSetup | None:
    """The own ``setup:`` of the ``predictions:`` item ``item``, read into ``predictions`` (None: it writes none)."""
    if not isinstance(item, yaml.MappingNode):
        return None
    for k, v in item.value:
        if isinstance(k, yaml.ScalarNode) and k.value == "setup":
            return OwnSetup(k, v, [p for p in predictions if p.error is None and p.setup])
    return None


def read_serving(ctx: NodeReader, node: yaml.Node) -> dict[str, float]:
    fields = serving_fields()
    # a time constant may be written without its unit suffix (step_overhead: 3.3 ms for step_overhead_s)
    m = ctx.mapping(node, "serving", serving_field_table())
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
        elif fields[name] == "exponent":
            text = ctx.scalar(v, what).strip()
            try:  # the project's one number reader; an exponent takes no unit
                value, _half_ulp, unit = parse_number(text)
            except UnitError:
                value, unit = math.nan, ""
            if unit or not (math.isfinite(value) and value >= 1.0):
                raise ctx.err(v, f"{what}: {text} is not a number >= 1",
                              "write e.g. 1.75 (1: weight streaming and GEMM compute add; leave it out for the "
                              "model's default)")
        elif fields[name] in ("bandwidth", "flop_rate"):
            value = ctx.value(v, what, fields[name])
            if not value > 0:
                raise ctx.err(v, f"{what}: must be positive", f"write e.g. {example_of(fields[name])}")
        else:
            value = ctx.value(v, what, "ratio")
            if not 0.0 < value <= 1.0:
                raise ctx.err(v, f"{what}: {ctx.scalar(v, what)} is not a share of the peak (0 < x <= 1)",
                              "write e.g. 80% or 0.8")
        out[name] = value
    return out


def read_calibration(ctx: NodeReader, spec: Spec, node: yaml.Node) -> None:
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


def read_hardware(ctx: NodeReader, node: yaml.Node) -> tuple[str, dict[str, Any]]:
    if isinstance(node, yaml.ScalarNode):
        return node.value, {}
    m = ctx.mapping(node, "hardware", None)
    if "id" not in m:
        raise ctx.err(node, "hardware mapping needs an id", "hardware: {id: a100-sxm4-80gb, hbm_bytes_per_s: 1.8e12}")
    over = {k: _override_value(ctx, v) for k, (kn, v) in m.items() if k != "id"}
    return ctx.scalar(m["id"][1], "hardware.id"), over


def _override_value(ctx: NodeReader, node: yaml.Node) -> Any:
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


def _model_path(ctx: NodeReader, node: yaml.Node, text: str) -> str:
    """A model written as a path is read from the prediction file's folder (as ``calibration:`` and a dataset's
    ``path:`` are), so ``cd predictions && pytest x.yaml`` reads what ``pytest predictions/x.yaml`` reads. A preset
    or a Hub id (``Qwen/Qwen2.5-14B-Instruct``) is returned as written."""
    p = Path(text).expanduser()
    if p.is_absolute():
        return str(p)
    here = Path(ctx.file).resolve().parent
    candidate = here / p
    if candidate.exists():
        return str(candidate)
    if text.endswith(".json") or text.startswith(("./", "../")) or p.exists():
        raise ctx.err(node, f"model: no config.json at {candidate}",
                      f"a model path is read from this file's folder ({here}): write it relative to that folder")
    return text


def read_model(ctx: NodeReader, node: yaml.Node) -> tuple[Any, dict[str, Any]]:
    if isinstance(node, yaml.ScalarNode):
        return _model_path(ctx, node, node.value), {}
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
    name_node = next(v for k, (_kn, v) in m.items() if k == "name")
    return (_model_path(ctx, name_node, name) if isinstance(name, str) else name), data


def _engine_args(ctx: NodeReader, node: yaml.Node) -> dict[str, Any]:
    """``engine.args`` with one spelling per argument, as vLLM's command line reads them
    (``engine_args.canonical_key``): ``--gpu-memory-utilization`` is the argument it stores as
    ``gpu_memory_utilization`` (argparse's dest; vllm/engine/arg_utils.py), ``tp`` is ``tensor_parallel_size``
    (its ``-tp`` alias) and ``no-enable-prefix-caching: true`` is ``enable_prefix_caching: false``
    (``--no-enable-prefix-caching``), for the model's checks and reads as for the command line the engine gets.
    An on/off flag written as a word (a quoted ``"false"``) becomes the boolean :func:`engine_args.read_flag` reads.
    The same argument under two spellings is an error at the second; a flag that is neither true nor false stays as
    written, for the setup's check to report with the others."""
    args: dict[str, Any] = ctx.plain(node)
    out: dict[str, Any] = {}
    first: dict[str, str] = {}
    for k_node, _v in node.value:
        raw = str(k_node.value)
        key, negated = engine_args.canonical_key(raw)
        value = args[raw]
        if negated:
            try:
                value = not engine_args.read_flag(value, f"engine.args.{raw}")
            except SetupValueError:
                key = raw.replace("-", "_")  # build_setup refuses it, with the setup's other bad args
        elif key in engine_args.FLAG_ARGS and isinstance(value, str):
            try:  # a quoted "false" is off for the model and for the command line the engine gets alike
                value = engine_args.read_flag(value, f"engine.args.{raw}")
            except SetupValueError:
                pass  # build_setup refuses it, with the setup's other bad args
        if key in first:
            raise ctx.err(k_node, f"engine.args.{raw} is engine.args.{first[key]} again (vLLM reads both as one "
                          "argument)", f"keep one of the two; write it as {key}")
        first[key] = raw
        out[key] = value
    return out


def check_engine_model(ctx: NodeReader, node: yaml.Node, engine: Mapping[str, Any], model: str) -> None:
    """Refuse, at its line, an ``engine.model`` the launch would ignore: the tiny model serves its own weights. (A
    local path that is not there is refused at launch, ``measure.sweep``: the file is read for the math and
    replays on machines that do not hold it.) A Hub id is never looked up."""
    value = engine.get("model")
    if not value or not isinstance(node, yaml.MappingNode):
        return
    v_node = next((v for k, v in node.value if getattr(k, "value", None) == "model"), node)
    if model == TINY_MODEL:
        raise ctx.err(v_node, f"engine.model: {value!r} is not served: model: {TINY_MODEL} launches the tiny "
                      "model's own weights (engine.model is ignored with it)",
                      "remove engine.model, or write the model you mean to serve as model: (a preset, a Hub id or "
                      "a config.json) with engine.model: its weights")


def read_engine(ctx: NodeReader, node: yaml.Node) -> dict[str, Any]:
    m = ctx.mapping(node, "engine", ENGINE_FIELDS)
    out: dict[str, Any] = {"name": "vllm"}
    for key, (_kn, v) in m.items():
        if key == "version" and isinstance(v, yaml.ScalarNode) and v.tag.endswith((":float", ":int")):
            # YAML (and the JSON Schema an editor checks) reads an unquoted 0.10 as the number 0.1
            raise ctx.err(v, f"engine.version: {v.value} unquoted is a number to YAML (0.10 would read as 0.1)",
                          f"write it quoted: version: \"{v.value}\"")
        if key in ("name", "version", "model", "entrypoint"):
            out[key] = ctx.string(v, f"engine.{key}", ENGINE_FIELDS[key].enum)
        elif key == "args":
            out[key] = _engine_args(ctx, ctx_map_check(ctx, v, "engine.args"))
        elif key == "env":
            out[key] = ctx.plain(ctx_map_check(ctx, v, f"engine.{key}"))
        elif key == "reserves":
            r = ctx.mapping(v, "engine.reserves", RESERVES_FIELDS)
            out[key] = {k: ctx.value(vv, f"engine.reserves.{k}", "bytes") for k, (kk, vv) in r.items()}
        elif key == "cpu_kvcache_space":
            out[key] = _cpu_kvcache_space(ctx, v)
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


def read_workload(ctx: NodeReader, node: yaml.Node) -> dict[str, Any]:
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


def read_sweep(ctx: NodeReader, node: yaml.Node) -> Sweep:
    m = ctx.mapping(node, "sweep", SWEEP_FIELDS)
    kw: dict[str, Any] = {}
    for key, (_kn, v) in m.items():
        if key == "mode":
            kw["mode"] = PointMode(ctx.string(v, "sweep.mode", SWEEP_FIELDS["mode"].enum))
        elif key == "concurrency":
            items = v.value if isinstance(v, yaml.SequenceNode) else [v]
            kw["concurrency"] = tuple(ctx.integer(i, "sweep.concurrency") for i in items)
            if any(c < 1 for c in kw["concurrency"]):
                raise ctx.err(v, "sweep.concurrency values must be >= 1")
            if any(c > MAX_AT_CONCURRENCY for c in kw["concurrency"]):
                raise ctx.err(v, f"sweep.concurrency values must be <= {MAX_AT_CONCURRENCY:,} (the serving model "
                                 "simulates every request in flight)", "no vLLM server holds more sequences at once")
        elif key == "rates":
            items = v.value if isinstance(v, yaml.SequenceNode) else [v]
            kw["rates"] = tuple(ctx.value(i, "sweep.rates", "request_rate") for i in items)
        elif key == "burstiness":
            kw["burstiness"] = ctx.number(v, "sweep.burstiness")
        elif key == "arrival_span":
            kw["arrival_span"] = ctx.string(v, "sweep.arrival_span", SWEEP_FIELDS["arrival_span"].enum)
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
            kw["steady_state"] = ctx.word(v, "sweep.steady_state", STEADY_STATES)
        elif key == "processes":
            kw["processes"] = _processes(ctx, v)
        elif key == "timeline":
            if ctx.scalar(v, "sweep.timeline").strip().lower() in ("off", "false", "none", "no"):
                kw["timeline_interval_s"] = None
            else:
                kw["timeline_interval_s"] = ctx.value(v, "sweep.timeline", "time")
    n = kw.get("requests_per_point")
    if n is not None and n < 2 and (kw.get("rates") or kw.get("mode") == PointMode.OPEN):
        raise ctx.err(m["requests_per_point"][1], f"sweep.requests_per_point: {n} request cannot measure an open "
                      "loop's rate: its throughputs are the requests over the span of their sends plus the last "
                      "latency, so 1 request reads 1 / its latency (vllm bench serve would also count the wait "
                      "before its send)", "write requests_per_point: 2 or more (the default is max(10, 30 x rate))")
    if kw.get("adaptive") and isinstance(kw.get("processes"), int) and kw["processes"] > 1:
        raise ctx.err(m["processes"][1], f"sweep.processes: {kw['processes']} client processes cannot stop a point "
                      f"early, and sweep.adaptive: true (line {m['adaptive'][1].start_mark.line + 1}) needs that",
                      "write processes: 1 (or auto, which is 1 in an adaptive sweep), or adaptive: false to run "
                      "every point to its cap over several processes")
    return Sweep(**kw)


_PROCESSES_HINT = "write a whole number of client processes >= 1 (e.g. processes: 2) or processes: auto"


def _processes(ctx: NodeReader, node: yaml.Node) -> Processes:
    """``sweep.processes``: a whole number >= 1 or ``auto``. More processes than this machine's CPUs is allowed
    (the file may be checked on a laptop and measured on a bigger box; the point records ``client_cores``)."""
    if not isinstance(node, yaml.ScalarNode):
        raise ctx.err(node, "sweep.processes must be a single value, not a "
                            f"{'list' if isinstance(node, yaml.SequenceNode) else 'mapping'}", _PROCESSES_HINT)
    text = ctx.scalar(node, "sweep.processes").strip()
    if text == "auto":
        return "auto"
    if text.lower() in ("true", "false") or text.lower() in BOOL_TRAPS:
        raise ctx.err(node, f"sweep.processes: {text!r} is not a number of processes", _PROCESSES_HINT)
    try:
        value = ctx.number(node, "sweep.processes")
    except SpecError:
        raise ctx.err(node, f"sweep.processes: {text!r} is not a number of processes", _PROCESSES_HINT) from None
    if not float(value).is_integer() or value < 1:
        raise ctx.err(node, f"sweep.processes: {text} is not a number of processes (a whole number >= 1)",
                      _PROCESSES_HINT)
    return int(value)


def read_slo(ctx: NodeReader, node: yaml.Node) -> dict[str, Any]:
    m = ctx.mapping(node, "slo", SLO_FIELDS)
    out: dict[str, Any] = {}
    for key, (_kn, v) in m.items():
        if key == "percentile":
            out[key] = ctx.string(v, "slo.percentile", SLO_FIELDS["percentile"].enum)
        else:
            out[key] = ctx.value(v, f"slo.{key}", "time")
    return out


def read_thresholds(ctx: NodeReader, node: yaml.Node) -> qreg.Thresholds:
    m = ctx.mapping(node, "thresholds", THRESHOLD_FIELDS)
    kw = {}
    for key, (_kn, v) in m.items():
        kw[key] = ctx.number(v, f"thresholds.{key}") if key == "ttft_knee_ratio" else ctx.value(
            v, f"thresholds.{key}", "ratio")
    return qreg.Thresholds(**kw)


def read_tolerance(ctx: NodeReader, node: yaml.Node, dimension: str, unit: str, what: str, *,
                   relative_only: bool = False) -> Tolerance:
    try:
        if isinstance(node, yaml.SequenceNode):
            return parse_tolerance([ctx.text(n, what) for n in node.value], dimension, unit)
        tol = parse_tolerance(ctx.text(node, what), dimension, unit)
    except ToleranceError as exc:
        text = ctx.text(node, what) if isinstance(node, yaml.ScalarNode) else ""
        if relative_only and _bare_number(text):  # a default serves every quantity: a bare number has no unit
            raise ctx.err(node, f"{what}: {text!r} is a bare number, and a default tolerance applies to every "
                          "quantity, so it has no unit to read it in", f"write ±{text.strip()}% (relative)") from None
        message = str(exc).removesuffix(f": {TOLERANCE_HELP}")  # the list goes once, on the fix line
        raise ctx.err(node, f"{what}: {message}", TOLERANCE_HELP) from None
    if relative_only and (tol.abs_lo is not None or tol.abs_hi is not None or tol.lower is not None
                          or tol.upper is not None):
        raise ctx.err(node, f"{what}: a default tolerance must be relative (it applies to every quantity)",
                      "write e.g. ±10%")
    _refuse_reaching_zero(ctx, node, tol, what)
    return tol


def _refuse_reaching_zero(ctx: NodeReader, node: yaml.Node, tol: Tolerance, what: str) -> None:
    """Refuse a relative tolerance that reaches 100% or more below the ink: its band then runs down to 0 or below,
    and no quantity the plugin checks is negative (times, rates, bytes, counts, shares), so it accepts any value
    under the ink, however far: TPOT ink of 1e300 ms at ±100% passed the math check (probe s15 #7).  What was
    meant is a one-sided bound (``<= +100%``: at most double the ink) or a narrower band; the check is kept
    demanding rather than warned about, since a test that cannot fail on one side reads as a pass on that side."""
    if tol.rel_lo is None or not tol.rel_lo >= 1.0 - 1e-12:
        return
    text = tol.text.strip()
    if tol.rel_hi is None:
        raise ctx.err(node, f"{what}: {text} accepts any value (down to 0, with no upper bound; no quantity checked "
                      "is negative)", "write a band under 100% (e.g. ±50%) or a one-sided upper bound like '<= +10%'")
    raise ctx.err(node, f"{what}: {text} accepts anything down to 0 ({tol.rel_lo:.0%} below the ink reaches it; no "
                  "quantity checked is negative), so ink too high always passes",
                  f"write a one-sided bound like '<= +{tol.rel_hi:.0%}' if only the top is meant, or a band under "
                  "100% (e.g. ±50%)")


def _bare_number(text: str) -> bool:
    try:
        return math.isfinite(float(text.strip().lstrip("±").replace(",", "")))
    except ValueError:
        return False


DRIFT_HELP = ("write a relative threshold: 5% (either way), +10%/-3% (a rise of 10% or a fall of 3%) or "
              "<= +10% (rises only)")


def parse_drift_threshold(text: str) -> Tolerance:
    """A drift threshold (``drift: 5%`` in the YAML, ``--roofline-drift 5%``): how far a measured value may move
    from its baseline, relative to the baseline. The tolerance grammar's relative forms (``5%``, ``±5%``,
    ``+10%/-3%``, ``<= +10%``, ``exact``); an absolute one is refused, since one threshold serves every quantity."""
    try:
        tol = parse_tolerance(str(text), "ratio")
    except ToleranceError:  # the grammar's own hint lists absolute forms, which a drift threshold refuses
        raise ToleranceError(f"drift threshold {str(text)!r}: {DRIFT_HELP}") from None
    if any(v is not None for v in (tol.abs_lo, tol.abs_hi, tol.lower, tol.upper)):
        raise ToleranceError(f"drift threshold {str(text)!r} is not relative to the baseline; {DRIFT_HELP}")
    return tol


def _cpu_kvcache_space(ctx: NodeReader, node: yaml.Node) -> float:
    """``engine.cpu_kvcache_space``: the CPU engine's KV pool, in bytes, a whole number of GiB
    (:func:`~pytest_roofline.model.setup.cpu_kvcache_space_problem`: 1.5 GiB was run as 2 GiB while the math checked
    1.5), refused here at its line."""
    size = ctx.value(node, "engine.cpu_kvcache_space", "bytes")
    problem = cpu_kvcache_space_problem(size)
    if problem is None:
        return size
    raise ctx.err(node, f"engine.cpu_kvcache_space: {ctx.text(node, 'engine.cpu_kvcache_space')} {problem[0]}",
                  problem[1])


def read_drift(ctx: NodeReader, node: yaml.Node, what: str) -> str:
    text = ctx.text(node, what)
    try:
        parse_drift_threshold(text)
    except ToleranceError:
        raise ctx.err(node, f"{what}: {text!r} is not a relative threshold (how far a measured value may move from "
                            "its baseline, in %)", DRIFT_HELP) from None
    return text
