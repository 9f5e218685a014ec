"""Two engine args the project called "no timing effect" do change a figure (trial s14, finding 7); each is now
refused where it changes one and accepted where it changes nothing.  What vLLM does, read in its sources:

* ``disable_custom_all_reduce: true`` (vllm/distributed/device_communicators/cuda_communicator.py ``all_reduce``:
  the custom kernel first, then NCCL; custom_all_reduce.py): at TP > 1 every all-reduce the custom kernel would have
  run (a decode step's small messages) runs on NCCL.  vLLM runs the kernel only at TP 2, 4, 6 or 8 (16 from 0.32),
  and at more than two GPUs only when they are NVLink-connected ("Custom allreduce is disabled because it's not
  supported on more than two PCIe-only GPUs", 0.6.3, 0.11.0, 0.32.0).  The serving model's all-reduce charge and
  TP bands come from engines that ran the kernel, so it is refused where the serving model runs, there only.
* ``max_seq_len_to_capture`` (default 8192): only V0 reads it; vllm/worker/model_runner.py ``_use_captured_graph``
  (0.6.3 ... 0.10.2) replays a CUDA graph for a decode batch only when ``max_decode_seq_len <= max_seq_len_to_
  capture``, else runs it eagerly (the effect refused as enforce_eager).  Its sequence length counts the token being
  decoded: the last decode step of a request of 1,024 prompt and 128 output tokens holds 1,024 + 128 - 1 = 1,151
  tokens.  0.11.0 has no such arg (0.10.2's vllm/engine/arg_utils.py has it, 0.11.0's not): refused everywhere.
"""

from __future__ import annotations

import pytest

from pytest_roofline.errors import SetupValueError
from pytest_roofline.format.spec import SpecError, loads_spec
from pytest_roofline.model import serving as sv
from pytest_roofline.model.setup import build_setup, kv_accounting

LONGEST = 1024 + 128 - 1  # 1,151 tokens: the last decode step's sequence


def setup(hardware="h100-sxm", version="0.11.0", env=None, **args):
    engine = {"name": "vllm", "version": version, "args": {"max_model_len": 8192, **args}}
    if env:
        engine["env"] = env
    return build_setup(hardware_ref=hardware, model_ref="llama-3.1-8b", engine=engine,
                       workload={"input_len": 1024, "output_len": 128})


def refused(s) -> str:
    with pytest.raises(SetupValueError) as exc:
        sv.EngineConfig.from_setup(s)
    return str(exc.value)


# -- disable_custom_all_reduce -------------------------------------------------------------------------------------

@pytest.mark.parametrize("hardware, tp", [("h100-sxm", 2), ("h100-sxm", 4), ("h100-sxm", 8), ("l4", 2)])
def test_turning_the_custom_all_reduce_off_is_refused_where_vllm_would_run_it(hardware, tp):
    text = refused(setup(hardware, tensor_parallel_size=tp, disable_custom_all_reduce=True))
    assert f"engine.args.disable_custom_all_reduce: true is not modelled at tensor_parallel_size {tp}" in text
    assert "NCCL" in text


@pytest.mark.parametrize("hardware, tp, value", [
    ("h100-sxm", 1, True),   # one GPU: no all-reduce at all
    ("h100-sxm", 4, False),  # the default
    ("l4", 4, True),         # four PCIe-only GPUs: vLLM turns the kernel off itself, NCCL either way
])
def test_it_is_accepted_where_it_changes_nothing(hardware, tp, value):
    sv.EngineConfig.from_setup(setup(hardware, tensor_parallel_size=tp, disable_custom_all_reduce=value))


def test_the_setup_keeps_it_and_its_kv_pool():
    # the KV pool is not told apart (the kernel's own buffers, ~24 MiB a rank, are inside the TP reserve): the
    # roofline quantities of a TP 4 file still check
    on = setup(tensor_parallel_size=4, disable_custom_all_reduce=True)
    assert kv_accounting(on).num_blocks == kv_accounting(setup(tensor_parallel_size=4)).num_blocks


# -- max_seq_len_to_capture ----------------------------------------------------------------------------------------

def test_on_v0_a_capture_length_below_the_longest_decode_sequence_is_refused():
    text = refused(setup(version="0.6.3", max_seq_len_to_capture=512))
    assert "max_seq_len_to_capture: 512 is not modelled on vLLM 0.6.3's V0 engine" in text
    assert f"sequences of {LONGEST:,} tokens" in text and "eagerly" in text
    refused(setup(version="0.6.3", max_seq_len_to_capture=LONGEST - 1))


@pytest.mark.parametrize("version, env, value", [
    ("0.6.3", None, LONGEST),        # every decode step's sequence fits: graphs throughout, as modelled
    ("0.6.3", None, 8192),           # the default
    ("0.10.2", None, 512),           # V1 (the default engine of 0.10.2 on an H100) never reads it
])
def test_it_is_accepted_where_every_decode_step_still_replays_a_graph(version, env, value):
    sv.EngineConfig.from_setup(setup(version=version, env=env, max_seq_len_to_capture=value))


def test_vllm_0_10_2_run_on_v0_reads_it():
    text = refused(setup(version="0.10.2", env={"VLLM_USE_V1": "0"}, max_seq_len_to_capture=512))
    assert "vLLM 0.10.2's V0 engine" in text


@pytest.mark.parametrize("version", ["0.11.0", "0.26.0"])
def test_from_0_11_it_is_not_an_arg_and_the_setup_is_refused(version):
    with pytest.raises(SetupValueError) as exc:
        setup(version=version, max_seq_len_to_capture=8192)
    assert exc.value.field == "engine.args.max_seq_len_to_capture"
    assert f"not an engine arg of vLLM {version}" in str(exc.value) and "0.11.0" in str(exc.value)


# -- roofline check: at the arg's line ------------------------------------------------------------------------------

def test_check_reports_both_at_their_lines():
    text = ("hardware: h100-sxm\nmodel: llama-3.1-8b\nengine:\n  name: vllm\n  version: \"0.6.3\"\n  args:\n"
            "    max_model_len: 8192\n    tensor_parallel_size: 2\n    disable_custom_all_reduce: true\n"
            "    max_seq_len_to_capture: 512\n"
            "workload: {input_len: 1024, output_len: 128}\nmodel_column: serving\n"
            "predictions:\n  - id: tpot\n    quantity: tpot_p50\n    at: {concurrency: 8}\n    predicted: model\n")
    err = loads_spec(text, file="f.yaml").predictions[0].error
    assert isinstance(err, SpecError)
    lines = {e.line: str(e) for e in err.errors}  # type: ignore[attr-defined]
    assert "disable_custom_all_reduce" in lines[9] and "max_seq_len_to_capture: 512" in lines[10]
