"""Peers' files (vllm bench serve, GuideLLM, AIPerf) and replays are read through ``pytest_roofline.bounded``
(reliability review 2026-12, case 9.37): a file nested 100,000 deep is one ResultsError naming the file, never a
RecursionError (an INTERNALERROR in pytest); a FIFO is refused before it is opened (it would block for ever); the
duplicate-point check still names every duplicate."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support.paths import PEERS
from support.peer_docs import vllm_bench_doc

from pytest_roofline.errors import ResultsError
from pytest_roofline.measure.results.peers import load_any
from pytest_roofline.measure.results.peers._common import results_document

DEEP = 100_000


def _deep_array() -> str:
    return "[" * DEEP + "]" * DEEP


def _deep_object() -> str:
    return '{"a":' * DEEP + "1" + "}" * DEEP


# what the review fed in (9.37): a deep array, a deep object, and a JSON-lines file (``--append-result``) whose
# second line is a deep value inside an otherwise valid vllm bench serve result
_DEEP_FILES = {
    "deep-array": _deep_array(),
    "deep-object": _deep_object(),
    "deep-in-a-result": json.dumps(vllm_bench_doc())[:-1] + ', "extra": ' + _deep_array() + "}",
    "jsonl-deep": json.dumps(vllm_bench_doc()) + "\n" + _deep_array() + "\n",
}


@pytest.mark.parametrize("name", sorted(_DEEP_FILES))
@pytest.mark.parametrize("as_folder", [False, True], ids=["file", "folder"])
def test_a_peer_file_nested_100000_deep_is_one_results_error(tmp_path: Path, name: str, as_folder: bool):
    folder = tmp_path / "runs"
    folder.mkdir()
    f = folder / "sweep_c4.json"
    f.write_text(_DEEP_FILES[name])
    with pytest.raises(ResultsError) as exc:
        load_any(folder if as_folder else f)
    msg = str(exc.value)
    # the file named (as the reader found it), and what is wrong with it
    assert str(f) in msg and "nest more than 64 levels deep" in msg, msg


def test_a_deep_jsonl_line_is_named_by_its_line(tmp_path: Path):
    f = tmp_path / "appended.json"
    lines = [json.dumps(vllm_bench_doc(max_concurrency=1)), json.dumps(vllm_bench_doc()), _deep_array()]
    f.write_text("\n".join(lines) + "\n")
    with pytest.raises(ResultsError, match=rf"{f}:3: lists and objects nest more than 64 levels deep"):
        load_any(f)


def test_a_jsonl_syntax_error_names_its_line_in_the_file(tmp_path: Path):
    f = tmp_path / "appended.json"
    f.write_text(json.dumps(vllm_bench_doc(max_concurrency=1)) + "\n" + json.dumps(vllm_bench_doc()) + "\n{not json\n")
    with pytest.raises(ResultsError, match=rf"{f}:3: not valid JSON"):
        load_any(f)


@pytest.mark.parametrize("tool", ["guidellm", "aiperf"])
def test_guidellm_and_aiperf_exports_nested_100000_deep_are_one_results_error(tmp_path: Path, tool: str):
    src = PEERS / ("guidellm-benchmarks.json" if tool == "guidellm" else "profile_export_aiperf.json")
    doc = json.loads(src.read_text())
    text = json.dumps(doc)[:-1] + ', "extra": ' + _deep_object() + "}"
    f = tmp_path / src.name
    f.write_text(text)
    with pytest.raises(ResultsError) as exc:
        load_any(f)
    assert str(f) in str(exc.value) and "nest more than 64 levels deep" in str(exc.value)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_a_fifo_among_a_folders_files_is_refused_without_blocking(tmp_path: Path):
    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "sweep_c4.json").write_text(json.dumps(vllm_bench_doc()))
    os.mkfifo(folder / "sweep_c8.json")  # opening it for reading would block until a writer comes: none will
    with pytest.raises(ResultsError, match=r"sweep_c8.json: the results file is a FIFO \(named pipe\)"):
        load_any(folder)
    os.mkfifo(tmp_path / "alone.json")
    with pytest.raises(ResultsError, match="FIFO"):
        load_any(tmp_path / "alone.json")


def test_a_peer_file_over_the_size_bound_is_refused_before_it_is_read(tmp_path: Path, monkeypatch):
    from pytest_roofline.measure.results.peers import _common, vllm_bench

    f = tmp_path / "sweep_c4.json"
    f.write_text(json.dumps(vllm_bench_doc()))
    monkeypatch.setattr(_common, "MAX_PEER_FILE_BYTES", 100)
    with pytest.raises(ResultsError, match=rf"{f}: the results file is larger than 0 MiB"):
        vllm_bench.load(f)


def test_the_duplicate_point_check_still_names_every_duplicate_once():
    # the check is a Counter now (linear; benchmarks/peers_report_scale.py prints its time at 10,000 files)
    points = [{"id": f"closed-c{i}"} for i in (1, 2, 4, 2, 8, 4, 2)]
    with pytest.raises(ResultsError, match=r"more than one result for the point\(s\) closed-c2, closed-c4; keep"):
        results_document(source="x", where="w", points=points, setup={})  # type: ignore[arg-type]
