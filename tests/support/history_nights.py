"""Earlier nights for a history store: copies of a stored run at earlier times; and the nightly file the history
unit tests store nights of (:data:`POINTS`).

Drift calls a value ``drifted`` only once three earlier nights measured it (the night-to-night noise is not known
before: ``history._drift.MIN_NIGHTS``), so a test that wants a drifted value against one recorded run stores that
run's measurement as earlier nights too. Copies of one measurement agree exactly: their spread is 0, and any move
beyond the threshold and the intervals leaves it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from pytest_roofline.history import RunRecord, open_store

#: a nightly file (stored as ``nightly.yaml``): one throughput prediction at two points of the tiny CPU model, C=2
#: and C=4, whose keys are ``nightly.yaml::tput[concurrency=N]::concurrency=N``
POINTS = """
hardware: cpu
model: roofline-tiny
engine: {version: "0.32.0", args: {max_num_seqs: 4}}
workload: {input_len: 96, output_len: 32}
sweep: {mode: closed, concurrency: [2, 4]}
predictions:
  - id: tput
    quantity: output_throughput
    at: {concurrency: [2, 4]}
    predicted: 700 tok/s
"""
#: :data:`POINTS` with a math-only prediction after it (``kv_bytes_per_token``, key ``nightly.yaml::kv``)
POINTS_WITH_KV = POINTS + "  - {id: kv, quantity: kv_bytes_per_token, predicted: 1 KiB}\n"


def add_earlier_nights(store: Path | str, times: list[str]) -> None:
    """Store the store's only run again at each of ``times`` (ISO UTC, before the run's own time)."""
    s = open_store(str(store))
    try:
        (only,) = s.runs()
        record = s.load(only.run_id)
        for t in times:
            s.add(RunRecord(summary=replace(record.summary, run_id="", started_at=t, location=""),
                            verdicts=record.verdicts, results=record.results, environment=record.environment))
    finally:
        s.close()
