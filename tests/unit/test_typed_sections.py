"""The prediction file's structure, typed (issue 19, continued in issue 24): ``Spec.engine`` and ``Spec.workload``
are typed records (one field per key of their field tables) that still read as the mappings of the keys the file
wrote; a verdict's ``model_source`` is a Literal; ``engine.reserves`` is described key by key in the JSON Schema."""

from __future__ import annotations

import dataclasses
import json
from typing import get_args, get_type_hints

from pytest_roofline.format import _fields
from pytest_roofline.format.spec import EngineSection, WorkloadSection, json_schema, loads_spec
from pytest_roofline.scoring import Verdict

FILE = """\
hardware: h100-sxm
model: llama-3.1-8b
engine:
  version: "0.26.0"
  entrypoint: llm
  args: {max_num_seqs: 64}
  reserves: {activation: 1 GiB}
workload: {input_len: 512, output_len: {dist: uniform, min: 64, max: 192}, seed: 7}
predictions:
  - id: ridge
    quantity: ridge_point
    predicted: 295.2 FLOP/byte
"""


def _fields_of(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)} - {"written"}


def test_every_key_of_a_section_has_a_typed_field() -> None:
    assert set(_fields.ENGINE_FIELDS) == _fields_of(EngineSection)
    # a length distribution keeps its parameters beside its mean (format/workloads.py)
    assert set(_fields.WORKLOAD_FIELDS) | {"input_dist", "output_dist"} == _fields_of(WorkloadSection)
    assert _fields.Entrypoint in get_args(get_type_hints(EngineSection)["entrypoint"])  # a Literal, or None
    assert _fields.Api in get_args(get_type_hints(WorkloadSection)["api"])


def test_a_loaded_file_has_typed_sections_that_read_as_its_keys() -> None:
    spec = loads_spec(FILE)
    assert isinstance(spec.engine, EngineSection) and isinstance(spec.workload, WorkloadSection)
    assert spec.engine.version == "0.26.0" and spec.engine.entrypoint == "llm"
    assert spec.engine.args == {"max_num_seqs": 64} and spec.engine.reserves == {"activation": 2**30}
    assert spec.engine.python is None and "python" not in spec.engine  # not written: absent from the mapping
    assert dict(spec.engine) == {"name": "vllm", "version": "0.26.0", "entrypoint": "llm",
                                 "args": {"max_num_seqs": 64}, "reserves": {"activation": 2**30}}
    assert spec.workload.input_len == 512 and spec.workload.seed == 7
    assert spec.workload.output_len == 128 and spec.workload.output_dist == {"dist": "uniform", "min": 64, "max": 192}
    assert spec.workload == {"input_len": 512, "output_len": 128.0, "seed": 7,
                             "output_dist": {"dist": "uniform", "min": 64, "max": 192}}
    json.dumps({"engine": spec.engine.to_dict(), "workload": dict(spec.workload)})  # JSON-ready as plain dicts


def test_a_file_without_the_sections_gets_empty_ones() -> None:
    spec = loads_spec("hardware: h100-sxm\nmodel: llama-3.1-8b\npredictions:\n  - id: r\n    quantity: ridge_point\n"
                      "    predicted: 295.2 FLOP/byte\n")
    assert dict(spec.engine) == {"name": "vllm"} and dict(spec.workload) == {} and spec.workload.api is None


def test_model_source_is_a_literal() -> None:
    assert set(get_args(get_type_hints(Verdict)["model_source"])) == {"", "roofline", "serving"}


def test_engine_reserves_are_described_in_the_json_schema() -> None:
    reserves = json_schema()["properties"]["engine"]["properties"]["reserves"]
    assert set(reserves["properties"]) == set(_fields.RESERVES_FIELDS) == {"activation", "non_torch", "cuda_graphs"}
    assert reserves["additionalProperties"] is False


def test_engine_args_written_with_hyphens_are_the_underscored_arguments() -> None:
    # vLLM's --gpu-memory-utilization is stored as gpu_memory_utilization: a file copied from a command line must
    # size the same KV pool, not the default 0.9's (a 0.5 written with hyphens was ignored by the model before)
    body = ("hardware: a100-sxm4-80gb\nmodel: llama-3.1-8b\nengine:\n  version: \"0.10.0\"\n  args:\n"
            "    {args}\npredictions:\n  - id: kv\n    quantity: kv_cache_tokens\n    predicted: 196,720\n")
    hyphens = loads_spec(body.format(args="{gpu-memory-utilization: 0.5, max-num-seqs: 64, enforce_eager: false}"))
    underscores = loads_spec(body.format(args="{gpu_memory_utilization: 0.5, max_num_seqs: 64, enforce_eager: false}"))
    assert hyphens.engine.args == underscores.engine.args == {"gpu_memory_utilization": 0.5, "max_num_seqs": 64,
                                                               "enforce_eager": False}


def test_one_engine_arg_under_both_spellings_is_refused_at_the_second() -> None:
    import pytest

    from pytest_roofline.errors import SpecError

    text = ("hardware: a100-sxm4-80gb\nmodel: llama-3.1-8b\nengine:\n  args:\n    max-num-seqs: 64\n"
            "    max_num_seqs: 32\npredictions:\n  - id: r\n    quantity: ridge_point\n    predicted: 200 FLOP/byte\n")
    with pytest.raises(SpecError, match=r"engine.args.max_num_seqs is engine.args.max-num-seqs again") as e:
        loads_spec(text, file="p.yaml")
    assert e.value.line == 6
