"""The limits a prediction file is read under, so that no file can make the loader hang or exhaust memory.

Each limit has a default that no real prediction file comes near, and each can be raised: in pytest with the ini
option named in :data:`INI_OPTIONS` (``[tool.pytest.ini_options]`` or ``pytest.ini``), in the CLI with
``roofline check --limit NAME=VALUE``. A file over a limit is a :class:`~pytest_roofline.errors.SpecError` that
names the limit, the value it reached and how to raise it — in bounded time, because every limit is checked
before the work it bounds is done (an alias bomb is counted, never expanded; an ``at:`` product is multiplied
out as a number before a test is built).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

__all__ = ["Limits", "DEFAULT_LIMITS", "INI_OPTIONS", "MAX_DEPTH", "how_to_raise", "parse_limit"]

#: how deeply mappings and lists may nest; fixed (PyYAML composes recursively: deeper would be a RecursionError)
MAX_DEPTH = 100


@dataclass(frozen=True)
class Limits:
    """Bounds on one prediction file."""

    #: YAML nodes once every alias is expanded (a billion-laughs bomb counts its billion)
    max_yaml_nodes: int = 1_000_000
    #: tests one prediction may expand into (its ``at:`` lists multiplied out)
    max_tests_per_prediction: int = 1_000
    #: tests one file may expand into (predictions, table cells and ``at:`` expansions together)
    max_tests_per_file: int = 100_000
    #: characters of a value read as a number, a unit or a tolerance (free text such as notes is not bounded)
    max_value_length: int = 1_000

    def with_changes(self, **changes: int) -> Limits:
        return dataclasses.replace(self, **changes)


DEFAULT_LIMITS = Limits()

#: limit -> the pytest ini option that sets it
INI_OPTIONS = {f.name: f"roofline_{f.name}" for f in dataclasses.fields(Limits)}


def how_to_raise(name: str) -> str:
    """The fix line of an error that hit limit ``name``."""
    return (f"if this is intended, raise the limit: ini option {INI_OPTIONS[name]} = N (pytest), or "
            f"`roofline check --limit {name}=N`")


def parse_limit(text: str) -> tuple[str, int]:
    """``"max_yaml_nodes=2000000"`` -> ``("max_yaml_nodes", 2000000)``; ValueError saying what is wrong."""
    name, sep, value = str(text).partition("=")
    name = name.strip()
    if not sep or name not in INI_OPTIONS:
        raise ValueError(f"--limit {text!r}: write NAME=N with NAME one of {', '.join(INI_OPTIONS)}")
    return name, positive_int(value, name)


def positive_int(value: object, name: str) -> int:
    """A limit's value: a whole number >= 1 (``1_000_000`` and ``1,000,000`` are read too)."""
    text = str(value).strip().replace("_", "").replace(",", "")
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"limit {name}: {value!r} is not a whole number >= 1")
    return int(text)
