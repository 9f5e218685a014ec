"""Hardware catalog: every accelerator variant the analytical model can name, with sources.

Units are SI base units and live in the names: ``memory_bytes`` (bytes), ``hbm_bytes_per_s``
(bytes/s, vendor datasheet, decimal: 2,039 GB/s = 2.039e12), ``peak_flop_per_s`` (FLOP/s, dense
tensor-core peaks; the ``int8`` entry is OP/s). GB = 1e9 bytes, GiB = 2**30 bytes.

``memory_bytes`` is what the driver reports (``nvidia-smi --query-gpu=memory.total`` MiB x 2**20,
or ``rocm-smi --showmeminfo vram`` bytes), not the datasheet's rounded figure: the A100's "80 GB"
is 81,920 MiB = 80 GiB of HBM2e, the H100 SXM's "80 GB" is 81,559 MiB, the H200's "141 GB" is
143,771 MiB. The datasheet rounding is kept in ``memory_marketing``.

Peaks are DENSE tensor-core figures. NVIDIA's datasheets print Hopper/Ada/Blackwell peaks "with
sparsity"; the catalog stores half of those. Where the model_anchors.md §4 table rounds a figure
(H100 SXM bf16 989 TFLOP/s, from 1,979 sparse) the catalog keeps the anchor's rounding so ridge
points agree across the project.

Every figure has a ``sources`` entry keyed by field name (per-dtype peaks as
``"peak_flop_per_s.bf16"``). A source that starts with ``[unverified]`` could not be checked
against a retrieved primary or secondary source; :meth:`HardwareSpec.unverified_fields` lists them.

The ``cpu`` entry is a pseudo-device for the vLLM CPU engine: it has no roofline figures.
Its ``memory_bytes``, ``hbm_bytes_per_s`` and ``interconnect_bytes_per_s`` are ``None`` and
``peak_flop_per_s`` is empty, so arithmetic on it fails loudly instead of silently producing
nonsense; :meth:`HardwareSpec.peak_for` / :meth:`HardwareSpec.ridge_flop_per_byte` raise a
:class:`HardwareError` saying so. A prediction file can still name it (``hardware: cpu``) and may
give its own figures through :func:`with_overrides`.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping
from pytest_roofline.errors import HardwareError, UnknownHardwareError, AmbiguousHardwareError, HardwareMismatchError, HardwareOverrideError

__all__ = [
    "HardwareSpec",
    "HardwareError",
    "UnknownHardwareError",
    "AmbiguousHardwareError",
    "HardwareMismatchError",
    "HardwareOverrideError",
    "CATALOG",
    "UNVERIFIED",
    "USER_OVERRIDE",
    "families",
    "get_hardware",
    "resolve",
    "with_overrides",
    "normalize_dtype",
]

MIB = 2**20
GIB = 2**30

UNVERIFIED = "[unverified]"
USER_OVERRIDE = "user override"


# --------------------------------------------------------------------------- errors


# --------------------------------------------------------------------------- dtypes

_DTYPE_ALIASES = {
    "bf16": "bf16",
    "bfloat16": "bf16",
    "fp16": "fp16",
    "float16": "fp16",
    "half": "fp16",
    "fp8": "fp8",
    "fp8_e4m3": "fp8",
    "fp8_e5m2": "fp8",
    "float8": "fp8",
    "float8_e4m3fn": "fp8",
    "float8_e5m2": "fp8",
    "e4m3": "fp8",
    "e5m2": "fp8",
    "tf32": "tf32",
    "int8": "int8",
    "fp4": "fp4",
    "nvfp4": "fp4",
    "fp32": "fp32",
    "float32": "fp32",
}


def normalize_dtype(dtype: str) -> str:
    """Canonical dtype key used in ``peak_flop_per_s`` ("bfloat16" -> "bf16", "fp8_e4m3" -> "fp8")."""
    key = str(dtype).strip().lower().replace("-", "_")
    return _DTYPE_ALIASES.get(key, key)


# --------------------------------------------------------------------------- spec


class FrozenMap(Mapping):
    """A read-only mapping that, unlike ``MappingProxyType``, pickles and deep-copies."""

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, Any] | None = None) -> None:
        object.__setattr__(self, "_data", dict(data or {}))

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self):
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("FrozenMap is read-only")

    def __reduce__(self):
        return (FrozenMap, (self._data,))

    def __hash__(self) -> int:
        return hash(frozenset(self._data.items()))

    def __repr__(self) -> str:
        return f"FrozenMap({self._data!r})"


def _freeze(mapping: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return FrozenMap(mapping)


@dataclass(frozen=True)
class HardwareSpec:
    """One accelerator variant. See the module docstring for units and conventions."""

    id: str
    family: str
    name: str
    vendor: str
    memory_bytes: int | None
    memory_marketing: str
    hbm_bytes_per_s: float | None
    peak_flop_per_s: Mapping[str, float] = field(hash=False)
    interconnect: str | None
    interconnect_bytes_per_s: float | None
    sources: Mapping[str, str] = field(hash=False, compare=False)
    aliases: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        peaks = {normalize_dtype(k): float(v) for k, v in dict(self.peak_flop_per_s).items()}
        for dtype, value in peaks.items():
            if not (math.isfinite(value) and value > 0):
                raise HardwareError(f"{self.id}: peak_flop_per_s[{dtype!r}] must be a positive number, got {value!r}")
        object.__setattr__(self, "peak_flop_per_s", _freeze(peaks))
        object.__setattr__(self, "sources", _freeze(self.sources))
        object.__setattr__(self, "aliases", tuple(self.aliases))
        if self.memory_bytes is not None:
            if isinstance(self.memory_bytes, float):
                if not self.memory_bytes.is_integer():
                    raise HardwareError(f"{self.id}: memory_bytes must be a whole number of bytes, got {self.memory_bytes!r}")
                object.__setattr__(self, "memory_bytes", int(self.memory_bytes))
            if self.memory_bytes <= 0:
                raise HardwareError(f"{self.id}: memory_bytes must be positive, got {self.memory_bytes!r}")
        for name in ("hbm_bytes_per_s", "interconnect_bytes_per_s"):
            value = getattr(self, name)
            if value is not None:
                value = float(value)
                if not (math.isfinite(value) and value > 0):
                    raise HardwareError(f"{self.id}: {name} must be a positive number or None, got {value!r}")
                object.__setattr__(self, name, value)

    # -- derived figures ---------------------------------------------------------------

    @property
    def is_pseudo_device(self) -> bool:
        """True for the ``cpu`` entry, which carries no roofline figures of its own."""
        return self.family == "cpu"

    @property
    def memory_gib(self) -> float | None:
        return None if self.memory_bytes is None else self.memory_bytes / GIB

    @property
    def dtypes(self) -> tuple[str, ...]:
        """The dtypes this chip has a tensor peak for, in catalog order."""
        return tuple(self.peak_flop_per_s)

    def peak_for(self, dtype: str) -> float:
        """Dense tensor peak (FLOP/s) for ``dtype``; a clear error names the dtypes the chip has."""
        key = normalize_dtype(dtype)
        try:
            return self.peak_flop_per_s[key]
        except KeyError:
            pass
        if not self.peak_flop_per_s:
            raise HardwareError(
                f"{self.id} ({self.name}) has no tensor peaks in the catalog"
                + (" (it is a pseudo-device for the CPU engine)" if self.is_pseudo_device else "")
                + f"; give one in the prediction file, e.g. hardware_overrides: {{peak_flop_per_s: {{{key}: 1.0e12}}}}"
            )
        raise HardwareError(
            f"{self.id} ({self.name}) has no {key} tensor peak"
            + (f" (asked for {dtype!r})" if key != str(dtype) else "")
            + f"; it has: {', '.join(self.peak_flop_per_s)}"
        )

    def ridge_flop_per_byte(self, dtype: str = "bf16") -> float:
        """Roofline ridge point: peak FLOP/s for ``dtype`` divided by HBM bytes/s."""
        peak = self.peak_for(dtype)
        if self.hbm_bytes_per_s is None:
            raise HardwareError(
                f"{self.id} ({self.name}) has no memory bandwidth in the catalog"
                + (" (it is a pseudo-device for the CPU engine)" if self.is_pseudo_device else "")
                + "; give one in the prediction file, e.g. hardware_overrides: {hbm_bytes_per_s: 1.0e11}"
            )
        return peak / self.hbm_bytes_per_s

    def unverified_fields(self) -> tuple[str, ...]:
        """Source keys whose figure could not be verified against a retrieved source."""
        return tuple(k for k, v in self.sources.items() if v.startswith(UNVERIFIED))

    def as_dict(self) -> dict[str, Any]:
        """Plain-data view (for results files and reports)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["peak_flop_per_s"] = dict(self.peak_flop_per_s)
        out["sources"] = dict(self.sources)
        out["aliases"] = list(self.aliases)
        return out


# --------------------------------------------------------------------------- sources

_S_A100_DS = (
    "NVIDIA A100 datasheet (nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf): dense tensor "
    "TF32 156 / BF16 312 / FP16 312 TFLOPS, INT8 624 TOPS; tabulated at "
    "glennklockwood.com/garden/processors/A100 and upb-pc2.atlassian.net (A100 40GB spec page); "
    "model_anchors.md §4"
)
_S_A100_NO_FP8 = "Ampere has no FP8 tensor cores (A100 datasheet lists no FP8 row)"
_S_H100_DS = (
    "NVIDIA H100 datasheet table (archive-lib.hpctech.co.jp/gpuproduct/nvidia-h100.html; "
    "'specifications 1/2 lower without sparsity'); glennklockwood.com/garden/processors/h100; "
    "model_anchors.md §4 (aic h100_sxm.yaml / h100_pcie.yaml)"
)
_S_B200 = (
    "HGX B200 per-GPU spec table (NVIDIA GB200 NVL72 / HGX B200 page, reproduced at "
    "zdszero.github.io/Computer/Artificial_Intelligence/Hardware.html) and "
    "glennklockwood.com/garden/processors/B200 (HGX @1,000 W); datasheet figures are sparse, "
    "catalog stores half"
)
_S_L40S = (
    "NVIDIA L40S datasheet table (mullet.se product page; itcreations.com): 48 GB GDDR6, 864 GB/s, "
    "BF16 362.05 (733 sparse), FP8 733 (1,466 sparse), TF32 183 (366 sparse), "
    "PCIe Gen4 x16 64 GB/s bidirectional; model_anchors.md §4 (aic l40s.yaml)"
)
_S_L4 = (
    "NVIDIA L4 datasheet figures (grokipedia.com/page/NVIDIA_L4_vs_L40S; store.sourcecode.com L4 "
    "listing): 24 GB GDDR6, 300 GB/s, FP16 242 / FP8 485 / INT8 485 / TF32 120 with sparsity; "
    "catalog stores half; model_anchors.md §4 (aic l4.yaml)"
)
_S_4090 = (
    "Ada Lovelace whitepaper figures as tabulated at waredb.com/processor/nvidia-geforce-rtx-4090 and "
    "gigagpu.com (RTX 4090): 1,008 GB/s; dense BF16/FP16 with FP32 accumulate 165.2 TFLOPS "
    "(330.3 with FP16 accumulate), TF32 82.6, INT8 660.6 TOPS; model_anchors.md §4"
)
_S_MI300X = (
    "AMD Instinct MI300X datasheet figures (model_anchors.md §4 via GenZ system_configs.py; "
    "codesota.com/hardware/mi300x; jaredwatkins.com MI300 series: 192 GB HBM3, 5.3 TB/s, "
    "~1.3 PFLOPS FP16, ~2.6 PFLOPS FP8)"
)


def _smi(mib: int, sample: str) -> str:
    return f"nvidia-smi memory.total {mib} MiB x 2**20 (public nvidia-smi output: '{sample}')"


# --------------------------------------------------------------------------- catalog

_ENTRIES: list[HardwareSpec] = []


def _add(**kw: Any) -> None:
    _ENTRIES.append(HardwareSpec(**kw))


_A100_PEAKS = {"bf16": 312e12, "fp16": 312e12, "tf32": 156e12, "int8": 624e12}
_A100_PEAK_SOURCES = {
    "peak_flop_per_s.bf16": _S_A100_DS,
    "peak_flop_per_s.fp16": _S_A100_DS,
    "peak_flop_per_s.tf32": _S_A100_DS,
    "peak_flop_per_s.int8": _S_A100_DS,
    "peak_flop_per_s.fp8": _S_A100_NO_FP8,
}
_A100_PCIE_LINK = (
    "PCIe Gen4 x16: 2 x 31.5 GB/s (A100 launch coverage, fudzilla.com: 'PCI Express Gen 4, offering "
    "31.5 GB/sec'); an optional NVLink bridge joins 2 PCIe cards at 600 GB/s (xynio.com A100 page)"
)

_add(
    id="a100-pcie-40gb",
    family="a100",
    name="NVIDIA A100 40GB PCIe",
    vendor="NVIDIA",
    memory_bytes=40960 * MIB,
    memory_marketing="40 GB HBM2 (= 40 GiB)",
    hbm_bytes_per_s=1555e9,
    peak_flop_per_s=_A100_PEAKS,
    interconnect="PCIe Gen4 x16 (64 GB/s); NVLink bridge for 2 GPUs optional (600 GB/s)",
    interconnect_bytes_per_s=64e9,
    sources={
        "memory_bytes": _smi(40960, "NVIDIA A100-PCIE-40GB, 40960 MiB"),
        "hbm_bytes_per_s": "A100 40GB: 1,555 GB/s (upb-pc2.atlassian.net A100 40GB spec page; "
        "glennklockwood.com A100 40G); model_anchors.md §4 (llm-analysis a100-pcie-40gb.json)",
        **_A100_PEAK_SOURCES,
        "interconnect_bytes_per_s": _A100_PCIE_LINK,
    },
    aliases=("a100-40gb-pcie", "a100-pcie-40g", "NVIDIA A100-PCIE-40GB"),
)
_add(
    id="a100-sxm4-40gb",
    family="a100",
    name="NVIDIA A100 40GB SXM4",
    vendor="NVIDIA",
    memory_bytes=40960 * MIB,
    memory_marketing="40 GB HBM2 (= 40 GiB)",
    hbm_bytes_per_s=1555e9,
    peak_flop_per_s=_A100_PEAKS,
    interconnect="NVLink 3 (600 GB/s)",
    interconnect_bytes_per_s=600e9,
    sources={
        "memory_bytes": _smi(40960, "NVIDIA A100-SXM4-40GB, 40960 MiB")
        + "; some nodes report 40536 MiB (driver/ECC reservation), override memory_bytes if yours does",
        "hbm_bytes_per_s": "A100 40G SXM4: 1.555 TB/s (glennklockwood.com/garden/processors/A100); "
        "model_anchors.md §4 (llm-analysis a100-sxm-40gb.json; GenZ uses 1,600)",
        **_A100_PEAK_SOURCES,
        "interconnect_bytes_per_s": "NVLink 3: 300+300 GB/s (glennklockwood.com A100); 600 GB/s "
        "(fudzilla.com A100 launch: 12 links, 600GB/s total)",
    },
    aliases=("a100-sxm-40gb", "a100-40gb-sxm", "a100-sxm4-40g", "NVIDIA A100-SXM4-40GB"),
)
_add(
    id="a100-pcie-80gb",
    family="a100",
    name="NVIDIA A100 80GB PCIe",
    vendor="NVIDIA",
    memory_bytes=81920 * MIB,
    memory_marketing="80 GB HBM2e (= 80 GiB)",
    hbm_bytes_per_s=1935e9,
    peak_flop_per_s=_A100_PEAKS,
    interconnect="PCIe Gen4 x16 (64 GB/s); NVLink bridge for 2 GPUs optional (600 GB/s)",
    interconnect_bytes_per_s=64e9,
    sources={
        "memory_bytes": _smi(81920, "NVIDIA A100 80GB PCIe, 81920 MiB"),
        "hbm_bytes_per_s": "A100 80GB PCIe: 1,935 GB/s (A100 datasheet r4 via model_anchors.md §4: "
        "llm-analysis a100-pcie-80gb, aic a100_pcie.yaml); not re-retrieved this session",
        **_A100_PEAK_SOURCES,
        "interconnect_bytes_per_s": _A100_PCIE_LINK,
    },
    aliases=("a100-80gb-pcie", "a100-pcie-80g", "NVIDIA A100 80GB PCIe"),
)
_add(
    id="a100-sxm4-80gb",
    family="a100",
    name="NVIDIA A100 80GB SXM4",
    vendor="NVIDIA",
    memory_bytes=81920 * MIB,
    memory_marketing="80 GB HBM2e (= 80 GiB)",
    hbm_bytes_per_s=2039e9,
    peak_flop_per_s=_A100_PEAKS,
    interconnect="NVLink 3 (600 GB/s)",
    interconnect_bytes_per_s=600e9,
    sources={
        "memory_bytes": _smi(81920, "NVIDIA A100-SXM4-80GB, 81920 MiB"),
        "hbm_bytes_per_s": "A100 80G SXM4: 2,039 GB/s (glennklockwood.com/garden/processors/A100); "
        "model_anchors.md §4 (aic a100_sxm.yaml)",
        **_A100_PEAK_SOURCES,
        "interconnect_bytes_per_s": "NVLink 3: 600 GB/s (glennklockwood.com A100: 300+300 GB/s)",
    },
    aliases=("a100-sxm-80gb", "a100-80gb-sxm", "a100-sxm4-80g", "a100-sxm4", "NVIDIA A100-SXM4-80GB"),
)

_add(
    id="h100-sxm",
    family="h100",
    name="NVIDIA H100 SXM5 80GB",
    vendor="NVIDIA",
    memory_bytes=81559 * MIB,
    memory_marketing="80 GB HBM3",
    hbm_bytes_per_s=3350e9,
    peak_flop_per_s={"bf16": 989e12, "fp16": 989e12, "fp8": 1979e12, "tf32": 495e12, "int8": 1979e12},
    interconnect="NVLink 4 (900 GB/s)",
    interconnect_bytes_per_s=900e9,
    sources={
        "memory_bytes": _smi(81559, "NVIDIA H100 80GB HBM3 ... 81559MiB"),
        "hbm_bytes_per_s": "H100 SXM: 3,350 GB/s (" + _S_H100_DS + ")",
        "peak_flop_per_s.bf16": "1,979 TFLOPS sparse / 2, rounded to 989 as in model_anchors.md §4 "
        "(whitepaper dense 989.4); " + _S_H100_DS,
        "peak_flop_per_s.fp16": "as bf16; " + _S_H100_DS,
        "peak_flop_per_s.fp8": "3,958 TFLOPS sparse / 2 = 1,979; " + _S_H100_DS,
        "peak_flop_per_s.tf32": "989 TFLOPS sparse / 2 (model_anchors.md §4: 495); " + _S_H100_DS,
        "peak_flop_per_s.int8": "3,958 TOPS sparse / 2; " + _S_H100_DS,
        "interconnect_bytes_per_s": "NVLink 900 GB/s (" + _S_H100_DS + ")",
    },
    aliases=("h100-sxm5", "h100-sxm-80gb", "h100-80gb-hbm3", "NVIDIA H100 80GB HBM3"),
)
_add(
    id="h100-pcie",
    family="h100",
    name="NVIDIA H100 PCIe 80GB",
    vendor="NVIDIA",
    memory_bytes=81559 * MIB,
    memory_marketing="80 GB HBM2e",
    hbm_bytes_per_s=2000e9,
    peak_flop_per_s={"bf16": 756e12, "fp16": 756e12, "fp8": 1513e12, "tf32": 378e12, "int8": 1513e12},
    interconnect="PCIe Gen5 x16 (128 GB/s); NVLink bridge optional (600 GB/s)",
    interconnect_bytes_per_s=128e9,
    sources={
        "memory_bytes": _smi(81559, "NVIDIA H100 PCIe, 81559 MiB"),
        "hbm_bytes_per_s": "H100 PCIe: 2,000 GB/s (" + _S_H100_DS + ")",
        "peak_flop_per_s.bf16": "1,513 TFLOPS sparse / 2 = 756.5, rounded to 756 as in model_anchors.md §4; " + _S_H100_DS,
        "peak_flop_per_s.fp16": "as bf16; " + _S_H100_DS,
        "peak_flop_per_s.fp8": "3,026 TFLOPS sparse / 2; " + _S_H100_DS,
        "peak_flop_per_s.tf32": "756 TFLOPS sparse / 2; " + _S_H100_DS,
        "peak_flop_per_s.int8": "3,026 TOPS sparse / 2; " + _S_H100_DS,
        "interconnect_bytes_per_s": "PCIe Gen5 128 GB/s, NVLink bridge 600 GB/s (" + _S_H100_DS + ")",
    },
    aliases=("h100-pcie-80gb", "NVIDIA H100 PCIe"),
)
_add(
    id="h100-nvl",
    family="h100",
    name="NVIDIA H100 NVL 94GB",
    vendor="NVIDIA",
    memory_bytes=95830 * MIB,
    memory_marketing="94 GB HBM3",
    hbm_bytes_per_s=3900e9,
    peak_flop_per_s={"bf16": 835e12, "fp16": 835e12, "fp8": 1671e12, "tf32": 418e12, "int8": 1671e12},
    interconnect="NVLink 4 bridge (600 GB/s); PCIe Gen5 x16 (128 GB/s)",
    interconnect_bytes_per_s=600e9,
    sources={
        "memory_bytes": _smi(95830, "NVIDIA H100 NVL, 95830 MiB"),
        "hbm_bytes_per_s": "H100 NVL: 3,900 GB/s (model_anchors.md §4, NVIDIA H100 page; "
        "grokipedia.com/page/210100120 quotes 3.93 TB/s)",
        "peak_flop_per_s.bf16": "1,671 TFLOPS sparse / 2 (model_anchors.md §4, NVIDIA H100 page)",
        "peak_flop_per_s.fp16": "as bf16 (model_anchors.md §4)",
        "peak_flop_per_s.fp8": "3,341 TFLOPS sparse / 2 (model_anchors.md §4: 1,671)",
        "peak_flop_per_s.tf32": "835 TFLOPS sparse / 2 (model_anchors.md §4: 418)",
        "peak_flop_per_s.int8": UNVERIFIED + " 3,341 TOPS sparse / 2 (NVIDIA H100 page, from memory)",
        "interconnect_bytes_per_s": UNVERIFIED + " NVLink bridge 600 GB/s per NVIDIA H100 NVL page "
        "(from memory; not retrieved this session)",
    },
    aliases=("h100-nvl-94gb", "NVIDIA H100 NVL"),
)

_add(
    id="h200",
    family="h200",
    name="NVIDIA H200 SXM 141GB",
    vendor="NVIDIA",
    memory_bytes=143771 * MIB,
    memory_marketing="141 GB HBM3e",
    hbm_bytes_per_s=4800e9,
    peak_flop_per_s={"bf16": 989e12, "fp16": 989e12, "fp8": 1979e12, "tf32": 495e12, "int8": 1979e12},
    interconnect="NVLink 4 (900 GB/s)",
    interconnect_bytes_per_s=900e9,
    sources={
        "memory_bytes": _smi(143771, "NVIDIA H200, 143771 MiB"),
        "hbm_bytes_per_s": "H200 SXM: 4.8 TB/s (lzwjava.github.io H200 vs H100 table; ai-hpc.github.io "
        "8x-H200 page; MLPerf v4.1 H200-SXM-141GB system json); model_anchors.md §4 (aic h200_sxm.yaml)",
        "peak_flop_per_s.bf16": "same compute as H100 SXM: BF16 ~1,979 TFLOPS sparse (ai-hpc.github.io "
        "8x-H200 page) / 2, rounded to 989 as in model_anchors.md §4",
        "peak_flop_per_s.fp16": "as bf16",
        "peak_flop_per_s.fp8": "FP8 3,958 TFLOPS sparse, 'identical' to H100 SXM (lzwjava.github.io) / 2",
        "peak_flop_per_s.tf32": "as H100 SXM (model_anchors.md §4: 495)",
        "peak_flop_per_s.int8": "as H100 SXM",
        "interconnect_bytes_per_s": "NVLink 4.0, 900 GB/s bidirectional (ai-hpc.github.io; MLPerf v4.1 "
        "H200 system json: '18x 4th Gen NVLink, 900GB/s')",
    },
    aliases=("h200-sxm", "h200-sxm5", "h200-sxm-141gb", "h200-141gb", "NVIDIA H200"),
)
_add(
    id="h200-nvl",
    family="h200",
    name="NVIDIA H200 NVL 141GB",
    vendor="NVIDIA",
    memory_bytes=143771 * MIB,
    memory_marketing="141 GB HBM3e",
    hbm_bytes_per_s=4800e9,
    peak_flop_per_s={"bf16": 835e12, "fp16": 835e12, "fp8": 1671e12, "tf32": 418e12, "int8": 1671e12},
    interconnect="NVLink 4 bridge, 2- or 4-way (900 GB/s); PCIe Gen5 x16 (128 GB/s)",
    interconnect_bytes_per_s=900e9,
    sources={
        "memory_bytes": _smi(143771, "NVIDIA H200 NVL, 143771 MiB"),
        "hbm_bytes_per_s": UNVERIFIED + " 4.8 TB/s per NVIDIA H200 product page (from memory; the "
        "page was not retrieved this session)",
        "peak_flop_per_s.bf16": UNVERIFIED + " 1,671 TFLOPS sparse / 2 per NVIDIA H200 NVL spec "
        "(from memory; same compute as H100 NVL)",
        "peak_flop_per_s.fp16": UNVERIFIED + " as bf16",
        "peak_flop_per_s.fp8": UNVERIFIED + " 3,341 TFLOPS sparse / 2 (from memory)",
        "peak_flop_per_s.tf32": UNVERIFIED + " 835 TFLOPS sparse / 2 (from memory)",
        "peak_flop_per_s.int8": UNVERIFIED + " 3,341 TOPS sparse / 2 (from memory)",
        "interconnect_bytes_per_s": UNVERIFIED + " NVLink bridge 900 GB/s (from memory); a public "
        "report of 2x H200 NVL shows an NV6 NVLink bridge in nvidia-smi topo -m",
    },
    aliases=("h200-nvl-141gb", "NVIDIA H200 NVL"),
)

_add(
    id="b200",
    family="b200",
    name="NVIDIA B200 (HGX B200, 180GB)",
    vendor="NVIDIA",
    memory_bytes=183359 * MIB,
    memory_marketing="180 GB HBM3e (HGX B200 per GPU; 192 GB physical)",
    hbm_bytes_per_s=7700e9,
    peak_flop_per_s={
        "bf16": 2250e12,
        "fp16": 2250e12,
        "fp8": 4500e12,
        "fp4": 9000e12,
        "tf32": 1100e12,
        "int8": 4500e12,
    },
    interconnect="NVLink 5 (1.8 TB/s)",
    interconnect_bytes_per_s=1800e9,
    sources={
        "memory_bytes": _smi(183359, "NVIDIA B200, 183359 MiB"),
        "hbm_bytes_per_s": "HGX B200 per GPU: 180GB HBM3E | 7.7TB/s (" + _S_B200 + "); NVIDIA also "
        "quotes 8 TB/s for B200 (DGX/GB200); model_anchors.md §4: 7,700 (aic) / 8,000 (NVIDIA). "
        "Override to 8.0e12 for the 8 TB/s parts",
        "peak_flop_per_s.bf16": "FP16/BF16 4.5 PFLOPS sparse / 2 (" + _S_B200 + ")",
        "peak_flop_per_s.fp16": "as bf16 (" + _S_B200 + ")",
        "peak_flop_per_s.fp8": "FP8/FP6 9 PFLOPS sparse / 2 (" + _S_B200 + ")",
        "peak_flop_per_s.fp4": "FP4 18 PFLOPS sparse / 2 (" + _S_B200 + ")",
        "peak_flop_per_s.tf32": "TF32 2.2 PFLOPS sparse / 2 (" + _S_B200 + "); model_anchors.md §4 "
        "has ~1,125 [unverified]",
        "peak_flop_per_s.int8": "INT8 9 POPS sparse / 2 (" + _S_B200 + ")",
        "interconnect_bytes_per_s": "5th generation NVLink: 1.8TB/s (" + _S_B200 + "; "
        "docs.vultr.com HGX B200 hardware overview)",
    },
    aliases=("b200-sxm", "hgx-b200", "b200-180gb", "NVIDIA B200"),
)

_add(
    id="l4",
    family="l4",
    name="NVIDIA L4",
    vendor="NVIDIA",
    memory_bytes=23034 * MIB,
    memory_marketing="24 GB GDDR6",
    hbm_bytes_per_s=300e9,
    peak_flop_per_s={"bf16": 121e12, "fp16": 121e12, "fp8": 242.5e12, "tf32": 60e12, "int8": 242.5e12},
    interconnect="PCIe Gen4 x16 (64 GB/s)",
    interconnect_bytes_per_s=64e9,
    sources={
        "memory_bytes": _smi(23034, "NVIDIA L4, 23034 MiB"),
        "hbm_bytes_per_s": "300 GB/s GDDR6 (" + _S_L4 + ")",
        "peak_flop_per_s.bf16": "242 TFLOPS sparse / 2 (" + _S_L4 + ")",
        "peak_flop_per_s.fp16": "242 TFLOPS sparse / 2 (" + _S_L4 + ")",
        "peak_flop_per_s.fp8": "485 TFLOPS sparse / 2 (" + _S_L4 + "; model_anchors.md rounds to 242)",
        "peak_flop_per_s.tf32": "120 TFLOPS sparse / 2 (" + _S_L4 + ")",
        "peak_flop_per_s.int8": "485 TOPS sparse / 2 (" + _S_L4 + ")",
        "interconnect_bytes_per_s": "PCIe 4.0 x16 (fpsbench.com/pcpartcomparison.com L4 listings); "
        "64 GB/s = 2 x ~32 GB/s",
    },
    aliases=("nvidia-l4", "NVIDIA L4"),
)
_add(
    id="l40s",
    family="l40s",
    name="NVIDIA L40S",
    vendor="NVIDIA",
    memory_bytes=46068 * MIB,
    memory_marketing="48 GB GDDR6",
    hbm_bytes_per_s=864e9,
    peak_flop_per_s={"bf16": 362.05e12, "fp16": 362.05e12, "fp8": 733e12, "tf32": 183e12, "int8": 733e12},
    interconnect="PCIe Gen4 x16 (64 GB/s)",
    interconnect_bytes_per_s=64e9,
    sources={
        "memory_bytes": _smi(46068, "NVIDIA L40S, 46068"),
        "hbm_bytes_per_s": _S_L40S,
        "peak_flop_per_s.bf16": _S_L40S,
        "peak_flop_per_s.fp16": _S_L40S,
        "peak_flop_per_s.fp8": _S_L40S,
        "peak_flop_per_s.tf32": _S_L40S,
        "peak_flop_per_s.int8": "as FP8: 1,466 TOPS sparse / 2 (grokipedia L4 vs L40S; " + _S_L40S + ")",
        "interconnect_bytes_per_s": _S_L40S,
    },
    aliases=("nvidia-l40s", "NVIDIA L40S"),
)
_add(
    id="rtx-4090",
    family="rtx4090",
    name="NVIDIA GeForce RTX 4090",
    vendor="NVIDIA",
    memory_bytes=24564 * MIB,
    memory_marketing="24 GB GDDR6X",
    hbm_bytes_per_s=1008e9,
    peak_flop_per_s={"bf16": 165.2e12, "fp16": 165.2e12, "fp8": 330.3e12, "tf32": 82.6e12, "int8": 660.6e12},
    interconnect="PCIe Gen4 x16 (64 GB/s)",
    interconnect_bytes_per_s=64e9,
    sources={
        "memory_bytes": _smi(24564, "NVIDIA GeForce RTX 4090, 24564 MiB, 4, 16"),
        "hbm_bytes_per_s": "1,008 GB/s GDDR6X (" + _S_4090 + ")",
        "peak_flop_per_s.bf16": "165.2 TFLOPS dense, FP32 accumulate (" + _S_4090 + ")",
        "peak_flop_per_s.fp16": "165.2 TFLOPS dense with FP32 accumulate, the accumulate PyTorch uses; "
        "330.3 with FP16 accumulate (" + _S_4090 + ")",
        "peak_flop_per_s.fp8": "330.3 TFLOPS dense with FP32 accumulate (waredb.com); 660.6 with FP16 "
        "accumulate (gigagpu.com) - consumer Ada halves FP32-accumulate rates",
        "peak_flop_per_s.tf32": "82.6 TFLOPS dense (" + _S_4090 + ")",
        "peak_flop_per_s.int8": "660.6 TOPS dense (" + _S_4090 + ")",
        "interconnect_bytes_per_s": "PCIe Gen4 x16 (nvidia-smi pcie.link.gen.max 4, width 16 in a public "
        "log); 64 GB/s = 2 x 31.5 GB/s; no NVLink",
    },
    aliases=("rtx4090", "rtx-4090-24gb", "geforce-rtx-4090", "4090", "NVIDIA GeForce RTX 4090"),
)

_add(
    id="mi300x",
    family="mi300x",
    name="AMD Instinct MI300X",
    vendor="AMD",
    memory_bytes=206158430208,
    memory_marketing="192 GB HBM3 (= 192 GiB)",
    hbm_bytes_per_s=5300e9,
    peak_flop_per_s={"bf16": 1307.4e12, "fp16": 1307.4e12, "fp8": 2614.9e12, "tf32": 653.7e12, "int8": 2614.9e12},
    interconnect="AMD Infinity Fabric, 7 links (896 GB/s)",
    interconnect_bytes_per_s=896e9,
    sources={
        "memory_bytes": "rocm-smi 'VRAM Total Memory (B): 206158430208' (= 192 GiB; public rocm-smi "
        "outputs); one host reported 206141652992",
        "hbm_bytes_per_s": "5.3 TB/s (" + _S_MI300X + ")",
        "peak_flop_per_s.bf16": "1,307.4 TFLOPS dense (" + _S_MI300X + ")",
        "peak_flop_per_s.fp16": "1,307.4 TFLOPS dense (" + _S_MI300X + ")",
        "peak_flop_per_s.fp8": "2,614.9 TFLOPS dense (" + _S_MI300X + ")",
        "peak_flop_per_s.tf32": UNVERIFIED + " 653.7 TFLOPS dense per AMD datasheet (from memory; "
        "model_anchors.md §4 lists 654)",
        "peak_flop_per_s.int8": UNVERIFIED + " 2,614.9 TOPS dense per AMD datasheet (from memory)",
        "interconnect_bytes_per_s": "896 GB/s Infinity Fabric (gpu.blog MI300X page; AMD: 7 links x "
        "128 GB/s) - third-party figure",
    },
    aliases=("amd-mi300x", "instinct-mi300x", "mi300x-192gb", "AMD Instinct MI300X"),
)

_add(
    id="cpu",
    family="cpu",
    name="CPU (vLLM CPU engine pseudo-device)",
    vendor="generic",
    memory_bytes=None,
    memory_marketing="host RAM (not modelled; the KV budget is VLLM_CPU_KVCACHE_SPACE)",
    hbm_bytes_per_s=None,
    peak_flop_per_s={},
    interconnect=None,
    interconnect_bytes_per_s=None,
    sources={
        "memory_bytes": "pseudo-device: None (host RAM is not a roofline figure)",
        "hbm_bytes_per_s": "pseudo-device: None (override to model a CPU roofline)",
        "peak_flop_per_s": "pseudo-device: no peaks (override to model a CPU roofline)",
        "interconnect_bytes_per_s": "pseudo-device: None",
    },
    aliases=("cpu-engine", "vllm-cpu", "host-cpu"),
)


# --------------------------------------------------------------------------- lookup tables


def _norm(name: str) -> str:
    return re.sub(r"[\s_]+", "-", str(name).strip().lower())


CATALOG: Mapping[str, HardwareSpec] = MappingProxyType({spec.id: spec for spec in _ENTRIES})

_LOOKUP: dict[str, str] = {}
for _spec in _ENTRIES:
    for _key in (_spec.id, *_spec.aliases):
        _nk = _norm(_key)
        if _nk in _LOOKUP and _LOOKUP[_nk] != _spec.id:  # pragma: no cover - catalog invariant
            raise RuntimeError(f"hardware alias {_key!r} names both {_LOOKUP[_nk]} and {_spec.id}")
        _LOOKUP[_nk] = _spec.id

_FAMILIES: dict[str, list[str]] = {}
for _spec in _ENTRIES:
    _FAMILIES.setdefault(_spec.family, []).append(_spec.id)
del _spec, _key, _nk


def families() -> dict[str, list[str]]:
    """Family name -> variant ids, in catalog order (a fresh copy)."""
    return {fam: list(ids) for fam, ids in _FAMILIES.items()}


def _suggest(name: str, candidates: list[str]) -> list[str]:
    return difflib.get_close_matches(_norm(name), candidates, n=3, cutoff=0.5)


def _unknown(name: str, *, include_families: bool) -> UnknownHardwareError:
    pool = list(_LOOKUP) + (list(_FAMILIES) if include_families else [])
    suggestions: list[str] = []
    for hit in _suggest(name, pool):
        shown = hit if hit in _FAMILIES and include_families else _LOOKUP.get(hit, hit)
        if shown not in suggestions:
            suggestions.append(shown)
    msg = f"unknown hardware {name!r}."
    if suggestions:
        msg += f" Did you mean: {', '.join(suggestions)}?"
    msg += f" Known ids: {', '.join(CATALOG)}."
    if include_families:
        msg += f" Families: {', '.join(_FAMILIES)}."
    return UnknownHardwareError(msg)


def get_hardware(name: str) -> HardwareSpec:
    """Exact catalog id or alias (case-insensitive; spaces/underscores read as '-')."""
    if isinstance(name, HardwareSpec):
        return name
    key = _LOOKUP.get(_norm(name))
    if key is None:
        raise _unknown(name, include_families=False)
    return CATALOG[key]


def resolve(
    family_or_id: str,
    *,
    declared: str | None = None,
    detected: str | None = None,
    prefer_detected: bool = False,
) -> HardwareSpec:
    """Pick the exact variant for a run.

    ``family_or_id`` is what ``--gpu`` says: a family (``a100``) or an exact id/alias
    (``a100-sxm4-80gb``). A family name wins over an id of the same spelling, so ``h200`` is the
    family {h200, h200-nvl}; use ``h200-sxm`` to pin the SXM part.

    ``declared`` is the variant the prediction file names; it must belong to the family (or equal
    the id) given, else :class:`HardwareMismatchError`.

    ``detected`` is the catalog id/alias of the device actually present. It wins when consistent:
    inside the family and equal to ``declared`` when one is given. A detected device outside the
    family raises :class:`HardwareMismatchError`. A detected variant of the right family that
    differs from ``declared`` raises too, unless ``prefer_detected=True`` (then the device wins).

    With several variants left and neither ``declared`` nor ``detected`` to choose,
    :class:`AmbiguousHardwareError` lists them: never a silent pick.
    """
    norm = _norm(family_or_id)
    if norm in _FAMILIES:
        label = f"family {norm!r}"
        candidates = list(_FAMILIES[norm])
    elif norm in _LOOKUP:
        pinned = CATALOG[_LOOKUP[norm]]
        label = f"{pinned.id!r}"
        candidates = [pinned.id]
    else:
        raise _unknown(family_or_id, include_families=True)

    declared_spec = None
    if declared is not None:
        declared_spec = get_hardware(declared)
        if declared_spec.id not in candidates:
            raise HardwareMismatchError(
                f"the prediction file declares hardware {declared_spec.id!r} (family "
                f"{declared_spec.family!r}) but --gpu names {label}; variants of {label}: "
                f"{', '.join(candidates)}"
            )

    if detected is not None:
        detected_spec = get_hardware(detected)
        if detected_spec.id not in candidates:
            raise HardwareMismatchError(
                f"the detected device is {detected_spec.id!r} ({detected_spec.name}) but --gpu names "
                f"{label} ({', '.join(candidates)})"
            )
        if declared_spec is not None and declared_spec.id != detected_spec.id and not prefer_detected:
            raise HardwareMismatchError(
                f"the prediction file declares {declared_spec.id!r} but the detected device is "
                f"{detected_spec.id!r}; predictions for one variant do not hold on the other "
                f"(fix the file, or resolve(..., prefer_detected=True) to model the device present)"
            )
        return detected_spec

    if declared_spec is not None:
        return declared_spec
    if len(candidates) == 1:
        return CATALOG[candidates[0]]
    details = "; ".join(
        f"{c} ({CATALOG[c].name}, {CATALOG[c].memory_marketing}"
        + (f", {CATALOG[c].hbm_bytes_per_s / 1e9:,.0f} GB/s)" if CATALOG[c].hbm_bytes_per_s else ")")
        for c in candidates
    )
    raise AmbiguousHardwareError(
        f"--gpu {family_or_id!r} names {label}, which has {len(candidates)} variants and nothing says "
        f"which one this is: {details}. Name the variant in the prediction file "
        f"(hardware: {candidates[0]}), pass it to --gpu, or run where the device can be detected."
    )


# --------------------------------------------------------------------------- overrides

_NUM_RE = re.compile(
    r"^\s*(?P<num>[-+]?(?:\d[\d_,]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(?P<unit>[A-Za-z/]*)\s*$"
)
_SI = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_BIN = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}


def _parse_quantity(value: Any, kind: str, where: str) -> float:
    """A number, or a string like '1.8e12', '2,039 GB/s', '989 TFLOP/s', '80 GiB'.

    ``kind`` is 'bytes', 'bytes_per_s' or 'flop_per_s'; a unit of another kind is an error.
    """
    if isinstance(value, bool):
        raise HardwareOverrideError(f"{where}: expected a number, got {value!r}")
    if isinstance(value, (int, float)):
        return float(value)
    if not isinstance(value, str):
        raise HardwareOverrideError(f"{where}: expected a number, got {type(value).__name__} {value!r}")
    m = _NUM_RE.match(value)
    if not m:
        raise HardwareOverrideError(f"{where}: cannot read {value!r} as a number")
    num = float(m.group("num").replace("_", "").replace(",", ""))
    unit = m.group("unit")
    if not unit:
        return num
    patterns = {
        "bytes": r"(?P<p>[kKMGTP]?|[KMGT]i)B",
        "bytes_per_s": r"(?P<p>[kKMGTP]?|[KMGT]i)B/s",
        "flop_per_s": r"(?P<p>[kKMGTP]?)(?:FLOP/s|FLOPS|flop/s|OP/s|OPS)",
    }
    um = re.fullmatch(patterns[kind], unit)
    if not um:
        raise HardwareOverrideError(
            f"{where}: unit {unit!r} in {value!r} does not fit this field "
            f"({'bytes' if kind == 'bytes' else 'bytes/s' if kind == 'bytes_per_s' else 'FLOP/s'})"
        )
    prefix = um.group("p")
    return num * (_BIN[prefix] if prefix in _BIN else _SI[prefix])


def _positive(value: float, where: str) -> float:
    if not (math.isfinite(value) and value > 0):
        raise HardwareOverrideError(f"{where}: must be a positive number, got {value!r}")
    return value


_FIELD_NAMES = tuple(f.name for f in dataclasses.fields(HardwareSpec))


def with_overrides(spec: HardwareSpec | str, overrides: Mapping[str, Any] | None) -> HardwareSpec:
    """A copy of ``spec`` with fields replaced from a prediction file's ``hardware_overrides``.

    ``peak_flop_per_s`` merges per dtype (``{bf16: 280e12}`` changes bf16 only). Every override is
    recorded in ``sources`` as ``"user override"`` (per dtype for peaks). Unknown fields or dtypes
    of the wrong kind raise :class:`HardwareOverrideError` with a did-you-mean.
    """
    spec = get_hardware(spec) if isinstance(spec, str) else spec
    if not overrides:
        return spec
    if not isinstance(overrides, Mapping):
        raise HardwareOverrideError(f"hardware overrides must be a mapping, got {type(overrides).__name__}")
    changes: dict[str, Any] = {}
    sources = dict(spec.sources)
    for raw_key, value in overrides.items():
        key = str(raw_key)
        if key not in _FIELD_NAMES:
            close = difflib.get_close_matches(key, _FIELD_NAMES, n=3, cutoff=0.5)
            hint = f" Did you mean: {', '.join(close)}?" if close else ""
            raise HardwareOverrideError(
                f"unknown hardware field {key!r} in overrides for {spec.id}.{hint} "
                f"Fields: {', '.join(_FIELD_NAMES)}"
            )
        where = f"hardware override {key}"
        if key == "sources":
            raise HardwareOverrideError(f"{where}: sources are recorded automatically and cannot be overridden")
        if key == "peak_flop_per_s":
            if not isinstance(value, Mapping):
                raise HardwareOverrideError(f"{where}: expected a mapping of dtype to FLOP/s, e.g. {{bf16: 280e12}}")
            peaks = dict(changes.get("peak_flop_per_s", spec.peak_flop_per_s))
            for dtype, peak in value.items():
                dkey = normalize_dtype(str(dtype))
                if dkey not in set(_DTYPE_ALIASES.values()):
                    close = difflib.get_close_matches(dkey, sorted(set(_DTYPE_ALIASES.values())), n=3, cutoff=0.5)
                    hint = f" Did you mean: {', '.join(close)}?" if close else ""
                    raise HardwareOverrideError(f"{where}: unknown dtype {dtype!r}.{hint}")
                peaks[dkey] = _positive(_parse_quantity(peak, "flop_per_s", f"{where}.{dkey}"), f"{where}.{dkey}")
                sources[f"peak_flop_per_s.{dkey}"] = USER_OVERRIDE
            changes[key] = peaks
            continue
        if key in ("memory_bytes",):
            if value is None:
                changes[key] = None
            else:
                num = _positive(_parse_quantity(value, "bytes", where), where)
                if not float(num).is_integer():
                    raise HardwareOverrideError(f"{where}: must be a whole number of bytes, got {value!r}")
                changes[key] = int(num)
        elif key in ("hbm_bytes_per_s", "interconnect_bytes_per_s"):
            changes[key] = None if value is None else _positive(_parse_quantity(value, "bytes_per_s", where), where)
        elif key == "aliases":
            if isinstance(value, str) or not isinstance(value, (list, tuple)):
                raise HardwareOverrideError(f"{where}: expected a list of names")
            changes[key] = tuple(str(v) for v in value)
        else:  # id, family, name, vendor, memory_marketing, interconnect
            if value is not None and not isinstance(value, str):
                raise HardwareOverrideError(f"{where}: expected text, got {value!r}")
            if value is None and key not in ("interconnect",):
                raise HardwareOverrideError(f"{where}: cannot be empty")
            changes[key] = value
        sources[key] = USER_OVERRIDE
    changes["sources"] = sources
    try:
        return dataclasses.replace(spec, **changes)
    except HardwareError as exc:
        raise HardwareOverrideError(str(exc)) from exc
