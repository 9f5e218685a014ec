"""Trial s25b: peers' files a user really has, read as the peer means them or refused with one line that names
the file and the fix (the real files of tests/data/peers, copied and edited as the trial did)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support.paths import PEERS

from pytest_roofline.errors import ResultsError
from pytest_roofline.measure.results.peers import load_any

VLLM_C2 = PEERS / "cpu-tiny-vllm-bench-32" / "sweep_c2.json"
GUIDELLM = PEERS / "guidellm-cpu-tiny" / "benchmarks.json"


def test_a_folder_of_two_tools_is_refused_naming_both_files(tmp_path: Path) -> None:
    """#4: a vllm bench serve file beside a GuideLLM file was read as GuideLLM alone, the vllm file dropped."""
    shutil.copy(VLLM_C2, tmp_path / "sweep_c2.json")
    shutil.copy(GUIDELLM, tmp_path / "benchmarks.json")
    with pytest.raises(ResultsError) as err:
        load_any(tmp_path)
    text = str(err.value)
    assert "more than one tool" in text and "GuideLLM: benchmarks.json" in text
    assert "vllm bench serve: sweep_c2.json" in text and "their own folder" in text


def test_a_vllm_file_with_a_renamed_key_names_the_key(tmp_path: Path) -> None:
    """#6: a renamed output_throughput read as "not a file this project reads", with no key named; the folder form
    did not name the file."""
    doc = json.loads(VLLM_C2.read_text(encoding="utf-8"))
    doc["output_token_throughput"] = doc.pop("output_throughput")
    f = tmp_path / "sweep_c2.json"
    f.write_text(json.dumps(doc), encoding="utf-8")
    for path in (f, tmp_path):
        with pytest.raises(ResultsError) as err:
            load_any(path)
        assert "looks like a vllm bench serve" in str(err.value) and "no 'output_throughput'" in str(err.value)
        assert str(f) in str(err.value)


def test_a_cut_short_file_says_so(tmp_path: Path) -> None:
    """#7: a file cut at half its bytes read "line 1: not valid JSON (Expecting ',' delimiter)"."""
    raw = VLLM_C2.read_bytes()
    f = tmp_path / "sweep_c2.json"
    f.write_bytes(raw[: len(raw) // 2])
    for path in (f, tmp_path):
        with pytest.raises(ResultsError) as err:
            load_any(path)
        assert f"ends (byte {len(raw) // 2:,}) before its JSON closes" in str(err.value)
        assert "cut short" in str(err.value)
    g = tmp_path / "g.json"
    g.write_text('{"a": 1,, "b": 2}', encoding="utf-8")  # broken inside, not cut short
    with pytest.raises(ResultsError, match=r"g.json:1: not valid JSON \(Expecting property name"):
        load_any(g)
