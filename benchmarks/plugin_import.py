"""What the installed plugin costs a project that has no predictions: the start-up time of every pytest run.

Prints, best of ``--repeat`` (default 5), each in a fresh interpreter, once as this environment runs Python and,
where it sets ``PYTHONDONTWRITEBYTECODE``, once more with bytecode caching on (``PYTHONPYCACHEPREFIX`` in a temp
folder, so nothing is written beside the sources), as an installed package runs:

* the ``pytest11`` entry module's import time, from ``python -X importtime`` (the cumulative figure of the
  entry module's own line), once in a bare interpreter (the figure issue 12 measured: it includes whatever the
  module pulls in, pytest too if it imported it) and once after ``import pytest`` (what a pytest run, which has
  pytest loaded already, pays);
* the heavy modules the entry module leaves out of ``sys.modules``;
* ``pytest --co -q`` wall time on a temp project with one plain test file and no predictions, with the plugin
  and with ``-p no:<its entry-point name>``, and the difference: the plugin's overhead (best and median; on a
  busy machine the difference of two ~1 s runs is mostly noise, hence the next figure);
* the same pair with ``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1``, the plugin loaded by ``-p <name>`` against an empty
  module loaded by ``-p`` the same way (``-p`` looks the name up among the entry points, ~12 ms here, on both
  sides): a ~0.2 s run instead of one carrying every installed plugin (hypothesis alone takes ~0.6 s here), so
  the plugin's share does not drown in the noise.

    .venv/bin/python benchmarks/plugin_import.py [--repeat 5]

Prints the figures; asserts nothing about timing (a shared CI machine is no place for a timed test).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENTRY_MODULE = "pytest_roofline.pytest_plugin.plugin"
#: what a project without predictions should never load because the plugin is installed
HEAVY = ("numpy", "yaml", "jinja2", "sqlalchemy", "httpx", "pytest_roofline.model", "pytest_roofline.measure",
         "pytest_roofline.format.spec", "pytest_roofline.history", "pytest_roofline.report",
         "pytest_roofline.scoring")
_LINE = re.compile(r"^import time:\s*(\d+)\s*\|\s*(\d+)\s*\|\s*(\S+)\s*$")


def entry_point_name() -> str:
    """The plugin's registered name: the ``pytest11`` entry point whose value is the entry module."""
    for ep in importlib.metadata.entry_points(group="pytest11"):
        if ep.value == ENTRY_MODULE:
            return ep.name
    raise SystemExit(f"no pytest11 entry point names {ENTRY_MODULE}: is the package installed (pip install -e .)?")


def base_env() -> dict[str, str]:
    env = {**os.environ}
    for var in ("ROOFLINE_HISTORY", "PYTEST_ADDOPTS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        env.pop(var, None)
    return env


def cached_env(prefix: str) -> dict[str, str]:
    """Bytecode caching on, the caches in ``prefix`` (nothing written next to the sources): an installed package."""
    env = base_env()
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = prefix
    return env


def import_ms(python: str, prelude: str, env: dict[str, str]) -> float:
    """The entry module's cumulative import time (ms) in a fresh interpreter, after ``prelude``."""
    code = f"{prelude}import {ENTRY_MODULE}"
    err = subprocess.run([python, "-X", "importtime", "-c", code], capture_output=True, text=True, check=True,
                         env=env, cwd=tempfile.gettempdir()).stderr
    for line in err.splitlines():
        m = _LINE.match(line)
        if m and m.group(3) == ENTRY_MODULE:
            return int(m.group(2)) / 1000
    raise RuntimeError(f"no importtime line for {ENTRY_MODULE}:\n{err[-2000:]}")


def loaded_heavy(python: str) -> list[str]:
    code = (f"import sys, pytest, {ENTRY_MODULE}\n"
            f"heavy = {HEAVY!r}\n"
            "print(' '.join(sorted(h for h in heavy if any(m == h or m.startswith(h + '.') for m in sys.modules))))")
    return subprocess.run([python, "-c", code], capture_output=True, text=True, check=True, env=base_env(),
                          cwd=tempfile.gettempdir()).stdout.split()


NOOP_PLUGIN = "roofline_bench_noop"


def collect_s(python: str, project: Path, extra: list[str], env: dict[str, str], *, autoload: bool = True) -> float:
    env = dict(env)
    if not autoload:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(project), env.get("PYTHONPATH")) if p)
    t0 = time.perf_counter()
    proc = subprocess.run([python, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider", *extra], cwd=project,
                          capture_output=True, text=True, env=env)
    dt = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"pytest --co failed ({proc.returncode}):\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return dt


def measure(python: str, name: str, n: int, env: dict[str, str], label: str) -> None:
    cold = min(import_ms(python, "", env) for _ in range(n))
    warm = min(import_ms(python, "import pytest; ", env) for _ in range(n))
    with tempfile.TemporaryDirectory(prefix="roofline-empty-") as tmp:
        project = Path(tmp)
        (project / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        (project / "test_plain.py").write_text("def test_plain():\n    assert 1 + 1 == 2\n", encoding="utf-8")
        (project / f"{NOOP_PLUGIN}.py").write_text('"""A plugin that does nothing."""\n', encoding="utf-8")
        collect_s(python, project, [], env)  # warm the file-system cache (and the bytecode caches) once
        collect_s(python, project, ["-p", NOOP_PLUGIN], env, autoload=False)
        with_plugin: list[float] = []
        without: list[float] = []
        alone: list[float] = []
        bare: list[float] = []
        for _ in range(n):  # interleaved, so a busy neighbour slows both alike
            with_plugin.append(collect_s(python, project, [], env))
            without.append(collect_s(python, project, ["-p", f"no:{name}"], env))
        for _ in range(n):
            alone.append(collect_s(python, project, ["-p", name], env, autoload=False))
            bare.append(collect_s(python, project, ["-p", NOOP_PLUGIN], env, autoload=False))

    print(f"\n== {label}")
    print(f"entry module import, bare interpreter (-X importtime -c 'import {ENTRY_MODULE}'): {cold:7.1f} ms")
    print(f"entry module import, pytest already imported (as in a pytest run):{' ' * 44}{warm:7.1f} ms")
    print("pytest --co -q on a project without predictions (one plain test file), best / median:")
    off = "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1"
    pairs = (("every installed plugin", with_plugin, f"-p no:{name}", without),
             (f"{off} -p {name}", alone, f"{off} -p {NOOP_PLUGIN} (empty)", bare))
    for on_label, on, off_label, base in pairs:
        print(f"  {on_label:60s} {min(on) * 1000:7.1f} / {statistics.median(on) * 1000:7.1f} ms")
        print(f"  {off_label:60s} {min(base) * 1000:7.1f} / {statistics.median(base) * 1000:7.1f} ms")
        print(f"  {'overhead of the plugin':60s} {(min(on) - min(base)) * 1000:+7.1f} / "
              f"{(statistics.median(on) - statistics.median(base)) * 1000:+7.1f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5, help="runs per figure; the best is printed (default 5)")
    ap.add_argument("--python", default=sys.executable, help="the interpreter of the environment to measure")
    args = ap.parse_args()
    n = max(1, args.repeat)
    name = entry_point_name()
    heavy = loaded_heavy(args.python)
    print(f"plugin entry point: pytest11 {name} = {ENTRY_MODULE}  (python {sys.version.split()[0]}, best of {n})")
    print(f"heavy modules loaded by the entry module: {', '.join(heavy) if heavy else 'none'}  (of {', '.join(HEAVY)})")
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        measure(args.python, name, n, base_env(), "as this environment runs: PYTHONDONTWRITEBYTECODE is set, so "
                "every module (and pytest's assertion rewrite of the plugin) is compiled from source each run")
    with tempfile.TemporaryDirectory(prefix="roofline-pycache-") as prefix:
        measure(args.python, name, n, cached_env(prefix), "bytecode cached (PYTHONPYCACHEPREFIX in a temp folder), "
                "as an installed package runs")


if __name__ == "__main__":
    main()
