"""The engine's lifecycle against the real CPU vLLM: ready, its KV report from the log and /metrics, streamed
completions, the same server as an endpoint; then an engine killed under the plugin and parents that die.

The first four share the session's tiny engine (tests/engine/conftest.py); the two that kill engines start their
own (the killed one is also the in-process ``engine.python`` launch with the chat API). The stand-in twins of
these tests (no vLLM) are in tests/integration/test_engine.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import httpx
import pytest
from support.engine import (
    CHAT_OUT,
    CHAT_REQUEST_S,
    CHAT_TEMPLATE,
    ENGINE_START_S,
    KV_TOKENS_1GIB,
    ORPHAN_STOP_S,
    PROCESSES_GONE_S,
    TWO_ENGINES_START_S,
    child_env,
    needs_vllm,
    port_free,
    processes_left,
    sigint_as_ctrl_c,
    tiny_engine_config,
)
from support.fake_vllm import live_pids
from support.patience import bound_s, read_line, wait_process, wait_until

from pytest_roofline.measure import loadgen
from pytest_roofline.measure.engine import Endpoint, Engine, EngineDied, EngineError, process_group_members
from pytest_roofline.measure.engine.metrics import MetricsScraper
from pytest_roofline.measure.engine.tiny_model import PROMPT_TOKEN_ID_MAX, PROMPT_TOKEN_ID_MIN, prompt_token_ids
from pytest_roofline.model.tiny import TINY_MODEL

pytestmark = needs_vllm

#: one streamed completion of at most 200 prompt and 20 output tokens on the tiny engine
COMPLETION_S = 1.0
#: the first /metrics snapshot MetricsScraper.start() takes before it returns
METRICS_FETCH_S = 0.1
#: a parent that got SIGINT: KeyboardInterrupt, then atexit stops its engine (SIGTERM to the group) and it exits
PARENT_EXIT_S = 5.0


# --------------------------------------------------------------------------- the shared engine


def test_engine_ready(tiny_engine):
    engine = tiny_engine
    assert engine.is_alive()
    engine.check_alive()
    assert engine.served_model_name == engine.config.served_model_name == TINY_MODEL
    assert engine.max_model_len == 1024
    assert httpx.get(engine.base_url + "/health", timeout=bound_s(0.05)).status_code == 200
    pids = engine.pids()
    assert engine.pid in pids and len(pids) >= 3  # API server, EngineCore, worker
    assert os.getpgid(engine.pid) == engine.pid != os.getpgid(0)  # own process group
    # this process's session: a session of its own is an autogroup of its own, and the load generator then got a
    # sliver of a CPU beside the engine's busy-polling (measure.engine's docstring; benchmarks/held_concurrency.py)
    assert os.getsid(engine.pid) == os.getsid(0)
    assert 0 < engine.startup_s <= bound_s(ENGINE_START_S), "the start took longer than its own bound allowed"


def test_engine_report_kv_tokens_from_log_and_metrics(tiny_engine):
    r = tiny_engine.report()
    assert r["kv_cache_tokens"] == KV_TOKENS_1GIB == 2_097_152
    assert r["sources"]["log"]["kv_cache_tokens"] == KV_TOKENS_1GIB
    cc = r["sources"]["metrics"]["cache_config"]
    assert int(cc["num_gpu_blocks"]) * int(cc["block_size"]) == KV_TOKENS_1GIB
    assert r["num_gpu_blocks"] == 16384 and r["block_size"] == 128  # CPU default block size 128
    assert r["cross_check"]["ok"] is True, r["cross_check"]
    assert {c["check"] for c in r["cross_check"]["checks"]} >= {"tokens", "tokens_label"}
    assert r["kv_device"] == "CPU"
    assert r["available_kv_cache_gib"] == 1.0
    assert r["max_concurrency"] == 2048.0 and r["max_concurrency_tokens_per_request"] == 1024
    import vllm

    assert r["version"] == vllm.__version__ and r["version_source"] == "/version"
    json.dumps(r)  # serialisable for the results file


def _stream_completion(engine, prompt_len: int, max_tokens: int, offset: int = 0):
    body = {"model": engine.served_model_name, "prompt": prompt_token_ids(prompt_len, offset=offset),
            "max_tokens": max_tokens, "ignore_eos": True, "temperature": 0.0, "stream": True,
            "stream_options": {"include_usage": True}}
    chunks, usage = 0, None
    with httpx.stream("POST", engine.base_url + "/v1/completions", json=body, timeout=bound_s(COMPLETION_S)) as r:
        assert r.status_code == 200
        for line in r.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            d = json.loads(line[6:])
            if d.get("usage"):
                usage = d["usage"]
            if d.get("choices"):
                chunks += 1
    return chunks, usage


def test_engine_streamed_completion_lengths_and_metrics(tiny_engine):
    engine = tiny_engine
    scraper = MetricsScraper(engine.base_url, interval_s=0.2, model_name=engine.served_model_name).start()
    sent = [(1, 1), (32, 20), (200, 7)]
    for i, (p, o) in enumerate(sent):
        chunks, usage = _stream_completion(engine, p, o, offset=1000 + 37 * i)
        assert usage["prompt_tokens"] == p and usage["completion_tokens"] == o
        assert 1 <= chunks <= o
    timeline = scraper.stop()
    s = scraper.summarize()
    assert s["prompt_tokens"] == sum(p for p, _ in sent)
    assert s["generation_tokens"] == sum(o for _, o in sent)
    assert s["preemptions"] == 0 and s["ttft_ms"]["count"] == len(sent)
    # the first sample is the snapshot start() took (its counters the zero of the rest), timed from start()
    assert timeline and 0.0 <= timeline[0]["t_s"] <= bound_s(METRICS_FETCH_S) \
        and timeline[-1]["generation_tokens"] == s["generation_tokens"]
    assert timeline[0]["generation_tokens"] == 0 and timeline[0]["prompt_tokens"] == 0
    assert scraper.errors == 0


def test_engine_as_endpoint(tiny_engine, monkeypatch):
    engine = tiny_engine
    monkeypatch.setenv("ROOFLINE_TEST_KEY", "unused-key")  # vLLM without --api-key ignores it
    ep = Endpoint(engine.base_url, api_key_env="ROOFLINE_TEST_KEY").connect(timeout_s=bound_s(0.1))
    assert ep.served_model_name == engine.served_model_name
    r = ep.report()
    assert r["kv_cache_tokens"] == KV_TOKENS_1GIB and r["kv_device"] is None
    assert r["cross_check"]["ok"] is None  # nothing to compare without a log


# --------------------------------------------------------------------------- engines of their own

CHILD = r"""
import json, sys, time
from pathlib import Path
from pytest_roofline.measure.engine import Engine, EngineConfig
e = Engine(EngineConfig(**json.loads(sys.argv[1])), Path(sys.argv[2])).start(timeout_s=float(sys.argv[3]))
print(json.dumps({"pid": e.pid, "pids": sorted(e.pids()), "port": e.port,
                  "watchdog": e._watchdog.proc.pid if e._watchdog else None}), flush=True)
time.sleep(3600)
"""


def test_parent_death_takes_the_engine_with_it(tmp_path):
    """A parent killed by SIGKILL (watchdog + PDEATHSIG) or SIGINT (KeyboardInterrupt -> atexit -> stop()) leaves
    no engine process behind. Each parent starts an engine of its own (the test kills them); both at once."""
    cfg = json.dumps(tiny_engine_config().to_dict())
    kids = {}
    for sig in (signal.SIGKILL, signal.SIGINT):
        kids[sig] = subprocess.Popen([sys.executable, "-c", CHILD, cfg, str(tmp_path / f"{sig.name}.log"),
                                      str(bound_s(TWO_ENGINES_START_S))],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env(),
                                     preexec_fn=sigint_as_ctrl_c)
    try:
        infos = {}
        for sig, kid in kids.items():
            line = read_line(kid.stdout, what=f"the {sig.name} parent's engine to start",
                             typical_s=TWO_ENGINES_START_S)
            assert line, f"child for {sig.name} failed: {kid.stderr.read()[-3000:]}"
            infos[sig] = json.loads(line)
            assert len(infos[sig]["pids"]) >= 3
        for sig, kid in kids.items():
            kid.send_signal(sig)
        for sig, kid in kids.items():
            wait_process(kid, what=f"the parent to exit after {sig.name}", typical_s=PARENT_EXIT_S)
            info = infos[sig]
            watched = set(info["pids"]) | ({info["watchdog"]} if info["watchdog"] else set())
            left = processes_left(watched, ORPHAN_STOP_S)
            assert not left, f"{sig.name}: processes left behind: {left}"
            assert not process_group_members(info["pid"])
            assert port_free(info["port"])
        assert kids[signal.SIGKILL].returncode == -signal.SIGKILL
        assert "KeyboardInterrupt" in kids[signal.SIGINT].stderr.read()
    finally:
        for kid in kids.values():
            if kid.poll() is None:
                kid.kill()


def test_engine_python_serves_chat_then_killed_is_detected_and_stop_cleans_up(tmp_path):
    """One engine of its own (the test kills it), started with ``engine.python`` = this venv's interpreter:
    1. the server is started with that interpreter, a chat load gets every token, and prompt_tokens is the
       server's count (24 words + the chat template's tokens); the version is asked from the server's /version;
    2. SIGKILL the API server: the engine notices, check_alive() raises EngineDied with the real log's tail, and
       stop() ends the orphans too. Its stop timeout is far above the bound on that stop(), so the bound still
       tells the orphans' short grace (``orphan_grace_s``) from a full stop timeout, however busy the machine.
    (Two tests with an engine each before: the launch and the kill share one start now.)"""
    cfg = tiny_engine_config(served_model_name=TINY_MODEL, python=sys.executable,
                             extra_args=["--chat-template", CHAT_TEMPLATE])
    engine = Engine(cfg, tmp_path / "engine.log", stop_timeout_s=3 * bound_s(ORPHAN_STOP_S))
    try:
        engine.start(timeout_s=bound_s(ENGINE_START_S))
        assert engine.argv is not None
        assert engine.argv[:3] == [sys.executable, "-m", "vllm.entrypoints.openai.api_server"]
        res = loadgen.run_load(engine.base_url, loadgen.LoadSpec(
            model=TINY_MODEL, token_id_range=(PROMPT_TOKEN_ID_MIN, PROMPT_TOKEN_ID_MAX + 1), mode="closed",
            concurrency=2, num_requests=4, input_len=24, output_len=CHAT_OUT, api="chat",
            request_timeout_s=bound_s(CHAT_REQUEST_S)))
        ok = [r for r in res.records if r.ok]
        assert len(ok) == 4, [r.error for r in res.records]
        assert all(r.completion_tokens == CHAT_OUT and len(r.chunk_times_s) >= 1 for r in ok)
        # the template wraps the 24 words in "user: ...\nassistant:", so the server counts more than 24 tokens
        assert all(r.prompt_tokens is not None and r.prompt_tokens > 24 for r in ok)
        assert engine.launch_info()["version"] == "0.32.0"  # the server's /version, not this interpreter's

        pids, port, pgid = engine.pids(), engine.port, engine.pgid
        os.kill(engine.pid, signal.SIGKILL)
        wait_until(lambda: not engine.is_alive(), what="the engine to notice its API server died",
                   typical_s=PROCESSES_GONE_S)
        assert not engine.is_alive()
        with pytest.raises(EngineDied) as ei:
            engine.check_alive()
        assert "SIGKILL" in str(ei.value) and ei.value.returncode == -signal.SIGKILL
        assert "INFO" in ei.value.log_tail and ei.value.log_tail in str(ei.value)  # the tail of the real log
        assert engine.log_tail(5).count("\n") <= 4
        orphans = live_pids(pids - {engine.pid})
        print("orphans after SIGKILL of the API server:", orphans)  # EngineCore/worker may outlive it ...
        t = time.monotonic()
        engine.stop()  # ... until stop() ends the whole group (orphans get a short grace only)
        took = time.monotonic() - t
        assert took < bound_s(ORPHAN_STOP_S), \
            f"stop() after the API server died took {took:.0f} s: the orphans' grace is {engine.orphan_grace_s} s"
        left = processes_left(pids)
        assert not left, f"processes left after stop(): {left}"
        assert not process_group_members(pgid)
        assert port_free(port)
        assert engine.stop() == -signal.SIGKILL  # idempotent
        with pytest.raises(EngineError):
            engine.start()
    finally:
        engine.stop()
