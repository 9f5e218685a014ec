"""The one dtype table: the names a user may write, bytes per weight and per KV element, and the peak a
weight dtype computes at.

A name is read case-insensitively with ``-`` as ``_`` (``"FP8-E4M3"`` is ``fp8_e4m3``) and resolves to one
canonical key (``bfloat16`` -> ``bf16``, ``fp8_e4m3`` -> ``fp8``, ``nvfp4`` -> ``fp4``).  The canonical keys
that carry ``tensor_peak`` are the keys of a chip's ``peak_flop_per_s`` in the hardware catalog.

Bytes: bf16/fp16 2, fp8/int8 1, int4/fp4 0.5, fp32 4 (the storage sizes of the formats).  ``auto`` is vLLM's
"the model's own dtype"; where nothing says otherwise it counts as bf16 (2 bytes, bf16 peak) -- the setup
resolves ``--dtype auto`` to the config's ``torch_dtype`` and ``kv_cache_dtype auto`` to that activation dtype
(model/setup.py).  KV-cache dtypes are those vLLM's ``--kv-cache-dtype`` takes (``auto``, ``fp8``,
``fp8_e4m3``, ``fp8_e5m2``; vLLM ``vllm/config/cache.py`` ``CacheDType``) plus the 16/32-bit model dtypes;
int4/int8 are weight formats only here.  Weight-only int4 dequantises to bf16 for the matmul, so it computes at
the bf16 peak; fp32 weights compute at the TF32 tensor peak.  A quantized checkpoint (bits, groups, scales,
full-width tensors) is a scheme in model/quantization.py, which reads its dtypes from this table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = ["DType", "DTYPES", "AUTO_DTYPE", "dtype_key", "lookup", "canonical", "names", "peak_dtypes",
           "weight_dtype", "compute_dtype"]


@dataclass(frozen=True)
class DType:
    """One canonical dtype. ``None`` bytes: not usable in that role (tf32 is a compute mode, not storage)."""

    key: str
    aliases: tuple[str, ...]
    weight_bytes: float | None  # bytes per stored parameter
    kv_bytes: int | None  # bytes per KV-cache element
    compute: str  # the tensor-core peak (a key of peak_flop_per_s) weights of this dtype compute at
    tensor_peak: bool  # the hardware catalog may list a peak for it


#: what ``auto`` resolves to for the weights (the model dtype of every preset)
AUTO_DTYPE = "bf16"

_ROWS = (
    #     key     aliases                                                             weight kv    compute peak
    DType("bf16", ("bfloat16",), 2, 2, "bf16", True),
    DType("fp16", ("float16", "half"), 2, 2, "fp16", True),
    DType("fp8", ("fp8_e4m3", "fp8_e5m2", "float8", "float8_e4m3fn", "float8_e5m2", "e4m3", "e5m2"),
          1, 1, "fp8", True),
    DType("tf32", (), None, None, "tf32", True),
    DType("int8", (), 1, None, "int8", True),
    DType("fp4", ("nvfp4",), 0.5, None, "fp4", True),
    DType("fp32", ("float32", "float"), 4, 4, "tf32", True),
    DType("int4", (), 0.5, None, "bf16", False),
    DType("auto", (), 2, 2, AUTO_DTYPE, False),
)

DTYPES: Mapping[str, DType] = MappingProxyType({row.key: row for row in _ROWS})
_BY_NAME: Mapping[str, DType] = MappingProxyType({name: row for row in _ROWS for name in (row.key, *row.aliases)})


def dtype_key(name: str) -> str:
    """How a written name is read: stripped, lower case, ``-`` as ``_``."""
    return str(name).strip().lower().replace("-", "_")


def lookup(name: str) -> DType | None:
    """The row a name (canonical or alias) stands for, or None."""
    return _BY_NAME.get(dtype_key(name))


def canonical(name: str) -> str:
    """The canonical key of a known name; an unknown name comes back as read (:func:`dtype_key`)."""
    row = lookup(name)
    return row.key if row is not None else dtype_key(name)


def names(role: str) -> tuple[str, ...]:
    """Every name (canonical and alias) usable as ``role``: ``"weight"`` or ``"kv"``, in table order."""
    attr = {"weight": "weight_bytes", "kv": "kv_bytes"}[role]
    return tuple(n for n, row in _BY_NAME.items() if getattr(row, attr) is not None)


def peak_dtypes() -> tuple[str, ...]:
    """The canonical keys a chip's ``peak_flop_per_s`` may hold."""
    return tuple(row.key for row in _ROWS if row.tensor_peak)


def weight_dtype(name: str) -> str | None:
    """The canonical weight dtype a name resolves to (``auto`` -> bf16), or None when it is not one."""
    row = lookup(name)
    if row is None or row.weight_bytes is None:
        return None
    return AUTO_DTYPE if row.key == "auto" else row.key


def compute_dtype(name: str) -> str:
    """The tensor-core peak weights of dtype ``name`` compute at; bf16 for a name the table does not know."""
    row = lookup(name)
    return row.compute if row is not None else AUTO_DTYPE
