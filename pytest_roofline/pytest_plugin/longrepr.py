"""The failure report of a missed prediction, built from pytest's own report parts so that ``--tb`` applies.

pytest formats a failure by calling ``longrepr.toterminal(tw)`` and, for ``--tb=line``, the short test summary
(``-r``) and JUnit's ``failure message=``, by reading ``longrepr.reprcrash`` (a location and a one-line
message). A plain string has neither, so the explanation came out whole under ``--tb=line`` and the summary
line showed its first line only (``ridge-wrong: ridge_point [math]``). :func:`prediction_longrepr` returns an
exception report whose one traceback entry is the explanation, shaped by the run's ``--tb`` style:

* ``long`` / ``auto`` (the default): the whole explanation;
* ``short``: the explanation without the block of the model's inputs;
* ``line``: nothing here (pytest prints the one line ``file:line: id: FAIL …`` itself from ``reprcrash``);
* ``no``: pytest prints no failure section at all.

Being pytest's own classes, it travels across pytest-xdist's workers unchanged (a plain object would arrive
as a string, its ``reprcrash`` lost).
"""

from __future__ import annotations

# pytest does not re-export the parts of its failure reports; these have kept their shape since pytest 6
from _pytest._code.code import ReprExceptionInfo, ReprFileLocation, ReprTracebackNative

__all__ = ["prediction_longrepr", "shown_text"]


def shown_text(text: str, style: str | None) -> str:
    """What of the explanation ``text`` a ``--tb`` style shows (see the module docstring)."""
    if style == "line":
        return ""
    if style != "short":
        return text
    kept = []
    skipping = False
    for line in text.splitlines():
        if line.startswith("  model inputs:"):
            skipping = True
            continue
        if skipping and line.startswith("    "):
            continue
        skipping = False
        kept.append(line)
    return "\n".join(kept)


def prediction_longrepr(text: str, *, path: str, lineno: int, message: str, style: str | None) -> ReprExceptionInfo:
    """The longrepr of a missed prediction: ``text`` (its whole explanation) as ``style`` shows it, and
    ``path:lineno: message`` (the one-line verdict) as its crash line."""
    shown = shown_text(text, style)
    return ReprExceptionInfo(reprtraceback=ReprTracebackNative([shown + "\n"] if shown else []),
                             reprcrash=ReprFileLocation(path, lineno, message))
