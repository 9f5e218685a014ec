"""The shipped JSON Schema of the prediction format: generated from spec.py's field tables, valid, and
satisfied by the shipped prediction files (as an editor's YAML language server reads them)."""

from __future__ import annotations

import json

import jsonschema
import pytest
import yaml
from support.paths import PREDICTIONS, REPO

from pytest_roofline.format import spec

SHIPPED = REPO / "pytest_roofline" / "schema" / "predictions.schema.json"
REGENERATE = "roofline schema -o pytest_roofline/schema/predictions.schema.json"
PREDICTION_FILES = ["day3.yaml", "batching-and-throughput.yaml"]


@pytest.fixture(scope="module")
def schema() -> dict:
    return json.loads(SHIPPED.read_text(encoding="utf-8"))


def test_shipped_schema_is_regenerated_from_spec(schema):
    assert schema == spec.json_schema(), f"the shipped schema is stale: run `{REGENERATE}`"


def test_schema_is_a_valid_draft_2020_12_schema(schema):
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)


def test_schema_names_every_field_the_loader_accepts(schema):
    assert set(schema["properties"]) == set(spec.TOP_FIELDS)
    item = schema["properties"]["predictions"]["items"]
    assert set(item["properties"]) == set(spec.PREDICTION_FIELDS)
    assert schema["additionalProperties"] is False and item["additionalProperties"] is False
    from pytest_roofline.quantities.registry import AT_PARAMS, QUANTITIES

    assert set(item["properties"]["quantity"]["enum"]) == set(QUANTITIES)
    assert set(item["properties"]["at"]["properties"]) == set(AT_PARAMS)


@pytest.mark.parametrize("name", PREDICTION_FILES)
def test_shipped_prediction_files_validate(schema, name):
    data = yaml.safe_load((PREDICTIONS / name).read_text(encoding="utf-8"))
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(data), key=lambda e: list(e.absolute_path))
    assert [f"{list(e.absolute_path)}: {e.message}" for e in errors] == []


def test_every_shipped_prediction_file_validates(schema):
    validator = jsonschema.Draft202012Validator(schema)
    for path in sorted(PREDICTIONS.glob("*.yaml")):
        errors = list(validator.iter_errors(yaml.safe_load(path.read_text(encoding="utf-8"))))
        assert [e.message for e in errors] == [], path.name


@pytest.mark.parametrize("snippet,path", [
    ({"hardware": "h100-sxm", "model": "x", "predictions": [], "hardwre": 1}, []),
    ({"hardware": "h100-sxm", "model": "x", "predictions": [{"id": "a", "quantity": "ridge_pont",
                                                             "predicted": 1}]}, ["predictions", 0, "quantity"]),
    ({"hardware": "h100-sxm", "model": "x", "predictions": [{"id": "a", "quantity": "ridge_point",
                                                             "predicted": 1, "tolerence": "5%"}]}, ["predictions", 0]),
    ({"hardware": "h100-sxm", "model": "x", "predictions": [{"id": "a"}]}, ["predictions", 0]),
    ({"model": "x", "predictions": []}, []),
])
def test_schema_rejects_what_the_loader_rejects(schema, snippet, path):
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(snippet))
    assert errors, snippet
    assert any(list(e.absolute_path) == path for e in errors), [(list(e.absolute_path), e.message) for e in errors]


def test_at_parameters_take_a_list_as_the_loader_does(schema):
    # batching-and-throughput.yaml writes at: {batch: [1, 2, 4, ...]} (one test per value); the loader expands any
    # at-parameter given as a list, so the schema must allow it too
    doc = {"hardware": "h100-sxm", "model": "x", "predictions": [
        {"id": "a", "quantity": "decode_bound", "at": {"batch": [1, 256]}, "predicted": "memory"},
        {"id": "b", "quantity": "goodput", "at": {"percentile": ["p50", "p99"]}, "predicted": "1 tok/s"},
    ]}
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(doc)) == []
    loaded = spec.loads_spec("hardware: h100-sxm\nmodel: llama-3.1-8b\npredictions:\n"
                             "  - id: a\n    quantity: decode_bound\n    at: {batch: [1, 256]}\n    predicted: memory\n"
                             "  - id: b\n    quantity: goodput\n    at: {percentile: [p50, p99]}\n"
                             "    predicted: 1 tok/s\n")
    assert [p.id for p in loaded.predictions] == ["a[batch=1]", "a[batch=256]", "b[percentile=p50]",
                                                  "b[percentile=p99]"]
    bad = {"hardware": "h100-sxm", "model": "x", "predictions": [
        {"id": "b", "quantity": "goodput", "at": {"percentile": ["p42"]}, "predicted": "1 tok/s"}]}
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(bad))
