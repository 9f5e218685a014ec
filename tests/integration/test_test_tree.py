"""How `make test` runs the tree (tests/README.md): one run on two workers, every test in tests/engine/ on the same
worker, one after another (their session fixtures share the engines, and two engines never start at once), the rest
on the other. Checked on a small tree laid out like this one, with this suite's own tests/conftest.py."""

from __future__ import annotations

import re
import shutil

import pytest
from support.paths import TESTS

ENGINE_TEST = "import time\n\ndef test_a():\n    time.sleep(0.2)\n\ndef test_b():\n    time.sleep(0.2)\n"
UNIT_TEST = "def test_x():\n    pass\n\ndef test_y():\n    pass\n"


@pytest.mark.slow
def test_make_test_runs_every_engine_test_on_one_worker(pytester: pytest.Pytester) -> None:
    tree = pytester.path / "tests"
    (tree / "engine").mkdir(parents=True)
    (tree / "unit").mkdir()
    shutil.copy(TESTS / "conftest.py", tree / "conftest.py")
    for i in range(3):
        (tree / "engine" / f"test_e{i}.py").write_text(ENGINE_TEST)
        (tree / "unit" / f"test_u{i}.py").write_text(UNIT_TEST)
    result = pytester.runpytest_subprocess("tests", "-n", "2", "--dist", "loadgroup", "-v", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=12)
    ran = re.findall(r"\[(gw\d)\] \[\s*\d+%\] PASSED tests/(\w+)/", result.stdout.str())
    assert len(ran) == 12, result.stdout.str()
    engine_workers = {w for w, layer in ran if layer == "engine"}
    assert len(engine_workers) == 1, ran  # all six on one worker
    # and the other worker ran unit tests meanwhile (the engine group is one unit: it cannot take them all)
    assert {w for w, layer in ran if layer == "unit"} - engine_workers, ran
