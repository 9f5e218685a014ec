"""Models by name, and edits of a model: the presets shipped as data (``PRESETS``, ``presets``), ``get_model`` (a
preset, an HF id, or a path to a ``config.json``) and ``with_overrides`` (fields replaced, HF key names accepted).

Preset configs are shipped as data, ``pytest_roofline/model/data/model_presets.json``: the HF ``config.json`` facts
(keys and values as on the Hub), not counts; presets go through :func:`~pytest_roofline.model.hf_config.from_hf_config`
like any local file. Adding a model is adding an entry there.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pytest_roofline.errors import ModelArchError, ModelOverrideError, UnitError, UnknownModelError
from pytest_roofline.model import catalog, hf_hub
from pytest_roofline.model.hf_config import from_hf_config
from pytest_roofline.model.model_arch import _BOOL_FIELDS, _INT_FIELDS, LAYER_TYPES, ModelArch
from pytest_roofline.units import to_int, to_si

__all__ = ["PRESETS", "PRESETS_FILE", "presets", "get_model", "with_overrides"]


#: the package data file the presets are read from (pytest_roofline/model/data/)
PRESETS_FILE = "model_presets.json"


def _load_presets() -> dict[str, dict[str, Any]]:
    """HF config.json facts per preset (the keys the counts need, plus facts other modules read:
    max_position_embeddings for vLLM's default max_model_len, torch_dtype); ``like`` entries resolved."""
    raw = catalog.load_data(PRESETS_FILE).get("presets")
    if not isinstance(raw, dict) or not raw:
        raise ModelArchError(f"{PRESETS_FILE}: expected a non-empty object under 'presets'")
    out: dict[str, dict[str, Any]] = {}
    for pid, entry in raw.items():
        where = f"{PRESETS_FILE} preset {pid!r}"
        if not isinstance(entry, dict) or set(entry) - {"source", "aliases", "like", "config"}:
            raise ModelArchError(f"{where}: expected source, aliases, config (and optionally like)")
        if not (isinstance(entry.get("source"), str) and entry["source"]):
            raise ModelArchError(f"{where}: every preset needs the source of its config facts")
        config = entry.get("config")
        if not isinstance(config, dict) or not isinstance(entry.get("aliases", []), list):
            raise ModelArchError(f"{where}: config must be an object and aliases a list")
        if "like" in entry:
            if entry["like"] not in out:
                raise ModelArchError(f"{where}: like {entry['like']!r} must name a preset given before it")
            config = {**out[entry["like"]]["config"], **config}
        out[pid] = {"source": entry["source"], "aliases": tuple(entry.get("aliases", ())), "config": config}
    return out


PRESETS: Mapping[str, dict[str, Any]] = MappingProxyType(_load_presets())


def _norm(name: str) -> str:
    return str(name).strip().lower()


_PRESET_INDEX = catalog.NameIndex(((pid, entry["aliases"]) for pid, entry in PRESETS.items()), _norm)


def presets() -> list[str]:
    """Preset model ids."""
    return list(PRESETS)


@cache
def _preset(preset_id: str) -> ModelArch:
    entry = PRESETS[preset_id]
    arch = from_hf_config(entry["config"], name=preset_id)
    return dataclasses.replace(arch, source=f"preset {preset_id}: {entry['source']}")


def get_model(name_or_path: str | Path | ModelArch) -> ModelArch:
    """A preset (case-insensitive; HF ids like ``Qwen/Qwen3-8B`` work), a path, or any Hub model id.

    A path may be a ``config.json`` file or a model directory containing one; an existing path wins over a preset
    of the same spelling. A Hub id that is not a preset (``Qwen/Qwen2.5-14B-Instruct``) is read from the local
    Hugging Face cache, else the Hub (:mod:`~pytest_roofline.model.hf_hub`: config files only). Anything else
    raises :class:`UnknownModelError`.
    """
    if isinstance(name_or_path, ModelArch):
        return name_or_path
    text = str(name_or_path)
    path = Path(text).expanduser()
    try:
        exists = path.exists()
    except OSError:
        exists = False
    if exists:
        return from_hf_config(path)
    preset_id = _PRESET_INDEX.get(text)
    if preset_id is not None:
        return _preset(preset_id)
    if text.endswith(".json") or text.startswith((".", "/", "~")):
        raise UnknownModelError(f"no config.json at {text!r} (and it is not a preset: {', '.join(PRESETS)})")
    if hf_hub.is_hub_id(text):
        data, where = hf_hub.read_config(text)
        return dataclasses.replace(from_hf_config(data, name=text, origin=f"{text} ({where})"),
                                   source=f"Hugging Face {text}: {where}")
    hits = [hit for hit in _PRESET_INDEX.suggest(text) if _same_size(text, hit)]
    msg = f"unknown model {text!r}."
    if hits:
        msg += f" Did you mean: {', '.join(hits)}?"
    msg += (f" Give a Hub id (owner/name), a path to a config.json or a model directory, or a preset: "
            f"{', '.join(PRESETS)}.")
    raise UnknownModelError(msg)


_SIZE = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)\s*([bm])(?![a-z])", re.I)


def _same_size(asked: str, preset: str) -> bool:
    """Whether a suggestion is not a model of another size: ``qwen2.5-14b`` never suggests ``qwen2.5-7b`` (a
    name without a size, on either side, is no evidence either way)."""
    a = {(float(n), u.lower()) for n, u in _SIZE.findall(asked)}
    b = {(float(n), u.lower()) for n, u in _SIZE.findall(preset)}
    return not a or not b or bool(a & b)


# --------------------------------------------------------------------------- overrides

_FIELD_NAMES = tuple(f.name for f in dataclasses.fields(ModelArch) if f.name != "source")
_HF_FIELD_ALIASES = {
    "num_hidden_layers": "num_layers",
    "num_key_value_heads": "num_kv_heads",
    "num_local_experts": "num_experts",
}


def _int(value: Any, where: str) -> int:
    try:
        return to_int(value)
    except UnitError as exc:
        raise ModelOverrideError(f"{where}: {exc}") from None


def _bool(value: Any, where: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "yes", "no"):
        return value.strip().lower() in ("true", "yes")
    raise ModelOverrideError(f"{where}: expected true or false, got {value!r}")


def _convert(key: str, value: Any, where: str) -> Any:
    if key in _INT_FIELDS:
        return _int(value, where)
    if key in _BOOL_FIELDS:
        return _bool(value, where)
    if key == "mlp_only_layers":
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
            raise ModelOverrideError(f"{where}: expected a list of layer indices")
        return tuple(_int(v, where) for v in value)
    if key == "nominal_params":
        if not isinstance(value, str):
            return value  # None or a number; ModelArch checks it
        try:
            return to_si(value, "count")
        except UnitError:
            raise ModelOverrideError(f"{where}: cannot read {value!r} as a number") from None
    if key == "max_position_embeddings":
        return None if value is None else _int(value, where)
    if key == "layer_types":
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
            raise ModelOverrideError(f"{where}: expected a list of {' / '.join(LAYER_TYPES)} per layer")
        return tuple(str(v) for v in value)
    if key == "sliding_window":
        return None if value is None else _int(value, where)
    if key == "quantization_config":
        if value is not None and not isinstance(value, Mapping):
            raise ModelOverrideError(f"{where}: expected a mapping (config.json's quantization_config)")
        return None if value is None else MappingProxyType(dict(value))
    # name, model_type, torch_dtype
    if value is not None and not isinstance(value, str):
        raise ModelOverrideError(f"{where}: expected text, got {value!r}")
    return value


def with_overrides(arch: ModelArch | str, overrides: Mapping[str, Any] | None) -> ModelArch:
    """A copy of ``arch`` with fields replaced (HF key names like ``num_hidden_layers`` accepted).

    Counts are recomputed from the new shape. Note ``head_dim`` is a field of its own: overriding
    ``hidden_size`` or ``num_attention_heads`` does not change it. The overridden fields are
    recorded in ``source``. Unknown fields raise :class:`ModelOverrideError` with a did-you-mean.
    """
    arch = get_model(arch) if isinstance(arch, str) else arch
    if not overrides:
        return arch
    changes = catalog.field_changes(overrides, kind="model", owner=arch.name, field_names=_FIELD_NAMES,
                                    convert=_convert, error=ModelOverrideError, key_aliases=_HF_FIELD_ALIASES)
    note = f"user override: {', '.join(str(k) for k in overrides)}"
    changes["source"] = f"{arch.source}; {note}" if arch.source else note
    return catalog.replace_checked(arch, changes, catch=ModelArchError, error=ModelOverrideError,
                                   prefix=f"overrides for {arch.name}: ")
