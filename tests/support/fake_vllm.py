"""A stand-in for ``python -m vllm.entrypoints.openai.api_server``: fast checks of the engine's lifecycle and
teardown layers without the real engine (tests/test_engine.py, tests/test_engine_parallel.py)."""

from __future__ import annotations

import sys
from pathlib import Path

#: the stand-in's tail: serves /health and /v1/models on ``port`` for ``model`` (names the script above defines)
#: until it is stopped, the way vLLM's API server does once it is ready
HEALTH_SERVER = r'''
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass
    def do_GET(self):
        if self.path == "/health":
            body = b""
        elif self.path == "/v1/models":
            body = json.dumps({"data": [{"id": model, "max_model_len": 512}]}).encode()
        else:
            self.send_response(404); self.end_headers(); return
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
'''


def fake_interpreter(tmp_path: Path, source: str, name: str) -> str:
    """An executable that, called as ``X -m vllm.entrypoints.openai.api_server ...``, runs ``source`` (its
    ``-m MODULE`` pair dropped) with this interpreter."""
    src = tmp_path / f"{name}.py"
    src.write_text(source)
    exe = tmp_path / "fakepython"
    exe.write_text(f'#!/bin/sh\nshift 2\nexec "{sys.executable}" "{src}" "$@"\n')
    exe.chmod(0o755)
    return str(exe)


def live_pids(pids: set[int] | list[int]) -> set[int]:
    """Those of ``pids`` still running (a zombie is not)."""
    import psutil

    out = set()
    for p in pids:
        try:
            if psutil.Process(p).status() != psutil.STATUS_ZOMBIE:
                out.add(p)
        except psutil.NoSuchProcess:
            pass
    return out


def wait_gone(pids: set[int] | list[int], timeout_s: float) -> set[int]:
    """Wait up to ``timeout_s`` for ``pids`` to end; those still running then."""
    import time

    end = time.monotonic() + timeout_s
    while (left := live_pids(pids)) and time.monotonic() < end:
        time.sleep(0.05)
    return left
