"""A live point's dataset is held in about 4 bytes per prompt token (issue 23: 'a live measured point still holds
its dataset's prompts in memory'; a 100 MB JSONL dataset of 20M tokens peaked at 830 MB live against the stub, 200
MB now, benchmarks/reliability_probe.py -k live-dataset): each prompt's ids are an array('I'), not a tuple of
Python ints, and no entry's text is kept."""

from __future__ import annotations

import hashlib
import json
from array import array
from pathlib import Path

import pytest
from support.word_tokenizer import word_tokenizer

from pytest_roofline.errors import WorkloadError
from pytest_roofline.measure.loadgen import datasets as mw


def _dataset(tmp_path: Path, prompts: list[str]) -> dict:
    path = tmp_path / "ds.jsonl"
    path.write_text("".join(json.dumps({"prompt": p, "output_len": 3}) + "\n" for p in prompts))
    return {"path": str(path), "format": "jsonl", "source": "ds.jsonl", "order": "sequential",
            "sha256": hashlib.sha256(path.read_bytes()).hexdigest(), "tokenizer": str(tmp_path / "tokenizer.json")}


def test_prompts_are_compact_token_ids(tmp_path: Path) -> None:
    word_tokenizer(tmp_path, ["a", "b", "c"])
    ds = _dataset(tmp_path, ["a b c", "c a", "b"])
    got = mw.resolve({"dataset": ds}, for_load=True)
    assert [list(p) for p in got.dataset_prompts] == [[1, 2, 3], [3, 1], [2]]  # <unk> is 0, a b c are 1 2 3
    assert all(isinstance(p, array) and p.itemsize == 4 for p in got.dataset_prompts)
    assert got.dataset is not None and got.dataset.input_lens == (3, 2, 1)


def test_a_dataset_changed_after_it_was_tokenized_is_refused(tmp_path: Path) -> None:
    word_tokenizer(tmp_path, ["a", "b"])
    ds = _dataset(tmp_path, ["a b", "b"])
    mw.resolve({"dataset": ds}, for_load=True)
    with open(ds["path"], "a") as fh:
        fh.write(json.dumps({"prompt": "a"}) + "\n")
    with pytest.raises(WorkloadError, match="changed since the prediction file was read"):
        mw.resolve({"dataset": ds}, for_load=True)
