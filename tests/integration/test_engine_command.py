"""``engine.python`` and ``engine.command``: running vLLM with another interpreter or through a wrapper / a
container, while the plugin keeps the port, the health check, the log and the process-group teardown.

These check the argv the configuration builds and the YAML errors (file:line). The live tests, which start the
real CPU build of vLLM with ``engine.python`` and through a wrapper script, are in tests/engine/test_launchers.py.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pytest_roofline.errors import SpecError
from pytest_roofline.format import spec as fspec
from pytest_roofline.format.engine_command import COMMAND_PLACEHOLDERS, check_command, expand_command
from pytest_roofline.measure.engine import EngineConfig
from pytest_roofline.measure.sweep import engine_config_for

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


def test_quoted_false_flags_launch_without_them(tmp_path: Path) -> None:
    # enforce_eager: "false" is off (bool("false") would launch --enforce-eager), and a quoted "false" for another
    # on/off arg becomes vLLM's --no- form, not "--enable-chunked-prefill false" (which argparse rejects): the
    # prediction file's reader turns each on/off word into its boolean once (format/_sections.py, read_flag)
    spec = load('args:\n  enforce_eager: "false"\n  enable_chunked_prefill: "false"\n  enable_prefix_caching: "true"',
                tmp_path)
    cfg = engine_config_for(spec, device="cpu")
    argv = cfg.argv("/usr/bin/python3", 8000)
    assert "--enforce-eager" not in argv
    assert "--no-enable-chunked-prefill" in argv and "false" not in argv
    assert "--enable-prefix-caching" in argv
