"""``roofline init``: a prediction file to fill in, written on the Day 3 notebook's pattern.

The setup comes from the flags (``--gpu`` in the one GPU vocabulary, ``--model`` a preset, a Hub id or a
config.json, ``--tp``, ``--workload IN/OUT``); then one prediction per number the notebook predicts — the model's
inputs, the knee from the roofline, the KV pool, the throughput curve, Little's law — each with its derivation as
a comment and the analytical model's value beside it, and ``predicted:`` left blank: the ink is the user's to
write before the sweep runs. ``roofline check`` names each blank left (its line and an example); once every blank
is filled the file checks, and ``pytest FILE`` scores the ink against the model.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_roofline.cli.predict import length_error, max_model_len_warning, memory_fit_error
from pytest_roofline.model import bands, hardware
from pytest_roofline.model.setup import Setup, build_setup
from pytest_roofline.quantities.registry import QUANTITIES
from pytest_roofline.units import format_value

__all__ = ["cmd_init", "render", "model_as_written", "parse_workload", "CONCURRENCY"]

#: the sweep the file starts with: the notebook's doublings, fewer of them
CONCURRENCY = (1, 4, 16, 64)
#: the unit a value is shown in where the dimension's default is not the one the notebook writes
_UNITS = {"weight_bytes": "GB", "weight_bytes_per_gpu": "GB", "kv_bytes_per_token": "B"}


def parse_workload(text: str) -> tuple[int, int]:
    """``"1024/256"`` -> (1024, 256): prompt and output tokens."""
    inp, sep, out = str(text).partition("/")
    try:
        lengths = int(inp.replace(",", "")), int(out.replace(",", ""))
    except ValueError:
        lengths = (0, 0)
    if not sep or min(lengths) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: write INPUT/OUTPUT tokens, e.g. 1024/256")
    return lengths


@dataclass(frozen=True)
class Item:
    """One prediction of the file: its id, quantity, at:, the derivation comment and a note on the ink."""

    id: str
    quantity: str
    derivation: str
    at: str = ""
    ink_hint: str = ""


def _items(setup: Setup, input_len: int, tp: int) -> list[Item]:
    m, hw = setup.model, setup.hardware
    kv_heads = m.num_kv_heads
    items = [
        Item("params", "param_count", f"P from config.json: embeddings + {m.num_layers} layers × (attention + MLP)"
             " (+ the untied lm_head)"),
        Item("weights", "weight_bytes", f"P × bytes per parameter ({setup.weight_dtype})"),
        Item("kv-bytes-per-token", "kv_bytes_per_token",
             f"{m.num_layers} layers × {kv_heads} KV heads × {m.head_dim} head dim × 2 (K and V) × bytes "
             f"({setup.kv_dtype})"),
    ]
    if tp > 1:
        items.append(Item("weights-per-gpu", "weight_bytes_per_gpu", f"weights ÷ TP {tp} (+ K/V heads replicated "
                          "when TP > KV heads)"))
    peak = hw.peak_for(setup.weight_dtype) if setup.weight_dtype in hw.dtypes else hw.peak_for("bf16")
    items += [
        Item("ridge", "ridge_point", f"peak {peak / 1e12:,.0f} TFLOP/s ÷ bandwidth "
             f"{(hw.hbm_bytes_per_s or 0) / 1e9:,.0f} GB/s (the spec sheet)"),
        Item("naive-knee", "weight_only_knee", "intensity ≈ B when KV is ignored, so the knee is B* = ridge"),
        Item("kv-intensity-asymptote", "intensity_asymptote",
             "2P FLOPs per token ÷ KV bytes per sequence: the intensity decode tends to as B grows"),
        Item("knee", "knee_concurrency", "the batch where the KV-inclusive intensity reaches the ridge; "
             "asymptote < ridge: none", ink_hint="a number, or none"),
        Item("batch1-ceiling", "batch1_ceiling",
             ("bandwidth ÷ the weight bytes one token reads (per GPU under TP): the shared weights and each "
              f"layer's top-{m.num_experts_per_tok} of {m.num_experts} experts"
              if m.is_moe and not m.is_nominal else
              "bandwidth ÷ weight bytes (per GPU under TP): one weight read per token")),
        Item("kv-blocks", "num_gpu_blocks", "(utilization × memory − weights − reserves) ÷ (KV bytes per token × "
             "block size)"),
    ]
    ctx = f"{setup.kv_context_tokens:,.0f}"  # the KV a sequence holds on average: input + output ÷ 2
    weights = "the weights B tokens read (their experts)" if m.is_moe and not m.is_nominal else "weights"
    for c in CONCURRENCY[1:]:
        step = f"(({weights} + B × KV per sequence at {ctx} tokens) ÷ bandwidth"
        step += f" + the step's all-reduces at TP {tp})" if tp > 1 else ")"
        items.append(Item(f"throughput-c{c}", "output_throughput",
                          f"B ÷ {step} at B = {c}: a ceiling", at=f"{{concurrency: {c}}}"))
    items.append(Item("littles-law", "littles_law_ratio", "closed loop: L = C, so req/s × mean latency gives back C",
                      at="{concurrency: every}",
                      ink_hint="1.00 with tolerance ±2%, as the notebook wrote it"))
    return items


def _at_mapping(at: str) -> dict[str, Any]:
    if not at:
        return {}
    key, _, value = at.strip("{} ").partition(":")
    value = value.strip()
    return {key.strip(): int(value) if value.isdigit() else value}


def _model_text(setup: Setup, item: Item) -> str:
    """The analytical model's value, as the file would write it (``—`` for a measured-only quantity)."""
    q = QUANTITIES[item.quantity]
    if q.model is None or "every" in item.at:
        return "— (measured only)"
    mv = q.model(setup, _at_mapping(item.at))
    if mv.value is None:
        return "none"
    if q.dimension == "count" and float(mv.value).is_integer():
        return f"{int(mv.value):,}"
    return format_value(float(mv.value), q.dimension, _UNITS.get(item.quantity))


def _band_text(setup: Setup, item: Item) -> str:
    """For a roofline ceiling (batch-1 tokens/s), the band measured runs land in (model/bands.py), else ''."""
    q = QUANTITIES[item.quantity]
    if item.quantity not in bands.ROOFLINE_CEILINGS or q.model is None:
        return ""
    moe = setup.model.is_moe and not setup.model.is_nominal
    band = bands.roofline_fraction_band(moe=moe)
    if band is None:
        return f"; {bands.MOE_CEILING_NO_BAND}" if moe else ""
    lo, hi = band.around(float(q.model(setup, _at_mapping(item.at)).value))
    return (f"; band: measured runs reach {band.lo:.0%}-{band.hi:.0%} of it ({format_value(lo, q.dimension)} to "
            f"{format_value(hi, q.dimension)}, model/bands.py)")


def _refuse_impossible(setup: Setup, model: str, workload: dict[str, Any]) -> None:
    """A ValueError (``roofline: ...``, exit status 2, no file written) for a setup vLLM would not start (the
    weights or the reserves leave no KV pool: ``predict.memory_fit_error``) or a request it would reject (longer
    than max_model_len: ``predict.length_error``). A file of such a setup could not be measured, and its model
    values (a pool of 0 blocks, a batch-1 ceiling) would invite ink for a run that cannot happen."""
    def rebuild(tp: int) -> Setup:
        return build_setup(hardware_ref=setup.hardware.id, model_ref=model, workload=workload,
                           engine={"name": "vllm", "args": {"tensor_parallel_size": tp}})

    err = memory_fit_error(setup, rebuild=rebuild, mml_flag=None, util_flag=None,
                           quantized="a quantized checkpoint (--model of an FP8, AWQ or GPTQ checkpoint)")
    if err is None:
        err = length_error(setup, lengths_flag="--workload INPUT/OUTPUT")
    if err:
        raise ValueError(f"{err}; no file written")


def model_as_written(model: str, output: Path | None) -> str:
    """``--model`` as the file at ``output`` must write it: a relative path to a config.json (or a model folder)
    that exists from here is rewritten relative to ``output``'s folder, which is where a prediction file's relative
    ``model:`` path is read from (format/_sections.py); an absolute path (``~/...`` too), a preset, a Hub id, and
    anything written to stdout (``output`` None) are kept as the user gave them."""
    path = Path(model).expanduser()
    if output is None or path.is_absolute():
        return model
    try:
        if not path.exists():
            return model
        rel = os.path.relpath(path.resolve(), output.resolve().parent)
    except (OSError, ValueError):  # unreadable, or another drive (Windows): the absolute path always reads
        return str(path.resolve())
    return Path(rel).as_posix()


def render(*, gpu: str, model: str, tp: int = 1, input_len: int = 1024, output_len: int = 1024,
           command: str = "", written_model: str | None = None) -> str:
    """The prediction file's text: the setup, then every prediction with its derivation, the model's value and
    a blank ``predicted:``. ``model`` is read from here (the working directory); ``written_model`` is what the
    file's ``model:`` line says (default ``model``): a path relative to the file's own folder
    (:func:`model_as_written`)."""
    spec = hardware.get_hardware(gpu)
    engine: dict[str, Any] = {"name": "vllm", "args": {"tensor_parallel_size": tp} if tp > 1 else {}}
    workload = {"input_len": input_len, "output_len": output_len}
    setup = build_setup(hardware_ref=spec.id, model_ref=model, engine=engine, workload=workload)
    _refuse_impossible(setup, model, workload)
    warn = max_model_len_warning(setup, mml_flag="engine.args.max_model_len")
    note = hardware.family_note(gpu)
    lines = [
        f"# Written by `{command or 'roofline init'}`,",
        "# on the Day 3 notebook's pattern: every number below is yours to predict in ink, from the spec sheet",
        "# and the model's config, BEFORE the sweep runs. Each prediction carries its derivation and the",
        "# analytical model's value; write your own value, with its unit, on its `predicted:` line, then:",
        "#   roofline check THIS_FILE       # names every blank left, with its line",
        "#   pytest THIS_FILE               # the math: your ink against the model, no GPU needed",
        f"#   pytest --gpu {spec.family} THIS_FILE  # measured, on that GPU with vLLM installed",
    ]
    if note:
        lines.append(f"# --gpu {note}")
    if warn:  # the file is still worth writing: one engine.args.max_model_len line makes it runnable
        lines.append(f"# warning: {warn}")
    lines += [
        f'title: "{model} on {spec.id}' + (f" (TP {tp})" if tp > 1 else "") + '"',
        f"hardware: {spec.id}",
        f"model: {written_model or model}",
        "engine:",
        "  name: vllm",
    ]
    if tp > 1:
        lines.append(f"  args: {{tensor_parallel_size: {tp}}}")
    lines += [
        f"workload: {{input_len: {input_len}, output_len: {output_len}}}",
        f"sweep: {{mode: closed, concurrency: [{', '.join(str(c) for c in CONCURRENCY)}], requests_per_point: 10x}}",
        "defaults:",
        "  tolerance: ±15%        # how close a measurement must come to your ink",
        "  math_tolerance: ±1%    # how close your ink must come to the model's arithmetic (rounding)",
        "",
        "predictions:",
    ]
    for item in _items(setup, input_len, tp):
        lines.append(f"  - id: {item.id}")
        lines.append(f"    quantity: {item.quantity}")
        if item.at:
            lines.append(f"    at: {item.at}")
        lines.append(f"    # derivation: {item.derivation}")
        lines.append(f"    # model: {_model_text(setup, item)}" + _band_text(setup, item)
                     + (f"; ink: {item.ink_hint}" if item.ink_hint else ""))
        if item.quantity == "littles_law_ratio":
            lines.append("    tolerance: ±2%")
        lines.append("    predicted:              # <- your value, in ink")
    return "\n".join(lines) + "\n"


def cmd_init(args: argparse.Namespace) -> int:
    command = f"roofline init --gpu {args.gpu} --model {args.model}" + (f" --tp {args.tp}" if args.tp > 1 else "")
    command += f" --workload {args.workload[0]}/{args.workload[1]}"
    out = None if args.output in (None, "-") else Path(args.output)
    written = model_as_written(args.model, out)
    text = render(gpu=args.gpu, model=args.model, tp=args.tp, input_len=args.workload[0],
                  output_len=args.workload[1], command=command, written_model=written)
    if out is None:
        sys.stdout.write(text)
        return 0
    if out.exists() and not args.force:
        raise FileExistsError(f"{out} exists: choose another -o, or --force to overwrite it")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    if written != args.model:
        print(f"roofline: model: {written} (--model {args.model}, written relative to {out.parent}, the folder "
              "a prediction file's model path is read from)", file=sys.stderr)
    for line in text.splitlines():
        if line.startswith("# warning: "):
            print(f"roofline: {line[2:]}", file=sys.stderr)
    print(f"wrote {out}: fill in each `predicted:`, then `roofline check {out}`", file=sys.stderr)
    return 0
