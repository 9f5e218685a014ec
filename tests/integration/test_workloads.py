"""Workloads people measure with: length distributions, datasets, a shared prefix and a ramp-up, drawn once
(model/workload.py) for both the load generator and the serving model.

Every expected value is worked out by hand in the comment above its assertion.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from support.paths import DATA
from support.specs import tiny_cpu_spec
from support.word_tokenizer import word_tokenizer

from pytest_roofline.errors import SpecError, WorkloadError
from pytest_roofline.format.spec import load_spec
from pytest_roofline.measure.loadgen import LoadSpec
from pytest_roofline.measure.loadgen import datasets as mw
from pytest_roofline.measure.loadgen._prompts import BodyTemplate, PromptMaker, arrival_offsets
from pytest_roofline.model import serving as sv
from pytest_roofline.model import workload as wl
from pytest_roofline.model.setup import build_setup


def tiny_setup(**args):
    return build_setup(hardware_ref="cpu", model_ref="roofline-tiny",
                       engine={"name": "vllm", "version": "0.32.0", "cpu_kvcache_space": 2**30,
                               "args": {"max_num_seqs": 8, "enforce_eager": True, **args}},
                       workload={"input_len": 128, "output_len": 16})


def load_spec_for(**kw) -> LoadSpec:
    base = dict(model="tiny", token_id_range=(3, 300), mode="closed", concurrency=2, num_requests=40,
                warmup_requests=3, seed=7, point_id="closed-c2", input_len=128, output_len=16)
    base.update(kw)
    s = LoadSpec(**base)
    s.validate()
    return s


# ------------------------------------------------------------------------------------------ length draws


def test_uniform_draws_have_the_hand_worked_mean_and_reach_both_ends():
    d = wl.parse_length({"dist": "uniform", "min": 64, "max": 512})
    xs = d.draw(20000, seed=1)
    # uniform on the 449 integers 64..512: mean (64 + 512) / 2 = 288, sd sqrt((449**2 - 1) / 12) = 129.6, so the
    # mean of 20,000 draws has a standard error of 0.92 tokens; 4 tokens is > 4 standard errors
    assert abs(sum(xs) / len(xs) - 288) < 4
    # both ends are reached: P(missing 64 in 20,000 draws) = (448/449)**20000 = e**-44.6
    assert min(xs) == 64 and max(xs) == 512
    assert d.mean == 288  # the nominal length the decode roofline charges


def test_normal_draws_are_rounded_and_clipped_to_min_max():
    d = wl.parse_length({"dist": "normal", "mean": 100, "std": 50, "min": 80, "max": 120})
    xs = d.draw(20000, seed=2)
    assert all(isinstance(x, int) and 80 <= x <= 120 for x in xs)
    # a draw rounds to 80 or lower when x < 80.5: P = Phi((80.5 - 100) / 50) = Phi(-0.39) = 0.348; the same share
    # rounds to 120 or higher (x >= 119.5); standard error sqrt(0.348 * 0.652 / 20000) = 0.0034
    assert xs.count(80) / len(xs) == pytest.approx(0.348, abs=0.015)
    assert xs.count(120) / len(xs) == pytest.approx(0.348, abs=0.015)


def test_draws_are_a_function_of_the_request_index_and_phase():
    d = wl.LengthDist.uniform(1, 10_000)
    whole = d.draw(3000, seed=5, stream_id="p")
    # request i's length does not depend on how many are drawn, or where the draw starts (blocks of 1,024)
    assert d.draw(10, seed=5, stream_id="p", start=1020) == whole[1020:1030]
    assert d.draw(5, seed=5, stream_id="p") == whole[:5]
    # the warm-up phase, another point and another seed draw their own lengths
    assert d.draw(50, seed=5, stream_id="p", warmup=True) != whole[:50]
    assert d.draw(50, seed=5, stream_id="q") != whole[:50]
    assert d.draw(50, seed=6, stream_id="p") != whole[:50]


def test_length_file_in_order_and_with_replacement(tmp_path):
    assert wl.parse_length_file("12\n40\n# a comment\n\n9\n") == [12, 40, 9]
    assert wl.parse_length_file("[12, 40, 9]") == [12, 40, 9]
    with pytest.raises(WorkloadError) as e:
        wl.parse_length_file("12\nforty\n")
    assert e.value.line == 2
    seq = wl.LengthDist.from_values([12, 40, 9], order="sequential")
    # in order, cycling: 12, 40, 9, 12, 40, ...
    assert seq.draw(7) == [12, 40, 9, 12, 40, 9, 12]
    assert seq.draw(2, start=4) == [40, 9]
    smp = wl.LengthDist.from_values([12, 40, 9], order="sample")
    xs = smp.draw(30000, seed=3)
    assert set(xs) == {12, 40, 9}
    # with replacement: each value a third of the time, mean (12 + 40 + 9) / 3 = 20.33; sd of one draw
    # sqrt(((12-20.33)**2 + (40-20.33)**2 + (9-20.33)**2) / 3) = 14.0, standard error 0.081
    assert sum(xs) / len(xs) == pytest.approx(61 / 3, abs=0.4)


def test_bad_distributions_are_refused():
    for bad in ({"dist": "uniform", "min": 10}, {"dist": "uniform", "min": 10, "max": 5}, {"dist": "poisson"},
                {"dist": "normal", "mean": 10, "std": -1}, {"dist": "uniform", "min": 1, "max": 4, "std": 2}, 0):
        with pytest.raises(WorkloadError):
            wl.parse_length(bad)


# ------------------------------------------------------------------------------------------ one draw, two users


def test_loadgen_and_simulator_draw_the_same_per_request_lengths():
    inp = wl.LengthDist.uniform(16, 200)
    out = wl.LengthDist.normal(24, 8, 2, 64)
    spec = load_spec_for(input_dist=inp, output_dist=out)
    maker = PromptMaker(spec)
    n, w = spec.num_requests, spec.warmup_requests
    measured = range(w, w + n)  # the load generator numbers warm-up requests first
    prompts = maker.many(measured)
    sent_in = [len(p) for p in prompts]
    body = BodyTemplate(spec)
    sent_out = [json.loads(body.body(p, maker.lengths(i)[1]))["max_tokens"] for i, p in zip(measured, prompts)]
    # the simulator of the same point (seed, point id) simulates exactly these requests
    work = sv.Workload(input_len=inp, output_len=out, num_requests=n, concurrency=2, seed=spec.seed,
                       point_id=spec.point_id)
    sim = sv._Sim(tiny_setup(), work, sv.EngineConfig.from_setup(tiny_setup()),
                  sv.default_constants(tiny_setup()), True)
    assert sim.prompts == sent_in and sim.outs == sent_out
    assert len(set(sent_in)) > 10 and len(set(sent_out)) > 5  # they do vary
    # and the warm-up requests are drawn from their own phase
    assert [maker.lengths(i)[0] for i in range(w)] == spec.lengths(w, warmup=True).input_lens


def test_fixed_lengths_keep_the_prompts_they_always_had():
    plain = load_spec_for()
    assert not plain.variable
    assert [len(p) for p in PromptMaker(plain).many(range(5))] == [128] * 5
    assert json.loads(BodyTemplate(plain).body([5, 6]))["max_tokens"] == 16


# ------------------------------------------------------------------------------------------ datasets


def _word_tokenizer(tmp_path: Path, words: list[str]) -> Path:
    return word_tokenizer(tmp_path, words)


def test_sharegpt_takes_the_first_turn_and_the_second_turns_length(tmp_path):
    data = [
        {"conversations": [{"from": "human", "value": "what is a roofline"},
                           {"from": "gpt", "value": "a bound on throughput"}]},
        {"conversations": [{"from": "human", "value": "only one turn"}]},  # skipped, as vllm bench does
        {"conversations": [{"from": "human", "value": "why"}, {"from": "gpt", "value": "memory"},
                           {"from": "human", "value": "ignored third turn"}]},
    ]
    entries = wl.parse_sharegpt(json.dumps(data))
    assert [(e.prompt, e.completion) for e in entries] == [("what is a roofline", "a bound on throughput"),
                                                             ("why", "memory")]
    f = tmp_path / "sg.json"
    f.write_text(json.dumps(data))
    text = " ".join(t["value"] for c in data for t in c["conversations"])
    tok = _word_tokenizer(tmp_path, text.split())
    ds = {"path": str(f), "source": "sg.json", "format": "sharegpt", "sha256": wl_sha(f), "order": "sequential",
          "tokenizer": str(tok)}
    r = mw.resolve({"dataset": ds, "output_len": 10}, for_load=True)
    # "what is a roofline" = 4 words, "why" = 1; outputs: "a bound on throughput" = 4, "memory" = 1
    assert r.dataset.input_lens == (4, 1) and r.dataset.output_lens == (4, 1)
    assert [len(p) for p in r.dataset_prompts] == [4, 1] and not r.dataset.estimated
    # without a tokenizer the serving model gets a chars/4 estimate, flagged: ceil(18 / 4) = 5, ceil(3 / 4) = 1
    est = mw.resolve({"dataset": {**ds, "tokenizer": None}})
    assert est.dataset.input_lens == (5, 1) and est.dataset.estimated
    with pytest.raises(WorkloadError, match="needs a tokenizer"):
        mw.resolve({"dataset": {**ds, "tokenizer": None}}, for_load=True)


def wl_sha(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_jsonl_prompts_with_optional_output_lengths_and_a_bad_line():
    text = '{"prompt": "a b c"}\n\n{"prompt": "d e", "max_tokens": 7}\n{"text": "f", "n": 3}\n'
    entries = wl.parse_jsonl("\n".join(text.splitlines()[:3]))
    assert len(entries) == 2 and entries[1].line == 3 and entries[1].output_len == 7 and entries[0].output_len is None
    # configurable field names: line 4's "text" and "n"
    other = wl.parse_jsonl(text.splitlines()[3], prompt_field="text", output_fields=("n",))
    assert other[0].prompt == "f" and other[0].output_len == 3
    with pytest.raises(WorkloadError) as e:  # line 4 has no "prompt"
        wl.parse_jsonl(text)
    assert e.value.line == 4
    with pytest.raises(WorkloadError) as e:
        wl.parse_jsonl('{"prompt": "ok"}\n{"prompt": "broken"\n')
    assert e.value.line == 2 and ":2:" in str(e.value)


def test_dataset_lengths_drive_the_requests_of_both_users(tmp_path):
    ds = wl.DatasetLengths((5, 9, 2), (None, 4, None), order="sequential")
    lens = wl.request_lengths(5, input_len=wl.LengthDist(100), output_len=wl.LengthDist(16), dataset=ds)
    # entries 0, 1, 2, 0, 1 in order; entry 1 carries its own output length 4, the others the workload's 16
    assert lens.input_lens == [5, 9, 2, 5, 9] and lens.output_lens == [16, 4, 16, 16, 4]
    prompts = ((10, 11, 12, 13, 14), tuple(range(20, 29)), (30, 31))
    spec = load_spec_for(dataset=ds, dataset_prompts=prompts, warmup_requests=0, num_requests=5)
    maker = PromptMaker(spec)
    assert maker.many(range(4)) == [list(prompts[0]), list(prompts[1]), list(prompts[2]), list(prompts[0])]
    work = sv.Workload(input_len=wl.LengthDist(100), output_len=wl.LengthDist(16), num_requests=5, concurrency=2,
                       dataset=ds, seed=spec.seed, point_id=spec.point_id)
    sim = sv._Sim(tiny_setup(), work, sv.EngineConfig.from_setup(tiny_setup()),
                  sv.default_constants(tiny_setup()), True)
    assert sim.prompts == lens.input_lens and sim.outs == lens.output_lens


# ------------------------------------------------------------------------------------------ shared prefix


def test_prefix_share_prompts_share_exactly_the_prefix_tokens():
    spec = load_spec_for(prefix_share=0.5, input_dist=wl.LengthDist.uniform(40, 120))
    maker = PromptMaker(spec)
    idx = list(range(spec.warmup_requests, spec.warmup_requests + 12))
    prompts = maker.many(idx)
    common = maker.prefix_tokens(60)
    for p in prompts:
        k = math.floor(0.5 * len(p))  # floor(share x input_len) leading tokens are the point's one prefix
        assert p[:k] == common[:k]
    # a fixed length of 100 and share 0.5: every prompt starts with the same 50 tokens, and (tails being
    # uniform draws over 297 ids) no two prompts agree on token 51
    fixed = PromptMaker(load_spec_for(prefix_share=0.5, input_len=100)).many(range(10))
    assert all(p[:50] == fixed[0][:50] for p in fixed)
    assert len({p[50] for p in fixed}) > 5 and len({tuple(p) for p in fixed}) == 10


def test_simulated_prefix_hit_rate_is_the_block_rounded_share():
    setup = tiny_setup(block_size=16, enable_prefix_caching=True)
    eng = sv.EngineConfig.from_setup(setup)
    assert eng.enable_prefix_caching and eng.block_size == 16

    def hit_rate(warmup: int) -> float:
        w = sv.workload_for_point(setup, concurrency=2, num_requests=10, input_len=100, output_len=8,
                                  prefix_share=0.5, warmup_requests=warmup)
        return sv.simulate(setup, w, engine=eng).prefix_cache_hit_rate

    # 100-token prompts, share 0.5: a 50-token prefix, of which vLLM caches whole 16-token blocks: 3 blocks =
    # 48 tokens of each prompt. After a warm-up every request hits 48 of 100: 0.48
    assert hit_rate(2) == pytest.approx(0.48, abs=1e-12)
    # without a warm-up the first request finds nothing cached: 9 x 48 / (10 x 100) = 0.432
    assert hit_rate(0) == pytest.approx(0.432, abs=1e-12)
    # never the last prompt token: a 16-token prompt whose whole first block is shared hits nothing
    # (at most 15 tokens may come from the cache, floor(15 / 16) = 0 blocks)
    assert wl.prefix_cache_hits([16, 16], [16, 16], block_size=16, warm_prefix=16) == [0, 0]
    assert wl.prefix_cache_hits([40, 40], [33, 33], block_size=16) == [0, 32]


# ------------------------------------------------------------------------------------------ ramp-up


def test_ramp_up_offsets_match_the_closed_form():
    inf = float("inf")
    # linear 1 -> 4 req/s over 4 requests: rates 1, 2, 3, 4 (vLLM: start + (end - start) x i / (n - 1)); the gap
    # before request i is 1 / rate_i: offsets 0, 1/2, 1/2 + 1/3, 1/2 + 1/3 + 1/4
    lin = wl.arrival_offsets_s(rate_req_per_s=1, burstiness=inf, count=4, ramp_up=wl.RampUp("linear", 1, 4))
    assert list(lin) == pytest.approx([0, 0.5, 0.5 + 1 / 3, 0.5 + 1 / 3 + 0.25])
    # exponential 1 -> 8 over 4: rates 1 x 8**(i/3) = 1, 2, 4, 8: offsets 0, 0.5, 0.75, 0.875
    exp = wl.arrival_offsets_s(rate_req_per_s=1, burstiness=inf, count=4, ramp_up=wl.RampUp("exponential", 1, 8))
    assert list(exp) == pytest.approx([0, 0.5, 0.75, 0.875])
    # Poisson gaps at those rates: E[t_3] = 1/2 + 1/3 + 1/4 = 1.0833, over 4,000 seeds (sd of t_3 is
    # sqrt(1/4 + 1/9 + 1/16) = 0.651, standard error 0.0103)
    import numpy as np

    last = [wl.arrival_offsets_s(rate_req_per_s=1, count=4, seed=s, ramp_up=wl.RampUp("linear", 1, 4))[-1]
            for s in range(4000)]
    assert float(np.mean(last)) == pytest.approx(1.0833, abs=0.045)
    with pytest.raises(WorkloadError):
        wl.arrival_offsets_s(rate_req_per_s=1, horizon_s=10, ramp_up=wl.RampUp("linear", 1, 4))


def test_loadgen_and_simulator_see_the_same_ramped_arrivals():
    ramp = wl.RampUp("linear", 2.0, 20.0)
    spec = load_spec_for(mode="open", concurrency=None, rate_req_s=5.0, num_requests=30, ramp_up=ramp)
    work = sv.Workload(input_len=wl.LengthDist(128), output_len=wl.LengthDist(16), num_requests=30,
                       arrival=sv.ArrivalKind.POISSON, rate_req_per_s=5.0, seed=spec.seed, point_id=spec.point_id,
                       ramp_up=ramp)
    assert list(arrival_offsets(spec)) == sv._arrival_times(work)
    # the ramp shortens the gaps: the last 10 arrive faster than the first 10
    t = arrival_offsets(spec)
    assert t[29] - t[20] < t[9] - t[0]


# ------------------------------------------------------------------------------------------ the YAML


def _yaml(tmp_path: Path, workload: str) -> Path:
    f = tmp_path / "w.yaml"
    f.write_text(tiny_cpu_spec(workload, concurrency=[1, 2], requests=8))
    return f


def test_yaml_distributions_and_their_errors(tmp_path):
    (tmp_path / "lens.txt").write_text("12\n40\n9\n")
    spec = load_spec(_yaml(tmp_path, "  input_len: {dist: uniform, min: 64, max: 128}\n"
                                     "  output_len: {dist: file, path: lens.txt, order: sequential}\n"
                                     "  prefix_share: 0.25\n"))
    w = spec.workload
    assert w["input_len"] == 96 and w["input_dist"] == {"dist": "uniform", "min": 64, "max": 128}
    assert w["output_dist"]["values"] == [12, 40, 9] and len(w["output_dist"]["sha256"]) == 64
    r = mw.resolve(w)
    assert r.input_dist == wl.LengthDist.uniform(64, 128) and r.prefix_share == 0.25
    for text, line, words in [
        ("  input_len: 64\n  output_len: {dist: gamma, mean: 3}\n", 6, "dist must be one of"),
        ("  input_len: {dist: file, path: nope.txt}\n", 5, "no such file"),
        ("  input_len: {dist: uniform, min: 64}\n", 5, "needs max"),
        ("  prefix_share: 1.5\n", 5, "[0, 1)"),
        ("  ramp_up: {strategy: cubic, start_rps: 1, end_rps: 2}\n", 5, "linear or exponential"),
    ]:
        with pytest.raises(SpecError) as e:
            load_spec(_yaml(tmp_path, text))
        assert e.value.line == line and words in str(e.value), str(e.value)


def test_yaml_dataset_with_a_bad_jsonl_line_names_both_lines(tmp_path):
    (tmp_path / "p.jsonl").write_text('{"prompt": "one"}\n{"prompt": "two"}\n{"prompt": 3}\n')
    with pytest.raises(SpecError) as e:
        load_spec(_yaml(tmp_path, "  dataset: {path: p.jsonl}\n"))
    assert e.value.line == 5 and "p.jsonl:3" in str(e.value)
    (tmp_path / "p.jsonl").write_text('{"prompt": "one two three"}\n{"prompt": "four", "output_len": 5}\n')
    spec = load_spec(_yaml(tmp_path, "  dataset: {path: p.jsonl}\n  output_len: 8\n"))
    assert spec.workload["dataset"]["entries"] == 2 and spec.workload["dataset"]["format"] == "jsonl"


def test_shipped_sharegpt_sample_parses():
    entries = wl.parse_sharegpt((DATA / "sharegpt_sample.json").read_text())
    assert len(entries) == 20 and all(e.prompt and e.completion for e in entries)


def test_the_scorers_simulation_takes_the_files_dataset_and_distributions(tmp_path):
    from pytest_roofline import scoring

    (tmp_path / "p.jsonl").write_text('{"prompt": "one two three"}\n{"prompt": "four five", "output_len": 5}\n')
    tok = _word_tokenizer(tmp_path, "one two three four five".split())
    spec = load_spec(_yaml(tmp_path, f"  dataset: {{path: p.jsonl, tokenizer: {tok}}}\n  output_len: 8\n"))
    setup = build_setup(hardware_ref=spec.hardware, model_ref=spec.model, engine=spec.engine, workload=spec.workload)
    sweep = scoring.serving_sweep_for(spec, None, setup)
    point = next(p for p in sweep.points if p.id == "closed-c2")
    work = sweep.workload(point)
    # "one two three" = 3 tokens (no output length: the workload's 8), "four five" = 2 tokens with its own 5
    assert work.dataset.input_lens == (3, 2) and work.dataset.output_lens == (None, 5)
    lens = wl.request_lengths(4, input_len=work.input_len, output_len=work.output_len, dataset=work.dataset)
    assert lens.input_lens == [3, 2, 3, 2] and lens.output_lens == [8, 5, 8, 5]
    assert work.warmup_requests == 2  # closed loop: one warm-up request per client (measure/plan.py)


def test_the_workload_as_run_is_recorded_with_its_realised_lengths():
    from pytest_roofline.measure.loadgen import RequestRecord

    shape = mw.ResolvedWorkload(input_dist=wl.LengthDist.uniform(10, 30), prefix_share=0.5)
    recs = [RequestRecord(index=i, request_id=str(i), warmup=i == 0, input_len=n, output_len=4)
            for i, n in enumerate([99, 10, 20, 30])]
    d = {**shape.to_dict(), "realised": mw.realised(recs)}
    assert d["input_len"] == {"dist": "uniform", "min": 10, "max": 30} and d["prefix_share"] == 0.5
    # the warm-up request (99) is left out: lengths 10, 20, 30 have mean 20, p50 20 and p99 at rank 0.99 x 2 =
    # 1.98: 20 + 0.98 x 10 = 29.8
    assert d["realised"]["input_len"]["mean"] == 20 and d["realised"]["input_len"]["p50"] == 20
    assert d["realised"]["input_len"]["p99"] == pytest.approx(29.8)
    json.dumps(d)
