"""``engine.args`` the plugin sets on the launch itself are refused at their line (trial s16 M5): ``port`` was
accepted and reached vLLM as a second ``--port`` after the plugin's own, vLLM listened on the user's (a busy one
failed after 77 s with a traceback) while the plugin checked its own; ``host`` and ``model`` go the same way
(``EngineConfig.argv`` passes ``--model``, ``--host`` and ``--port``)."""

from __future__ import annotations

import pytest

from pytest_roofline import cli
from pytest_roofline.format.spec import SpecError, loads_spec
from pytest_roofline.measure.engine import EngineConfig

HEAD = "hardware: h100-sxm\nmodel: llama-3.1-8b\nengine:\n  name: vllm\n  args:\n    max_model_len: 8192\n"
TAIL = ("workload:\n  input_len: 1024\n  output_len: 256\npredictions:\n  - id: w\n    quantity: weight_bytes\n"
        "    predicted: 16.06 GB\n")
#: what each refusal must say: why the plugin owns the flag, and the fix (the full text lives in
#: engine_args._refusals.PLUGIN_OWNED_ARGS, its one home)
WHY = {
    "port": ("the plugin picks the engine's port itself", "remove it", "engine.command's {port}", "--endpoint"),
    "host": ("the plugin sets the address the engine listens on itself", "remove it", "engine.command's {host}"),
    "model": ("the plugin passes the model the engine serves as --model itself", "write it as engine.model"),
}


def test_the_plugin_sets_these_flags_itself() -> None:
    argv = EngineConfig(model="m").argv("python", 8000)
    assert {"--model", "--host", "--port"} <= set(argv)


@pytest.mark.parametrize(("written", "key"), [("port: 8011", "port"),
                                              ("host: 0.0.0.0", "host"), ("model: meta-llama/Llama-3.1-8B", "model")])
def test_a_plugin_owned_arg_is_refused_at_its_line(written, key) -> None:
    with pytest.raises(SpecError) as exc:
        loads_spec(HEAD + f"    {written}\n" + TAIL, file="p.yaml")
    assert exc.value.line == 7
    assert exc.value.message.startswith(f"setup does not resolve: engine.args.{key}: ")
    assert all(part in exc.value.message for part in WHY[key]), exc.value.message


def test_roofline_check_names_the_field_and_the_fix(tmp_path, capsys) -> None:
    f = tmp_path / "p.yaml"
    f.write_text(HEAD + "    port: 8011\n" + TAIL)
    assert cli.main(["check", str(f)]) != 0
    out = capsys.readouterr()
    text = out.out + out.err
    assert "p.yaml:7" in text and "engine.args.port: the plugin picks the engine's port itself" in text


def test_engine_model_is_where_the_served_model_goes() -> None:
    spec = loads_spec(HEAD.replace("  args:", "  model: meta-llama/Llama-3.1-8B\n  args:") + TAIL, file="p.yaml")
    assert all(p.error is None for p in spec.predictions)


def test_the_tiny_models_served_name_is_the_plugins() -> None:
    # the tiny model is launched as --served-model-name roofline-tiny (measure/sweep.py); a model of the user's
    # keeps its served_model_name (the plugin reads the name from /v1/models)
    text = ("hardware: cpu\nmodel: roofline-tiny\nengine:\n  name: vllm\n  cpu_kvcache_space: 1 GiB\n  args:\n"
            "    served_model_name: mine\n" + TAIL.replace("16.06 GB", "1 MB"))
    with pytest.raises(SpecError) as exc:
        loads_spec(text, file="p.yaml")
    assert exc.value.line == 7 and exc.value.message == (
        "setup does not resolve: engine.args.served_model_name: the plugin serves roofline-tiny under that name "
        "itself (--served-model-name roofline-tiny) and looks for it in /v1/models; a second --served-model-name "
        "would win in vLLM and the engine would not be found: remove it")
    spec = loads_spec(HEAD + "    served_model_name: mine\n" + TAIL, file="p.yaml")
    assert all(p.error is None for p in spec.predictions)
