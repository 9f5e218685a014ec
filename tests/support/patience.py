"""Waiting in tests without depending on how busy the machine is.

CI machines are shared: an engine start that takes 45 s on an idle 2-core machine can take 120 s beside another
job, and a subprocess that exits in 1 s can take 20. A test therefore never asserts a wall time; it waits for the
thing itself, up to a bound that scales with how long that thing normally takes (:func:`bound_s`), and when the
bound runs out the message says what it waited for and how long that normally takes, so a slow machine reads as a
slow machine and a hang reads as a hang.

``ROOFLINE_TEST_PATIENCE`` (a factor, default 1) stretches every bound, for machines slower than any seen so far.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable
from typing import IO, TypeVar

T = TypeVar("T")

#: every bound is at least this long: below it, scheduling noise on a loaded machine dominates
FLOOR_S = 60.0
#: how many times the typical duration a bound allows
FACTOR = 20.0


def bound_s(typical_s: float) -> float:
    """How long to wait for something that takes ``typical_s`` on an idle 2-core machine:
    ``max(60 s, 20 × typical_s) × ROOFLINE_TEST_PATIENCE``."""
    return max(FLOOR_S, FACTOR * typical_s) * float(os.environ.get("ROOFLINE_TEST_PATIENCE") or 1)


class TookTooLong(AssertionError):
    """A wait ran past its bound; the message names what was awaited and its typical duration."""


def _too_long(what: str, typical_s: float, waited_s: float, detail: str = "") -> TookTooLong:
    return TookTooLong(f"waited {waited_s:.0f} s for {what}; that normally takes about {typical_s:g} s on an idle "
                       "2-core machine (a much busier machine: raise ROOFLINE_TEST_PATIENCE; otherwise it hangs)"
                       + (f"\n{detail}" if detail else ""))


def wait_process(proc: subprocess.Popen[str] | subprocess.Popen[bytes], *, what: str, typical_s: float) -> int:
    """``proc.wait()`` with a bound that scales with ``typical_s``; its return code."""
    limit = bound_s(typical_s)
    try:
        return proc.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        raise _too_long(what, typical_s, limit) from None


def wait_until(predicate: Callable[[], T], *, what: str, typical_s: float, interval_s: float = 0.05) -> T:
    """Poll ``predicate`` until it returns something true (returned), up to the scaled bound."""
    limit = bound_s(typical_s)
    end = time.monotonic() + limit
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= end:
            raise _too_long(what, typical_s, limit)
        time.sleep(interval_s)


def read_line(stream: IO[str], *, what: str, typical_s: float) -> str:
    """One line from a child's pipe, waiting at most the scaled bound ('' at end of file)."""
    box: list[str] = []
    reader = threading.Thread(target=lambda: box.append(stream.readline()), daemon=True)
    reader.start()
    limit = bound_s(typical_s)
    reader.join(limit)
    if not box:
        raise _too_long(what, typical_s, limit)
    return box[0]
