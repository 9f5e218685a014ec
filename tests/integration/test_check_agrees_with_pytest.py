"""``roofline check`` and the CPU-only ``pytest file.yaml`` say the same thing about a file, at the same line (trial
s14, findings 6 and 9): a setup vLLM will not start (a KV pool short of one request of max_model_len) is one error
of the file in both, once.  The figures are worked out in tests/unit/test_unstartable_pool.py's docstring:
Qwen3-8B's 2,359,296 B blocks in a 1 GiB pool are 455 blocks = 7,280 tokens, short of max_model_len 40,960.  An
engine arg the serving model does not simulate (eager mode on a GPU) is the error of the predictions that take the
serving model's value, at the arg's line, in both; the roofline's predictions of the file pass in both."""

from __future__ import annotations

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
