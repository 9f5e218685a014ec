"""``sweep.processes`` in the prediction format: the multi-process load generator (``LoadSpec.processes``,
``measure/loadgen/_multiproc.py``) asked for from a YAML file.

The loader accepts a whole number >= 1 or ``auto`` and refuses anything else at its YAML line, with the fix; an
explicit count > 1 with ``sweep.adaptive: true`` is refused (the stopping rule watches one process), and ``auto``
is 1 in an adaptive sweep. More processes than this machine's CPUs is allowed without a warning: a file is often
checked on a laptop or in CI and measured on another box, and the load generator itself allows it (it shows
what extra processes cannot do); the point records ``client_cores`` beside ``processes``. One run through pytest
(``--endpoint``) against a small streaming server checks that a YAML-driven point runs over two processes and
records them.
"""

from __future__ import annotations

import json
import textwrap
import warnings
from pathlib import Path

import jsonschema
import pytest
from support.openai_stub import StubServer

from pytest_roofline.format.spec import SpecError, json_schema, loads_spec
from pytest_roofline.measure.loadgen import usable_cores


def _yaml(sweep: str) -> str:
    """A cpu-tiny-like file whose ``sweep:`` block gets ``sweep`` (lines of ``key: value``) after its mode and
    concurrency."""
    keys = "".join(f"  {line}\n" for line in textwrap.dedent(sweep).splitlines())
    return (
        "hardware: cpu\n"
        "model: roofline-tiny\n"
        'engine: {name: vllm, version: "0.32.0", args: {max_model_len: 1024}}\n'
        "workload: {input_len: 16, output_len: 4}\n"
        "sweep:\n"
        "  mode: closed\n"
        "  concurrency: [2]\n"
        f"{keys}"
        "predictions:\n"
        "  - id: littles-law\n"
        "    quantity: littles_law_ratio\n"
        "    at: {concurrency: every}\n"
        "    predicted: 1.00\n"
        "    tolerance: ±50%\n"
    )


def _load(sweep: str):
    return loads_spec(_yaml(sweep), file="preds.yaml")


def _error(sweep: str) -> SpecError:
    with pytest.raises(SpecError) as exc:
        _load(sweep)
    return exc.value


# the sweep block starts on line 5 (`sweep:`); mode is line 6, concurrency line 7, so the first key written
# by a test is on line 8 and the second on line 9
FIRST, SECOND = 8, 9


# ------------------------------------------------------------------------------------------ what loads


def test_unset_is_one_process_as_the_load_generator_does_today():
    # LoadSpec.processes defaults to 1 (measure/loadgen/_records.py): one epoll loop on one core
    sweep = _load("warmup: 1\n").sweep
    assert sweep.processes == 1 and sweep.load_processes == 1


@pytest.mark.parametrize("text, expected", [("2", 2), ("1", 1), ("auto", "auto"), ("'3'", 3), ("1e0", 1)])
def test_a_whole_number_or_auto_loads(text, expected):
    sweep = _load(f"processes: {text}\n").sweep
    assert sweep.processes == expected and sweep.load_processes == expected


def test_more_processes_than_this_machines_cpus_is_allowed_without_a_warning():
    many = usable_cores() * 4 + 1  # always above this machine's CPUs
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sweep = _load(f"processes: {many}\n").sweep
    assert sweep.processes == many


def test_auto_is_one_process_in_an_adaptive_sweep():
    sweep = _load("adaptive: true\nprocesses: auto\n").sweep
    assert sweep.processes == "auto" and sweep.load_processes == 1
    assert _load("adaptive: false\nprocesses: auto\n").sweep.load_processes == "auto"
    assert _load("adaptive: true\nprocesses: 1\n").sweep.load_processes == 1


# ------------------------------------------------------------------------------------------ what is refused


@pytest.mark.parametrize("text", ["0", "-1", "two", "1.5", "true", "yes", "2 cores", "[2]", "{n: 2}", "Auto"])
def test_anything_else_is_refused_at_its_line_with_the_fix(text):
    err = _error(f"processes: {text}\n")
    msg = str(err)
    assert err.file == "preds.yaml" and err.line == FIRST, msg
    assert msg.startswith(f"preds.yaml:{FIRST}: sweep.processes"), msg
    assert "processes: auto" in msg or "or auto" in msg, msg  # the fix names both accepted forms


@pytest.mark.parametrize("order", ["adaptive-first", "processes-first"])
def test_adaptive_with_several_processes_is_refused_at_the_processes_line(order):
    body = "adaptive: true\nprocesses: 2\n" if order == "adaptive-first" else "processes: 2\nadaptive: true\n"
    err = _error(body)
    processes_line, adaptive_line = (SECOND, FIRST) if order == "adaptive-first" else (FIRST, SECOND)
    msg = str(err)
    assert err.line == processes_line, msg
    assert f"sweep.adaptive: true (line {adaptive_line})" in msg, msg
    assert "processes: 1" in msg and "adaptive: false" in msg, msg  # both ways out


def test_the_schema_takes_and_refuses_what_the_loader_does():
    sweep = json_schema()["properties"]["sweep"]
    validator = jsonschema.Draft202012Validator(sweep)
    for good in (1, 2, 64, "auto", "3"):
        assert not list(validator.iter_errors({"processes": good})), good
    for bad in (0, -1, "two", 1.5, True, "0", "Auto"):
        assert list(validator.iter_errors({"processes": bad})), bad


# ------------------------------------------------------------------------------------------ a YAML-driven run


@pytest.fixture
def stream_server(stub_server) -> StubServer:
    """An OpenAI-compatible completions server: each request streams max_tokens chunks 5 ms apart and is logged,
    so the test knows how many requests the two client processes sent together."""
    return stub_server(model="roofline-tiny", max_model_len=1024, token_delay_s=0.005)


def test_a_yaml_point_runs_over_two_processes_and_records_them(pytester: pytest.Pytester,
                                                               stream_server: StubServer):
    (pytester.path / "p.roofline.yaml").write_text(_yaml("requests_per_point: 6\nwarmup: 1\nprocesses: 2\n"))
    result = pytester.runpytest("-p", "no:cacheprovider", "p.roofline.yaml", "--endpoint", stream_server.url + "/v1",
                                "--roofline-out", "out")
    outcomes = result.parseoutcomes()
    assert not {"failed", "errors", "error"} & outcomes.keys(), "\n".join(result.outlines[-40:])
    results_file = next((pytester.path / "out").rglob("results.json"))
    [point] = json.loads(results_file.read_text())["points"]
    # closed loop of 2: max(warmup 1, 2 clients) = 2 warm-up requests (measure/plan.py) + 6 measured = 8 sent,
    # dealt out over the two workers (4 each) and merged into one record, every run index once, in order
    assert len(stream_server.posts) == 8
    lines = [json.loads(ln) for ln in (results_file.parent / point["requests_file"]).read_text().splitlines()]
    assert [r["index"] for r in lines] == list(range(8))
    assert [r["warmup"] for r in lines] == [True, True] + [False] * 6
    assert point["client"]["completed"] == 6
    # 6 measured requests x 4 output tokens = 24, from the server's usage
    assert sum(r["completion_tokens"] for r in lines if not r["warmup"]) == 24
    checks = point["loadgen"]
    assert checks["processes"] == 2 and checks["processes_requested"] == 2
    assert checks["client_cores"] == usable_cores()
    # the parent's clock check and the shared phase start (measure/loadgen/_multiproc.py) were made and kept
    assert set(checks["process_sync"]) >= {"clock_bracket_ms", "start_late_ms"}
    assert checks["process_sync"]["clock_bracket_ms"] >= 0.0


def test_a_yaml_point_without_processes_records_one(tmp_path: Path, stream_server: StubServer):
    """The same wiring with the key unset, through ``measure.sweep.run_point`` directly: one process, no sync."""
    from types import SimpleNamespace

    from pytest_roofline.measure.plan import PointPlan
    from pytest_roofline.measure.sweep import run_point

    spec = _load("requests_per_point: 4\n")
    plan = PointPlan(id="closed-c2", mode="closed", concurrency=2, rate_req_s=None, num_requests=4,
                     duration_s=None, warmup_requests=0, input_len=16, output_len=4)
    target = SimpleNamespace(served_model_name="roofline-tiny", base_url=stream_server.url)
    point = run_point(target, plan, spec, out_dir=tmp_path, token_id_range=(5, 300),  # type: ignore[arg-type]
                      contamination=0.1)
    assert point["client"]["completed"] == 4 and len(stream_server.posts) == 4
    assert point["loadgen"]["processes"] == 1 and point["loadgen"]["processes_requested"] == 1
    assert point["loadgen"]["process_sync"] is None
