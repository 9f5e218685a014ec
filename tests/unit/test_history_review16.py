"""The s16 review's low findings on the history plugin (notes/s16/review.md L3, L4)."""

from __future__ import annotations

from pathlib import Path

from pytest_roofline.pytest_plugin.history import unmeasured_counts
from pytest_roofline.scoring import Verdict


def _verdict(status: str, mode: str = "math") -> Verdict:
    return Verdict(id="a", quantity="q", dimension="count", mode=mode, status=status, reason="")


def test_a_session_that_measured_nothing_counts_its_skips_apart_from_its_math_checks() -> None:
    # L3: "22 predictions were checked by the math alone" while 16 of them were skipped (they need a measurement)
    verdicts = [_verdict("pass")] * 5 + [_verdict("fail")] + [_verdict("skip", "measured")] * 16
    assert unmeasured_counts(verdicts) == (
        "22 predictions, none measured (6 checked by the math, 16 skipped for want of a measurement)")
    assert unmeasured_counts([_verdict("pass")]) == "1 prediction, none measured (1 checked by the math)"
    assert unmeasured_counts([_verdict("pass"), _verdict("error")]) == (
        "2 predictions, none measured (1 checked by the math, 1 errored)")


def test_nothing_outside_the_history_package_imports_its_private_modules() -> None:
    # L4: pytest_plugin/history.py imported the private _repository_root from history._recording; the history
    # package's public names (its __all__) are what the rest of the project uses
    import ast

    import pytest_roofline
    import pytest_roofline.history as history

    assert {"repository_root", "results_for_file", "verdict_key"} <= set(history.__all__)
    assert all(hasattr(history, name) for name in history.__all__)
    package = Path(pytest_roofline.__file__).parent
    reaching = []
    for path in sorted(package.rglob("*.py")):
        if path.parent.name == "history" and path.parent.parent == package:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([node.module or ""] if isinstance(node, ast.ImportFrom)
                     else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            reaching += [f"{path.relative_to(package)}: {n}" for n in names
                         if n.startswith("pytest_roofline.history._")]
    assert not reaching

