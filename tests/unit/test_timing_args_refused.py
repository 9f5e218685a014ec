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
  Where the workload's lengths vary, its longest request is compared (s14 review 1.12): prompts uniform in
  512 ... 1,536 tokens (mean 1,024) and 128 output tokens reach 1,536 + 128 - 1 = 1,663 tokens, past a cap of 1,200
  that the mean request (1,151) stays under; where the longest is not known at the setup (a dataset's prompts, a
  normal length without a max), the mean is compared and the message says so.
"""

from __future__ import annotations

import pytest

from pytest_roofline.errors import SetupValueError
from pytest_roofline.format.spec import SpecError, loads_spec
from pytest_roofline.model import engine_args
from pytest_roofline.model import serving as sv
from pytest_roofline.model.setup import build_setup, kv_accounting

LONGEST = 1024 + 128 - 1  # 1,151 tokens: the last decode step's sequence


def setup(hardware="h100-sxm", version="0.11.0", env=None, workload=None, **args):
    engine = {"name": "vllm", "version": version, "args": {"max_model_len": 8192, **args}}
    if env:
        engine["env"] = env
    return build_setup(hardware_ref=hardware, model_ref="llama-3.1-8b", engine=engine,
                       workload=workload or {"input_len": 1024, "output_len": 128})


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


def test_without_the_setups_figures_it_is_accepted_and_with_them_judged_by_its_tp_degree():
    """check_engine_args with no setup known (no TP degree) accepts it, as max_seq_len_to_capture without a
    workload (s14 review §3: it refused at TP 1); given the setup's facts it rules as the serving model does."""
    args = {"disable_custom_all_reduce": True}
    engine_args.check_engine_args(args)
    engine_args.check_engine_args(args, facts=engine_args.SetupFacts(tensor_parallel_size=1, interconnect="NVLink"))
    with pytest.raises(SetupValueError, match="not modelled at tensor_parallel_size 4"):
        engine_args.check_engine_args(args, facts=engine_args.SetupFacts(tensor_parallel_size=4,
                                                                         interconnect="NVLink 4.0"))


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


UNIFORM = {"input_len": 1024, "input_dist": {"dist": "uniform", "min": 512, "max": 1536}, "output_len": 128}


def test_a_length_distribution_is_judged_by_its_longest_request():
    text = refused(setup(version="0.6.3", workload=UNIFORM, max_seq_len_to_capture=1200))
    assert "max_seq_len_to_capture: 1,200 is not modelled" in text
    assert "sequences of 1,663 tokens, and V0" in text  # 1,536 + 128 - 1: no word about means
    sv.EngineConfig.from_setup(setup(version="0.6.3", workload=UNIFORM, max_seq_len_to_capture=1663))
    refused(setup(version="0.6.3", workload=UNIFORM, max_seq_len_to_capture=1662))


def test_a_request_longer_than_max_model_len_is_never_decoded():
    # prompts up to 16,000 tokens, max_model_len 8,192: no sequence vLLM serves passes 8,192
    long = {"input_len": 4000, "input_dist": {"dist": "uniform", "min": 1000, "max": 16000}, "output_len": 128}
    text = refused(setup(version="0.6.3", workload=long, max_seq_len_to_capture=8000))
    assert "sequences of 8,192 tokens, and V0" in text
    sv.EngineConfig.from_setup(setup(version="0.6.3", workload=long, max_seq_len_to_capture=8192))


@pytest.mark.parametrize("workload", [
    {"input_len": 1024, "output_len": 128, "dataset": {"path": "prompts.jsonl", "source": "prompts.jsonl",
                                                       "format": "jsonl", "entries": 10}},
    {"input_len": 1024, "output_len": 128, "output_dist": {"dist": "normal", "mean": 128, "std": 32}},
])
def test_where_the_longest_is_not_known_the_mean_is_compared_and_said(workload):
    text = refused(setup(version="0.6.3", workload=workload, max_seq_len_to_capture=1000))
    assert "sequences of 1,151 tokens (at the workload's mean lengths, where its longest are not known here" in text
    assert "its longest requests reach further" in text


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
