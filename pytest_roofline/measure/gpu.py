"""Detect the GPU with ``nvidia-smi`` and map its name to a hardware-catalog variant id.

``nvidia-smi --query-gpu=... --format=csv,noheader,nounits`` prints one line per GPU, fields in
the order asked, ``memory.total`` in MiB (``nounits``). Name strings differ by form factor, e.g.
``NVIDIA A100-SXM4-80GB`` / ``NVIDIA A100 80GB PCIe`` / ``NVIDIA A100-PCIE-40GB`` and
``NVIDIA H100 80GB HBM3`` (SXM) / ``NVIDIA H100 PCIe`` / ``NVIDIA H100 NVL``; older drivers
omit the ``NVIDIA `` prefix (``A100-SXM4-40GB``).
"""

from __future__ import annotations

import csv
import io
import os
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass, field

from pytest_roofline.errors import GPUDetectionError
from pytest_roofline.units import MIB

__all__ = [
    "DetectedGPU",
    "GPUDetectionError",
    "QUERY_FIELDS",
    "CATALOG_IDS",
    "detect",
    "detect_all",
    "parse_nvidia_smi_csv",
    "match_variant",
]

# Fields asked of nvidia-smi, in order. compute_cap needs driver >= ~510; detect() retries
# without it when the driver rejects the field.
QUERY_FIELDS = ("index", "name", "memory.total", "driver_version", "pci.bus_id", "uuid", "compute_cap")
_BASE_FIELDS = QUERY_FIELDS[:-1]

CATALOG_IDS = (
    "a100-sxm4-40gb", "a100-sxm4-80gb", "a100-pcie-40gb", "a100-pcie-80gb",
    "h100-sxm", "h100-pcie", "h100-nvl", "h200", "h200-nvl", "b200",
    "l4", "l40s", "rtx-4090", "mi300x",
)


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


def match_variant(name: str, memory_total_mib: int | None = None) -> str | None:
    """Map a driver name string to a catalog id (``CATALOG_IDS``), or None if not in the catalog.

    ``memory_total_mib`` decides the A100 memory size when the name does not say it.
    """
    n = name.upper().replace("_", " ")
    n = re.sub(r"^(NVIDIA|AMD)\s+", "", n.strip())
    n = re.sub(r"\s+", " ", n)
    tokens = set(re.split(r"[\s\-]+", n))

    if re.search(r"\bMI300X\b", n):
        return "mi300x"
    if re.search(r"\bRTX 4090\b", n):
        if re.search(r"4090 ?D\b|LAPTOP|MOBILE", n):
            return None  # 4090 D (China) and laptop parts have other specs
        return "rtx-4090"
    if "L40S" in tokens:
        return "l40s"
    if "L4" in tokens:
        return "l4"
    if "B200" in tokens:  # "GB200" is another token and another product
        return "b200"
    if "H200" in tokens:
        return "h200-nvl" if "NVL" in tokens else "h200"
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
    return None


def _visible_filter(gpus: list[DetectedGPU]) -> list[DetectedGPU]:
    """Keep the GPUs named by CUDA_VISIBLE_DEVICES (indices or UUID prefixes), if it is set."""
    cvd = os.environ.get("CUDA_VISIBLE_DEVICES")
    if cvd is None:
        return gpus
    wanted = [w.strip() for w in cvd.split(",") if w.strip()]
    out = []
    for w in wanted:
        for g in gpus:
            if (w.isdigit() and g.index == int(w)) or (g.uuid and g.uuid.startswith(w)):
                if g not in out:
                    out.append(g)
                break
        else:
            break  # CUDA stops at the first invalid entry
    return out


def _run_smi(exe: str, fields: tuple[str, ...], timeout_s: float) -> subprocess.CompletedProcess:
    return subprocess.run(
        [exe, f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"],
        capture_output=True, text=True, timeout=timeout_s,
    )


def detect_all(*, timeout_s: float = 20.0, respect_visible_devices: bool = True) -> list[DetectedGPU] | None:
    """Every GPU nvidia-smi reports (filtered by CUDA_VISIBLE_DEVICES); None if nvidia-smi is absent.

    Raises GPUDetectionError when nvidia-smi exists but fails.
    """
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
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
        msg = (cp.stderr.strip() or cp.stdout.strip() or "(no output)").splitlines()
        raise GPUDetectionError(
            f"nvidia-smi failed with exit code {cp.returncode}: {' | '.join(msg[:5])}")
    try:
        gpus = parse_nvidia_smi_csv(cp.stdout, fields)
    except ValueError as e:
        raise GPUDetectionError(f"unexpected nvidia-smi output: {e}") from e
    return _visible_filter(gpus) if respect_visible_devices else gpus


def detect(*, timeout_s: float = 20.0) -> DetectedGPU | None:
    """The first visible GPU (with ``count`` of visible GPUs); None without nvidia-smi or GPUs."""
    gpus = detect_all(timeout_s=timeout_s)
    if not gpus:
        return None
    first = gpus[0]
    first.count = len(gpus)
    first.others = sorted({g.name for g in gpus[1:] if g.name != first.name})
    return first
