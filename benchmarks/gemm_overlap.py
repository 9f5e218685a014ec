"""How a GEMM's time joins its two bounds near the ridge point: the serving model's ``linear_overlap_p``.

The roofline charges a linear layer ``max(w, c)``: its weight-streaming time ``w`` or its compute time ``c``,
whichever is larger. Measured GEMMs near the ridge point (``w`` close to ``c``) are slower than both. The serving
model charges the p-norm ``(w^p + c^p)^(1/p)`` (``model/serving/constants.py``, ``linear_overlap_p``); this
benchmark measures p on two independent sets of kernel timings and prints how far each choice of p is from them:

* ``benchmarks/data/vidur-gemm-profiles.json``: Vidur's public per-operator profiles (github.com/microsoft/vidur,
  ``data/profiling/compute``): the four GEMMs of one decoder layer (QKV, output, gate+up, down) of Llama-2-7B,
  Llama-3-8B, CodeLlama-34B and Llama-2-70B on A100, H100 and A40, TP 1-8, 1-32,768 tokens (PyTorch, one kernel
  at a time);
* ``benchmarks/data/h200-step-sweep.json`` and ``-run2.json``: the project's H200 sweep, a Llama-3.1-8B-shaped
  decode step's weight GEMMs replayed as CUDA graphs, B = 1-512 (``benchmarks/data/h200-step-sweep.md``).

Two views:

1. **The shape alone.** Each profile's own levels: ``w`` = its median time at <= 8 tokens (bandwidth-bound),
   ``c`` = tokens x its time per token at its largest token count (compute-bound). Only the join between them is
   left to p. The best p (least squares of the log error over the points within 4x of the ridge) per source.
2. **The serving model end to end.** ``w`` and ``c`` from the datasheet at the model's defaults (0.8 of the
   bandwidth, 0.75 of the peak, 3 us per GEMM kernel): the error near the ridge with the roofline's max and with
   the shipped p.

Run: ``python benchmarks/gemm_overlap.py`` (a second; prints the tables; nothing is written).
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

from pytest_roofline.model.hardware import get_hardware
from pytest_roofline.model.serving.constants import KERNELS_PER_LAYER, LINEAR_OVERLAP_P, default_constants
from pytest_roofline.model.setup import build_setup

DATA = Path(__file__).resolve().parent / "data"


def _datasheet(hardware_id: str) -> tuple[float, float]:
    """(dense bf16 FLOP/s, bytes/s) from the project's catalog."""
    hw = get_hardware(hardware_id)
    return float(hw.peak_flop_per_s["bf16"]), float(hw.hbm_bytes_per_s)


#: A100 80GB SXM, H100 SXM and H200 from the catalog; the A40 (not in it) from NVIDIA's A40 datasheet (696 GB/s,
#: 149.7 TFLOP/s bf16 dense)
DATASHEET = {"a100": _datasheet("a100-sxm4-80gb"), "h100": _datasheet("h100-sxm"), "h200": _datasheet("h200"),
             "a40": (149.7e12, 696e9)}
#: the serving model's cuda defaults (model/serving/constants.py)
_CUDA = default_constants(build_setup(hardware_ref="h100-sxm", model_ref="llama-3.1-8b"))
HBM_EFFICIENCY, FLOP_EFFICIENCY = _CUDA.hbm_efficiency, _CUDA.flop_efficiency
KERNEL_LATENCY_S, KERNELS = _CUDA.mem_latency_s, KERNELS_PER_LAYER
PS: tuple[float | None, ...] = (None, 3.0, 2.0, LINEAR_OVERLAP_P, 1.5, 1.25, 1.0)


def combine(w: float, c: float, p: float | None) -> float:
    return max(w, c) if p is None else (w ** p + c ** p) ** (1.0 / p)


def layer_params(shape: dict, tp: int) -> float:
    h, nh, nkv, inter = shape["hidden"], shape["heads"], shape["kv_heads"], shape["intermediate"]
    hd = h // nh
    mlp = (3 if shape["gated"] else 2) * h * inter
    return (h * (nh + 2 * nkv) * hd + h * h + mlp) / tp


def vidur_points() -> list[dict]:
    doc = json.loads((DATA / "vidur-gemm-profiles.json").read_text())
    out = []
    for prof in doc["profiles"]:
        rows = [(int(t), float(ms) / 1e3) for t, ms in prof["rows"]]
        small = statistics.median(s for t, s in rows if t <= 8)
        t_max, s_max = max(rows)
        per_token = s_max / t_max
        params = layer_params(prof["shape"], prof["tp"])
        peak, bw = DATASHEET[prof["gpu"]]
        for t, s in rows:
            out.append({"source": f"vidur {prof['gpu']}", "gpu": prof["gpu"], "tp": prof["tp"], "tokens": t,
                        "measured_s": s, "w_own": small, "c_own": per_token * t,
                        "w_model": 2 * params / (HBM_EFFICIENCY * bw),
                        "c_model": 2 * params * t / (FLOP_EFFICIENCY * peak), "latency_s": KERNELS * KERNEL_LATENCY_S})
    return out


def h200_points() -> list[dict]:
    out = []
    for name in ("h200-step-sweep.json", "h200-step-sweep-run2.json"):
        doc = json.loads((DATA / name).read_text())
        weight_bytes = float(doc["weight_bytes"])  # bf16: 2 bytes a parameter, so FLOP per token = the bytes
        rows = [(int(r["batch"]), float(r["seconds"])) for r in doc["weights"]]
        w_own = min(s for b, s in rows)
        matmul = float(doc["matmul_peak"]["flop_per_s"])
        layers = 32  # the Llama-3.1-8B shape of the sweep (h200-step-sweep.md)
        for b, s in rows:
            out.append({"source": "h200 sweep", "gpu": "h200", "tp": 1, "tokens": b, "measured_s": s,
                        "w_own": w_own, "c_own": b * weight_bytes / matmul,
                        "w_model": weight_bytes / (HBM_EFFICIENCY * DATASHEET["h200"][1]),
                        "c_model": b * weight_bytes / (FLOP_EFFICIENCY * DATASHEET["h200"][0]),
                        "latency_s": (KERNELS * layers + 1) * KERNEL_LATENCY_S})
    return out


def near(pt: dict, key: str = "own", within: float = 4.0) -> bool:
    r = pt[f"c_{key}"] / pt[f"w_{key}"]
    return 1 / within <= r <= within


def log_errors(points: list[dict], p: float | None, key: str) -> list[float]:
    lat = (lambda pt: pt["latency_s"]) if key == "model" else (lambda pt: 0.0)
    return [math.log((combine(pt[f"w_{key}"], pt[f"c_{key}"], p) + lat(pt)) / pt["measured_s"]) for pt in points]


def summary(errs: list[float]) -> str:
    if not errs:
        return "n/a"
    med = math.expm1(statistics.median(errs)) * 100
    mape = statistics.mean(abs(math.expm1(e)) for e in errs) * 100
    return f"median {med:+.1f}%, MAPE {mape:.1f}% ({len(errs)})"


def best_p(points: list[dict]) -> float:
    grid = [1 + i / 100 for i in range(0, 401)]
    return min(grid, key=lambda p: sum(e * e for e in log_errors(points, p, "own")))


def main() -> None:
    vidur, h200 = vidur_points(), h200_points()
    sets = {"vidur (A100, H100, A40; TP 1)": [pt for pt in vidur if pt["tp"] == 1],
            "vidur (A100, H100, A40; TP 1-8)": vidur,
            "h200 sweep (decode, CUDA graphs)": h200}
    print("1. The shape alone: each profile's own bandwidth and FLOP levels; points within 4x of the ridge\n")
    print("| set | best p | " + " | ".join("max" if p is None else f"p = {p:g}" for p in PS) + " |")
    print("|---|---|" + "---|" * len(PS))
    for name, pts in sets.items():
        close = [pt for pt in pts if near(pt)]
        cells = [summary(log_errors(close, p, "own")) for p in PS]
        print(f"| {name} | {best_p(close):.2f} | " + " | ".join(cells) + " |")
    print(f"\n2. The serving model end to end (datasheet x {HBM_EFFICIENCY} / {FLOP_EFFICIENCY}, "
          f"{KERNELS} x {KERNEL_LATENCY_S * 1e6:g} us a layer); points within 2x of the model's ridge\n")
    print(f"| set | max (the roofline) | p = {LINEAR_OVERLAP_P:g} (shipped) | all points, max | all points, "
          f"p = {LINEAR_OVERLAP_P:g} |")
    print("|---|---|---|---|---|")
    for name, pts in sets.items():
        close = [pt for pt in pts if near(pt, "model", 2.0)]
        print(f"| {name} | {summary(log_errors(close, None, 'model'))} | "
              f"{summary(log_errors(close, LINEAR_OVERLAP_P, 'model'))} | {summary(log_errors(pts, None, 'model'))} | "
              f"{summary(log_errors(pts, LINEAR_OVERLAP_P, 'model'))} |")
    print("\n3. The H200 decode GEMMs by batch (own levels): measured, max, shipped p\n")
    print(f"| B | measured ms | max | p = {LINEAR_OVERLAP_P:g} |")
    print("|---|---|---|---|")
    for pt in h200[: len(h200) // 2]:
        mx = combine(pt["w_own"], pt["c_own"], None)
        pn = combine(pt["w_own"], pt["c_own"], LINEAR_OVERLAP_P)
        m = pt["measured_s"]
        print(f"| {pt['tokens']} | {m * 1e3:.2f} | {mx * 1e3:.2f} ({(mx / m - 1) * 100:+.0f}%) | "
              f"{pn * 1e3:.2f} ({(pn / m - 1) * 100:+.0f}%) |")


if __name__ == "__main__":
    main()
