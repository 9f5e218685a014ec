"""HTTP/1.1 for the load generator: the target URL, the request head, and one keep-alive client
connection that reads its socket with kernel receive timestamps and decodes the response framing.

:meth:`Connection.read` takes one read from the socket, stamps it, and decodes it into the response's status
and its de-chunked body bytes (each piece kept with the read's timestamp); the event loop decides when to
read and what a finished or broken response means for its request.  The framing is RFC 9112 (HTTP/1.1): a
status line and header fields up to the blank line (§2-§5), 1xx interim responses skipped (RFC 9110
§15.2), then the message body delimited by ``Transfer-Encoding: chunked`` (§7.1: hex chunk sizes, ``;``
chunk extensions ignored, optional trailer fields after the last chunk), ``Content-Length`` (§6.2), or the
closing of the connection (§6.3).  There is one chunked decoder, :meth:`Connection._chunked`; ``read``
short-cuts only the common read that is exactly one whole chunk (one server write of one SSE event), which
gives the same result.

TLS (``https://``): the socket stays a plain socket read with ``recvmsg`` (an ``ssl.SSLSocket`` has no
``recvmsg``, so it would lose the kernel stamps); the TLS record layer runs in memory, an ``ssl.SSLObject``
between two ``ssl.MemoryBIO`` (the ``ssl`` module's "Memory BIO Support",
https://docs.python.org/3/library/ssl.html#memory-bio-support). A read's ciphertext goes into the incoming
BIO and the plaintext that comes out gets the read's kernel stamp: a token is usable by the client once the
record that carries it is complete, which is the read that completed it. Records that carry no application
data (a TLS 1.3 session ticket after the handshake) are consumed and never reach the HTTP decoder.

Kernel receive timestamps: with ``SO_TIMESTAMPNS`` set on a socket, ``recvmsg`` returns an ``SCM_TIMESTAMPNS``
control message holding a ``struct timespec`` on ``CLOCK_REALTIME`` (socket(7), "SO_TIMESTAMPNS"; the
kernel's Documentation/networking/timestamping.rst).  A connection maps it onto ``perf_counter`` nanoseconds
with the REALTIME − perf_counter offset it is given, and records how late user space read the data.
"""

from __future__ import annotations

import socket
import ssl
import struct
import time
import urllib.parse
from array import array
from typing import Any

__all__ = [
    "completions_url", "target_url", "API_PATHS", "request_head", "frame_request", "open_socket", "Connection",
    "tls_context", "CONNECTING", "HANDSHAKE", "IDLE", "SENDING", "HEAD", "BODY", "MORE", "DONE", "FAILED",
    "BROKEN", "STRAY",
]

# connection states (HANDSHAKE: TCP is up, the TLS handshake is not done yet)
CONNECTING, IDLE, SENDING, HEAD, BODY, HANDSHAKE = range(6)
# how the body of the current response is delimited
CHUNKED, LENGTH, CLOSE, TRAILER = range(4)
# what a read did: the response goes on / is complete / is malformed (``error``) / the socket failed or
# the server closed it mid-response (``error``) / bytes or a close on a connection without a request
MORE, DONE, FAILED, BROKEN, STRAY = range(5)

_MAX_HEAD_BYTES = 65536
# larger receive buffers make every recvmsg() allocate (256 KiB: ~7x slower per call; benchmarks/README.md)
_RECV_BYTES = 65536

# SO_TIMESTAMPNS (== SCM_TIMESTAMPNS) is 35 in the asm-generic socket constants that x86-64 and arm64 use
# (include/uapi/asm-generic/socket.h, SO_TIMESTAMPNS_OLD); its payload is a native struct timespec (two
# 64-bit integers on 64-bit kernels).  _ANC_SIZE == 0 switches kernel stamps off (user-space read times).
_SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
_TIMESPEC = struct.Struct("@qq")
_ANC_SIZE = socket.CMSG_SPACE(_TIMESPEC.size) if hasattr(socket, "CMSG_SPACE") else 0
_NS = 1_000_000_000
perf_counter_ns = time.perf_counter_ns


#: The OpenAI-compatible route of each API the load generator speaks (vLLM serves both:
#: vllm/entrypoints/openai/api_server.py at v0.32.0).
API_PATHS = {"completions": "/v1/completions", "chat": "/v1/chat/completions"}


def target_url(base_url: str, api: str = "completions") -> tuple[str, str, int, str, str]:
    """Split ``base_url`` into (scheme, host, port, path, Host header) for ``api``'s route.

    ``http(s)://h:p`` and ``http(s)://h:p/v1`` both map to ``/v1/completions`` (``/v1/chat/completions`` for
    ``api="chat"``); a URL whose path already ends in that route's last part is used as is.  ``https`` uses
    TLS (port 443 by default).
    """
    if api not in API_PATHS:
        raise ValueError(f"api must be one of {', '.join(API_PATHS)}, not {api!r}")
    u = urllib.parse.urlsplit(base_url)
    if u.scheme not in ("http", "https"):
        raise ValueError(f"only http:// and https:// URLs are supported by the load generator, not {base_url!r}")
    host = u.hostname or "127.0.0.1"
    port = u.port or (443 if u.scheme == "https" else 80)
    route = API_PATHS[api]
    path = u.path.rstrip("/")
    if not path.endswith(route.rsplit("/", 1)[-1] if api == "completions" else route.removeprefix("/v1")):
        path = path + route.removeprefix("/v1") if path.endswith("/v1") else path + route
    host_hdr = f"[{host}]" if ":" in host else host
    if u.port:
        host_hdr += f":{u.port}"
    return u.scheme, host, port, path, host_hdr


def completions_url(base_url: str) -> tuple[str, int, str, str]:
    """(host, port, path, Host header) of ``/v1/completions`` at ``base_url`` (:func:`target_url`)."""
    return target_url(base_url)[1:]


def tls_context(*, ca_bundle: str | None = None, insecure: bool = False) -> ssl.SSLContext:
    """The client TLS context of a run: certificates verified against the system's trust store (and
    ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` where set: ``ssl.create_default_context``), or against ``ca_bundle``
    (a PEM file) when given; ``insecure`` switches verification off (a self-signed test server)."""
    ctx = ssl.create_default_context(cafile=ca_bundle)
    if insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx


def request_head(path: str, host_hdr: str, api_key: str | None) -> bytes:
    """The header lines every request of a run shares (request line first, no final blank line)."""
    head = [
        f"POST {path} HTTP/1.1",
        f"Host: {host_hdr}",
        "User-Agent: pytest-roofline-loadgen",
        "Accept: text/event-stream",
        "Content-Type: application/json",
    ]
    if api_key:
        head.append(f"Authorization: Bearer {api_key}")
    return ("\r\n".join(head) + "\r\n").encode("latin-1")


def frame_request(head: bytes, request_id: str, body: bytes) -> bytes:
    """One complete request: the shared ``head``, its ``X-Request-Id`` and ``Content-Length``, the body."""
    return b"".join((
        head,
        b"X-Request-Id: ", request_id.encode("ascii"), b"\r\n",
        b"Content-Length: ", str(len(body)).encode("ascii"), b"\r\n\r\n",
        body,
    ))


def open_socket(family: int) -> socket.socket:
    """A non-blocking TCP socket with ``TCP_NODELAY`` and (where available) kernel receive timestamps."""
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setblocking(False)
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except OSError:
        pass
    if _ANC_SIZE:
        try:
            sock.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
        except OSError:
            pass
    return sock


class Connection:
    """One client connection: its socket, what is left to send, and the framing state of the response.

    ``read()`` (one socket read) and ``feed(data, t)`` (decode bytes) return ``MORE`` (the response goes
    on), ``DONE`` (it is complete; ``status`` holds the code, ``ka`` whether the connection may be reused,
    ``t_read`` the time of the read that completed it), ``FAILED`` (malformed; ``error`` says why),
    ``BROKEN`` (``read`` only: the socket failed or the server closed it mid-response; ``error``) or
    ``STRAY`` (``read`` only: bytes or a close while no request is on the connection).  Body bytes are
    appended to ``pieces`` as ``t, bytes`` pairs, ``t`` in ``perf_counter`` nanoseconds.

    ``offset_ns`` is CLOCK_REALTIME − perf_counter (ns) for the kernel stamps; ``lag`` collects, per
    kernel-stamped read, how late user space read it (ns); ``user_reads`` counts reads without a kernel stamp.
    """

    __slots__ = ("sock", "fd", "state", "req", "out", "head", "mode", "left", "pend", "ka", "used", "t_open",
                 "pieces", "status", "error", "recvmsg", "offset_ns", "lag", "user_reads", "t_read",
                 "tls", "tls_in", "tls_out")

    def __init__(self, sock: socket.socket, t_open: float, offset_ns: int = 0, lag: array | None = None,
                 tls: ssl.SSLContext | None = None, server_hostname: str | None = None) -> None:
        self.sock = sock
        # TLS in memory (see the module docstring): ciphertext in tls_in / out of tls_out, plaintext via tls
        self.tls: ssl.SSLObject | None = None
        self.tls_in = self.tls_out = None
        if tls is not None:
            self.tls_in, self.tls_out = ssl.MemoryBIO(), ssl.MemoryBIO()
            self.tls = tls.wrap_bio(self.tls_in, self.tls_out, server_side=False, server_hostname=server_hostname)
        self.recvmsg = sock.recvmsg
        self.offset_ns = offset_ns
        self.lag = lag if lag is not None else array("q")
        self.user_reads = 0
        self.t_read = 0
        self.fd = sock.fileno()
        self.state = CONNECTING
        self.req: Any = None  # the event loop's request on this connection (None when idle)
        self.out = b""       # unsent request bytes
        self.head = b""      # partial response head
        self.mode = CHUNKED
        self.left = 0        # chunk data left (>0), CRLF bytes left to skip (<0), or Content-Length left
        self.pend = b""      # a partial chunk-size line (or trailer section) carried to the next read
        self.ka = True       # keep-alive after this response
        self.used = 0        # responses completed on this connection
        self.t_open = t_open
        self.pieces: list = []  # the current response's body: [t, bytes, t, bytes, ...]
        self.status: int | None = None
        self.error = ""

    def __repr__(self) -> str:
        return f"Connection(fd={self.fd}, state={self.state})"

    def begin(self, pieces: list) -> None:
        """A request goes out on this connection: expect its response, collecting the body into ``pieces``."""
        self.state = SENDING
        self.head = b""
        self.pend = b""
        self.left = 0
        self.mode = CHUNKED
        self.pieces = pieces
        self.status = None

    def handshake(self) -> bool | None:
        """One step of the TLS handshake: True when it is done, None when it waits for the server (the bytes
        to send are in ``out``), False when it failed (``error``)."""
        assert self.tls is not None
        try:
            self.tls.do_handshake()
            done: bool | None = True
        except ssl.SSLWantReadError:
            done = None
        except (ssl.SSLError, ssl.CertificateError) as exc:
            self.error = f"TLS handshake failed: {exc}"
            return False
        self.out += self.tls_out.read()  # type: ignore[union-attr]
        return done

    def handshake_read(self) -> bool | None:
        """Feed one read of the server's handshake bytes in and take the next :meth:`handshake` step."""
        try:
            data = self.sock.recv(_RECV_BYTES)
        except (BlockingIOError, InterruptedError):
            return None
        except OSError as exc:
            self.error = f"TLS handshake failed: {exc}"
            return False
        if not data:
            self.error = "TLS handshake failed: the server closed the connection"
            return False
        self.tls_in.write(data)  # type: ignore[union-attr]
        return self.handshake()

    def encrypt(self, data: bytes) -> bytes:
        """``data`` as TLS records (the bytes to put on the socket); the identity without TLS."""
        if self.tls is None:
            return data
        self.tls.write(data)
        return self.tls_out.read()  # type: ignore[union-attr]

    def _decrypt(self, data: bytes) -> tuple[bytes, bool]:
        """The plaintext that the ciphertext ``data`` completes, and whether the server ended the TLS session
        (close_notify, or a TCP close: ``data`` empty)."""
        tls, tin = self.tls, self.tls_in
        assert tls is not None and tin is not None
        if not data:
            tin.write_eof()
        else:
            tin.write(data)
        out = []
        eof = not data
        while True:
            try:
                piece = tls.read(_RECV_BYTES)
            except ssl.SSLWantReadError:
                break
            except ssl.SSLZeroReturnError:
                eof = True
                break
            except ssl.SSLError as exc:
                if not eof:
                    self.error = f"TLS error: {exc}"
                eof = True
                break
            if not piece:
                break
            out.append(piece)
        if self.tls_out.pending:  # type: ignore[union-attr]  # a reply the record layer owes (a key update)
            self.out += self.tls_out.read()  # type: ignore[union-attr]
        return b"".join(out), eof

    @property
    def awaiting_response(self) -> bool:
        """No byte of the response has arrived yet."""
        return self.state in (SENDING, HEAD) and not self.head

    def read(self) -> int:
        """Read the socket once, stamp the read and decode it."""
        try:
            data, anc, _flags, _addr = self.recvmsg(_RECV_BYTES, _ANC_SIZE)
        except (BlockingIOError, InterruptedError):
            return MORE
        except OSError as exc:
            self.error = f"recv failed: {exc}"
            return BROKEN
        t_user = perf_counter_ns()
        stamp = anc[0][2] if anc else b""  # the SCM_TIMESTAMPNS payload
        if len(stamp) == 16:
            s, ns = _TIMESPEC.unpack(stamp)
            t = s * _NS + ns - self.offset_ns
            if t > t_user:
                t = t_user
            self.lag.append(t_user - t)
        else:
            t = t_user
            self.user_reads += 1
        if self.tls is not None:
            data, eof = self._decrypt(data)
            if not data and not eof:
                return MORE  # records without application data (a session ticket), or a partial record
            if eof and data:  # plaintext and the end of the session in one read: decode the data first
                if self.req is None:
                    return STRAY
                r = self.feed(data, t)
                if r != MORE:
                    return r
                data = b""
        if self.req is None:  # an idle connection: the server closed it, or broke the protocol
            return STRAY
        if not data:
            self.t_read = t
            return DONE if self.at_eof() == DONE else BROKEN
        if self.state == BODY and self.mode == CHUNKED:
            if not self.left and not self.pend and data[-2:] == b"\r\n":
                # The read is exactly one whole chunk (the common case: one server write of one event):
                # take its data without entering the decoder, which would do the same in more steps.
                # (Inline, not a call: this is once per token; benchmarks/loadgen_cpu_bench.py.)
                i = data.find(b"\r\n")
                try:
                    size = int(data[:i], 16)
                except ValueError:
                    size = -1
                if size > 0 and i + size + 4 == len(data):
                    pieces = self.pieces
                    pieces.append(t)
                    pieces.append(data[i + 2:-2])
                    return MORE
            self.t_read = t
            return self._chunked(data, t)
        self.t_read = t
        return self._feed_other(data, t)

    def feed(self, data: bytes, t: int) -> int:
        """Decode ``data`` (non-empty) received at ``t``, as ``read`` does after its socket read."""
        self.t_read = t
        if self.state == BODY and self.mode == CHUNKED:
            return self._chunked(data, t)
        return self._feed_other(data, t)

    def at_eof(self) -> int:
        """The server closed the connection: ``DONE`` for a close-delimited body, else ``FAILED``."""
        if self.state == BODY and self.mode == CLOSE:
            self.ka = False
            return DONE
        return self._fail("server closed the connection before the response was complete")

    # ---- decoding ------------------------------------------------------------------------------------

    def _fail(self, msg: str) -> int:
        self.error = msg
        return FAILED

    def _chunked(self, data: bytes, t: int) -> int:
        """The chunked-body decoder (``pend`` carries a partial size line from the previous read)."""
        if self.pend:
            data = self.pend + data
            self.pend = b""
        left = self.left
        pos = 0
        n = len(data)
        pieces = self.pieces
        while pos < n:
            if left > 0:
                take = n - pos
                if take > left:
                    take = left
                pieces.append(t)
                pieces.append(data[pos:pos + take])
                pos += take
                left -= take
                if not left:
                    left = -2  # the CRLF after the chunk data
            elif left < 0:
                k = n - pos
                if k > -left:
                    k = -left
                pos += k
                left += k
            else:
                i = data.find(b"\r\n", pos)
                if i < 0:
                    self.pend = data[pos:]
                    break
                try:
                    size = int(data[pos:i].split(b";", 1)[0], 16)
                except ValueError:
                    return self._fail("bad chunk size")
                if size < 0:
                    return self._fail("bad chunk size")
                pos = i + 2
                if size == 0:
                    self.left = 0
                    return self._trailer(data[pos:])
                left = size
        self.left = left
        return MORE

    def _trailer(self, buf: bytes) -> int:
        """After the last chunk: optional trailer fields, then an empty line."""
        if buf.startswith(b"\r\n") or b"\r\n\r\n" in buf:
            self.pend = b""
            return DONE
        self.pend = buf
        self.mode = TRAILER
        return MORE

    def _feed_other(self, data: bytes, t: int) -> int:
        """Everything but a chunked body in progress: the head, trailers, length- and close-delimited bodies."""
        if self.state == SENDING:
            self.state = HEAD  # an (error) response before the request was fully written
        if self.state == HEAD:
            head = self.head + data
            i = head.find(b"\r\n\r\n")
            if i < 0:
                if len(head) > _MAX_HEAD_BYTES:
                    return self._fail("response head too large")
                self.head = head
                return MORE
            self.head = b""
            lines = head[:i].decode("latin-1").split("\r\n")
            rest = head[i + 4:]
            try:
                version, code = lines[0].split(" ", 2)[:2]
                status = int(code)
            except ValueError:
                return self._fail(f"bad status line {lines[0][:100]!r}")
            if 100 <= status < 200:  # interim response: the real one follows
                return self._feed_other(rest, t) if rest else MORE
            self.status = status
            hdrs: dict[str, str] = {}
            for line in lines[1:]:
                k, _, v = line.partition(":")
                hdrs[k.strip().lower()] = v.strip()
            self.ka = hdrs.get("connection", "").lower() != "close" and version != "HTTP/1.0"
            self.state = BODY
            self.pend = b""
            if "chunked" in hdrs.get("transfer-encoding", "").lower():
                self.mode = CHUNKED
                self.left = 0
            elif "content-length" in hdrs:
                self.mode = LENGTH
                try:
                    self.left = int(hdrs["content-length"])
                except ValueError:
                    return self._fail("bad Content-Length")
                if self.left == 0:
                    return DONE
            else:
                self.mode = CLOSE
                self.ka = False
            return self.feed(rest, t) if rest else MORE
        mode = self.mode
        if mode == TRAILER:
            return self._trailer(self.pend + data)
        if mode == LENGTH:
            take = min(len(data), self.left)
            self.pieces.append(t)
            self.pieces.append(data[:take])
            self.left -= take
            return DONE if self.left == 0 else MORE
        if mode == CLOSE:
            self.pieces.append(t)
            self.pieces.append(data)
            return MORE
        return self._chunked(data, t)  # pragma: no cover - feed() handles a chunked body itself
