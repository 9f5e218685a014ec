"""Earlier nights for a history store: copies of a stored run at earlier times.

Drift calls a value ``drifted`` only once three earlier nights measured it (the night-to-night noise is not known
before: ``history._drift.MIN_NIGHTS``), so a test that wants a drifted value against one recorded run stores that
run's measurement as earlier nights too. Copies of one measurement agree exactly: their spread is 0, and any move
beyond the threshold and the intervals leaves it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from pytest_roofline.history import RunRecord, open_store


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
