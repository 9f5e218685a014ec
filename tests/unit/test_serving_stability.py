"""An open-loop point offered more than the engine serves has no steady state (trial s14 #4): its queue grows for as
long as requests arrive, so its TTFT, TPOT and preemptions depend on how many the run sends.  Queueing theory's
criterion is the utilisation rho = lambda / mu >= 1; the simulator estimates it (``simulator.stability``), flags the
point and gives its values no band.

The setup is the trial's: Llama-3.1-8B on an H100, vLLM 0.11, 1,024 prompt and 256 output tokens.  Its capacity,
from the trial's overloaded run: 5,100 output tok/s ÷ 256 tokens a request ~ 20 req/s; 5 req/s is a quarter of it,
60 req/s three times it.
"""

from __future__ import annotations

import json
import math

import pytest

from pytest_roofline import cli
from pytest_roofline.model import bands
from pytest_roofline.model import serving as sv
from pytest_roofline.model.setup import build_setup

OUT = 256


@pytest.fixture(scope="module")
def h100():
    return build_setup(hardware_ref="h100-sxm", model_ref="llama-3.1-8b",
                       engine={"name": "vllm", "version": "0.11.0"}, workload={"input_len": 1024, "output_len": OUT})


def _open(setup, rate, n):
    return sv.simulate(setup, sv.workload_for_point(setup, rate_req_per_s=rate, num_requests=n))


def test_a_point_far_below_capacity_is_stable_and_keeps_its_bands(h100):
    p = _open(h100, 5.0, 300)
    assert p.unstable is None
    # stable: what it serves is what it is offered (Little's law), rho ~ 1 within a finite run's noise
    assert p.arrival_to_completion_ratio < 1.1
    assert p.served_rate_req_per_s == pytest.approx(5.0, rel=0.15)
    assert set(p.bands) == set(bands.BAND_METRICS)


def test_a_point_far_above_capacity_is_flagged_and_has_no_band(h100):
    p = _open(h100, 60.0, 300)
    # what it serves is its throughput in requests: output tokens/s ÷ 256 tokens a request (the run's own figure),
    # about 20 req/s, a third of the 60 offered
    assert p.served_rate_req_per_s == pytest.approx(p.output_throughput_tok_per_s / OUT, rel=0.3)
    assert p.served_rate_req_per_s < 30
    assert p.arrival_to_completion_ratio == pytest.approx(60.0 / p.served_rate_req_per_s, rel=0.15)
    assert p.arrival_to_completion_ratio > 2
    assert p.unstable is not None
    assert p.unstable.startswith("unstable: 60 req/s offered, ~")
    assert "latencies grow with the run's length" in p.unstable
    assert not p.bands
    assert {m: n.startswith("no band: unstable: ") for m, n in p.band_notes.items()} == {
        m: True for m in bands.BAND_METRICS}


def test_its_latencies_do_grow_with_the_run_and_the_flag_says_so_at_both_lengths(h100):
    short, long = _open(h100, 60.0, 300), _open(h100, 60.0, 1200)
    assert short.unstable and long.unstable
    # four times the requests at 40 req/s more than served: the queue, and the TTFT, keep growing
    assert long.ttft_p50_ms > 4 * short.ttft_p50_ms


def test_closed_loop_and_capped_points_are_not_judged(h100):
    closed = sv.simulate(h100, sv.workload_for_point(h100, concurrency=8, num_requests=40))
    capped = sv.simulate(h100, sv.workload_for_point(h100, rate_req_per_s=60.0, concurrency=8, num_requests=40))
    for p in (closed, capped):  # a closed loop, or a client cap, sends no faster than the engine serves
        assert p.unstable is None and math.isnan(p.arrival_to_completion_ratio)


def _predict(capsys, *extra):
    rc = cli.main(["predict", "--simulate", "--gpu", "h100", "--model", "llama-3.1-8b", "--engine-version", "0.11.0",
                   "--input-len", "1024", "--output-len", str(OUT), "--rate", "5,60", *extra])
    out = capsys.readouterr().out
    assert rc == 0
    return out


def test_the_cli_flags_the_unstable_point_in_the_table_and_in_json(capsys):
    rows = [json.loads(line) for line in _predict(capsys, "--json").splitlines()]
    stable, over = rows
    assert stable["unstable"] is None and stable["bands"]
    assert over["unstable"].startswith("unstable: 60 req/s offered")
    assert not over["bands"]
    for metric in ("ttft_p50_ms", "tpot_p50_ms", "output_throughput_tok_per_s"):
        assert over["band_notes"][metric].startswith("no band: unstable: 60 req/s offered")
    text = _predict(capsys).splitlines()
    (i,) = [k for k, line in enumerate(text) if line.lstrip().startswith("60/s")]
    assert "no band: unstable: 60 req/s offered" in text[i + 1]
    (j,) = [k for k, line in enumerate(text) if line.lstrip().startswith("5/s")]
    assert text[j + 1].strip().startswith("band: ")  # the stable point keeps its band line
