"""The measured path's rough edges (trial s16 live, L2-L8, L10): the engine log's launch header, engine.model
refused before a start, the engine's death said in one line, an interrupted point's finished requests kept, an
adaptive point's count as run, Nx refused beside open-loop rates, small samples marked. Every expected value is
worked out here by hand, not copied from the code's output."""

from __future__ import annotations

import json
import math
import shlex
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_roofline.errors import NotMeasured, RequestCountWarning, SpecError
from pytest_roofline.format.spec import load_spec, loads_spec
from pytest_roofline.measure import sweep
from pytest_roofline.measure.engine._engine import launch_header
from pytest_roofline.measure.plan import plan_points
from pytest_roofline.measure.progress import PointUpdate
from pytest_roofline.measure.results.file import RecordedMeasurement
from pytest_roofline.pytest_plugin.progress import TerminalProgress

PREDS = "predictions:\n  - {id: ridge, quantity: ridge_point, predicted: 153 FLOP/byte}\n"


def _spec(body: str):
    return loads_spec(textwrap.dedent(body) + PREDS, file="p.yaml")


def _refusal(body: str) -> SpecError:
    with pytest.raises(SpecError) as exc:
        _spec(body)
    errors = getattr(exc.value, "errors", [exc.value])
    assert len(errors) == 1, [str(e) for e in errors]
    return errors[0]


# ---- L10: requests_per_point: Nx beside sweep.rates -------------------------------------------------------------
def test_nx_beside_open_loop_rates_is_a_warning_at_its_line() -> None:
    # a warning, not an error (review s17 M2: the notebook's files wrote 10x beside rates; refusing made the whole
    # file fail to load, math and replays included): the closed points take Nx, the open ones the 30 s rule
    with pytest.warns(RequestCountWarning) as caught:
        spec = _spec("""\
            hardware: a100-sxm4-80gb
            model: qwen3-8b
            sweep:
              concurrency: [4]
              rates: [4 req/s]
              requests_per_point: 6x
            """)
    (msg,) = [str(w.message) for w in caught]
    assert msg.startswith("p.yaml:6: ")  # the requests_per_point line, counted by hand
    assert "6x is N × concurrency" in msg and "rates 4 req/s" in msg
    assert "max(10, rate × 30)" in msg and "plain number" in msg  # the rule an open point follows, and the fix
    assert spec.warnings == [msg]
    from pytest_roofline.measure.plan.points import all_points

    assert {p.id: p.num_requests for p in all_points(spec)} == {"closed-c4": 24, "open-r4": 120}


def test_nx_without_rates_and_a_plain_number_with_rates_are_kept() -> None:
    spec = _spec("hardware: a100-sxm4-80gb\nmodel: qwen3-8b\nsweep: {concurrency: [1, 4], requests_per_point: 6x}\n")
    assert [p.num_requests for p in plan_points(spec, spec.predictions)] == []  # ridge needs no point
    assert spec.sweep.num_requests(4) == 24  # 6 × 4
    spec = _spec("hardware: a100-sxm4-80gb\nmodel: qwen3-8b\n"
                 "sweep: {concurrency: [4], rates: [4], requests_per_point: 96}\n")
    from pytest_roofline.measure.plan.points import all_points

    assert {p.id: p.num_requests for p in all_points(spec)} == {"closed-c4": 96, "open-r4": 96}
    spec = _spec("hardware: a100-sxm4-80gb\nmodel: qwen3-8b\nsweep: {concurrency: [4], rates: [4, 0.2]}\n")
    # unset: 10 × C closed; an open point 30 s of arrivals, at least 10 (4 × 30 = 120; 0.2 × 30 = 6 -> 10)
    assert {p.id: p.num_requests for p in all_points(spec)} == {"closed-c4": 40, "open-r4": 120, "open-r0.2": 10}


def test_nx_with_a_prediction_at_a_rate_is_the_same_warning() -> None:
    # no sweep.rates, but a prediction at a rate makes an open-loop point all the same: one warning, the prediction
    # is kept (its point sends 30 s of arrivals: 2 × 30 = 60 requests)
    text = ("hardware: a100-sxm4-80gb\nmodel: qwen3-8b\nsweep: {concurrency: [4], requests_per_point: 6x}\n"
            "predictions:\n  - id: open\n    quantity: ttft_p50\n    at: {rate: 2}\n    predicted: 100 ms\n")
    with pytest.warns(RequestCountWarning, match=r"p\.yaml:3: .*6x is N × concurrency.*rates 2 req/s; the "
                      r"predictions at a rate on line 5 make them"):  # the prediction's line, counted by hand
        (pred,) = loads_spec(text, file="p.yaml").predictions
    assert pred.error is None
    ok = loads_spec(text.replace("6x", "24"), file="p.yaml")  # a plain number is every point's: no warning
    assert ok.predictions[0].error is None and ok.sweep.num_requests(4) == 24 and ok.warnings == []


# ---- L3/L4: engine.model refused before any engine starts ---------------------------------------------------------
def test_engine_model_with_the_tiny_model_is_refused() -> None:
    err = _refusal("hardware: cpu\nmodel: roofline-tiny\nengine:\n  name: vllm\n  model: /tmp/no-such-model\n")
    assert err.line == 5
    assert "is not served" in err.message and "roofline-tiny" in err.message


@pytest.mark.parametrize("value", ["/no/such/model-dir", "./no-such-model-dir", "../no-such-model-dir",
                                   "~/no-such-model-dir-for-roofline"])
def test_a_path_looking_engine_model_that_does_not_exist_is_refused_at_launch(value: str, tmp_path: Path) -> None:
    # the file loads (its math and a replay read it on any machine: review s17 H1, a GPU box's /models/... path
    # made the file fail to collect elsewhere); the launch refuses it at its line before any engine starts
    path = tmp_path / "p.yaml"
    path.write_text(f"hardware: a100-sxm4-80gb\nmodel: qwen3-8b\nengine:\n  name: vllm\n  model: {value}\n" + PREDS)
    spec = load_spec(path)
    assert spec.engine["model"] == value
    with pytest.raises(SpecError) as exc:
        sweep.engine_config_for(spec, device="cuda")
    err = exc.value
    assert err.line == 5 and err.file == str(path)
    assert "looks like a local path" in err.message and "does not exist" in err.message
    assert "config.json" in (err.hint or "")


def test_an_existing_directory_a_hub_id_and_a_container_path_are_kept(tmp_path: Path) -> None:
    for value in (str(tmp_path), "Qwen/Qwen3-8B"):
        spec = _spec(f"hardware: a100-sxm4-80gb\nmodel: qwen3-8b\nengine:\n  name: vllm\n  model: {value}\n")
        assert spec.engine["model"] == value
    # inside engine.command (a container) the path is the container's: not checked on this machine
    spec = _spec("hardware: a100-sxm4-80gb\nmodel: qwen3-8b\nengine:\n  name: vllm\n  model: /models/in-container\n"
                 "  command: [docker, run, img, --model, '{model}', --port, '{port}']\n")
    assert spec.engine["model"] == "/models/in-container"


# ---- L2: the launch header at the top of the engine log ----------------------------------------------------------
def test_the_launch_header_has_the_quoted_command_and_the_env_the_plugin_set() -> None:
    argv = ["/venv/bin/python", "-m", "vllm.entrypoints.openai.api_server", "--model", "/m/my model", "--port", "8011",
            "--api-key", "sk-secret-123"]
    env = {"VLLM_CPU_KVCACHE_SPACE": "1", "HF_TOKEN": "hf_abcdef", "A": "x y"}
    text = launch_header(argv, env)
    lines = text.splitlines()
    assert len(lines) == 3 and all(line.startswith("[pytest-roofline] ") for line in lines)
    command = lines[0].removeprefix("[pytest-roofline] command: ")
    # the shell reads it back as the argv, the secret flag's value redacted and the space kept
    assert shlex.split(command) == argv[:-1] + ["***"]
    assert lines[1].endswith("A='x y' HF_TOKEN='***' VLLM_CPU_KVCACHE_SPACE=1")  # sorted, quoted for a shell
    assert "sk-secret-123" not in text and "hf_abcdef" not in text
    assert lines[2].endswith(f"env A='x y' HF_TOKEN='***' VLLM_CPU_KVCACHE_SPACE=1 {command}")


# ---- L5: the engine's death in one line (the Engine side: tests/integration/test_engine_death_line.py) ----------
def test_the_death_line_comes_first_and_an_endpoint_says_nothing() -> None:
    from pytest_roofline.errors import PointError

    target = SimpleNamespace(death=lambda: "the engine died: X; log: /l")
    assert sweep._engine_death(target, PointError("3 of 141 measured requests failed")) == \
        "the engine died: X; log: /l"
    assert sweep._engine_death(SimpleNamespace(), PointError("x")) is None  # an endpoint has no death()


# ---- L6: an interrupted point's finished requests are kept ---------------------------------------------------------
class _Rec:
    def __init__(self, i: int) -> None:
        self.i = i

    def to_dict(self) -> dict:
        return {"index": self.i, "status": "ok"}


def test_an_interrupted_points_finished_requests_are_kept_marked_partial(tmp_path: Path) -> None:
    exc = KeyboardInterrupt()
    exc.partial_records = [_Rec(0), _Rec(1)]  # type: ignore[attr-defined]
    sweep._keep_partial_records(exc, tmp_path / "closed-c2.requests.jsonl")
    path = tmp_path / "closed-c2.partial.requests.jsonl"
    assert [json.loads(x) for x in path.read_text().splitlines()] == [
        {"index": 0, "status": "ok", "partial": True}, {"index": 1, "status": "ok", "partial": True}]
    assert exc.partial_requests_file == (path, 2, 0)  # type: ignore[attr-defined]
    assert not (tmp_path / "closed-c2.requests.jsonl").exists()  # no results file points at the partial one
    err = ValueError("not an interrupt")
    err.partial_records = [_Rec(0)]  # type: ignore[attr-defined]
    sweep._keep_partial_records(err, tmp_path / "x.requests.jsonl")
    assert not (tmp_path / "x.partial.requests.jsonl").exists()


def test_replaying_an_interrupted_file_says_so_when_a_point_is_missing() -> None:
    data = {"status": "interrupted", "points": [{"id": "closed-c1", "mode": "closed", "concurrency": 1}]}
    with pytest.raises(NotMeasured) as exc:
        RecordedMeasurement(data).point(concurrency=2)
    assert "has no point at concurrency 2 (it has: closed-c1); the file is an interrupted run" in str(exc.value)
    with pytest.raises(NotMeasured) as exc:
        RecordedMeasurement({**data, "status": "complete"}).point(concurrency=2)
    assert "interrupted" not in str(exc.value)


# ---- L7: the progress line says why a point stopped before its cap -------------------------------------------------
def test_the_done_line_says_why_an_adaptive_point_stopped() -> None:
    out: list[str] = []
    writer = SimpleNamespace(line=out.append, write=lambda t: None, fullwidth=300, width_of_current_line=0)
    p = TerminalProgress(writer, tty=False, clock=lambda: 0.0)
    why = ("adaptive: 1 of 2 targets decided, 1 undecidable within the cap after 136 requests (look 6 of 8, "
           "level 0.9938)")  # the reason as the stopping rule words it (measure/plan/stopping.py)
    p.point_done(PointUpdate("f.yaml", "closed-c8", 2, 3, "measure", 3.6, 136, 0, 400, 0, None, why), None)
    assert out[-1] == ("roofline:   closed-c8 (2/3) done in 3.6 s: 136/400 requests (stopped early: 1 of 2 targets "
                       "decided, 1 undecidable within the cap)")
    p.point_done(PointUpdate("f.yaml", "closed-c4", 3, 3, "measure", 1.0, 40, 0, 40, 0, None), None)
    assert out[-1] == "roofline:   closed-c4 (3/3) done in 1.0 s: 40/40 requests"  # ran to its cap: no reason


# ---- L8: small samples ----------------------------------------------------------------------------------------
def test_a_point_too_small_for_a_bounded_p99_is_flagged() -> None:
    # the p99's upper bound at 95% needs P(all n samples below the p99) = 0.99**n <= 0.025
    need = math.ceil(math.log(0.025) / math.log(0.99))
    assert need == 368 and 0.99 ** 367 > 0.025 >= 0.99 ** 368
    flag = sweep.small_sample_flag(3)
    assert flag is not None and flag.startswith("small sample: 3 completed requests") and "≥ 368" in flag
    assert sweep.small_sample_flag(367) is not None
    assert sweep.small_sample_flag(368) is None and sweep.small_sample_flag(None) is None


def test_the_sweep_table_marks_a_small_point_in_its_flags() -> None:
    from pytest_roofline.report.points import points_table

    spec = loads_spec("hardware: cpu\nmodel: roofline-tiny\n" + PREDS, file="p.yaml")
    long = sweep.small_sample_flag(3)
    results = {"points": [{"id": "closed-c1", "mode": "closed", "concurrency": 1, "client": {"completed": 3},
                           "flags": [long]},
                          {"id": "closed-c2", "mode": "closed", "concurrency": 2, "client": {"completed": 12}},
                          {"id": "closed-c4", "mode": "closed", "concurrency": 4, "client": {"completed": 400}}]}
    rows = {r.split("</td>", 1)[0].split(">")[-1]: r for r in points_table(spec, None, results).split("<tr")[2:]
            if "closed-c" in r}
    assert set(rows) == {"closed-c1", "closed-c2", "closed-c4"}  # the id cell stays the id alone
    assert '<td class="flags">small sample: n=3</td>' in rows["closed-c1"] and str(long) not in rows["closed-c1"]
    assert "small sample: n=12" in rows["closed-c2"]  # a file recorded before the flag: from client.completed
    assert "small sample" not in rows["closed-c4"].split("</tr>", 1)[0]


def test_the_small_sample_mark_is_not_a_verdict_note_but_other_flags_are() -> None:
    # nearly every point of a CPU run has fewer than 368 requests: the mark stays in the results file and the sweep
    # table, and a verdict's notes keep only what changes how it reads (here the held-concurrency flag)
    from pytest_roofline.quantities.analysis import Thresholds, point_notes

    held = "concurrency not held: 3.1 of 4 in flight on average"
    pt = {"id": "closed-c4", "mode": "closed", "concurrency": 4, "client": {"completed": 40},
          "flags": [sweep.small_sample_flag(40), held]}
    assert point_notes(pt, Thresholds()) == [f"point closed-c4: {held}"]  # type: ignore[arg-type]


def test_the_log_tail_leaves_the_launch_header_out(tmp_path: Path) -> None:
    from pytest_roofline.measure.engine import Engine, EngineConfig

    log = tmp_path / "engine.log"
    log.write_text(launch_header(["python", "-m", "x"], {"A": "1"}) + "INFO one\nINFO two\n")
    eng = Engine(EngineConfig(model="m", device="cpu"), log, use_watchdog=False)
    assert eng.log_tail(5) == "INFO one\nINFO two"  # the command and env live in setup.engine, not in a tail
    assert log.read_text().startswith("[pytest-roofline] command: python -m x\n")


def test_the_sweep_tables_littles_law_header_names_the_divisor_its_points_read() -> None:
    # trial s17 L2: an open-loop scorecard's column said "λW ÷ C" while its cells are λW ÷ L
    from pytest_roofline.report.points import points_table

    spec = loads_spec("hardware: cpu\nmodel: roofline-tiny\n" + PREDS, file="p.yaml")
    closed = {"id": "closed-c1", "mode": "closed", "concurrency": 1, "client": {"completed": 3}}
    opened = {"id": "open-r8", "mode": "open", "rate_req_s": 8, "client": {"completed": 80}}
    heads = {name: points_table(spec, None, {"points": pts}).split("</tr>", 1)[0]
             for name, pts in (("closed", [closed]), ("open", [opened]), ("both", [closed, opened]))}
    assert ">λW ÷ C<" in heads["closed"] and ">λW ÷ L<" in heads["open"] and ">λW ÷ C or L<" in heads["both"]
