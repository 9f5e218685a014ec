"""The reading defects the s15 reliability probe found (notes/s15/probe.md §1), each refused at its YAML line
with the exact words: a workload longer than max_model_len (#1), absurd integer engine args (#3, #11); the check
and the launch read ``distributed_executor_backend`` alike (#5) and every on/off arg of vLLM's the plugin passes
through (#6); a tolerance's percentage with an exponent (#8) and the quoted one-sided bound its hint shows (#12);
a tolerance reaching 0 below the ink, which cannot fail there (#7)."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from pytest_roofline import cli
from pytest_roofline.cli.predict import length_error
from pytest_roofline.errors import SpecError
from pytest_roofline.format.spec import loads_spec
from pytest_roofline.model.setup import RequestLengthWarning, build_setup, request_length_problem

H100 = ("hardware: h100-sxm\nmodel: llama-3.1-8b\nengine:\n  name: vllm\n  version: \"0.11.0\"\n  args:\n"
        "    max_model_len: 8192\n")
WEIGHTS = "predictions:\n  - id: weights\n    quantity: weight_bytes\n    predicted: 16.06 GB\n"
INT64 = "9,223,372,036,854,775,807"


@pytest.mark.parametrize(("arg", "what"), [
    ("max_num_seqs", "sequences per step"), ("max_num_batched_tokens", "tokens per step"),
    ("block_size", "tokens per KV block"), ("tensor_parallel_size", "devices"),
    ("max_model_len", "tokens per sequence")])
def test_an_engine_arg_of_1e308_is_refused_at_its_line_as_written(arg, what):
    # #3: max_num_seqs / max_num_batched_tokens / block_size: 1e308 raised OverflowError from the KV accounting;
    # #11: max_model_len / tensor_parallel_size: 1e308 printed the 309 digits of int(1e308)
    text = H100.replace("    max_model_len: 8192\n", "") + f"    {arg}: 1e308\n" + "    max_model_len: 8192\n" * (
        arg != "max_model_len") + "workload:\n  input_len: 1024\n  output_len: 256\n" + WEIGHTS
    with pytest.raises(SpecError) as exc:
        loads_spec(text, file="o.yaml")
    assert exc.value.line == 7
    assert exc.value.message == (f"setup does not resolve: engine.args.{arg}: 1e+308 is impossible: it must be >= 1 "
                                 f"and <= {INT64}, the largest 64-bit integer, the most an engine can hold ({what})")


def test_the_largest_64_bit_integer_is_read_exactly(tmp_path, capsys):
    # 2**63 - 1 is allowed (the pool refusal follows); 2**63 is not, and is printed as written, not rounded by float()
    f = tmp_path / "o.yaml"
    f.write_text(H100 + "    max_num_seqs: 9_223_372_036_854_775_808\nworkload:\n  input_len: 1024\n"
                 "  output_len: 256\n" + WEIGHTS)
    assert cli.main(["check", str(f)]) == 1
    out = capsys.readouterr().out
    assert (f"o.yaml:8: setup does not resolve: engine.args.max_num_seqs: 9223372036854775808 is impossible: it must "
            f"be >= 1 and <= {INT64}, the largest 64-bit integer, the most an engine can hold (sequences per step)"
            in out) and "Traceback" not in out
    f.write_text(H100 + "    max_num_seqs: 9223372036854775807\nworkload:\n  input_len: 1024\n"
                 "  output_len: 256\n" + WEIGHTS)
    assert cli.main(["check", str(f)]) == 1
    out = capsys.readouterr().out
    assert "o.yaml:7: vLLM will not start this setup: the KV pool holds 0 tokens" in out


@pytest.mark.parametrize("written", ["9223372036854775808", "9223372036854775809", "9_223_372_036_854_775_809"])
def test_a_workload_length_past_the_largest_64_bit_integer_is_refused_as_written(written):
    # the workload reader went through float(): 2**63 - 1 was refused as "9223372036854775808", and 2**63 + 1
    # printed as 2**63; an integer is read exactly, so the number refused is the one written
    as_int = str(int(written.replace("_", "")))
    with pytest.raises(SpecError) as exc:
        loads_spec(H100 + f"workload:\n  input_len: {written}\n  output_len: 256\n" + WEIGHTS, file="o.yaml")
    assert exc.value.line == 9 and exc.value.message == (
        f"setup does not resolve: workload.input_len: {as_int} is impossible: it must be >= 1 and <= {INT64}, the "
        f"largest 64-bit integer, the most an engine can hold (prompt tokens per request)")


def test_a_workload_length_of_the_largest_64_bit_integer_is_read_exactly():
    # 2**63 - 1 passes the limit (it is the limit); the max_model_len refusal after it adds 256 to the exact value
    spec = loads_spec(H100 + "workload:\n  input_len: 9223372036854775807\n  output_len: 256\n" + WEIGHTS,
                      file="o.yaml")
    assert spec.workload["input_len"] == 2**63 - 1 and isinstance(spec.workload["input_len"], int)
    err = _refusal(MML_HEAD.format(mml=512) + "workload:\n  input_len: 9223372036854775807\n  output_len: 256\n"
                   "predictions:\n" + TPOT)
    assert err.message.startswith(
        "the workload does not fit max_model_len: a request of 9,223,372,036,854,775,807 prompt + 256 output tokens "
        "= 9,223,372,036,854,776,063 tokens is longer than max_model_len 512")


def test_kv_cache_memory_bytes_of_1e308_is_refused():
    with pytest.raises(SpecError) as exc:
        loads_spec(H100 + "    kv_cache_memory_bytes: 1e308\nworkload:\n  input_len: 1024\n  output_len: 256\n"
                   + WEIGHTS, file="o.yaml")
    assert exc.value.line == 8 and exc.value.message.startswith(
        f"setup does not resolve: engine.args.kv_cache_memory_bytes: 1e+308 is impossible: it must be > 0 and <= "
        f"{INT64}")


# an H100 SXM5 80GB reports 81,559 MiB (nvidia-smi memory.total): 81,559 x 2**20 = 85,520,809,984 bytes,
# 81,559 / 1,024 = 79.65 GiB, 85.52 GB
H100_BYTES = 81_559 * 2**20


@pytest.mark.parametrize(("written", "shown", "tp"), [("85520809985", "85,520,809,985", 1),
                                                      ("1e15", "1,000,000,000,000,000", 1),
                                                      ("100000000000", "100,000,000,000", 2)])
def test_kv_cache_memory_bytes_larger_than_the_gpu_is_refused_at_its_line(written, shown, tp):
    # only the 64-bit cap was checked: a 1 PB pool on an 80 GB GPU was accepted; vLLM allocates it on every GPU, so
    # two GPUs (tensor_parallel_size: 2) do not make a 100 GB pool fit
    text = (H100 + f"    kv_cache_memory_bytes: {written}\n    tensor_parallel_size: {tp}\nworkload:\n"
            "  input_len: 1024\n  output_len: 256\n" + WEIGHTS)
    with pytest.raises(SpecError) as exc:
        loads_spec(text, file="o.yaml")
    field = "engine.args.kv_cache_memory_bytes"
    assert exc.value.line == 8 and exc.value.message == (
        f"setup does not resolve: {field}: {shown} bytes is more than the memory of one h100-sxm, {H100_BYTES:,} "
        "bytes (79.65 GiB, 85.52 GB: the hardware catalog's memory_bytes); vLLM allocates this KV pool on each GPU, "
        "so the engine cannot start: write a pool that fits in what the weights and activations leave of the 79.65 "
        f"GiB, or remove {field} to let gpu_memory_utilization size the pool")


# llama-3.1-8b: 8,030,261,248 parameters x 2 bytes (bf16) = 16,060,522,496 bytes of weights on one GPU; with the
# reserves set to 1 GB of activations and nothing else, 85,520,809,984 - 16,060,522,496 - 1,000,000,000 =
# 68,460,287,488 bytes are left for the pool
RESERVES = "  reserves: {activation: 1 GB, non_torch: 0, cuda_graphs: 0}\n"
ROOM = 68_460_287_488


def _pool_text(pool: str) -> str:
    return (H100 + f"    kv_cache_memory_bytes: {pool}\n" + RESERVES
            + "workload:\n  input_len: 1024\n  output_len: 256\n" + WEIGHTS)


@pytest.mark.parametrize(("written", "pool"), [(str(H100_BYTES), H100_BYTES), ("80e9", 80_000_000_000),
                                               (str(ROOM + 1), ROOM + 1)])
def test_kv_cache_memory_bytes_that_fits_the_gpu_but_not_beside_the_weights_is_refused_at_its_line(written, pool):
    # review s16 M1: only a pool larger than the whole GPU was refused; 80 GB beside 16 GB of weights on an 85.5 GB
    # H100 was modelled as 38,146 blocks, and the whole GPU's memory as a pool passed too
    with pytest.raises(SpecError) as exc:
        loads_spec(_pool_text(written), file="o.yaml")
    field = "engine.args.kv_cache_memory_bytes"
    need = pool + 16_060_522_496 + 1_000_000_000
    assert exc.value.line == 8
    assert exc.value.message == (
        f"setup does not resolve: {field}: a pool of {pool:,} bytes ({pool / 2**30:,.2f} GiB, {pool / 1e9:,.2f} GB) "
        "beside the weights one GPU holds, 16,060,522,496 bytes (14.96 GiB, 16.06 GB), and the reserves the KV "
        "accounting models (activations, non-torch memory, CUDA graphs), 1,000,000,000 bytes (0.93 GiB, 1.00 GB), "
        f"needs {need:,} bytes ({need / 2**30:,.2f} GiB, {need / 1e9:,.2f} GB), more than the memory of one "
        f"h100-sxm, {H100_BYTES:,} bytes (79.65 GiB, 85.52 GB) (the hardware catalog's memory_bytes); vLLM "
        "allocates this pool on each GPU after loading the weights, so the engine cannot start: write "
        f"kv_cache_memory_bytes: {ROOM} or less, or remove {field} to let gpu_memory_utilization size the pool")


def test_the_largest_kv_cache_memory_bytes_that_fits_beside_the_weights_is_accepted():
    spec = loads_spec(_pool_text(str(ROOM)), file="o.yaml")
    assert all(p.error is None for p in spec.predictions)


# --------------------------------------------------------------------------------------------------------------
# #1: a workload longer than max_model_len
# --------------------------------------------------------------------------------------------------------------
MML_HEAD = ("hardware: h100-sxm\nmodel: llama-3.1-8b\nengine:\n  name: vllm\n  version: \"0.11.0\"\n  args:\n"
            "    max_model_len: {mml}\nsweep: {{mode: closed, concurrency: [1, 16], requests_per_point: 100}}\n"
            "model_column: serving\n")
TPOT = ("  - id: tpot-c1\n    quantity: tpot_p50\n    at: {concurrency: 1}\n    predicted: 7.5 ms\n")
RAISE = " or raise engine.args.max_model_len (up to the model's 131,072)"
HINT = ("shorten the workload's lengths or raise engine.args.max_model_len as the line says: a point with a rejected "
        "request is an error, so no run measures this file (docs/reference/refusals.md)")


def _refusal(text: str) -> SpecError:
    with pytest.raises(SpecError) as exc:
        loads_spec(text, file="mml.yaml")
    return exc.value


def test_a_request_longer_than_max_model_len_is_refused_at_max_model_len(tmp_path, capsys):
    # the probe's mml-short.yaml: 1,024 + 256 tokens against max_model_len 512 was "2 predictions ok"
    text = (MML_HEAD.format(mml=512) + "workload:\n  input_len: 1024\n  output_len: 256\npredictions:\n" + TPOT
            + "  - id: tput-c16\n    quantity: output_throughput\n    at: {concurrency: 16}\n"
            "    predicted: 1,600 tok/s\n")
    err = _refusal(text)
    assert (err.line, err.hint) == (7, HINT)
    assert err.message == ("the workload does not fit max_model_len: a request of 1,024 prompt + 256 output tokens = "
                           "1,280 tokens is longer than max_model_len 512 (engine.args.max_model_len); vLLM rejects "
                           "it: shorten workload.input_len / output_len" + RAISE)
    f = tmp_path / "mml.yaml"
    f.write_text(text)
    assert cli.main(["check", str(f)]) == 1
    out = capsys.readouterr().out
    assert out.count("the workload does not fit max_model_len") == 1 and f"{f}:7: the workload does not fit" in out


def test_without_max_model_len_the_refusal_is_at_the_workload_line():
    # max_model_len is the model's max_position_embeddings, 131,072: no raise to offer
    text = (MML_HEAD.format(mml=8192).replace("  args:\n    max_model_len: 8192\n", "")
            + "workload:\n  input_len: 131000\n  output_len: 256\npredictions:\n" + TPOT)
    err = _refusal(text)
    assert err.line == 8 and err.message == (
        "the workload does not fit max_model_len: a request of 131,000 prompt + 256 output tokens = 131,256 tokens is "
        "longer than max_model_len 131,072 (the model's max_position_embeddings); vLLM rejects it: shorten "
        "workload.input_len / output_len")


def test_a_length_distribution_whose_max_is_longer_is_refused():
    err = _refusal(MML_HEAD.format(mml=8192) + "workload:\n  input_len: {dist: uniform, min: 100, max: 100000}\n"
                   "  output_len: 256\npredictions:\n" + TPOT)
    assert err.line == 7 and err.message == (
        "the workload does not fit max_model_len: the longest request of 100,000 prompt (the input_len distribution's "
        "max) + 256 output tokens = 100,256 tokens is longer than max_model_len 8,192 (engine.args.max_model_len); "
        "vLLM rejects it: shorten workload.input_len / output_len" + RAISE)
    # the boundary: 7,936 + 256 = 8,192 tokens fit
    loads_spec(MML_HEAD.format(mml=8192) + "workload:\n  input_len: {dist: uniform, min: 100, max: 7936}\n"
               "  output_len: 256\npredictions:\n" + TPOT, file="mml.yaml")


def test_a_normal_without_a_max_is_refused_where_its_typical_request_is_longer():
    err = _refusal(MML_HEAD.format(mml=8192) + "workload:\n  input_len: {dist: normal, mean: 9000, std: 100}\n"
                   "  output_len: 256\npredictions:\n" + TPOT)
    assert err.line == 7 and err.message == (
        "the workload does not fit max_model_len: the typical request of 9,000 prompt (the mean of the input_len "
        "distribution, which has no max) + 256 output tokens = 9,256 tokens is longer than max_model_len 8,192 "
        "(engine.args.max_model_len); vLLM rejects it: shorten workload.input_len / output_len" + RAISE)


def test_a_normal_whose_tail_only_is_longer_is_a_warning_with_its_share():
    text = (MML_HEAD.format(mml=8192) + "workload:\n  input_len: {dist: normal, mean: 6000, std: 1000}\n"
            "  output_len: 256\npredictions:\n" + TPOT)
    msg = ("mml.yaml:10: about 2.64% of the requests are longer than max_model_len 8,192: the normal input_len (mean "
           "6,000, std 1,000) has no max, and its tail passes max_model_len; vLLM rejects each such request (HTTP "
           "400), and one failed request makes a measured point an error: give the distribution a max so that the "
           "longest prompt + output is at most 8,192 tokens")
    with pytest.warns(RequestLengthWarning) as rec:
        spec = loads_spec(text, file="mml.yaml")
    assert [str(w.message) for w in rec] == [msg] and spec.warnings == [msg]
    assert all(p.error is None for p in spec.predictions)
    # under 1 request in 10,000 (mean + 4.2 std): nothing said
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loads_spec(text.replace("std: 1000", "std: 460"), file="mml.yaml")


def test_a_predictions_own_setup_is_refused_at_its_own_line_once():
    text = (MML_HEAD.format(mml=8192) + "workload:\n  input_len: 1024\n  output_len: 256\npredictions:\n" + TPOT
            + "  - id: own\n    quantity: tpot_p50\n    at: {concurrency: 1}\n    predicted: 7.5 ms\n    setup:\n"
            "      workload: {input_len: 100000}\n"
            "  - id: own2\n    quantity: tpot_p50\n    at: {concurrency: 1}\n    predicted: 7.5 ms\n    setup:\n"
            "      engine:\n        args:\n          max_model_len: 1000\n")
    spec = loads_spec(text, file="mml.yaml")
    ok, own, own2 = spec.predictions
    assert ok.error is None
    assert own.error.line == 23 and own.error.message == (
        "this prediction's workload does not fit max_model_len: a request of 100,000 prompt + 256 output tokens = "
        "100,256 tokens is longer than max_model_len 8,192 (engine.args.max_model_len); vLLM rejects it: shorten "
        "setup.workload.input_len / output_len" + RAISE)
    assert own2.error.line == 31 and own2.error.message == (
        "this prediction's workload does not fit max_model_len: a request of 1,024 prompt + 256 output tokens = "
        "1,280 tokens is longer than max_model_len 1,000 (setup.engine.args.max_model_len); vLLM rejects it: shorten "
        "workload.input_len / output_len or raise setup.engine.args.max_model_len (up to the model's 131,072)")


def test_an_own_setup_that_changes_nothing_of_it_leaves_the_refusal_to_the_file(tmp_path, capsys):
    f = tmp_path / "mml.yaml"
    f.write_text(MML_HEAD.format(mml=512) + "workload:\n  input_len: 1024\n  output_len: 256\npredictions:\n" + TPOT
                 + "  - id: own\n    quantity: tpot_p50\n    at: {concurrency: 1}\n    predicted: 7.5 ms\n"
                 "    setup:\n      hardware: h200\n")
    assert cli.main(["check", str(f)]) == 1
    out = capsys.readouterr().out
    assert out.count("does not fit max_model_len") == 1 and f"{f}:7: the workload does not fit" in out


def test_predict_and_the_file_reader_share_the_rule():
    setup = build_setup(hardware_ref="h100-sxm", model_ref="llama-3.1-8b", engine={"args": {"max_model_len": 512}},
                        workload={"input_len": 1024, "output_len": 256})
    assert length_error(setup) == request_length_problem(
        setup, lengths="--input-len / --output-len", max_model_len="--max-model-len") == (
        "a request of 1,024 prompt + 256 output tokens = 1,280 tokens is longer than max_model_len 512 "
        "(--max-model-len); vLLM rejects it: shorten --input-len / --output-len or raise --max-model-len (up to the "
        "model's 131,072)")
    # a dataset's prompts are measured as the load is built (which refuses a long one there): nothing here
    data = build_setup(hardware_ref="h100-sxm", model_ref="llama-3.1-8b", engine={"args": {"max_model_len": 512}},
                       workload={"input_len": 1024, "output_len": 256, "dataset": {"path": "p.jsonl"}})
    assert request_length_problem(data) is None


# --------------------------------------------------------------------------------------------------------------
# #5: distributed_executor_backend: " mp " -- the check accepted it, the launch refused it
# --------------------------------------------------------------------------------------------------------------
EXEC = ("hardware: cpu\nmodel: roofline-tiny\nengine:\n  name: vllm\n  version: \"0.32.0\"\n"
        "  cpu_kvcache_space: 1 GiB\n  args: {{max_model_len: 1024, distributed_executor_backend: {backend}}}\n"
        "workload: {{input_len: 16, output_len: 4}}\nsweep: {{mode: closed, concurrency: [1], requests_per_point: 4, "
        "warmup: 1}}\npredictions:\n  - id: littles\n    quantity: littles_law_ratio\n    at: {{concurrency: 1}}\n"
        "    predicted: 1.0\n    tolerance: ±50%\n")


@pytest.fixture
def tiny_model_in_place(monkeypatch):
    """The launch configuration names the tiny model's folder; these tests read the flags, so the model is not made
    (making it starts a child process: on a fresh machine, where no earlier test made it, the unit tests' in-process
    rule failed the test)."""
    from pytest_roofline.measure.engine import tiny_model

    monkeypatch.setattr(tiny_model, "make_tiny_model", lambda dest, **_kw: dest)


def test_a_backend_the_check_accepts_is_the_one_launched(tiny_model_in_place):
    from pytest_roofline.measure.sweep import engine_config_for

    spec = loads_spec(EXEC.format(backend='" mp "'), file="exec.yaml")
    assert all(p.error is None for p in spec.predictions)
    cfg = engine_config_for(spec, device="cpu")
    assert cfg.distributed_executor_backend == "mp"
    flags = cfg.vllm_flags()
    assert flags[flags.index("--distributed-executor-backend") + 1] == "mp"
    # the setup reads it so too: vLLM 0.32's async scheduling default holds for mp, as for mp written plainly
    from pytest_roofline.model import engine_args

    assert engine_args.normalise_engine_args({"distributed_executor_backend": " mp "})[0] == {
        "distributed_executor_backend": "mp"}


@pytest.mark.parametrize(("backend", "read"), [('" MP "', "' MP '"), ('" uni "', "' uni '"), ("MP", "'MP'")])
def test_a_backend_the_launch_refuses_is_refused_by_the_check(backend, read):
    # a refused value is named as the user wrote it, spaces and case kept (it was named stripped: 'MP' for " MP ")
    err = _refusal(EXEC.format(backend=backend))
    assert err.line == 7 and err.message.startswith(
        f"setup does not resolve: engine.args.distributed_executor_backend: {read} is not a backend the plugin "
        "launches: write one of mp, ray")


def test_the_launch_names_a_refused_backend_as_written():
    from pytest_roofline.measure.engine import EngineConfig

    written: Any = " MP "
    with pytest.raises(ValueError, match=r"^distributed_executor_backend must be one of mp, ray, got ' MP '$"):
        EngineConfig(model="m", device="cpu", distributed_executor_backend=written)
    written = " ray "  # a backend it launches is launched without the spaces
    cfg = EngineConfig(model="m", device="cpu", distributed_executor_backend=written)
    assert cfg.distributed_executor_backend == "ray"


# --------------------------------------------------------------------------------------------------------------
# #6: disable_custom_all_reduce (and vLLM's other on/off args) read as on/off: a bare key was dropped from the
# launch, `maybe` launched as --disable-custom-all-reduce maybe
# --------------------------------------------------------------------------------------------------------------
DCAR = ("hardware: h100-sxm\nmodel: qwen3-8b\nengine:\n  name: vllm\n  version: \"0.11.0\"\n  args:\n"
        "    max_model_len: 8192\n    tensor_parallel_size: 2\n    {arg}:{value}\n"
        "workload: {{input_len: 1024, output_len: 256}}\n"
        "sweep: {{mode: closed, concurrency: [1, 16], requests_per_point: 10x}}\nmodel_column: serving\n"
        "predictions:\n  - id: tpot-c16\n    quantity: tpot_p50\n    at: {{concurrency: 16}}\n    predicted: model\n")


@pytest.mark.parametrize("arg", ["disable_custom_all_reduce", "trust_remote_code", "disable_log_stats",
                                 "enable_request_id_headers", "worker_use_ray"])
def test_a_bare_on_off_arg_is_refused_at_its_line(arg):
    err = _refusal(DCAR.format(arg=arg, value=""))
    flag = arg.replace("_", "-")
    assert err.line == 9 and err.message == (
        f"setup does not resolve: engine.args.{arg}: has no value (a bare '{arg}:' is YAML null, while vLLM's bare "
        f"--{flag} means true); write {arg}: true or {arg}: false")


@pytest.mark.parametrize(("value", "shown"), [(" maybe", "'maybe'"), (" 2", "2")])
def test_an_on_off_arg_that_is_neither_is_refused(value, shown):
    err = _refusal(DCAR.format(arg="disable_custom_all_reduce", value=value))
    assert err.line == 9 and err.message == (
        f"setup does not resolve: engine.args.disable_custom_all_reduce: {shown} is neither on nor off; write "
        "disable_custom_all_reduce: true or disable_custom_all_reduce: false")


@pytest.mark.parametrize(("value", "flags"), [
    (" true", ["--disable-custom-all-reduce"]), (' "true"', ["--disable-custom-all-reduce"]),
    (" 1", ["--disable-custom-all-reduce"]), (" false", ["--no-disable-custom-all-reduce"])])
def test_an_on_off_arg_is_launched_as_a_flag_never_with_a_value(value, flags, tiny_model_in_place):
    from pytest_roofline.measure.sweep import engine_config_for

    text = EXEC.format(backend="mp").replace(", distributed_executor_backend: mp}",
                                             f", disable_custom_all_reduce:{value}}}")
    cfg = engine_config_for(loads_spec(text, file="exec.yaml"), device="cpu")
    assert cfg.extra_args == flags


# --------------------------------------------------------------------------------------------------------------
# #8: ±1e1% got "unit '%' does not fit a time quantity"; #12: the hint's >= 600 tok/s does not parse unquoted
# --------------------------------------------------------------------------------------------------------------
VAC = (MML_HEAD.format(mml=8192) + "workload: {input_len: 1024, output_len: 256}\npredictions:\n"
       "  - id: tpot-c1\n    quantity: tpot_p50\n    at: {concurrency: 1}\n    predicted: 7.5 ms\n"
       "    tolerance: {tol}\n")


@pytest.mark.parametrize(("tol", "lo", "hi"), [("±1e1%", 0.1, 0.1), ("+1e1%/-5e0%", 0.05, 0.1),
                                                ("1.5E-1 %", 0.0015, 0.0015)])
def test_a_percentage_with_an_exponent_is_read(tol, lo, hi):
    [p] = loads_spec(VAC.replace("{tol}", tol), file="t.yaml").predictions
    assert p.error is None and (p.tolerance.rel_lo, p.tolerance.rel_hi) == pytest.approx((lo, hi))


def test_the_tolerance_hint_shows_the_one_sided_bound_quoted_and_it_parses_so():
    [p] = loads_spec(VAC.replace("{tol}", "abc"), file="t.yaml").predictions
    assert p.error.line == 16 and p.error.hint == (
        'write ±10%, +5%/-20%, ±0.5 ms, 1,600..1,900 tok/s, ">= 600 tok/s", <= +10% or exact')
    [p] = loads_spec(VAC.replace("{tol}", '">= 6 ms"'), file="t.yaml").predictions
    assert p.error is None and p.tolerance.lower == pytest.approx(0.006)
    # written unquoted, YAML reads a block scalar: the error says to quote it
    with pytest.raises(SpecError) as exc:
        loads_spec(VAC.replace("{tol}", ">= 6 ms"), file="t.yaml")
    assert exc.value.line == 16 and exc.value.hint == (
        'a value starting with > or | is a YAML block scalar: quote it, e.g. tolerance: ">= 600 tok/s"')


# --------------------------------------------------------------------------------------------------------------
# #7: ±100% or more below the ink reaches 0: TPOT ink of 1e300 ms at ±100% passed the math check
# --------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("tol", "below", "top"), [("±100%", "100%", "100%"), ("±1000%", "1000%", "1000%"),
                                                   ("+5%/-100%", "100%", "5%"), ('"+-1e2%"', "100%", "100%")])
def test_a_tolerance_reaching_zero_is_refused_at_its_line(tol, below, top):
    [p] = loads_spec(VAC.replace("predicted: 7.5 ms", "predicted: 1e300 ms").replace("{tol}", tol),
                     file="t.yaml").predictions
    assert p.error.line == 16 and p.error.message == (
        f"tolerance: {tol.strip(chr(34))} accepts anything down to 0 ({below} below the ink reaches it; no quantity "
        "checked is negative), so ink too high always passes")
    assert p.error.hint == (f"write a one-sided bound like '<= +{top}' if only the top is meant, or a band under 100% "
                            "(e.g. ±50%)")


def test_a_one_sided_bound_to_zero_and_a_default_are_refused_too():
    [p] = loads_spec(VAC.replace("{tol}", '">= -100%"'), file="t.yaml").predictions
    assert p.error.line == 16 and p.error.message == (
        "tolerance: >= -100% accepts any value (down to 0, with no upper bound; no quantity checked is negative)")
    text = VAC.replace("    tolerance: {tol}\n", "").replace("predictions:",
                                                        "defaults: {tolerance: ±150%}\npredictions:")
    with pytest.raises(SpecError) as exc:
        loads_spec(text, file="t.yaml")
    assert exc.value.line == 11 and exc.value.message.startswith("defaults.tolerance: ±150% accepts anything down to 0")


@pytest.mark.parametrize("tol", ["±99%", '"<= +100%"', "+1000%/-50%"])
def test_a_tolerance_short_of_zero_is_read(tol):
    [p] = loads_spec(VAC.replace("{tol}", tol), file="t.yaml").predictions
    assert p.error is None


# review s15 #1/#2: the length rule judges what is served: not a KV-only file, and the batch-1 run's own lengths
CPU_HEAD = ("hardware: cpu\nmodel: roofline-tiny\nengine:\n  name: vllm\n  version: \"0.32.0\"\n"
            "  cpu_kvcache_space: 1 GiB\n  args: {max_model_len: 1024, max_num_seqs: 8}\n")


def test_a_file_that_serves_no_request_is_not_held_to_the_workload_lengths():
    # no workload: the default 1,024 + 1,024 tokens would not fit max_model_len 1,024, but the KV pool and the
    # bytes per token are read from the engine's startup report or the setup alone: no request is ever sent
    spec = loads_spec(CPU_HEAD + "predictions:\n  - {id: kvt, quantity: kv_bytes_per_token, predicted: 512 B}\n"
                      "  - {id: kv, quantity: num_gpu_blocks, predicted: 16384}\n", file="kv.yaml")
    assert [p.error for p in spec.predictions] == [None, None]
    # an own setup with a longer workload on a KV prediction sends nothing either
    spec = loads_spec(CPU_HEAD + "workload: {input_len: 128, output_len: 64}\npredictions:\n"
                      "  - id: kv\n    quantity: num_gpu_blocks\n    predicted: 16384\n    setup:\n"
                      "      workload: {input_len: 2000, output_len: 64}\n", file="kv.yaml")
    assert spec.predictions[0].error is None
    # the same file with a measured TPOT at a sweep point is refused: that point sends 1,024 + 1,024 tokens
    err = _refusal(CPU_HEAD + "predictions:\n  - {id: kv, quantity: num_gpu_blocks, predicted: 16384}\n"
                   "  - {id: t, quantity: tpot_p50, at: {concurrency: 1}, predicted: 5 ms}\n")
    assert err.line == 7 and err.message.startswith(
        "the workload does not fit max_model_len: a request of 1,024 prompt + 1,024 output tokens = 2,048 tokens")


def test_the_batch1_runs_own_lengths_are_judged_at_its_line():
    text = (CPU_HEAD + "workload: {input_len: 128, output_len: 64}\nsweep:\n  mode: closed\n  concurrency: [1]\n"
            "  batch1: {requests: 4, input_len: 512, output_len: 1000}\npredictions:\n"
            "  - {id: b1, quantity: batch1_throughput, predicted: 100 tok/s, tolerance: ±50%}\n")
    err = _refusal(text)
    assert err.line == 12 and err.message == (
        "the batch-1 run does not fit max_model_len: a request of 512 prompt + 1,000 output tokens = 1,512 tokens is "
        "longer than max_model_len 1,024 (engine.args.max_model_len); vLLM rejects it: shorten "
        "sweep.batch1.input_len / output_len or raise engine.args.max_model_len (up to the model's 4,096)")
    loads_spec(text.replace("output_len: 1000}", "output_len: 512}"), file="mml.yaml")  # 1,024 tokens fit


def test_roofline_check_prints_a_files_warning_as_one_line(tmp_path, capsys):
    # review s15 #3: the length warning reached roofline check's stderr as a Python warning with the plugin's
    # source line (format/_sections.py:161: RequestLengthWarning, then the code line)
    f = tmp_path / "mml.yaml"
    f.write_text(MML_HEAD.format(mml=8192) + "workload:\n  input_len: {dist: normal, mean: 6000, std: 1000}\n"
                 "  output_len: 256\npredictions:\n" + TPOT)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a Python warning escaping roofline check fails the test
        assert cli.main(["check", str(f)]) == 0
    out, err = capsys.readouterr()
    assert err == "" and out.startswith(f"warning: {f}:10: about 2.64% of the requests are longer than max_model_len")
    assert out.count("\n") == 2 and out.endswith(f"{f}: 1 predictions ok, 0 with errors\n")
