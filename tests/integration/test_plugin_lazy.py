"""The plugin costs a project without predictions nothing: pytest imports its entry module (``pytest11``) in every
run, so that module registers options, ini keys and markers and imports nothing heavy; the model, the prediction
format, the measurement path, the history and the report are imported only once a prediction file is collected
or a roofline option is used. Timing is measured by ``benchmarks/plugin_import.py``, not asserted here.
"""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support.pytest_run import NO_CACHE
from support.specs import H100_BATCH1_MISS, H100_RIDGE

ENTRY = "pytest_roofline.pytest_plugin.plugin"
#: what a project without predictions must not load because the plugin is installed
HEAVY = ("numpy", "sqlalchemy", "yaml", "jinja2", "httpx", "pytest_roofline.model", "pytest_roofline.measure",
         "pytest_roofline.format.spec", "pytest_roofline.history", "pytest_roofline.report",
         "pytest_roofline.scoring", "pytest_roofline.quantities")

PLAIN_TESTS = """\
def test_one():
    assert 1 + 1 == 2
"""
#: a conftest that writes, at the end of the run, which of HEAVY the process has loaded
PROBE = """\
import json, os, sys

HEAVY = {heavy!r}


def pytest_unconfigure(config):
    loaded = sorted(h for h in HEAVY if any(m == h or m.startswith(h + ".") for m in sys.modules))
    with open(os.path.join(str(config.rootpath), "loaded-%s.json" % os.getpid()), "w") as f:
        json.dump(loaded, f)
"""


def _loaded_by_import(code: str) -> list[str]:
    probe = (f"import json, sys\n{code}\n"
             f"print(json.dumps(sorted(h for h in {HEAVY!r} if any(m == h or m.startswith(h + '.') "
             "for m in sys.modules))))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    return list(json.loads(out))


def test_importing_the_entry_module_imports_nothing_heavy() -> None:
    assert _loaded_by_import(f"import {ENTRY}") == []
    assert _loaded_by_import(f"import pytest, {ENTRY}") == []  # as in a pytest run, pytest loaded first
    # the probe sees an import when there is one: the working half brings the model and the prediction format
    loaded = _loaded_by_import("import pytest_roofline.pytest_plugin.active")
    assert {"pytest_roofline.model", "pytest_roofline.format.spec", "yaml"} <= set(loaded)


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")


def _run_and_probe(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, set[str]]:
    for old in pytester.path.glob("loaded-*.json"):
        old.unlink()
    result = pytester.runpytest_subprocess(*args, *NO_CACHE)
    files = list(pytester.path.glob("loaded-*.json"))
    assert files, result.stdout.str() + result.stderr.str()
    return result, {m for f in files for m in json.loads(f.read_text(encoding="utf-8"))}


@pytest.mark.slow
def test_a_run_without_predictions_loads_nothing_heavy(pytester: pytest.Pytester) -> None:
    """A pytest run of a project without predictions loads none of the heavy modules beyond what the same run loads
    with the plugin disabled (other plugins may load some: pytest-html brings jinja2); one with a prediction
    file loads the model, as it must."""
    _write(pytester.path, "conftest.py", PROBE.format(heavy=HEAVY))
    _write(pytester.path, "test_own.py", PLAIN_TESTS)
    _write(pytester.path, "configs/model.yaml", "model: x\n")  # a project's own YAML is not a prediction file
    for args in ((), ("--co", "-q")):
        with_plugin, loaded = _run_and_probe(pytester, *args)
        without, baseline = _run_and_probe(pytester, "-p", "no:roofline", *args)
        assert with_plugin.ret == without.ret == 0
        assert loaded - baseline == set(), f"pytest {' '.join(args)}: the plugin loaded {loaded - baseline}"
        assert not {m for m in loaded if m.startswith("pytest_roofline.")}
    _write(pytester.path, "predictions/tiny.yaml", H100_RIDGE)
    result, loaded = _run_and_probe(pytester)
    result.assert_outcomes(passed=2)
    assert {"pytest_roofline.model", "pytest_roofline.format.spec", "pytest_roofline.scoring"} <= loaded


@pytest.mark.slow
def test_a_roofline_option_still_checks_its_value_before_collection(pytester: pytest.Pytester) -> None:
    """An option is parsed where it is declared, its heavy checker imported only then: a bad value is one usage
    error, in a project without a single prediction."""
    _write(pytester.path, "test_own.py", PLAIN_TESTS)
    bad = pytester.runpytest_subprocess("--roofline-drift", "ten percent", *NO_CACHE)
    assert bad.ret == pytest.ExitCode.USAGE_ERROR and "--roofline-drift" in bad.stderr.str()
    unknown = pytester.runpytest_subprocess("--roofline-gpu", "b999-unknown", *NO_CACHE)
    assert unknown.ret == pytest.ExitCode.USAGE_ERROR and "--roofline-gpu" in unknown.stderr.str()
    pytester.makeini("[pytest]\nroofline_default_tolerance = about ten percent\n")
    ini = pytester.runpytest_subprocess(*NO_CACHE)  # an ini value starts the plugin in pytest_configure
    assert ini.ret == pytest.ExitCode.USAGE_ERROR and "roofline_default_tolerance" in ini.stderr.str()


def _table(result: pytest.RunResult) -> set[str]:
    lines = result.outlines
    start = next(i for i, x in enumerate(lines) if "roofline predictions" in x)
    return {x for x in lines[start + 3:] if x.split() and x.split()[-1] in ("PASS", "FAIL", "XFAIL", "ERROR")}


@pytest.mark.slow
def test_an_xdist_controller_starts_the_plugin_from_its_workers_collection(pytester: pytest.Pytester) -> None:
    """With no roofline option the controller (which collects nothing) starts the plugin when a worker's
    collection names a prediction file: the end-of-run table and pytest-html's columns are those of a serial
    run."""
    pytest.importorskip("xdist")
    pytest.importorskip("pytest_html")
    _write(pytester.path, "test_own.py", PLAIN_TESTS)
    _write(pytester.path, "predictions/tiny.yaml", H100_RIDGE)
    _write(pytester.path, "predictions/miss.yaml", H100_BATCH1_MISS)
    serial = pytester.runpytest_subprocess("--html", "ser.html", *NO_CACHE)
    parallel = pytester.runpytest_subprocess("-n", "2", "--html", "par.html", *NO_CACHE)
    parallel.assert_outcomes(passed=2, failed=1)
    assert serial.parseoutcomes() == parallel.parseoutcomes()
    assert _table(parallel) == _table(serial) and len(_table(parallel)) == 2
    page = (pytester.path / "par.html").read_text(encoding="utf-8")
    assert "Roofline predictions:" in page
    blob = json.loads(html.unescape(page.split('data-jsonblob="', 1)[1].split('"></div>', 1)[0]))
    rows = [e["resultsTableRow"] for entries in blob["tests"].values() for e in entries]
    assert len(rows) == 3 and all(any("col-rl_quantity" in c for c in r) for r in rows)  # every row: no shift
    assert re.search(r"batch1-miss", page)  # the failed prediction's row is there
