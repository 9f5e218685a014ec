"""Datasets and length files read in bounded memory and linear time, with one clear error for a bad file (issue 23,
cases 9.40, 9.42, 9.43, 9.45, 9.46, 9.47): not UTF-8, nested 100,000 deep, an 8 GiB sparse file, a huge output
length, a tokenizer that cannot load, a prompt longer than max_model_len. The dataset is parsed in one place,
``format.workloads.DatasetFile``, for the prediction file's check and for the load generator."""

from __future__ import annotations

import hashlib
import inspect
import json
import tracemalloc
from pathlib import Path

import pytest
from support.specs import tiny_cpu_spec

from pytest_roofline.errors import PointError, SpecError, WorkloadError
from pytest_roofline.format import workloads as fw
from pytest_roofline.format.spec import load_spec
from pytest_roofline.measure import sweep
from pytest_roofline.measure.loadgen import datasets as mw
from pytest_roofline.model import workload as wl


def _spec(tmp_path: Path, workload: str) -> Path:
    f = tmp_path / "w.yaml"
    f.write_text(tiny_cpu_spec(workload, concurrency=[1, 2], requests=8))
    return f


@pytest.mark.parametrize(
    "name, data, where",
    [
        ("p.jsonl", b'{"prompt": "one"}\n{"prompt": "tw\xff\xfeo"}\n', "p.jsonl:2: byte 0xff at column 15"),
        ("p.json", b'[{"conversations": [{"value": "a\xff"}]}]', "p.json:1: byte 0xff at column 33"),
        ("p.json", '[{"conversations": []}]'.encode("utf-16"), "UTF-16"),
    ],
)
def test_a_dataset_that_is_not_utf8_is_a_spec_error_naming_file_and_line(tmp_path, name, data, where):
    (tmp_path / name).write_bytes(data)
    with pytest.raises(SpecError) as e:  # was UnicodeDecodeError, a traceback
        load_spec(_spec(tmp_path, f"  dataset: {{path: {name}}}\n"))
    assert where in str(e.value) and e.value.line == 5, str(e.value)


def test_a_length_file_that_is_not_utf8_is_a_spec_error(tmp_path):
    (tmp_path / "lens.txt").write_bytes(b"12\n\xff\xfe\n")
    with pytest.raises(SpecError, match=r"lens.txt:2: byte 0xff at column 1 is not UTF-8"):
        load_spec(_spec(tmp_path, "  output_len: {dist: file, path: lens.txt}\n"))


@pytest.mark.parametrize(
    "name, text",
    [
        ("p.jsonl", '{"prompt": "one"}\n' + "[" * 100_000 + "]" * 100_000 + "\n"),
        ("p.json", "[" * 100_000 + "]" * 100_000),
        ("lens.txt", "[" * 100_000 + "]" * 100_000),
    ],
)
def test_deep_nesting_is_a_spec_error_not_a_recursion_error(tmp_path, name, text):
    (tmp_path / name).write_text(text)
    field = "  output_len: {dist: file, path: lens.txt}\n" if name == "lens.txt" else f"  dataset: {{path: {name}}}\n"
    with pytest.raises(SpecError, match="nest more than 64 levels"):
        load_spec(_spec(tmp_path, field))


def test_a_jsonl_dataset_is_streamed_in_a_lines_memory(tmp_path):
    # 5,000 entries of ~1 KB (5 MB): read whole (text, its lines and the entries) it took > 15 MB; streamed, the
    # check holds one line at a time
    p = tmp_path / "big.jsonl"
    line = json.dumps({"prompt": "x" * 1000, "output_len": 8}) + "\n"
    p.write_text(line * 5_000)
    f = fw.DatasetFile(p, "jsonl")
    tracemalloc.start()
    try:
        assert f.count() == 5_000
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000, peak
    assert f.sha256 == hashlib.sha256(p.read_bytes()).hexdigest()


def test_sparse_8gib_dataset_and_length_file_are_refused_without_reading(tmp_path):
    for name in ("big.jsonl", "big.json", "lens.txt"):
        with open(tmp_path / name, "wb") as fh:
            fh.truncate(8 << 30)
    with pytest.raises(SpecError, match="big.jsonl:1: a line longer than 64 MiB"):
        load_spec(_spec(tmp_path, "  dataset: {path: big.jsonl}\n"))
    with pytest.raises(SpecError, match="larger than 1,024 MiB"):
        load_spec(_spec(tmp_path, "  dataset: {path: big.json, format: sharegpt}\n"))
    with pytest.raises(SpecError, match="larger than 64 MiB"):
        load_spec(_spec(tmp_path, "  output_len: {dist: file, path: lens.txt}\n"))


def test_an_output_length_no_context_holds_is_refused(tmp_path):
    (tmp_path / "p.jsonl").write_text('{"prompt": "one", "output_len": 100000000000000000000}\n')
    with pytest.raises(SpecError, match=r"p.jsonl:1: output_len must be a whole number of tokens in \[1, 10,000,000\]"):
        load_spec(_spec(tmp_path, "  dataset: {path: p.jsonl}\n"))


def test_the_check_and_the_load_generator_parse_through_one_dataset_file(tmp_path):
    p = tmp_path / "p.jsonl"
    p.write_text('{"prompt": "one two"}\n\n{"prompt": "three", "output_len": 5}\n')
    spec = load_spec(_spec(tmp_path, "  dataset: {path: p.jsonl}\n"))
    ds = spec.workload["dataset"]
    assert ds["entries"] == 2 and ds["sha256"] == hashlib.sha256(p.read_bytes()).hexdigest()
    entries, sha = mw._entries(ds)
    assert [(e.prompt, e.output_len, e.line) for e in entries] == [("one two", None, 1), ("three", 5, 3)]
    # one home: neither the check nor the load generator dispatches on the format itself
    for module in (fw, mw):
        src = inspect.getsource(module)
        assert "parse_jsonl(" not in src and "parse_sharegpt(" not in src.replace("wl.parse_sharegpt(text", "")


def test_a_tokenizer_that_cannot_load_is_a_workload_error_naming_it(tmp_path):
    (tmp_path / "p.jsonl").write_text('{"prompt": "one"}\n')
    tok = tmp_path / "tokenizer.json"
    tok.write_text('{"version": "1.0", "model": {"type": "NoSuchModel"}}')
    spec = load_spec(_spec(tmp_path, "  dataset: {path: p.jsonl, tokenizer: tokenizer.json}\n"))
    with pytest.raises(WorkloadError, match=r"the tokenizer .*tokenizer.json cannot be loaded"):  # was a traceback
        mw.resolve(spec.workload, for_load=True)


def test_a_prompt_longer_than_max_model_len_is_refused_before_the_run(tmp_path):
    lengths = wl.DatasetLengths(input_lens=(10, 5_000, 20), output_lens=(None, None, None), source="d.jsonl")
    shape = mw.ResolvedWorkload(dataset=lengths)
    spec = load_spec(_spec(tmp_path, "  input_len: 16\n"))
    with pytest.raises(
        PointError,
        match=r"1 of 3 prompts are longer than the server's max_model_len 1024 "
        r"\(entry 2 of the file: 5000 tokens\)",
    ):
        sweep.check_dataset_fits(spec, shape, 1024)
    sweep.check_dataset_fits(spec, shape, 5_000)  # fits: nothing raised
    sweep.check_dataset_fits(spec, shape, None)  # unknown: nothing checked
    estimated = mw.ResolvedWorkload(dataset=wl.DatasetLengths(input_lens=(5_000,), output_lens=(None,), estimated=True))
    sweep.check_dataset_fits(spec, estimated, 1024)  # a chars/4 estimate refuses nothing
