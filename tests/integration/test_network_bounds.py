"""Every read of a server's small documents has a deadline for the whole body and a size bound (issue 23, cases
9.77 /metrics, 9.78 /v1/models, 9.79 /version, 9.79g a replica's /metrics, 9.79c/d a hostile or 20 MB /version):
a server that answers 200 and then sends one byte a second is given up on within its timeout, never waited on
for ever. Each call runs in a thread joined with a support.patience bound, so a hang fails the test instead of
hanging it, and nothing here depends on how busy the machine is."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from support.openai_stub import StubServer
from support.patience import bound_s

from pytest_roofline.errors import EndpointError
from pytest_roofline.measure.engine import _http
from pytest_roofline.measure.engine._endpoint import Endpoint
from pytest_roofline.measure.engine._report import MAX_VERSION_CHARS, get_version
from pytest_roofline.measure.engine.metrics import fetch_metrics_text


def _finishes(call: Callable[[], Any], typical_s: float) -> tuple[Any, BaseException | None]:
    """(result, exception) of ``call``, which must return within bound_s(typical_s); a hang fails the test."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            out["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(bound_s(typical_s))
    assert not t.is_alive(), (
        f"still reading a trickling body after {bound_s(typical_s):.0f} s (the whole-body deadline)"
    )
    return out.get("value"), out.get("error")


@pytest.mark.parametrize("path", ["/metrics", "/v1/models", "/version", "/health"])
def test_bounded_get_gives_up_on_a_trickling_body(path):
    with StubServer(trickle={path}, trickle_interval_s=0.2) as s:
        _, err = _finishes(lambda: _http.get(None, s.url + path, timeout_s=1.0), typical_s=1.5)
    # one byte every 0.2 s never trips httpx's per-read timeout of 1 s: the whole-body deadline does
    assert isinstance(err, httpx.ReadTimeout) and "whole body" in str(err), err


def test_metrics_scrape_of_a_trickling_server_fails_in_bounded_time():
    with StubServer(trickle={"/metrics"}, trickle_interval_s=0.2) as s:
        _, err = _finishes(lambda: fetch_metrics_text(s.url, timeout_s=1.0), typical_s=1.5)
    assert isinstance(err, httpx.HTTPError)


def test_a_replica_whose_metrics_trickle_makes_the_point_an_error_not_a_hang():
    # sweep.run_point's snapshot of a replica is metrics.scrape_metrics: an HTTPError there is the point's error
    from pytest_roofline.measure.engine.metrics import scrape_metrics

    with StubServer(metrics="", trickle={"/metrics"}, trickle_interval_s=0.2) as s:
        _, err = _finishes(lambda: scrape_metrics(s.url, timeout_s=1.0), typical_s=1.5)
    assert isinstance(err, httpx.HTTPError)


@pytest.mark.slow
def test_connect_to_a_trickling_v1_models_gives_up_within_its_timeout():
    with StubServer(trickle={"/v1/models"}, trickle_interval_s=0.2) as s:
        ep = Endpoint(s.url, timeout_s=1.0)
        _, err = _finishes(lambda: ep.connect(timeout_s=2.0), typical_s=3.0)
    assert isinstance(err, EndpointError) and "not reachable within 2 s" in str(err), err


@pytest.mark.slow
def test_is_alive_of_a_trickling_health_is_false_in_bounded_time():
    with StubServer(trickle={"/health", "/v1/models"}, trickle_interval_s=0.2) as s:
        ep = Endpoint(s.url)
        alive, err = _finishes(ep.is_alive, typical_s=10.0)
    assert err is None and alive is False


@pytest.mark.slow
def test_version_trickle_huge_and_hostile():
    with StubServer(trickle={"/version"}, trickle_interval_s=0.2) as s, httpx.Client() as c:
        v, err = _finishes(lambda: get_version(c, s.url, {}), typical_s=5.0)
    assert err is None and v is None
    with StubServer(version="1" * 20_000_000) as s, httpx.Client() as c:  # a 20 MB version: over the 1 MiB body bound
        v, err = _finishes(lambda: get_version(c, s.url, {}), typical_s=2.0)
    assert err is None and v is None
    with StubServer(version="0.32.0" + "x" * 500_000) as s, httpx.Client() as c:  # under 1 MiB: cut to 100 characters
        v = get_version(c, s.url, {})
    assert v is not None and len(v) == MAX_VERSION_CHARS and v.endswith("…")
    with StubServer(version="0.32\x1b[2J\x1b]0;pwned\x07") as s, httpx.Client() as c:
        v = get_version(c, s.url, {})
    assert v == "0.32\\x1b[2J\\x1b]0;pwned\\x07"  # no raw ESC/BEL reaches a terminal or a file


def test_a_body_over_its_size_bound_is_refused():
    with StubServer(metrics="x" * 5000) as s:
        with pytest.raises(_http.BodyTooLarge, match="larger than"):
            _http.get(None, s.url + "/metrics", max_bytes=1000)
        assert len(_http.get(None, s.url + "/metrics", max_bytes=5000).content) == 5000


@pytest.mark.slow
def test_a_servers_error_text_reaches_the_terminal_escaped(pytester: pytest.Pytester):
    """A completion answered with an HTTP 500 whose body holds ESC sequences (clear screen, a window title): the
    point error pytest prints quotes it with the control characters escaped (issue 23, cases 9.24/9.79c)."""
    from support.openai_stub import Fault

    body = b"\x1b[2J\x1b]0;pwned\x07 engine exploded"
    raw = b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)
    pytester.makefile(
        ".yaml",
        p="hardware: cpu\nmodel: roofline-tiny\n"
        'engine: {name: vllm, version: "0.32.0", args: {max_model_len: 1024}}\n'
        "workload: {input_len: 16, output_len: 4}\n"
        "sweep: {mode: closed, concurrency: [1], requests_per_point: 2, warmup: 1}\n"
        "predictions:\n  - id: l\n    quantity: littles_law_ratio\n    at: {concurrency: 1}\n"
        "    predicted: 1.00\n    tolerance: ±50%\n",
    )
    with StubServer(model="roofline-tiny", max_model_len=1024, faults=Fault(raw=raw)) as s:
        result = pytester.runpytest_subprocess(
            "-p", "no:cacheprovider", "p.yaml", "--endpoint", s.url + "/v1", "--roofline-out", "out", timeout=120
        )
    out = "\n".join(result.outlines + result.errlines)
    assert "engine exploded" in out and "\\x1b[2J" in out  # the server's words, escaped
    assert "\x1b[2J" not in out and "\x1b]0;" not in out and "\x07" not in out


@pytest.mark.slow
def test_a_dataset_prompt_longer_than_the_servers_max_model_len_is_refused_before_any_request(pytester):
    """Issue 23, case 9.46: a 5,000-token JSONL entry against a server whose /v1/models says max_model_len 1024 was
    sent (the server's HTTP 400 the first word); the point is now an error saying so before a request goes out."""
    from support.word_tokenizer import word_tokenizer

    word_tokenizer(pytester.path, ["a", "b"])
    pytester.path.joinpath("d.jsonl").write_text(
        '{"prompt": "a b"}\n' + json.dumps({"prompt": " ".join(["a"] * 5000)}) + "\n"
    )
    pytester.makefile(
        ".yaml",
        p="hardware: cpu\nmodel: roofline-tiny\n"
        'engine: {name: vllm, version: "0.32.0"}\n'
        "workload: {input_len: 16, output_len: 4, dataset: {path: d.jsonl, tokenizer: tokenizer.json}}\n"
        "sweep: {mode: closed, concurrency: [1], requests_per_point: 2, warmup: 1}\n"
        "predictions:\n  - id: l\n    quantity: littles_law_ratio\n    at: {concurrency: 1}\n"
        "    predicted: 1.00\n    tolerance: ±50%\n",
    )
    with StubServer(model="roofline-tiny", max_model_len=1024) as s:
        result = pytester.runpytest_subprocess(
            "-p", "no:cacheprovider", "p.yaml", "--endpoint", s.url + "/v1", "--roofline-out", "out", timeout=120
        )
        posts = len(s.posts)
    out = "\n".join(result.outlines)
    assert "1 of 2 prompts are longer than the server's max_model_len 1024 (entry 2 of the file: 5000 tokens)" in out
    assert posts == 0  # refused before the warm-up request
