"""The one bounded HTTP GET of a server's small documents: ``/metrics``, ``/v1/models``, ``/version``, ``/health``.

httpx's ``timeout`` bounds each wait for a byte, not the whole body: a server that answers 200 and then sends one
byte a second never trips it (the review's cases 9.77-9.79g hung pytest for 120 s and more). :func:`get` streams
the body and gives up once ``deadline_s`` has passed since the request began or ``max_bytes`` have arrived,
whichever comes first; either is an :class:`httpx.ReadTimeout` / :class:`BodyTooLarge` (an ``httpx.HTTPError``,
so every caller's ``except httpx.HTTPError`` keeps meaning "the server did not answer usably").
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import httpx

from pytest_roofline import bounded

__all__ = ["BodyTooLarge", "Answer", "get", "MAX_BODY_BYTES", "MAX_METRICS_BYTES"]

#: the largest /v1/models, /version or /health body read (each is a few hundred bytes from vLLM)
MAX_BODY_BYTES = 1 * bounded.MIB
#: the largest /metrics exposition read: vLLM's is ~100 KB, so 8 MiB leaves 80× for many replicas' or adapters'
#: label sets, while every scrape of a hostile one stays bounded in time (parsed whole each scrape: the review's
#: 50 MB one took 122 s a run under the 64 MiB bound this replaced, benchmarks/reliability_probe.py case 9.76)
MAX_METRICS_BYTES = 8 * bounded.MIB


class BodyTooLarge(httpx.HTTPError):
    """A response body over the size bound of what was asked for."""


@dataclass(frozen=True)
class Answer:
    """A whole response: its status and its body (read within the deadline and the size bound)."""

    status_code: int
    content: bytes
    url: str

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        """The body as JSON, depth-bounded (a ``ValueError`` when it is not JSON or nests too deep)."""
        return bounded.loads_json(self.content, self.url)

    def raise_for_status(self) -> None:
        if self.status_code >= 400:
            request = httpx.Request("GET", self.url)
            raise httpx.HTTPStatusError(
                f"HTTP {self.status_code} from {self.url}",
                request=request,
                response=httpx.Response(self.status_code, request=request),
            )


def get(
    client: httpx.Client | None,
    url: str,
    *,
    headers: dict[str, str] | None = None,
    timeout_s: float = 5.0,
    deadline_s: float | None = None,
    max_bytes: int = MAX_BODY_BYTES,
) -> Answer:
    """GET ``url`` and read its whole body within ``deadline_s`` (default ``timeout_s``) of the start and
    ``max_bytes``; redirects are not followed (a key never travels to another origin)."""
    deadline = time.monotonic() + (timeout_s if deadline_s is None else deadline_s)
    own = client is None
    c = httpx.Client() if client is None else client
    try:
        with c.stream("GET", url, headers=headers or {}, timeout=timeout_s, follow_redirects=False) as r:
            chunks: list[bytes] = []
            size = 0
            for chunk in r.iter_bytes():  # decoded (gzip): the bound is on what is kept
                size += len(chunk)
                if size > max_bytes:
                    raise BodyTooLarge(f"{url}: the body is larger than {max_bytes / bounded.MIB:,.0f} MiB")
                chunks.append(chunk)
                if time.monotonic() > deadline:
                    raise httpx.ReadTimeout(f"{url}: the whole body did not arrive within {timeout_s:g} s")
            return Answer(r.status_code, b"".join(chunks), url)
    finally:
        if own:
            c.close()
