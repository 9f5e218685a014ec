"""The load generator's event loop: one ``epoll`` over non-blocking sockets, the dispatcher that starts
requests while slots are free, kernel receive timestamps, and the idle-time finalisation of responses.

Not thread-safe; one :class:`EventLoop` per run (see :func:`~pytest_roofline.measure.loadgen.run_load`).
Reading a socket and decoding the HTTP framing is :class:`~pytest_roofline.measure.loadgen._http1.Connection`'s,
SSE decoding :func:`~pytest_roofline.measure.loadgen._sse.decode_completion_stream`'s; this module decides
what runs when.  Kernel receive stamps are on ``CLOCK_REALTIME``; the REALTIME − perf_counter offset is
measured before and after the run (:func:`clock_offset_ns`), and interpolated if the wall clock was stepped.
"""

from __future__ import annotations

import collections
import errno
import math
import os
import select
import socket
import ssl
import time
from array import array
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from pytest_roofline import redact
from pytest_roofline.errors import LoadgenError
from pytest_roofline.measure.loadgen._http1 import (
    BROKEN,
    CONNECTING,
    DONE,
    FAILED,
    HANDSHAKE,
    HEAD,
    IDLE,
    SENDING,
    Connection,
    frame_request,
    open_socket,
    request_head,
    target_url,
    tls_context,
)
from pytest_roofline.measure.loadgen._prompts import BodyTemplate, PromptMaker
from pytest_roofline.measure.loadgen._records import LoadSpec, Progress, RequestRecord
from pytest_roofline.measure.loadgen._sse import decode_completion_stream
from pytest_roofline.quantities.measurement import StopCheck

__all__ = ["EventLoop", "Phase", "clock_offset_ns"]

perf_counter = time.perf_counter
perf_counter_ns = time.perf_counter_ns


class _Req:
    """Hot-path state of one request (turned into a RequestRecord when it is finalised)."""

    __slots__ = (
        "index", "rid", "warmup", "payload", "scheduled", "sent", "end", "pieces", "ok",
        "error", "http_status", "attempts", "phase", "discarded",
    )

    def __init__(self, index: int, rid: str, warmup: bool, payload: bytes) -> None:
        self.index = index
        self.rid = rid
        self.warmup = warmup
        self.payload = payload
        self.scheduled: float | None = None
        self.sent: float | None = None
        self.end: int | None = None  # perf_counter ns
        self.pieces: list = []  # flat: [t_ns, bytes, t_ns, bytes, ...] of de-chunked body bytes
        self.ok = False
        self.error: str | None = None
        self.http_status: int | None = None
        self.attempts = 1
        self.phase: Phase | None = None
        self.discarded = False  # in flight at an adaptive stop: its connection was closed (RequestRecord.discarded)

    def __repr__(self) -> str:  # never show the payload: it carries the Authorization header
        return f"_Req(index={self.index}, rid={self.rid!r})"


class Phase:
    """One phase (warm-up or measurement) of a run."""

    def __init__(self, name: str, warmup: bool) -> None:
        self.name = name
        self.warmup = warmup
        self.reqs: list[_Req] = []      # pre-built requests, in send order
        self.next_index = 0             # index of the next request to build lazily
        self.schedule: np.ndarray | None = None  # open loop offsets (s), None = closed loop
        self.cap = 1                    # max requests in flight
        self.total: int | None = None   # request count, None = duration-limited
        self.duration: float | None = None
        self.deadline: float | None = None
        self.stride = 1                 # index step between requests (a worker of N processes: N)
        self.start_at: float | None = None  # shared start (perf_counter s) of a multi-process run
        self.start = 0.0
        self.sent = 0
        self.done = 0
        self.failed = 0


def clock_offset_ns() -> int:
    """CLOCK_REALTIME − perf_counter in ns, from the tightest of several bracketing reads."""
    best: tuple[int, int] | None = None
    rt = time.clock_gettime_ns
    clk = time.CLOCK_REALTIME
    for _ in range(64):
        a = perf_counter_ns()
        r = rt(clk)
        b = perf_counter_ns()
        if best is None or b - a < best[0]:
            best = (b - a, r - (a + b) // 2)
    assert best is not None
    return best[1]


class EventLoop:
    """The epoll loop of one run."""

    def __init__(self, base_url: str, spec: LoadSpec, api_key: str | None,
                 on_progress: Callable[[Progress], None] | None, tls: ssl.SSLContext | None = None) -> None:
        self.spec = spec
        self.on_progress = on_progress
        scheme, self.host, self.port, self.path, host_hdr = target_url(base_url, spec.api)
        self.url = f"{scheme}://{host_hdr}{self.path}"
        # https: every connection runs TLS in memory over its plain socket (_http1's docstring)
        self.tls: ssl.SSLContext | None = (tls or tls_context()) if scheme == "https" else None
        if api_key is not None and any(c in api_key for c in "\r\n\0"):
            raise ValueError("api_key contains a control character")
        self._secret = api_key or None
        try:
            infos = socket.getaddrinfo(self.host, self.port, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise LoadgenError(f"cannot resolve {self.host}:{self.port}: {exc}") from None
        self.family: int = infos[0][0]
        self.addr: Any = infos[0][4]
        self._head = request_head(self.path, host_hdr, api_key)
        self._make_prompt = PromptMaker(spec)
        self._body = BodyTemplate(spec)
        self._chat = spec.api == "chat"
        rid = "".join(c if (c.isalnum() or c in "-_.") else "_" for c in spec.point_id)[:64]
        self._rid_prefix = f"{rid}-{os.urandom(4).hex()}"
        self.ep = select.epoll()
        self.conns: dict[int, Connection] = {}
        self.idle: list[Connection] = []
        self.connecting = 0
        self.in_flight = 0  # requests holding a slot (connecting, sending or awaiting the response)
        self.pending: collections.deque[_Req] = collections.deque()  # due, waiting for a slot
        self.finalize_q: collections.deque[_Req] = collections.deque()
        self.running: dict[int, _Req] = {}  # index -> sent request, for timeouts
        self.records: dict[int, RequestRecord] = {}
        self.ts_user_reads = 0  # reads without a kernel stamp, of the connections closed so far
        self.read_lag = array("q")  # ns, one per kernel-stamped read (shared by all connections)
        self.offset_ns = clock_offset_ns()
        self.offset_ns_end = self.offset_ns
        self.t_offset0 = perf_counter_ns()
        self.t_offset1 = self.t_offset0
        self.phase: Phase = Phase("none", False)
        self._dispatching = False
        self._redispatch = False
        self.connect_failures = 0
        self.aborted: str | None = None
        self.failures = 0  # finalised requests that failed (every phase), for LoadSpec.max_failures
        self._last_progress = 0.0
        self.coalesced = 0
        #: the adaptive sweep's stop check (``run_load(stop_check=...)``): once it gives a reason, nothing more is
        #: sent, requests in flight finish and are recorded, due but unsent ones are dropped (never recorded)
        self.stop_check: StopCheck | None = None
        self.stopped: str | None = None
        self.measured: list[RequestRecord] = []  # finalised measured (non-warm-up) records, for the stop check

    # ---- request construction -------------------------------------------------------------------------

    def build(self, index: int, warmup: bool) -> _Req:
        return self.build_many(range(index, index + 1), warmup)[0]

    def build_many(self, indices: Iterable[int], warmup: bool) -> list[_Req]:
        """Pre-serialise requests (HTTP head and JSON body) for ``indices``."""
        indices = list(indices)
        head, body, prefix = self._head, self._body.body, self._rid_prefix
        out = []
        maker = self._make_prompt
        for index, prompt in zip(indices, maker.many(indices), strict=True):
            rid = f"{prefix}-{index}"
            n_out = maker.lengths(index)[1] if maker.spec.variable else None  # per-request lengths: _prompts
            out.append(_Req(index, rid, warmup, frame_request(head, rid, body(prompt, n_out))))
        return out

    # ---- connections ----------------------------------------------------------------------------------

    def _open_conn(self, req: _Req | None) -> None:
        """Open a connection; send ``req`` on it once connected (or park it idle when ``req`` is None)."""
        sock = open_socket(self.family)
        conn = Connection(sock, perf_counter(), self.offset_ns, self.read_lag, self.tls, self.host)
        err = sock.connect_ex(self.addr)
        if err == 0 and conn.tls is not None:  # TCP is up at once (loopback): the handshake starts
            self.conns[conn.fd] = conn
            self.connecting += 1
            conn.req = req
            self.ep.register(conn.fd, select.EPOLLIN)
            self._start_handshake(conn)
            return
        if err == 0:
            self.conns[conn.fd] = conn
            self.ep.register(conn.fd, select.EPOLLIN)
            self._connected(conn)
        elif err in (errno.EINPROGRESS, errno.EAGAIN, errno.EWOULDBLOCK):
            self.conns[conn.fd] = conn
            self.connecting += 1
            conn.req = req
            self.ep.register(conn.fd, select.EPOLLOUT)
            return
        else:
            sock.close()
            self._connect_failed(req, err)
            return
        if req is not None:
            self._send(conn, req)

    def _connected(self, conn: Connection) -> None:
        conn.state = IDLE
        self.connect_failures = 0

    def _on_connect_event(self, conn: Connection, ev: int) -> None:
        err = conn.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if not (err or ev & (select.EPOLLERR | select.EPOLLHUP)) and conn.tls is not None:
            self.ep.modify(conn.fd, select.EPOLLIN)
            self._start_handshake(conn)  # still "connecting" until the handshake is done
            return
        self.connecting -= 1
        req = conn.req
        conn.req = None
        if err or ev & (select.EPOLLERR | select.EPOLLHUP):
            self._discard(conn)
            self._connect_failed(req, err or errno.ECONNRESET)
            return
        self.ep.modify(conn.fd, select.EPOLLIN)
        self._connected(conn)
        if req is not None:
            self._send(conn, req)
        else:
            self.idle.append(conn)

    # ---- TLS handshake (non-blocking: the connection counts as connecting until it is done) ------------

    def _start_handshake(self, conn: Connection) -> None:
        conn.state = HANDSHAKE
        self._handshake_step(conn, conn.handshake())

    def _on_handshake_event(self, conn: Connection, ev: int) -> None:
        if ev & select.EPOLLOUT and conn.out:
            self._flush_raw(conn)
        if ev & (select.EPOLLIN | select.EPOLLERR | select.EPOLLHUP) and conn.fd in self.conns:
            self._handshake_step(conn, conn.handshake_read())

    def _flush_raw(self, conn: Connection) -> None:
        """Send what the handshake owes the server; EPOLLOUT while some is left."""
        try:
            n = conn.sock.send(conn.out)
        except (BlockingIOError, InterruptedError):
            n = 0
        except OSError as exc:
            conn.error = f"TLS handshake failed: {exc}"
            self._handshake_step(conn, False)
            return
        conn.out = conn.out[n:]
        self.ep.modify(conn.fd, select.EPOLLIN | (select.EPOLLOUT if conn.out else 0))

    def _handshake_step(self, conn: Connection, done: bool | None) -> None:
        if done is not False and conn.out:
            self._flush_raw(conn)
            if conn.fd not in self.conns:
                return
        if done is None:
            return
        self.connecting -= 1
        req = conn.req
        conn.req = None
        if done is False:
            self._discard(conn)
            self.connect_failures += 1
            if self.connect_failures > 2 * self.phase.cap + 16 and self.aborted is None:
                self.aborted = f"aborted: {conn.error} ({self.connect_failures} times in a row)"
            if req is not None:
                self._fail(req, conn.error)
            return
        self._connected(conn)
        if req is not None:
            self._send(conn, req)
        else:
            self.idle.append(conn)

    def _discard(self, conn: Connection) -> None:
        """Forget a connection that never carried a request (a failed connect or handshake) and close it."""
        self.conns.pop(conn.fd, None)
        try:
            self.ep.unregister(conn.fd)
        except (OSError, ValueError):
            pass
        conn.sock.close()

    def _connect_failed(self, req: _Req | None, err: int) -> None:
        self.connect_failures += 1
        msg = f"connect to {self.host}:{self.port} failed: {os.strerror(err)}"
        if self.connect_failures > 2 * self.phase.cap + 16 and self.aborted is None:
            self.aborted = f"aborted: {msg} ({self.connect_failures} times in a row)"
        if req is not None:
            self._fail(req, msg)

    def _close_conn(self, conn: Connection) -> None:
        if self.conns.pop(conn.fd, None) is None:
            return
        self.ts_user_reads += conn.user_reads
        if conn.state in (CONNECTING, HANDSHAKE):
            self.connecting -= 1
        try:
            self.ep.unregister(conn.fd)
        except (OSError, ValueError):
            pass
        try:
            conn.sock.close()
        except OSError:
            pass
        if conn.state == IDLE and conn in self.idle:
            self.idle.remove(conn)

    @staticmethod
    def _detach(conn: Connection) -> _Req | None:
        """Take the request off ``conn``, with the status code its response had (if one arrived)."""
        req = conn.req
        conn.req = None
        if req is not None:
            req.http_status = conn.status
        return req

    def preconnect(self, n: int, timeout_s: float = 30.0) -> None:
        """Open up to ``n`` idle keep-alive connections before the run (not timed)."""
        for _ in range(max(0, n - len(self.conns))):
            self._open_conn(None)
        for conn in self.conns.values():
            if conn.state == IDLE and conn.req is None and conn not in self.idle:
                self.idle.append(conn)
        deadline = perf_counter() + timeout_s
        why = ""
        while self.connecting and perf_counter() < deadline:
            for fd, ev in self.ep.poll(0.05):
                c = self.conns.get(fd)
                if c is not None and c.state == CONNECTING:
                    self._on_connect_event(c, ev)
                elif c is not None and c.state == HANDSHAKE:
                    self._on_handshake_event(c, ev)
                    why = c.error or why
        for conn in list(self.conns.values()):
            if conn.state in (CONNECTING, HANDSHAKE):
                self._close_conn(conn)
        if n and not self.idle:
            raise LoadgenError(f"cannot connect to {self.host}:{self.port}" + (f": {why}" if why else ""))
        self.connect_failures = 0

    # ---- sending --------------------------------------------------------------------------------------

    def _send(self, conn: Connection, req: _Req) -> None:
        conn.req = req
        req.pieces = []
        req.http_status = None
        conn.begin(req.pieces)
        data = req.payload if conn.tls is None else conn.encrypt(req.payload)
        t = perf_counter()
        try:
            n = conn.sock.send(data)
        except (BlockingIOError, InterruptedError):
            n = 0
        except OSError as exc:
            req.sent = t
            self._conn_error(conn, f"send failed: {exc}", before_response=True)
            return
        req.sent = t
        self.running[req.index] = req
        if n < len(data):
            conn.out = data[n:]
            self.ep.modify(conn.fd, select.EPOLLIN | select.EPOLLOUT)
        else:
            conn.out = b""
            conn.state = HEAD

    def _on_writable(self, conn: Connection) -> None:
        try:
            n = conn.sock.send(conn.out)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._conn_error(conn, f"send failed: {exc}", before_response=True)
            return
        conn.out = conn.out[n:]
        if not conn.out:
            self.ep.modify(conn.fd, select.EPOLLIN)
            if conn.state == SENDING:
                conn.state = HEAD

    # ---- receiving ------------------------------------------------------------------------------------

    def _on_read(self, conn: Connection, r: int) -> None:
        """What a read that did not just continue the response (``conn.read()`` != MORE) means."""
        if r == DONE:
            self._complete(conn, conn.t_read)
        elif r == FAILED:
            self._conn_error(conn, conn.error, before_response=False)
        elif r == BROKEN:
            self._conn_error(conn, conn.error, before_response=conn.awaiting_response)
        else:  # STRAY: bytes or a close on an idle connection; drop it
            self._close_conn(conn)

    # ---- completion and errors ------------------------------------------------------------------------

    def _complete(self, conn: Connection, t_ns: int) -> None:
        req = self._detach(conn)
        assert req is not None
        conn.used += 1
        req.end = t_ns
        req.ok = req.http_status == 200
        self.running.pop(req.index, None)
        self.in_flight -= 1
        self.finalize_q.append(req)
        ph = req.phase
        assert ph is not None
        ph.done += 1
        if not req.ok:
            ph.failed += 1
        if conn.ka:
            conn.state = IDLE
            self.idle.append(conn)
        else:
            self._close_conn(conn)
        self._dispatch()

    def _conn_error(self, conn: Connection, msg: str, *, before_response: bool) -> None:
        req = self._detach(conn)
        reused = conn.used > 0
        self._close_conn(conn)
        if req is None:
            return
        if before_response and reused and req.attempts == 1 and self.aborted is None:
            # a keep-alive connection the server had already closed: retry once on a fresh connection
            self.running.pop(req.index, None)
            req.attempts += 1
            req.sent = None
            self.in_flight -= 1
            self.pending.appendleft(req)
            self._dispatch()
            return
        self._fail(req, msg)

    def _fail(self, req: _Req, msg: str) -> None:
        """Mark a request (which holds a slot) as failed and free its slot."""
        self.in_flight -= 1
        self.running.pop(req.index, None)
        req.ok = False
        req.error = msg
        req.end = perf_counter_ns()
        self.finalize_q.append(req)
        ph = req.phase
        assert ph is not None
        ph.done += 1
        ph.failed += 1
        self._dispatch()

    # ---- dispatching ----------------------------------------------------------------------------------

    def _dispatch(self) -> None:
        """Start due requests while slots are free (re-entrant calls are folded into the outer loop)."""
        if self._dispatching:
            self._redispatch = True
            return
        self._dispatching = True
        try:
            while True:
                self._redispatch = False
                self._dispatch_once()
                if not self._redispatch:
                    break
        finally:
            self._dispatching = False

    def _dispatch_once(self) -> None:
        ph = self.phase
        cap = ph.cap
        while self.in_flight < cap and self.aborted is None and self.stopped is None:
            if self.pending:
                req = self.pending.popleft()
            else:
                nxt = self._next_closed()
                if nxt is None:
                    return
                req = nxt
            self.in_flight += 1
            if self.idle:
                self._send(self.idle.pop(), req)
            else:
                self._open_conn(req)

    def _next_closed(self) -> _Req | None:
        """Closed loop: the next request, if the phase may still send one."""
        ph = self.phase
        if ph.schedule is not None:
            return None
        if ph.total is not None and ph.sent >= ph.total:
            return None
        if ph.deadline is not None and perf_counter() >= ph.deadline:
            return None
        return self._take(ph)

    def _take(self, ph: Phase) -> _Req:
        i = ph.sent
        if i < len(ph.reqs):
            req = ph.reqs[i]
        else:  # only in duration-limited closed loops, when the idle-time top-up fell behind
            req = self.build(ph.next_index, ph.warmup)
            ph.next_index += ph.stride
            ph.reqs.append(req)
        ph.reqs[i] = None  # type: ignore[call-overload]  # drop the reference once taken
        ph.sent += 1
        req.phase = ph
        return req

    def _low_on_requests(self, ph: Phase) -> bool:
        """Duration-limited closed loop: fewer than two rounds of pre-built requests left?"""
        return ph.total is None and ph.schedule is None and len(ph.reqs) - ph.sent < 2 * ph.cap

    def _topup(self, ph: Phase) -> None:
        """Duration-limited closed loop: pre-build a few more requests (idle-time work, ~1 ms at most)."""
        n = max(4, min(64, 16384 // self.spec.input_len)) * ph.stride
        ph.reqs.extend(self.build_many(range(ph.next_index, ph.next_index + n, ph.stride), ph.warmup))
        ph.next_index += n

    # ---- finalisation (runs when the loop is idle) ----------------------------------------------------

    def _to_perf(self, t_ns: int) -> float:
        if self.offset_ns_end != self.offset_ns and self.t_offset1 > self.t_offset0:
            # the wall clock was stepped during the run: interpolate the REALTIME offset
            frac = min(max((t_ns - self.t_offset0) / (self.t_offset1 - self.t_offset0), 0.0), 1.0)
            off = self.offset_ns + (self.offset_ns_end - self.offset_ns) * frac
            return (t_ns + self.offset_ns - off) * 1e-9
        return t_ns * 1e-9

    def _finalize(self, req: _Req) -> None:
        spec = self.spec
        n_in, n_out = self._make_prompt.lengths(req.index)
        rec = RequestRecord(
            index=req.index, request_id=req.rid, warmup=req.warmup,
            input_len=n_in, output_len=n_out,
            scheduled_s=req.scheduled, sent_s=req.sent, attempts=req.attempts,
            http_status=req.http_status,
        )
        rec.end_s = self._to_perf(req.end) if req.end is not None else None
        ok = req.ok
        error = req.error
        pieces = req.pieces
        req.pieces = []
        req.payload = b""
        if req.http_status is not None and req.http_status != 200:
            text = b"".join(pieces[1::2])[:500].decode("utf-8", "replace")
            ok = False
            error = f"HTTP {req.http_status}: {text}"
        elif pieces:
            drift = self.offset_ns_end != self.offset_ns
            stream = decode_completion_stream(pieces, self._to_perf if drift else None, self._chat)
            if stream.stream_error is not None:
                ok = False
                error = stream.stream_error
            elif error is None:
                error = stream.parse_error
            self.coalesced += stream.coalesced
            chunk_times = stream.chunk_times_s
            rec.chunk_times_s = chunk_times
            if chunk_times:
                rec.first_token_s = chunk_times[0]
            usage = stream.usage
            if isinstance(usage, dict):
                pt, ct = usage.get("prompt_tokens"), usage.get("completion_tokens")
                rec.prompt_tokens = int(pt) if pt is not None else None
                rec.completion_tokens = int(ct) if ct is not None else None
            if ok:
                if error is not None:
                    ok = False
                elif not chunk_times:
                    ok, error = False, "no token chunk received"
                elif not stream.done:
                    ok, error = False, "stream ended without data: [DONE]"
                elif rec.completion_tokens is not None and rec.completion_tokens > rec.output_len:
                    # a server never generates more than max_tokens: its count cannot be trusted, and the
                    # throughput would be taken from it (review case 9.72: usage 10x the tokens streamed passed)
                    ok, error = False, (f"the server's usage reports {rec.completion_tokens} completion tokens for "
                                        f"max_tokens {rec.output_len}: more than it may generate")
        elif ok:
            ok, error = False, "empty response"
        if req.discarded:  # cancelled at an adaptive stop: neither a measurement nor a failure
            rec.status = "discarded"
            rec.error = req.error
            self.records[req.index] = rec
            if not rec.warmup:
                self.measured.append(rec)
            return
        rec.status = "ok" if ok else "error"
        if not ok and error is None:
            error = "request failed"
        rec.error = self._scrub(error)
        self.records[req.index] = rec
        if not rec.warmup:
            self.measured.append(rec)
        if not ok:
            self.failures += 1
            limit = spec.max_failures
            if limit is not None and self.failures > limit and self.aborted is None:
                self.aborted = (f"aborted: {self.failures} request(s) failed, more than the {limit} allowed "
                                f"(first: {rec.error})")

    def _scrub(self, text: str | None) -> str | None:
        """A request's error text (it quotes the server's answer) through the one redaction step."""
        return None if text is None else redact.redact_text(text, [self._secret])

    def finalize_all(self) -> None:
        q = self.finalize_q
        while q:
            self._finalize(q.popleft())

    # ---- the loop -------------------------------------------------------------------------------------

    def _progress(self, ph: Phase, now: float, force: bool = False) -> None:
        if self.on_progress is None or (not force and now - self._last_progress < 0.2):
            return
        self._last_progress = now
        self.on_progress(Progress(phase=ph.name, sent=ph.sent, completed=ph.done - ph.failed,
                                  failed=ph.failed, in_flight=self.in_flight, total=ph.total,
                                  elapsed_s=now - ph.start))

    def _phase_over(self, ph: Phase, next_i: int, n_sched: int) -> bool:
        if self.in_flight:
            return False
        if self.aborted is not None or self.stopped is not None:
            return True  # nothing more is sent: requests still waiting for a slot are dropped
        if self.pending:
            return False
        if ph.schedule is not None:
            return next_i >= n_sched
        if ph.total is not None and ph.sent >= ph.total:
            return True
        return ph.deadline is not None and perf_counter() >= ph.deadline

    def run_phase(self, ph: Phase) -> None:
        self.phase = ph
        ep_poll = self.ep.poll
        conns = self.conns
        on_read = self._on_read
        read = Connection.read
        finalize_q = self.finalize_q
        EPOLLIN = select.EPOLLIN
        EPOLLOUT = select.EPOLLOUT
        EPOLLERRHUP = select.EPOLLERR | select.EPOLLHUP
        self._last_progress = 0.0
        ph.start = perf_counter() if ph.start_at is None else ph.start_at
        if ph.duration is not None:
            ph.deadline = ph.start + ph.duration
        sched = ph.schedule
        n_sched = len(sched) if sched is not None else 0
        sched_abs = (sched + ph.start).tolist() if sched is not None else []
        next_i = 0
        next_housekeeping = ph.start + 0.1
        timeout_s = self.spec.request_timeout_s
        backlog = 2 * min(ph.cap, 4096) + 64
        self._dispatch()
        while True:
            now = perf_counter()
            if next_i < n_sched and sched_abs[next_i] <= now and self.stopped is None:
                while next_i < n_sched and sched_abs[next_i] <= now:
                    req = self._take(ph)
                    req.scheduled = sched_abs[next_i]
                    self.pending.append(req)
                    next_i += 1
                self._dispatch()
            if now >= next_housekeeping:
                next_housekeeping = now + 0.1
                self._check_timeouts(now, timeout_s)
                if ph.deadline is not None and self.in_flight < ph.cap:
                    self._dispatch()
                self._progress(ph, now)
                if (self.stop_check is not None and not ph.warmup and self.stopped is None
                        and self.stop_check.wants_look(ph.done, now - ph.start)):
                    self._look(ph, now)
            if self._phase_over(ph, next_i, n_sched):
                break
            if finalize_q or self._low_on_requests(ph):
                wait = 0.0
            elif next_i < n_sched:
                wait = sched_abs[next_i] - now
                # epoll_wait sleeps whole milliseconds (rounded up): sleep the whole ones, spin the rest
                wait = 0.0 if wait < 0.001 else min(math.floor(wait * 1000.0) * 0.001, 0.1)
            elif ph.deadline is not None and ph.schedule is None and now < ph.deadline:
                wait = min(max(ph.deadline - now, 0.0), 0.1)
            else:
                wait = 0.1
            events = ep_poll(wait)
            if not events:
                # idle: keep enough requests pre-built (so that building never delays a send), then
                # finalise finished requests one at a time
                if self._low_on_requests(ph):
                    self._topup(ph)
                elif finalize_q:
                    self._finalize(finalize_q.popleft())
                continue
            for fd, ev in events:
                conn = conns.get(fd)
                if conn is None:
                    continue
                if conn.state == CONNECTING:
                    self._on_connect_event(conn, ev)
                    continue
                if conn.state == HANDSHAKE:
                    self._on_handshake_event(conn, ev)
                    continue
                if ev & EPOLLOUT and conn.out:
                    self._on_writable(conn)
                if ev & (EPOLLIN | EPOLLERRHUP) and conn.fd in conns:
                    r = read(conn)
                    if r:
                        on_read(conn, r)
            if len(finalize_q) > backlog:
                # never idle (overload): finalise anyway so that raw response bytes do not pile up
                self._finalize(finalize_q.popleft())
        self._progress(ph, perf_counter(), force=True)

    def _look(self, ph: Phase, now: float) -> None:
        """One look of the stop check: finalise what finished, hand it the measured records and the window over
        which every received token belongs to a finished request (up to the oldest in-flight send)."""
        self.finalize_all()
        sent = [r.sent for r in self.running.values() if r.sent is not None]
        horizon = min(sent) if sent else now
        assert self.stop_check is not None  # _look runs only with a stop check
        reason = self.stop_check(self.measured, (ph.start, horizon), now - ph.start)
        if reason:
            self.stopped = str(reason)
            self.pending.clear()
            self._discard_after(ph, horizon)

    def _discard_after(self, ph: Phase, horizon: float) -> None:
        """At an adaptive stop: every request sent after ``horizon`` (the oldest send still in flight) leaves the
        sample. The ones in flight are cancelled: their connections are closed, which makes vLLM abort them (its
        routes are wrapped in ``with_cancellation`` and the engine aborts a request whose stream is cancelled:
        ``vllm/entrypoints/serve/utils/api_utils.py`` and ``vllm/v1/engine/async_llm.py`` at v0.32.0), so the
        GPU stops working on requests whose results nobody needs. The ones that already finished are kept in the
        record but marked too: a sample that kept the fast late requests and lost the slow ones would be biased,
        and the stop check decided on the requests sent by the horizon alone (``measure/plan/stopping.py _cohort``)."""
        for conn in self.conns.values():  # still connecting: never sent, so dropped like the pending ones
            if conn.req is not None and conn.state in (CONNECTING, HANDSHAKE):
                conn.req = None
                self.in_flight -= 1
        by_req = {id(c.req): c for c in self.conns.values() if c.req is not None}
        t_end = perf_counter_ns()
        for req in list(self.running.values()):
            holder = by_req.get(id(req))
            if holder is not None:
                self._detach(holder)
                self._close_conn(holder)
            self.in_flight -= 1
            self.running.pop(req.index, None)
            req.ok = False
            req.discarded = True
            req.error = "discarded: in flight when the adaptive stop decided the point (its connection was closed)"
            req.end = t_end
            self.finalize_q.append(req)  # not counted in ph.done: the progress line shows completed requests
        self.finalize_all()
        for rec in self.measured:
            if rec.ok and rec.sent_s is not None and rec.sent_s > horizon:
                rec.status = "discarded"
                rec.error = ("discarded: sent after the oldest request still in flight when the adaptive stop "
                             "decided the point (kept out of the sample, which would otherwise favour fast requests)")

    def _check_timeouts(self, now: float, timeout_s: float) -> None:
        for conn in [c for c in self.conns.values()
                     if c.state in (CONNECTING, HANDSHAKE) and now - c.t_open > timeout_s]:
            req = self._detach(conn)
            self._close_conn(conn)
            if req is not None:
                self._fail(req, f"connect timed out after {timeout_s:g} s")
        late = [r for r in self.running.values() if r.sent is not None and now - r.sent > timeout_s]
        for req in late:
            for conn in list(self.conns.values()):
                if conn.req is req:
                    self._detach(conn)
                    self._close_conn(conn)
                    break
            self._fail(req, f"timed out after {timeout_s:g} s")

    def close(self) -> None:
        for conn in list(self.conns.values()):
            self._close_conn(conn)
        self.ep.close()
