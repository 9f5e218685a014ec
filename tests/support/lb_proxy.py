"""A small round-robin HTTP/1.1 reverse proxy for the tests: a load balancer in front of several replicas.

It does what an ordinary L7 load balancer (nginx ``upstream`` round robin, an Envoy/Kubernetes Service) does for
an OpenAI-compatible deployment, and no more:

* each request (``/v1/*``, ``/health``, ``/version``, ...) goes to the next replica in turn, request by request
  (not connection by connection: the proxy answers with ``Connection: close``, so a client's next request is a
  new connection and a new pick);
* the response is relayed byte for byte as it arrives, unbuffered, so a streamed (SSE, chunked) completion reaches
  the client token by token;
* ``/metrics`` goes to one replica too, in the same rotation: the numbers a client reads there are one replica's,
  never the deployment's (which is why the plugin reads each replica's own /metrics).

One asyncio loop in a daemon thread; ``counts`` says how many requests each replica was sent (per path prefix).
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter

_HEAD_LIMIT = 65536


class RoundRobinProxy:
    """``with RoundRobinProxy([("127.0.0.1", 8001), ("127.0.0.1", 8002)]) as lb: lb.url`` → ``http://127.0.0.1:N``."""

    def __init__(self, backends: list[tuple[str, int]], host: str = "127.0.0.1") -> None:
        if not backends:
            raise ValueError("a proxy needs at least one backend")
        self.backends = list(backends)
        self.host = host
        self.port = 0
        self.counts: Counter[tuple[int, str]] = Counter()  # (backend index, first path segment) -> requests
        self._next = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def requests_to(self, index: int, prefix: str = "/v1/completions") -> int:
        return sum(n for (i, path), n in self.counts.items() if i == index and path.startswith(prefix))

    # ---- lifecycle -------------------------------------------------------------------------------------------
    def start(self) -> RoundRobinProxy:
        self._thread = threading.Thread(target=self._run, name="lb-proxy", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the proxy did not start")
        return self

    def stop(self) -> None:
        if self._loop is not None and self._server is not None:
            self._loop.call_soon_threadsafe(self._server.close)
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self) -> RoundRobinProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        loop = self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        self._server = loop.run_until_complete(asyncio.start_server(self._handle, self.host, 0))
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            loop.close()

    # ---- one client connection: one request, one response ----------------------------------------------------
    def _pick(self) -> int:
        i = self._next
        self._next = (self._next + 1) % len(self.backends)
        return i

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                return  # an idle connection the client closed (or pre-opened and never used)
            if len(head) > _HEAD_LIMIT:
                return
            lines = head.decode("latin-1").split("\r\n")
            method, path, _version = lines[0].split(" ", 2)
            headers = [ln for ln in lines[1:] if ln]
            length = 0
            kept = []
            for ln in headers:
                name, _, value = ln.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
                if name.strip().lower() in ("connection", "keep-alive", "proxy-connection"):
                    continue  # hop-by-hop (RFC 9110 §7.6.1): the proxy's own connection management
                kept.append(ln)
            body = await reader.readexactly(length) if length else b""
            index = self._pick()
            self.counts[(index, path.split("?")[0])] += 1
            host, port = self.backends[index]
            up_reader, up_writer = await asyncio.open_connection(host, port)
            try:
                up_writer.write((f"{method} {path} HTTP/1.1\r\n" + "\r\n".join(kept)
                                 + "\r\nConnection: close\r\n\r\n").encode("latin-1") + body)
                await up_writer.drain()
                # the response head: drop the replica's Connection header, say close (one request per connection)
                resp_head = await up_reader.readuntil(b"\r\n\r\n")
                rlines = [ln for ln in resp_head.decode("latin-1").split("\r\n") if ln]
                rlines = [rlines[0]] + [ln for ln in rlines[1:]
                                        if ln.partition(":")[0].strip().lower() not in ("connection", "keep-alive")]
                writer.write(("\r\n".join(rlines) + "\r\nConnection: close\r\n\r\n").encode("latin-1"))
                await writer.drain()
                while True:  # relay as it arrives: every SSE event the replica writes goes straight on
                    chunk = await up_reader.read(65536)
                    if not chunk:
                        break
                    writer.write(chunk)
                    await writer.drain()
            finally:
                up_writer.close()
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            writer.close()
