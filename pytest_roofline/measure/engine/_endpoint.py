""":class:`Endpoint`: an already-running OpenAI-compatible vLLM server (``--endpoint URL``)."""

from __future__ import annotations

import os
import time
from typing import Any
from urllib.parse import urlsplit

import httpx

from pytest_roofline import redact
from pytest_roofline.errors import EndpointError
from pytest_roofline.measure.engine import _http
from pytest_roofline.measure.engine._report import build_report, get_metrics, get_version
from pytest_roofline.measure.engine._served import model_ids, pick_served_model, served_entries

__all__ = ["Endpoint", "redact_url"]


def redact_url(url: str) -> str:
    """``url`` with any ``user:password@`` replaced by ``***@`` (:func:`pytest_roofline.redact.redact_url`)."""
    return redact.redact_url(url)


def _tls_problem(exc: BaseException) -> str | None:
    """The certificate problem behind an httpx error (``certificate verify failed: self-signed certificate``,
    ``certificate has expired``, ``Hostname mismatch``), or None when the error is not a certificate's."""
    import ssl

    seen: BaseException | None = exc
    for _ in range(6):  # httpx wraps httpcore's error, which wraps the ssl one
        if seen is None:
            break
        if isinstance(seen, ssl.SSLCertVerificationError):
            return str(seen.verify_message or seen.reason or seen)
        seen = seen.__cause__ or seen.__context__
    text = str(exc)
    return text.split("] ", 1)[-1][:200] if "CERTIFICATE_VERIFY_FAILED" in text else None


class Endpoint:
    """An already-running OpenAI-compatible vLLM server (``--endpoint URL``).

    The API key is read from the environment variable named ``api_key_env`` and is never part of
    repr/str or any error message. Its report comes from /metrics (and /version) only.
    """

    def __init__(self, base_url: str, *, api_key_env: str | None = None,
                 served_model_name: str | None = None, timeout_s: float = 10.0) -> None:
        url = base_url.strip().rstrip("/")
        if url.endswith("/v1"):
            url = url[:-3]
        if not urlsplit(url).scheme:
            url = "http://" + url
        self.base_url = url
        self.api_key_env = api_key_env
        self.timeout_s = timeout_s
        self._served_model_name = served_model_name
        self._requested_model = served_model_name
        self.max_model_len: int | None = None
        self.available_models: list[str] = []
        #: where the engine report's /metrics is read (cache_config_info: the KV pool): None = ``base_url``. Behind
        #: a load balancer that is one replica's own /metrics (``--roofline-replica-metrics``): every replica of a
        #: deployment runs the same engine configuration, so one replica's pool is each replica's
        self.metrics_base_url: str | None = None
        self.__key: str | None = None
        if api_key_env:
            value = os.environ.get(api_key_env)
            if not value:
                raise EndpointError(f"environment variable {api_key_env} (API key for {redact_url(url)}) "
                                    "is not set or empty")
            self.__key = value
            redact.remember(value)  # from here on the key is replaced wherever it would be written

    def __repr__(self) -> str:
        return (f"Endpoint({redact_url(self.base_url)!r}, api_key_env={self.api_key_env!r}, "
                f"served_model_name={self._served_model_name!r})")

    __str__ = __repr__

    @property
    def api_key(self) -> str | None:
        return self.__key

    @property
    def served_model_name(self) -> str | None:
        return self._served_model_name

    def auth_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.__key}"} if self.__key else {}

    def _err(self, what: str) -> EndpointError:
        return EndpointError(redact.redact_text(f"{self.base_url}: {what}", [self.__key]))

    def connect(self, timeout_s: float = 30.0) -> Endpoint:
        """Wait until /v1/models answers and pick the served model; raises EndpointError."""
        deadline = time.monotonic() + timeout_s
        last = "no answer"
        with httpx.Client(timeout=self.timeout_s) as client:
            while True:
                try:
                    r = _http.get(client, self.base_url + "/v1/models", headers=self.auth_headers(),
                                  timeout_s=self.timeout_s)
                    if r.status_code in (401, 403):
                        src = f"${self.api_key_env}" if self.api_key_env else "no API key given"
                        raise self._err(f"/v1/models refused the request (HTTP {r.status_code}; key from {src})")
                    if r.status_code == 200:
                        try:
                            data = served_entries(r.json())
                        except ValueError as exc:  # not JSON, or not OpenAI's shape: the server is not usable
                            raise self._err(str(exc) if "/v1/models" in str(exc)
                                            else "/v1/models did not return JSON") from None
                        self.available_models = model_ids(data)
                        if not data:
                            raise self._err("/v1/models lists no model")
                        want = self._requested_model
                        served = pick_served_model(data, want)
                        if served is None:
                            raise self._err(f"serves {self.available_models}, not {want!r}")
                        self._served_model_name = served.name
                        self.max_model_len = served.max_model_len
                        return self
                    last = f"HTTP {r.status_code}"
                except httpx.HTTPError as e:
                    last = type(e).__name__
                    tls = _tls_problem(e)
                    if tls is not None:  # a certificate does not fix itself: say which problem, at once
                        raise self._err(f"the TLS handshake failed: {tls}; trust the server's CA with SSL_CERT_FILE="
                                        "path/to/ca.pem, or check the host name in the URL") from None
                except ValueError:
                    last = "/v1/models did not return JSON"
                if time.monotonic() > deadline:
                    raise self._err(f"not reachable within {timeout_s:.0f} s ({last})")
                time.sleep(0.5)

    start = connect

    def is_alive(self) -> bool:
        try:
            r = _http.get(None, self.base_url + "/health", headers=self.auth_headers(), timeout_s=5)
            if r.status_code == 200:
                return True
            r = _http.get(None, self.base_url + "/v1/models", headers=self.auth_headers(), timeout_s=5)
            return r.status_code == 200
        except httpx.HTTPError:
            return False

    def check_alive(self) -> None:
        if not self.is_alive():
            raise self._err("the server stopped answering (/health, /v1/models)")

    def log_tail(self, n_lines: int = 50) -> str:
        return ""

    def stop(self, timeout_s: float | None = None) -> None:
        """Nothing to stop: the server is not ours."""
        return None

    def __enter__(self) -> Endpoint:
        return self.connect()

    def __exit__(self, *exc: object) -> None:
        return None

    def report(self) -> dict[str, Any]:
        with httpx.Client() as client:
            version = get_version(client, self.base_url, self.auth_headers())
            metrics, mreason = get_metrics(client, (self.metrics_base_url or self.base_url).rstrip("/"), self.__key,
                                           self._served_model_name)
        rep = build_report(log=None, log_reason="endpoint mode: no startup log", metrics=metrics,
                           metrics_reason=mreason, version=version,
                           version_source="/version" if version else None,
                           max_model_len=self.max_model_len)
        rep["mode"] = "endpoint"
        rep["startup_s"] = None
        if self.metrics_base_url:
            rep["metrics_from"] = redact_url(self.metrics_base_url)  # one replica's: the KV figures are per replica
        return rep

    def launch_info(self) -> dict[str, Any]:
        """How the server runs, as far as it says: its version from ``/version`` (None when it does not answer)."""
        with httpx.Client() as client:
            version = get_version(client, self.base_url, self.auth_headers())
        return {"name": "vllm", "version": version, "version_source": "/version" if version else None,
                "argv": [], "env": {}, "log_file": None,
                "endpoint": redact_url(self.base_url), "api_key_env": self.api_key_env}
