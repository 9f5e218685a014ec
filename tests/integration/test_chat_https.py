"""The load generator's chat-completions API and its TLS (``https://``) path, against the stub server
(tests/support/openai_stub.py) on 127.0.0.1, which speaks both routes, over plain TCP and over TLS with a self-signed
certificate made here (``cryptography``).

What the server sends is what vLLM's OpenAI server sends (vllm/entrypoints/openai/chat_completion/serving.py at
v0.32.0): a chat stream starts with ``delta: {role: assistant, content: ""}``, then one event per token with
``delta: {content: ...}``, then (``stream_options.include_usage``) a usage event with empty ``choices`` and
``data: [DONE]``; each event is one HTTP chunk. No assertion depends on speed.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import os
import ssl
from pathlib import Path

import pytest
from support.openai_stub import StubServer
from support.patience import bound_s

from pytest_roofline.measure.loadgen import (
    LoadgenError,
    LoadSpec,
    run_load,
    target_url,
    tls_context,
)
from pytest_roofline.measure.loadgen._prompts import CHAT_WORDS, build_prompt, chat_text, request_body
from pytest_roofline.measure.loadgen._sse import decode_completion_stream

cryptography = pytest.importorskip("cryptography")


def make_cert(tmp: Path, names: tuple[str, ...] = ("localhost",), ip: str = "127.0.0.1") -> tuple[Path, Path]:
    """A self-signed certificate (and its key) for ``names`` and ``ip``, valid for a day."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])])
    now = datetime.datetime.now(datetime.UTC)
    san = [x509.DNSName(n) for n in names] + [x509.IPAddress(ipaddress.ip_address(ip))]
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(san), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = tmp / "cert.pem", tmp / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


def vllm_like(tls: ssl.SSLContext | None = None) -> StubServer:
    """The stub server as vLLM serves roofline-tiny here: 2 ms before each token event, and a chat template that
    adds 7 tokens to a chat prompt's words (``usage.prompt_tokens``); with ``tls``, over https."""
    return StubServer(model="roofline-tiny", token_delay_s=0.002, template_tokens=7, tls=tls)


def spec(**kw: object) -> LoadSpec:
    base: dict = dict(model="m", token_id_range=(10, 300), mode="closed", concurrency=2, num_requests=6,
                      input_len=16, output_len=5, api="chat")
    base.update(kw)
    return LoadSpec(**base)


@pytest.fixture
def cert(tmp_path: Path) -> tuple[Path, Path]:
    return make_cert(tmp_path)


def server_ctx(cert: tuple[Path, Path]) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(str(cert[0]), str(cert[1]))
    return ctx


# ------------------------------------------------------------------------------------------------ the chat API

def test_chat_body_is_one_user_message_of_input_len_words():
    s = spec(input_len=12)
    prompt = build_prompt(s, 3)
    body = request_body(s, prompt)
    assert set(body) == {"model", "messages", "max_completion_tokens", "ignore_eos", "stream", "stream_options"}
    (msg,) = body["messages"]
    assert msg["role"] == "user" and len(msg["content"].split(" ")) == 12
    # token id i is word (i - 10) mod 96 of the list: the first id written back from its word
    assert CHAT_WORDS.index(msg["content"].split(" ")[0]) == (prompt[0] - 10) % len(CHAT_WORDS)
    assert body["max_completion_tokens"] == 5 and body["stream_options"] == {"include_usage": True}
    assert chat_text(s, prompt) == msg["content"]
    with pytest.raises(ValueError, match="api must be"):
        spec(api="responses").validate()
    with pytest.raises(ValueError, match="messages"):
        spec(extra_body={"messages": []}).validate()


def test_chat_routes():
    assert target_url("http://h:8000")[3] == "/v1/completions"
    assert target_url("http://h:8000", "chat")[3] == "/v1/chat/completions"
    assert target_url("https://h/v1", "chat")[:4] == ("https", "h", 443, "/v1/chat/completions")
    assert target_url("https://h/v1/chat/completions", "chat")[3] == "/v1/chat/completions"


def _pieces(events: list[bytes], together: bool) -> list:
    data = [b"data: " + e + b"\n\n" for e in events]
    if together:
        return [1_000_000_000, b"".join(data)]
    out: list = []
    for i, d in enumerate(data):
        out += [1_000_000_000 + i * 1_000_000, d]
    return out


@pytest.mark.parametrize("together", [False, True])
def test_chat_stream_counts_content_tokens_only(together):
    # vLLM's chat stream: role event (no token), three content events, a reasoning event counted as a token,
    # an empty-content event (no token), the usage event, [DONE]
    events = [b'{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}',
              b'{"choices":[{"index":0,"delta":{"content":"a"}}]}',
              b'{"choices":[{"index":0,"delta":{"content":"b"}}]}',
              b'{"choices":[{"index":0,"delta":{"reasoning_content":"r"}}]}',
              b'{"choices":[{"index":0,"delta":{"content":""}}]}',
              b'{"choices":[{"index":0,"delta":{"content":"c"},"finish_reason":"length"}]}',
              b'{"choices":[],"usage":{"prompt_tokens":23,"completion_tokens":4}}',
              b"[DONE]"]
    st = decode_completion_stream(_pieces(events, together), chat=True)
    assert len(st.chunk_times_s) == 4 and st.done and st.usage == {"prompt_tokens": 23, "completion_tokens": 4}
    if not together:  # each event its own read, 1 ms apart: the tokens are events 1, 2, 3 and 5
        assert st.chunk_times_s == pytest.approx([1.001, 1.002, 1.003, 1.005])
    # the same bytes read as a completions stream count every event with choices (the old behaviour)
    assert len(decode_completion_stream(_pieces(events, together)).chunk_times_s) == 6


def test_chat_fast_path_equals_full_path():
    # one read per token event (the fast path) and one read for all (the full parser) give the same tokens
    events = [b'{"id":"x","choices":[{"index":0,"delta":{"content":"t%d"},"finish_reason":null}]}' % i
              for i in range(5)]
    one_each = decode_completion_stream(_pieces(events, False), chat=True)
    assert one_each.chunk_times_s == pytest.approx([1.0 + i * 0.001 for i in range(5)])
    assert len(decode_completion_stream(_pieces(events, True), chat=True).chunk_times_s) == 5


def test_chat_load_over_http_records_server_usage():
    with vllm_like() as srv:
        res = run_load(srv.url, spec())
    assert {r.path for r in srv.posts} == {"/v1/chat/completions"}
    ok = [r for r in res.records if r.ok]
    assert len(ok) == 6
    for r in ok:
        assert len(r.chunk_times_s) == 5  # the role event is not a token
        assert r.prompt_tokens == 16 + 7  # 16 words + the server's 7 template tokens, from usage
        assert r.completion_tokens == 5
        assert r.first_token_s == r.chunk_times_s[0] and r.ttft_s is not None and r.ttft_s > 0


def test_completions_still_default():
    with vllm_like() as srv:
        res = run_load(srv.url, spec(api="completions"))
    assert {r.path for r in srv.posts} == {"/v1/completions"}
    assert all(r.ok and len(r.chunk_times_s) == 5 and r.prompt_tokens == 16 for r in res.records)


# ------------------------------------------------------------------------------------------------------ TLS

@pytest.mark.parametrize("api", ["completions", "chat"])
def test_https_verified_against_a_ca_bundle(cert, api):
    with vllm_like(server_ctx(cert)) as srv:
        res = run_load(srv.url_at("localhost"), spec(api=api, concurrency=3, num_requests=9),
                       tls=tls_context(ca_bundle=str(cert[0])))
    assert res.url.startswith("https://localhost:")
    assert all(r.ok and len(r.chunk_times_s) == 5 for r in res.records), [r.error for r in res.records]
    assert len(res.records) == 9
    assert srv.connections == 3  # keep-alive over TLS: 3 connections carried the 9 requests
    assert res.timestamp_source in ("kernel", "user", "mixed")
    # causality, whatever the machine's load: a token is received after the server took its time just before
    # writing it (kernel stamps are CLOCK_REALTIME mapped onto perf_counter: allow 1 ms for that mapping)
    token_sent = {q.rid: q.token_sent for q in srv.posts}
    for r in res.records:
        sent = token_sent[r.request_id]
        assert len(sent) == len(r.chunk_times_s) == 5
        assert all(t_client >= t_server - 0.001 for t_client, t_server in zip(r.chunk_times_s, sent))
        assert r.chunk_times_s == sorted(r.chunk_times_s)


def test_https_refuses_an_unknown_certificate_by_default(cert):
    with vllm_like(server_ctx(cert)) as srv, pytest.raises(LoadgenError, match="certificate verify failed"):
        run_load(srv.url_at("localhost"), spec(num_requests=1, concurrency=1))


def test_https_refuses_a_certificate_for_another_name(tmp_path):
    # a trusted certificate, but for other.test / 10.0.0.1: the server at localhost is not who it claims to be
    other = make_cert(tmp_path, ("other.test",), "10.0.0.1")
    with vllm_like(server_ctx(other)) as srv, pytest.raises(LoadgenError, match="match|mismatch"):
        run_load(srv.url_at("localhost"), spec(num_requests=1, concurrency=1),
                 tls=tls_context(ca_bundle=str(other[0])))


def test_https_insecure_skips_verification(cert):
    with vllm_like(server_ctx(cert)) as srv:
        res = run_load(srv.url, spec(num_requests=2, concurrency=1, mode="closed"),
                       tls=tls_context(insecure=True))
    assert [r.ok for r in res.records] == [True, True]


def test_https_ca_bundle_from_ssl_cert_file(cert, monkeypatch):
    # the default context reads SSL_CERT_FILE (OpenSSL's default verify paths), as httpx does for the
    # endpoint's health checks, so one environment variable serves both
    monkeypatch.setenv("SSL_CERT_FILE", str(cert[0]))
    with vllm_like(server_ctx(cert)) as srv:
        res = run_load(srv.url_at("localhost"), spec(num_requests=2, concurrency=1))
    assert all(r.ok for r in res.records)


def test_open_loop_over_https(cert):
    with vllm_like(server_ctx(cert)) as srv:
        res = run_load(srv.url_at("localhost"), spec(mode="open", concurrency=None, rate_req_s=50.0, num_requests=10),
                       tls=tls_context(ca_bundle=str(cert[0])))
    assert len(res.records) == 10 and all(r.ok for r in res.records), [r.error for r in res.records]


# ------------------------------------------------------------------------------------- through pytest: --endpoint
HTTPS_YAML = """\
hardware: cpu
model: roofline-tiny
workload: {input_len: 8, output_len: 4, api: chat}
sweep:
  concurrency: [1]
  requests_per_point: 4
  warmup: 1
predictions:
  - id: tput-c1
    quantity: output_throughput
    at: {concurrency: 1}
    predicted: 1 tok/s
    tolerance: ">= 1 tok/s"
"""


@pytest.mark.slow
def test_endpoint_mode_over_https_with_chat(pytester: pytest.Pytester, cert, monkeypatch) -> None:
    """``--endpoint https://...`` with ``workload.api: chat``: the health checks (httpx) and the load generator
    both trust the CA that ``SSL_CERT_FILE`` names, the requests go to /v1/chat/completions, and the results
    file records the server's prompt_tokens (8 words + 7 template tokens = 15 here) per request."""
    pytester.makefile(".yaml", chat=HTTPS_YAML)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert[0]))  # the pytest subprocess inherits it
    with vllm_like(server_ctx(cert)) as srv:
        # 4 requests cannot bound a throughput's interval away from 1 tok/s (inconclusive): this checks transport
        result = pytester.runpytest_subprocess("-p", "no:html", "-p", "no:cacheprovider", "chat.yaml",
                                               "--endpoint", srv.url_at("localhost"), "--roofline-out", "out",
                                               "--roofline-inconclusive", "pass", timeout=bound_s(5))
    result.assert_outcomes(passed=1)
    assert {r.path for r in srv.posts} == {"/v1/chat/completions"}
    reqs = list((pytester.path / "out").rglob("*.requests.jsonl"))
    assert reqs, list((pytester.path / "out").rglob("*"))
    lines = [json.loads(x) for x in reqs[0].read_text().splitlines()]
    measured = [x for x in lines if not x["warmup"]]
    assert len(measured) == 4 and all(x["prompt_tokens"] == 15 and x["completion_tokens"] == 4 for x in measured)


@pytest.mark.parametrize("case", ["self-signed", "wrong-host"])
def test_endpoint_connect_names_the_certificate_problem_at_once(tmp_path, cert, case):
    """Issue 23, cases 9.61-9.63: --endpoint over https to an untrusted or misnamed certificate said 'not reachable
    within 30 s (ConnectError)' after 30 s of retries; it now names the TLS problem on the first answer."""
    import threading

    from support.patience import bound_s

    from pytest_roofline.errors import EndpointError
    from pytest_roofline.measure.engine._endpoint import Endpoint

    pem = cert if case == "self-signed" else make_cert(tmp_path, ("other.test",), "10.0.0.1")
    with vllm_like(server_ctx(pem)) as srv:
        if case == "wrong-host":
            os.environ["SSL_CERT_FILE"] = str(pem[0])
        try:
            out: dict = {}
            t = threading.Thread(target=lambda: out.update(r=_try(lambda: Endpoint(srv.url_at("localhost")).connect(
                timeout_s=30.0))), daemon=True)
            t.start()
            t.join(bound_s(1))
        finally:
            os.environ.pop("SSL_CERT_FILE", None)
    err = out.get("r")
    assert isinstance(err, EndpointError), err
    want = "self-signed certificate" if case == "self-signed" else "match"
    assert "TLS handshake failed" in str(err) and want in str(err) and "not reachable" not in str(err), str(err)


def _try(fn):
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - handed to the test
        return exc
