"""The live display of a sweep: the engine's start and each point, through pytest's terminal writer.

It implements :class:`pytest_roofline.measure.progress.SweepProgress`. Lines go to the terminal reporter's
writer with pytest's output capture suspended for the write (as pytest's own live logging does), so they show
with ``-s`` and without it. On a terminal one line per point is rewritten in place (``\\r``) at most every
:data:`TTY_INTERVAL_S`, and the point's end replaces it; anywhere else (a CI log, a pipe) nothing is
rewritten: a plain line when the engine starts and is ready, when a point starts, every
:data:`PLAIN_INTERVAL_S` while it runs, and when it ends. ``-qq`` silences it.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

from pytest_roofline.measure.progress import EngineWait, PointUpdate

__all__ = ["TerminalProgress", "PLAIN_INTERVAL_S", "TTY_INTERVAL_S"]

#: seconds between two progress lines of one point (or of an engine's start) when the output is not a terminal
PLAIN_INTERVAL_S = 10.0
#: seconds between two rewrites of the progress line on a terminal
TTY_INTERVAL_S = 0.5

#: vLLM's log prefix: ``INFO 12-01 12:00:00 [api_server.py:1234] `` (or ``(APIServer pid=1) INFO ...``)
_LOG_PREFIX = re.compile(r"^(?:\(\S+ pid=\d+\)\s*)?(?:[A-Z]+\s+\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?\s+\[[^\]]*\]\s*)?")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _log_message(line: str) -> str:
    """A log line without its colour codes and vLLM's level/time/source prefix."""
    return _LOG_PREFIX.sub("", _ANSI.sub("", line)).strip()


def _count(u: PointUpdate) -> str:
    total = f"/{u.total}" if u.total is not None else ""
    failed = f", {u.failed} failed" if u.failed else ""
    return f"{u.completed}{total} requests{failed}"


def _rate(u: PointUpdate) -> str:
    return f", {u.output_tok_per_s:,.1f} tok/s" if u.output_tok_per_s is not None else ""


def _stop_reason(text: str) -> str:
    """An adaptive stop's reason, short enough for a terminal line: ``adaptive: 2 of 2 targets decided after 136
    requests (look 6 of 8, level 0.9938)`` reads ``2 of 2 targets decided`` (the counts are on the line already;
    the whole reason is in the results file's ``adaptive.stopped``)."""
    return text.removeprefix("adaptive: ").split(" after ", 1)[0]


class TerminalProgress:
    """A :class:`~pytest_roofline.measure.progress.SweepProgress` drawn on pytest's terminal.

    ``writer`` is a pytest ``TerminalWriter`` (``line``, ``write``, ``fullwidth``, ``width_of_current_line``);
    ``tty`` whether to rewrite lines in place; ``suspend`` a context manager that lets the write through the
    capture; ``clock`` the time source (tests pass a fake)."""

    def __init__(self, writer: Any, *, tty: bool, suspend: Callable[[], Any] | None = None,
                 clock: Callable[[], float] = time.monotonic, interval_s: float | None = None) -> None:
        self.writer = writer
        self.tty = tty
        self.suspend = suspend or contextlib.nullcontext
        self.clock = clock
        self.interval_s = interval_s if interval_s is not None else (TTY_INTERVAL_S if tty else PLAIN_INTERVAL_S)
        self._last_shown: dict[str, float] = {}
        self._open = 0  # characters of the in-place line now on screen (tty), 0 when none is open

    @classmethod
    def for_config(cls, config: Any) -> TerminalProgress | None:
        """The display for a pytest run, or None where there is nowhere to draw it (no terminal reporter, -qq)."""
        tr = config.pluginmanager.get_plugin("terminalreporter")
        if tr is None or config.get_verbosity() <= -2:
            return None
        writer = config.get_terminal_writer()
        capman = config.pluginmanager.get_plugin("capturemanager")

        @contextlib.contextmanager
        def suspend() -> Iterator[None]:
            if capman is None:
                yield
                return
            with capman.global_and_fixture_disabled():
                yield

        with suspend():  # while a test runs, fd 1 is pytest's capture file: ask the terminal, not the capture
            file = getattr(writer, "_file", None)
            try:
                tty = bool(file is not None and file.isatty())
            except (ValueError, OSError):
                tty = False
        return cls(writer, tty=tty, suspend=suspend)

    # ---- drawing ------------------------------------------------------------------------------------------
    def _width(self) -> int:
        try:
            return max(40, int(self.writer.fullwidth))
        except (AttributeError, TypeError, ValueError):
            return 80

    def _fit(self, text: str) -> str:
        width = self._width() - 1
        return text if len(text) <= width else text[: width - 1] + "…"

    def _flush(self) -> None:
        flush = getattr(self.writer, "flush", None)
        if flush is not None:
            flush()

    def _pending_text(self) -> bool:
        """Whether pytest left text on the current line (its progress dots, a test's name under -v)."""
        return bool(getattr(self.writer, "width_of_current_line", 0))

    def _line(self, text: str) -> None:
        """A line of its own (closing any in-place line first)."""
        with self.suspend():
            if self._open:  # the point's (or engine's) last word replaces its progress line
                text = self._fit(text)
                self.writer.write("\r" + text + " " * max(0, self._open - len(text)) + "\n")
                self._open = 0
                self._flush()
                return
            if self._pending_text():
                self.writer.write("\n")  # pytest's progress dots or the test's name are still on this line
            self.writer.line(self._fit(text))
            self._flush()

    def _inplace(self, text: str) -> None:
        """Rewrite the current progress line (terminal only)."""
        text = self._fit(text)
        with self.suspend():
            if self._open == 0 and self._pending_text():
                self.writer.write("\n")
            self.writer.write("\r" + text + " " * max(0, self._open - len(text)))
            self._open = len(text)
            self._flush()

    def _due(self, key: str) -> bool:
        now = self.clock()
        if now - self._last_shown.get(key, -1e18) < self.interval_s:
            return False
        self._last_shown[key] = now
        return True

    # ---- SweepProgress ------------------------------------------------------------------------------------
    def engine_waiting(self, wait: EngineWait) -> None:
        key = f"engine:{wait.name}"
        if not self._due(key):
            return
        log = _log_message(wait.last_log_line)
        stage = "" if wait.stage == "/health" else f" (waiting for {wait.stage})"  # /health: still loading
        text = f"roofline: starting engine for {wait.name}, {wait.elapsed_s:.0f} s{stage}" + (f": {log}" if log else "")
        (self._inplace if self.tty else self._line)(text)

    def engine_done(self, name: str, elapsed_s: float, error: str | None) -> None:
        self._last_shown.pop(f"engine:{name}", None)
        self._line(f"roofline: engine for {name} " + (f"ready in {elapsed_s:.1f} s" if error is None
                                                       else f"did not start after {elapsed_s:.1f} s: {error}"))

    def point_started(self, update: PointUpdate) -> None:
        key = f"point:{update.file}:{update.point_id}"
        self._last_shown[key] = self.clock()  # the first update line comes one interval after the start
        total = f", {update.total} requests" if update.total is not None else ""
        self._line(f"roofline: {update.file} point {update.point_id} ({update.index}/{update.count}) "
                   f"started{total}")

    def point_update(self, update: PointUpdate) -> None:
        if not self._due(f"point:{update.file}:{update.point_id}"):
            return
        what = "warm-up" if update.phase == "warmup" else "measuring"
        text = (f"roofline:   {update.point_id} ({update.index}/{update.count}) {what} {update.elapsed_s:.0f} s: "
                f"{_count(update)}{_rate(update)}")
        (self._inplace if self.tty else self._line)(text)

    def point_done(self, update: PointUpdate, error: str | None) -> None:
        self._last_shown.pop(f"point:{update.file}:{update.point_id}", None)
        head = f"roofline:   {update.point_id} ({update.index}/{update.count}) "
        if error is None:
            stopped = f" (stopped early: {_stop_reason(update.stopped)})" if update.stopped else ""
            self._line(head + f"done in {update.elapsed_s:.1f} s: {_count(update)}{stopped}{_rate(update)}")
        else:
            self._line(head + f"FAILED after {update.elapsed_s:.1f} s: {error}")
