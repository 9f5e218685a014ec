"""The test tree's shared set-up: what each test costs, and the one hypothesis profile.

Every test lives in the folder that says what it costs (tests/README.md), and gets that folder's marker here, so
``-m unit``, ``-m "not engine"`` and ``make test-fast`` select by cost without anyone remembering a marker:

* ``tests/unit/``: no process, no socket, no pytest in a subprocess (``tests/unit/conftest.py`` refuses them);
* ``tests/integration/``: stub servers on 127.0.0.1, pytester and pytest subprocesses, the browser, PostgreSQL;
  the slowest carry ``@pytest.mark.slow`` and stay out of ``make test-fast``;
* ``tests/engine/``: the real CPU build of vLLM serving the project's tiny model.

Shared fakes and canonical inputs live in ``tests/support/`` (imported as ``support.*``); fixtures that more than
one folder uses live here.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

TESTS = Path(__file__).resolve().parent
LAYERS = ("unit", "integration", "engine")

# One hypothesis profile for the whole suite, chosen by HYPOTHESIS_PROFILE (default "ci" under CI=true, else
# "dev"). No deadline anywhere: the suite runs on shared 2-core machines, where a timing claim is noise. "ci" is
# derandomized, so a CI failure reproduces from the same examples.
settings.register_profile("dev", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", parent=settings.get_profile("dev"), derandomize=True, print_blob=True)
settings.register_profile("thorough", parent=settings.get_profile("dev"), max_examples=1000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev"))


def layer_of(path: Path) -> str | None:
    """The cost folder a test file is in (``unit``, ``integration``, ``engine``), None outside them."""
    try:
        top = Path(path).resolve().relative_to(TESTS).parts[0]
    except ValueError:
        return None
    return top if top in LAYERS else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    misplaced = []
    for item in items:
        layer = layer_of(Path(str(item.fspath)))
        if layer is None:
            continue
        item.add_marker(layer)
        if item.get_closest_marker("engine") and layer != "engine":
            misplaced.append(item.nodeid)
    if misplaced:
        raise pytest.UsageError("tests marked engine outside tests/engine/ (move them there, tests/README.md): "
                                + ", ".join(misplaced))


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under ``-n N --dist loadgroup`` (``make test``): every test in tests/engine/ is one work unit, so they run one
    after another on one worker (its session fixtures share the engines, and two engines never start at once),
    while the other workers take the rest, one test at a time, in the time an engine start leaves a core idle.
    (xdist's own ``xdist_group`` mark cannot do it under pytest 9: it renames ``item._nodeid``, which pytest 9 no
    longer reads, so the marked tests were spread over the workers like any others.)"""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    root = config.rootpath

    class EngineTestsTogether(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if layer_of(root / nodeid.split("::", 1)[0]) == "engine":
                return "engine"
            return str(super()._split_scope(nodeid))

    return EngineTestsTogether(config, log)
