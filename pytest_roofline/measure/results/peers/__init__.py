"""The results people already have, read as the project's results document (``docs/results-schema.md``).

``--replay PATH`` and ``roofline report`` call :func:`load_any`, which detects the format of a file or a folder:

* the project's own ``results.json`` (``"schema": "pytest-roofline/results"``);
* ``vllm bench serve --save-result`` JSON: one file per point, a folder of them (``sweep_c1.json`` …), or a
  ``vllm bench sweep serve`` output folder (:mod:`.vllm_bench`);
* GuideLLM's benchmarks JSON (``guidellm benchmark --outputs json``, :mod:`.guidellm`);
* AIPerf's ``profile_export_aiperf.json`` and GenAI-Perf's ``profile_export_genai_perf.json`` (:mod:`.aiperf`).

Each reader converts units explicitly and leaves a figure its tool does not report absent, with the reason in
the point's ``not_reported`` (never 0); what the file cannot say about the run (the GPU, the engine version) is
listed in ``setup.unchecked`` for the mismatch check (``measure.results.match``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pytest_roofline.errors import ResultsError
from pytest_roofline.measure.results.file import SCHEMA, ResultsData, load_results
from pytest_roofline.measure.results.peers import aiperf, guidellm, vllm_bench
from pytest_roofline.measure.results.peers._common import load_json

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
        for f in sorted(p.rglob("*.json")):
            if vllm_bench.sniff(f):
                return vllm_bench.FORMAT
        raise ResultsError(f"{p}: is a directory with no results this project reads (give a results.json, or a "
                           "folder of vllm bench serve --save-result files)")
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
    return OWN  # not JSON, unreadable, or no known format: our own reader names what is wrong


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
    if fmt == guidellm.FORMAT:
        return guidellm.load(p)
    return aiperf.load(p)
