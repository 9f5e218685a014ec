"""Model architecture, the front door: a model's shape and its counts, read from an HF ``config.json`` or named
by a preset. Three modules, one concept each, re-exported here so callers import from one place:

* model/model_arch.py: ``ModelArch`` (parameter counts, KV bytes: shape -> counts), ``nominal``, the dtype byte
  widths (``kv_dtype_bytes``, ``weight_dtype_bytes``) and the layer kinds;
* model/hf_config.py: ``from_hf_config``, a ``config.json`` read through one row per ``model_type`` family
  (``FAMILIES``, ``SUPPORTED_MODEL_TYPES``);
* model/presets.py: ``PRESETS`` (model/data/model_presets.json), ``presets``, ``get_model`` (a preset, an HF id or
  a path) and ``with_overrides``.
"""

from __future__ import annotations

from pytest_roofline.errors import ModelArchError as ModelArchError
from pytest_roofline.errors import ModelConfigError as ModelConfigError
from pytest_roofline.errors import ModelOverrideError as ModelOverrideError
from pytest_roofline.errors import UnknownModelError as UnknownModelError
from pytest_roofline.errors import UnsupportedModelError as UnsupportedModelError
from pytest_roofline.model import catalog as catalog
from pytest_roofline.model.hf_config import _ARCHITECTURE_TO_TYPE as _ARCHITECTURE_TO_TYPE
from pytest_roofline.model.hf_config import SUPPORTED_MODEL_TYPES as SUPPORTED_MODEL_TYPES
from pytest_roofline.model.hf_config import from_hf_config as from_hf_config
from pytest_roofline.model.model_arch import FULL_ATTENTION as FULL_ATTENTION
from pytest_roofline.model.model_arch import LAYER_TYPES as LAYER_TYPES
from pytest_roofline.model.model_arch import SLIDING_ATTENTION as SLIDING_ATTENTION
from pytest_roofline.model.model_arch import ModelArch as ModelArch
from pytest_roofline.model.model_arch import kv_dtype_bytes as kv_dtype_bytes
from pytest_roofline.model.model_arch import nominal as nominal
from pytest_roofline.model.model_arch import weight_dtype_bytes as weight_dtype_bytes
from pytest_roofline.model.presets import PRESETS as PRESETS
from pytest_roofline.model.presets import PRESETS_FILE as PRESETS_FILE
from pytest_roofline.model.presets import _load_presets as _load_presets
from pytest_roofline.model.presets import get_model as get_model
from pytest_roofline.model.presets import presets as presets
from pytest_roofline.model.presets import with_overrides as with_overrides

__all__ = [
    "ModelArch",
    "ModelArchError",
    "ModelConfigError",
    "UnsupportedModelError",
    "UnknownModelError",
    "ModelOverrideError",
    "SUPPORTED_MODEL_TYPES",
    "PRESETS",
    "kv_dtype_bytes",
    "weight_dtype_bytes",
    "from_hf_config",
    "nominal",
    "get_model",
    "presets",
    "with_overrides",
]
