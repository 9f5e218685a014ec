"""Hardware catalog: every accelerator variant the analytical model can name, with sources.

Units are SI base units and live in the names: ``memory_bytes`` (bytes), ``hbm_bytes_per_s``
(bytes/s, vendor datasheet, decimal: 2,039 GB/s = 2.039e12), ``peak_flop_per_s`` (FLOP/s, dense
tensor-core peaks; the ``int8`` entry is OP/s). GB = 1e9 bytes, GiB = 2**30 bytes.

``interconnect_bytes_per_s`` is the datasheet's bidirectional total per GPU over the link named in
``interconnect`` (NVLink 4: 900 GB/s = 450 each way; PCIe Gen4 x16: 64 GB/s). ``interconnect_latency_s``
is the fixed cost of one all-reduce call over that link (seconds), the floor a tensor-parallel step pays
twice per layer however small the message: 8 us on NVLink/NVSwitch as llm-analysis assumes
(``gpu_configs/*.json`` ``intra_node_min_message_latency``; aiconfigurator's ``p2p_latency`` is 10 us,
GenZ's all-reduce starts at 5 us), more over PCIe (8-GPU nccl-tests runs measure 40-55 us for 8 bytes,
github.com/NVIDIA/nccl/issues/1530 and /1439). ``None`` where there is no link to model (the ``cpu``
pseudo-device); a prediction file may override it like any other figure.

Multi-die parts appear as the software sees them: an MI250X module is two GCDs and ROCm (so vLLM) shows
each as its own 64 GB device, so the ``mi250x`` entry is one GCD. Blackwell superchips (``gb200``) are
per GPU.

``memory_bytes`` is what the driver reports (``nvidia-smi --query-gpu=memory.total`` MiB x 2**20,
or ``rocm-smi --showmeminfo vram`` bytes), not the datasheet's rounded figure: the A100's "80 GB"
is 81,920 MiB = 80 GiB of HBM2e, the H100 SXM's "80 GB" is 81,559 MiB, the H200's "141 GB" is
143,771 MiB. The datasheet rounding is kept in ``memory_marketing``.

Peaks are DENSE tensor-core figures. NVIDIA's datasheets print Hopper/Ada/Blackwell peaks "with
sparsity"; the catalog stores half of those. Where the public performance-model catalogs round a
figure (H100 SXM bf16 989 TFLOP/s, half of 1,979 sparse, as in aiconfigurator's h100_sxm.yaml) the
catalog keeps that rounding so ridge points agree with them.

The entries are data: ``pytest_roofline/model/data/hardware.json`` (read and validated once, at
import). Adding a GPU is adding an entry there; this module holds the logic.

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
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from pytest_roofline.errors import (
    AmbiguousHardwareError,
    HardwareError,
    HardwareMismatchError,
    HardwareOverrideError,
    UnitError,
    UnknownHardwareError,
)
from pytest_roofline.model import catalog, dtypes
from pytest_roofline.units import GB, GIB, to_si

__all__ = [
    "HardwareSpec",
    "HardwareError",
    "UnknownHardwareError",
    "AmbiguousHardwareError", "COMMON_VARIANTS", "catalog_id", "family_note",
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

UNVERIFIED = "[unverified]"
USER_OVERRIDE = "user override"


# --------------------------------------------------------------------------- dtypes


def normalize_dtype(dtype: str) -> str:
    """Canonical dtype key used in ``peak_flop_per_s`` ("bfloat16" -> "bf16", "fp8_e4m3" -> "fp8")."""
    return dtypes.canonical(dtype)


# --------------------------------------------------------------------------- spec


class FrozenMap(Mapping[str, Any]):
    """A read-only mapping that, unlike ``MappingProxyType``, pickles and deep-copies."""

    __slots__ = ("_data",)
    _data: dict[str, Any]

    def __init__(self, data: Mapping[str, Any] | None = None) -> None:
        object.__setattr__(self, "_data", dict(data or {}))

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("FrozenMap is read-only")

    def __reduce__(self) -> tuple[Any, ...]:
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
    interconnect_latency_s: float | None = None
    #: GPUs one NVLink/NVSwitch domain joins (an HGX baseboard: 8; GB200 NVL72: 72); None where the catalog has no
    #: such domain (PCIe parts, bridges). Tensor parallelism beyond it would all-reduce over the network
    nvlink_domain_gpus: int | None = None
    #: CUDA compute capability (major.minor, e.g. 8.9); None for non-NVIDIA parts and the cpu pseudo-device. vLLM's
    #: choice of engine and attention backend reads it (vllm_defaults.default_engine)
    compute_capability: float | None = None

    def __post_init__(self) -> None:
        peaks = {normalize_dtype(k): float(v) for k, v in dict(self.peak_flop_per_s).items()}
        for dtype, value in peaks.items():
            if not (math.isfinite(value) and value > 0):
                raise HardwareError(f"{self.id}: peak_flop_per_s[{dtype!r}] must be a positive number, got {value!r}")
        object.__setattr__(self, "peak_flop_per_s", _freeze(peaks))
        object.__setattr__(self, "sources", _freeze(self.sources))
        object.__setattr__(self, "aliases", tuple(self.aliases))
        memory: Any = self.memory_bytes  # the data file may write a whole float
        if memory is not None:
            if isinstance(memory, float):
                if not memory.is_integer():
                    raise HardwareError(f"{self.id}: memory_bytes must be a whole number of bytes, got {memory!r}")
                object.__setattr__(self, "memory_bytes", int(memory))
            if memory <= 0:
                raise HardwareError(f"{self.id}: memory_bytes must be positive, got {self.memory_bytes!r}")
        for name in ("hbm_bytes_per_s", "interconnect_bytes_per_s", "interconnect_latency_s"):
            value = getattr(self, name)
            if value is not None:
                value = float(value)
                if not (math.isfinite(value) and value > 0):
                    raise HardwareError(f"{self.id}: {name} must be a positive number or None, got {value!r}")
                object.__setattr__(self, name, value)
        cc = self.compute_capability
        if cc is not None:
            if isinstance(cc, bool) or not isinstance(cc, (int, float)) or not (1.0 <= float(cc) < 100.0):
                raise HardwareError(f"{self.id}: compute_capability must be a CUDA compute capability such as 8.9, "
                                    f"or None, got {cc!r}")
            object.__setattr__(self, "compute_capability", float(cc))
        domain = self.nvlink_domain_gpus
        if domain is not None and (isinstance(domain, bool) or not isinstance(domain, int) or domain < 1):
            raise HardwareError(f"{self.id}: nvlink_domain_gpus must be a whole number of GPUs >= 1 or None, "
                                f"got {domain!r}")

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
        # vLLM's --dtype names a 16-bit compute dtype the chip has a peak for (its choices: bfloat16, float16, ...)
        vllm_dtype = next((name for k, name in (("bf16", "bfloat16"), ("fp16", "float16"))
                           if k in self.peak_flop_per_s), None)
        run_in = (f"run the model in {vllm_dtype} (engine.args.dtype: {vllm_dtype}, vLLM's --dtype) or "
                  if vllm_dtype else "")
        raise HardwareError(
            f"{self.id} ({self.name}) has no {key} tensor peak"
            + (f" (asked for {dtype!r})" if key != str(dtype) else "")
            + f"; it has: {', '.join(self.peak_flop_per_s)}: {run_in}give the chip's {key} peak "
            + f"(hardware_overrides: {{peak_flop_per_s: {{{key}: <FLOP/s>}}}})"
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


# --------------------------------------------------------------------------- the catalog (data)

#: the package data file the catalog is read from (pytest_roofline/model/data/)
CATALOG_FILE = "hardware.json"
_FIELD_NAMES = tuple(f.name for f in dataclasses.fields(HardwareSpec))


def _spec_from_data(entry: Any, where: str) -> HardwareSpec:
    """One catalog entry, every field given and no other (the file is the whole truth about a device)."""
    if not isinstance(entry, dict):
        raise HardwareError(f"{where}: expected an object, got {type(entry).__name__}")
    where = f"{where} ({entry.get('id', '?')})"
    missing = [name for name in _FIELD_NAMES if name not in entry]
    unknown = [key for key in entry if key not in _FIELD_NAMES]
    if missing or unknown:
        problems = [f"missing {', '.join(missing)}"] if missing else []
        problems += [f"unknown {', '.join(unknown)}"] if unknown else []
        raise HardwareError(f"{where}: " + "; ".join(problems))
    sources = entry["sources"]
    if not isinstance(sources, dict) or not all(isinstance(v, str) and v for v in sources.values()):
        raise HardwareError(f"{where}: sources must map each field to the text of its source")
    if not isinstance(entry["aliases"], list) or not isinstance(entry["peak_flop_per_s"], dict):
        raise HardwareError(f"{where}: aliases must be a list and peak_flop_per_s an object")
    try:
        return HardwareSpec(**entry)
    except HardwareError as exc:
        raise HardwareError(f"{where}: {exc}") from None


def _load_catalog() -> tuple[HardwareSpec, ...]:
    devices = catalog.load_data(CATALOG_FILE).get("devices")
    if not isinstance(devices, list) or not devices:
        raise HardwareError(f"{CATALOG_FILE}: expected a non-empty list under 'devices'")
    return tuple(_spec_from_data(entry, f"{CATALOG_FILE} devices[{i}]") for i, entry in enumerate(devices))


_ENTRIES = _load_catalog()


# --------------------------------------------------------------------------- lookup tables


def _norm(name: str) -> str:
    return re.sub(r"[\s_]+", "-", str(name).strip().lower())


CATALOG: Mapping[str, HardwareSpec] = MappingProxyType({spec.id: spec for spec in _ENTRIES})
_INDEX = catalog.NameIndex(((spec.id, spec.aliases) for spec in _ENTRIES), _norm)

_FAMILIES: dict[str, list[str]] = {}
for _spec in _ENTRIES:
    _FAMILIES.setdefault(_spec.family, []).append(_spec.id)
del _spec


def _load_common_variants() -> dict[str, str]:
    """``common_variants`` of the catalog file: family -> the variant its name stands for (checked: a family of
    several variants, and one of them)."""
    raw = catalog.load_data(CATALOG_FILE).get("common_variants", {})
    out = {fam: vid for fam, vid in raw.items() if fam != "about"}
    for fam, vid in out.items():
        if vid not in _FAMILIES.get(fam, ()):
            raise HardwareError(f"{CATALOG_FILE}: common_variants.{fam} = {vid!r} is not a variant of family {fam!r}")
    return out


#: family -> its common variant, for families of several variants (the catalog file's ``common_variants``)
COMMON_VARIANTS: Mapping[str, str] = MappingProxyType(_load_common_variants())


def families() -> dict[str, list[str]]:
    """Family name -> variant ids, in catalog order (a fresh copy)."""
    return {fam: list(ids) for fam, ids in _FAMILIES.items()}


def _unknown(name: str, *, include_families: bool) -> UnknownHardwareError:
    norm = _norm(name)
    # a variant of the family the name starts with comes first (h100x: h100-sxm, not h800 or h200)
    prefixes = sorted((fam for fam in _FAMILIES if norm.startswith(fam)), key=len, reverse=True)[:1]
    same_family = [COMMON_VARIANTS.get(fam, _FAMILIES[fam][0]) for fam in prefixes]
    suggestions = list(dict.fromkeys([*same_family, *_INDEX.suggest(name, extra=_FAMILIES if include_families
                                                                     else ())]))[:3]
    msg = f"unknown hardware {name!r}."
    if suggestions:
        msg += f" Did you mean: {', '.join(suggestions)}?"
    msg += f" Known ids: {', '.join(CATALOG)}."
    if include_families:
        msg += f" Families: {', '.join(_FAMILIES)}."
    return UnknownHardwareError(msg)


def get_hardware(name: str) -> HardwareSpec:
    """A catalog id, an alias (the name nvidia-smi prints is one: ``NVIDIA H100 80GB HBM3``), or a family (``h100``:
    its common variant, :data:`COMMON_VARIANTS`; a family of one variant: that one). Case-insensitive; spaces
    and underscores read as '-'. A family of several variants with no common one is an
    :class:`AmbiguousHardwareError` that lists them."""
    if isinstance(name, HardwareSpec):
        return name
    key = _INDEX.get(name)
    if key is not None:
        return CATALOG[key]
    family = _norm(name)
    if family in _FAMILIES:
        variants = _FAMILIES[family]
        if family in COMMON_VARIANTS:
            return CATALOG[COMMON_VARIANTS[family]]
        if len(variants) == 1:
            return CATALOG[variants[0]]
        raise AmbiguousHardwareError(f"hardware {name!r} is a family of {len(variants)} variants: "
                                     f"{', '.join(variants)}; name one")
    raise _unknown(name, include_families=True)


def catalog_id(name: str) -> str | None:
    """The id a catalog id or alias stands for (a name nvidia-smi prints is an alias), or None; no families."""
    return _INDEX.get(name)


def family_note(name: str) -> str | None:
    """What a family name was read as (``h100 -> h100-sxm (NVIDIA H100 SXM5 80GB); other variants: h100-pcie,
    h100-nvl``), or None when ``name`` is an id or alias."""
    if _INDEX.get(name) is not None or _norm(name) not in _FAMILIES:
        return None
    spec = get_hardware(name)
    others = [v for v in _FAMILIES[_norm(name)] if v != spec.id]
    return f"{name} -> {spec.id} ({spec.name})" + (f"; other variants: {', '.join(others)}" if others else "")


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
    elif (pinned_id := _INDEX.get(norm)) is not None:
        pinned = CATALOG[pinned_id]
        label = f"{pinned.id!r}"
        candidates = [pinned.id]
    else:
        raise _unknown(family_or_id, include_families=True)

    def member(name: str, mismatch: Callable[[HardwareSpec], str]) -> HardwareSpec:
        spec = get_hardware(name)
        if spec.id not in candidates:
            raise HardwareMismatchError(mismatch(spec))
        return spec

    declared_spec = None if declared is None else member(declared, lambda s: (
        f"the prediction file declares hardware {s.id!r} (family {s.family!r}) but --gpu names {label}; "
        f"variants of {label}: {', '.join(candidates)}"))

    if detected is not None:
        detected_spec = member(detected, lambda s: (
            f"the detected device is {s.id!r} ({s.name}) but --gpu names {label} ({', '.join(candidates)})"))
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
    def detail(spec: HardwareSpec) -> str:
        bandwidth = f", {spec.hbm_bytes_per_s / GB:,.0f} GB/s" if spec.hbm_bytes_per_s is not None else ""
        return f"{spec.id} ({spec.name}, {spec.memory_marketing}{bandwidth})"

    details = "; ".join(detail(CATALOG[c]) for c in candidates)
    raise AmbiguousHardwareError(
        f"--gpu {family_or_id!r} names {label}, which has {len(candidates)} variants and nothing says "
        f"which one this is: {details}. Name the variant in the prediction file "
        f"(hardware: {candidates[0]}), pass it to --gpu, or run where the device can be detected."
    )


# --------------------------------------------------------------------------- overrides

_UNIT_KIND = {"memory_bytes": ("bytes", "bytes"), "hbm_bytes_per_s": ("bandwidth", "bytes/s"),
              "interconnect_bytes_per_s": ("bandwidth", "bytes/s"), "peak_flop_per_s": ("flop_rate", "FLOP/s"),
              "interconnect_latency_s": ("time", "s")}


def _figure(value: Any, key: str, where: str) -> float:
    """A positive number, or text with a unit that fits the field ('2,039 GB/s', '989 TFLOP/s', '80 GiB')."""
    dimension, shown = _UNIT_KIND[key]
    try:
        num = to_si(value, dimension)
    except UnitError as exc:
        try:  # a bare number written as text ("8e-6") is in the field's SI unit; the time table has no bare unit
            num = float(str(value).replace(",", "")) if dimension == "time" else math.nan
        except ValueError:
            num = math.nan
        if math.isnan(num):
            raise HardwareOverrideError(f"{where}: {exc} (this field is in {shown})") from None
    if not (math.isfinite(num) and num > 0):
        raise HardwareOverrideError(f"{where}: must be a positive number, got {value!r}")
    return num


def _convert(spec: HardwareSpec, key: str, value: Any, where: str) -> Any:
    if key == "sources":
        raise HardwareOverrideError(f"{where}: sources are recorded automatically and cannot be overridden")
    if key == "peak_flop_per_s":
        if not isinstance(value, Mapping):
            raise HardwareOverrideError(f"{where}: expected a mapping of dtype to FLOP/s, e.g. {{bf16: 280e12}}")
        peaks = dict(spec.peak_flop_per_s)
        known = dtypes.peak_dtypes()
        for dtype, peak in value.items():
            dkey = normalize_dtype(str(dtype))
            if dkey not in known:
                close = difflib.get_close_matches(dkey, sorted(known), n=3, cutoff=0.5)
                hint = f" Did you mean: {', '.join(close)}?" if close else ""
                raise HardwareOverrideError(f"{where}: unknown dtype {dtype!r}.{hint}")
            peaks[dkey] = _figure(peak, key, f"{where}.{dkey}")
        return peaks
    if key == "memory_bytes":
        if value is None:
            return None
        num = _figure(value, key, where)
        if not float(num).is_integer():
            raise HardwareOverrideError(f"{where}: must be a whole number of bytes, got {value!r}")
        return int(num)
    if key in ("hbm_bytes_per_s", "interconnect_bytes_per_s", "interconnect_latency_s"):
        return None if value is None else _figure(value, key, where)
    if key == "compute_capability":
        if value is None:
            return None
        try:
            num = float(str(value).strip()) if not isinstance(value, bool) else math.nan
        except ValueError:
            num = math.nan
        if not (1.0 <= num < 100.0):
            raise HardwareOverrideError(f"{where}: expected a CUDA compute capability such as 8.9 (nvidia-smi "
                                        f"--query-gpu=compute_cap prints it), or null; got {value!r}")
        return num
    if key == "nvlink_domain_gpus":
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or float(value) != int(value) or value < 1:
            raise HardwareOverrideError(f"{where}: expected a whole number of GPUs >= 1 (or null), got {value!r}")
        return int(value)
    if key == "aliases":
        if isinstance(value, str) or not isinstance(value, (list, tuple)):
            raise HardwareOverrideError(f"{where}: expected a list of names")
        return tuple(str(v) for v in value)
    # id, family, name, vendor, memory_marketing, interconnect
    if value is not None and not isinstance(value, str):
        raise HardwareOverrideError(f"{where}: expected text, got {value!r}")
    if value is None and key != "interconnect":
        raise HardwareOverrideError(f"{where}: cannot be empty")
    return value


def with_overrides(spec: HardwareSpec | str, overrides: Mapping[str, Any] | None) -> HardwareSpec:
    """A copy of ``spec`` with fields replaced from a prediction file's ``hardware_overrides``.

    ``peak_flop_per_s`` merges per dtype (``{bf16: 280e12}`` changes bf16 only). Every override is
    recorded in ``sources`` as ``"user override"`` (per dtype for peaks). Unknown fields or dtypes
    of the wrong kind raise :class:`HardwareOverrideError` with a did-you-mean.
    """
    spec = get_hardware(spec) if isinstance(spec, str) else spec
    if not overrides:
        return spec
    changes = catalog.field_changes(overrides, kind="hardware", owner=spec.id, field_names=_FIELD_NAMES,
                                    convert=lambda key, value, where: _convert(spec, key, value, where),
                                    error=HardwareOverrideError)
    sources = dict(spec.sources)
    for key in changes:
        if key == "peak_flop_per_s":
            sources.update({f"peak_flop_per_s.{normalize_dtype(str(d))}": USER_OVERRIDE for d in overrides[key]})
        else:
            sources[key] = USER_OVERRIDE
    changes["sources"] = sources
    return catalog.replace_checked(spec, changes, catch=HardwareError, error=HardwareOverrideError)
