"""CPU cost per token of the load generator's receive path, measured without a server.

    .venv/bin/python benchmarks/loadgen_cpu_bench.py [--requests 200] [--output-len 256] [--repeat 9]

``loadgen_bench.py`` measures the client end to end against a real (stub) server, which needs a quiet
machine: on a shared 2-core box its figures move with the neighbours.  This benchmark replays the bytes the
stub server (and vLLM) send for a streamed completion -- the response head, one chunk per token event, the
usage event, ``data: [DONE]`` and the last chunk, one socket read each -- through the client's own read
handler (``recvmsg`` replaced by a list of prepared reads with kernel timestamps), then finalises every
request (SSE and JSON decoding, the record).  Both phases run in one thread and are timed in CPU time
(``time.process_time``), so the best of a few repeats is a fairly stable figure of the code's own cost even
with busy neighbours: µs of CPU per token, for the read path and for finalisation.  The fake ``recvmsg``
costs about as much as a Python call; the real system call is not included.

It also runs the layout before the split into a package (``loadgen.py`` with ``_Engine``): point
``PYTHONPATH`` at a checkout of that version to compare.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import socket
import struct
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # after PYTHONPATH, so that an older checkout given there wins

from pytest_roofline.measure import loadgen  # noqa: E402

_SCM_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
_TIMESPEC = struct.Struct("@qq")


class _Layout:
    """The private names of the installed layout (the package, or the single module before the split)."""

    def __init__(self) -> None:
        if hasattr(loadgen, "_Engine"):  # before the split: pytest_roofline/measure/loadgen.py
            self.name = "module loadgen.py (before the split)"
            self.loop_cls, self.req_cls, self.phase_cls = loadgen._Engine, loadgen._Req, loadgen._Phase
            self.state_head, self.body_state = loadgen._ST_HEAD, loadgen._ST_BODY
            self.make_conn = lambda loop, sock: loadgen._Conn(sock)
            self.begin = lambda conn, req: None
            self.split = False
        else:
            from pytest_roofline.measure.loadgen import _http1, _loop

            self.name = "package loadgen/ (after the split)"
            self.loop_cls, self.req_cls, self.phase_cls = _loop.EventLoop, _loop._Req, _loop.Phase
            self.state_head, self.body_state = _http1.HEAD, _http1.BODY
            self.make_conn = lambda loop, sock: _http1.Connection(sock, time.perf_counter(), loop.offset_ns,
                                                                  loop.read_lag)
            self.begin = lambda conn, req: conn.begin(req.pieces)
            self.split = True


class _ReplaySocket:
    """Stands in for a connected socket: ``recvmsg`` hands out prepared reads, one per call."""

    def __init__(self, fd: int, reads: list[bytes], ancs: list[list]) -> None:
        self._fd, self.reads, self.ancs, self.i = fd, reads, ancs, 0

    def fileno(self) -> int:
        return self._fd

    def recvmsg(self, bufsize: int, ancbufsize: int = 0, flags: int = 0):
        i = self.i
        self.i = i + 1
        return self.reads[i], (self.ancs[i] if ancbufsize else []), 0, None


def stream_reads(rid: str, output_len: int, prompt_len: int) -> list[bytes]:
    """One response as the stub server writes it (benchmarks/stubserver.c): one read per server write."""
    created = 1764400000
    reads = [b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n"
             b"transfer-encoding: chunked\r\n\r\n"]

    def chunk(ev: bytes) -> bytes:
        return f"{len(ev):x}\r\n".encode() + ev + b"\r\n"

    for k in range(output_len):
        fin = '"length"' if k == output_len - 1 else "null"
        ev = (f'data: {{"id":"cmpl-{rid}","object":"text_completion","created":{created},"model":"stub",'
              f'"choices":[{{"index":0,"text":" tok{k}","logprobs":null,"finish_reason":{fin},'
              f'"stop_reason":null}}],"usage":null}}\n\n').encode()
        reads.append(chunk(ev))
    usage = {"prompt_tokens": prompt_len, "total_tokens": prompt_len + output_len, "completion_tokens": output_len}
    ev = (f'data: {{"id":"cmpl-{rid}","object":"text_completion","created":{created},"model":"stub",'
          f'"choices":[],"usage":{json.dumps(usage, separators=(",", ":"))}}}\n\n').encode()
    reads[-1] += chunk(ev) + chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n"
    return reads


def run_once(lay: _Layout, n_requests: int, output_len: int, prompt_len: int,
             clock=time.process_time) -> tuple[float, float, int]:
    """(read-path seconds, finalisation seconds, tokens) for ``n_requests`` replayed responses.

    ``clock`` is read at the start and end of each phase (read path, then finalisation)."""
    spec = loadgen.LoadSpec(model="stub", token_id_range=(10, 300), mode="closed", concurrency=1,
                            num_requests=n_requests, input_len=prompt_len, output_len=output_len, seed=1,
                            point_id="cpu-bench")
    loop = lay.loop_cls("http://127.0.0.1:9", spec, None, None)
    try:
        ph = lay.phase_cls("measure", False)
        ph.total = 0  # nothing left to dispatch when a response completes
        loop.phase = ph
        t0_ns = time.clock_gettime_ns(time.CLOCK_REALTIME)
        conns = []
        for i in range(n_requests):
            reads = stream_reads(f"r{i}", output_len, prompt_len)
            ancs = []
            for j in range(len(reads)):
                t = t0_ns + (i * len(reads) + j) * 1000
                ancs.append([(socket.SOL_SOCKET, _SCM_TIMESTAMPNS, _TIMESPEC.pack(t // 10**9, t % 10**9))])
            req = lay.req_cls(i, f"r{i}", False, b"")
            req.phase = ph
            conn = lay.make_conn(loop, _ReplaySocket(1000 + i, reads, ancs))
            conn.req = req
            lay.begin(conn, req)
            conn.state = lay.state_head
            req.sent = time.perf_counter()
            conns.append((conn, len(reads)))
        loop.in_flight = n_requests
        t_read = clock()
        if lay.split:  # what EventLoop.run_phase does per readable socket
            on_read = loop._on_read
            read = type(conns[0][0]).read  # run_phase: read = Connection.read
            for conn, n in conns:
                for _ in range(n):
                    r = read(conn)
                    if r:
                        on_read(conn, r)
        else:  # what _Engine.run_phase did
            on_readable = loop._on_readable
            for conn, n in conns:
                for _ in range(n):
                    on_readable(conn)
        t_read = clock() - t_read
        q = loop.finalize_q
        assert len(q) == n_requests, f"{len(q)} of {n_requests} responses completed"
        t_fin = clock()
        while q:
            loop._finalize(q.popleft())
        t_fin = clock() - t_fin
        recs = loop.records
        assert all(r.ok and len(r.chunk_times_s) == output_len for r in recs.values()), \
            next(r.error for r in recs.values() if not r.ok)
        return t_read, t_fin, n_requests * output_len
    finally:
        loop.idle.clear()
        loop.conns.clear()
        loop.close()


def count_bytecodes(lay: _Layout, n_requests: int, output_len: int, prompt_len: int) -> tuple[float, float]:
    """Bytecode instructions executed per token by the load generator's code (and by the replay loop that
    stands in for ``run_phase``), for the read path and for finalisation: a count, so it does not move with
    the machine's load.  It does not weigh instructions (a C call counts as one), so read it beside the times.
    """
    counts = {"read": 0, "fin": 0}
    marks = iter(["read", None, "fin", None])
    phase: list[str | None] = [None]

    def clock() -> float:
        phase[0] = next(marks)
        return 0.0

    def on_opcode(frame, event, arg):
        if event == "opcode" and phase[0] is not None:
            counts[phase[0]] += 1
        return on_opcode

    def on_call(frame, event, arg):
        code = frame.f_code
        if "pytest_roofline/measure/loadgen" in code.co_filename or code is run_once.__code__:
            frame.f_trace_opcodes = True
            frame.f_trace_lines = False
            return on_opcode
        return None

    sys.settrace(on_call)
    try:
        _, _, tokens = run_once(lay, n_requests, output_len, prompt_len, clock=clock)
    finally:
        sys.settrace(None)
    return counts["read"] / tokens, counts["fin"] / tokens


def loopback_ns(lay: _Layout, n_tokens: int, repeat: int) -> float:
    """CPU ns per token over a real loopback TCP connection with kernel receive stamps: a server socket in
    this thread sends one token chunk, the client code reads it; both system calls are included."""
    chunk = stream_reads("r0", 2, 64)[1]
    spec = loadgen.LoadSpec(model="stub", token_id_range=(10, 300), mode="closed", concurrency=1,
                            num_requests=1, input_len=64, output_len=n_tokens, point_id="cpu-bench")
    with socket.socket() as lsock:
        lsock.bind(("127.0.0.1", 0))
        lsock.listen()
        loop = lay.loop_cls(f"http://127.0.0.1:{lsock.getsockname()[1]}", spec, None, None)
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, _SCM_TIMESTAMPNS, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.connect(lsock.getsockname())
        sock.setblocking(False)
        peer, _ = lsock.accept()
        conn = lay.make_conn(loop, sock)
        req = lay.req_cls(0, "r0", False, b"")
        conn.req = req
        lay.begin(conn, req)
        conn.state = lay.body_state
        if lay.split:
            read, on_read = type(conn).read, loop._on_read

            def step() -> None:
                r = read(conn)
                if r:
                    on_read(conn, r)
        else:
            step = functools.partial(loop._on_readable, conn)
        send = peer.send
        best = float("inf")
        try:
            for _ in range(repeat):
                gc.collect()
                gc.disable()
                t0 = time.process_time()
                for _ in range(n_tokens):
                    send(chunk)
                    step()
                best = min(best, (time.process_time() - t0) / n_tokens * 1e9)
                gc.enable()
                req.pieces.clear()
        finally:
            gc.enable()
            peer.close()
            sock.close()
            loop.conns.clear()
            loop.close()
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--output-len", type=int, default=256)
    ap.add_argument("--input-len", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=9, help="runs; the best (lowest) of each phase is reported")
    ap.add_argument("--loopback", type=int, default=0, metavar="N",
                    help="also time N tokens sent and read over a real loopback TCP socket (send + recvmsg)")
    ap.add_argument("--bytecodes", action="store_true",
                    help="also count the bytecode instructions executed per token (20 requests, traced)")
    args = ap.parse_args()
    lay = _Layout()
    reads, fins = [], []
    for _ in range(args.repeat):
        gc.collect()
        gc.disable()  # as run_load does
        try:
            r, f, tokens = run_once(lay, args.requests, args.output_len, args.input_len)
        finally:
            gc.enable()
        reads.append(r / tokens * 1e6)
        fins.append(f / tokens * 1e6)
    med = sorted(reads)[len(reads) // 2], sorted(fins)[len(fins) // 2]
    print(f"{lay.name}: {args.requests} requests x {args.output_len} tokens, best of {args.repeat} "
          f"(median in brackets)")
    print(f"  read path    {min(reads):.3f} us/token ({med[0]:.3f})")
    print(f"  finalise     {min(fins):.3f} us/token ({med[1]:.3f})")
    print(f"  total        {min(reads) + min(fins):.3f} us/token")
    if args.loopback:
        print(f"  loopback     {loopback_ns(lay, args.loopback, args.repeat) / 1000:.3f} us/token "
              "(one send + one recvmsg + the read path, kernel stamps on)")
    if args.bytecodes:
        n_read, n_fin = count_bytecodes(lay, 20, args.output_len, args.input_len)
        print(f"  bytecodes    read path {n_read:.1f}, finalise {n_fin:.1f} per token")


if __name__ == "__main__":
    main()
