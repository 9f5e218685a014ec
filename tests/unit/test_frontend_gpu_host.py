"""The serving model's frontend leg checked on a GPU host, by vLLM's own per-request traces (issue 22's mechanism
test for the frontend term): BLIS's public ground-truth runs (vLLM 0.11.0 V1, CodeLlama-34B on an H100, GuideLLM
over HTTP/2 from another host), transcribed into the accuracy corpus by benchmarks/corpus_blis.py.

vLLM's ``llm_request`` span gives each request's server-side TTFT (the API server's arrival stamp to the first token
in its output processor), its queue and its prefill time (the engine core's own stamps); what is left of the
server's TTFT is the leg ``frontend_in_s`` models (the hand-over to the engine core and back, measured at 1.98 ms on
the CPU engine). The client's TTFT minus the server's is the HTTP leg, which on the CPU engine over loopback was
0.63 ms (``frontend_out_s`` 0.7 ms) and here, across a cluster network with ~3,000-token prompts, is ~10 ms.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_roofline.model.serving import constants

CORPUS = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "corpus" / "v1-public-runs.json"


def _blis_runs() -> list[dict]:
    doc = json.loads(CORPUS.read_text())
    (src,) = [s for s in doc["sources"] if s["source"] == "blis-h100-codellama34b"]
    return src["runs"]


def _sync_runs() -> list[dict]:
    return [r for r in _blis_runs() if r["strategy"] == "synchronous"]


def test_the_split_adds_up_as_its_definitions_say():
    # client = server + HTTP; server = queue + prefill + API server <-> engine core (means over the same requests)
    for r in _blis_runs():
        s = r["ttft_split_mean_ms"]
        assert s["client"] == pytest.approx(s["server"] + s["http_and_network"], abs=0.002)
        assert s["server"] == pytest.approx(s["queue"] + s["prefill"] + s["api_server_engine_core"], abs=0.002)


def test_the_api_server_to_engine_core_leg_on_a_gpu_host_is_the_one_frontend_in_s_prices():
    # both C = 1 benchmarks (no queue: 0.01 ms): vLLM's traces put 1.776 and 1.886 ms between the server's TTFT and
    # the engine's queue + prefill, within 15% of the 2 ms the CPU engine gave (1.98 ms, benchmarks/frontend_split.py)
    legs = [r["ttft_split_mean_ms"]["api_server_engine_core"] for r in _sync_runs()]
    assert legs == [1.776, 1.886]
    for leg_ms in legs:
        assert abs(constants.FRONTEND_IN_S * 1e3 - leg_ms) / leg_ms < 0.15


def test_the_http_leg_across_a_network_is_what_the_model_leaves_out():
    # 10.008 and 9.361 ms from GuideLLM's send to vLLM's arrival stamp and back: more than ten times the 0.7 ms of
    # frontend_out_s (the CPU engine's loopback figure), which is why GPU-host TTFTs at low load exceed the model and
    # its band carries the difference (constants.CONSTANT_SOURCES["frontend_in_s"] says so)
    http = [r["ttft_split_mean_ms"]["http_and_network"] for r in _sync_runs()]
    assert http == [10.008, 9.361]
    assert min(http) > 10 * constants.FRONTEND_OUT_S * 1e3
    assert "9.4-10.0 ms" in constants.CONSTANT_SOURCES["frontend_in_s"]


def test_a_run_guidellm_sent_late_is_kept_but_not_scored():
    late = [r for r in _blis_runs() if r.get("excluded")]
    assert [(r["experiment"], r["benchmark"]) for r in late] == [("jan20-prefill-llama7b-tp1-1", 2)]
    assert "0.97 s late" in late[0]["excluded"]
