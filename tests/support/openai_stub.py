"""The one stub OpenAI-compatible (vLLM-like) server of the tests: real HTTP/1.1 on 127.0.0.1, in a thread.

    with StubServer(token_delay_s=0.005, metrics=IDLE_METRICS) as srv:
        run_load(srv.url, spec)
    srv.posts[0].body["prompt"], srv.max_active, srv.connections

It routes by path, as vLLM's OpenAI server does (vllm/entrypoints/openai/api_server.py at v0.32.0):

* ``POST /v1/completions`` and ``POST /v1/chat/completions``: ``max_tokens`` (chat: ``max_completion_tokens``)
  token events, streamed as server-sent events when the body says ``"stream": true`` (one ``data: {json}\\n\\n``
  event per HTTP chunk, a chat stream opening with vLLM's role-only event, then a usage event with empty
  ``choices``, then ``data: [DONE]``), else one JSON answer with ``usage``;
* ``GET /v1/models`` (``model``, ``max_model_len``), ``/health`` (empty 200), ``/version`` (``version``; None: 404),
  ``/metrics`` (the Prometheus text ``metrics`` gives, fixed or per request; None: 404); anything else 404.

Every request is logged (:attr:`StubServer.requests`, :class:`Request`) with its arrival time and, for a stream,
the time each token event was written. What a test needs of a faulty or unusual server is a keyword: per-token
delay, usage on or off, token events coalesced into one chunk, JSON with spaces, unusual but legal chunked
framing, every write split over three TCP segments (a trickling body), closed connections, TLS, a required API
key, the Authorization header echoed into every answer, and per-request :class:`Fault` (an HTTP error, an SSE error
event, a non-JSON or non-UTF-8 ``data:`` line, a cut stream, a usage count off by some tokens, no answer at all,
raw bytes). Requests are told apart by the run index the load generator puts at the end of ``X-Request-Id``.

:meth:`StubServer.serve` serves in the foreground instead, for a test that needs the server in another process
(an engine stand-in: put ``tests/`` on its ``sys.path`` and import ``support.openai_stub``).
"""

from __future__ import annotations

import asyncio
import http
import json
import ssl
import threading
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from support.patience import bound_s

__all__ = ["IDLE_METRICS", "Fault", "Reply", "Request", "StubServer"]

#: a minimal idle exposition in vLLM's names (no request running, no preemption yet)
IDLE_METRICS = """\
# HELP vllm:num_preemptions_total Cumulative number of preemptions.
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{engine="0",model_name="stub"} 0.0
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="stub"} 0.0
"""

_COMPLETIONS, _CHAT = "/v1/completions", "/v1/chat/completions"


@dataclass
class Request:
    """One request as the server saw it. ``headers`` have lower-case names; ``body`` is the parsed JSON (the raw
    bytes when it is not JSON, None when there is none); ``index`` is the number at the end of ``X-Request-Id``
    (-1 without one); ``arrival`` and ``token_sent`` are ``time.perf_counter()`` readings: when the request was
    read, and just before each token event was written (so a client cannot have received it earlier);
    ``active_at_arrival`` is how many completions the server was answering when it arrived."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    rid: str
    index: int
    arrival: float
    active_at_arrival: int
    token_sent: list[float] = field(default_factory=list)

    @property
    def auth(self) -> str:
        """The Authorization header ('' without one)."""
        return self.headers.get("authorization", "")


@dataclass(frozen=True)
class Fault:
    """How one completions request goes wrong. ``status``: answer that HTTP status with a JSON error body instead.
    ``raw``: send these bytes verbatim and close the connection. ``stall``: never answer (until the client gives up
    or the server stops). The rest shape the stream: after ``after`` token events, ``data`` (a ``data:`` payload
    written as is: not JSON, not UTF-8), ``error_event`` (an SSE error event, then no more tokens: usage and
    ``[DONE]`` follow) or ``cut`` (the connection aborted: no usage, no ``[DONE]``); ``usage_delta`` is added to
    the completion tokens the usage reports."""

    status: int | None = None
    raw: bytes | None = None
    stall: bool = False
    after: int = 0
    data: bytes | None = None
    error_event: bool = False
    cut: bool = False
    usage_delta: int = 0


@dataclass(frozen=True)
class Reply:
    """A whole answer a ``metrics`` callable may give instead of text (an HTTP error, another content type)."""

    status: int = 200
    body: bytes | str | dict | list = b""
    content_type: str = "text/plain; version=0.0.4"


Faults = Fault | Mapping[int, Fault] | Callable[[Request], Fault | None] | None


class StubServer:
    """An OpenAI-compatible server on 127.0.0.1 in a daemon thread (one asyncio loop): a context manager.

    Keywords (all optional):

    * ``model``, ``max_model_len``: what /v1/models lists; ``models``: its whole answer instead (any JSON value; a
      str is sent as it is);
      ``version``: what /version says (None: 404); ``metrics``: /metrics' text, or a callable of the
      :class:`Request` giving text or a :class:`Reply` (None: 404);
    * ``token_delay_s``: the wait before each token event; ``tokens_per_chunk``: token events coalesced into one
      chunk (one write); ``usage``: the usage event (stream) or object (JSON) on or off; ``template_tokens``: what
      the chat template adds to a chat prompt's words in ``usage.prompt_tokens``; ``compact``: JSON without spaces,
      as vLLM writes it (False: ``json.dumps``' spaces, which the client parses on its slow path);
    * ``odd_framing``: legal HTTP/1.1 that vLLM does not send: a chunk extension on the second token's chunk, usage
      and ``[DONE]`` in one chunk, a trailer section after the last chunk; ``fragment``: every write split over
      three TCP segments 0.3 ms apart; ``close_after``: close the connection silently after each answer;
      ``announce_close``: say ``Connection: close`` and close;
    * ``faults``: a :class:`Fault` for every completions request, a mapping of run index to Fault, or a callable of
      the :class:`Request` (None: no fault); settable while the server runs;
    * ``api_key``: /v1/* answers 401 without ``Authorization: Bearer <api_key>``, as vLLM's ``--api-key`` does;
      ``echo_auth``: the request's Authorization header is put into every answer the server builds (/v1/models,
      /version, token events, error bodies), for the tests that check no output of a run holds a key;
    * ``tls``: an ``ssl.SSLContext`` to serve https with; ``port``: a fixed port (default: any free one);
    * ``trickle``: paths (``/metrics``, ``/v1/models``, ``/version``, ``/health``) that answer 200 with a 1 MB
      ``content-length`` and then one byte every ``trickle_interval_s`` (default 1 s) until the client gives up.

    Counters: ``connections`` accepted, ``active`` completions being answered now (a stream leaves just before its
    last write) and ``max_active`` the most at once; ``requests`` the log (:class:`Request`), ``posts`` its POSTs.
    """

    def __init__(self, *, model: str = "m", max_model_len: int = 2048, models: object = None,
                 version: str | None = "0.32.0", metrics: str | Callable[[Request], str | Reply] | None = None,
                 token_delay_s: float = 0.0, tokens_per_chunk: int = 1, usage: bool = True, template_tokens: int = 0,
                 compact: bool = True, odd_framing: bool = False, fragment: bool = False, close_after: bool = False,
                 announce_close: bool = False, faults: Faults = None, api_key: str | None = None,
                 echo_auth: bool = False, tls: ssl.SSLContext | None = None, port: int = 0,
                 trickle: Collection[str] = (), trickle_interval_s: float = 1.0) -> None:
        self.model, self.max_model_len, self.models = model, max_model_len, models
        self.version, self.metrics = version, metrics
        self.token_delay_s, self.tokens_per_chunk, self.usage = token_delay_s, max(1, tokens_per_chunk), usage
        self.template_tokens = template_tokens
        self.dumps: Callable[[Any], str] = (lambda o: json.dumps(o, separators=(",", ":"))) if compact else json.dumps
        self.odd_framing, self.fragment = odd_framing, fragment
        self.close_after, self.announce_close = close_after, announce_close
        self.faults: Faults = faults
        self.api_key, self.echo_auth, self.tls = api_key, echo_auth, tls
        self.port = port
        self.trickle, self.trickle_interval_s = frozenset(trickle), trickle_interval_s
        self.requests: list[Request] = []
        self.connections = 0
        self.active = 0
        self.max_active = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="openai-stub", daemon=True)
        self._server: asyncio.Server | None = None
        self._failed: BaseException | None = None

    # ---------------------------------------------------------------------------------------------- lifecycle
    def __enter__(self) -> StubServer:
        self._thread.start()
        if not self._ready.wait(bound_s(0.05)) or self._failed is not None:
            raise RuntimeError(f"the stub server did not start: {self._failed!r}")
        return self

    def __exit__(self, *exc: object) -> None:
        async def stop() -> None:
            assert self._server is not None
            self._server.close()
            for t in [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]:
                t.cancel()

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(bound_s(0.05))
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(bound_s(0.05))

    def serve(self) -> None:
        """Serve in this thread until the process ends (for a stand-in in another process)."""
        self._run()

    @property
    def url(self) -> str:
        return self.url_at("127.0.0.1")

    def url_at(self, host: str) -> str:
        """The base URL with another name for 127.0.0.1 (``localhost``, for a certificate's name)."""
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}"

    @property
    def posts(self) -> list[Request]:
        return [q for q in self.requests if q.method == "POST"]

    def requests_to(self, path: str) -> list[Request]:
        return [q for q in self.requests if q.path == path]

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)

        async def start() -> None:
            self._server = await asyncio.start_server(self._handle, "127.0.0.1", self.port, ssl=self.tls)
            self.port = self._server.sockets[0].getsockname()[1]

        try:
            self._loop.run_until_complete(start())
        except BaseException as exc:  # e.g. the port is taken: said by __enter__
            self._failed = exc
            self._ready.set()
            raise
        self._ready.set()
        self._loop.run_forever()

    # ---------------------------------------------------------------------------------------------- protocol
    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, ssl.SSLError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ", 2)
                headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:] if ln)}
                raw = await reader.readexactly(int(headers.get("content-length", 0)))
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw
                rid = headers.get("x-request-id", "")
                tail = rid.rsplit("-", 1)[-1]
                q = Request(method, target.split("?", 1)[0], headers, body, rid, int(tail) if tail.isdigit() else -1,
                            time.perf_counter(), self.active)
                self.requests.append(q)
                if not await self._answer(q, reader, writer) or self.close_after or self.announce_close:
                    return
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError, asyncio.CancelledError):
            return
        finally:
            try:
                writer.close()
            except Exception:
                pass

    def _echo(self, q: Request, text: str) -> str:
        return f"{text}; Authorization: {q.auth}" if self.echo_auth else text

    async def _write(self, writer: asyncio.StreamWriter, data: bytes) -> None:
        if self.fragment and len(data) > 8:  # three pieces that travel in separate segments
            cuts = [0, 3, len(data) // 2, len(data)]
            for a, b in zip(cuts, cuts[1:], strict=False):
                writer.write(data[a:b])
                await writer.drain()
                await asyncio.sleep(0.0003)
        else:
            writer.write(data)
            await writer.drain()

    async def _send(self, writer: asyncio.StreamWriter, status: int, body: object,
                    content_type: str = "application/json") -> None:
        """A whole answer: ``body`` bytes or text as they are, anything else as JSON."""
        data = body if isinstance(body, bytes) else (body if isinstance(body, str) else json.dumps(body)).encode()
        close = b"connection: close\r\n" if self.announce_close else b""
        await self._write(writer, f"HTTP/1.1 {status} {http.HTTPStatus(status).phrase}\r\ncontent-type: "
                          f"{content_type}\r\ncontent-length: {len(data)}\r\n".encode() + close + b"\r\n" + data)

    def _fault(self, q: Request) -> Fault | None:
        f = self.faults
        if f is None or isinstance(f, Fault):
            return f
        if isinstance(f, Mapping):
            return f.get(q.index)
        return f(q)

    async def _answer(self, q: Request, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Answer one request; False when the connection is done with."""
        if q.path in self.trickle:  # 200, then a byte at a time for as long as the client listens
            await self._write(writer, b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 1000000\r\n\r\n")
            for _ in range(1_000_000):
                await self._write(writer, b"#")
                await asyncio.sleep(self.trickle_interval_s)
            return False
        if self.api_key is not None and q.path.startswith("/v1") and q.auth != f"Bearer {self.api_key}":
            await self._send(writer, 401, {"error": "Unauthorized"})
        elif q.path in (_COMPLETIONS, _CHAT):
            if q.method != "POST" or not isinstance(q.body, dict):
                await self._send(writer, 405 if q.method != "POST" else 400, {"error": self._echo(q, "POST JSON")})
            else:
                return await self._complete(q, reader, writer)
        elif q.path == "/health":
            await self._send(writer, 200, "")
        elif q.path == "/v1/models":
            await self._send(writer, 200, self.models if self.models is not None else self._models(q))
        elif q.path == "/version" and self.version is not None:
            await self._send(writer, 200, {"version": f"{self.version} ({q.auth})" if self.echo_auth
                                           else self.version})
        elif q.path == "/metrics" and self.metrics is not None:
            got = self.metrics if isinstance(self.metrics, str) else self.metrics(q)
            reply = got if isinstance(got, Reply) else Reply(200, got)
            await self._send(writer, reply.status, reply.body, reply.content_type)
        else:
            await self._send(writer, 404, {"error": self._echo(q, f"no {q.path}")})
        return True

    def _models(self, q: Request) -> dict:
        entry: dict[str, Any] = {"id": self.model, "object": "model", "max_model_len": self.max_model_len}
        if self.echo_auth:
            entry.update(owned_by=q.auth, root=q.auth, permission=[{"note": f"you sent {q.auth}"}])
        return {"object": "list", "data": [entry]}

    async def _complete(self, q: Request, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        fault = self._fault(q) or Fault()
        if fault.stall:
            await reader.read()  # until the client gives up and closes (or the server stops)
            return False
        if fault.raw is not None:
            await self._write(writer, fault.raw)
            return False
        if fault.status is not None:
            await self._send(writer, fault.status, {"error": {
                "message": self._echo(q, "injected failure"), "type": "InjectedError", "code": fault.status}})
            return True
        body, chat = q.body, q.path == _CHAT
        n = int(body.get("max_completion_tokens") or body.get("max_tokens") or 16) if chat \
            else int(body.get("max_tokens") or 16)
        if chat:
            prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", [])) \
                + self.template_tokens
        else:
            prompt = body.get("prompt") or []
            prompt_tokens = len(prompt.split()) if isinstance(prompt, str) else len(prompt)
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": n + fault.usage_delta,
                 "total_tokens": prompt_tokens + n + fault.usage_delta}
        self.active += 1
        self.max_active = max(self.max_active, self.active)
        if body.get("stream"):
            return await self._stream(q, writer, chat, n, usage, fault)
        await asyncio.sleep(self.token_delay_s * n)
        text = "".join(self._text(q, k) for k in range(n))
        answer: dict[str, Any] = {
            "id": f"{'chatcmpl' if chat else 'cmpl'}-{q.index}", "created": int(time.time()), "model": self._model(q),
            "object": "chat.completion" if chat else "text_completion",
            "choices": [{"index": 0, "finish_reason": "length",
                         **({"message": {"role": "assistant", "content": text}} if chat else {"text": text})}]}
        if self.usage:
            answer["usage"] = usage
        self.active -= 1
        await self._send(writer, 200, answer)
        return True

    def _text(self, q: Request, k: int) -> str:
        return f" {q.auth}" if self.echo_auth else f" t{k}"

    def _model(self, q: Request) -> str:
        return q.auth if self.echo_auth else self.model

    async def _stream(self, q: Request, writer: asyncio.StreamWriter, chat: bool, n: int, usage: dict,
                      fault: Fault) -> bool:
        base = {"id": f"{'chatcmpl' if chat else 'cmpl'}-{q.index}",
                "object": "chat.completion.chunk" if chat else "text_completion", "created": int(time.time()),
                "model": self._model(q)}

        def event(obj: object) -> bytes:
            return b"data: " + (obj if isinstance(obj, bytes) else self.dumps(obj).encode()) + b"\n\n"

        def chunk(data: bytes, ext: bool = False) -> bytes:
            return f"{len(data):x}{';x=1' if ext else ''}\r\n".encode() + data + b"\r\n"

        head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n"
        writer.write(head + (b"connection: close\r\n" if self.announce_close else b"") + b"\r\n")
        if chat:  # vLLM's first chat event: the role, no token
            await self._write(writer, chunk(event({**base, "choices": [
                {"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None,
                 "finish_reason": None}]})))
        group: list[bytes] = []
        for k in range(n + 1):
            if k == fault.after and (fault.data is not None or fault.error_event or fault.cut):
                if fault.cut:
                    self.active -= 1
                    writer.transport.abort()
                    return False
                if fault.data is not None:
                    await self._write(writer, chunk(event(fault.data)))
                if fault.error_event:
                    await self._write(writer, chunk(event({"error": {
                        "message": self._echo(q, "engine exploded"), "type": "InternalServerError", "code": 500}})))
                    break
            if k == n:
                break
            await asyncio.sleep(self.token_delay_s)
            last = "length" if k == n - 1 else None
            choice = ({"index": 0, "delta": {"content": self._text(q, k)}, "logprobs": None, "finish_reason": last}
                      if chat else {"index": 0, "text": self._text(q, k), "logprobs": None, "finish_reason": last,
                                    "stop_reason": None})
            group.append(event({**base, "choices": [choice], **({} if chat else {"usage": None})}))
            if len(group) == self.tokens_per_chunk or k == n - 1 or k + 1 == fault.after:
                q.token_sent.extend([time.perf_counter()] * len(group))
                await self._write(writer, chunk(b"".join(group), ext=self.odd_framing and k == 1))
                group = []
        done = event(b"[DONE]")
        closing = event({**base, "choices": [], "usage": usage}) if self.usage else b""
        if self.odd_framing:  # usage and [DONE] in one chunk, with a trailer section after the last chunk
            tail = chunk(closing + done) + b"0\r\nx-trailer: 1\r\n\r\n"
        else:
            tail = (chunk(closing) if closing else b"") + chunk(done) + b"0\r\n\r\n"
        self.active -= 1  # before the last write: the client may send its next request right after it
        await self._write(writer, tail)
        return True
