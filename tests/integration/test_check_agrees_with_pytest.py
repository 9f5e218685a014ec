"""``roofline check`` and the CPU-only ``pytest file.yaml`` say the same thing about a file, at the same line (trial
s14, findings 6 and 9): a setup vLLM will not start (a KV pool short of one request of max_model_len) is one error
of the file in both, once.  The figures are worked out in tests/unit/test_unstartable_pool.py's docstring:
Qwen3-8B's 2,359,296 B blocks in a 1 GiB pool are 455 blocks = 7,280 tokens, short of max_model_len 40,960.  An
engine arg the serving model does not simulate (eager mode on a GPU) is the error of the predictions that take the
serving model's value, at the arg's line, in both; the roofline's predictions of the file pass in both.  For a
number in ink under ``model_column: serving`` that is the math check's error only (s14 review 1.1): ``--replay`` of
a recorded run scores it against the measurement."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from support.pytest_run import NO_CACHE

NOSTART = textwrap.dedent("""\
    hardware: l4
    model: qwen3-8b
    engine:
      name: vllm
      version: "0.11.0"
      args:
        kv_cache_memory_bytes: 1073741824
    predictions:
      - id: blocks
        quantity: num_gpu_blocks
        predicted: 455
      - id: weights
        quantity: weight_bytes
        predicted: 16.38 GB
    """)


def _check(path) -> tuple[int, str]:
    r = subprocess.run([sys.executable, "-m", "pytest_roofline.cli", "check", str(path)], capture_output=True,
                       text=True, timeout=120)
    return r.returncode, r.stdout + r.stderr


def test_an_unstartable_pool_is_one_error_at_the_same_line_in_check_and_pytest(pytester: pytest.Pytester) -> None:
    f = pytester.makefile(".yaml", nostart=NOSTART)
    rc, out = _check(f)
    assert rc == 1
    assert out.count("less than one request of max_model_len 40,960") == 1
    assert "nostart.yaml:7: vLLM will not start this setup: the KV pool holds 7,280 tokens" in out
    res = pytester.runpytest("nostart.yaml", *NO_CACHE)
    text = res.stdout.str()
    assert res.ret != 0
    res.assert_outcomes(errors=1)  # the file's one collection error, not a pass for each prediction
    assert "nostart.yaml:7: vLLM will not start this setup" in text
    assert "engine.args.max_model_len to 7,280 or less" in text


EAGER = textwrap.dedent("""\
    hardware: h100-sxm
    model: qwen3-8b
    engine:
      name: vllm
      version: "0.11.0"
      args:
        max_model_len: 8192
        enforce_eager: true
    workload: {input_len: 1024, output_len: 256}
    sweep: {mode: closed, concurrency: [1, 16], requests_per_point: 10x}
    model_column: serving
    predictions:
      - id: tpot-c16
        quantity: tpot_p50
        at: {concurrency: 16}
        predicted: model
      - id: weights
        quantity: weight_bytes
        predicted: 16.38 GB
    """)


def test_a_refused_timing_arg_is_the_same_error_at_its_line_in_check_and_pytest(pytester: pytest.Pytester) -> None:
    f = pytester.makefile(".yaml", eager=EAGER)
    rc, out = _check(f)
    assert rc == 1
    assert "eager.yaml:8: engine.args.enforce_eager: true is not modelled on a GPU" in out
    assert "eager.yaml: 1 predictions ok, 1 with errors" in out
    res = pytester.runpytest("eager.yaml", *NO_CACHE, "-rA")
    # Qwen3-8B bf16 weights: 8,190,735,360 parameters x 2 B = 16.38 GB (tests/integration/test_math_tolerance.py)
    res.assert_outcomes(passed=1, errors=1)
    assert "eager.yaml:8: engine.args.enforce_eager: true is not modelled on a GPU" in res.stdout.str()


def test_a_refused_timing_arg_errors_the_math_check_only_for_a_number_in_ink(pytester: pytest.Pytester) -> None:
    """The same file with 10 ms in ink: check and the CPU-only pytest error on it at line 8, and a replay of a run
    that measured it (TPOT p50 9.6 ms at C=16: 4% under the ink, inside the default ±10%) passes it."""
    pytester.makefile(".yaml", eager=EAGER.replace("predicted: model", "predicted: 10 ms"))
    pytester.path.joinpath("r.json").write_text(json.dumps({
        "schema": "pytest-roofline/results", "schema_version": 1,
        "setup": {"hardware": {"declared": "h100-sxm"}, "model": {"name": "qwen3-8b"},
                  "engine": {"name": "vllm", "version": "0.11.0"},
                  "workload": {"input_len": 1024, "output_len": 256}, "mode": "engine"},
        "points": [{"id": "closed-c16", "mode": "closed", "concurrency": 16, "input_len": 1024, "output_len": 256,
                    "num_requests": 160, "client": {"completed": 160, "failed": 0, "tpot_ms": {"p50": 9.6}}}]}))
    rc, out = _check(pytester.path / "eager.yaml")
    assert rc == 1
    assert "eager.yaml:8: engine.args.enforce_eager: true is not modelled on a GPU" in out
    assert "an error of the math check only" in out
    assert "eager.yaml: 1 predictions ok, 1 with errors, 1 of them in the math check only" in out
    math = pytester.runpytest("eager.yaml", *NO_CACHE, "-rA")
    math.assert_outcomes(passed=1, errors=1)
    assert "eager.yaml:8: engine.args.enforce_eager: true is not modelled on a GPU" in math.stdout.str()
    replay = pytester.runpytest("--replay", "r.json", "eager.yaml", *NO_CACHE, "-rA")
    replay.assert_outcomes(passed=2)
    row = next(line for line in replay.stdout.str().splitlines() if line.startswith("tpot-c16 "))
    assert "9.6 ms" in row and "-4.00%" in row and "PASS" in row


def test_a_predictions_own_unstartable_setup_is_the_same_error_in_check_and_pytest(pytester: pytest.Pytester) -> None:
    """s14 review 1.5: the file's pool (1 GiB: 455 blocks = 7,280 tokens) holds its max_model_len 7,280; the
    prediction's own setup asks 7,281, one token past it (455 of 456 blocks: 0.99x)."""
    pytester.makefile(".yaml", own=NOSTART.replace(
        "    kv_cache_memory_bytes: 1073741824\n",
        "    kv_cache_memory_bytes: 1073741824\n    max_model_len: 7280\n") + textwrap.indent(textwrap.dedent("""\
          - id: own
            quantity: num_gpu_blocks
            predicted: 455
            setup:
              engine: {args: {kv_cache_memory_bytes: 1073741824, max_model_len: 7281}}
        """), "  "))
    rc, out = _check(pytester.path / "own.yaml")
    assert rc == 1
    assert "own.yaml:20: vLLM will not start this prediction's setup: the KV pool holds 7,280 tokens, less than one " \
           "request of max_model_len 7,281 (0.99x)" in out
    assert "own.yaml: 2 predictions ok, 1 with errors" in out
    res = pytester.runpytest("own.yaml", *NO_CACHE, "-rA")
    res.assert_outcomes(passed=2, errors=1)
    assert "own.yaml:20: vLLM will not start this prediction's setup" in res.stdout.str()
