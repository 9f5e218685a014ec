"""The light part of the pytest glue: what the entry module (``plugin.py``) needs before it knows whether the run
has anything to do with predictions, shared with the modules that do the work.

It imports nothing heavy (no pytest, no model, no YAML): the entry module loads in every pytest run of every
project the plugin is installed in, so this is all such a project pays for. The stash key of the run's
:class:`~pytest_roofline.pytest_plugin.session.RooflineSession`, the default patterns, the collection rule
(which YAML files are prediction files) and the inconclusive policies live here, once.
"""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from _pytest.stash import StashKey  # pytest.StashKey itself; ``import pytest`` would load all of pytest's API

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    import pytest

__all__ = ["SESSION_KEY", "DEFAULT_PATTERNS", "INCONCLUSIVE_POLICIES", "SNIFF_BYTES", "matches_patterns",
           "looks_like_prediction_file", "named_on_command_line", "patterns_of", "wants_file", "is_prediction_nodeid"]

#: the run's RooflineSession, once the plugin is in use (a roofline option or ini value, or a prediction file);
#: typed Any here because session.py imports this module (``session.get_session`` returns it typed)
SESSION_KEY: StashKey[Any] = StashKey()
DEFAULT_PATTERNS = ["predictions/*.yaml", "predictions/*.yml", "*.roofline.yaml", "*.roofline.yml"]
#: what an INCONCLUSIVE verdict (its measured interval straddles a tolerance boundary) becomes in pytest:
#: ``skip`` (the default: a skip the counts line calls "inconclusive" — it must not read as a pass in CI, and it is
#: not a failure of the prediction either: the measurement could not tell), ``fail`` (a CI that must decide every
#: prediction), ``pass`` (a CI that only fails on decided misses)
INCONCLUSIVE_POLICIES = ("skip", "fail", "pass")


def matches_patterns(path: Path, rootdir: Path, patterns: list[str]) -> bool:
    """Whether ``path`` matches one of the glob ``patterns``, path-segment by segment: ``*`` never crosses a ``/``
    (so ``predictions/*.yaml`` leaves ``predictions/recorded/x.yaml`` alone), ``**`` spans any number of
    folders, and a pattern may match the path's tail (``predictions/*.yaml`` also matches
    ``sub/predictions/a.yaml``)."""
    try:
        rel = path.resolve().relative_to(rootdir.resolve()).as_posix()
    except ValueError:
        rel = path.as_posix()
    parts = [p for p in rel.split("/") if p]
    return any(_match_tail(parts, [p for p in pat.split("/") if p]) for pat in patterns)


def _match_tail(parts: list[str], pat: list[str]) -> bool:
    return any(_match_segments(parts[i:], pat) for i in range(len(parts)))


def _match_segments(parts: list[str], pat: list[str]) -> bool:
    if not pat:
        return not parts
    if pat[0] == "**":
        return any(_match_segments(parts[i:], pat[1:]) for i in range(len(parts) + 1))
    return bool(parts) and fnmatch.fnmatchcase(parts[0], pat[0]) and _match_segments(parts[1:], pat[1:])


#: how much of a YAML file the collector peeks at to recognise a prediction file (the keys are at the top)
SNIFF_BYTES = 256 * 1024
#: the editor comment the project's files carry (``# yaml-language-server: $schema=.../predictions.schema.json``)
_SCHEMA_COMMENT = re.compile(r"^[ \t]*#.*\$schema[ \t]*[=:][ \t]*\S*predictions\.schema\.json", re.MULTILINE)
#: a top-level (column 0) key of a block mapping, bare or quoted
_TOP_KEY = re.compile(r"""^(["']?)(predictions|hardware|model)\1[ \t]*:""", re.MULTILINE)
#: a prediction's ``quantity:`` key, in block (``  quantity: x``) or flow (``{id: a, quantity: x}``) style
_QUANTITY_KEY = re.compile(r"""(?:^[ \t-]*|[{,][ \t]*)["']?quantity["']?[ \t]*:""", re.MULTILINE)


def looks_like_prediction_file(path: Path, limit_bytes: int = SNIFF_BYTES) -> bool:
    """Whether a YAML file is recognisably a prediction file, from its first ``limit_bytes`` without parsing it
    and without raising: the ``$schema`` comment naming ``predictions.schema.json``, or top-level
    ``predictions:`` and ``hardware:`` keys (both required by the format), or ``predictions:`` and ``model:`` with a
    ``quantity:`` key in it (a file whose ``hardware:`` is missing, to be told so). A list, a mapping without them, a
    binary or unreadable file is not one; nor is an ML project's eval file with ``model:`` and ``predictions:`` and
    no quantity (trial s25a #12: ``predictions/eval.yaml`` stopped that project's collection, exit 2)."""
    try:
        with open(path, "rb") as f:
            head = f.read(limit_bytes)
    except OSError:
        return False
    text = head.decode("utf-8", errors="replace")
    if _SCHEMA_COMMENT.search(text):
        return True
    keys = {m.group(2) for m in _TOP_KEY.finditer(text)}
    if {"predictions", "hardware"} <= keys:
        return True
    # a prediction file whose hardware: is missing or misspelt is still one, and its error is named (trial s25d #5):
    # top-level predictions: and model:, and items that name a quantity: (an eval file's do not)
    return {"predictions", "model"} <= keys and _QUANTITY_KEY.search(text) is not None


def named_on_command_line(config: pytest.Config, path: Path) -> bool:
    """Whether ``path`` is one of the run's arguments (``pytest predictions/day3.yaml``, a node id included)."""
    target = path.resolve()
    base = config.invocation_params.dir
    return any((base / a.split("::")[0]).resolve() == target for a in config.args if a and not a.startswith("-"))


def patterns_of(config: pytest.Config) -> tuple[list[str], bool]:
    """The ``roofline_patterns`` of the run, and whether the project wrote them: patterns it wrote collect every
    file they match, the default ones only files that are recognisably prediction files."""
    patterns = list(config.getini("roofline_patterns") or DEFAULT_PATTERNS)
    return patterns, patterns != DEFAULT_PATTERNS


def wants_file(config: pytest.Config, path: Path) -> bool:
    """The collection rule: a ``.yaml``/``.yml`` file is a prediction file when it is named on the command line,
    matches a ``roofline_patterns`` value the project wrote, or matches the default patterns *and* is
    recognisably a prediction file. Anything else (a project's own YAML under ``predictions/``) is left alone."""
    if path.suffix not in (".yaml", ".yml"):
        return False
    if named_on_command_line(config, path):
        return True
    rs = config.stash.get(SESSION_KEY, None)
    patterns, explicit = (rs.patterns, rs.patterns_explicit) if rs is not None else patterns_of(config)
    if not matches_patterns(path, config.rootpath, patterns):
        return False
    return explicit or looks_like_prediction_file(path)


def is_prediction_nodeid(config: pytest.Config, nodeid: str) -> bool:
    """Whether a node id (a pytest-xdist worker's, relative to the rootdir) is in a prediction file."""
    path = nodeid.split("::", 1)[0]
    return path.endswith((".yaml", ".yml")) and wants_file(config, config.rootpath / path)
