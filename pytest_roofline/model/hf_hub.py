"""A model named by its Hugging Face Hub id (``Qwen/Qwen2.5-14B-Instruct``): its ``config.json``, read from the
local Hugging Face cache first, then from the Hub when online, through ``huggingface_hub``.

Only config files are ever fetched: ``config.json`` and, where a checkpoint keeps its quantization settings beside
it rather than inside it, ``quantize_config.json`` (AutoGPTQ) or ``quant_config.json`` (AutoAWQ) — never weights.
The cache is the one ``huggingface_hub`` and vLLM share (``HF_HUB_CACHE``, else ``HF_HOME``/hub, else
``~/.cache/huggingface/hub``), read at call time so a test can lay one out. ``HF_HUB_OFFLINE`` keeps the lookup
to the cache; ``HF_TOKEN`` opens a gated model; ``HF_ENDPOINT`` (a mirror) and ``HF_HUB_ETAG_TIMEOUT`` are read at
call time too. Before a download the Hub is asked once (one HEAD, no retries, :data:`TIMEOUT_S`), so a network
failure is told as one in seconds — not, after huggingface_hub's 24 s of retries, as a missing file. Every failure
is one :class:`UnknownModelError` line that says what to do.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pytest_roofline.errors import ModelConfigError, UnknownModelError

__all__ = ["HUB_ID", "TIMEOUT_S", "is_hub_id", "cache_dir", "endpoint", "offline", "read_config", "timeout_s"]

#: ``owner/name`` as the Hub spells a model repository (letters, digits, ``-``, ``_``, ``.``)
HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95}")
#: a checkpoint's quantization settings kept beside config.json, and the method each file belongs to
_QUANT_FILES = (("quantize_config.json", "gptq"), ("quant_config.json", "awq"))
_TRUE = ("1", "true", "yes", "on")
_HUB = "https://huggingface.co"
#: seconds to wait for one answer from the Hub (HF_HUB_ETAG_TIMEOUT overrides): a config.json's HEAD answers in
#: well under a second where there is a network, and where there is none the user hears so in seconds
TIMEOUT_S = 5.0
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


def endpoint() -> str:
    """The Hub's address: ``HF_ENDPOINT`` (a mirror, or a test's server) read now, else https://huggingface.co."""
    return (os.environ.get("HF_ENDPOINT") or _HUB).rstrip("/")


def timeout_s() -> float:
    """Seconds to wait for the Hub's answer to one request: ``HF_HUB_ETAG_TIMEOUT`` when set (huggingface_hub's
    own knob, read now), else :data:`TIMEOUT_S`."""
    try:
        value = float(os.environ.get("HF_HUB_ETAG_TIMEOUT", ""))
    except ValueError:
        return TIMEOUT_S
    return value if math.isfinite(value) and value > 0 else TIMEOUT_S


def _host() -> str:
    return urlsplit(endpoint()).netloc or endpoint()


def _reason(exc: BaseException) -> str:
    """The innermost cause of a failed request, in a few words (``ConnectError: [Errno 111] Connection refused``)."""
    seen: set[int] = set()
    while (exc.__cause__ or exc.__context__) is not None and id(exc) not in seen:
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    text = " ".join(str(exc).split())[:160]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _unreachable(repo_id: str, exc: BaseException) -> UnknownModelError:
    """The one line for a Hub that did not answer: the network, not the model, and the ways on without it."""
    from pytest_roofline.model import catalog  # the presets' own file: model.presets imports this module

    presets = catalog.load_data("model_presets.json").get("presets") or {}
    reason = _reason(exc)
    if "timeout" in reason.lower():
        reason += f"; waited {timeout_s():g} s, HF_HUB_ETAG_TIMEOUT=SECONDS waits longer"
    return UnknownModelError(
        f"model {repo_id!r} is not in the local Hugging Face cache ({cache_dir()}) and the Hub could not be "
        f"reached: could not reach {_host()} ({reason}; a network or DNS failure, not a missing model). "
        f"Without a network: set HF_HUB_OFFLINE=1 and use a model in that cache (`hf download {repo_id} "
        f"config.json` where there is a network fills it), name a preset instead ({', '.join(presets)}), give a "
        f"path to a local config.json, {_BY_NUMBERS}")


def _probe(repo_id: str, filename: str, token: str | None) -> None:
    """One HEAD of ``filename`` on the Hub, no retries, within :func:`timeout_s`: raises what the Hub answered
    (a 404, a gated repository) or why it could not be asked. ``hf_hub_download`` alone would retry a network
    failure five times with back-off (about 24 s) before it said anything, and then say the file is missing."""
    import huggingface_hub

    url = huggingface_hub.hf_hub_url(repo_id, filename, endpoint=endpoint())
    huggingface_hub.get_hf_file_metadata(url, token=token, timeout=timeout_s())


def _download(repo_id: str, filename: str, *, required: bool) -> Path | None:
    """``filename`` of ``repo_id`` from the Hub into the cache (None: the repository has no such file)."""
    import huggingface_hub
    from huggingface_hub import errors

    token = os.environ.get("HF_TOKEN") or None
    try:
        _probe(repo_id, filename, token)  # a network failure, in a few seconds, before the download's retries
        return Path(huggingface_hub.hf_hub_download(repo_id, filename, cache_dir=cache_dir(), token=token,
                                                    endpoint=endpoint(), etag_timeout=timeout_s()))
    except errors.GatedRepoError:
        raise UnknownModelError(
            f"model {repo_id!r} is gated on the Hugging Face Hub: set HF_TOKEN to a token of an account that has "
            f"accepted its licence, or put its config.json in the local cache, {_BY_NUMBERS}") from None
    except errors.RepositoryNotFoundError:
        raise UnknownModelError(
            f"model {repo_id!r} is not on the Hugging Face Hub (or it is private: set HF_TOKEN); check the id, "
            f"give a path to its config.json, {_BY_NUMBERS}") from None
    except errors.LocalEntryNotFoundError as exc:  # an EntryNotFoundError too: the Hub was not reached, and the
        if not required:                            # cache does not hold the file. Not a missing file
            return None
        raise _unreachable(repo_id, exc) from None
    except errors.EntryNotFoundError:  # the Hub answered: the repository has no such file
        if required:
            raise UnknownModelError(f"model {repo_id!r} has no {filename} on the Hugging Face Hub; give a path to a "
                                    f"config.json, {_BY_NUMBERS}") from None
        return None
    except errors.HfHubHTTPError as exc:  # the Hub answered with another error (5xx, 429, a proxy's page)
        if not required:
            return None
        status = getattr(getattr(exc, "response", None), "status_code", None)
        raise UnknownModelError(
            f"model {repo_id!r} is not in the local Hugging Face cache ({cache_dir()}) and the Hub at {_host()} "
            f"answered {f'HTTP {status}' if status else 'with an error'} ({_reason(exc)}); try again later, set "
            f"HF_HUB_OFFLINE=1 and use a cached model, give a path to a local config.json, {_BY_NUMBERS}") from None
    except Exception as exc:  # no network, DNS, a proxy, a timeout: huggingface_hub raises several kinds
        if not required:
            return None
        raise _unreachable(repo_id, exc) from None


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
