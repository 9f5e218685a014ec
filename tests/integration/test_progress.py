"""The live display of a sweep: the reporter on its own (a fake writer and clock), a whole pytest run against a
small streaming server (no engine). Against the real CPU build of vLLM: tests/engine/test_cpu_tiny.py.

Expected figures are worked out by hand: 64 requests of 128 output tokens in 10 s are 64 × 128 / 10 =
819.2 tok/s; a point of 8 requests, one at a time, each streaming 4 tokens 0.05 s apart, runs about
8 × 4 × 0.05 = 1.6 s.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.patience import bound_s
from support.specs import LITTLES_LAW_EVERY

from pytest_roofline.measure.progress import EngineWait, PointUpdate, output_tok_per_s
from pytest_roofline.pytest_plugin import progress as progress_mod
from pytest_roofline.pytest_plugin.progress import TerminalProgress


class FakeWriter:
    """The part of pytest's TerminalWriter the display uses; records every write."""

    def __init__(self, fullwidth: int = 80) -> None:
        self.fullwidth = fullwidth
        self.out = ""

    @property
    def width_of_current_line(self) -> int:
        return len(self.out.rsplit("\n", 1)[-1])

    def write(self, text: str) -> None:
        self.out += text

    def line(self, text: str = "") -> None:
        self.out += text + "\n"


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _update(elapsed: float, completed: int, *, phase: str = "measure", total: int | None = 64) -> PointUpdate:
    return PointUpdate("cpu-tiny.yaml", "closed-c8", 4, 6, phase, elapsed, completed, 0, total, 8,
                       output_tok_per_s(completed, 128, elapsed) if phase == "measure" else None)


def test_output_rate_is_completed_tokens_over_elapsed_time():
    assert output_tok_per_s(64, 128, 10.0) == pytest.approx(819.2)  # 64 × 128 / 10
    assert output_tok_per_s(0, 128, 10.0) is None  # nothing completed yet: no rate, not 0
    assert output_tok_per_s(5, 128, 0.0) is None


def test_plain_output_prints_lines_every_ten_seconds_and_at_each_end():
    w, clock = FakeWriter(), FakeClock()
    p = TerminalProgress(w, tty=False, clock=clock)
    for t in range(26):  # the engine waits 25 s, telling once a second
        clock.now = float(t)
        p.engine_waiting(EngineWait("cpu-tiny.yaml", float(t), "/health",
                                    "INFO 12-01 12:00:00 [gpu_model_runner.py:1] Loading weights took 0.01 s"))
    p.engine_done("cpu-tiny.yaml", 25.4, None)
    p.point_started(_update(0.0, 0, phase="start"))
    for k in range(1, 126):  # 25 s of updates, five a second (the load generator's pace)
        clock.now = 25.0 + k * 0.2
        p.point_update(_update(k * 0.2, k // 2))
    p.point_done(_update(25.0, 64), None)
    lines = w.out.splitlines()
    assert "\r" not in w.out  # nothing rewritten in place in a log
    waiting = [ln for ln in lines if ln.startswith("roofline: starting engine")]
    assert [ln.split(", ")[1].split(" s")[0] for ln in waiting] == ["0", "10", "20"]  # at 0, 10 and 20 s
    assert waiting[0].endswith(": Loading weights took 0.01 s")  # the log's message, without vLLM's prefix
    assert "roofline: engine for cpu-tiny.yaml ready in 25.4 s" in lines
    assert "roofline: cpu-tiny.yaml point closed-c8 (4/6) started, 64 requests" in lines
    updates = [ln for ln in lines if " measuring " in ln]
    assert len(updates) == 2, updates  # at 10 and 20 s after the start (the start line itself is at 0)
    # at 10 s: 25 completed → 25 × 128 / 10 = 320 tok/s
    assert updates[0] == "roofline:   closed-c8 (4/6) measuring 10 s: 25/64 requests, 320.0 tok/s"
    # the end: 64 × 128 / 25 = 327.68 tok/s
    assert lines[-1] == "roofline:   closed-c8 (4/6) done in 25.0 s: 64/64 requests, 327.7 tok/s"
    assert all(len(ln) < 80 for ln in lines)


def test_a_terminal_gets_one_line_rewritten_in_place():
    w, clock = FakeWriter(), FakeClock()
    p = TerminalProgress(w, tty=True, clock=clock)
    p.point_started(_update(0.0, 0, phase="start"))
    for k in range(1, 11):
        clock.now = k * 0.5
        p.point_update(_update(k * 0.5, k))
    p.point_done(_update(5.0, 10), None)
    started, rest = w.out.split("\n", 1)
    assert started.endswith("started, 64 requests")
    live, end = rest.split("\n")
    assert end == ""
    assert live.count("\r") == 11 and live.startswith("\r")  # one line, rewritten at each update and at the end
    *updates, done = live.split("\r")[1:]
    assert updates[-1].startswith("roofline:   closed-c8 (4/6) measuring 5 s: 10/64 requests")
    assert done.startswith("roofline:   closed-c8 (4/6) done in 5.0 s")


def test_a_line_pytest_left_open_is_closed_first_and_long_text_is_cut_to_the_width():
    w = FakeWriter(fullwidth=100)
    w.write("predictions/cpu-tiny.yaml ..")  # pytest's progress dots
    p = TerminalProgress(w, tty=False, clock=FakeClock())
    p.engine_waiting(EngineWait("cpu-tiny.yaml", 3.0, "/v1/models", "x" * 200))
    first, second, _ = w.out.split("\n")
    assert first == "predictions/cpu-tiny.yaml .."
    assert second.startswith("roofline: starting engine for cpu-tiny.yaml, 3 s (waiting for /v1/models): xxx")
    assert len(second) == 99 and second.endswith("…")


def test_warmup_and_a_failed_point_say_so():
    w, clock = FakeWriter(), FakeClock()
    p = TerminalProgress(w, tty=False, clock=clock, interval_s=1.0)
    p.point_started(_update(0.0, 0, phase="start"))
    clock.now = 1.0
    p.point_update(_update(1.0, 1, phase="warmup", total=2))
    p.point_done(_update(1.5, 1), "1 of 64 requests failed")
    lines = w.out.splitlines()
    assert lines[1] == "roofline:   closed-c8 (4/6) warm-up 1 s: 1/2 requests"  # no rate before the measure
    assert lines[2] == "roofline:   closed-c8 (4/6) FAILED after 1.5 s: 1 of 64 requests failed"


def test_a_reporter_that_raises_is_switched_off_not_the_sweep():
    from pytest_roofline.measure.sweep import Measurements

    class Broken:
        def __getattr__(self, name):
            raise RuntimeError("display broke")

    m = Measurements(mode="endpoint", gpu=None, endpoint="http://127.0.0.1:9", endpoint_key_env=None,
                     out_dir=Path("."), reanchor=False, plans={})
    m.progress = Broken()
    m._tell("engine_done", "x.yaml", 1.0, None)  # does not raise
    assert m.progress is None


# ---------------------------------------------------------------------------------------------------------------
# a whole run through pytest, against a small streaming server
# ---------------------------------------------------------------------------------------------------------------
@pytest.fixture
def slow_server(stub_server) -> str:
    """An OpenAI-compatible server that streams each token 0.05 s after the last; its base URL."""
    return stub_server(model="roofline-tiny", max_model_len=1024, token_delay_s=0.05).url


SPEC = """\
hardware: cpu
model: roofline-tiny
engine: {name: vllm, version: "0.32.0", args: {max_model_len: 1024}}
workload: {input_len: 16, output_len: 4}
sweep: {mode: closed, concurrency: [1, 2], requests_per_point: 8, warmup: 1}
predictions:
""" + LITTLES_LAW_EVERY


@pytest.mark.slow
@pytest.mark.parametrize("capture", [(), ("-s",)], ids=["captured", "no-capture"])
def test_a_sweep_through_pytest_shows_each_point(pytester, slow_server, monkeypatch, capture):
    monkeypatch.setattr(progress_mod, "PLAIN_INTERVAL_S", 0.5)
    (pytester.path / "p.roofline.yaml").write_text(SPEC)
    result = pytester.runpytest("-p", "no:cacheprovider", "p.roofline.yaml", "--endpoint", slow_server + "/v1",
                                "--roofline-out", "out", *capture)
    result.assert_outcomes(passed=2)
    out = result.outlines
    starts = [ln for ln in out if ln.startswith("roofline: p.roofline.yaml point ")]
    assert starts == ["roofline: p.roofline.yaml point closed-c1 (1/2) started, 8 requests",
                      "roofline: p.roofline.yaml point closed-c2 (2/2) started, 8 requests"]
    done = [ln for ln in out if " done in " in ln]
    assert [ln.split(" (")[0] for ln in done] == ["roofline:   closed-c1", "roofline:   closed-c2"]
    assert all(": 8/8 requests, " in ln and ln.endswith(" tok/s") for ln in done), done
    # closed-c1: 8 requests × ~0.2 s each ≈ 1.6 s: lines every 0.5 s in between
    assert any(" measuring " in ln for ln in out), out
    # the rate: 8 × 4 tokens over the measured time (≥ 1.6 s at one at a time) is at most 20 tok/s; a busy machine
    # makes the time longer, so the lower bound is the one the same tokens over the patience bound of 1.6 s give
    rate_c1 = float(done[0].rsplit(", ", 1)[1].split()[0])
    assert 32 / bound_s(1.6) < rate_c1 <= 20.0, done[0]


@pytest.mark.slow
def test_minus_qq_silences_the_display(pytester, slow_server):
    (pytester.path / "p.roofline.yaml").write_text(SPEC)
    result = pytester.runpytest("-p", "no:cacheprovider", "p.roofline.yaml", "--endpoint", slow_server + "/v1",
                                "--roofline-out", "out", "-qq")
    assert result.ret == 0
    assert not [ln for ln in result.outlines if ln.startswith("roofline: ") and "point" in ln]


@pytest.mark.slow
def test_no_roofline_progress_silences_the_display_and_keeps_the_table(pytester, slow_server):
    (pytester.path / "p.roofline.yaml").write_text(SPEC)
    result = pytester.runpytest("-p", "no:cacheprovider", "p.roofline.yaml", "--endpoint", slow_server + "/v1",
                                "--roofline-out", "out", "--no-roofline-progress")
    assert result.ret == 0
    assert not [ln for ln in result.outlines if ln.startswith("roofline: ") and "point" in ln]
    assert any("roofline predictions" in ln for ln in result.outlines)
