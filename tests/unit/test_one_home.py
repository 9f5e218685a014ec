"""One home for every fact: each constant below is defined once and the other layers import it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest_roofline
from pytest_roofline import units

PACKAGE = Path(pytest_roofline.__file__).parent


def _byte_literals(tree: ast.AST) -> list[int]:
    """Lines of code (not text) that spell 2**20/2**30, 1 << 20/30, 1024**3 or 1073741824 / 1048576."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.left, ast.Constant) and isinstance(node.right, ast.Constant):
            pair = (node.left.value, type(node.op), node.right.value)
            if pair in {(2, ast.Pow, 20), (2, ast.Pow, 30), (1, ast.LShift, 20), (1, ast.LShift, 30),
                        (1024, ast.Pow, 2), (1024, ast.Pow, 3), (2.0, ast.Pow, 30)}:
                lines.append(node.lineno)
        elif isinstance(node, ast.Constant) and node.value in (1073741824, 1048576) and type(node.value) is int:
            lines.append(node.lineno)
    return sorted(lines)


def test_no_byte_unit_literal_outside_units():
    """2**30 and friends are written once, in units.py; everything else imports GIB/MIB/GB."""
    hits = []
    for path in PACKAGE.rglob("*.py"):
        if path == PACKAGE / "units.py":
            continue
        source = path.read_text(encoding="utf-8")
        for n in _byte_literals(ast.parse(source)):
            line = source.splitlines()[n - 1].strip()
            if "order.get(" not in line:  # a sort sentinel (1 << 30) is not a byte count
                hits.append(f"{path.relative_to(PACKAGE)}:{n}: {line}")
    assert not hits, "\n".join(hits)
    assert units.GIB == 1 << 30 and units.MIB == 1 << 20
    assert _byte_literals(ast.parse("x = 5 * 2**30\ny = 1 << 20")) == [1, 2]  # the scan itself sees them


def test_one_contamination_default():
    from pytest_roofline.measure.engine import metrics as scrape
    from pytest_roofline.quantities.analysis import Thresholds

    assert scrape.DEFAULT_CONTAMINATION_THRESHOLD == Thresholds().contamination == 0.10  # the README's 10 %


def test_one_tiny_model_name():
    from pytest_roofline.measure import sweep
    from pytest_roofline.measure.engine import tiny_model as tinymodel
    from pytest_roofline.model import setup, tiny

    assert sweep.TINY_MODEL is setup.TINY_MODEL is tinymodel.TINY_MODEL is tiny.TINY_MODEL
    assert tinymodel.TINY_ARCH is tiny.TINY_ARCH


def test_one_number_parser_for_the_engine_log():
    from pytest_roofline.measure.engine import startup_log as enginelog

    assert enginelog.parse_number is units.parse_printed_number
