"""Which model a server serves: the one selection rule :class:`Engine` and :class:`Endpoint` share."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ServedModel", "model_ids", "pick_served_model", "served_entries"]


@dataclass(frozen=True)
class ServedModel:
    """One entry of ``GET /v1/models``: its id, and its ``max_model_len`` when the server gives an int."""

    name: str | None
    max_model_len: int | None


def served_entries(payload: Any) -> list[dict[str, Any]]:
    """The ``data`` list of a ``GET /v1/models`` answer (OpenAI's shape: ``{"object": "list", "data": [{"id": ...},
    ...]}``), each entry an object with a string ``id``; ValueError saying what the answer held instead (a bare
    list, a list of strings, entries without an id)."""
    if not isinstance(payload, dict):
        raise ValueError(f"/v1/models answered a JSON {_kind(payload)}, not an object with a \"data\" list")
    data = payload.get("data")
    if data is None:
        return []
    if not isinstance(data, list):
        raise ValueError(f"/v1/models \"data\" is a {_kind(data)}, not a list of models")
    for i, entry in enumerate(data):
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            raise ValueError(f"/v1/models \"data\"[{i}] is {_kind(entry)}, not a model object with a string \"id\"")
    return data


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "an object without a string id" if "id" in value else "an object"
    return {list: "list", str: "string", int: "number", float: "number", bool: "true/false"}.get(
        type(value), type(value).__name__) if value is not None else "null"


def model_ids(data: list[dict[str, Any]]) -> list[Any]:
    """The ids of the ``data`` list of a ``/v1/models`` answer, in order."""
    return [d.get("id") for d in data]


def pick_served_model(data: list[dict[str, Any]], want: str | None) -> ServedModel | None:
    """The model to send requests to: the entry whose id is ``want``, else (no ``want``) the first one.

    ``data`` is the non-empty ``data`` list of a ``/v1/models`` answer; None when ``want`` is not served.
    """
    entry = next((d for d in data if d.get("id") == want), None) if want else data[0]
    if entry is None:
        return None
    mml = entry.get("max_model_len")
    return ServedModel(name=entry.get("id"), max_model_len=mml if isinstance(mml, int) else None)
