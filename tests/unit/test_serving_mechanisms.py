"""The serving model's issue-22 mechanisms, each against a figure worked out by hand or published:

* the API-server frontend around the engine steps (TTFT, the closed loop's wait for the next step);
* paged-KV attention reads at their own bandwidth fraction plus a fixed cost per attention kernel, against the
  published FlashAttention-2 paged-decode kernel times on H100 (github.com/microsoft/onnxruntime/pull/21414);
* NCCL's small-message ring all-reduce latency against nccl-tests' published DGX-A100 figures
  (github.com/NVIDIA/nccl-tests/issues/123);
* the per-sequence step cost of V0 engines before 0.6.0, which detokenise every running sequence every step in the
  engine loop: one detokenize_incrementally call, 19-21 us logged (github.com/vllm-project/vllm/issues/5206);
* engine args the model does not simulate are refused at their YAML field, never ignored.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from pytest_roofline.errors import SetupValueError
from pytest_roofline.measure import stats
from pytest_roofline.model import serving as sv
from pytest_roofline.model.serving.constants import ring_allreduce_latency_s
from pytest_roofline.model.serving.engine import check_engine_args
from pytest_roofline.model.setup import build_setup

MiB = 1024 * 1024


def h100(**args):
    return build_setup(hardware_ref="h100-sxm", model_ref="llama-3.1-8b",
                       engine={"name": "vllm", "version": "0.26.0", "args": dict(args)})


def lone(input_len=128, output_len=4, n=1, c=1):
    return sv.Workload(input_len=sv.LengthDist(input_len), output_len=sv.LengthDist(output_len), num_requests=n,
                       concurrency=c)


# -- frontend ---------------------------------------------------------------------------------------------------

def test_a_lone_request_pays_the_frontend_before_and_after_its_prefill_step():
    s = h100()
    c = sv.default_constants(s)
    assert (c.frontend_in_s, c.frontend_out_s, c.client_jitter_s) == (2e-3, 0.7e-3, 1.5e-3)
    c = c.replace(client_jitter_s=0.0)  # every request's delay exactly frontend_in_s
    p = sv.simulate(s, lone(), constants=c)
    step = sv.step_cost(s, c, prefill_tokens=[(128, 0)]).time_s
    # sent at 0, in the engine core at 2 ms, one 128-token prefill step, then 0.7 ms to the client
    assert p.ttft_p50_ms == pytest.approx((2e-3 + step + 0.7e-3) * 1e3, rel=1e-12)
    # (the API server streams the one token in 50 us, inside the 0.7 ms: api_out_per_token_s adds nothing here)
    assert c.api_out_per_token_s == pytest.approx(50e-6)
    # the frontend adds to TTFT only: TPOT is a difference of token times
    p0 = sv.simulate(s, lone(), constants=c.replace(frontend_in_s=0.0, frontend_out_s=0.0, api_out_per_token_s=0.0))
    assert p.tpot_p50_ms == pytest.approx(p0.tpot_p50_ms, rel=1e-12)
    assert p.ttft_p50_ms - p0.ttft_p50_ms == pytest.approx(2.7, rel=1e-9)


@pytest.mark.parametrize("async_scheduling", [False, True])
def test_a_closed_loop_request_waits_for_the_step_the_engine_started_without_it(async_scheduling: bool):
    """Two clients: A's request is long, B's short (3 tokens); when B's finishes, B's next request reaches the engine
    core f_out + f_in later, mid-way through one of A's decode steps, and is prefilled in the step after it; with async
    scheduling (vLLM 0.26's default on a GPU: tests/unit/test_async_scheduling.py), in the step after that, which was
    scheduled when the step it arrived in was launched."""
    s = h100()
    eng = dataclasses.replace(sv.EngineConfig.from_setup(s), async_scheduling=async_scheduling)
    c = sv.default_constants(s).replace(frontend_in_s=1e-3, frontend_out_s=0.5e-3, client_jitter_s=0.0)
    w = sv.Workload(input_len=sv.LengthDist(64), output_len=sv.LengthDist(1, "file", values=(400, 3, 3),
                                                                               order="sequential"),
                    num_requests=3, concurrency=2)
    trace: list[sv.StepRecord] = []
    sv.simulate(s, w, engine=eng, constants=c, trace=trace)
    # B's first request finishes at the end of the step that made its 3rd token, two after its prefill (sync: A and
    # B prefilled together in the second step, the API server handing B over 1 ms after A; async: in the third)
    prefills = [i for i, r in enumerate(trace) if r.prefill_tokens == 64]
    assert prefills[:2] == ([0, 2] if async_scheduling else [0, 1])
    done_b = trace[prefills[1] + 2]
    finish_b = done_b.start_s + done_b.time_s
    ready = finish_b + 0.5e-3 + 1e-3
    prefill = next(r for r in trace if r.start_s > finish_b and r.prefill_tokens == 64)
    # the first step boundary at or after the request is in the engine core (async: the second)
    boundaries = sorted(r.start_s for r in trace if r.start_s >= ready - 1e-12)
    boundary = boundaries[1] if async_scheduling else boundaries[0]
    assert prefill.start_s == pytest.approx(boundary, abs=1e-12)
    before = [r for r in trace if finish_b - 1e-12 <= r.start_s < boundary]
    assert len(before) >= 1 + async_scheduling and all(r.prefill_tokens == 0 for r in before)  # A decoded alone


RECORDED = Path(__file__).resolve().parents[2] / "predictions" / "recorded"


def _legs_ms(recording: str, point_id: str) -> tuple[float, float]:
    """A recorded point's API-server and HTTP legs from vLLM's own stamps (stats.frontend_legs)."""
    doc = json.loads((RECORDED / recording).read_text())
    legs = stats.frontend_legs(next(p for p in doc["points"] if p["id"] == point_id))
    return legs.api_server_ms, legs.http_ms


def test_the_frontend_defaults_are_the_api_server_legs_vllm_stamped_on_the_held_cpu_recordings():
    """frontend_in_s / frontend_out_s are the two short-prompt recordings' lowest-load legs (cpu-tiny C=1, the open
    loop at 2 req/s; benchmarks/frontend_split.py), worked out here from the committed files."""
    legs = [_legs_ms("cpu-tiny-2026-12-05.results.json", "closed-c1"),
            _legs_ms("cpu-open-loop-2026-12-05.results.json", "open-r2")]
    assert [round(x, 2) for leg in legs for x in leg] == [1.98, 0.63, 2.29, 0.75]
    c = sv.default_constants(h100())
    assert c.frontend_in_s * 1e3 == pytest.approx(sum(i for i, _ in legs) / 2, rel=0.1)
    assert c.frontend_out_s * 1e3 == pytest.approx(sum(o for _, o in legs) / 2, rel=0.1)
    cpu = sv.default_constants(build_setup(hardware_ref="cpu", model_ref="roofline-tiny"))
    assert (cpu.frontend_in_s, cpu.frontend_out_s) == (c.frontend_in_s, c.frontend_out_s)  # one mechanism


def test_the_client_jitter_default_spans_the_held_recordings_turnarounds():
    """Each closed-loop send after the latest response's end: the committed C=2 request files of the held
    recordings turn around within 0.9 ms, all inside [0, client_jitter_s)."""
    jitter_ms = sv.default_constants(h100()).client_jitter_s * 1e3
    for name in ("cpu-tiny-2026-12-05.closed-c2.requests.jsonl",
                 "cpu-prefill-heavy-2026-12-05.closed-c2.requests.jsonl"):
        delays = stats.closed_loop_turnarounds_ms(
            json.loads(line) for line in (RECORDED / name).read_text().splitlines() if line.strip())
        assert len(delays) == 34
        assert 0.0 <= min(delays) and max(delays) < jitter_ms


def test_closed_loop_send_delays_are_uniform_up_to_the_client_jitter_and_seeded():
    c = sv.default_constants(h100())
    w = lone(n=20_000, c=1)
    d = sv.client_send_delays_s(w, c)
    assert 0.0 <= min(d) and max(d) < 1.5e-3
    assert max(d) - min(d) > 0.999 * 1.5e-3  # the whole width is used
    assert sum(d) / len(d) == pytest.approx(0.75e-3, abs=0.01e-3)  # mean of U(0, 1.5) ms
    # a uniform's decile: 10% of the draws below 0.15 ms (+/- 4 binomial sd of 20,000 draws)
    assert sum(x < 0.15e-3 for x in d) == pytest.approx(2_000, abs=170)
    assert sv.client_send_delays_s(w, c) == d  # seeded: the same run twice
    other = sv.client_send_delays_s(sv.Workload(input_len=w.input_len, output_len=w.output_len,
                                                num_requests=20_000, concurrency=1, point_id="other"), c)
    assert other != d
    assert sv.client_send_delays_s(w, c.replace(client_jitter_s=0.0)) == [0.0] * 20_000


def _first_prefill_steps(constants, n_clients=4):
    """The start times of the steps that prefilled each wave of a closed loop of equal requests (64 in, 40 out), on
    a synchronous scheduler: the CPU engine's, whose recorded bursts these steps are compared with (vLLM's CPU
    platform forces async scheduling off)."""
    s = h100()
    w = sv.Workload(input_len=sv.LengthDist(64), output_len=sv.LengthDist(40), num_requests=3 * n_clients,
                    concurrency=n_clients)
    trace: list[sv.StepRecord] = []
    eng = dataclasses.replace(sv.EngineConfig.from_setup(s), async_scheduling=False)
    sv.simulate(s, w, engine=eng, constants=constants, trace=trace)
    return [r for r in trace if r.prefill_tokens > 0]


def test_the_api_server_admits_a_burst_one_request_at_a_time_so_the_first_step_takes_one():
    """Four clients, equal requests (64 in, 40 out), three each.  With no frontend and no jitter the four arrive
    together and are prefilled in one step, wave after wave (3 steps of 4 x 64 tokens).  With the API server's
    2 ms a request taken one at a time, the four sent at t = 0 reach the engine core at 2, 4, 6 and 8 ms: the
    first step starts at 2 ms with one prompt (64 tokens, 7.48 ms on the H100), and the other three, which arrived
    during it, are prefilled together in the next: the first wave of one the CPU engine shows in three of four
    recorded bursts of 8 (benchmarks/data/cpu-burst-waves.json).  The waves finish together, so the pattern repeats."""
    c = sv.default_constants(h100()).replace(client_jitter_s=0.0)
    locked = _first_prefill_steps(c.replace(frontend_in_s=0.0))
    assert [r.prefill_tokens for r in locked] == [256, 256, 256]
    stairs = _first_prefill_steps(c)
    assert [r.prefill_tokens for r in stairs] == [64, 192] * 3
    sync = dataclasses.replace(sv.EngineConfig.from_setup(h100()), async_scheduling=False)  # as _first_prefill_steps
    first = sv.step_cost(h100(), c, prefill_tokens=[(64, 0)], engine=sync).time_s
    assert stairs[0].start_s == pytest.approx(2e-3, rel=1e-12)
    assert stairs[1].start_s == pytest.approx(2e-3 + first, rel=1e-12)  # the next step boundary: 8 ms < 9.48 ms
    assert 8e-3 < 2e-3 + first


BURSTS = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "cpu-burst-waves.json"


def _waves(first_token_ms: list[float]) -> list[int]:
    """Sizes of the groups of first tokens, a group being the tokens within 1 ms of its earliest."""
    waves: list[list[float]] = []
    for t in sorted(first_token_ms):
        if waves and t - waves[-1][0] < 1.0:
            waves[-1].append(t)
        else:
            waves.append([t])
    return [len(w) for w in waves]


def test_recorded_cpu_bursts_mostly_reach_the_engine_one_at_a_time_as_the_simulator_does():
    """Four live runs of cpu-tiny's C = 8 point (benchmarks/data/cpu-burst-waves.json, 2026-12-05/06): eight
    requests sent within 2.3 ms. In three the first request got its first token alone, 115-137 ms before the
    bulk of the others (waves 1+7, 1+1+5+1, 1+7): the API server handed it to the engine core first and the core started
    a step with it alone. In the fourth all eight came in one step (the core's loop woke after every hand-over), so
    a live run cannot assert the pattern (tests/engine/test_cpu_tiny.py does not). The simulator, with the API
    server taking requests one at a time, gives the majority's first wave: its first prefill step holds one
    request. Not the rest: the recorded lone first step took over 100 ms, far longer than the simulated CPU step
    (a few ms), so there the other seven arrived during it and came together, where the simulated ones reach the
    engine core 2 ms apart and trickle in one or two a step."""
    runs = json.loads(BURSTS.read_text())["runs"]
    waves = [_waves(r["first_token_ms"]) for r in runs]
    assert waves == [[1, 7], [1, 1, 5, 1], [1, 7], [8]]
    assert all(max(r["sent_ms"]) < 2.5 for r in runs)
    # in the three, the bulk of the burst (the largest wave) got its first tokens 115-137 ms after the first
    gaps = []
    for r, w in zip(runs, waves, strict=True):
        if w[0] == 1:
            firsts = sorted(r["first_token_ms"])
            bulk_start = sum(w[:w.index(max(w))])
            gaps.append(firsts[bulk_start] - firsts[0])
    assert len(gaps) == 3 and all(110 < g < 140 for g in gaps), gaps
    s = build_setup(hardware_ref="cpu", model_ref="roofline-tiny",
                    engine={"name": "vllm", "version": "0.32.0", "cpu_kvcache_space": 2**30,
                            "args": {"max_num_seqs": 8, "enforce_eager": True}})
    w = sv.Workload(input_len=sv.LengthDist(128), output_len=sv.LengthDist(64), num_requests=16, concurrency=8)
    trace: list[sv.StepRecord] = []
    sv.simulate(s, w, trace=trace)
    prefills = [r.prefill_tokens for r in trace if r.prefill_tokens > 0]
    assert prefills[0] == 128  # the first step: one request alone
    assert len(prefills) > 2 and all(n <= 2 * 128 for n in prefills[1:8])  # then one or two a step


def test_a_wide_client_turnaround_breaks_the_waves():
    """The same loop with a 14 ms turnaround spread (a slow client): the sends after the first wave differ by more
    than a step (~7.5 ms here), so those waves' prefills land in more, smaller steps."""
    spread = _first_prefill_steps(sv.default_constants(h100()).replace(client_jitter_s=14e-3))
    assert [r.prefill_tokens for r in spread[:2]] == [64, 192]  # the first requests are all sent at t = 0
    later = spread[2:]
    assert len(later) > 2 and all(r.prefill_tokens < 192 for r in later)
    assert sum(r.prefill_tokens for r in later) == 8 * 64


def test_the_queue_time_is_the_engines_own_not_the_frontends():
    s = h100()
    p = sv.simulate(s, lone())
    assert p.mean_queue_ms == pytest.approx(0.0, abs=1e-9)


# -- paged-KV reads vs weight streaming ------------------------------------------------------------------------

@pytest.mark.parametrize("read_mib, measured_us, rel", [(9, 21.135, 0.10), (33, 28.780, 0.05), (65, 43.563, 0.05)])
def test_the_attention_term_reproduces_published_paged_decode_kernel_times(read_mib, measured_us, rel):
    """FlashAttention-2 paged batch decode on H100 SXM (nvbench "GPU Time", onnxruntime PR #21414, Llama-3-70B
    shapes, 64 sequences): the model's one-layer attention cost is attn_layer_latency_s + bytes / (0.68 x 3.35
    TB/s)."""
    c = sv.default_constants(h100())
    model_us = (c.attn_layer_latency_s + read_mib * MiB / (c.kv_bw_efficiency * 3.35e12)) * 1e6
    assert model_us == pytest.approx(measured_us, rel=rel)


def test_kv_reads_and_weight_streaming_have_separate_efficiencies():
    s = h100()
    c = sv.default_constants(s)
    a = sv.step_cost(s, c, decode_ctx_tokens=[1000] * 64)
    b = sv.step_cost(s, c, decode_ctx_tokens=[2000] * 64)
    # the KV term's slope: KV bytes per token over 0.68 of the datasheet bandwidth; the weights at 0.8
    assert (b.kv_s - a.kv_s) == pytest.approx(64 * 1000 * s.kv_bytes_per_token_per_gpu / (0.68 * 3.35e12),
                                              rel=1e-9)
    one = sv.step_cost(s, c.replace(kv_bw_efficiency=None), decode_ctx_tokens=[1000] * 64)
    assert a.weights_s == pytest.approx(one.weights_s, rel=1e-12)
    assert a.kv_s / one.kv_s == pytest.approx(0.8 / 0.68, rel=1e-12)
    # the attention kernel's fixed cost: 32 layers x 15 us on top of the GEMMs' 3 us x (4 x 32 + 1); vLLM 0.26
    # schedules asynchronously, so the 64 sequences' CPU work (64 x 10 us) runs during the GPU's step and adds nothing
    assert a.overhead_s == pytest.approx(c.step_overhead_s + (4 * 32 + 1) * 3e-6 + 32 * 15e-6, rel=1e-12)
    # a synchronous engine does that CPU work between steps: it adds
    sync = dataclasses.replace(sv.EngineConfig.from_setup(s), async_scheduling=False)
    a_sync = sv.step_cost(s, c, decode_ctx_tokens=[1000] * 64, engine=sync)
    assert a_sync.overhead_s == pytest.approx(c.step_overhead_s + 64 * c.per_seq_overhead_s
                                              + (4 * 32 + 1) * 3e-6 + 32 * 15e-6, rel=1e-12)


# -- per-sequence step cost ------------------------------------------------------------------------------------

def a100(version, model="llama-3.1-8b", **env):
    engine = {"name": "vllm", "version": version, "args": {"max_model_len": 8192}}
    if env:
        engine["env"] = dict(env)
    return build_setup(hardware_ref="a100-sxm4-80gb", model_ref=model, engine=engine)


@pytest.mark.parametrize("version, env, kind, per_seq_us", [
    ("0.5.4", {}, "v0", 20.0),                       # synchronous output processing (Lambda's corpus release)
    ("0.4.0", {"model": "mistral-7b"}, "v0", 20.0),  # 0.4.0 cannot read Llama 3.1's rope_scaling
    ("0.6.0", {"VLLM_USE_V1": "0"}, "v0", 10.0),     # async output processing (blog.vllm.ai 2024-09-05)
    ("0.8.3", {}, "v1", 10.0),
    ("0.26.0", {}, "v1", 10.0),
])
def test_the_per_sequence_default_follows_the_engine_that_detokenises_in_its_loop(version, env, kind, per_seq_us):
    s = a100(version, **env)
    assert s.engine_kind == kind
    assert sv.default_constants(s).per_seq_overhead_s * 1e6 == pytest.approx(per_seq_us, rel=1e-12)


def test_a_v0_step_of_b_sequences_costs_one_published_detokenisation_each():
    # vLLM issue 5206 logged detokenize_incrementally at 19.3-21.2 us a call (0.3.0); the default is 20 us, and a
    # decode step of B running sequences pays it B times on top of the kernels' latencies and the step overhead:
    # Llama-3.1-8B has 32 layers, so (4 x 32 + 1) x 3 us + 32 x 15 us + 1 ms + B x 20 us
    s = a100("0.5.4")
    c = sv.default_constants(s)
    for b in (1, 32, 160):
        step = sv.step_cost(s, c, decode_ctx_tokens=[300] * b)
        assert step.overhead_s == pytest.approx((4 * 32 + 1) * 3e-6 + 32 * 15e-6 + 1e-3 + b * 20e-6, rel=1e-12)
    b32 = sv.step_cost(s, c, decode_ctx_tokens=[300] * 32).overhead_s
    b1 = sv.step_cost(s, c, decode_ctx_tokens=[300]).overhead_s
    assert (b32 - b1) / 31 * 1e6 == pytest.approx(20.0, rel=1e-9)
    assert 19.3 <= (b32 - b1) / 31 * 1e6 <= 21.2  # inside the published calls' range
    # the same step on a V1 engine pays the 10 us estimate
    v1 = a100("0.8.3")
    assert sv.step_cost(v1, decode_ctx_tokens=[300] * 32).overhead_s - \
        sv.step_cost(v1, decode_ctx_tokens=[300]).overhead_s == pytest.approx(31 * 10e-6, rel=1e-9)


# -- tensor parallelism ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("ranks, published_us", [(2, 10.0), (4, 16.88), (8, 33.7)])
def test_the_all_reduce_latency_reproduces_nccl_tests_small_message_figures(ranks, published_us):
    assert ring_allreduce_latency_s(ranks) * 1e6 == pytest.approx(published_us, rel=0.05)
    assert ring_allreduce_latency_s(1) == 0.0


def test_each_tp_degree_pays_its_own_ring_latency_per_all_reduce():
    for tp, lat in ((2, 9.6e-6), (4, 17.6e-6)):
        s = h100(tensor_parallel_size=tp)
        c = sv.default_constants(s)
        one_token = sv.step_cost(s, c, decode_ctx_tokens=[10])
        link = 900e9 / 2 * 0.8
        per_call = 2 * (tp - 1) / tp * 4096 * 2 / link + lat
        assert one_token.allreduce_s == pytest.approx(2 * 32 * per_call, rel=1e-9)


# -- engine args ------------------------------------------------------------------------------------------------

def _h100_at(version, **args):
    return build_setup(hardware_ref="h100-sxm", model_ref="llama-3.1-8b",
                       engine={"name": "vllm", "version": version, "args": dict(args)})


def test_multi_step_scheduling_is_refused_at_its_yaml_field():
    # vLLM 0.10.0 is the last release with --num-scheduler-steps (its vllm/engine/arg_utils.py; 0.10.1's has none)
    with pytest.raises(SetupValueError, match="num_scheduler_steps.*multi-step") as exc:
        sv.EngineConfig.from_setup(_h100_at("0.10.0", num_scheduler_steps=10))
    assert exc.value.field == "engine.args.num_scheduler_steps"
    assert "vLLM 0.10.0" in str(exc.value) and "0.6" not in str(exc.value)
    sv.EngineConfig.from_setup(_h100_at("0.10.0", num_scheduler_steps=1))  # single-step: what the model simulates


@pytest.mark.parametrize("version", ["0.10.1", "0.11.0", "0.26.0"])
@pytest.mark.parametrize("steps", [1, 10])
def test_num_scheduler_steps_is_refused_on_every_path_where_vllm_no_longer_has_it(version, steps):
    """0.10.1 removed the arg with V0's multi-step scheduling (vllm PR #22138 / #22779; read in the 0.10.0, 0.10.1
    and 0.11.0 sdists' vllm/engine/arg_utils.py): its command line refuses --num-scheduler-steps at any value, so
    the setup itself is refused, naming the release and the one that removed it."""
    with pytest.raises(SetupValueError) as exc:
        _h100_at(version, num_scheduler_steps=steps)
    assert exc.value.field == "engine.args.num_scheduler_steps"
    assert f"not an engine arg of vLLM {version}" in str(exc.value) and "0.10.1" in str(exc.value)


@pytest.mark.parametrize("key, value", [("speculative_config", {"num_speculative_tokens": 3}),
                                        # async scheduling is the default from vLLM 0.14.0
                                        # (engine_args/_releases.py): at the newest release read, false is the
                                        # value the model does not simulate
                                        ("async_scheduling", False), ("data_parallel_size", 2),
                                        ("enforce_eager", True), ("made_up_flag", 1)])
def test_every_arg_the_model_does_not_simulate_is_refused(key, value):
    with pytest.raises(SetupValueError) as exc:
        check_engine_args({key: value})
    assert exc.value.field == f"engine.args.{key}"


@pytest.mark.parametrize("key, value, words", [
    ("tensor_paralel_size", 2, "did you mean 'tensor_parallel_size'"),  # a typo: the nearest known name
    ("cpu_offload_gb", 10, "leave the GPU"), ("speculative_config", {"num_speculative_tokens": 3}, "speculative"),
    ("data_parallel_size", 2, "engine.replicas"), ("enable_expert_parallel", True, "expert parallelism")])
def test_an_arg_that_changes_every_model_is_refused_as_the_setup_is_built(key, value, words):
    """Refused on every path (roofline predict, the math check, the serving model), not only where the serving
    model runs: a roofline computed as if the arg were absent would be confidently wrong."""
    with pytest.raises(SetupValueError, match=words) as exc:
        h100(**{key: value})
    assert exc.value.field == f"engine.args.{key}"


def test_a_timing_only_arg_leaves_the_setup_and_is_refused_by_the_serving_model():
    """Multi-step and async scheduling and eager mode change the serving model's step timing only: the setup (its
    roofline, KV pool, closed forms) is built; the serving model refuses them."""
    # h100() is vLLM 0.26.0, where async scheduling is the default: false is the timing-only change; multi-step is
    # a 0.10.0 arg (gone from 0.10.1: refused by the setup there)
    for setup, key in ((_h100_at("0.10.0", num_scheduler_steps=10), "num_scheduler_steps"),
                       (h100(async_scheduling=False), "async_scheduling"), (h100(enforce_eager=True), "enforce_eager"),
                       (h100(pipeline_parallel_size=2), "pipeline_parallel_size")):
        with pytest.raises(SetupValueError) as exc:
            sv.EngineConfig.from_setup(setup)
        assert exc.value.field == f"engine.args.{key}"
    assert h100(cpu_offload_gb=0, data_parallel_size=1).engine_args["cpu_offload_gb"] == 0  # the modelled value


def test_args_without_a_timing_effect_and_eager_mode_on_the_cpu_engine_are_accepted():
    # host/port/model are the plugin's own (refused: tests/unit/test_plugin_owned_engine_args.py)
    check_engine_args({"disable_log_stats": True, "served_model_name": ["x"], "seed": 0, "async_scheduling": True,
                       "reasoning_parser": "qwen3", "otlp_traces_endpoint": "http://collector:4317"})
    check_engine_args({"enforce_eager": True}, device="cpu")
