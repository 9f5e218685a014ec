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


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the xdist_group marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    misplaced = []
    for item in items:
        layer = layer_of(Path(str(item.fspath)))
        if layer is None:
            continue
        item.add_marker(layer)
        if layer == "engine":
            # one xdist group: under `-n N --dist loadgroup` (make test) every engine test runs on the same worker,
            # one after another, so the session's shared engine is started once and engines never overlap, while
            # the other workers run the rest in the time an engine start leaves a core idle
            item.add_marker(pytest.mark.xdist_group("engine"))
        if item.get_closest_marker("engine") and layer != "engine":
            misplaced.append(item.nodeid)
    if misplaced:
        raise pytest.UsageError("tests marked engine outside tests/engine/ (move them there, tests/README.md): "
                                + ", ".join(misplaced))
