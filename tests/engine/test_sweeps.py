"""Sweeps and loads against the session's shared tiny engine (tests/engine/conftest.py): what a point sends,
measures and records, with `pytest --endpoint URL` or the sweep's own functions.

None of these checks how the engine was started, so none starts one: they send requests to the engine that
`pytest --gpu cpu predictions/cpu-tiny.yaml` would start (tests/engine/test_cpu_tiny.py runs that start itself).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import shutil
from pathlib import Path

import pytest
from support.engine import CHAT_TEMPLATE, CPU_TINY, CPU_TINY_RUN_S, KV_TOKENS_1GIB, SHORT_RUN_S, assert_settled
from support.paths import DATA, RECORDED
from support.patience import bound_s

from pytest_roofline.format.spec import load_spec
from pytest_roofline.measure import loadgen, sweep
from pytest_roofline.measure.engine import metrics as scrape
from pytest_roofline.measure.engine import tiny_model as tinymodel
from pytest_roofline.measure.loadgen import LoadSpec
from pytest_roofline.measure.loadgen import datasets as mw
from pytest_roofline.measure.plan import PointPlan
from pytest_roofline.model import workload as wl

#: the fixed sweep of cpu-tiny.yaml, as recorded by `pytest --gpu cpu` (its requests per point: 16 x concurrency)
CPU_TINY_RECORDING = RECORDED / "cpu-tiny-2026-12-05.results.json"


def _endpoint_run(pytester: pytest.Pytester, engine, out: Path, *args: str, typical_s: float) -> pytest.RunResult:
    return pytester.runpytest_subprocess("--endpoint", engine.base_url, "--endpoint-key-env", "", "--roofline-out",
                                         str(out), "-p", "no:html", *args, timeout=bound_s(typical_s))


def test_endpoint_mode_runs_only_the_selected_points(pytester: pytest.Pytester, tmp_path: Path, tiny_engine) -> None:
    """`--endpoint URL` against a running CPU vLLM: selecting one prediction measures only its point, and the
    engine's KV capacity is read from /metrics (cache_config_info) since there is no startup log to read."""
    shutil.copy(CPU_TINY, pytester.path / "cpu-tiny.roofline.yaml")
    out = tmp_path / "run"
    result = _endpoint_run(pytester, tiny_engine, out, "cpu-tiny.roofline.yaml::kv-tokens",
                           "cpu-tiny.roofline.yaml::littles-law[concurrency=2]", typical_s=SHORT_RUN_S)
    assert_settled(result.parseoutcomes(), 2, text=result.stdout.str())
    results = json.loads((out / "cpu-tiny.roofline" / "results.json").read_text())
    assert [p["id"] for p in results["points"]] == ["closed-c2"]
    assert results["engine_report"]["kv_cache_tokens"] == KV_TOKENS_1GIB == 2_097_152
    assert results["setup"]["mode"] == "endpoint"


def test_cpu_tiny_adaptive_reaches_the_fixed_verdicts_with_fewer_requests(pytester: pytest.Pytester, tmp_path,
                                                                          tiny_engine):
    """cpu-tiny live with ``sweep.adaptive: true``: the same outcomes as the fixed sweep (21 pass, the noisy
    client-side knee a non-strict xfail either way: test_cpu_tiny.py), from fewer requests than the fixed sweep's
    16 × (1 + 2 + 4 + 8 + 16 + 32) = 1,008 (read from its committed recording), the points from the top down.
    Against the shared engine (`--endpoint`): the file's engine, already running; how it started is not the point."""
    text = CPU_TINY.read_text().replace("  warmup: 4\n", "  warmup: 4\n  adaptive: true\n")
    assert "adaptive: true" in text
    pytester.path.joinpath("cpu-tiny-adaptive.roofline.yaml").write_text(text)
    out = tmp_path / "run"
    result = _endpoint_run(pytester, tiny_engine, out, typical_s=CPU_TINY_RUN_S)
    outcomes = result.parseoutcomes()
    assert_settled(outcomes, 21, xfail=1, text=result.stdout.str())

    results = json.loads((out / "cpu-tiny-adaptive.roofline" / "results.json").read_text())
    points = results["points"]
    assert [p["concurrency"] for p in points] == [32, 16, 8, 4, 2, 1]
    fixed = json.loads(CPU_TINY_RECORDING.read_text())
    fixed_requests = sum(p["client"]["completed"] for p in fixed["points"])
    assert fixed["status"] == "complete" and fixed_requests == 1008
    completed = sum(p["client"]["completed"] for p in points)
    assert completed < fixed_requests
    for p in points:
        a = p["adaptive"]
        assert a["cap_requests"] == 16 * p["concurrency"] and p["client"]["completed"] <= a["cap_requests"]
        assert a["level"] == pytest.approx(1 - 0.05 / a["planned_looks"])
    c32 = next(p for p in points if p["concurrency"] == 32)["adaptive"]["targets"]
    assert [(t["prediction_id"], t["state"]) for t in c32] == [("queueing-past-the-cap", "inside")]


LIVE_SPEC = """
hardware: cpu
model: roofline-tiny
engine:
  name: vllm
  cpu_kvcache_space: 1 GiB
  args: {dtype: bfloat16, max_model_len: 1024, enforce_eager: true, max_num_seqs: 8}
  startup_timeout: 5 min
workload: {input_len: 128, output_len: 16}
sweep: {mode: closed, concurrency: [2], requests_per_point: 12, warmup: 2, repeats: 2}
predictions:
  - {id: ttft-loose, quantity: ttft_p50, at: {concurrency: 2}, predicted: 1 s, tolerance: "<= 60 s"}
"""


def test_repeats_and_intervals_from_a_live_run(pytester: pytest.Pytester, tmp_path: Path, tiny_engine) -> None:
    """`sweep.repeats: 2` on the CPU engine: both repeats kept (objects and per-request files), every interval of
    the point taken over the two repeats, the steady window of each repeat recorded. (The shared engine, with
    `--endpoint`: repeats are a property of the sweep, not of the engine's start.)"""
    (pytester.path / "live.roofline.yaml").write_text(LIVE_SPEC)
    out = tmp_path / "run"
    result = _endpoint_run(pytester, tiny_engine, out, "live.roofline.yaml", typical_s=SHORT_RUN_S)
    assert_settled(result.parseoutcomes(), 1, text=result.stdout.str())
    point = json.loads((out / "live.roofline" / "results.json").read_text())["points"][0]
    client = point["client"]
    assert len(client["repeats"]) == 2 and client["completed"] == 24  # 2 × 12 measured requests
    assert [(out / "live.roofline" / f).exists() for f in point["requests_files"]] == [True, True]
    iv = client["intervals"]["ttft_ms.p50"]
    assert iv["method"] == "repeats" and iv["n"] == 2 and client["intervals_window"] == "run"
    for rep in client["repeats"]:
        # 12 requests a repeat: too few for a steady state (issue 20: needs 20), said so; the whole run stands in
        assert rep["steady_window"]["method"] == "none" and "too few" in rep["steady_window"]["reason"]
        assert rep["intervals"]["ttft_ms.p50"]["method"] == "order-statistic"
    # the point's scored TTFT p50 is the mean of the repeats' whole-run medians (what vllm bench serve would print)
    mean = (client["repeats"][0]["ttft_ms"]["p50"] + client["repeats"][1]["ttft_ms"]["p50"]) / 2
    assert iv["estimate"] == pytest.approx(mean)


def test_live_point_records_its_measurement_window(tmp_path: Path, tiny_engine) -> None:
    """Against the real CPU vLLM: the point's duration_s is the window its throughputs are rates over (a live point
    once recorded ``"duration_s": null``: the sweep read ``LoadResult.duration_s``, which does not exist)."""
    spec = load_spec(CPU_TINY)
    completions, output_len = 6, 16
    plan = PointPlan(id="closed-c2", mode="closed", concurrency=2, rate_req_s=None, num_requests=completions,
                     duration_s=None, warmup_requests=2, input_len=32, output_len=output_len)
    point = sweep.run_point(tiny_engine, plan, spec, out_dir=tmp_path,
                            token_id_range=(tinymodel.PROMPT_TOKEN_ID_MIN, tinymodel.PROMPT_TOKEN_ID_MAX + 1),
                            contamination=spec.thresholds.contamination)
    client = point["client"]
    assert client["completed"] == completions and client["token_count_mismatches"] == 0
    duration = point["duration_s"]
    assert isinstance(duration, float) and duration > 0
    # every completed request returned output_len tokens: the output throughput is their sum over this window
    assert client["output_throughput_tok_s"] * duration == pytest.approx(completions * output_len, rel=1e-9)
    assert client["request_throughput_req_s"] * duration == pytest.approx(completions, rel=1e-9)
    # the window (measured requests only) lies inside the wall-clock span of the run (warm-up included)
    t0, t1 = (dt.datetime.strptime(point[k], "%Y-%m-%dT%H:%M:%S.%fZ") for k in ("started_at", "finished_at"))
    assert duration <= (t1 - t0).total_seconds() + 1e-3
    # and the file on disk says the same
    assert json.loads(json.dumps(point))["duration_s"] == duration


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_cpu_engine_counts_exactly_the_drawn_prompt_tokens(tmp_path, tiny_model, tiny_engine):
    """The server's prompt-token counter rises by the sum of the drawn input lengths (warm-up included), for a
    uniform length and for a JSONL dataset tokenized with the tiny model's own tokenizer; and through the chat API
    a ShareGPT file's texts cost, per request, the tokenizer + chat template count the model side charged.
    (The shared engine carries the chat template for this.)"""
    e, model = tiny_engine, tiny_model
    assert e.config.extra_args[-2:] == ["--chat-template", CHAT_TEMPLATE]

    def run(**kw):
        spec = LoadSpec(model=e.served_model_name, token_id_range=(tinymodel.PROMPT_TOKEN_ID_MIN,
                                                                   tinymodel.PROMPT_TOKEN_ID_MAX + 1),
                        mode="closed", concurrency=2, num_requests=6, warmup_requests=2, output_len=4,
                        seed=11, point_id="wl", **kw)
        before = scrape.scrape_metrics(e.base_url, model_name=e.served_model_name)
        result = loadgen.run_load(e.base_url, spec)
        after = scrape.scrape_metrics(e.base_url, model_name=e.served_model_name)
        assert all(r.ok for r in result.records), [r.error for r in result.records]
        server = scrape.summarize(before, after, [])
        return result, server

    res, server = run(input_dist=wl.LengthDist.uniform(20, 300))
    drawn = [r.input_len for r in res.records]
    assert len(set(drawn)) > 2
    assert [r.prompt_tokens for r in res.records] == drawn  # each request: exactly its drawn length
    assert server["prompt_tokens"] == sum(drawn)

    f = tmp_path / "p.jsonl"
    f.write_text("\n".join(json.dumps({"prompt": p, "output_len": n}) for p, n in [
        ("The quick brown fox jumps over the lazy dog.", 3), ("Little's law: throughput times latency.", 5),
        ("Prefill is compute bound; decode is memory bound at small batch sizes.", 2)]) + "\n")
    shape = mw.resolve({"dataset": {"path": str(f), "source": "p.jsonl", "format": "jsonl", "sha256": _sha256(f),
                                    "order": "sequential"}}, model_dir=model, for_load=True)
    res, server = run(**shape.load_kwargs())
    # 8 requests take entries 0, 1, 2, 0, 1, 2, ... (warm-up 0, 1, then measured 0, 1, 2, 0, 1, 2)
    lens = shape.dataset.input_lens
    expect = [lens[0], lens[1]] + [lens[k % 3] for k in range(6)]
    assert [r.input_len for r in res.records] == expect
    assert server["prompt_tokens"] == sum(expect)
    assert [r.completion_tokens for r in res.records][2:] == [3, 5, 2, 3, 5, 2]

    # a ShareGPT file through the chat API (tests/integration/test_chat_datasets.py): each first human turn is the
    # user message; the model side counted the template the server was started with, rendered by transformers.
    # The replies are made 24 words long here: the tiny model's 300-token vocabulary has 131 byte pieces that
    # decode to no visible text, so a 2-token reply ("hi") streamed no content at all about one time in five
    # (a request without a token is an error), and a greedy one never did (it repeats a byte piece). A reply
    # of >= 24 sampled tokens is all byte pieces with a chance below (131/300)**24 ~ 2e-9.
    convs = json.loads((DATA / "chat_dataset.sharegpt.json").read_text(encoding="utf-8"))
    for c in convs:
        for turn in c["conversations"]:
            if turn["from"] == "gpt":
                turn["value"] = " ".join(["throughput"] * 24)
    sg = tmp_path / "chat_dataset.long.sharegpt.json"
    sg.write_text(json.dumps(convs), encoding="utf-8")
    chat = mw.resolve({"api": "chat", "dataset": {"path": str(sg), "source": sg.name, "format": "sharegpt",
                                                  "sha256": _sha256(sg), "order": "sequential"}},
                      model_dir=model, for_load=True, chat_template=CHAT_TEMPLATE)
    assert chat.chat is not None and chat.chat.method == "chat template" and not chat.dataset.estimated
    from tokenizers import Tokenizer

    # independently: the tiny tokenizer's count of the template written out by hand, "user: <text>\nassistant:"
    tok = Tokenizer.from_file(str(model / "tokenizer.json"))
    lens = tuple(len(tok.encode(f"user: {t}\nassistant:", add_special_tokens=False).ids)
                 for t in chat.dataset_texts)
    assert chat.dataset.input_lens == lens
    assert min(chat.dataset.output_lens) >= 24
    res, server = run(api="chat", **chat.load_kwargs())
    expect = [lens[0], lens[1]] + [lens[k % 3] for k in range(6)]  # warm-up 0, 1, then 0, 1, 2, 0, 1, 2
    assert [r.input_len for r in res.records] == expect
    assert [r.prompt_tokens for r in res.records] == expect  # the server's usage, request by request
    assert server["prompt_tokens"] == sum(expect)
    outs = chat.dataset.output_lens  # the gpt turns' token counts, sent as max_completion_tokens
    assert [r.completion_tokens for r in res.records] == [outs[0], outs[1]] + [outs[k % 3] for k in range(6)]
