"""Trial s26b #10: the roofline's knee of Llama-3.1-70B at TP 4 on H100s (1,024 in, 256 out: 1,152 tokens of KV a
sequence) is B = 1,404.3, past max_num_seqs 1,024 and the sequences the pool holds; vLLM never runs that batch, so
the throughput flattens where a cap stops the batch, which the roofline does not place. Ink `none` failed against
1,404.3; it is inconclusive now, saying why, while ink of the arithmetic itself still passes."""

from __future__ import annotations

from pytest_roofline.format.spec import loads_spec
from pytest_roofline.scoring import score

SPEC = """\
hardware: h100-sxm
model: llama-3.1-70b
engine: {{name: vllm, version: "0.33.0", args: {{tensor_parallel_size: 4}}}}
workload: {{input_len: 1024, output_len: 256}}
sweep: {{mode: closed, concurrency: [1, 16, 64, 256]}}
predictions:
  - {{id: knee, quantity: knee_concurrency, predicted: {ink}}}
"""


def _v(ink: str):
    spec = loads_spec(SPEC.format(ink=ink))
    return score(spec, spec.predictions[0], "math", None)


def test_ink_other_than_an_unreachable_knees_arithmetic_is_inconclusive():
    v = _v("none")
    assert float(v.model_value) > 1024  # past max_num_seqs
    assert v.status == "inconclusive"
    assert "lies beyond max_num_seqs 1,024 and beyond the" in v.reason and "a measurement decides" in v.reason
    assert _v("600").status == "inconclusive"


def test_the_arithmetic_itself_still_passes():
    knee = float(_v("none").model_value)
    assert _v(f"{knee:.1f}").status == "pass"
