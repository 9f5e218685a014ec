"""Fake GPU tools on PATH: shell scripts named ``nvidia-smi``, ``amd-smi`` or ``rocm-smi`` that print what a real
driver prints (recorded lines, in the tests that use them), so device detection runs its real subprocess path."""

from __future__ import annotations

import os
import stat
from pathlib import Path

#: what ``nvidia-smi --query-gpu=index,name,memory.total,driver_version,pci.bus_id,uuid,compute_cap
#: --format=csv,noheader,nounits`` prints on an A100 SXM4 80GB (the parser is tested on such lines in test_gpu.py)
A100_SXM4_SMI_LINE = "0, NVIDIA A100-SXM4-80GB, 81920, 550.54.15, 00000000:07:00.0, GPU-1234, 8.0"


def fake_tools(folder: Path, *, system_path: bool = True, **scripts: str) -> str:
    """Write ``folder/bin`` holding only the named tools (``nvidia_smi="echo ..."`` becomes an executable
    ``nvidia-smi`` running that shell body) and return a PATH for it: the folder, then ``/usr/bin`` and ``/bin``
    unless ``system_path`` is false (a PATH that holds the fakes alone)."""
    bin_dir = folder / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, body in scripts.items():
        exe = bin_dir / name.replace("_", "-")
        exe.write_text("#!/bin/sh\n" + body)
        exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return os.pathsep.join([str(bin_dir), "/usr/bin", "/bin"] if system_path else [str(bin_dir)])


def fake_smi(folder: Path, line: str | None) -> str:
    """A PATH whose ``nvidia-smi`` prints ``line`` (what the query prints on one GPU), or where there is no
    ``nvidia-smi`` at all when ``line`` is None (beside ``/usr/bin`` and ``/bin``)."""
    return fake_tools(folder, **({} if line is None else {"nvidia_smi": f"echo '{line}'\n"}))


def cat(text: str) -> str:
    """A shell body that prints ``text`` as it is (a here-document: no quoting or expansion)."""
    return f"cat <<'JSON_END'\n{text}\nJSON_END\n"
