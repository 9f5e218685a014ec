"""The calibration file: serving-model constants fitted by ``roofline calibrate``, with what they were fitted on.

A YAML document (:class:`Calibration`) that records the hardware id, model, engine name and version, engine
limits and workload the constants were fitted on, the fitted values and their 1σ uncertainties, the points and
their residuals, and the date. :meth:`Calibration.mismatches` names what differs when it is applied to another
setup (a warning for the caller to show, never a failure); :meth:`Calibration.serving_constants` puts its fitted
values into that setup's defaults. The fit that makes one is :mod:`pytest_roofline.model.calibration`
(``calibration_from_fit``). Files are read through :mod:`pytest_roofline.bounded` (a hand-edited file is someone
else's document).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pytest_roofline import bounded
from pytest_roofline.errors import BoundedInputError, CalibrationError
from pytest_roofline.model import serving
from pytest_roofline.model.setup import Setup

__all__ = ["SCHEMA", "SCHEMA_VERSION", "Calibration", "dump_calibration", "load_calibration", "round_sig"]

SCHEMA = "pytest-roofline/calibration"
SCHEMA_VERSION = 1


def round_sig(v: float, digits: int = 6) -> float:
    return float(f"{v:.{digits}g}")


@dataclass(frozen=True)
class Calibration:
    """A calibration file's content: what was fitted, on what, with what uncertainty."""

    hardware_id: str
    model_name: str
    engine_name: str
    engine_version: str | None
    input_len: int
    output_len: int
    constants: Mapping[str, float]  # every ServingConstants field (fitted ones replaced)
    fitted: tuple[str, ...]
    uncertainty: Mapping[str, float]  # 1σ of each fitted constant, in its unit
    points: tuple[Mapping[str, Any], ...] = ()  # PointFit.to_dict() of each point it was fitted on
    engine_limits: Mapping[str, int] = field(default_factory=dict)  # max_num_seqs, max_num_batched_tokens, ...
    device: str = "cuda"
    weight_dtype: str = "bf16"
    kv_dtype: str = "bf16"
    created_at: str = ""
    sources: tuple[str, ...] = ()  # results files the points came from
    rms_log_residual: float | None = None
    notes: str = ""

    def serving_constants(self, setup: Setup) -> serving.ServingConstants:
        """The serving model's constants for ``setup``: its own defaults with this file's *fitted* values put in
        (the others were defaults when the file was made, and stay the defaults of the setup it is used on)."""
        base = serving.default_constants(setup)
        known = base.to_dict()
        return base.with_fitted(**{k: float(self.constants[k]) for k in self.fitted if k in known})

    def mismatches(self, setup: Setup) -> list[str]:
        """What differs between the setup this was fitted on and ``setup`` (empty: the same)."""
        out: list[str] = []

        def cmp(what: str, mine: Any, theirs: Any) -> None:
            if mine is not None and theirs is not None and str(mine) != str(theirs):
                out.append(f"{what}: calibrated on {mine}, used on {theirs}")

        cmp("hardware", self.hardware_id, setup.hardware.id)
        cmp("model", self.model_name, setup.model.name)
        cmp("engine", self.engine_name, setup.engine_name)
        cmp("engine version", self.engine_version, setup.engine_version)
        cmp("device", self.device, setup.device)
        cmp("weight dtype", self.weight_dtype, setup.weight_dtype)
        cmp("kv dtype", self.kv_dtype, setup.kv_dtype)
        cmp("workload input_len", self.input_len, setup.input_len)
        cmp("workload output_len", self.output_len, setup.output_len)
        for key in ("max_num_seqs", "max_num_batched_tokens", "block_size", "tensor_parallel_size"):
            cmp(key, self.engine_limits.get(key), getattr(setup, key, None))
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA, "schema_version": SCHEMA_VERSION, "created_at": self.created_at,
            "hardware": self.hardware_id, "device": self.device, "model": self.model_name,
            "dtypes": {"weights": self.weight_dtype, "kv_cache": self.kv_dtype},
            "engine": {"name": self.engine_name, "version": self.engine_version, **dict(self.engine_limits)},
            "workload": {"input_len": self.input_len, "output_len": self.output_len},
            "constants": {k: round_sig(float(v)) for k, v in self.constants.items()},
            "fitted": list(self.fitted),
            "uncertainty": {k: round_sig(float(v), 3) for k, v in self.uncertainty.items()},
            "rms_log_residual": None if self.rms_log_residual is None else round_sig(self.rms_log_residual, 4),
            "points": [dict(p) for p in self.points],
            "sources": list(self.sources),
            "notes": self.notes,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, file: str = "<calibration>") -> Calibration:
        if not isinstance(d, Mapping):
            raise CalibrationError(f"{file}: a calibration file is a mapping (schema {SCHEMA})")
        if d.get("schema") != SCHEMA:
            raise CalibrationError(f"{file}: not a calibration file (schema is {d.get('schema')!r}, "
                                   f"expected {SCHEMA!r}); make one with `roofline calibrate`")
        if int(d.get("schema_version", 0)) > SCHEMA_VERSION:
            raise CalibrationError(f"{file}: schema_version {d.get('schema_version')} is newer than this "
                                   f"pytest-roofline reads ({SCHEMA_VERSION})")
        try:
            eng = dict(d.get("engine") or {})
            wl = dict(d.get("workload") or {})
            dt = dict(d.get("dtypes") or {})
            constants = {str(k): float(v) for k, v in dict(d["constants"]).items()}
            fitted = tuple(str(x) for x in d.get("fitted") or ())
            missing = [n for n in fitted if n not in constants]
            if missing:
                raise CalibrationError(f"{file}: fitted constant(s) {', '.join(missing)} have no value")
            return cls(
                hardware_id=str(d["hardware"]), model_name=str(d["model"]),
                engine_name=str(eng.pop("name", "vllm")),
                engine_version=None if eng.get("version") is None else str(eng.pop("version")),
                input_len=int(wl["input_len"]), output_len=int(wl["output_len"]),
                constants=constants, fitted=fitted,
                uncertainty={str(k): float(v) for k, v in dict(d.get("uncertainty") or {}).items()},
                points=tuple(dict(p) for p in d.get("points") or ()),
                engine_limits={str(k): int(v) for k, v in eng.items() if k != "version" and v is not None},
                device=str(d.get("device", "cuda")), weight_dtype=str(dt.get("weights", "bf16")),
                kv_dtype=str(dt.get("kv_cache", "bf16")), created_at=str(d.get("created_at", "")),
                sources=tuple(str(s) for s in d.get("sources") or ()),
                rms_log_residual=None if d.get("rms_log_residual") is None else float(d["rms_log_residual"]),
                notes=str(d.get("notes") or ""),
            )
        except CalibrationError:
            raise
        except (KeyError, TypeError, ValueError) as exc:
            raise CalibrationError(f"{file}: malformed calibration file ({type(exc).__name__}: {exc})") from None


def dump_calibration(cal: Calibration, path: str | Path) -> None:
    text = ("# pytest-roofline calibration: serving-model constants fitted by `roofline calibrate`\n"
            + yaml.safe_dump(cal.to_dict(), sort_keys=False, allow_unicode=True, width=110))
    Path(path).write_text(text, encoding="utf-8")


def load_calibration(path: str | Path) -> Calibration:
    """Read a calibration file; :class:`CalibrationError` with the file name when it cannot be used."""
    p = Path(path)
    try:  # a FIFO, /dev/zero, a file over 4 MiB, an alias bomb, deep nesting: refused (pytest_roofline.bounded)
        data = bounded.load_yaml_file(p, what="the calibration file", max_bytes=4 * bounded.MIB)
    except BoundedInputError as exc:
        raise CalibrationError(str(exc)) from None
    except yaml.YAMLError as exc:
        raise CalibrationError(f"{p}: not valid YAML ({exc})") from None
    return Calibration.from_dict(data, file=str(p))
