"""Re-run the reliability review's bad prediction-file inputs and print, per case, the outcome, time and memory.

    .venv/bin/python benchmarks/bad_input_probe.py

Each case is loaded in-process under a 60 s alarm, timed, then loaded again under tracemalloc for its peak.
The outcome is CLEAN (a SpecError, or the file loads with the bad prediction as an error carrying a SpecError),
LOADED (no error at all — wrong for every case here), TRACEBACK (any other exception) or HANG (the alarm).
Nothing here is asserted: tests/test_bad_input.py holds the claims; this prints the figures.
"""

from __future__ import annotations

import signal
import time
import tracemalloc
import warnings

from pytest_roofline.errors import SpecError
from pytest_roofline.format.spec import loads_spec

HEAD = "hardware: a100-sxm4-80gb\nmodel: qwen3-8b\n"


def pred(value: str, extra: str = "") -> str:
    return f"predictions:\n  - id: p\n    quantity: max_num_seqs\n    predicted: {value}\n{extra}"


def kv_pred() -> str:
    return "predictions:\n  - id: kv\n    quantity: kv_bytes_per_seq\n    predicted: -151 MB\n"


def bomb(levels: int = 9, width: int = 9) -> str:
    lines = ["engine:", "  args:", "    l0: &l0 [" + ", ".join(["lol"] * width) + "]"]
    lines += [f"    l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * width) + "]" for i in range(1, levels)]
    return HEAD + "\n".join(lines) + "\n" + pred("256")


SIXTY = "[" + ", ".join(str(i) for i in range(1, 61)) + "]"
CASES = {
    "predicted: 1e999": HEAD + pred("1e999"),
    "tolerance: ±1e999": HEAD + pred("256", "    tolerance: ±1e999\n"),
    "predicted: 0e999": HEAD + pred("0e999"),
    "a NUL byte": HEAD + "title: a\x00b\n" + pred("256"),
    "a BEL byte": HEAD + pred("25\x076"),
    "recursive alias (map)": HEAD + "engine:\n  args: &a {x: *a}\n" + pred("256"),
    "recursive alias (list)": HEAD + "engine:\n  args:\n    x: &a [*a]\n" + pred("256"),
    "10,000 nested [": HEAD + "engine:\n  args:\n    x: " + "[" * 10_000 + "]" * 10_000 + "\n" + pred("256"),
    "9x9 billion laughs": bomb(),
    "200k-character value": HEAD + pred("1x" + " " * 200_000 + "y"),
    "at: 60 x 60 x 60": HEAD + "predictions:\n  - id: t\n    quantity: t_mem\n    predicted: 5 ms\n"
                        f"    at: {{batch: {SIXTY}, concurrency: {SIXTY}, context: {SIXTY}}}\n",
    "workload.input_len: -1024": HEAD + "workload:\n  input_len: -1024\n" + kv_pred(),
    "gpu_memory_utilization: -0.9": HEAD + "engine:\n  args:\n    gpu_memory_utilization: -0.9\n" + kv_pred(),
    "hbm_bytes_per_s: .nan": "model: qwen3-8b\nhardware:\n  id: a100-sxm4-80gb\n  hbm_bytes_per_s: .nan\n"
                             + pred("256"),
    "hbm_bytes_per_s: 0": "model: qwen3-8b\nhardware:\n  id: a100-sxm4-80gb\n  hbm_bytes_per_s: 0\n" + pred("256"),
    "hbm_bytes_per_s: fast": "model: qwen3-8b\nhardware:\n  id: a100-sxm4-80gb\n  hbm_bytes_per_s: fast\n"
                             + pred("256"),
    "engine.version: a date": HEAD + "engine:\n  version: 2024-01-01\n" + pred("256"),
    "model: /dev/zero": "hardware: a100-sxm4-80gb\nmodel: /dev/zero\n" + pred("256"),
}


class _Hang(Exception):
    pass


def _alarm(signum: int, frame: object) -> None:
    raise _Hang


def run(text: str) -> tuple[str, str]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            spec = loads_spec(text, file="probe.yaml")
    except SpecError as exc:
        return "CLEAN", str(exc).splitlines()[0]
    except _Hang:
        return "HANG", "killed at 60 s"
    except Exception as exc:  # noqa: BLE001 - what the probe is looking for
        return "TRACEBACK", f"{type(exc).__name__}: {exc}"[:100]
    errors = [p.error for p in spec.predictions if p.error is not None]
    if errors and all(isinstance(e, SpecError) for e in errors):
        return "CLEAN", str(errors[0]).splitlines()[0]
    return "LOADED", f"{len(spec.predictions)} predictions, no error"


def main() -> None:
    signal.signal(signal.SIGALRM, _alarm)
    print(f"{'case':<30} {'outcome':<9} {'ms':>8} {'peak MB':>8}  first line of the message")
    for name, text in CASES.items():
        t0 = time.perf_counter()  # timed alone: tracemalloc slows PyYAML's per-character scanner several-fold
        signal.alarm(60)
        try:
            outcome, message = run(text)
        finally:
            signal.alarm(0)
        ms = (time.perf_counter() - t0) * 1e3
        tracemalloc.start()  # then once more, for the peak of Python allocations
        signal.alarm(60)
        try:
            run(text)
        finally:
            signal.alarm(0)
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        print(f"{name:<30} {outcome:<9} {ms:>8.1f} {peak:>8.1f}  {message[:110]}")


if __name__ == "__main__":
    main()
