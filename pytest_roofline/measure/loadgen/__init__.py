"""Load generator: closed- and open-loop streaming load against an OpenAI-compatible ``/v1/completions`` or
``/v1/chat/completions`` (``LoadSpec.api``), over ``http://`` or ``https://`` (TLS in memory, kernel receive
timestamps kept: ``_http1``).

The hot path is a single-threaded ``epoll`` loop over raw non-blocking TCP sockets that speak HTTP/1.1
keep-alive with chunked server-sent events.  It is built so that the client is neither the throughput
bottleneck nor a source of timing error:

* every request body (with its HTTP head) is serialised before the run starts;
* the send timestamp is taken immediately before the ``send()`` system call;
* each read is timestamped by the kernel (``SO_TIMESTAMPNS`` ancillary data from ``recvmsg``), so the
  arrival time of a token does not depend on how late user space gets to the socket; the kernel's
  ``CLOCK_REALTIME`` stamp is mapped onto ``time.perf_counter`` with an offset measured before and after
  the run (when the kernel stamp is unavailable the user-space read time is used instead);
* at read time only the HTTP framing is decoded (to know where a response ends); the SSE events and their
  JSON are parsed later, while the loop would otherwise be idle, each event getting the timestamp of the
  read that completed it.

All times in the records are ``time.perf_counter()`` seconds (``CLOCK_MONOTONIC`` on Linux); the result
carries one wall-clock anchor to convert them.  ``benchmarks/loadgen_bench.py`` measures the generator
against a server that logs the true send time of every token.

The modules, each private by name (import from this package):

* ``_records``: :class:`LoadSpec`, :class:`RequestRecord`, :class:`LoadResult`, :class:`Progress`;
* ``_prompts``: prompts, request bodies and the open-loop arrival schedule (pure functions of the spec);
* ``_http1``: the target URL, the request head, and the response framing of one connection (one chunked
  decoder);
* ``_sse``: the SSE decoder of one streamed completion;
* ``_loop``: the epoll event loop and dispatcher; ``_run``: :func:`run_load`;
* ``_multiproc``: the same load spread over several client processes (``LoadSpec.processes``), merged into one
  record on one clock.

This package never imports pytest.
"""

from __future__ import annotations

from pytest_roofline.errors import LoadgenError
from pytest_roofline.measure.loadgen._http1 import completions_url, target_url, tls_context
from pytest_roofline.measure.loadgen._multiproc import resolve_processes, usable_cores
from pytest_roofline.measure.loadgen._prompts import arrival_offsets, build_prompt, request_body
from pytest_roofline.measure.loadgen._records import (
    APIS,
    Api,
    LoadResult,
    LoadSpec,
    Progress,
    RequestRecord,
    RequestStatus,
)
from pytest_roofline.measure.loadgen._run import run_load

__all__ = [
    "LoadSpec",
    "Api",
    "APIS",
    "RequestStatus",
    "RequestRecord",
    "LoadResult",
    "Progress",
    "LoadgenError",
    "run_load",
    "build_prompt",
    "arrival_offsets",
    "request_body",
    "completions_url",
    "target_url",
    "tls_context",
    "resolve_processes",
    "usable_cores",
]
