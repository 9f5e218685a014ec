"""The load generator's chat-completions API and its TLS (``https://``) path, against a small vLLM-like
streaming server on 127.0.0.1 that speaks both routes, over plain TCP and over TLS with a self-signed
certificate made here (``cryptography``).

What the server sends is what vLLM's OpenAI server sends (vllm/entrypoints/openai/chat_completion/serving.py at
v0.32.0): a chat stream starts with ``delta: {role: assistant, content: ""}``, then one event per token with
``delta: {content: ...}``, then (``stream_options.include_usage``) a usage event with empty ``choices`` and
``data: [DONE]``; each event is one HTTP chunk. No assertion depends on speed.
"""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import json
import ssl
import threading
import time
from pathlib import Path

import pytest

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


class VllmLikeServer:
    """Streams ``max_tokens`` / ``max_completion_tokens`` token events ``interval`` s apart, keep-alive, on
    /v1/completions and /v1/chat/completions; with ``ssl_ctx`` over TLS. Records each request."""

    def __init__(self, ssl_ctx: ssl.SSLContext | None = None, interval: float = 0.002, template_tokens: int = 7):
        self.ssl_ctx = ssl_ctx
        self.interval = interval
        self.template_tokens = template_tokens  # what a chat template adds to the prompt, in "tokens"
        self.requests: list[dict] = []
        self.connections = 0
        self.token_sent: dict[str, list[float]] = {}  # request id -> perf_counter of each token event's write
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.port = 0

    def __enter__(self) -> VllmLikeServer:
        self._thread.start()
        assert self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        async def stop() -> None:
            self._server.close()
            for t in [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]:
                t.cancel()
        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def url(self, host: str = "127.0.0.1") -> str:
        return f"{'https' if self.ssl_ctx else 'http'}://{host}:{self.port}"

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)

        async def start() -> None:
            self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0, ssl=self.ssl_ctx)
            self.port = self._server.sockets[0].getsockname()[1]
            self._ready.set()

        self._loop.run_until_complete(start())
        self._loop.run_forever()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                _method, path, _ = lines[0].split(" ", 2)
                headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:] if ln)}
                if _method == "GET":  # what --endpoint asks before a run: /health, /v1/models (else 404)
                    await self._get(writer, path)
                    continue
                body = json.loads(await reader.readexactly(int(headers["content-length"])))
                rid = headers.get("x-request-id", "")
                self.requests.append({"path": path, "body": body, "rid": rid})
                await self._stream(writer, path, body, rid)
        except (ConnectionError, asyncio.CancelledError, ssl.SSLError):
            return
        finally:
            writer.close()

    async def _get(self, writer: asyncio.StreamWriter, path: str) -> None:
        payloads = {"/health": b"", "/v1/models": json.dumps(
            {"object": "list", "data": [{"id": "roofline-tiny", "object": "model", "max_model_len": 2048}]}).encode()}
        if path not in payloads:
            writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
        else:
            data = payloads[path]
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                         % (len(data), data))
        await writer.drain()

    async def _stream(self, writer: asyncio.StreamWriter, path: str, body: dict, rid: str) -> None:
        chat = path == "/v1/chat/completions"
        if path not in ("/v1/completions", "/v1/chat/completions"):
            writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
            return
        n = body["max_completion_tokens"] if chat else body["max_tokens"]
        prompt_tokens = (len(body["messages"][0]["content"].split()) + self.template_tokens if chat
                         else len(body["prompt"]))
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")

        def event(obj: object) -> bytes:
            data = b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"
            return b"%x\r\n%s\r\n" % (len(data), data)

        obj_kind = "chat.completion.chunk" if chat else "text_completion"
        if chat:  # vLLM's first chat event: the role, no token
            writer.write(event({"id": "c", "object": obj_kind, "choices": [
                {"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None,
                 "finish_reason": None}]}))
        sent = self.token_sent.setdefault(rid, [])
        for i in range(n):
            await asyncio.sleep(self.interval)
            choice = ({"index": 0, "delta": {"content": f" w{i}"}, "logprobs": None, "finish_reason": None}
                      if chat else {"index": 0, "text": f" w{i}", "logprobs": None, "finish_reason": None})
            sent.append(time.perf_counter())  # before the write: the client cannot have it earlier
            writer.write(event({"id": "c", "object": obj_kind, "choices": [choice]}))
            await writer.drain()
        writer.write(event({"id": "c", "object": obj_kind, "choices": [],
                            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": n,
                                      "total_tokens": prompt_tokens + n}}))
        writer.write(b"%x\r\n%s\r\n" % (len(b"data: [DONE]\n\n"), b"data: [DONE]\n\n") + b"0\r\n\r\n")
        await writer.drain()


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
    with VllmLikeServer() as srv:
        res = run_load(srv.url(), spec())
    assert {r["path"] for r in srv.requests} == {"/v1/chat/completions"}
    ok = [r for r in res.records if r.ok]
    assert len(ok) == 6
    for r in ok:
        assert len(r.chunk_times_s) == 5  # the role event is not a token
        assert r.prompt_tokens == 16 + 7  # 16 words + the server's 7 template tokens, from usage
        assert r.completion_tokens == 5
        assert r.first_token_s == r.chunk_times_s[0] and r.ttft_s is not None and r.ttft_s > 0


def test_completions_still_default():
    with VllmLikeServer() as srv:
        res = run_load(srv.url(), spec(api="completions"))
    assert {r["path"] for r in srv.requests} == {"/v1/completions"}
    assert all(r.ok and len(r.chunk_times_s) == 5 and r.prompt_tokens == 16 for r in res.records)


# ------------------------------------------------------------------------------------------------------ TLS

@pytest.mark.parametrize("api", ["completions", "chat"])
def test_https_verified_against_a_ca_bundle(cert, api):
    with VllmLikeServer(server_ctx(cert)) as srv:
        res = run_load(srv.url("localhost"), spec(api=api, concurrency=3, num_requests=9),
                       tls=tls_context(ca_bundle=str(cert[0])))
    assert res.url.startswith("https://localhost:")
    assert all(r.ok and len(r.chunk_times_s) == 5 for r in res.records), [r.error for r in res.records]
    assert len(res.records) == 9
    assert srv.connections == 3  # keep-alive over TLS: 3 connections carried the 9 requests
    assert res.timestamp_source in ("kernel", "user", "mixed")
    # causality, whatever the machine's load: a token is received after the server took its time just before
    # writing it (kernel stamps are CLOCK_REALTIME mapped onto perf_counter: allow 1 ms for that mapping)
    for r in res.records:
        sent = srv.token_sent[r.request_id]
        assert len(sent) == len(r.chunk_times_s) == 5
        assert all(t_client >= t_server - 0.001 for t_client, t_server in zip(r.chunk_times_s, sent))
        assert r.chunk_times_s == sorted(r.chunk_times_s)


def test_https_refuses_an_unknown_certificate_by_default(cert):
    with VllmLikeServer(server_ctx(cert)) as srv, pytest.raises(LoadgenError, match="certificate verify failed"):
        run_load(srv.url("localhost"), spec(num_requests=1, concurrency=1))


def test_https_refuses_a_certificate_for_another_name(tmp_path):
    # a trusted certificate, but for other.test / 10.0.0.1: the server at localhost is not who it claims to be
    other = make_cert(tmp_path, ("other.test",), "10.0.0.1")
    with VllmLikeServer(server_ctx(other)) as srv, pytest.raises(LoadgenError, match="match|mismatch"):
        run_load(srv.url("localhost"), spec(num_requests=1, concurrency=1),
                 tls=tls_context(ca_bundle=str(other[0])))


def test_https_insecure_skips_verification(cert):
    with VllmLikeServer(server_ctx(cert)) as srv:
        res = run_load(srv.url(), spec(num_requests=2, concurrency=1, mode="closed"),
                       tls=tls_context(insecure=True))
    assert [r.ok for r in res.records] == [True, True]


def test_https_ca_bundle_from_ssl_cert_file(cert, monkeypatch):
    # the default context reads SSL_CERT_FILE (OpenSSL's default verify paths), as httpx does for the
    # endpoint's health checks, so one environment variable serves both
    monkeypatch.setenv("SSL_CERT_FILE", str(cert[0]))
    with VllmLikeServer(server_ctx(cert)) as srv:
        res = run_load(srv.url("localhost"), spec(num_requests=2, concurrency=1))
    assert all(r.ok for r in res.records)


def test_open_loop_over_https(cert):
    with VllmLikeServer(server_ctx(cert)) as srv:
        res = run_load(srv.url("localhost"), spec(mode="open", concurrency=None, rate_req_s=50.0, num_requests=10),
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


def test_endpoint_mode_over_https_with_chat(pytester: pytest.Pytester, cert, monkeypatch) -> None:
    """``--endpoint https://...`` with ``workload.api: chat``: the health checks (httpx) and the load generator
    both trust the CA that ``SSL_CERT_FILE`` names, the requests go to /v1/chat/completions, and the results
    file records the server's prompt_tokens (8 words + 7 template tokens = 15 here) per request."""
    pytester.makefile(".yaml", chat=HTTPS_YAML)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert[0]))  # the pytest subprocess inherits it
    with VllmLikeServer(server_ctx(cert)) as srv:
        # 4 requests cannot bound a throughput's interval away from 1 tok/s (inconclusive): this checks transport
        result = pytester.runpytest_subprocess("-p", "no:html", "-p", "no:cacheprovider", "chat.yaml",
                                               "--endpoint", srv.url("localhost"), "--roofline-out", "out",
                                               "--roofline-inconclusive", "pass", timeout=120)
    result.assert_outcomes(passed=1)
    assert {r["path"] for r in srv.requests if r["body"]} == {"/v1/chat/completions"}
    reqs = list((pytester.path / "out").rglob("*.requests.jsonl"))
    assert reqs, list((pytester.path / "out").rglob("*"))
    lines = [json.loads(x) for x in reqs[0].read_text().splitlines()]
    measured = [x for x in lines if not x["warmup"]]
    assert len(measured) == 4 and all(x["prompt_tokens"] == 15 and x["completion_tokens"] == 4 for x in measured)
