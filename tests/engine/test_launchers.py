"""How the plugin launches vLLM, live: ``engine.python`` (another interpreter, with the chat API), ``engine.command``
(a wrapper that ``exec``s the server, as a ``docker run`` would hold it) and ``engine.args.api_key`` (a server that
refuses /v1 without the key, and no output of the run that holds it).

Each test starts an engine of its own: what it checks is how that engine was launched (the YAML test checks
``engine.python``, the chat API and ``api_key`` on one engine). ``engine.python`` started in-process (EngineConfig,
no YAML) is checked on the engine that tests/engine/test_lifecycle.py then kills. The argv and YAML checks
of the same options (no engine) are in tests/integration/test_engine_command.py and test_secrets.py.
"""

from __future__ import annotations

import dataclasses
import json
import os
import secrets
import stat
import sys
import textwrap

import pytest
from support.engine import (
    CHAT_OUT,
    CHAT_REQUEST_S,
    CHAT_TEMPLATE,
    ENGINE_START_S,
    SHORT_RUN_S,
    assert_settled,
    needs_vllm,
    tiny_engine_config,
)
from support.patience import bound_s
from support.specs import KV_TOKENS_1GIB_EXACT

from pytest_roofline import redact
from pytest_roofline.measure import loadgen
from pytest_roofline.measure.engine import Engine, EngineConfig, process_group_members
from pytest_roofline.measure.engine.tiny_model import PROMPT_TOKEN_ID_MAX, PROMPT_TOKEN_ID_MIN
from pytest_roofline.model.tiny import TINY_MODEL

pytestmark = needs_vllm


def launcher_config(**kw) -> EngineConfig:
    return tiny_engine_config(served_model_name=TINY_MODEL, **kw)


def chat_spec(n: int = 4) -> loadgen.LoadSpec:
    return loadgen.LoadSpec(model=TINY_MODEL, token_id_range=(PROMPT_TOKEN_ID_MIN, PROMPT_TOKEN_ID_MAX + 1),
                            mode="closed", concurrency=2, num_requests=n, input_len=24, output_len=CHAT_OUT, api="chat",
                            request_timeout_s=bound_s(CHAT_REQUEST_S))


def test_engine_command_through_a_wrapper(tiny_model, tmp_path):
    """engine.command = a wrapper script that logs its argv and execs the real server: the plugin chose the port,
    waited for /health on it, logged the output and ended the whole process group (the wrapper's children).
    Its own engine: the launch through engine.command is what it checks."""
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
    cfg = launcher_config(command=cmd)
    log = tmp_path / "engine.log"
    eng = Engine(cfg, log)
    try:
        eng.start(timeout_s=bound_s(ENGINE_START_S))
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


# --------------------------------------------------------------------------- engine.args.api_key

ENGINE_SPEC = """\
hardware: cpu
model: roofline-tiny
engine:
  name: vllm
  version: "0.32.0"
  python: {python}
  cpu_kvcache_space: 1 GiB
  args: {{dtype: bfloat16, max_model_len: 1024, enforce_eager: true, max_num_seqs: 8, chat_template: {template},
          api_key: {arg_key}}}
  env: {{HF_TOKEN: {env_key}}}
  startup_timeout: 5 min
workload: {{input_len: 32, output_len: 64, api: chat}}
sweep: {{mode: closed, concurrency: [2], requests_per_point: 4, warmup: 1}}
predictions:
"""
#: what ENGINE_SPEC lists after ``predictions:`` (appended once ENGINE_SPEC is formatted)
ENGINE_SPEC_PREDICTIONS = KV_TOKENS_1GIB_EXACT + """\
  - id: littles-law
    quantity: littles_law_ratio
    at: {concurrency: 2}
    predicted: 1.00
    tolerance: ±10%
"""


@pytest.fixture
def _fresh_registry():
    """No remembered secret before or after (the redaction registry is process-wide)."""
    redact.forget_all()
    yield
    redact.forget_all()


def new_key(tag: str) -> str:
    return f"sk-{tag}-{secrets.token_hex(12)}"


def every_output(pytester: pytest.Pytester, result: pytest.RunResult) -> dict[str, str]:
    """Every text the run produced: the terminal, and every file it wrote under the test's directory (results,
    request files, engine log, scorecard, JUnit XML), by name (as test_secrets.py reads the endpoint runs)."""
    out = {"terminal": "\n".join(result.outlines + result.errlines)}
    for f in sorted(pytester.path.rglob("*")):
        if f.is_file() and f.suffix != ".yaml":  # the prediction file is the input that holds them
            out[str(f.relative_to(pytester.path))] = f.read_text(encoding="utf-8", errors="replace")
    return out


def test_yaml_engine_python_chat_and_api_key_through_pytest(pytester, _fresh_registry):
    """One engine started by the plugin from the YAML, checking three launch options at once:
    - ``engine.python`` and ``workload.api: chat`` reach the launch and the load: the server runs under that
      interpreter with the chat template, the 4 chat requests get all 64 tokens each, and the server counts more
      prompt tokens than the 32 words (the template's own). Little's law holds at the point (L = λ·W with 2 in
      flight; with 8 output tokens a request lasted ~0.3 s and the client's time after the last token took the
      ratio to 0.87 on a busy machine, hence 64);
    - ``engine.args.api_key``: vLLM refuses /v1 without the key, so the measured passes show the key was sent;
    - no output of the run (terminal, results, requests, engine log, scorecard, JUnit) holds the key or the
      HF_TOKEN passed in ``engine.env``.
    (Two tests with an engine each before; the argv and YAML checks without an engine are in
    tests/integration/test_engine_command.py and test_secrets.py.)"""
    arg_key, env_key = new_key("arg"), new_key("env")
    template = pytester.path / "chat.jinja"
    template.write_text(CHAT_TEMPLATE)
    (pytester.path / "predictions").mkdir()
    (pytester.path / "predictions" / "keyed.yaml").write_text(ENGINE_SPEC.format(
        python=json.dumps(sys.executable), template=json.dumps(str(template)), arg_key=arg_key, env_key=env_key)
        + ENGINE_SPEC_PREDICTIONS)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-p", "no:html", "-rA", "predictions/keyed.yaml", "--gpu", "cpu",
        "--roofline-out", "out", "--roofline-scorecard", "scorecard.html", "--junitxml", "junit.xml",
        timeout=bound_s(SHORT_RUN_S))
    outputs = every_output(pytester, result)
    for name, text in outputs.items():
        assert arg_key not in text and env_key not in text, f"a secret is in {name}"
    # the key was sent: vLLM answered /v1/models and the chat completions (inconclusive, not failed, where a
    # loaded machine's client did not hold the point's concurrency: support.engine.assert_settled)
    assert_settled(result.parseoutcomes(), 2, text=result.stdout.str())
    assert any(n.startswith("out/engine-") and n.endswith(".log") for n in outputs), sorted(outputs)
    results = json.loads(outputs["out/keyed/results.json"])
    argv = results["setup"]["engine"]["argv"]
    assert argv[0] == sys.executable and "--chat-template" in argv
    assert argv[argv.index("--api-key") + 1] == "***"
    assert results["setup"]["engine"]["env"]["HF_TOKEN"] == "***"
    assert "api_key=***" in outputs["scorecard.html"]
    (req_name,) = [n for n in outputs if n.startswith("out/keyed/") and n.endswith(".requests.jsonl")]
    measured = [r for r in map(json.loads, outputs[req_name].splitlines()) if not r["warmup"]]
    assert len(measured) == 4 and all(r["completion_tokens"] == 64 and r["prompt_tokens"] > 32 for r in measured)
