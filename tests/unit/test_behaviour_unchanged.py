"""A refactor that means to change no behaviour changes none: every verdict and number of the shipped prediction
files (math check), of the committed recordings and peers' files replayed, and the JSON Schema, are what
tests/data/golden/verdicts.json holds (written by ``python tests/support/golden.py``: rewrite it, and say why in
the commit, only when a change of behaviour is meant)."""

from __future__ import annotations

import json

import pytest
from support.golden import GOLDEN, snapshot


@pytest.fixture(scope="module")
def now() -> dict:
    return snapshot()


@pytest.fixture(scope="module")
def golden() -> dict:
    return json.loads(GOLDEN.read_text(encoding="utf-8"))


def _diff(a: dict, b: dict, where: str = "") -> list[str]:
    out = []
    for k in sorted(set(a) | set(b)):
        if k not in a or k not in b:
            out.append(f"{where}{k}: {'only now' if k in b else 'gone'}")
        elif isinstance(a[k], dict) and isinstance(b[k], dict):
            out.extend(_diff(a[k], b[k], f"{where}{k} / "))
        elif a[k] != b[k]:
            out.append(f"{where}{k}: {a[k]!r} -> {b[k]!r}")
    return out


@pytest.mark.parametrize("part", ["math", "replay", "json_schema"])
def test_verdicts_numbers_and_schema_are_unchanged(part: str, now: dict, golden: dict) -> None:
    changed = _diff(golden[part], json.loads(json.dumps(now[part])))
    assert not changed, f"{len(changed)} changes against {GOLDEN.name}:\n" + "\n".join(changed[:40])


def test_the_snapshot_covers_every_shipped_file_and_recording(golden: dict) -> None:
    assert len(golden["math"]) == 16
    assert sum(len(v) for v in golden["math"].values()) > 250
    assert len(golden["replay"]) == 9
    statuses = {v["status"] for file in golden["replay"].values() for v in file.values()}
    assert {"pass", "fail", "skip"} <= statuses
