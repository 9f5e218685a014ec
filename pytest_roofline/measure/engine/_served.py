"""Which model a server serves: the one selection rule :class:`Engine` and :class:`Endpoint` share."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ServedModel", "model_ids", "pick_served_model"]


@dataclass(frozen=True)
class ServedModel:
    """One entry of ``GET /v1/models``: its id, and its ``max_model_len`` when the server gives an int."""

    name: str | None
    max_model_len: int | None


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
