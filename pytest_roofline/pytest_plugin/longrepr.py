"""The failure report of a missed prediction, shaped the way pytest's own reports are so that ``--tb`` applies.

pytest formats a failure by calling ``longrepr.toterminal(tw)`` and, for ``--tb=line``, the short test summary
(``-r``) and JUnit's ``failure message=``, by reading ``longrepr.reprcrash`` (a location and a one-line
message). A plain string has neither, so today's text came out whole under ``--tb=line`` and the summary
line showed its first line only (``ridge-wrong: ridge_point [math]``). :class:`PredictionRepr` carries the
whole explanation and the one-line verdict, and prints as the run's ``--tb`` style asks:

* ``long`` / ``auto`` (the default): the whole explanation;
* ``short``: the explanation without the block of the model's inputs;
* ``line``: nothing here (pytest prints the one line ``file:line: id: FAIL …`` itself from ``reprcrash``);
* ``no``: pytest prints no failure section at all.

``str()`` is always the whole explanation (JUnit's failure body, pytest-html, xdist's transport).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from _pytest._code.code import TerminalRepr  # pytest does not re-export the base of its failure reports

__all__ = ["PredictionRepr", "CrashLine"]


@dataclass(frozen=True)
class CrashLine:
    """``reprcrash``: where a failure happened and its one-line message (``str()`` is ``path:line: message``)."""

    path: str
    lineno: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.lineno}: {self.message}"


class PredictionRepr(TerminalRepr):
    """A missed prediction's longrepr (see the module docstring)."""

    def __init__(self, text: str, crash: CrashLine, style: str | None) -> None:
        self.text = text
        self.reprcrash = crash
        self.style = style or "auto"

    def _shown(self) -> str:
        if self.style == "line":
            return ""
        if self.style == "short":
            kept = []
            skipping = False
            for line in self.text.splitlines():
                if line.startswith("  model inputs:"):
                    skipping = True
                    continue
                if skipping and line.startswith("    "):
                    continue
                skipping = False
                kept.append(line)
            return "\n".join(kept)
        return self.text

    def toterminal(self, tw: Any) -> None:
        shown = self._shown()
        if shown:
            tw.line(shown)

    def __str__(self) -> str:
        return self.text
