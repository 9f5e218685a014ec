"""What the product says today, as data: every verdict and number for the shipped prediction files (the math
check), the committed recordings and peers' files replayed against theirs, and the JSON Schema. A refactor that
means to change no behaviour must leave this unchanged (tests/unit/test_behaviour_unchanged.py);
``python tests/support/golden.py`` rewrites tests/data/golden/verdicts.json when a change is meant.
"""

from __future__ import annotations

import json
import math
import sys
import warnings
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: tests/ on the path, as pytest puts it
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from support.paths import DATA, PREDICTIONS, RECORDED, REPO

GOLDEN = DATA / "golden" / "verdicts.json"
#: the fields of a verdict that are its outcome and its numbers (the wording of reasons may change)
FIELDS = ("status", "mode", "predicted_value", "model_value", "measured_value", "lo", "hi", "measured_lo",
          "measured_hi", "contaminated", "model_source")
#: (prediction file, results file or folder) scored as a replay
REPLAYS = [
    ("day3.yaml", RECORDED / "day3-2026-07-31.results.json"),
    ("cpu-tiny.yaml", RECORDED / "cpu-tiny-2026-12-05.results.json"),
    ("cpu-prefill-heavy.yaml", RECORDED / "cpu-prefill-heavy-2026-12-05.results.json"),
    ("cpu-kv-pressure.yaml", RECORDED / "cpu-kv-pressure-2026-12-05.results.json"),
    ("cpu-open-loop.yaml", RECORDED / "cpu-open-loop-2026-12-05.results.json"),
    ("day3.yaml", DATA / "peers" / "day3-vllm-bench"),
    ("cpu-tiny.yaml", DATA / "peers" / "cpu-tiny-vllm-bench"),
    ("cpu-tiny.yaml", DATA / "peers" / "guidellm-cpu-tiny" / "benchmarks.json"),
    ("cpu-tiny.yaml", DATA / "peers" / "aiperf-cpu-tiny" / "profile_export_aiperf.json"),
]


def _number(x: Any) -> Any:
    if isinstance(x, float):
        return None if not math.isfinite(x) else float(f"{x:.9g}")
    return x


def _verdicts(spec_name: str, results: Path | None) -> dict[str, dict[str, Any]]:
    from pytest_roofline.format.spec import load_spec
    from pytest_roofline.measure.results.peers import load_any
    from pytest_roofline.report.scorecard import score_spec

    spec = load_spec(PREDICTIONS / spec_name)
    data = dict(load_any(results)) if results is not None else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        verdicts = [v.to_dict() for v in score_spec(spec, data)]  # the JSON form the snapshot keeps
    return {v["id"]: {k: _number(v.get(k)) for k in FIELDS} for v in verdicts}


def snapshot() -> dict[str, Any]:
    from pytest_roofline.format.spec import json_schema

    out: dict[str, Any] = {"math": {}, "replay": {}}
    for f in sorted(PREDICTIONS.glob("*.yaml")):
        out["math"][f.name] = _verdicts(f.name, None)
    for spec_name, results in REPLAYS:
        out["replay"][f"{spec_name} <- {results.relative_to(REPO).as_posix()}"] = _verdicts(spec_name, results)
    out["json_schema"] = json_schema()
    return out


if __name__ == "__main__":
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps(snapshot(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {GOLDEN.relative_to(REPO)}")
