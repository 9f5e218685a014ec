"""The prediction format's JSON Schema (draft 2020-12, for editors with a YAML language server), generated from
the field tables in :mod:`._fields` that the validator reads, with the registry's quantities and at-parameters
and the hardware catalog's ids."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_roofline.format._fields import (
    DEFAULTS_FIELDS,
    ENGINE_FIELDS,
    PREDICTION_FIELDS,
    RESERVES_FIELDS,
    SLO_FIELDS,
    SWEEP_FIELDS,
    TABLE_FIELDS,
    THRESHOLD_FIELDS,
    TOP_FIELDS,
    WORKLOAD_FIELDS,
    XFAIL_FIELDS,
    F,
    serving_field_table,
)
from pytest_roofline.quantities import registry as qreg

__all__ = ["json_schema"]


def _schema_of(fields: Mapping[str, F], extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    props: dict[str, Any] = {}
    for name, f in fields.items():
        s: dict[str, Any] = {"description": f.doc}
        if f.kind == "str":
            s["type"] = "string"
        elif f.kind in ("number", "int"):
            s["type"] = ["number", "string"] if f.kind == "number" else ["integer", "string"]
        elif f.kind == "bool":
            s["type"] = "boolean"
        elif f.kind == "map":
            s["type"] = "object"
        elif f.kind == "list":
            s["type"] = "array"
        elif f.kind == "value":
            s["type"] = ["string", "number"]
        if f.enum:
            s["enum"] = list(f.enum)
        props[name] = s
    if extra:
        for k, v in extra.items():
            props[k] = {**props.get(k, {}), **v}
    out = {"type": "object", "additionalProperties": False, "properties": props}
    req = [n for n, f in fields.items() if f.required]
    if req:
        out["required"] = req
    return out


def json_schema() -> dict[str, Any]:
    """A JSON Schema (draft 2020-12) of the prediction format, for editors with a YAML language server."""
    from pytest_roofline.model import hardware

    quantity_names = sorted(qreg.QUANTITIES)
    hw_ids = sorted(hardware.CATALOG)
    at_props = {}
    for p in qreg.AT_PARAMS.values():
        s: dict[str, Any] = {"description": p.description}
        if p.dimension == "lengths":
            s["type"] = "array"
            s["items"] = {"type": "integer"}
        elif p.choices:  # one choice, or a list of them (one test each)
            s["anyOf"] = [{"enum": list(p.choices)}, {"type": "array", "items": {"enum": list(p.choices)}}]
        else:  # a value, a list of values (one test each), or 'every' for a sweep's points
            s["type"] = ["number", "string", "array"]
        at_props[p.name] = s
    prediction = _schema_of(PREDICTION_FIELDS, {
        "quantity": {"enum": quantity_names},
        "at": {"type": "object", "additionalProperties": False, "properties": at_props},
        "xfail": {"oneOf": [{"type": "string"}, _schema_of(XFAIL_FIELDS)]},
        "table": _schema_of(TABLE_FIELDS, {"quantities": {"type": "array", "items": {"enum": quantity_names}}}),
        "predicted": {"type": ["string", "number", "boolean", "null"]},
        "tolerance": {"type": ["string", "array"]},
        "math_tolerance": {"type": ["string", "array"]},
        "drift": {"type": "string"},
    })
    prediction["anyOf"] = [{"required": ["quantity", "predicted"]}, {"required": ["table"]}]
    prediction["required"] = ["id"]
    hw_schema = {"anyOf": [{"type": "string", "enum": hw_ids}, {"type": "string"},
                           {"type": "object", "required": ["id"], "properties": {"id": {"enum": hw_ids}}}]}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://pytest-roofline.invalid/predictions.schema.json",
        "title": "pytest-roofline prediction file",
        **_schema_of(TOP_FIELDS, {
            "hardware": hw_schema,
            "model": {"type": ["string", "object"]},
            "engine": _schema_of(ENGINE_FIELDS, {"reserves": _schema_of(RESERVES_FIELDS)}),
            "workload": _schema_of(WORKLOAD_FIELDS, {k: {"type": ["integer", "string", "object"]}
                                                     for k in ("input_len", "output_len")}),
            "sweep": _schema_of(SWEEP_FIELDS, {"processes": {"anyOf": [  # a whole number >= 1, or auto
                {"type": "integer", "minimum": 1}, {"type": "string", "pattern": "^(auto|[1-9][0-9]*)$"}]}}),
            "slo": _schema_of(SLO_FIELDS),
            "defaults": _schema_of(DEFAULTS_FIELDS),
            "thresholds": _schema_of(THRESHOLD_FIELDS),
            "serving": _schema_of(serving_field_table()),
            "predictions": {"type": "array", "items": prediction},
        }),
    }
