"""``roofline init --model OWNER/NAME`` against a Hub that cannot be reached, one that answers 404, and one that
serves the config — real HTTP on 127.0.0.1 (HF_ENDPOINT), real huggingface_hub, ``roofline`` in a subprocess with
an empty Hugging Face cache and HF_HUB_OFFLINE unset (huggingface_hub reads HF_HUB_OFFLINE once, at import, so a
fresh process is the only faithful one).

Before: with no network, init retried the Hub five times with back-off (about 24 s: huggingface_hub's
"Retrying in 8s [Retry 5/5]") and then said the model "has no config.json on the Hugging Face Hub" — a connection
failure told as a missing file. Now one HEAD, no retries, and the message names the network; a real 404 still
says the file is missing.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from support.hf_cache import COMMIT, QWEN25_14B_ID, QWEN25_14B_INSTRUCT

ROOFLINE = [sys.executable, "-m", "pytest_roofline.cli"]
CONFIG = json.dumps(QWEN25_14B_INSTRUCT).encode()


def _env(tmp_path: Path, endpoint: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_TOKEN", "HF_HUB_ETAG_TIMEOUT")}
    return {**env, "HF_ENDPOINT": endpoint, "HF_HUB_CACHE": str(tmp_path / "hf-cache"),
            "HF_HOME": str(tmp_path / "hf-home")}


def _init(tmp_path: Path, endpoint: str, model: str = QWEN25_14B_ID) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ROOFLINE, "init", "--gpu", "h100", "--model", model, "-o", "x.yaml"], cwd=tmp_path,
                          env=_env(tmp_path, endpoint), capture_output=True, text=True, timeout=300)


def _closed_port() -> int:
    with socket.socket() as s:  # a port the OS just handed out and nothing listens on once it is closed
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


#: a repository the Hub has, with no config.json in it
EMPTY_ID = "org/weights-only-14b"


class _Hub(BaseHTTPRequestHandler):
    """A Hub that knows two repositories: Qwen2.5-14B-Instruct, holding config.json only (HEAD/GET answer as
    huggingface.co does: X-Repo-Commit, ETag), and EMPTY_ID, holding none. Any other file of them is 404
    EntryNotFound (quantize_config.json too), any other repository 404 RepoNotFound."""

    def _answer(self, body: bool) -> None:
        prefix = f"/{QWEN25_14B_ID}/resolve/main/"
        if self.path == prefix + "config.json":
            self.send_response(200)
            self.send_header("X-Repo-Commit", COMMIT)
            self.send_header("ETag", '"config-etag"')
            self.send_header("Content-Length", str(len(CONFIG)))
            self.end_headers()
            if body:
                self.wfile.write(CONFIG)
            return
        self.send_response(404)
        if self.path.startswith((prefix, f"/{EMPTY_ID}/resolve/main/")):
            self.send_header("X-Error-Code", "EntryNotFound")
            self.send_header("X-Error-Message", "Entry not found")
            self.send_header("X-Repo-Commit", COMMIT)
        else:
            self.send_header("X-Error-Code", "RepoNotFound")
            self.send_header("X-Error-Message", "Repository not found")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_HEAD(self) -> None:  # noqa: N802 (http.server's spelling)
        self._answer(body=False)

    def do_GET(self) -> None:  # noqa: N802
        self._answer(body=True)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (http.server's signature)
        pass


@pytest.fixture
def hub() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_an_unreachable_hub_is_told_as_a_network_failure_without_retries(tmp_path: Path) -> None:
    port = _closed_port()
    r = _init(tmp_path, f"http://127.0.0.1:{port}")
    assert r.returncode == 2, r.stderr
    err = r.stderr
    assert "Retry" not in err  # one HEAD: no back-off before the answer (it took about 24 s)
    assert "has no config.json" not in err  # the bug: a connection refused told as a missing file
    assert f"could not reach 127.0.0.1:{port}" in err and "network" in err
    assert "HF_HUB_OFFLINE=1" in err and "qwen3-14b" in err and "config.json" in err  # the ways on
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x.yaml").exists()


def test_a_config_the_hub_does_not_have_is_still_told_as_missing(tmp_path: Path, hub: str) -> None:
    r = _init(tmp_path, hub, EMPTY_ID)  # the Hub answered 404 EntryNotFound: the file is missing, not the network
    assert r.returncode == 2
    assert f"model '{EMPTY_ID}' has no config.json on the Hugging Face Hub" in r.stderr, r.stderr
    assert "could not reach" not in r.stderr and "Retry" not in r.stderr


def test_a_repository_the_hub_does_not_have_is_told_as_not_on_the_hub(tmp_path: Path, hub: str) -> None:
    r = _init(tmp_path, hub, "nobody/no-such-model-14b")
    assert r.returncode == 2
    assert "is not on the Hugging Face Hub" in r.stderr and "could not reach" not in r.stderr, r.stderr


def test_a_hub_that_answers_serves_the_config_into_the_cache(tmp_path: Path, hub: str) -> None:
    r = _init(tmp_path, hub)  # config.json served; quantize_config.json and quant_config.json 404: none
    assert r.returncode == 0, r.stderr
    assert f"model: {QWEN25_14B_ID}" in (tmp_path / "x.yaml").read_text()
    cached = tmp_path / "hf-cache" / "models--Qwen--Qwen2.5-14B-Instruct" / "snapshots" / COMMIT / "config.json"
    assert json.loads(cached.read_text()) == QWEN25_14B_INSTRUCT
