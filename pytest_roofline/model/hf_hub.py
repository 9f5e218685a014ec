"""A model named by its Hugging Face Hub id (``Qwen/Qwen2.5-14B-Instruct``): its ``config.json``, read from the
local Hugging Face cache first, then from the Hub when online, through ``huggingface_hub``.

Only config files are ever fetched: ``config.json`` and, where a checkpoint keeps its quantization settings beside
it rather than inside it, ``quantize_config.json`` (AutoGPTQ) or ``quant_config.json`` (AutoAWQ) — never weights.
The cache is the one ``huggingface_hub`` and vLLM share (``HF_HUB_CACHE``, else ``HF_HOME``/hub, else
``~/.cache/huggingface/hub``), read at call time so a test can lay one out. ``HF_HUB_OFFLINE`` keeps the lookup
to the cache; ``HF_TOKEN`` opens a gated model. Every failure is one :class:`UnknownModelError` line that says
what to do.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_roofline.errors import ModelConfigError, UnknownModelError

__all__ = ["HUB_ID", "is_hub_id", "cache_dir", "offline", "read_config"]

#: ``owner/name`` as the Hub spells a model repository (letters, digits, ``-``, ``_``, ``.``)
HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95}")
#: a checkpoint's quantization settings kept beside config.json, and the method each file belongs to
_QUANT_FILES = (("quantize_config.json", "gptq"), ("quant_config.json", "awq"))
_TRUE = ("1", "true", "yes", "on")
#: what the user can write instead, in every error
_BY_NUMBERS = ("or describe the model by its numbers: model: {name: NAME, params: P, num_layers: L, num_kv_heads: K, "
               "head_dim: D}")


def is_hub_id(text: str) -> bool:
    """Whether ``text`` is spelled like a Hub model id (``owner/name``), not a path."""
    return bool(HUB_ID.fullmatch(text)) and not text.endswith(".json") and ".." not in text


def cache_dir() -> Path:
    """The Hugging Face hub cache, as ``huggingface_hub`` finds it from the environment now."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "huggingface" / "hub"


def offline() -> bool:
    """``HF_HUB_OFFLINE`` (or ``TRANSFORMERS_OFFLINE``) is set: the cache alone is read."""
    return any(os.environ.get(v, "").strip().lower() in _TRUE for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def _cached(repo_id: str, filename: str) -> Path | None:
    from huggingface_hub import try_to_load_from_cache

    hit = try_to_load_from_cache(repo_id, filename, cache_dir=cache_dir())
    return Path(hit) if isinstance(hit, str) else None


def _download(repo_id: str, filename: str, *, required: bool) -> Path | None:
    """``filename`` of ``repo_id`` from the Hub into the cache (None: the repository has no such file)."""
    from huggingface_hub import errors, hf_hub_download

    token = os.environ.get("HF_TOKEN") or None
    try:
        return Path(hf_hub_download(repo_id, filename, cache_dir=cache_dir(), token=token))
    except errors.GatedRepoError:
        raise UnknownModelError(
            f"model {repo_id!r} is gated on the Hugging Face Hub: set HF_TOKEN to a token of an account that has "
            f"accepted its licence, or put its config.json in the local cache, {_BY_NUMBERS}") from None
    except errors.RepositoryNotFoundError:
        raise UnknownModelError(
            f"model {repo_id!r} is not on the Hugging Face Hub (or it is private: set HF_TOKEN); check the id, "
            f"give a path to its config.json, {_BY_NUMBERS}") from None
    except errors.EntryNotFoundError:
        if required:
            raise UnknownModelError(f"model {repo_id!r} has no {filename} on the Hugging Face Hub; give a path to a "
                                    f"config.json, {_BY_NUMBERS}") from None
        return None
    except Exception as exc:  # no network, a proxy, a timeout: huggingface_hub raises several kinds
        if not required:
            return None
        raise UnknownModelError(
            f"model {repo_id!r} is not in the local Hugging Face cache ({cache_dir()}) and the Hub could not be "
            f"reached ({type(exc).__name__}); run `hf download {repo_id} config.json` where there is a network, "
            f"give a path to its config.json, {_BY_NUMBERS}") from None


def _read_json(path: Path, repo_id: str) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelConfigError(f"{repo_id}: cannot read {path}: {exc}") from None
    if not isinstance(data, dict):
        raise ModelConfigError(f"{repo_id}: {path} is not a JSON object")
    return data


def read_config(repo_id: str) -> tuple[dict[str, Any], Path]:
    """``repo_id``'s config.json as a mapping (its quantization settings merged in as ``quantization_config``
    when the checkpoint keeps them in a file of their own), and the path it was read from."""
    path = _cached(repo_id, "config.json")
    from_cache = path is not None
    if path is None:
        if offline():
            raise UnknownModelError(
                f"model {repo_id!r} is not in the local Hugging Face cache ({cache_dir()}) and HF_HUB_OFFLINE is "
                f"set; run `hf download {repo_id} config.json` where there is a network (unset HF_HUB_OFFLINE to "
                f"fetch it now), {_BY_NUMBERS}")
        path = _download(repo_id, "config.json", required=True)
        assert path is not None
    data = _read_json(path, repo_id)
    if not isinstance(data.get("quantization_config"), Mapping):
        for filename, method in _QUANT_FILES:
            # a config read from the cache keeps to the cache: a cached checkpoint holds its quantization file too
            qpath = _cached(repo_id, filename) or (None if from_cache else _download(repo_id, filename,
                                                                                     required=False))
            if qpath is not None:
                data["quantization_config"] = {"quant_method": method, **_read_json(qpath, repo_id)}
                break
    data.setdefault("_name_or_path", repo_id)
    return data, path
