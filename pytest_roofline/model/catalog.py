"""What the two catalogs (hardware, model presets) share: their data files, name lookup and overrides.

The catalogs are data shipped in the package (``pytest_roofline/model/data/*.json``); this module reads one
file once, builds the case-insensitive name index over ids and aliases, suggests close names, and turns a
prediction file's ``*_overrides`` mapping into field changes with one set of rules and messages.  What a
field means and how its value is checked stays with the catalog (``hardware.py``, ``architecture.py``).
"""

from __future__ import annotations

import dataclasses
import difflib
import json
from collections.abc import Callable, Iterable, Mapping
from importlib import resources
from typing import Any, TypeVar

__all__ = ["load_data", "NameIndex", "field_changes", "replace_checked"]

_T = TypeVar("_T")


def load_data(filename: str) -> dict[str, Any]:
    """The JSON object in ``pytest_roofline/model/data/<filename>`` (read at import, once per catalog)."""
    text = resources.files("pytest_roofline.model").joinpath("data", filename).read_text(encoding="utf-8")
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError(f"{filename}: expected a JSON object at the top, got {type(data).__name__}")
    return data


class NameIndex:
    """Case-insensitive lookup of catalog ids and aliases, with did-you-mean suggestions.

    ``norm`` says how a name is read (e.g. spaces and underscores as ``-`` for hardware).  A name given to
    two different ids is a catalog error, raised at import.
    """

    def __init__(self, entries: Iterable[tuple[str, Iterable[str]]], norm: Callable[[str], str]) -> None:
        self.norm = norm
        self._ids: dict[str, str] = {}
        for entry_id, aliases in entries:
            for name in (entry_id, *aliases):
                key = norm(name)
                if self._ids.get(key, entry_id) != entry_id:
                    raise ValueError(f"catalog name {name!r} names both {self._ids[key]} and {entry_id}")
                self._ids[key] = entry_id

    def get(self, name: str) -> str | None:
        """The id ``name`` stands for, or None."""
        return self._ids.get(self.norm(name))

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._ids

    def keys(self) -> list[str]:
        """Every normalised name, ids and aliases."""
        return list(self._ids)

    def suggest(self, name: str, extra: Iterable[str] = ()) -> list[str]:
        """Up to three ids (or ``extra`` names, e.g. families) close to ``name``, without repeats."""
        extra = list(extra)
        out: list[str] = []
        for hit in difflib.get_close_matches(self.norm(name), self.keys() + extra, n=3, cutoff=0.5):
            shown = hit if hit in extra else self._ids.get(hit, hit)
            if shown not in out:
                out.append(shown)
        return out


def field_changes(
    overrides: Any,
    *,
    kind: str,
    owner: str,
    field_names: tuple[str, ...],
    convert: Callable[[str, Any, str], Any],
    error: type[Exception],
    key_aliases: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Field name -> converted value for a ``{kind}_overrides`` mapping.

    ``key_aliases`` maps other spellings to field names (HF's ``num_hidden_layers``); an unknown field raises
    ``error`` with a did-you-mean and the list of fields; ``convert(field, value, where)`` checks and
    converts one value (raising ``error`` with ``where`` in the message).
    """
    if not isinstance(overrides, Mapping):
        raise error(f"{kind} overrides must be a mapping, got {type(overrides).__name__}")
    key_aliases = key_aliases or {}
    changes: dict[str, Any] = {}
    for raw_key, value in overrides.items():
        key = key_aliases.get(str(raw_key), str(raw_key))
        if key not in field_names:
            close = difflib.get_close_matches(str(raw_key), [*field_names, *key_aliases], n=3, cutoff=0.5)
            hint = f" Did you mean: {', '.join(close)}?" if close else ""
            raise error(f"unknown {kind} field {raw_key!r} in overrides for {owner}.{hint} "
                        f"Fields: {', '.join(field_names)}")
        changes[key] = convert(key, value, f"{kind} override {raw_key}")
    return changes


def replace_checked(obj: _T, changes: Mapping[str, Any], *, catch: type[Exception],
                    error: type[Exception], prefix: str = "") -> _T:
    """``dataclasses.replace(obj, **changes)``; a validation error ``catch`` comes back as ``error``."""
    try:
        return dataclasses.replace(obj, **changes)  # type: ignore[type-var]  # obj is a dataclass instance
    except catch as exc:
        raise error(f"{prefix}{exc}") from exc
