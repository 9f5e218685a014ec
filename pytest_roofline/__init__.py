"""pytest-roofline: performance predictions as pytest assertions.

The names in ``__all__`` are the public API; every other module and name is internal and may change. They are
resolved on first use (PEP 562), so ``import pytest_roofline`` stays as light as the layer a caller needs: the
analytical model never drags in the measurement path's HTTP client. The layers are drawn in
``docs/architecture.md``.

    >>> from pytest_roofline import build_setup, load_spec
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: public name -> the module that defines it
_EXPORTS: dict[str, str] = {
    # errors (one tree under RooflineError)
    **{name: "pytest_roofline.errors" for name in (
        "RooflineError", "UnitError", "ToleranceError", "HardwareError", "UnknownHardwareError",
        "ModelArchError", "UnknownModelError", "SetupError", "SimulationError", "CalibrationError", "SpecError",
        "NotMeasured", "ResultsError", "MeasureError", "PointError", "EngineError", "EndpointError",
        "PredictionMismatch")},
    # units
    "parse_value": "pytest_roofline.units",
    "format_value": "pytest_roofline.units",
    # the model
    "HardwareSpec": "pytest_roofline.model.hardware",
    "ModelArch": "pytest_roofline.model.architecture",
    "Setup": "pytest_roofline.model.setup",
    "build_setup": "pytest_roofline.model.setup",
    "analytical": "pytest_roofline.model.analytical",  # the module itself
    # the prediction format
    "Spec": "pytest_roofline.format.spec",
    "Prediction": "pytest_roofline.format.spec",
    "load_spec": "pytest_roofline.format.spec",
    "loads_spec": "pytest_roofline.format.spec",
    "json_schema": "pytest_roofline.format.spec",
    "parse_tolerance": "pytest_roofline.format.tolerance",
    # results and scoring
    "load_results": "pytest_roofline.measure.results",
    "Verdict": "pytest_roofline.scoring",
    "score": "pytest_roofline.scoring",
}

__all__ = ["__version__", *_EXPORTS]

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from pytest_roofline.errors import *  # noqa: F403
    from pytest_roofline.format.spec import Prediction, Spec, json_schema, load_spec, loads_spec
    from pytest_roofline.format.tolerance import parse_tolerance
    from pytest_roofline.measure.results import load_results
    from pytest_roofline.model import analytical
    from pytest_roofline.model.architecture import ModelArch
    from pytest_roofline.model.hardware import HardwareSpec
    from pytest_roofline.model.setup import Setup, build_setup
    from pytest_roofline.scoring import Verdict, score
    from pytest_roofline.units import format_value, parse_value


def __getattr__(name: str) -> Any:
    try:
        module = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'pytest_roofline' has no attribute {name!r}") from None
    mod = importlib.import_module(module)
    value = mod if module.endswith("." + name) else getattr(mod, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
