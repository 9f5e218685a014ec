"""How bad engine args are reported: :class:`Problem` (one bad arg, at its field ``engine.args.<key>``) and
:class:`EngineArgsError` (every bad arg of a setup at once, one line per arg, each naming its field)."""

from __future__ import annotations

from typing import NamedTuple

from pytest_roofline.errors import SetupValueError


class Problem(NamedTuple):
    """One bad engine arg: its field (``engine.args.<key>``) and the full line saying why and what to write."""

    field: str
    text: str


class EngineArgsError(SetupValueError):
    """Every bad engine arg of a setup at once.  ``field`` is the first's (where a YAML error points);
    ``problems`` are all of them, each with its own field (``roofline check`` names each one's line)."""

    def __init__(self, problems: list[Problem], *, later: list[Problem] | tuple[Problem, ...] = ()):
        first: dict[str, Problem] = {}
        for p in problems:
            first.setdefault(p.field, p)  # one line per field: the first reason found
        problems = list(first.values())
        if not problems:
            raise ValueError("EngineArgsError needs at least one problem")
        self.problems = tuple(problems)
        #: the args the serving model would not simulate once these are fixed (warned then, not refused): named
        #: beside the error so one check lists every arg to change
        self.later = tuple(p for p in dict((p.field, p) for p in later).values() if p.field not in first)
        if len(problems) == 1:
            message = problems[0].text
        else:
            message = (f"{len(problems)} engine args cannot be predicted as written (fix each, then run again):\n"
                       + "\n".join(f"  - {p.text}" for p in problems))
        super().__init__(message, field=problems[0].field)

