"""Prediction files that several test modules write, each once, with the figures the tests rely on worked by hand.

Every expected value below comes from the catalog's spec-sheet numbers or a committed recording, not from the code:
a test that uses one of these files may assert the numbers its docstring gives.
"""

from __future__ import annotations

# ---------------------------------------------------------------------------------------------- H100 SXM, Llama-3.1-8B

#: The smallest useful prediction file: Llama-3.1-8B on an H100 SXM, one math-only prediction, its ridge point.
#: 989 TFLOP/s dense BF16 over 3.35 TB/s HBM3 (NVIDIA H100 datasheet) = 295.22 FLOP/byte, so ``295.2 FLOP/byte``
#: passes (at the half unit in the last digit written) and a run collects exactly one passing test, without a GPU.
#: Its last line is the prediction's, so a test may append a field to it (``H100_RIDGE + "    xfail: ...\n"``).
H100_RIDGE = """\
hardware: h100-sxm
model: llama-3.1-8b
predictions:
  - id: ridge
    quantity: ridge_point
    predicted: 295.2 FLOP/byte
"""

#: The same setup with one math-only prediction that fails: Llama-3.1-8B in bf16 is 8,030,261,248 parameters × 2 B
#: = 16.06 GB of weights, so at 3.35 TB/s the batch-1 decode ceiling is 3.35e12 / 16.06e9 ≈ 208.6 tok/s; 100 tok/s
#: at ±1% is a miss (whatever the digits), and a run collects one failing test, without a GPU.
H100_BATCH1_MISS = """\
hardware: h100-sxm
model: llama-3.1-8b
predictions:
  - id: batch1-miss
    quantity: batch1_throughput
    predicted: 100 tok/s
    tolerance: ±1%
"""

#: The serving model's setup the scorecard-chart and band tests share: Llama-3.1-8B on an H100 SXM, ``model_column:
#: serving``, 1,024 in / 256 out, a closed loop at the concurrencies given, ±15 %. It ends at ``predictions:``, so a
#: test appends its own list entries (its ink is what it asserts on).
def serving_h100_head(concurrency: list[int]) -> str:
    levels = ", ".join(str(c) for c in concurrency)
    return ("hardware: h100-sxm\nmodel: llama-3.1-8b\nmodel_column: serving\nengine: {name: vllm}\n"
            "workload: {input_len: 1024, output_len: 256}\n"
            f"sweep: {{mode: closed, concurrency: [{levels}]}}\n"
            "defaults:\n  tolerance: ±15%\npredictions:\n")


# ------------------------------------------------------------------------------------- Qwen3-8B on a declared GPU


def qwen3_plan(hardware: str, *, ridge: str, throughput_c1: str) -> str:
    """A GPU plan for the ``--gpu`` checks: Qwen3-8B on vLLM 0.26.0 on ``hardware``, 1,024-token prompts and
    replies, one closed-loop point (C=1). Two predictions: ``ridge`` (``ridge_point``, math-only: it runs and
    passes whatever the machine when ``ridge`` is the card's ridge) and ``throughput-c1`` (``output_throughput``
    at C=1, measured: it needs the declared GPU, so on another one, or none, it is an ERROR)."""
    return f"""\
hardware: {hardware}
model: qwen3-8b
engine: {{name: vllm, version: "0.26.0"}}
workload: {{input_len: 1024, output_len: 1024, kv_context: 1000}}
sweep: {{concurrency: [1]}}
predictions:
  - id: ridge
    quantity: ridge_point
    predicted: {ridge}
  - id: throughput-c1
    quantity: output_throughput
    at: {{concurrency: 1}}
    predicted: {throughput_c1}
"""


#: The plan of the notebook that planned on an A100 PCIe and got an SXM4. The PCIe card's ridge is 312 TFLOP/s BF16
#: over 1,935 GB/s = 161.2 FLOP/byte (``161`` passes); the SXM4's is 312 / 2.039 = 153.0 FLOP/byte. With
#: ``--gpu a100`` on a machine whose nvidia-smi reports an A100-SXM4-80GB, the ridge passes and throughput-c1 is an
#: ERROR naming both cards and both bandwidths ("declared: 1,935 GB/s", "detected: 2,039 GB/s").
A100_PCIE_PLAN = qwen3_plan("a100-pcie-80gb", ridge="161 FLOP/byte", throughput_c1="117 tok/s")

# ------------------------------------------------------------------------- the Day-3 notebook: A100-SXM4, Qwen3-8B

#: The Day-3 notebook's setup as the head of a prediction file (no title, sweep or predictions): Qwen3-8B (bf16,
#: 8,190,735,360 parameters × 2 B = 16.38 GB of weights) on an A100-SXM4-80GB under vLLM 0.26.0, 1,024-token
#: prompts and replies, a 1,000-token KV context for the decode roofline, the notebook's SLO (TTFT 500 ms and TPOT
#: 50 ms at p99) and tolerances (±15 %, math ±0.5 %). ``support.notebook``'s results file is a run of this setup
#: at C=1..128; a test adds its own ``title:``, ``sweep:`` and ``predictions:``.
NOTEBOOK_SETUP = """\
hardware: a100-sxm4-80gb
model: qwen3-8b
engine: {name: vllm, version: "0.26.0"}
workload: {input_len: 1024, output_len: 1024, kv_context: 1000}
slo: {ttft: 500 ms, tpot: 50 ms, percentile: p99}
defaults: {tolerance: ±15%, math_tolerance: ±0.5%}
"""

#: The report tests' prediction file (pytest-html columns, sort keys, extras; the browser's sort), replayed against
#: ``support.notebook``'s results: weights (16.38 GB), the ridge (312 TFLOP/s / 2.039 TB/s = 153.0 FLOP/byte), the
#: C=16 p99 TTFT (546 ms) and Little's law at C=1, 16 and 64 pass; throughput-c64 fails (the notebook measured
#: 2,504.6 tok/s, not 5,060); throughput-c16 and kv-blocks are xfails; bad-quantity is an ERROR (an unknown
#: quantity). Ten test items in all: seven entries, Little's law expanded to three.
NOTEBOOK_REPORT = 'title: "report test — A100-SXM4-80GB, Qwen3-8B"\n' + NOTEBOOK_SETUP + """\
sweep: {mode: closed, concurrency: [1, 16, 64]}
predictions:
  - id: weights
    quantity: weight_bytes
    predicted: 16.38 GB
  - id: ridge
    quantity: ridge_point
    predicted: 153 FLOP/byte
  - id: throughput-c16
    quantity: output_throughput
    at: {concurrency: 16}
    predicted: 1,742 tok/s
    xfail: {mode: measured, reason: "decode-only model; prefill and overhead are missing"}
  - id: throughput-c64
    quantity: output_throughput
    at: {concurrency: 64}
    predicted: 5,060 tok/s
  - id: ttft-p99-c16
    quantity: ttft_p99
    at: {concurrency: 16}
    predicted: 546 ms
  - id: kv-blocks
    quantity: num_gpu_blocks
    predicted: 22,959
    tolerance: ±10%
    xfail: {reason: "GiB vs GB slip"}
  - id: littles-law
    quantity: littles_law_ratio
    at: {concurrency: every}
    predicted: 1.00
    tolerance: ±2%
  - id: bad-quantity
    quantity: not_a_quantity
    predicted: 3
"""

#: One measured prediction on the Day-3 setup, written in seconds: p99 TTFT at C=16 of 0.5 s ±10%. The recorded
#: Day-3 run (``support.paths.DAY3_RESULTS``) measured 546 ms there (the notebook's C=16 row), +9.2 %: a pass. The
#: recording has no confidence intervals, so the verdict has none either.
DAY3_TTFT_C16 = """\
hardware: a100-sxm4-80gb
model: qwen3-8b
predictions:
  - {id: ttft, quantity: ttft_p99, at: {concurrency: 16}, predicted: 0.5 s, tolerance: ±10%}
"""

# --------------------------------------------------------------------------------- the CPU engine's tiny model


def tiny_cpu_spec(workload: str, *, concurrency: int | list[int], requests: int,
                  engine_args: str = "max_num_seqs: 8") -> str:
    """A prediction file for the CPU build of vLLM 0.32.0 serving the project's tiny model with 1 GiB of KV cache:
    ``workload`` (lines already indented under ``workload:``, which is line 4, so its first key is on line 5), a
    closed-loop sweep over ``concurrency`` with ``requests`` requests a point, and one measured prediction, ``ll``:
    Little's law (λW / C = 1.0 ±20 %) at the sweep's highest concurrency, which any stub server answers."""
    levels = concurrency if isinstance(concurrency, list) else [concurrency]
    return f"""\
hardware: cpu
model: roofline-tiny
engine: {{version: "0.32.0", cpu_kvcache_space: 1 GiB, args: {{{engine_args}}}}}
workload:
{workload}sweep: {{concurrency: {levels}, requests_per_point: {requests}}}
predictions:
  - id: ll
    quantity: littles_law_ratio
    at: {{concurrency: {max(levels)}}}
    predicted: 1.0
    tolerance: ±20%
"""


# ------------------------------------------------------------------------ prediction entries several files append

#: ``kv_cache_tokens`` exactly 2,097,152: the tiny model keeps 512 B of KV per token (support.engine.KV_TOKENS_1GIB),
#: so a 1 GiB pool (``cpu_kvcache_space: 1 GiB``) holds 2**30 / 512 tokens. A list entry, for after ``predictions:``.
KV_TOKENS_1GIB_EXACT = """\
  - id: kv-tokens
    quantity: kv_cache_tokens
    predicted: 2,097,152
    tolerance: exact
"""

#: Little's law (λW / C = 1.00 ±50 %) at every point of the sweep: any server that streams what it is asked for
#: passes it, so a run's outcome is decided by what the test breaks. A list entry, for after ``predictions:``.
LITTLES_LAW_EVERY = """\
  - id: littles-law
    quantity: littles_law_ratio
    at: {concurrency: every}
    predicted: 1.00
    tolerance: ±50%
"""


#: two measured predictions the cpu-tiny recording misses (throughput and TTFT p50 at C = 4, ink far off), appended
#: to a prediction file's predictions: verdicts that show their definition row (tests of quantities/definitions)
DEFINITION_MISSES = """
  - id: def-tput-c4
    quantity: output_throughput
    at: {concurrency: 4}
    predicted: 1 tok/s
  - id: def-ttft-c4
    quantity: ttft_p50
    at: {concurrency: 4}
    predicted: 1 ms
"""


#: The setup of the trial's closed-loop probe (tests/data/s17/closed-c1-4-16.results.json: the CPU engine, C = 1, 4,
#: 16 at 3 requests per client, 128 in / 64 out) with goodput SLOs at p90, ending at ``predictions:``: the sweep
#: readings' tests (TTFT knee, goodput) append their own entries.
def t3_closed_probe_head(*, ttft: str, tpot: str) -> str:
    return ("title: t3 closed probe\nhardware: cpu\nmodel: roofline-tiny\nengine:\n  name: vllm\n"
            '  version: "0.32.0"\n  cpu_kvcache_space: 1 GiB\n'
            "  args: {dtype: bfloat16, max_model_len: 1024, enforce_eager: true, max_num_seqs: 8}\n"
            "workload: {input_len: 128, output_len: 64}\n"
            "sweep: {mode: closed, concurrency: [1, 4, 16], requests_per_point: 3x, warmup: 1}\n"
            f"slo: {{ttft: {ttft}, tpot: {tpot}, percentile: p90}}\n"
            "defaults: {tolerance: ±10%}\npredictions:\n")
