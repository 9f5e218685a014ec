"""A trial of 49 public ``vllm serve`` lines through ``engine.args`` (2026-12-06): each finding fixed and pinned.

Every expected value here is worked out from vLLM's behaviour or plain arithmetic, written next to it, not read
back from the code: which values vLLM treats as "off", which release's ``_is_v1_supported_oracle`` sends a launch
to V0 (read in the PyPI wheels' vllm/engine/arg_utils.py), the KV block size of Llama-3.1-8B, the YAML line each
arg was written on.
"""

from __future__ import annotations

import argparse

import pytest

from pytest_roofline import cli
from pytest_roofline.errors import SetupValueError, SpecError, SpecErrors
from pytest_roofline.format.spec import loads_spec
from pytest_roofline.model import engine_args as ea
from pytest_roofline.model import serving as sv
from pytest_roofline.model.setup import build_setup, kv_accounting

MIB = 2**20


def h100(version: str | None = None, env: dict | None = None, **args):
    engine = {"name": "vllm", "args": dict(args)}
    if version is not None:
        engine["version"] = version
    if env is not None:
        engine["env"] = env
    return build_setup(hardware_ref="h100-sxm", model_ref="llama-3.1-8b", engine=engine)


def refusal(**kwargs) -> SetupValueError:
    with pytest.raises(SetupValueError) as exc:
        h100(**kwargs)
    return exc.value


# -- 1. speculative decoding written as text is on, and refused -------------------------------------------------

@pytest.mark.parametrize("value", [None, "", 0, 0.0, False, "false", "FALSE", " Off ", "no", "0", "none", "None",
                                   {}, "{}", " {} "])
def test_only_the_listed_values_are_off(value):
    assert ea.is_off(value)


@pytest.mark.parametrize("value", ["meta-llama/Llama-3.2-1B", "[ngram]", "5", 5, 1, True, "true",
                                   '{"num_speculative_tokens": 5, "method": "eagle3"}', {"method": "ngram"},
                                   "{'level': 3}", "null"])
def test_a_model_name_a_number_as_text_and_a_json_mapping_as_text_are_on(value):
    assert not ea.is_off(value)


@pytest.mark.parametrize("key, value", [
    ("speculative_model", "meta-llama/Llama-3.2-1B"),  # C10: -speculative-model <name>
    ("speculative_config", '{"model": "yuhuili/EAGLE3", "num_speculative_tokens": 5, "method": "eagle3"}'),  # C11
    ("num_speculative_tokens", "5"),  # a number quoted in YAML
])
def test_speculative_decoding_given_as_text_is_refused_at_its_field(key, value):
    exc = refusal(**{key: value})
    assert exc.field == f"engine.args.{key}"
    assert "speculative decoding" in str(exc)


def test_speculative_config_through_set_is_refused(capsys):
    rc = cli.main(["predict", "--hardware", "h100-sxm", "--model", "llama-3.1-8b", "--set",
                   'engine.args.speculative_config={"num_speculative_tokens":5,"method":"eagle3"}'])
    err = capsys.readouterr().err
    assert rc == 2
    assert "engine.args.speculative_config" in err and "speculative decoding" in err


def test_speculative_decoding_off_is_still_accepted():
    for value in (None, "", 0, False, "none", {}, "{}"):
        h100(speculative_config=value, num_speculative_tokens=0, speculative_model=None)


# -- 2. one on/off reader -------------------------------------------------------------------------------------

@pytest.mark.parametrize("value, on", [(True, True), (False, False), (1, True), (0, False), ("true", True),
                                       ("False", False), (" YES ", True), ("no", False), ("on", True),
                                       ("off", False), ("1", True), ("0", False), ("none", False)])
def test_read_flag_reads_every_spelling_of_on_and_off(value, on):
    assert ea.read_flag(value, "engine.args.enforce_eager") is on


@pytest.mark.parametrize("value", [None, "maybe", 2, "", [True]])
def test_read_flag_refuses_a_value_that_is_neither(value):
    with pytest.raises(SetupValueError, match="write enforce_eager: true or enforce_eager: false") as exc:
        ea.read_flag(value, "engine.args.enforce_eager")
    assert exc.value.field == "engine.args.enforce_eager"


def test_a_quoted_false_keeps_the_cuda_graph_reserve():
    # bool("false") is True: the setup used to read it as eager mode and drop the graph reserve
    base, quoted_false, quoted_true, eager = h100(), h100(enforce_eager="false"), h100(enforce_eager="true"), \
        h100(enforce_eager=True)
    assert quoted_false.enforce_eager is False and quoted_true.enforce_eager is True
    assert kv_accounting(quoted_false).num_blocks == kv_accounting(base).num_blocks
    assert kv_accounting(quoted_true).num_blocks == kv_accounting(eager).num_blocks
    # eager mode frees the 512 MiB CUDA-graph reserve (analytical.DEFAULT_CUDA_GRAPH_BYTES, budgeted from vLLM 0.21);
    # one Llama-3.1-8B block is 2 (K, V) x 32 layers x 8 KV heads x 128 x 2 B x 16 tokens = 2 MiB: 256 blocks more
    assert base.bytes_per_block == 2 * 32 * 8 * 128 * 2 * 16 == 2 * MIB
    assert kv_accounting(eager).num_blocks - kv_accounting(base).num_blocks == 512 * MIB // (2 * MIB)


def test_a_bare_flag_is_refused_with_the_two_values_to_write():
    exc = refusal(enforce_eager=None)
    assert exc.field == "engine.args.enforce_eager"
    assert "YAML null" in str(exc) and "enforce_eager: true or enforce_eager: false" in str(exc)


def test_the_serving_model_reads_flags_with_the_same_reader():
    cfg = sv.EngineConfig.from_setup(h100(version="0.26.0", enable_prefix_caching="false",
                                          enable_chunked_prefill="true"))
    assert cfg.enable_prefix_caching is False and cfg.chunked_prefill is True
    with pytest.raises(SetupValueError, match="scheduler_reserve_full_isl"):
        sv.EngineConfig.from_setup(h100(version="0.26.0").with_changes(
            engine_args={"scheduler_reserve_full_isl": "sometimes"}))


# -- 3. dtype --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["float32", "float", "FP32"])
def test_float32_is_refused_at_its_field_not_folded_into_bf16(value):
    exc = refusal(dtype=value)
    assert exc.field == "engine.args.dtype"
    assert "FP32 matmuls" in str(exc) and "bfloat16" in str(exc)


@pytest.mark.parametrize("value, dtype", [("float16", "fp16"), ("half", "fp16"), ("bfloat16", "bf16"),
                                          ("auto", "bf16")])  # Llama-3.1-8B's config.json: torch_dtype bfloat16
def test_the_16_bit_dtypes_are_modelled(value, dtype):
    s = h100(dtype=value)
    assert s.activation_dtype == dtype and s.weight_dtype == dtype and s.kv_dtype == dtype
    assert s.kv_bytes_per_token == 2 * 32 * 8 * 128 * 2  # K and V, 32 layers, 8 KV heads x 128, 2 bytes


# -- 4. the V0 fallback of vLLM 0.8-0.10 --------------------------------------------------------------------------

@pytest.mark.parametrize("version, args, engine", [
    # --otlp-traces-endpoint: in the oracle of 0.8.0 ... 0.10.1.1, gone in 0.10.2
    ("0.9.1", {"otlp_traces_endpoint": "http://collector:4317"}, "v0"),
    ("0.9.1", {"collect_detailed_traces": "all"}, "v0"),
    ("0.10.1.1", {"otlp_traces_endpoint": "http://collector:4317"}, "v0"),
    ("0.10.2", {"otlp_traces_endpoint": "http://collector:4317"}, "v1"),
    ("0.11.0", {"otlp_traces_endpoint": "http://collector:4317"}, "v1"),  # V0 removed
    ("0.7.3", {}, "v0"),  # before 0.8.0 V0 is the only default engine
    # --load_format: tensorizer up to 0.8.5, sharded_state up to 0.10.2
    ("0.8.5", {"load_format": "tensorizer"}, "v0"),
    ("0.9.0", {"load_format": "tensorizer"}, "v1"),
    ("0.10.2", {"load_format": "sharded_state"}, "v0"),
    ("0.10.2", {"load_format": "safetensors"}, "v1"),
    # --guided-decoding-backend: 0.8.0 xgrammar only; 0.8.5 compares the part before ':'; 0.9.x auto, xgrammar,
    # guidance; 0.10.0 adds outlines; 0.10.1 no longer checks
    ("0.8.0", {"guided_decoding_backend": "xgrammar"}, "v1"),
    ("0.8.0", {"guided_decoding_backend": "outlines"}, "v0"),
    ("0.8.5", {"guided_decoding_backend": "xgrammar:disable-any-whitespace"}, "v1"),
    ("0.9.0", {"guided_decoding_backend": "xgrammar:disable-any-whitespace"}, "v0"),
    ("0.9.2", {"guided_decoding_backend": "outlines"}, "v0"),
    ("0.10.0", {"guided_decoding_backend": "outlines"}, "v1"),
    ("0.10.0", {"guided_decoding_backend": "lm-format-enforcer"}, "v0"),
    ("0.10.1", {"guided_decoding_backend": "lm-format-enforcer"}, "v1"),
    # --num-scheduler-steps (accepted by the setup, refused by the serving model): up to 0.10.0; from 0.10.1 the
    # arg is gone and the setup refuses it (tests/unit/test_serving_mechanisms.py)
    ("0.10.0", {"num_scheduler_steps": 8}, "v0"),
    ("0.10.0", {"num_scheduler_steps": 1}, "v1"),
])
def test_the_v1_oracle_fallback_is_simulated_as_v0(version, args, engine):
    s = h100(version=version, **args)
    assert s.engine_kind == engine
    if engine == "v0" and not version.startswith("0.7"):
        # the same engine vLLM runs when told VLLM_USE_V1=0: the same defaults and KV pool
        forced = h100(version=version, env={"VLLM_USE_V1": "0"}, **args)
        assert kv_accounting(s).num_blocks == kv_accounting(forced).num_blocks
        assert (s.max_num_seqs, s.max_num_batched_tokens) == (forced.max_num_seqs, forced.max_num_batched_tokens)
        assert "Falling back to V0" in s.sources["engine"]


def test_the_fallback_changes_the_pool_the_setup_reports():
    # V0 at 0.9.1 does not budget V1's activation/graph terms the same way: its pool is another figure (the trial
    # measured 28,516 V0 blocks against 27,183 V1 for this setup)
    assert kv_accounting(h100(version="0.9.1", otlp_traces_endpoint="http://c:4317")).num_blocks != \
        kv_accounting(h100(version="0.9.1")).num_blocks


def test_vllm_use_v1_with_a_fallback_arg_is_refused_as_vllm_refuses_it():
    exc = refusal(version="0.9.1", env={"VLLM_USE_V1": "1"}, otlp_traces_endpoint="http://c:4317")
    assert exc.field == "engine.args.otlp_traces_endpoint"
    assert "VLLM_USE_V1=1 is not supported with --otlp-traces-endpoint" in str(exc)


# -- 5. spellings, no-effect args, defaults -----------------------------------------------------------------------

@pytest.mark.parametrize("written, arg", [("no_enable_prefix_caching", "enable_prefix_caching"),
                                          ("no-enable-prefix-caching", "enable_prefix_caching"),
                                          ("no_enable_chunked_prefill", "enable_chunked_prefill")])
def test_no_flag_true_is_the_flag_false(written, arg):
    s = h100(version="0.26.0", **{written: True})
    assert getattr(s, arg) is False  # V1's default for both is on
    assert h100(version="0.26.0", **{written: False}).engine_args[arg] is True


def test_a_flag_and_its_no_form_together_are_one_argument_given_twice():
    exc = refusal(enable_prefix_caching=True, no_enable_prefix_caching=True)
    assert "again" in str(exc) and exc.field == "engine.args.enable_prefix_caching"
    assert "neither true nor false" in str(refusal(no_enable_prefix_caching="maybe"))


@pytest.mark.parametrize("alias, arg, value", [("tp", "tensor_parallel_size", 2), ("pp", "pipeline_parallel_size", 2),
                                               ("q", "quantization", "fp8")])
def test_vllms_short_aliases_are_their_arguments(alias, arg, value):
    assert h100(**{alias: value}).engine_args == {arg: value}


def test_the_tp_alias_splits_the_weights():
    # Llama-3.1-8B's weights over 2 ranks: half each (its 8 KV heads split evenly, nothing replicated)
    assert h100(tp=2).weight_bytes_per_gpu == pytest.approx(h100().weight_bytes / 2)


def test_the_dp_and_o_aliases_reach_their_arguments_refusals():
    assert "engine.replicas" in str(refusal(dp=2))
    with pytest.raises(SetupValueError) as exc:  # -O is compilation_config: the setup builds, the serving model refuses
        sv.EngineConfig.from_setup(h100(O=3))
    assert exc.value.field == "engine.args.compilation_config"


@pytest.mark.parametrize("written", ["dp", "data_parallel_size", "data-parallel-size"])
def test_data_parallel_size_is_refused_before_the_release_that_added_it(written):
    # --data-parallel-size and its short -dp first appear in vLLM 0.8.3's vllm/engine/arg_utils.py
    # (EngineArgs.data_parallel_size, add_cli_args '--data-parallel-size', '-dp'); 0.8.2's has neither, so its
    # `vllm serve` refuses the flag at any value, 1 included
    exc = refusal(version="0.8.2", **{written: 1})
    assert exc.field == "engine.args.data_parallel_size"
    assert "not an engine arg of vLLM 0.8.2" in str(exc) and "added in vLLM 0.8.3" in str(exc)
    assert h100(version="0.8.3", **{written: 1}).engine_args == {"data_parallel_size": 1}
    assert h100(**{written: 1}).engine_args == {"data_parallel_size": 1}  # the newest release read
    assert "engine.replicas" in str(refusal(version="0.8.3", **{written: 2}))  # above 1: refused at every release


def test_a_dp_written_for_a_release_without_it_is_refused_at_its_line():
    text = ('hardware: h100-sxm\nmodel: llama-3.1-8b\nengine:\n  version: "0.8.2"\n  args:\n'
            "    max-num-seqs: 64\n"  # 6
            "    dp: 1\n"             # 7
            "predictions:\n  - {id: r, quantity: ridge_point, predicted: 295 FLOP/byte, tolerance: 5%}\n")
    with pytest.raises(SpecError) as exc:  # one bad arg: one error, at the line the alias was written on
        loads_spec(text, file="f.yaml")
    assert (exc.value.file, exc.value.line) == ("f.yaml", 7)
    assert "added in vLLM 0.8.3" in str(exc.value)


def test_set_normalises_kebab_keys_aliases_and_no_forms():
    from pytest_roofline.cli import _set_item, _setup_tree

    args = argparse.Namespace(set=[_set_item(t) for t in ("engine.args.max-num-seqs=8", "engine.args.tp=2",
                                                           "engine.args.no-enable-prefix-caching=true")])
    assert _setup_tree(args)["engine"]["args"] == {"max_num_seqs": 8, "tensor_parallel_size": 2,
                                                   "enable_prefix_caching": False}
    twice = argparse.Namespace(set=[_set_item("engine.args.max-num-seqs=8"), _set_item("engine.args.max_num_seqs=16")])
    with pytest.raises(ValueError, match="given twice"):
        _setup_tree(twice)


def test_the_yaml_reader_gives_the_launch_the_same_spelling():
    spec = loads_spec("hardware: h100-sxm\nmodel: llama-3.1-8b\nengine:\n  args:\n    tp: 2\n"
                      "    no-enable-prefix-caching: true\n    enforce_eager: 'false'\n"
                      "predictions:\n  - {id: r, quantity: ridge_point, predicted: 295 FLOP/byte, tolerance: 5%}\n")
    assert spec.engine["args"] == {"tensor_parallel_size": 2, "enable_prefix_caching": False, "enforce_eager": False}


@pytest.mark.parametrize("args", [
    {"use_v2_block_manager": True}, {"use_v2_block_manager": False},  # "has no effect on vLLM behavior"
    {"config_format": "mistral", "tokenizer_mode": "mistral", "load_format": "mistral"},  # C28's Mistral trio
    {"override_generation_config": {"temperature": 0.5, "top_p": 0.9}},
    {"override_generation_config": '{"temperature": 0.5}'},  # as --set gives it
    {"allowed_local_media_path": "/"},
    {"device": "cuda"}, {"device": "auto"},
    {"task": "generate"}, {"task": "auto"}, {"runner": "generate"},  # vLLM's defaults
    {"scheduling_policy": "fcfs", "scheduler_delay_factor": 0, "max_num_partial_prefills": 1,
     "max_long_partial_prefills": 1, "long_prefill_token_threshold": 0, "disable_async_output_proc": False,
     "enable_eplb": False},
])
def test_args_without_an_effect_and_defaults_are_accepted_by_the_serving_model_too(args):
    sv.EngineConfig.from_setup(h100(version="0.26.0", **args))


@pytest.mark.parametrize("args, field", [
    ({"override_generation_config": {"max_new_tokens": 16}}, "override_generation_config"),  # caps every output
    ({"override_generation_config": {"attn_temperature_tuning": True}}, "override_generation_config"),
    ({"device": "cpu"}, "device"),  # not this setup's device
    ({"task": "embed"}, "task"),
    ({"enable_eplb": True}, "enable_eplb"),
])
def test_values_that_change_a_figure_are_still_refused_as_the_setup_is_built(args, field):
    assert refusal(version="0.26.0", **args).field == f"engine.args.{field}"


def test_use_v2_block_manager_chose_the_block_manager_before_0_6_3_post1():
    # 0.6.3's help: "Set to False to use BlockSpaceManagerV1"; 0.6.3.post1's: "has no effect on vLLM behavior"
    assert refusal(version="0.6.3", use_v2_block_manager=False).field == "engine.args.use_v2_block_manager"
    h100(version="0.6.3.post1", use_v2_block_manager=False)


def test_the_device_arg_matches_the_cpu_engine():
    build_setup(hardware_ref="cpu", model_ref="roofline-tiny",
                engine={"name": "vllm", "args": {"device": "cpu"}, "cpu_kvcache_space": 2**30})


@pytest.mark.parametrize("key, value", [("scheduling_policy", "priority"), ("scheduler_delay_factor", 0.5),
                                        ("max_num_partial_prefills", 4), ("disable_async_output_proc", True)])
def test_a_scheduling_change_leaves_the_setup_and_is_refused_by_the_serving_model(key, value):
    s = h100(version="0.26.0", **{key: value})
    with pytest.raises(SetupValueError) as exc:
        sv.EngineConfig.from_setup(s)
    assert exc.value.field == f"engine.args.{key}"


@pytest.mark.parametrize("key, value", [("compilation_config", '{"cudagraph_mode": "PIECEWISE"}'),
                                        ("compilation_config", 3), ("attention_backend", "FLASHINFER")])
def test_a_kernel_choice_leaves_the_setup_and_is_refused_by_the_serving_model(key, value):
    # the most common args of recent vLLM lines (compilation_config through -O, attention_backend) change only which
    # kernels run: the setup (roofline, KV pool) builds, the serving model refuses them at their field, with the
    # reason, not as an arg the project does not know
    s = h100(version="0.26.0", **{key: value})
    with pytest.raises(SetupValueError) as exc:
        sv.EngineConfig.from_setup(s)
    assert exc.value.field == f"engine.args.{key}" and "not modelled" in str(exc.value)
    assert "knows" not in str(exc.value)


def test_an_attention_backend_named_in_the_environment_is_refused_like_the_arg():
    # engine.env.VLLM_ATTENTION_BACKEND is the environment's way to name the backend engine.args.attention_backend
    # names: the setup builds (the roofline and the KV pool hold), the serving model refuses it at its env field
    s = h100(version="0.26.0", env={"VLLM_ATTENTION_BACKEND": "FLASHINFER"})
    with pytest.raises(SetupValueError) as exc:
        sv.EngineConfig.from_setup(s)
    assert exc.value.field == "engine.env.VLLM_ATTENTION_BACKEND" and "'FLASHINFER' is not modelled" in str(exc.value)
    assert sv.EngineConfig.from_setup(h100(version="0.26.0", env={"VLLM_ATTENTION_BACKEND": ""})).max_num_seqs > 0


def test_worker_use_ray_is_the_executor_and_changes_nothing():
    # vLLM 0.4-0.5's --worker-use-ray is distributed_executor_backend: ray, which the models already accept
    s = h100(version="0.5.4", worker_use_ray=True)
    assert sv.EngineConfig.from_setup(s).max_num_seqs == h100(version="0.5.4").max_num_seqs


# -- 6. every bad arg at once ---------------------------------------------------------------------------------------

def test_every_bad_arg_is_reported_at_once():
    with pytest.raises(ea.EngineArgsError) as exc:
        h100(made_up_flag=1, speculative_model="draft", max_num_seqs=0, enforce_eager=None, kv_cache_dtype="int4")
    fields = [p.field for p in exc.value.problems]
    assert sorted(fields) == sorted(f"engine.args.{k}" for k in ("made_up_flag", "speculative_model",
                                                                  "max_num_seqs", "enforce_eager", "kv_cache_dtype"))
    assert str(exc.value).startswith("5 engine args cannot be predicted as written")
    assert all(p.text.startswith(p.field) for p in exc.value.problems)  # each line names its own field


def test_roofline_check_names_each_bad_args_own_line():
    text = ("hardware: h100-sxm\n"              # 1
            "model: llama-3.1-8b\n"             # 2
            "engine:\n"                         # 3
            "  args:\n"                         # 4
            "    max-num-seqs: 64\n"            # 5  fine
            "    made_up_flag: 1\n"             # 6
            "    speculative-model: draft\n"    # 7  kebab: engine.args.speculative_model
            "    tp: 3\n"                       # 8  alias: Llama-3.1-8B's 32 heads do not divide over 3 GPUs
            "    enforce_eager:\n"              # 9
            "predictions:\n  - {id: r, quantity: ridge_point, predicted: 295 FLOP/byte, tolerance: 5%}\n")
    with pytest.raises(SpecErrors) as exc:
        loads_spec(text, file="f.yaml")
    lines = {e.line for e in exc.value.errors}
    assert lines == {6, 7, 8, 9}
    assert all(e.file == "f.yaml" for e in exc.value.errors)


def test_a_single_bad_arg_keeps_its_one_line_message():
    exc = refusal(tensor_paralel_size=2)
    assert str(exc).startswith("engine.args.tensor_paralel_size: not an engine arg")
    assert "did you mean 'tensor_parallel_size'" in str(exc)


# -- 7. async scheduling by release -----------------------------------------------------------------------------------

def serving_refusal(**kwargs) -> str | None:
    try:
        sv.EngineConfig.from_setup(h100(**kwargs))
    except SetupValueError as exc:
        assert exc.field == "engine.args.async_scheduling"
        return str(exc)
    return None


def test_async_scheduling_is_refused_only_at_the_value_that_is_not_the_releases_default():
    # 0.13.0: SchedulerConfig.async_scheduling = False; 0.14.0: None, resolved to True (vllm/config/vllm.py)
    assert serving_refusal(version="0.13.0", async_scheduling=False) is None
    off_by_default = serving_refusal(version="0.13.0", async_scheduling=True)
    assert off_by_default and "0.14.0" in off_by_default and "synchronous" in off_by_default
    assert serving_refusal(version="0.14.0", async_scheduling=True) is None
    assert serving_refusal(async_scheduling=True) is None  # no version: the newest release read
    on_by_default = serving_refusal(version="0.14.0", async_scheduling=False)
    assert on_by_default and "from vLLM 0.14.0 async scheduling is the default" in on_by_default
    assert ea.async_scheduling_default("0.13.0", {}) is False
    assert ea.async_scheduling_default("0.14.0", {}) is True
    assert ea.async_scheduling_default("0.14.0", {"distributed_executor_backend": "ray"}) is False


def test_async_scheduling_with_pipeline_parallelism_is_refused_as_0_14_refuses_it():
    exc = refusal(version="0.14.0", async_scheduling=True, pipeline_parallel_size=2)
    assert exc.field == "engine.args.async_scheduling" and "pipeline_parallel_size > 1" in str(exc)


# -- an executor backend the plugin cannot launch (docs audit, 2026-12-06) -------------------------------------

@pytest.mark.parametrize("value", ["foo", "uni", "external_launcher", "Ray ", 1])
def test_an_executor_backend_the_plugin_does_not_launch_is_refused_at_its_line(value):
    # vLLM takes ray, mp, uni and external_launcher; the plugin launches a server's multi-worker modes, mp and ray
    # (docs/how-to/scaling-out.md "Refused early"), so every other value is refused where it is written: line 7
    text = ('hardware: h100-sxm\nmodel: llama-3.1-8b\nengine:\n  args:\n'
            "    tensor_parallel_size: 2\n"                       # 5
            "    max_num_seqs: 64\n"                              # 6
            f"    distributed_executor_backend: {value!r}\n"      # 7
            "predictions:\n  - {id: r, quantity: ridge_point, predicted: 295 FLOP/byte, tolerance: 5%}\n")
    with pytest.raises(SpecError) as exc:
        loads_spec(text, file="f.yaml")
    assert (exc.value.file, exc.value.line) == ("f.yaml", 7)
    assert "distributed_executor_backend" in str(exc.value) and "mp, ray" in str(exc.value)


@pytest.mark.parametrize("value", ["mp", "ray"])
def test_the_backends_the_plugin_launches_are_accepted_and_change_no_figure(value):
    assert h100(tensor_parallel_size=2, distributed_executor_backend=value).engine_args[
        "distributed_executor_backend"] == value
    assert (kv_accounting(h100(tensor_parallel_size=2, distributed_executor_backend=value)).num_blocks
            == kv_accounting(h100(tensor_parallel_size=2)).num_blocks)
