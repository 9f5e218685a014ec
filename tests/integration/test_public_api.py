"""The package's public entry points: one ``__all__``, every name resolves, importing the model stays light (in a
fresh interpreter), and the ``roofline`` console script is installed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest_roofline


def test_every_public_name_resolves() -> None:
    for name in pytest_roofline.__all__:
        assert getattr(pytest_roofline, name) is not None, name
    assert issubclass(pytest_roofline.SpecError, pytest_roofline.RooflineError)
    assert pytest_roofline.analytical.ridge_flop_per_byte(312e12, 2.039e12) == 312e12 / 2.039e12


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        pytest_roofline.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:  # pragma: no cover
        raise AssertionError("expected AttributeError")


def test_the_model_layer_imports_no_measurement_stack() -> None:
    code = ("import sys, pytest_roofline\n"
            "s = pytest_roofline.build_setup(hardware_ref='a100-sxm4-80gb', model_ref='llama-3.1-8b')\n"
            "print(sorted(m for m in ('httpx', 'numpy', 'prometheus_client', 'pytest') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_loading_the_plugin_imports_no_numpy_or_http_stack() -> None:
    """The plugin loads in every pytest run of every project it is installed in: the measurement stack (numpy,
    httpx, prometheus_client) is imported only when something is measured or a schedule is drawn."""
    code = ("import sys, pytest_roofline.pytest_plugin.plugin\n"
            "print(sorted(m for m in ('httpx', 'numpy', 'prometheus_client') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_tiny_model_resolves_without_the_measure_layer():
    import subprocess
    import sys

    code = ("import sys\n"
            "from pytest_roofline.model.setup import build_setup\n"
            "s = build_setup(hardware_ref='cpu', model_ref='roofline-tiny')\n"
            "assert s.model.param_count() == 372352, s.model.param_count()\n"
            "bad = [m for m in sys.modules if m.startswith('pytest_roofline.measure')]\n"
            "assert not bad, bad\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_console_script_is_installed():
    exe = Path(sys.executable).parent / "roofline"
    assert exe.exists(), "the roofline console script is not installed (pip install -e .)"
    out = subprocess.run([str(exe), "predict", "--hardware", "a100-sxm4-80gb", "--model", "qwen3-8b", "--context",
                          "1000", "--batch", "16", "--json"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    [row] = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    assert round(row["throughput_tok_per_s"], 1) == 1740.8
