"""Detect the GPU (``nvidia-smi``, else ``amd-smi``, else ``rocm-smi``) and map it to a hardware-catalog id.

**NVIDIA.** ``nvidia-smi --query-gpu=... --format=csv,noheader,nounits`` prints one line per GPU, fields
in the order asked, ``memory.total`` in MiB (``nounits``). Name strings differ by form factor, e.g.
``NVIDIA A100-SXM4-80GB`` / ``NVIDIA A100 80GB PCIe`` / ``NVIDIA A100-PCIE-40GB`` and
``NVIDIA H100 80GB HBM3`` (SXM) / ``NVIDIA H100 PCIe`` / ``NVIDIA H100 NVL``; older drivers
omit the ``NVIDIA `` prefix (``A100-SXM4-40GB``). Blackwell Ultra reads ``NVIDIA B300 SXM6 AC``.

**AMD.** ``amd-smi static --asic --vram --bus --json`` (ROCm 6 and later) prints a list of
``{"gpu": 0, "asic": {"market_name": "AMD Instinct MI300X", "device_id": "0x74a1",
"num_compute_units": 304, ...}, "vram": {"size": {"value": 196592, "unit": "MB"}, ...}}``; newer
releases wrap the list as ``{"gpu_data": [...]}``, and early ones print the size as text
(``"196592 MB"``). amd-smi's "MB" is MiB: ``amdsmi_vram_info_t.vram_size`` is "vram size in MB"
(rocm.docs.amd.com, amdsmi struct reference), and an MI300X's 196,592 x 2**20 = 206,141,652,992 B is the
total some hosts report (the catalog's ``mi300x`` source). The older ``rocm-smi --showproductname
--showmeminfo vram --json`` prints ``{"card0": {"Card Series": "AMD Instinct MI300X",
"Card Model": "0x74a1", "VRAM Total Memory (B)": "206158430208", ...}}`` (older releases spell it
``"Card series"``, and some print the family, e.g. ``"AMD INSTINCT MI200 (MCM) OAM LC MBA HPE C2"``
with ``"Card Model": "0x7408"``: github.com/ROCm/rocm_smi_lib/issues/159; the same JSON shape for a
Radeon card: github.com/marimo-team/marimo/issues/9237). rocm-smi can exit 0 when it fails, so only
a parsed card counts. An MI250X module is two GCDs and ROCm
lists each as a device with 64 GB, which is how the catalog's ``mi250x`` entry counts it; both tools
name it ``AMD Instinct MI250X`` or ``AMD Instinct MI250X/MI250``, the latter shared with the MI250
(208 CUs, 104 per GCD, against the MI250X's 220 / 110), so only a compute-unit count of 110 per GCD
(amd-smi's ``num_compute_units``) or the MI250X-only PCI device id 0x7408 resolves it.

Every tool runs in its own session with a bounded timeout; on expiry its whole process group is
killed, so a wrapper script that hangs in a child cannot hold the pipes open. A tool that answers with
something that is not its format is a :class:`GPUDetectionError` naming the tool, never a guess.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from pytest_roofline.errors import GPUDetectionError
from pytest_roofline.model import hardware
from pytest_roofline.units import GIB, KIB, MIB

__all__ = [
    "DetectedGPU",
    "GPUDetectionError",
    "QUERY_FIELDS",
    "AMD_SMI_ARGS",
    "ROCM_SMI_ARGS",
    "CATALOG_IDS",
    "detect",
    "detect_all",
    "parse_nvidia_smi_csv",
    "parse_amd_smi_json",
    "parse_rocm_smi_json",
    "match_variant",
]

# Fields asked of nvidia-smi, in order. compute_cap needs driver >= ~510; detect() retries
# without it when the driver rejects the field.
QUERY_FIELDS = ("index", "name", "memory.total", "driver_version", "pci.bus_id", "uuid", "compute_cap")
_BASE_FIELDS = QUERY_FIELDS[:-1]
#: what is asked of amd-smi and of rocm-smi (after the executable)
AMD_SMI_ARGS = ("static", "--asic", "--vram", "--bus", "--json")
ROCM_SMI_ARGS = ("--showproductname", "--showmeminfo", "vram", "--json")

#: every catalog id a detected device can map to: the whole catalog but ``cpu`` (a GPU added to hardware.json is
#: detected by its aliases, the names nvidia-smi prints among them)
CATALOG_IDS = tuple(i for i in hardware.CATALOG if i != "cpu")

# PCI device ids (vendor 0x1002) that name one product on their own, for rocm-smi outputs whose
# "Card Series" is a family string; from the PCI ID repository (pci-ids.ucw.cz, vendor 1002):
# 74a1 "Aqua Vanjaram [Instinct MI300X]", 7408 "Aldebaran/MI200 [Instinct MI250X]". 740c is
# "[Instinct MI250X/MI250]" and stays ambiguous.
_AMD_DEVICE_IDS = {"0x74a1": "AMD Instinct MI300X", "0x7408": "AMD Instinct MI250X"}
_MI250X_CUS_PER_GCD = 110   # 220 CUs per module over 2 GCDs; the MI250 has 208 (104 per GCD)


#: the tool that answered for the GPU (``DetectedGPU.tool``)
GpuTool = Literal["nvidia-smi", "amd-smi", "rocm-smi"]


@dataclass
class DetectedGPU:
    name: str
    memory_total_mib: int | None
    driver_version: str | None = None
    pci_bus_id: str | None = None
    uuid: str | None = None
    index: int | None = None
    compute_cap: str | None = None
    variant: str | None = None          # catalog id, None when not in the catalog
    count: int = 1                      # GPUs visible with this detection
    others: list[str] = field(default_factory=list)  # names of other, different GPUs if mixed
    tool: GpuTool = "nvidia-smi"        # which tool answered
    device_id: str | None = None        # PCI device id (AMD tools report it), e.g. "0x74a1"
    compute_units: int | None = None    # compute units (amd-smi), e.g. 304 on an MI300X

    @property
    def memory_total_bytes(self) -> int | None:
        return None if self.memory_total_mib is None else self.memory_total_mib * MIB

    def to_dict(self) -> dict:
        d = asdict(self)
        d["memory_total_bytes"] = self.memory_total_bytes
        return d


def _none_if_na(v: str | None) -> str | None:
    if v is None:
        return None
    v = v.strip()
    return None if v in ("", "[N/A]", "N/A", "[Not Supported]", "[Unknown Error]") else v


# --------------------------------------------------------------------------- NVIDIA


def parse_nvidia_smi_csv(text: str, fields: tuple[str, ...] = QUERY_FIELDS) -> list[DetectedGPU]:
    """Parse ``nvidia-smi --query-gpu=<fields> --format=csv,noheader,nounits`` output.

    ``fields`` is the order they were asked in (default ``QUERY_FIELDS``; extra columns are
    ignored, missing trailing columns are None). A header line, if present, is skipped.
    """
    gpus: list[DetectedGPU] = []
    for row in csv.reader(io.StringIO(text), skipinitialspace=True):
        if not row or not "".join(row).strip():
            continue
        if row[0].strip().lower() in ("index", "name"):
            continue  # header (format=csv without noheader)
        vals = {f: _none_if_na(row[i]) if i < len(row) else None for i, f in enumerate(fields)}
        name = vals.get("name")
        if not name:
            raise ValueError(f"nvidia-smi line without a GPU name: {row!r}")
        mem = vals.get("memory.total")
        mem_mib = None
        if mem is not None:
            m = re.match(r"\s*(\d+(?:\.\d+)?)", mem)  # tolerate "81920 MiB" if units were kept
            mem_mib = int(float(m.group(1))) if m else None
        idx = vals.get("index")
        gpus.append(DetectedGPU(
            name=name,
            memory_total_mib=mem_mib,
            driver_version=vals.get("driver_version"),
            pci_bus_id=vals.get("pci.bus_id"),
            uuid=vals.get("uuid"),
            index=int(idx) if idx and idx.isdigit() else None,
            compute_cap=vals.get("compute_cap"),
            variant=match_variant(name, mem_mib),
        ))
    return gpus


# --------------------------------------------------------------------------- AMD


_SIZE_UNITS = {"b": 1, "kb": KIB, "kib": KIB, "mb": MIB, "mib": MIB, "gb": GIB, "gib": GIB}


def _amd_size_mib(value: Any, where: str) -> int | None:
    """amd-smi's VRAM size: ``{"value": 196592, "unit": "MB"}``, ``"196592 MB"`` or a bare number (MB).

    amd-smi counts in binary units and writes them "MB" (see the module docstring), so MB is MiB here.
    """
    if value is None:
        return None
    unit: Any = "MB"
    if isinstance(value, Mapping):
        value, unit = value.get("value"), value.get("unit", "MB")
    if isinstance(value, str):
        text = value.strip()
        if text.upper() in ("N/A", ""):
            return None
        m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([A-Za-z]*)", text)
        if not m:
            raise ValueError(f"{where}: VRAM size {text!r} is not a number with a unit")
        value, unit = float(m.group(1)), (m.group(2) or unit)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        if value is None or value == "N/A":
            return None
        raise ValueError(f"{where}: VRAM size {value!r} is not a number")
    factor = _SIZE_UNITS.get(str(unit).strip().lower())
    if factor is None:
        raise ValueError(f"{where}: VRAM size unit {unit!r} is not one amd-smi prints")
    return int(float(value) * factor // MIB)


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, Mapping):  # some releases write {"value": ..., "unit": ...} for plain fields too
        value = value.get("value")
    out = _none_if_na(str(value))
    return out


def _int_or_none(value: Any) -> int | None:
    text = _text(value)
    if text is None:
        return None
    try:
        return int(text, 0) if text.lower().startswith("0x") else int(float(text))
    except ValueError:
        return None


def parse_amd_smi_json(text: str) -> list[DetectedGPU]:
    """Parse ``amd-smi static --asic --vram --bus --json`` output (a list, or ``{"gpu_data": [...]}``).

    Raises ``ValueError`` (with what was wrong) for anything that is not that shape.
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"amd-smi output is not JSON ({exc.msg} at line {exc.lineno})") from None
    if isinstance(data, Mapping) and "gpu_data" in data:
        data = data["gpu_data"]
    if isinstance(data, Mapping) and ("asic" in data or "gpu" in data):
        data = [data]  # one GPU printed as an object
    if not isinstance(data, list):
        raise ValueError(f"amd-smi output is JSON but not a list of GPUs (got {type(data).__name__})")
    gpus: list[DetectedGPU] = []
    for i, entry in enumerate(data):
        where = f"amd-smi GPU entry {i}"
        if not isinstance(entry, Mapping):
            raise ValueError(f"{where} is not an object")
        asic = entry.get("asic")
        if not isinstance(asic, Mapping):
            raise ValueError(f"{where} has no 'asic' section (was amd-smi asked for --asic?)")
        name = _text(asic.get("market_name"))
        device_id = _text(asic.get("device_id"))
        if name is None and device_id is not None:
            name = _AMD_DEVICE_IDS.get(device_id.lower())
        if not name:
            raise ValueError(f"{where} has no asic.market_name")
        vram = entry.get("vram")
        size = vram.get("size", vram.get("vram_size")) if isinstance(vram, Mapping) else None
        mem_mib = _amd_size_mib(size, where)
        bus = entry.get("bus")
        cus = _int_or_none(asic.get("num_compute_units"))
        driver = entry.get("driver")
        index = entry.get("gpu", i)
        gpus.append(DetectedGPU(
            name=name,
            memory_total_mib=mem_mib,
            driver_version=_text(driver.get("version")) if isinstance(driver, Mapping) else None,
            pci_bus_id=_text(bus.get("bdf")) if isinstance(bus, Mapping) else None,
            index=index if isinstance(index, int) else _int_or_none(index),
            variant=match_variant(name, mem_mib, device_id=device_id, compute_units=cus),
            tool="amd-smi",
            device_id=device_id,
            compute_units=cus,
        ))
    return gpus


def _field(card: Mapping[str, Any], *names: str) -> str | None:
    """A rocm-smi field by name, case-insensitively ("Card Series" / "Card series")."""
    lower = {str(k).strip().lower(): v for k, v in card.items()}
    for name in names:
        value = _text(lower.get(name.lower()))
        if value is not None:
            return value
    return None


def parse_rocm_smi_json(text: str) -> list[DetectedGPU]:
    """Parse ``rocm-smi --showproductname --showmeminfo vram --json`` output: ``{"card0": {...}, ...}``.

    ``VRAM Total Memory (B)`` is in bytes. A "system" object (driver version) is skipped, or read
    for its cards when a release nests them there. Raises ``ValueError`` for anything else.
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"rocm-smi output is not JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, Mapping):
        raise ValueError(f"rocm-smi output is JSON but not an object of cards (got {type(data).__name__})")
    cards = {k: v for k, v in data.items() if re.fullmatch(r"card\d+", str(k))}
    system = data.get("system")
    if not cards and isinstance(system, Mapping):
        cards = {k: v for k, v in system.items() if re.fullmatch(r"card\d+", str(k))}
    if not cards and data and set(data) - {"system"}:
        raise ValueError(f"rocm-smi output has no card entries (keys: {', '.join(map(str, list(data)[:5]))})")
    driver = _field(system, "Driver version") if isinstance(system, Mapping) else None
    gpus: list[DetectedGPU] = []
    for key in sorted(cards, key=lambda k: int(str(k)[4:])):
        card = cards[key]
        if not isinstance(card, Mapping):
            raise ValueError(f"rocm-smi {key} is not an object")
        device_id = _field(card, "Card Model", "Device ID")
        if device_id is not None and not device_id.lower().startswith("0x"):
            device_id = None  # "Card Model" holds a name on some releases
        series = _field(card, "Card Series", "Marketing Name", "Card Model")
        name = series
        if device_id is not None and device_id.lower() in _AMD_DEVICE_IDS and (
                series is None or not re.search(r"MI\d{3}", series.upper()) or "MI200" in series.upper()):
            name = _AMD_DEVICE_IDS[device_id.lower()]
        if not name:
            raise ValueError(f"rocm-smi {key} has no product name (was it asked for --showproductname?)")
        total = _field(card, "VRAM Total Memory (B)")
        mem_mib = None
        if total is not None:
            if not re.fullmatch(r"\d+", total):
                raise ValueError(f"rocm-smi {key}: 'VRAM Total Memory (B)' is {total!r}, not a byte count")
            mem_mib = int(total) // MIB
        gpus.append(DetectedGPU(
            name=name,
            memory_total_mib=mem_mib,
            driver_version=driver,
            pci_bus_id=_field(card, "PCI Bus"),
            uuid=_field(card, "Unique ID"),
            index=int(str(key)[4:]),
            variant=match_variant(name, mem_mib, device_id=device_id),
            tool="rocm-smi",
            device_id=device_id,
        ))
    return gpus


# --------------------------------------------------------------------------- names -> catalog ids


def match_variant(name: str, memory_total_mib: int | None = None, *, device_id: str | None = None,
                  compute_units: int | None = None) -> str | None:
    """Map a driver name string to a catalog id (``CATALOG_IDS``), or None if not in the catalog.

    ``memory_total_mib`` decides the A100 memory size when the name does not say it, and keeps
    other-memory variants (H20 141 GB) out. ``device_id`` / ``compute_units`` (AMD tools) tell an
    MI250X from an MI250 when the name is the shared ``MI250X/MI250``.
    """
    n = name.upper().replace("_", " ")
    n = re.sub(r"^(NVIDIA|AMD|INTEL|HABANA LABS)\s+", "", n.strip())
    n = re.sub(r"\s+", " ", n)
    tokens = set(re.split(r"[\s\-]+", n))

    # ---- AMD Instinct
    if re.search(r"\bMI300X\b", n):
        return "mi300x"
    if re.search(r"\bMI325X\b", n):
        return "mi325x"
    if re.search(r"\bMI250X?\b", n):
        if re.search(r"\bMI250X\b(?!/)", n) and not re.search(r"\bMI250\b(?!X)", n):
            return "mi250x"
        # "MI250X/MI250" (or "MI250"): the MI250X only when its counts say so
        if compute_units == _MI250X_CUS_PER_GCD or (device_id or "").lower() == "0x7408":
            return "mi250x"
        return None
    # ---- Intel Gaudi (hl-smi names the card model)
    if re.search(r"\bHL-?325", n) or re.search(r"\bGAUDI ?3\b", n):
        return "gaudi3"
    if re.search(r"\bHL-?225", n) or re.search(r"\bGAUDI ?2\b", n):
        return "gaudi2"
    # ---- NVIDIA consumer and workstation
    if re.search(r"\bRTX 4090\b", n):
        if re.search(r"4090 ?D\b|LAPTOP|MOBILE", n):
            return None  # 4090 D (China) and laptop parts have other specs
        return "rtx-4090"
    if re.search(r"\bRTX 3090\b", n):
        if re.search(r"3090 ?TI\b|LAPTOP|MOBILE", n):
            return None  # the 3090 Ti has other clocks and bandwidth
        return "rtx-3090"
    if re.search(r"\bRTX 6000 ADA\b", n):
        return "rtx-6000-ada"
    if re.search(r"\bRTX A6000\b", n):
        return "rtx-a6000"
    # ---- NVIDIA data center
    if "L40S" in tokens:
        return "l40s"
    if "L40" in tokens:
        return "l40"
    if "L4" in tokens:
        return "l4"
    if "A10G" in tokens:
        return "a10g"
    if "A10" in tokens:
        return "a10"
    if "GB200" in tokens:
        return "gb200"
    if "B300" in tokens:  # "GB300" is another token and another product
        return "b300"
    if "B200" in tokens:  # "GB200" is another token and another product
        return "b200"
    if "H200" in tokens:
        return "h200-nvl" if "NVL" in tokens else "h200"
    if "H20" in tokens:
        if memory_total_mib is not None and memory_total_mib > 100 * 1024:
            return None  # the 141 GB H20 is another part
        return "h20"
    if "H800" in tokens:
        return None if "PCIE" in tokens else "h800"
    if "H100" in tokens:
        if "NVL" in tokens:
            return "h100-nvl"
        if "PCIE" in tokens:
            return "h100-pcie"
        if "HBM3" in tokens or any(t.startswith("SXM") for t in tokens):
            return "h100-sxm"
        return None
    if "A100" in tokens:
        if any(t.startswith("SXM") for t in tokens):
            form = "sxm4"
        elif "PCIE" in tokens:
            form = "pcie"
        else:
            return None
        if "80GB" in tokens:
            size = "80gb"
        elif "40GB" in tokens:
            size = "40gb"
        elif memory_total_mib is not None:
            size = "80gb" if memory_total_mib > 60 * 1024 else "40gb"
        else:
            return None
        return f"a100-{form}-{size}"
    # ---- any other name the catalog lists as an alias (hardware.json: adding a GPU is a data change)
    return hardware.catalog_id(name.strip())


# --------------------------------------------------------------------------- running the tools


def _visible_filter(gpus: list[DetectedGPU], variables: Sequence[str] = ("CUDA_VISIBLE_DEVICES",)) -> list[DetectedGPU]:
    """Keep the GPUs named by the first of ``variables`` that is set (indices or UUID prefixes)."""
    value = next((os.environ[v] for v in variables if v in os.environ), None)
    if value is None:
        return gpus
    wanted = [w.strip() for w in value.split(",") if w.strip()]
    out = []
    for w in wanted:
        for g in gpus:
            if (w.isdigit() and g.index == int(w)) or (g.uuid and g.uuid.startswith(w)):
                if g not in out:
                    out.append(g)
                break
        else:
            break  # CUDA (and HIP) stop at the first invalid entry
    return out


# ROCm's HIP runtime honours HIP_VISIBLE_DEVICES, then ROCR_VISIBLE_DEVICES, and CUDA_VISIBLE_DEVICES too
_AMD_VISIBLE = ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES")


def _run_tool(argv: Sequence[str], timeout_s: float) -> subprocess.CompletedProcess:
    """Run ``argv`` in its own session; on timeout kill the whole group and raise TimeoutExpired."""
    proc = subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()
        proc.communicate()
        raise
    return subprocess.CompletedProcess(list(argv), proc.returncode, out, err)


def _run_smi(exe: str, fields: tuple[str, ...], timeout_s: float) -> subprocess.CompletedProcess:
    return _run_tool([exe, f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"], timeout_s)


def _failure(tool: str, cp: subprocess.CompletedProcess) -> GPUDetectionError:
    msg = (cp.stderr.strip() or cp.stdout.strip() or "(no output)").splitlines()
    return GPUDetectionError(f"{tool} failed with exit code {cp.returncode}: {' | '.join(msg[:5])}")


def _detect_nvidia(exe: str, timeout_s: float) -> list[DetectedGPU]:
    fields: tuple[str, ...] = QUERY_FIELDS
    try:
        cp = _run_smi(exe, fields, timeout_s)
        if cp.returncode != 0 and "compute_cap" in (cp.stdout + cp.stderr):
            fields = _BASE_FIELDS
            cp = _run_smi(exe, fields, timeout_s)
    except subprocess.TimeoutExpired as e:
        raise GPUDetectionError(f"nvidia-smi did not answer within {timeout_s:.0f} s") from e
    except OSError as e:
        raise GPUDetectionError(f"nvidia-smi could not be run: {e}") from e
    if cp.returncode != 0:
        raise _failure("nvidia-smi", cp)
    try:
        return parse_nvidia_smi_csv(cp.stdout, fields)
    except ValueError as e:
        raise GPUDetectionError(f"unexpected nvidia-smi output: {e}") from e


def _detect_amd_tool(tool: str, exe: str, args: Sequence[str], timeout_s: float) -> list[DetectedGPU]:
    try:
        cp = _run_tool([exe, *args], timeout_s)
    except subprocess.TimeoutExpired as e:
        raise GPUDetectionError(f"{tool} did not answer within {timeout_s:.0f} s") from e
    except OSError as e:
        raise GPUDetectionError(f"{tool} could not be run: {e}") from e
    if cp.returncode != 0 and not cp.stdout.strip():
        raise _failure(tool, cp)
    parse = parse_amd_smi_json if tool == "amd-smi" else parse_rocm_smi_json
    try:  # rocm-smi can exit 0 on failure and print an error: the parsed output is the only signal
        return parse(cp.stdout)
    except ValueError as e:
        first = (cp.stdout.strip() or cp.stderr.strip() or "(no output)").splitlines()[0][:200]
        raise GPUDetectionError(f"unexpected {tool} output: {e}; it printed: {first}") from e


def detect_all(*, timeout_s: float = 20.0, respect_visible_devices: bool = True) -> list[DetectedGPU] | None:
    """Every GPU the first present tool reports (filtered by the visible-devices variables).

    The tools are tried in order: ``nvidia-smi``, ``amd-smi``, ``rocm-smi``; None when none is
    installed. A tool that is installed but fails, hangs past ``timeout_s`` or prints something
    that is not its format raises :class:`GPUDetectionError`; on AMD, a failing ``amd-smi`` falls
    back to ``rocm-smi`` when both are installed, and the error names both when both fail.
    """
    exe = shutil.which("nvidia-smi")
    if exe is not None:
        gpus = _detect_nvidia(exe, timeout_s)
        return _visible_filter(gpus) if respect_visible_devices else gpus
    tools = [(tool, path, args) for tool, args in (("amd-smi", AMD_SMI_ARGS), ("rocm-smi", ROCM_SMI_ARGS))
             if (path := shutil.which(tool)) is not None]
    if not tools:
        return None
    errors: list[str] = []
    for tool, path, args in tools:
        try:
            gpus = _detect_amd_tool(tool, path, args, timeout_s)
        except GPUDetectionError as exc:
            errors.append(str(exc))
            continue
        return _visible_filter(gpus, _AMD_VISIBLE) if respect_visible_devices else gpus
    raise GPUDetectionError("; ".join(errors))


def detect(*, timeout_s: float = 20.0) -> DetectedGPU | None:
    """The first visible GPU (with ``count`` of visible GPUs); None without a detection tool or GPUs."""
    gpus = detect_all(timeout_s=timeout_s)
    if not gpus:
        return None
    first = gpus[0]
    first.count = len(gpus)
    first.others = sorted({g.name for g in gpus[1:] if g.name != first.name})
    return first
