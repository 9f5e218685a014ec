"""The results people already have, read as the project's results document (``docs/results-schema.md``).

``--replay PATH`` and ``roofline report`` call :func:`load_any`, which detects the format of a file or a folder:

* the project's own ``results.json`` (``"schema": "pytest-roofline/results"``);
* ``vllm bench serve --save-result`` JSON: one file per point, a folder of them (``sweep_c1.json`` …), or a
  ``vllm bench sweep serve`` output folder (:mod:`.vllm_bench`);
* GuideLLM's benchmarks JSON (``guidellm benchmark --outputs json``, :mod:`.guidellm`);
* AIPerf's ``profile_export_aiperf.json`` and GenAI-Perf's ``profile_export_genai_perf.json`` (:mod:`.aiperf`).

A folder is recognised by its layout: a ``results.json`` of our own; AIPerf's artifact folder
(``artifacts/<run>/profile_export_aiperf.json``, one per run: their points are merged); GuideLLM's default
outputs (``benchmarks.json``, or any GuideLLM JSON in it); else ``vllm bench serve`` files.

Each reader converts units explicitly and leaves a figure its tool does not report absent, with the reason in
the point's ``not_reported`` (never 0); what the file cannot say about the run (the GPU, the engine version) is
listed in ``setup.unchecked`` for the mismatch check (``measure.results.match``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_roofline.errors import ResultsError
from pytest_roofline.measure.results.file import SCHEMA, ResultsData, load_results
from pytest_roofline.measure.results.peers import aiperf, guidellm, vllm_bench
from pytest_roofline.measure.results.peers._common import earliest_time, load_json, results_document

__all__ = ["load_any", "detect_format", "FORMATS"]

OWN = "pytest-roofline"
#: every format :func:`load_any` reads, by the name it reports
FORMATS = (OWN, vllm_bench.FORMAT, guidellm.FORMAT, aiperf.FORMAT)


def detect_format(path: str | os.PathLike[str]) -> str:
    """The format of ``path`` (one of :data:`FORMATS`); :class:`ResultsError` when it is none of them."""
    p = Path(path)
    if p.is_dir():
        own = p / "results.json"
        if own.is_file():
            doc = _try_json(own)
            if isinstance(doc, dict) and doc.get("schema") == SCHEMA:
                return OWN
        files = sorted(p.rglob("*.json"))
        found = {fmt: got for fmt, got in ((aiperf.FORMAT, _layout_files(p, aiperf.FORMAT)),
                                           (guidellm.FORMAT, _layout_files(p, guidellm.FORMAT)),
                                           (vllm_bench.FORMAT, [f for f in files if vllm_bench.sniff(f)])) if got}
        if len(found) > 1:  # trial s25b #4: a vllm bench file beside a GuideLLM one was dropped without a word
            raise ResultsError(f"{p}: holds the files of more than one tool: " + "; ".join(
                f"{fmt}: {', '.join(str(f.relative_to(p)) for f in got[:3])}" + (" …" if len(got) > 3 else "")
                for fmt, got in found.items()) + "; a folder is one run of one tool: give each tool's files "
                "their own folder (and --replay one of them)")
        if found:
            return next(iter(found))
        why = next((w for f in files if (w := _why_unread(f))), None)
        raise ResultsError(f"{p}: is a directory with no results this project reads (give a results.json, a "
                           "folder of vllm bench serve --save-result files, AIPerf's artifact folder or GuideLLM's "
                           "output folder)" + (f"; a file in it could not be read: {why}" if why else ""))
    if not p.exists():
        raise ResultsError(f"{p}: no such results file")
    doc = _try_json(p)
    if isinstance(doc, dict) and doc.get("schema") == SCHEMA:
        return OWN
    if guidellm.is_guidellm(doc):
        return guidellm.FORMAT
    if aiperf.is_aiperf(doc):
        return aiperf.FORMAT
    if vllm_bench.sniff(p):
        return vllm_bench.FORMAT
    near = vllm_bench.near_miss(doc, p)
    if near:
        raise ResultsError(near)
    return OWN  # not JSON, unreadable, or no known format: our own reader names what is wrong


def _why_unread(f: Path) -> str | None:
    """Why a folder's JSON file was not read: not JSON (the reader's error), or nearly a vllm bench serve file."""
    return vllm_bench.unreadable(f) or vllm_bench.near_miss(_try_json(f), f)


#: the files a peer writes into its output folder, by the names it gives them
_LAYOUT = {aiperf.FORMAT: ("profile_export_aiperf.json", "profile_export_genai_perf.json"),
           guidellm.FORMAT: ("*.json",)}
#: the most files of one folder read as one run's points
MAX_LAYOUT_FILES = 256


def _layout_files(folder: Path, fmt: str) -> list[Path]:
    """The files of ``fmt`` in ``folder`` (and below), found by the names the tool writes and checked by content."""
    is_fmt = aiperf.is_aiperf if fmt == aiperf.FORMAT else guidellm.is_guidellm
    found: list[Path] = []
    for pattern in _LAYOUT[fmt]:
        for f in sorted(folder.rglob(pattern)):
            if f.is_file() and f not in found and is_fmt(_try_json(f)):
                found.append(f)
                if len(found) > MAX_LAYOUT_FILES:
                    raise ResultsError(f"{folder}: more than {MAX_LAYOUT_FILES} {fmt} files; give one run's folder")
    return found


def _merged(folder: Path, fmt: str) -> ResultsData:
    """One results document from every ``fmt`` file of ``folder`` (one run each, e.g. one per concurrency)."""
    load = aiperf.load if fmt == aiperf.FORMAT else guidellm.load
    docs = [load(f) for f in _layout_files(folder, fmt)]
    if len(docs) == 1:
        return docs[0]
    first = docs[0]
    unchecked = first["setup"].get("unchecked")
    return results_document(source=fmt, where=str(folder), points=[p for d in docs for p in d["points"]],
                            setup={k: v for k, v in first["setup"].items() if k not in ("mode", "unchecked")},
                            unchecked=unchecked if isinstance(unchecked, Mapping) else None,
                            created_at=earliest_time([d.get("created_at") for d in docs]),
                            notes=f"{len(docs)} {fmt} files merged: "
                                  + ", ".join(str(f.relative_to(folder)) for f in _layout_files(folder, fmt)))


def _try_json(path: Path) -> Any:
    try:
        return load_json(path)
    except ResultsError:
        return None


def load_any(path: str | os.PathLike[str]) -> ResultsData:
    """Read ``path`` in whichever format it is (:func:`detect_format`) into a results document."""
    p = Path(path)
    fmt = detect_format(p)
    if fmt == OWN:
        return load_results(p / "results.json" if p.is_dir() else p)
    if fmt == vllm_bench.FORMAT:
        return vllm_bench.load(p)
    if p.is_dir():  # a peer's output folder, found by its layout
        return _merged(p, fmt)
    if fmt == guidellm.FORMAT:
        return guidellm.load(p)
    return aiperf.load(p)
