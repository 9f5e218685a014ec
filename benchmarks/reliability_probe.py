"""Re-run the project's reliability cases (what the plugin refuses is in docs/reference/refusals.md; each case's
input and expectation is written out in this file) and print, per case, its class and what happened, then the
totals per class over the case numbers.

    .venv/bin/python benchmarks/reliability_probe.py            # every case but the engine's (~25 min on 2 busy cores)
    .venv/bin/python benchmarks/reliability_probe.py --quick    # without the slow ones (1 GB dataset, 10,000 files...)
    .venv/bin/python benchmarks/reliability_probe.py --engine -k 9.84   # the engine's two (it takes the engine lock)

Cases are named by number, a label this file gives them (one probe case may cover several); each case's input is
built in this file. A case is OK when the plugin gave what the case expects: a clear error (no traceback, no
INTERNALERROR) in bounded time and memory, no PASS on a measurement that did not happen, no run lost with exit 0,
nothing written outside the store, no secret printed or stored, no child outliving pytest, a results file that says
how the run ended. Otherwise it is classed with the case list's classes (FALSE-PASS, LOST-DATA, LEAK, HANG, ORPHAN,
KILLED/OOM, FAILS, INTERNALERROR, TRACEBACK, NOISY, NOTE) or OUTSIDE-STORE; NOT-RUN says this machine could not run
it.
The history store's cases run against directory and SQLite stores and a throwaway PostgreSQL
(tests/support/postgres.py; ``apt-get install -y postgresql``); a read-only store is run without CAP_DAC_OVERRIDE
(setpriv), a full disk on a tmpfs in a private mount namespace (unshare -m), both as root. Where the stub server
cannot send exactly what the case names (9.66 tokens forever, 9.67 pings forever) the case says what it sends
instead. Nothing is asserted: the tests hold the claims.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from support.engine import sigint_as_ctrl_c  # noqa: E402
from support.openai_stub import Fault, Request, StubServer  # noqa: E402

PY = sys.executable
RESULTS: list[tuple[str, str, str]] = []


#: the cases' classes, worst first; a case's class is its worst finding (OK when it found nothing)
CLASSES = ("FALSE-PASS", "LOST-DATA", "OUTSIDE-STORE", "LEAK", "HANG", "ORPHAN", "KILLED/OOM", "FAILS",
           "INTERNALERROR", "TRACEBACK", "NOISY", "NOTE", "NOT-RUN", "PROBE-ERROR", "OK")
CASES: list[Callable[[Path], None]] = []


def case(name: str, worst: str = "NOTE", *, slow: bool = False, engine: bool = False,
         ) -> Callable[[Callable[[Path], tuple[bool | str, str]]], Callable[[Path], None]]:
    """Register a case. Its function returns (True, what) when the plugin did what the case expects, else
    (False, what) -- classed ``worst``, the class for what this case checks -- or (a class, what) when
    the case tells the class itself (a traceback, a hang, NOT-RUN when this machine cannot run it)."""
    assert worst in CLASSES, worst

    def wrap(fn: Callable[[Path], tuple[bool | str, str]]) -> Callable[[Path], None]:
        def run(scratch: Path) -> None:
            d = scratch / name.replace("/", "_")
            d.mkdir()
            t0 = time.monotonic()
            try:
                ok, what = fn(d)
            except Exception as exc:  # noqa: BLE001 - a probe reports, never stops
                ok, what = "PROBE-ERROR", f"probe raised {type(exc).__name__}: {str(exc)[:200]}"
            cls = ok if isinstance(ok, str) else ("OK" if ok else worst)
            RESULTS.append((name, cls, f"{what} ({time.monotonic() - t0:.1f} s)"))
            print(f"{cls:<13} {name}: {what} ({time.monotonic() - t0:.1f} s)", flush=True)

        run.__name__ = name
        run.slow, run.engine = slow, engine  # type: ignore[attr-defined]
        CASES.append(run)
        return run

    return wrap


def sh(argv: list[str], cwd: Path, timeout: float = 150, env: dict | None = None) -> tuple[int, str, float]:
    t0 = time.monotonic()
    try:
        p = subprocess.run(
            argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})}
        )
        return p.returncode, p.stdout + p.stderr, time.monotonic() - t0
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        return -9, out + "\nHANG (killed)", time.monotonic() - t0


def clean(out: str) -> bool:
    return "Traceback" not in out and "INTERNALERROR" not in out and "HANG" not in out


# ------------------------------------------------------------------------------------------------ stub runs
PROBE_YAML = """\
hardware: cpu
model: roofline-tiny
engine: {{name: vllm, version: "0.32.0", args: {{max_model_len: 1024}}{engine_extra}}}
workload: {{input_len: 16, output_len: 4{workload_extra}}}
sweep:
  mode: closed
  concurrency: [1, 2]
  requests_per_point: 6
  warmup: 1
  request_timeout: 5 s
{sweep_extra}predictions:
  - id: littles-c2
    quantity: littles_law_ratio
    at: {{concurrency: 2}}
    predicted: 1.00
    tolerance: ±99%   # plumbing, not Little's law: λ·W ÷ C read 0.41 against a 0.2 ms stub (the client's gaps)
"""


def pytest_run(
    d: Path,
    server: StubServer,
    *,
    engine_extra: str = "",
    workload_extra: str = "",
    sweep_extra: str = "",
    extra: list[str] | None = None,
    timeout: float = 120,
) -> tuple[int, str, float]:
    (d / "probe.roofline.yaml").write_text(
        PROBE_YAML.format(engine_extra=engine_extra, workload_extra=workload_extra, sweep_extra=sweep_extra)
    )
    return sh(
        [
            PY,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "probe.roofline.yaml",
            "--endpoint",
            server.url + "/v1",
            "--roofline-out",
            "out",
            "-rA",
            *(extra or []),
        ],
        d,
        timeout,
    )


def bounded_run(d: Path, bound_s: float, **kw) -> tuple[bool, str]:
    with StubServer(
        model="roofline-tiny", max_model_len=1024, metrics="vllm:num_requests_running 0\n", **kw.pop("stub", {})
    ) as s:
        rc, out, t = pytest_run(d, s, **kw)
    return clean(out) and t < bound_s, f"rc={rc} in {t:.1f} s (bound {bound_s:.0f} s), clean={clean(out)}"


@case("9.77-metrics-trickle", "HANG")
def metrics_trickle(d: Path) -> tuple[bool, str]:
    return bounded_run(d, 60, stub={"trickle": {"/metrics"}})


@case("9.78-models-trickle", "HANG")
def models_trickle(d: Path) -> tuple[bool, str]:
    return bounded_run(d, 90, stub={"trickle": {"/v1/models"}})


@case("9.79-version-trickle", "HANG")
def version_trickle(d: Path) -> tuple[bool, str]:
    return bounded_run(d, 60, stub={"trickle": {"/version"}})


@case("9.79g-replica-trickle", "HANG")
def replica_trickle(d: Path) -> tuple[bool, str]:
    with (
        StubServer(model="roofline-tiny", max_model_len=1024, metrics="vllm:num_requests_running 0\n") as a,
        StubServer(model="roofline-tiny", metrics="", trickle={"/metrics"}) as b,
    ):
        rc, out, t = pytest_run(d, a, engine_extra=f", replicas: 2, replica_metrics: [{a.url}, {b.url}]")
    ok = clean(out) and t < 90 and "littles-c2" in out and " PASSED" not in out.split("short test summary")[-1]
    return ok, f"rc={rc} in {t:.1f} s, clean={clean(out)}; the point is an error naming the replica"


@case("9.69-sse-100MB-line", "HANG")
def sse_huge_line(d: Path) -> tuple[bool, str]:
    payload = b'{"id":"x","choices":[{"index":0,"text":"' + b"x" * 100_000_000 + b'"}]}'
    rss0 = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    rc, out, t = -1, "", 0.0
    with StubServer(model="roofline-tiny", max_model_len=1024, faults=Fault(after=1, data=payload)) as s:
        rc, out, t = pytest_run(d, s, timeout=150)
    passed = "PASSED probe.roofline.yaml::littles" in out
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return clean(out) and not passed and t < 120, (
        f"rc={rc} in {t:.1f} s, clean={clean(out)}, PASS={passed}, peak RSS {max(peak, rss0) / 1024:.0f} MB"
    )


@case("9.79c-version-hostile", "NOTE")
def version_hostile(d: Path) -> tuple[bool, str]:
    with StubServer(model="roofline-tiny", max_model_len=1024, version="<script>\x1b[2J../x") as s:
        rc, out, t = pytest_run(d, s)
    doc = json.loads(next((d / "out").rglob("results.json")).read_text())
    v = doc["setup"]["engine"]["version"]
    return "\x1b" not in out and "\x1b" not in json.dumps(
        doc
    ), f"rc={rc}; ESC in terminal: {out.count(chr(27))}; version {v!r}"


@case("9.79d-version-20MB", "NOTE")
def version_huge(d: Path) -> tuple[bool, str]:
    with StubServer(model="roofline-tiny", max_model_len=1024, version="1" * 20_000_000) as s:
        rc, out, t = pytest_run(d, s)
    sizes = {f.name: f.stat().st_size for f in (d / "out").rglob("*") if f.is_file()}
    big = {k: v for k, v in sizes.items() if v > 5_000_000}
    return not big and len(out) < 5_000_000, f"rc={rc}; files over 5 MB: {big or 'none'}; pytest output {len(out):,} B"


def _children(pid: int) -> set[int]:
    parents = {}
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            with contextlib.suppress(OSError):
                parents[int(p.name)] = int((p / "stat").read_text().rsplit(")", 1)[1].split()[1])
    out, front = set(), {pid}
    while front:
        front = {c for c, pp in parents.items() if pp in front and c not in out}
        out |= front
    return out


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return -1


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _interrupt(d: Path, sig: int, twice: bool = False) -> tuple[bool, str]:
    sweep = "  processes: 2\n  timeline: 0.25 s\n"
    (d / "probe.roofline.yaml").write_text(
        PROBE_YAML.format(engine_extra="", workload_extra="", sweep_extra=sweep)
        .replace("[1, 2]", "[1, 2, 3, 4]")
        .replace(": 6\n", ": 40\n")
        .replace("output_len: 4", "output_len: 8")
        .replace("at: {concurrency: 2}", "at: {concurrency: every}")
    )
    with StubServer(
        model="roofline-tiny", max_model_len=1024, token_delay_s=0.03, metrics="vllm:num_requests_running 0\n"
    ) as s:
        proc = subprocess.Popen(
            [
                PY,
                "-m",
                "pytest",
                "-p",
                "no:cacheprovider",
                "probe.roofline.yaml",
                "--endpoint",
                s.url + "/v1",
                "--roofline-out",
                "out",
            ],
            cwd=d,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=sigint_as_ctrl_c,  # a probe started with '&' from a script hands its children SIGINT ignored
        )
        results = d / "out" / "probe.roofline" / "results.json"
        end = time.monotonic() + 150
        kids: set[int] = set()
        while time.monotonic() < end:
            with contextlib.suppress(OSError, ValueError):
                if len(json.loads(results.read_text())["points"]) >= 1:
                    kids = _children(proc.pid)
                    if len(kids) >= 3:
                        break
            time.sleep(0.1)
        os.kill(proc.pid, sig)
        if twice:
            time.sleep(0.3)
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(60)
        time.sleep(8)
        left = [k for k in kids if _alive(k)]
    status = json.loads(results.read_text())["status"]
    for k in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(k, signal.SIGKILL)
    return not left and status == "interrupted", (
        f"children before: {len(kids)}, left 8 s after: {len(left)}; results.json status {status!r}"
    )


@case("9.81-sigkill-mid-sweep", "ORPHAN")
def sigkill(d: Path) -> tuple[bool, str]:
    return _interrupt(d, signal.SIGKILL)


@case("9.80-sigint-mid-sweep", "NOTE")
def sigint(d: Path) -> tuple[bool, str]:
    return _interrupt(d, signal.SIGINT)


@case("9.82-double-sigint", "NOTE")
def double_sigint(d: Path) -> tuple[bool, str]:
    return _interrupt(d, signal.SIGINT, twice=True)


@case("9.47-dataset-bad-tokenizer", "TRACEBACK")
def bad_tokenizer(d: Path) -> tuple[bool, str]:
    (d / "p.jsonl").write_text('{"prompt": "one two"}\n{"prompt": "three"}\n')
    (d / "tokenizer.json").write_text('{"version": "1.0", "model": {"type": "NoSuchModel"}}')
    with StubServer(model="roofline-tiny", max_model_len=1024) as s:
        rc, out, t = pytest_run(d, s, workload_extra=", dataset: {path: p.jsonl, tokenizer: tokenizer.json}")
    return clean(
        out
    ) and "cannot be loaded" in out, f"rc={rc}, clean={clean(out)}, names the tokenizer: {'cannot be loaded' in out}"


# ------------------------------------------------------------------------------------------------ in-process / CLI
def check_yaml(
    d: Path,
    yaml_text: str,
    files: dict[str, bytes] | None = None,
    timeout: float = 60,
    limit_as_gb: float | None = None,
) -> tuple[int, str, float]:
    if "  output_len: {dist: file" in yaml_text:  # the length file replaces the fixed output length
        yaml_text = yaml_text.replace("  output_len: 4\n", "", 1)
    for name, data in (files or {}).items():
        (d / name).write_bytes(data)
    (d / "p.yaml").write_text(yaml_text)
    pre = (
        f"import resource; resource.setrlimit(resource.RLIMIT_AS, ({int(limit_as_gb * 2**30)}, "
        f"{int(limit_as_gb * 2**30)})); "
        if limit_as_gb
        else ""
    )
    return sh(
        [PY, "-c", pre + "from pytest_roofline.cli.parser import main; raise SystemExit(main(['check', 'p.yaml']))"],
        d,
        timeout,
    )


TINY = (
    'hardware: cpu\nmodel: roofline-tiny\nengine: {{name: vllm, version: "0.32.0"}}\n'
    "workload:\n  input_len: 16\n  output_len: 4\n{extra}predictions:\n  - id: r\n    quantity: ridge_point\n"
    "    predicted: model\n"
)


def dataset_case(
    d: Path, field: str, files: dict[str, bytes], expect: str, limit_as_gb: float | None = None
) -> tuple[bool, str]:
    rc, out, t = check_yaml(d, TINY.format(extra=field), files, limit_as_gb=limit_as_gb)
    first = next((ln for ln in out.splitlines() if "p.yaml" in ln), out.strip()[:160])
    return clean(out) and "MemoryError" not in out and expect in out and rc == 1, f"rc={rc}: {first[:160]}"


@case("9.42-dataset-non-utf8", "TRACEBACK")
def non_utf8(d: Path) -> tuple[bool, str]:
    oks, whats = [], []
    for name, data, fld in [
        ("a.jsonl", b'{"prompt": "a\xff\xfe"}\n', "  dataset: {path: a.jsonl}\n"),
        ("b.json", b'[{"conversations": [{"value": "\xff"}]}]', "  dataset: {path: b.json}\n"),
        ("c.json", '[{"x": 1}]'.encode("utf-16"), "  dataset: {path: c.json}\n"),
        ("l.txt", b"12\n\xff\n", "  output_len: {dist: file, path: l.txt}\n"),
    ]:
        sub = d / name.replace(".", "_")
        sub.mkdir()
        ok, what = dataset_case(sub, fld.replace("  input_len", ""), {name: data}, "UTF")
        oks.append(ok)
        whats.append(what.split(": ", 1)[-1][:70])
    return all(oks), "; ".join(whats)


@case("9.43-dataset-deep-nesting", "TRACEBACK")
def deep_dataset(d: Path) -> tuple[bool, str]:
    deep = ("[" * 100_000 + "]" * 100_000).encode()
    oks = []
    for name, data, fld in [
        ("a.jsonl", b'{"prompt": "a"}\n' + deep + b"\n", "  dataset: {path: a.jsonl}\n"),
        ("b.json", deep, "  dataset: {path: b.json}\n"),
        ("l.txt", deep, "  output_len: {dist: file, path: l.txt}\n"),
    ]:
        sub = d / name.replace(".", "_")
        sub.mkdir()
        oks.append(dataset_case(sub, fld, {name: data}, "nest more than 64")[0])
    return all(oks), f"{sum(oks)} of 3 a one-line error naming the file"


@case("9.40-dataset-bigint-output", "NOTE")
def bigint(d: Path) -> tuple[bool, str]:
    return dataset_case(
        d,
        "  dataset: {path: a.jsonl}\n",
        {"a.jsonl": b'{"prompt": "a", "output_len": 1' + b"0" * 30 + b"}\n"},
        "output_len must be",
    )


def _big_jsonl(path: Path, size_bytes: int) -> None:
    line = json.dumps({"prompt": "word " * 200, "output_len": 8}).encode() + b"\n"
    with open(path, "wb") as f:
        chunk = line * 1000
        for _ in range(size_bytes // len(chunk)):
            f.write(chunk)


@case("9.45-dataset-1GB", "KILLED/OOM", slow=True)
def gigabyte(d: Path) -> tuple[bool, str]:
    _big_jsonl(d / "big.jsonl", 1 << 30)
    (d / "p.yaml").write_text(TINY.format(extra="  dataset: {path: big.jsonl}\n"))
    rc, out, t = sh(
        [
            PY,
            "-c",
            "import resource; resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30)); "
            "from pytest_roofline.cli.parser import main; raise SystemExit(main(['check', 'p.yaml']))",
        ],
        d,
        300,
    )
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    for f in ("sparse.jsonl", "sparse.json", "lens.txt"):
        with open(d / f, "wb") as fh:
            fh.truncate(8 << 30)
    sparse = [
        check_yaml(d, TINY.format(extra=fld), limit_as_gb=3)
        for fld in (
            "  dataset: {path: sparse.jsonl}\n",
            "  dataset: {path: sparse.json, format: sharegpt}\n",
            "  output_len: {dist: file, path: lens.txt}\n",
        )
    ]
    (d / "big.jsonl").unlink()
    ok = rc == 0 and clean(out) and all(r == 1 and clean(o) and "MemoryError" not in o for r, o, _ in sparse)
    return ok, (
        f"1 GB JSONL under a 3 GB address space: rc={rc} in {t:.1f} s (peak RSS of any child so far "
        f"{peak:.0f} MB); sparse 8 GiB dataset/sharegpt/lengths: rc {[r for r, _, _ in sparse]}"
    )


@case("9.53-calibration-file-hand-edited", "HANG")
def calibration_files(d: Path) -> tuple[bool, str]:
    from pytest_roofline.errors import CalibrationError
    from pytest_roofline.model.calibration import load_calibration

    bomb = ["schema: pytest-roofline/calibration", "l0: &l0 [" + ", ".join(["lol"] * 9) + "]"]
    bomb += [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, 9)]
    (d / "bomb.yaml").write_text("\n".join(bomb) + "\n")
    (d / "deep.yaml").write_text("a: " + "[" * 100_000 + "]" * 100_000 + "\n")
    os.mkfifo(d / "fifo.yaml")
    out = []
    for p in (d / "bomb.yaml", d / "deep.yaml", Path("/dev/zero"), d / "fifo.yaml", d):
        t0 = time.monotonic()
        try:
            load_calibration(p)
            out.append((False, f"{p.name}: loaded"))
        except CalibrationError:
            out.append((time.monotonic() - t0 < 5, f"{p.name or p}: CalibrationError"))
        except BaseException as exc:  # noqa: BLE001
            out.append((False, f"{p.name}: {type(exc).__name__}"))
    return all(o for o, _ in out), "; ".join(w for _, w in out)


@case("9.52-calibrate-duplicate-points", "NOTE")
def calibrate_dupes(d: Path) -> tuple[bool, str]:
    rec = REPO / "predictions" / "recorded" / "cpu-tiny-2026-12-05.results.json"
    shutil.copy(rec, d / "copy.json")
    base = [PY, "-m", "pytest_roofline.cli", "calibrate"]
    tail = ["--points", "C=1,C=16", "--fit", "step_overhead_s"]
    rc1, _, _ = sh([*base, str(rec), *tail, "-o", str(d / "one.yaml")], REPO)
    rc3, out, _ = sh([*base, str(rec), str(d / "copy.json"), str(rec), *tail, "-o", str(d / "three.yaml")], REPO)
    import yaml

    one = yaml.safe_load((d / "one.yaml").read_text())["uncertainty"]
    three = yaml.safe_load((d / "three.yaml").read_text())["uncertainty"]
    return rc1 == rc3 == 0 and one == three, "σ(triple)/σ(single) = " + ", ".join(
        f"{k}: {three[k] / one[k]:.3f}" for k in one if one[k]
    ) + f"; notes: {out.count('left out')}"


@case("2-fuzzer-concurrency-1e40", "TRACEBACK")
def concurrency_1e40(d: Path) -> tuple[bool, str]:
    (d / "p.yaml").write_text(
        "hardware: a100-sxm4-80gb\nmodel: qwen3-8b\npredictions:\n  - id: params\n"
        "    quantity: output_throughput\n    at: {concurrency: " + "9" * 40 + "}\n"
        "    predicted: 5,060 tok/s\n"
    )
    rc, out, t = sh([PY, "-m", "pytest", "-p", "no:cacheprovider", "p.yaml", "-q"], d, 120)
    return clean(out) and "outside [0, 10,000]" in out, f"rc={rc}, clean={clean(out)} in {t:.1f} s"


@case("7.24-report-bad-yaml", "NOTE")
def report_1e999(d: Path) -> tuple[bool, str]:
    (d / "p.yaml").write_text(
        "hardware: a100-sxm4-80gb\nmodel: qwen3-8b\npredictions:\n  - id: p\n"
        "    quantity: max_num_seqs\n    predicted: 1e999\n"
    )
    rc, out, _ = sh([PY, "-m", "pytest_roofline.cli", "report", "p.yaml", "-o", "r.html"], d)
    return rc != 0 and clean(out), f"rc={rc}: {out.strip().splitlines()[-1][:120]}"


@case("3.16-deep-nesting", "TRACEBACK")
def yaml_deep(d: Path) -> tuple[bool, str]:
    (d / "p.yaml").write_text(
        "hardware: a100-sxm4-80gb\nmodel: qwen3-8b\nengine:\n  args:\n    x: "
        + "[" * 100_000
        + "]" * 100_000
        + "\npredictions: []\n"
    )
    rc, out, _ = sh([PY, "-m", "pytest", "-p", "no:cacheprovider", "p.yaml", "-q"], d, 120)
    return clean(out), f"rc={rc}, clean={clean(out)}: {next((ln for ln in out.splitlines() if 'nest' in ln), '')[:100]}"


@case("9.39-peers-10000-files", "HANG", slow=True)
def report_10k(d: Path) -> tuple[bool, str]:
    src = json.loads((REPO / "tests/data/peers/cpu-tiny-vllm-bench/sweep_c1.json").read_text())
    folder = d / "bench"
    folder.mkdir()
    for c in range(1, 10_001):
        (folder / f"c{c}.json").write_text(json.dumps({**src, "max_concurrency": c}))
    rc, out, t = sh(
        [
            PY,
            "-m",
            "pytest_roofline.cli",
            "report",
            str(REPO / "predictions/cpu-tiny.yaml"),
            str(folder),
            "-o",
            str(d / "r.html"),
        ],
        d,
        300,
    )
    shutil.rmtree(folder)
    return clean(out) and t < 120, f"rc={rc} in {t:.1f} s (killed at 300 s before): {out.strip()[-100:]}"


@case("9.37-peers-deep-nesting", "INTERNALERROR")
def peers_deep(d: Path) -> tuple[bool, str]:
    (d / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (d / "p.yaml").write_text((REPO / "predictions/cpu-tiny.yaml").read_text())
    rc, out, _ = sh([PY, "-m", "pytest", "-p", "no:cacheprovider", "p.yaml", "--replay", "deep.json", "-q"], d, 120)
    said = next((ln for ln in out.splitlines() if "nest" in ln), "")[:120]
    return clean(out) and rc != 0, f"rc={rc}, clean={clean(out)}: {said}"


@case("9.37b-peers-deep-object-jsonl-folder", "INTERNALERROR")
def peers_deep_more(d: Path) -> tuple[bool, str]:
    ok_line = json.dumps(json.loads((REPO / "tests/data/peers/cpu-tiny-vllm-bench/sweep_c1.json").read_text()))
    inputs = {"deep-object": '{"a":' * 100_000 + "1" + "}" * 100_000,
              "jsonl-deep": ok_line + "\n" + "[" * 100_000 + "]" * 100_000 + "\n"}
    (d / "p.yaml").write_text((REPO / "predictions/cpu-tiny.yaml").read_text())
    bad, seen = [], []
    for name, text in inputs.items():
        (d / name).mkdir()
        (d / name / "sweep_c1.json").write_text(text)
        for target in (f"{name}/sweep_c1.json", name):
            rc, out, _ = sh([PY, "-m", "pytest", "-p", "no:cacheprovider", "p.yaml", "--replay", target, "-q"], d, 120)
            seen.append(f"{target}: rc={rc}")
            if not clean(out) or rc == 0 or "nest more than 64 levels" not in out:
                bad.append(target)
    return not bad, "; ".join(seen) + (f"; NOT one clear error: {bad}" if bad else "")


PEER_YAML = """\
hardware: cpu
model: roofline-tiny
engine: {name: vllm, version: "0.32.0"}
sweep: {mode: closed, concurrency: [1, 2, 4]}
predictions:
  - id: tput
    quantity: output_throughput
    at: {concurrency: [1, 2, 4]}
    predicted: 100 tok/s
    tolerance: ±1000000 tok/s
  - id: ttft
    quantity: ttft_p50
    at: {concurrency: [1, 2, 4]}
    predicted: 10 ms
    tolerance: ±1000000 ms
  - id: tpot
    quantity: tpot_p50
    at: {concurrency: [1, 2, 4]}
    predicted: 10 ms
    tolerance: ±1000000 ms
  - id: littles
    quantity: littles_law_ratio
    at: {concurrency: [1, 2, 4]}
    predicted: 1.0
    tolerance: ±99%
"""


def _peer_replay(d: Path, target: Path) -> tuple[int, str, list[str]]:
    (d / "p.yaml").write_text(PEER_YAML)
    rc, out, _ = sh([PY, "-m", "pytest", "-p", "no:cacheprovider", "p.yaml", "--replay", str(target),
                     "--roofline-allow-mismatch", "-rA"], d, 120)
    passed = sorted({ln.split("::")[1].split()[0] for ln in out.splitlines() if ln.startswith("PASSED") and "::" in ln})
    return rc, out, passed


@case("9.33-peers-completed-lt-num-prompts", "FALSE-PASS")
def peers_completed_1(d: Path) -> tuple[bool, str]:
    folder = d / "bench"
    folder.mkdir()
    for f in sorted((REPO / "tests/data/peers/cpu-tiny-vllm-bench").glob("sweep_c*.json")):
        doc = json.loads(f.read_text())
        doc.pop("failed", None)  # the older format: no "failed" key
        n = doc.get("completed") or 1
        doc.update(completed=1, num_prompts=10 * int(doc.get("max_concurrency") or 1),
                   total_input_tokens=(doc.get("total_input_tokens") or 0) // n,
                   total_output_tokens=(doc.get("total_output_tokens") or 0) // n)
        (folder / f.name).write_text(json.dumps(doc))
    ctl_rc, _, ctl = _peer_replay(d, REPO / "tests/data/peers/cpu-tiny-vllm-bench")
    rc, out, passed = _peer_replay(d, folder)
    return clean(out) and not passed and bool(ctl), (f"control: {len(ctl)} measured PASS; completed 1 of "
                                                     f"num_prompts: rc={rc}, measured PASS: {passed or 'none'}")


@case("9.39c-aiperf-zero", "FALSE-PASS")
def aiperf_zero(d: Path) -> tuple[bool, str]:
    doc = json.loads((REPO / "tests/data/peers/profile_export_aiperf.json").read_text())
    notes, bad = [], False
    for name in ("errors-40", "no-error-count"):
        z = {}
        for tag, m in doc.items():
            if isinstance(m, dict) and "avg" in m and tag not in ("input_sequence_length", "output_sequence_length"):
                m = {**m, **{k: 0 for k in ("avg", "p50", "p90", "p95", "p99", "min", "max") if k in m}}
            z[tag] = m
        if isinstance(z.get("request_count"), dict):
            z["request_count"] = {**z["request_count"], "avg": 0}
        if name == "errors-40":
            z["error_request_count"] = {"unit": "requests", "avg": 40}
        else:
            z.pop("error_request_count", None)
        f = d / name / "profile_export_aiperf.json"
        f.parent.mkdir()
        f.write_text(json.dumps(z))
        rc, out, passed = _peer_replay(d, f)
        notes.append(f"{name}: rc={rc}, measured PASS: {passed or 'none'}")
        bad = bad or bool(passed) or not clean(out)
    return not bad, "; ".join(notes)


# ---------------------------------------------------------------------------- malformed stream events (9.70, 9.70b)
STREAM_PREDICTIONS = """\
  - id: tput-c1
    quantity: output_throughput
    at: {concurrency: 1}
    predicted: 100 tok/s
    tolerance: ±1000000 tok/s
  - id: ttft-c1
    quantity: ttft_p50
    at: {concurrency: 1}
    predicted: 10 ms
    tolerance: ±1000000 ms
  - id: preempt-c2
    quantity: preemptions
    at: {concurrency: 2}
    predicted: 0
    tolerance: exact
"""
COMPACT_NOT_JSON = (b'{"id":"cmpl-x","object":"text_completion","created":1,"model":"roofline-tiny",'
                    b'"choices":[{"index":0,"text":" x"')
BAD_UTF8 = (b'{"id":"x","object":"text_completion","choices":[{"index":0,"text":"\xff\xfe","logprobs":null,'
            b'"finish_reason":null}]}')


def _stream_case(d: Path, data: bytes, sweep_extra: str) -> tuple[bool, str]:
    with StubServer(model="roofline-tiny", max_model_len=1024, token_delay_s=0.005, faults=Fault(after=1, data=data),
                    metrics="vllm:num_requests_running 0\nvllm:num_preemptions_total 0\n") as s:
        (d / "probe.roofline.yaml").write_text(
            PROBE_YAML.format(engine_extra="", workload_extra="", sweep_extra=sweep_extra) + STREAM_PREDICTIONS)
        rc, out, t = sh([PY, "-m", "pytest", "-p", "no:cacheprovider", "probe.roofline.yaml", "--endpoint",
                         s.url + "/v1", "--roofline-out", "out", "-rA"], d, 120)
    passed = sorted({ln.split("::")[1].split()[0] for ln in out.splitlines()
                     if ln.startswith("PASSED") and "::" in ln})
    return clean(out) and not passed, f"rc={rc} in {t:.1f} s, clean={clean(out)}, measured PASS: {passed or 'none'}"


@case("9.70-stream-bad-utf8", "FALSE-PASS")
def stream_bad_utf8(d: Path) -> tuple[bool, str]:
    return _stream_case(d, BAD_UTF8, "")


@case("9.70b-stream-malformed-compact", "FALSE-PASS")
def stream_malformed_compact(d: Path) -> tuple[bool, str]:
    return _stream_case(d, COMPACT_NOT_JSON, "")


@case("9.86b-adaptive-malformed-compact", "FALSE-PASS")
def adaptive_malformed_compact(d: Path) -> tuple[bool, str]:
    return _stream_case(d, COMPACT_NOT_JSON, "  adaptive: true\n")


@case("9.88-processes-malformed-compact", "FALSE-PASS")
def processes_malformed_compact(d: Path) -> tuple[bool, str]:
    return _stream_case(d, COMPACT_NOT_JSON, "  processes: 2\n")


# ------------------------------------------------------------------ the history store
RECORDED = REPO / "predictions/recorded/cpu-tiny-2026-12-05.results.json"


_ISO = re.compile(r"^\d{4}-\d\d-\d\dT")


def shifted(d: Path, days: int) -> Path:
    """RECORDED as another night: a copy in ``d`` with every time in it (its ``created_at``, each point's start and
    end, the records' times) moved by ``days`` days, its figures as they are. A replay stores a measurement once
    (nightly.md "Replayed runs": the second replay of one file is never stored, and never touches the store), so a
    case that stores several nights, or a night after the store holds one, replays distinct files."""
    if not days:
        return RECORDED
    out = d / f"night{days:+d}.results.json"
    if out.exists():
        return out
    import datetime as dt

    def move(text: str) -> str:
        t = dt.datetime.fromisoformat(text.replace("Z", "+00:00")) + dt.timedelta(days=days)
        return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if "." in text else "%Y-%m-%dT%H:%M:%SZ")

    def walk(o: object, key: str = "") -> object:
        if isinstance(o, dict):
            return {k: walk(v, k) for k, v in o.items()}
        if isinstance(o, list):
            return [walk(v, key) for v in o]
        if isinstance(o, str) and (key.endswith("_at") or key in ("t", "time")) and _ISO.match(o):
            return move(o)
        return o

    out.write_text(json.dumps(walk(json.loads(RECORDED.read_text()))))
    return out


def night(d: Path, *args: str, results: Path = RECORDED, shift: int = 0) -> tuple[int, str, float]:
    """One replayed night of predictions/cpu-tiny.yaml (the recorded CPU run) with the given history options;
    ``shift``: the recorded night moved by that many days (:func:`shifted`), another night of the store."""
    if shift:
        assert results == RECORDED, "shift moves the recorded night"
        results = shifted(d, shift)
    (d / "predictions").mkdir(exist_ok=True)
    shutil.copy(REPO / "predictions/cpu-tiny.yaml", d / "predictions/cpu-tiny.yaml")
    env = {"COLUMNS": "120"}
    return sh([PY, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:html", "--no-roofline-progress", "--replay",
               str(results), "predictions/cpu-tiny.yaml", *args], d, 300, env=env)


def cli(d: Path, *args: str) -> tuple[int, str, float]:
    return sh([PY, "-m", "pytest_roofline.cli", *args], d, 120)


@case("9.01-9.02-index-cut-and-corrupt", "NOISY")
def index_damaged(d: Path) -> tuple[bool, str]:
    hist = d / "hist"  # four nights: the recorded one moved 3, 2 and 1 days back, then itself
    night(d, f"--roofline-history={hist}", shift=-3)
    night(d, f"--roofline-history={hist}", shift=-2)
    idx = hist / "index.jsonl"
    lines = idx.read_bytes().splitlines(keepends=True)
    idx.write_bytes(lines[0] + lines[1][: len(lines[1]) // 2])  # 9.01: cut mid-line
    rc1, out1, _ = night(d, f"--roofline-history={hist}", shift=-1)
    lines = idx.read_bytes().splitlines(keepends=True)
    idx.write_bytes(lines[0] + b"\x00\xff garbage \x01\n" + b"".join(lines[1:]))  # 9.02: a middle line of garbage
    rc2, out2, _ = night(d, f"--roofline-history={hist}")
    runs = len(list(hist.rglob("run.json")))
    noisy = [o for o in (out1, out2) if "HistoryIndexRebuiltWarning" in o or "_store.py" in o]
    ok = rc1 == 0 and rc2 == 0 and not noisy and runs == 4 and clean(out1 + out2)
    return ok, f"rc {rc1}/{rc2}, raw warnings: {len(noisy)}, stored runs {runs} of 4, clean={clean(out1 + out2)}"


@case("9.03-index-wrong-types", "TRACEBACK")
def index_wrong_types(d: Path) -> tuple[bool, str]:
    hist = d / "hist"
    night(d, f"--roofline-history={hist}")
    first = json.loads((hist / "index.jsonl").read_text().splitlines()[0])
    bad = dict(first, run_id=first["run_id"][:-1] + "z", label=7, status=["x"], measured="12", unit={"a": 1})
    for k, v in list(bad.items()):
        if isinstance(v, list) and k not in ("status",):
            bad[k] = [dict(x, measured="12", status=["x"], unit={"a": 1}) if isinstance(x, dict) else x for x in v]
    with open(hist / "index.jsonl", "a") as fh:
        fh.write(json.dumps(bad) + "\n")
    rh, oh, _ = cli(d, "history", str(hist), "-o", str(d / "t.html"))
    rc, oc, _ = cli(d, "compare", first["run_id"], bad["run_id"], "--store", str(hist))
    return clean(oh + oc), f"history rc={rh}, compare rc={rc}, clean={clean(oh + oc)}"


@case("9.26-history-deep-index", "INTERNALERROR")
def index_deep(d: Path) -> tuple[bool, str]:
    hist = d / "hist"
    night(d, f"--roofline-history={hist}")
    with open(hist / "index.jsonl", "a") as fh:
        fh.write("[" * 100_000 + "]" * 100_000 + "\n")
    rp, op, _ = night(d, f"--roofline-history={hist}")
    rh, oh, _ = cli(d, "history", str(hist), "-o", str(d / "t.html"))
    return clean(op + oh) and rp == 0, f"pytest rc={rp}, history rc={rh}, clean={clean(op + oh)}"


@case("9.12-store-cannot-take-the-run", "LOST-DATA")
def store_refuses(d: Path) -> tuple[bool, str]:
    # as root chmod a-w does not stop a write; a file where the setup's folder must go refuses the run the same way
    hist = d / "hist"
    hist.mkdir()
    (hist / "cpu").write_text("in the way")
    rc, out, _ = night(d, f"--roofline-history={hist}")
    ok = rc != 0 and "could not store" in out and clean(out)
    return ok, f"rc={rc} (was 0), says 'could not store': {'could not store' in out}"


_LOCKER = """
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=0)
c.execute("BEGIN EXCLUSIVE")
open(sys.argv[2], "w").close()
time.sleep(float(sys.argv[3]))
"""


@case("9.15-sqlite-locked-at-store", "LOST-DATA")
def sqlite_locked(d: Path) -> tuple[bool, str]:
    db = d / "h.db"
    url = f"sqlite:///{db}"
    night(d, f"--roofline-history={url}", shift=-1)  # creates the database; the recorded night is a new run
    # the lock is taken after the store was opened (at collection's end) and held past the session's end
    (d / "conftest.py").write_text(
        "import subprocess, sys, time, os\n"
        "def pytest_collection_finish(session):\n"
        f"    subprocess.Popen([sys.executable, '-c', {_LOCKER!r}, {str(db)!r}, {str(d / 'locked')!r}, '40'])\n"
        f"    while not os.path.exists({str(d / 'locked')!r}): time.sleep(0.05)\n")
    rc, out, _ = night(d, f"--roofline-history={url}")
    (d / "conftest.py").unlink()
    ok = rc != 0 and "could not store" in out and clean(out)
    return ok, f"rc={rc} (was 0), says 'could not store': {'could not store' in out}, clean={clean(out)}"


@case("9.24-compare-hostile", "NOTE")
def compare_hostile(d: Path) -> tuple[bool, str]:
    hist = d / "hist"
    nights = [night(d, f"--roofline-history={hist}", "--roofline-history-label", label, shift=shift)
              for label, shift in (("a\x1b[2J\x1b]0;owned\x07b", -1), ("c\x1b[31mred", 0))]
    ids = [json.loads(x)["run_id"] for x in (hist / "index.jsonl").read_text().splitlines()]
    if len(ids) < 2:
        lost = any(rc == 0 for rc, _, _ in nights)
        tails = " | ".join(out.strip().splitlines()[-1][:150] for _, out, _ in nights if out.strip())
        return ("LOST-DATA" if lost else False), f"{len(ids)} of 2 runs stored, rc {[n[0] for n in nights]}: {tails}"
    rc, out, _ = cli(d, "compare", ids[0], ids[1], "--store", str(hist))
    esc = out.count("\x1b")
    return rc == 0 and esc == 0, f"compare rc={rc}, ESC bytes in output: {esc} (was 6)"


def _pg_bin() -> Path | None:
    from support.postgres import find_bin_dir

    return find_bin_dir()


@contextlib.contextmanager
def _postgres():
    from support.postgres import running_postgres

    bin_dir = _pg_bin()
    if bin_dir is None:
        raise RuntimeError("PostgreSQL is not installed (apt-get install -y postgresql)")
    with running_postgres(bin_dir) as server:
        yield server


def _pg_database(server, name: str) -> str:  # noqa: ANN001
    import sqlalchemy as sa

    engine = sa.create_engine(server.url(), isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(sa.text(f"CREATE DATABASE {name}"))
    engine.dispose()
    return server.url().rsplit("/", 1)[0] + f"/{name}"


def _pg_runs(url: str) -> int:
    from pytest_roofline.history._sql import SqlStore

    store = SqlStore(url)
    try:
        return len(store.runs())
    finally:
        store.close()


_WRITER = """
import sys, time
from pytest_roofline.history import build_records, SetupKey
from pytest_roofline.history._sql import SqlStore
url, w, at = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
time.sleep(max(0.0, at - time.time()))
store = SqlStore(url)
for i in range(5):
    rec = build_records([{"id": f"p{w}-{i}", "file": "x.yaml", "status": "pass", "mode": "math", "at": {}}],
                        setups={"x.yaml": SetupKey("cpu", "m", "1")}, started_at="2026-12-04T02:00:00Z", mode="math")[0]
    store.add(rec)
store.close()
"""


@case("9.07-four-writers-fresh-postgres", "FAILS")
def pg_writers(d: Path) -> tuple[bool, str]:
    got = []
    with _postgres() as pg:
        for attempt in range(3):
            url = _pg_database(pg, f"race{attempt}")
            at = time.time() + 3
            procs = [subprocess.Popen([PY, "-c", _WRITER, url, str(w), str(at)], cwd=REPO, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True) for w in range(4)]
            failed = sum(1 for p in procs if p.wait(180) != 0)
            got.append((_pg_runs(url), failed))
    ok = all(n == 20 and f == 0 for n, f in got)
    return ok, "; ".join(f"attempt {i + 1}: {n}/20 stored, {f} writer(s) failed" for i, (n, f) in enumerate(got))


@case("9.18b-9.19-9.20-9.22-postgres-names-passwords-stop", "LOST-DATA")
def pg_sessions(d: Path) -> tuple[bool, str]:
    import sqlalchemy as sa

    notes, bad = [], []
    with _postgres() as pg:
        # 9.19/9.20: a 300-character label, control characters in the label, a 204-character and a NUL model name
        url = _pg_database(pg, "names")
        rec = json.loads(RECORDED.read_text())
        # (the two labels on one setup: two nights, the recorded one and the night before it; the models are
        # setups of their own)
        for name, args, model in (("label-300", ["--roofline-history-label", "n" + "L" * 299], None),
                                  ("label-controls", ["--roofline-history-label", "a\x01b\x1b[2Jc\x7f"], None),
                                  ("model-204", [], "org/" + "m" * 200), ("model-nul", [], "mo\x00del")):
            results = shifted(d, -1) if name == "label-controls" else RECORDED
            if model is not None:
                results = d / f"{name}.results.json"
                results.write_text(json.dumps({**rec, "setup": {**rec["setup"], "model": {
                    **rec["setup"]["model"], "name": model}}}))
            before = _pg_runs(url)
            rc, out, _ = night(d, f"--roofline-history={url}", *args, "--roofline-allow-mismatch", results=results)
            stored = _pg_runs(url) - before
            notes.append(f"{name}: rc={rc}, stored {stored}")
            if not ((rc == 0 and stored == 1) or (rc != 0 and stored == 0 and "could not store" in out)):
                bad.append(f"{name}: lost (rc {rc}, stored {stored})")
        # 9.18b: passwords holding '/', a space, '?' (wrong ones) and a valid one holding '/'
        eng = sa.create_engine(pg.url(), isolation_level="AUTOCOMMIT")
        with eng.connect() as conn:
            conn.execute(sa.text("ALTER ROLE roofline PASSWORD 'ok/SLASH-SECRET5'"))
        eng.dispose()
        base = f"{pg.user}:{{}}@{pg.host}:{pg.port}/postgres"
        for pw in ("pw/SLASH-SECRET1", "pw SPACE-SECRET2", "pw?QUERY-SECRET3", "ok/SLASH-SECRET5"):
            u = "postgresql+psycopg://" + base.format(pw)
            rp, op, _ = night(d, f"--roofline-history={u}")
            outs = [op, cli(d, "history", u, "-o", str(d / "t.html"))[1], cli(d, "compare", "a", "b", "--store", u)[1]]
            secret = pw.split("-", 1)[1]
            leaked = [w for w, o in zip(("pytest", "history", "compare"), outs) if secret in o]
            files = [str(f.relative_to(d)) for f in d.rglob("*") if f.is_file() and f.stat().st_size < 50_000_000
                     and secret.encode() in f.read_bytes() and f.suffix != ".py"]
            notes.append(f"password {pw.split('-')[0]!r}: pytest rc={rp}{' (stored)' if 'stored run' in op else ''}, "
                         f"printed by {leaked or 'nothing'}, in files {files or 'none'}")
            if leaked or files:
                bad.append(f"{pw}: leaked")
        # 9.22: PostgreSQL stopped (immediate) while the session runs (after collection, before the run is stored)
        from support.postgres import find_bin_dir

        url = "postgresql+psycopg://" + base.format("ok/SLASH-SECRET5")
        stop = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        stop += [str(find_bin_dir() / "pg_ctl"), "-D", str(pg.data_dir), "-m", "immediate", "-w", "stop"]
        (d / "conftest.py").write_text("import subprocess\n"
                                       "def pytest_collection_finish(session):\n"
                                       f"    subprocess.run({stop!r}, capture_output=True, timeout=60)\n")
        rc, out, t = night(d, f"--roofline-history={url}", shift=-1)  # a night the database does not hold yet
        (d / "conftest.py").unlink()
        notes.append(f"stopped mid-run: rc={rc} in {t:.1f} s, says 'could not store': {'could not store' in out}")
        if rc == 0 or not clean(out) or "SLASH-SECRET5" in out:
            bad.append("9.22: exit 0, unclean or the password printed")
    return not bad, "; ".join(notes) + (f"; NOT OK: {bad}" if bad else "")


# ------------------------------------------------------------------ the history store: the rest of the cases
NO_DAC = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--inh-caps=-dac_override,-dac_read_search"]


def _runs_listed(store: str) -> int:
    from pytest_roofline.history import open_store

    s = open_store(store)
    try:
        return len(s.runs())
    finally:
        s.close()


def _peak_mb(out: str) -> float:
    """The peak RSS /usr/bin/time -f 'PEAK %M' printed last (MB)."""
    m = re.findall(r"PEAK (\d+)", out)
    return int(m[-1]) / 1024 if m else float("nan")


@case("9.04-index-nan", "TRACEBACK")
def index_nan(d: Path) -> tuple[bool, str]:
    hist = d / "hist"
    night(d, f"--roofline-history={hist}")
    line = (hist / "index.jsonl").read_text().splitlines()[0]
    doc = json.loads(line)
    rows = doc["values"]["rows"]
    fields = doc["values"]["fields"]
    for r in rows:
        for k in ("measured", "predicted", "band_low", "band_high", "model_value"):
            if k in fields and isinstance(r[fields.index(k)], (int, float)):
                r[fields.index(k)] = float("nan") if k != "measured" else float("inf")
    doc["run_id"] = doc["run_id"][:-1] + ("0" if doc["run_id"][-1] != "0" else "1")
    with open(hist / "index.jsonl", "a") as fh:
        fh.write(json.dumps(doc) + "\n")
    rp, op, _ = night(d, f"--roofline-history={hist}")
    rh, oh, _ = cli(d, "history", str(hist), "-o", str(d / "t.html"))
    return clean(op + oh) and rp == 0, f"pytest rc={rp}, history rc={rh}, clean={clean(op + oh)}"


@case("9.05-index-huge", "NOISY")
def index_huge(d: Path) -> tuple[bool, str]:
    hist = d / "hist"  # two earlier nights, then the recorded one
    night(d, f"--roofline-history={hist}", shift=-2)
    night(d, f"--roofline-history={hist}", shift=-1)
    with open(hist / "index.jsonl", "ab") as fh:
        fh.write(b'{"run_id": "' + b"\x01garbage" * (150_000_000 // 8) + b"\n")
    size = (hist / "index.jsonl").stat().st_size
    rc, out, t = sh(["/usr/bin/time", "-f", "PEAK %M", PY, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:html",
                     "--no-roofline-progress", "--replay", str(RECORDED), "predictions/cpu-tiny.yaml",
                     f"--roofline-history={hist}"], d, 300)
    rh, oh, th = sh(["/usr/bin/time", "-f", "PEAK %M", PY, "-m", "pytest_roofline.cli", "history", str(hist), "-o",
                     str(d / "t.html")], d, 300)
    runs = len(list(hist.rglob("run.json")))
    listed = _runs_listed(str(hist))
    noisy = "HistoryIndexRebuiltWarning" in out + oh or "_store.py" in out + oh
    ok = rc == 0 and clean(out + oh) and not noisy and runs == listed == 3 and t < 120 and _peak_mb(out) < 600
    return ok, (f"index {size / 1e6:.0f} MB; pytest rc={rc} in {t:.1f} s, peak RSS {_peak_mb(out):.0f} MB; "
                f"history rc={rh} in {th:.1f} s, peak {_peak_mb(oh):.0f} MB; raw warning: {noisy}; "
                f"run.json {runs}, listed {listed} of 3")


_DIR_WRITER = """
import sys, time
from pytest_roofline.history import build_records, SetupKey, open_store
url, w, at, n = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
time.sleep(max(0.0, at - time.time()))
store = open_store(url)
for i in range(n):
    rec = build_records([{"id": f"p{w}-{i}", "file": "x.yaml", "status": "pass", "mode": "math", "at": {}}],
                        setups={"x.yaml": SetupKey("cpu", "m", "1")}, started_at="2026-12-04T02:00:00Z", mode="math")[0]
    print(store.add(rec).run_id)
store.close()
"""


def _writers(url: str, writers: int, each: int) -> tuple[int, int, int]:
    at = time.time() + 2
    procs = [subprocess.Popen([PY, "-c", _DIR_WRITER, url, str(w), str(at), str(each)], cwd=REPO,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for w in range(writers)]
    outs = [p.communicate(timeout=180)[0] for p in procs]
    ids = {ln for o in outs for ln in o.split() if re.match(r"^\d{8}T", ln)}
    return len(ids), _runs_listed(url), sum(1 for p in procs if p.returncode != 0)


@case("9.06-9.06b-concurrent-writers-dir-sqlite", "FAILS")
def writers_dir_sqlite(d: Path) -> tuple[bool, str]:
    got_dir = _writers(str(d / "hist"), 6, 15)
    got_sql = _writers(f"sqlite:///{d / 'h.db'}", 4, 10)
    index_lines = len((d / "hist" / "index.jsonl").read_text().splitlines())
    ok = got_dir == (90, 90, 0) and index_lines == 90 and got_sql == (40, 40, 0)
    return ok, (f"dir 6x15: {got_dir[0]} ids, {got_dir[1]} listed, {index_lines} index lines, {got_dir[2]} failed; "
                f"sqlite 4x10: {got_sql[0]} ids, {got_sql[1]} listed, {got_sql[2]} failed")


#: names that climb out of the store (seven "../" then the system's temporary folder), with a NUL and a bidi mark
_UP = "../" * 7 + tempfile.gettempdir().strip("/") + "/"
HOSTILE = {"model": _UP + "ESCAPE-model\x00/..\u202eevil" + "m" * 50,
           "engine": _UP + "ESCAPE-engine/" + "v" * 5000}


def _hostile_results(d: Path) -> Path:
    rec = json.loads(RECORDED.read_text())
    setup = rec["setup"]
    setup["model"] = {**setup["model"], "name": HOSTILE["model"]}
    setup["engine"] = {**setup["engine"], "version": HOSTILE["engine"]}
    f = d / "hostile.results.json"
    f.write_text(json.dumps(rec))
    return f


def _tree(root: Path) -> set[str]:
    return {str(p) for p in root.rglob("*")}


@case("9.08-9.09-hostile-names-dir-sqlite", "OUTSIDE-STORE")
def hostile_names(d: Path) -> tuple[bool, str]:
    res = _hostile_results(d)
    before = _tree(d.parent) - _tree(d)
    passwd = Path("/etc/passwd").stat().st_mtime
    escaped_before = set(map(str, Path(tempfile.gettempdir()).glob("ESCAPE-*")))
    notes, bad = [], []
    for store in (str(d / "hist"), f"sqlite:///{d / 'h.db'}"):
        rc, out, _ = night(d, f"--roofline-history={store}", "--roofline-allow-mismatch", results=res)
        rh, oh, _ = cli(d, "history", store, "-o", str(d / "t.html"))
        n = _runs_listed(store)
        notes.append(f"{'sqlite' if ':' in store else 'dir'}: pytest rc={rc}, listed {n}, history rc={rh}")
        if not (rc == 0 and n == 1 and clean(out + oh)):
            bad.append(store)
    outside = (_tree(d.parent) - _tree(d)) - before
    escaped = sorted(set(map(str, Path(tempfile.gettempdir()).glob("ESCAPE-*"))) - escaped_before)
    outside_n = len(outside) + len(escaped) + (Path("/etc/passwd").stat().st_mtime != passwd)
    ok = not bad and not outside_n
    return ok, "; ".join(notes) + f"; new paths outside the store: {outside_n} {sorted(outside)[:3]} {escaped}"


@case("9.10-symlinked-store", "OUTSIDE-STORE")
def symlinked_store(d: Path) -> tuple[bool, str]:
    hist, outside = d / "hist", d / "outside"
    night(d, f"--roofline-history={hist}", shift=-1)  # the night before: the recorded one is a new run
    outside.mkdir()
    shutil.move(str(hist / "cpu"), str(outside / "cpu"))
    (hist / "cpu").symlink_to(outside / "cpu")
    shutil.move(str(hist / "index.jsonl"), str(outside / "victim.jsonl"))
    (hist / "index.jsonl").symlink_to(outside / "victim.jsonl")
    victim = (outside / "victim.jsonl").read_bytes()
    before = len(list(outside.rglob("run.json")))
    rc, out, _ = night(d, f"--roofline-history={hist}")
    after = len(list(outside.rglob("run.json")))
    changed = (outside / "victim.jsonl").read_bytes() != victim
    noisy = "HistoryIndexRebuiltWarning" in out or "_store.py" in out
    refused = rc != 0 and "could not store" in out
    ok = clean(out) and not noisy and after == before and not changed and refused
    said = next((ln for ln in out.splitlines() if "could not store" in ln or "symbolic" in ln), "")[:160]
    return ok, (f"rc={rc}; run.json outside: {before} -> {after}; outside index changed: {changed}; raw warning: "
                f"{noisy}; {said}")


@case("9.11-newer-schema", "TRACEBACK")
def newer_schema(d: Path) -> tuple[bool, str]:
    hist = d / "hist"
    night(d, f"--roofline-history={hist}")
    doc = json.loads((hist / "index.jsonl").read_text().splitlines()[0])
    with open(hist / "index.jsonl", "a") as fh:
        fh.write(json.dumps({**doc, "schema_version": 99, "run_id": doc["run_id"][:-1] + "z"}) + "\n")
    before = (hist / "index.jsonl").read_bytes()
    rp, op, _ = night(d, f"--roofline-history={hist}")
    rh, oh, _ = cli(d, "history", str(hist), "-o", str(d / "t.html"))
    rc, oc, _ = cli(d, "compare", doc["run_id"], doc["run_id"], "--store", str(hist))
    kept = (hist / "index.jsonl").read_bytes() == before
    ok = rp != 0 and rh != 0 and rc != 0 and clean(op + oh + oc) and kept and "newer" in op
    return ok, f"pytest rc={rp}, history rc={rh}, compare rc={rc}, says 'newer': {'newer' in op}, index kept: {kept}"


@case("9.12-store-readonly-without-cap-dac", "LOST-DATA")
def store_readonly(d: Path) -> tuple[bool, str]:
    hist = d / "hist"
    night(d, f"--roofline-history={hist}", shift=-1)  # the night before: the recorded one is a new run
    for p in [hist, *hist.rglob("*")]:
        p.chmod(p.stat().st_mode & ~0o222)
    (d / "predictions").chmod(0o755)
    d.chmod(0o777)
    rc, out, _ = sh([*NO_DAC, PY, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:html", "--no-roofline-progress",
                     "--replay", str(RECORDED), "predictions/cpu-tiny.yaml", f"--roofline-history={hist}"], d, 300)
    for p in [hist, *hist.rglob("*")]:
        p.chmod(p.stat().st_mode | 0o200)
    if "Operation not permitted" in out and "setpriv" in out:
        return "NOT-RUN", f"setpriv refused: {out.strip()[:120]}"
    ok = rc != 0 and "could not store" in out and clean(out)
    return ok, f"chmod a-w, run without CAP_DAC_OVERRIDE: rc={rc}, says 'could not store': {'could not store' in out}"


@case("9.13-store-odd-uris", "NOTE")
def odd_uris(d: Path) -> tuple[bool, str]:
    (d / "afile").write_text("x")
    (d / "empty").mkdir()
    rp, op, _ = night(d, "--roofline-history=afile")
    runs = {
        "file": cli(d, "history", "afile", "-o", "t.html"),
        "s3": cli(d, "history", "s3://bucket/h", "-o", "t.html"),
        "missing dir": cli(d, "history", "nosuch", "-o", "t.html"),
        "missing sqlite": cli(d, "history", f"sqlite:///{d / 'missing.db'}", "-o", "t.html"),
        "missing sqlite compare": cli(d, "compare", "a", "b", "--store", f"sqlite:///{d / 'missing2.db'}"),
        "empty dir": cli(d, "history", "empty", "-o", "t.html"),
    }
    created = [n for n in ("missing.db", "missing2.db", "nosuch") if (d / n).exists()]
    bad = [k for k, (rc, out, _) in runs.items() if not clean(out) or (rc == 0) != (k == "empty dir")]
    ok = rp != 0 and clean(op) and not bad and not created
    return ok, (f"pytest on a file: rc={rp}; " + ", ".join(f"{k} rc={v[0]}" for k, v in runs.items())
                + f"; created: {created or 'nothing'}")


@case("9.14-sqlite-locked-at-start", "HANG")
def sqlite_locked_start(d: Path) -> tuple[bool, str]:
    db = d / "h.db"
    night(d, f"--roofline-history=sqlite:///{db}")
    locker = subprocess.Popen([PY, "-c", _LOCKER, str(db), str(d / "locked"), "90"])
    try:
        while not (d / "locked").exists():
            time.sleep(0.05)
        rc, out, t = night(d, f"--roofline-history=sqlite:///{db}")
    finally:
        locker.kill()
        locker.wait()
    ok = rc != 0 and clean(out) and t < 60 and "locked" in out
    return ok, f"rc={rc} in {t:.1f} s (bound 60 s), names the lock: {'locked' in out}"


@case("9.16-sqlite-readonly-without-cap-dac", "LOST-DATA")
def sqlite_readonly(d: Path) -> tuple[bool, str]:
    db = d / "h.db"
    night(d, f"--roofline-history=sqlite:///{db}", shift=-1)  # the night before: the recorded one is a new run
    n0 = _runs_listed(f"sqlite:///{db}")
    db.chmod(0o444)
    d.chmod(0o777)
    rc, out, _ = sh([*NO_DAC, PY, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:html", "--no-roofline-progress",
                     "--replay", str(RECORDED), "predictions/cpu-tiny.yaml", f"--roofline-history=sqlite:///{db}"],
                    d, 300)
    db.chmod(0o644)
    n1 = _runs_listed(f"sqlite:///{db}")
    refused = "could not store" in out or "read-only" in out or "readonly" in out
    ok = clean(out) and ((rc != 0 and n1 == n0 and refused)
                         or (rc == 0 and n1 == n0 + 1))
    said = next((ln for ln in out.splitlines() if "history" in ln.lower() and ("could not" in ln or "ERROR" in ln)), "")
    return ok, f"mode 0444, no CAP_DAC_OVERRIDE: rc={rc}, runs {n0} -> {n1}; {said[:150]}"


@case("9.17-sqlite-garbage", "TRACEBACK")
def sqlite_garbage(d: Path) -> tuple[bool, str]:
    (d / "h.db").write_bytes(b"not a database\x00" * 100)
    rp, op, _ = night(d, f"--roofline-history=sqlite:///{d / 'h.db'}")
    rh, oh, _ = cli(d, "history", f"sqlite:///{d / 'h.db'}", "-o", "t.html")
    return rp != 0 and rh != 0 and clean(op + oh), f"pytest rc={rp}, history rc={rh}, clean={clean(op + oh)}"


@case("9.23-trend-html-injection", "NOTE")
def trend_injection(d: Path) -> tuple[bool, str]:
    hist = d / "hist"
    rec = json.loads(RECORDED.read_text())
    rec["setup"]["model"] = {**rec["setup"]["model"], "name": "<script>alert(1)</script>"}
    (d / "h.results.json").write_text(json.dumps(rec))
    rc, out, _ = night(d, f"--roofline-history={hist}", "--roofline-history-label", "<img src=x onerror=alert(2)>",
                       "--roofline-allow-mismatch", results=d / "h.results.json")
    rh, oh, _ = cli(d, "history", str(hist), "-o", str(d / "t.html"))
    page = (d / "t.html").read_text() if (d / "t.html").exists() else ""
    raw = [m for m in ("<script>alert(1)", "<img src=x onerror", "onerror=alert(2)>") if m in page]
    ok = rc == 0 and rh == 0 and page != "" and not raw
    return ok, f"pytest rc={rc}, history rc={rh}, raw markup: {raw or 'none'}"


@case("9.25-compare-garbage", "TRACEBACK")
def compare_garbage(d: Path) -> tuple[bool, str]:
    hist = d / "hist"
    night(d, f"--roofline-history={hist}", shift=-1)
    night(d, f"--roofline-history={hist}")
    ids = [json.loads(x)["run_id"] for x in (hist / "index.jsonl").read_text().splitlines()]
    garbage = hist / "cpu" / "garbage-run"
    garbage.mkdir(parents=True)
    (garbage / "run.json").write_text("{not json")
    (d / "empty").mkdir()
    runs = {
        "missing ids": cli(d, "compare", "nosuch", "nosuch2", "--store", str(hist)),
        "ambiguous prefix": cli(d, "compare", ids[0][:4], ids[1], "--store", str(hist)),
        "garbage run dir": cli(d, "compare", str(garbage), ids[0], "--store", str(hist)),
        "no store": cli(d, "compare", "a", "b", "--store", str(d / "nostore")),
        "empty store": cli(d, "compare", "a", "b", "--store", str(d / "empty")),
    }
    bad = [k for k, (rc, out, _) in runs.items() if rc == 0 or not clean(out)]
    return not bad, ", ".join(f"{k} rc={v[0]}" for k, v in runs.items())


# ------------------------------------------------------------------ peers' files: the rest of the cases
BENCH = REPO / "tests/data/peers/cpu-tiny-vllm-bench"


def _bench_variant(d: Path, name: str, change: Callable[[dict, int], dict]) -> Path:
    folder = d / name
    folder.mkdir()
    for f in sorted(BENCH.glob("sweep_c*.json")):
        doc = json.loads(f.read_text())
        (folder / f.name).write_text(json.dumps(change(doc, int(doc["max_concurrency"]))))
    return folder


def _figures(doc: dict, value: object) -> dict:
    return {k: (value if isinstance(v, (int, float)) and not isinstance(v, bool) and k not in ("max_concurrency",
                                                                                                 "num_prompts")
                else ([value] * len(v) if isinstance(v, list) else v)) for k, v in doc.items()}


@case("9.30-9.31-9.32-9.35-9.36-peers-zero-nan-wrong-types", "FALSE-PASS")
def peers_zero(d: Path) -> tuple[bool, str]:
    variants = {
        "control": lambda doc, c: doc,
        "zero-requests": lambda doc, c: {**_figures(doc, 0), "completed": 0, "failed": 0},
        "zero-completed-figures": lambda doc, c: {**doc, "completed": 0},
        "nan-infinity": lambda doc, c: _figures(doc, float("nan") if c == 1 else float("inf") if c == 2
                                                else float("-inf")),
        "wrong-types": lambda doc, c: {**doc, "completed": "10", "output_throughput": [1], "mean_ttft_ms": {"a": 1},
                                       "failed": True},
    }
    notes, bad = [], []
    for name, change in variants.items():
        sub = d / name
        sub.mkdir()
        rc, out, passed = _peer_replay(sub, _bench_variant(sub, "bench", change))
        rr, orep, _ = sh([PY, "-m", "pytest_roofline.cli", "report", str(sub / "p.yaml"), str(sub / "bench"), "-o",
                          str(sub / "r.html")], sub, 120)
        notes.append(f"{name}: rc={rc}, measured PASS {len(passed)}, report rc={rr}")
        if name == "control" and not passed or name != "control" and (passed or not clean(out + orep)):
            bad.append(name)
    return not bad, "; ".join(notes) + (f"; NOT OK: {bad}" if bad else "")


@case("9.34-peers-absurd-counts", "FALSE-PASS")
def peers_absurd(d: Path) -> tuple[bool, str]:
    variants = {
        "negative-counts": lambda doc, c: {**doc, "completed": -10, "failed": -5},
        "1e300-requests": lambda doc, c: {**doc, "completed": 1e300, "output_throughput": 1e308, "duration": -4.0},
        "negative-concurrency": lambda doc, c: {**doc, "max_concurrency": -c, "request_rate": -1},
    }
    notes, bad = [], []
    for name, change in variants.items():
        sub = d / name
        sub.mkdir()
        rc, out, passed = _peer_replay(sub, _bench_variant(sub, "bench", change))
        notes.append(f"{name}: rc={rc}, measured PASS {passed or 'none'}")
        if passed or not clean(out):
            bad.append(name)
    return not bad, "; ".join(notes)


@case("9.38-peers-100MB", "KILLED/OOM", slow=True)
def peers_100mb(d: Path) -> tuple[bool, str]:
    folder = d / "bench"
    folder.mkdir()
    doc = json.loads((BENCH / "sweep_c1.json").read_text())
    doc.update(latencies=[0.5] * 6_000_000, output_lens=[64] * 6_000_000)
    (folder / "sweep_c1.json").write_text(json.dumps(doc))
    size = (folder / "sweep_c1.json").stat().st_size
    (d / "p.yaml").write_text(PEER_YAML)
    rc, out, t = sh(["/usr/bin/time", "-f", "PEAK %M", PY, "-m", "pytest", "-p", "no:cacheprovider", "p.yaml",
                     "--replay", str(folder), "--roofline-allow-mismatch", "-q"], d, 300)
    ok = clean(out) and t < 120 and _peak_mb(out) < 2000
    return ok, f"{size / 1e6:.0f} MB file: rc={rc} in {t:.1f} s, peak RSS {_peak_mb(out):.0f} MB"


@case("9.39b-guidellm-zero-successful", "FALSE-PASS")
def guidellm_zero(d: Path) -> tuple[bool, str]:
    doc = json.loads((REPO / "tests/data/peers/guidellm-cpu-tiny/benchmarks.json").read_text())
    for bench in doc["benchmarks"]:
        for m in bench["metrics"].values():
            if isinstance(m, dict) and isinstance(m.get("successful"), dict):
                s = m["successful"]
                m["successful"] = {**s, **{k: 0 for k in ("mean", "median", "count", "total_sum", "min", "max")
                                           if k in s},
                                   **({"percentiles": {k: 0.0 for k in s["percentiles"]}}
                                      if "percentiles" in s else {})}
        total = bench["metrics"]["request_totals"]["total"]
        bench["metrics"]["request_totals"] = {"successful": 0, "errored": total, "incomplete": 0, "total": total}
    f = d / "g" / "benchmarks.json"
    f.parent.mkdir()
    f.write_text(json.dumps(doc))
    rc, out, passed = _peer_replay(d, f)
    return clean(out) and not passed, f"rc={rc}, measured PASS: {passed or 'none'}"


# ------------------------------------------------------------------ datasets: the rest of the cases
@case("9.40-9.41-9.44-dataset-malformed-sharegpt-empty", "TRACEBACK")
def datasets_malformed(d: Path) -> tuple[bool, str]:
    good = b'{"prompt": "one two three", "output_len": 4}\n'
    jsonl = {
        "not-json": good + b"{bad json\n", "list-line": good + b"[1, 2]\n", "no-prompt": good + b'{"text": "x"}\n',
        "empty-prompt": good + b'{"prompt": ""}\n', "neg-output": good + b'{"prompt": "a", "output_len": -1}\n',
        "float-output": good + b'{"prompt": "a", "output_len": 2.5}\n',
        "bool-output": good + b'{"prompt": "a", "output_len": true}\n',
        "str-output": good + b'{"prompt": "a", "output_len": "8"}\n',
        "1e999-output": good + b'{"prompt": "a", "output_len": 1e999}\n',
        "nan-output": good + b'{"prompt": "a", "output_len": NaN}\n',
        "zero-bytes": b"", "blank-lines": b"\n\n  \n",
    }
    sharegpt = {
        "object": b'{"conversations": []}', "wrong-entries": b"[1, \"x\", null]",
        "no-value": b'[{"conversations": [{"from": "human"}, {"from": "gpt", "value": "b"}]}]',
        "number-value": b'[{"conversations": [{"value": 5}, {"value": "b"}]}]',
        "one-turn": b'[{"conversations": [{"from": "human", "value": "a"}]}]',
        "truncated": b'[{"conversations": [{"from": "human", "value": "a"}', "empty-list": b"[]",
    }
    lengths = {"lengths-comments": b"# nothing\n# here\n", "lengths-empty-list": b"[]"}
    bad, n = [], 0
    for group, files, field in (
        ("jsonl", jsonl, "  dataset: {path: ds.jsonl}\n"),
        ("sharegpt", sharegpt, "  dataset: {path: ds.json, format: sharegpt}\n"),
        ("lengths", lengths, "  output_len: {dist: file, path: ds.txt}\n"),
    ):
        for name, data in files.items():
            sub = d / f"{group}-{name}"
            sub.mkdir()
            ext = {"jsonl": "jsonl", "sharegpt": "json", "lengths": "txt"}[group]
            rc, out, _ = check_yaml(sub, TINY.format(extra=field), {f"ds.{ext}": data})
            n += 1
            if rc == 0 or not clean(out) or f"ds.{ext}" not in out:
                bad.append(f"{group}/{name} rc={rc}")
    return not bad, f"{n - len(bad)} of {n} a one-line error naming the file" + (f"; NOT: {bad}" if bad else "")


@case("9.46-dataset-prompt-over-max-model-len", "NOTE")
def dataset_over_len(d: Path) -> tuple[bool, str]:
    (d / "p.jsonl").write_text(json.dumps({"prompt": " ".join(["word"] * 5000), "output_len": 4}) + "\n"
                               + json.dumps({"prompt": "short one", "output_len": 4}) + "\n")
    with StubServer(model="roofline-tiny", max_model_len=1024) as s:
        rc, out, t = pytest_run(d, s, workload_extra=", dataset: {path: p.jsonl}")
        sent = len([q for q in s.posts if "completions" in q.path])
    passed = "PASSED probe.roofline.yaml" in out
    return clean(out) and not passed and rc != 0 and "max_model_len" in out, (
        f"rc={rc}, completions sent {sent}, names max_model_len: {'max_model_len' in out}, PASS: {passed}")


@case("9.48-dataset-changed-after-collection", "FALSE-PASS")
def dataset_changed(d: Path) -> tuple[bool, str]:
    (d / "p.jsonl").write_text("".join(json.dumps({"prompt": f"prompt {i} a b c", "output_len": 4}) + "\n"
                                       for i in range(4)))
    (d / "conftest.py").write_text("def pytest_collection_finish(session):\n"
                                   "    open('p.jsonl', 'a').write('{\"prompt\": \"added later\"}\\n')\n")
    with StubServer(model="roofline-tiny", max_model_len=1024) as s:
        rc, out, t = pytest_run(d, s, workload_extra=", dataset: {path: p.jsonl}")
    passed = "PASSED probe.roofline.yaml::littles" in out
    return clean(out) and not passed and rc != 0, f"rc={rc}, PASS: {passed}, clean={clean(out)}"


# ------------------------------------------------------------------ roofline calibrate (9.50, 9.51)
@case("9.50-9.51-calibrate-control-and-bad-inputs", "NOTE")
def calibrate_inputs(d: Path) -> tuple[bool, str]:
    base = [PY, "-m", "pytest_roofline.cli", "calibrate"]
    rec = json.loads(RECORDED.read_text())
    shutil.copy(REPO / "predictions/cpu-tiny.yaml", d / "cpu-tiny.yaml")  # the recorded files name it one folder up
    recs = d / "recorded"  # the probe's scratch copies, one folder down as the recorded files expect
    recs.mkdir()
    (recs / "rec.json").write_text(json.dumps(rec))
    nan = json.loads(json.dumps(rec))
    nan["points"][0]["client"]["output_throughput_tok_s"] = float("nan")
    (recs / "nan.json").write_text(json.dumps(nan))
    other = json.loads(json.dumps(rec))
    other["setup"]["model"] = {**other["setup"]["model"], "name": "other-model"}
    (recs / "other.json").write_text(json.dumps(other))
    (recs / "none.json").write_text(json.dumps({**rec, "points": []}))
    failed = json.loads(json.dumps(rec))
    for p in failed["points"]:
        p["client"]["failed"] = 3
    (recs / "failed.json").write_text(json.dumps(failed))
    fit = ["--fit", "step_overhead_s"]
    runs = {
        "control": ([*base, str(recs / "rec.json"), "--points", "C=1,C=16", *fit, "-o", "c.yaml"], 0),
        "nan": ([*base, str(recs / "nan.json"), *fit, "-o", "o.yaml"], 2),
        "two setups": ([*base, str(recs / "rec.json"), str(recs / "other.json"), *fit, "-o", "o.yaml"], 2),
        "no points": ([*base, str(recs / "none.json"), *fit, "-o", "o.yaml"], 2),
        "failed requests": ([*base, str(recs / "failed.json"), *fit, "-o", "o.yaml"], 2),
        "bad selector": ([*base, str(recs / "rec.json"), "--points", "C=abc", *fit, "-o", "o.yaml"], 2),
        "absent points": ([*base, str(recs / "rec.json"), "--points", "C=999", *fit, "-o", "o.yaml"], 2),
        "unknown constant": ([*base, str(recs / "rec.json"), "--fit", "no_such_constant", "-o", "o.yaml"], 2),
        "missing -o dir": ([*base, str(recs / "rec.json"), *fit, "-o", str(d / "nosuch" / "o.yaml")], 2),
    }
    notes, bad = [], []
    for name, (argv, want) in runs.items():
        rc, out, _ = sh(argv, d, 120)
        notes.append(f"{name} rc={rc}")
        if not clean(out) or (rc == 0) != (want == 0):
            bad.append(name)
    return not bad, ", ".join(notes) + (f"; NOT OK: {bad}" if bad else "")


# ------------------------------------------------------------------ live runs against faulty servers (9.60-9.92)
LIVE_PREDICTIONS = STREAM_PREDICTIONS + """\
  - id: prefix-c1
    quantity: prefix_cache_hit_rate
    at: {concurrency: 1}
    predicted: 0.0
    tolerance: ±100%
"""


def live(d: Path, url: str, *, sweep_extra: str = "", engine_extra: str = "", env: dict | None = None,
         extra: list[str] | None = None, timeout: float = 200) -> tuple[int, str, float, list[str]]:
    """pytest on the probe file (+ the stream predictions) against ``url``; returns rc, output, seconds and the
    predictions that PASSED."""
    (d / "probe.roofline.yaml").write_text(
        PROBE_YAML.format(engine_extra=engine_extra, workload_extra="", sweep_extra=sweep_extra) + STREAM_PREDICTIONS)
    rc, out, t = sh([PY, "-m", "pytest", "-p", "no:cacheprovider", "probe.roofline.yaml", "--endpoint", url + "/v1",
                     "--roofline-out", "out", "-rA", *(extra or [])], d, timeout, env=env)
    passed = sorted({ln.split("::")[1].split()[0] for ln in out.splitlines() if ln.startswith("PASSED") and "::" in ln})
    return rc, out, t, passed


def _verdict(rc: int, out: str, t: float, passed: list[str], bound_s: float, allowed: tuple[str, ...] = ()
             ) -> tuple[bool | str, str]:
    what = f"rc={rc} in {t:.1f} s, measured PASS: {passed or 'none'}"
    if "HANG" in out or t >= bound_s:
        return "HANG", what + f" (bound {bound_s:.0f} s)"
    if "INTERNALERROR" in out:
        return "INTERNALERROR", what
    if "Traceback" in out:
        return "TRACEBACK", what
    if [p for p in passed if p not in allowed]:
        return "FALSE-PASS", what
    return True, what


def _worse(a: bool | str, b: bool | str) -> bool | str:
    """The worse of two sub-results (True: OK; False: the case's own class, ranked as NOTE; a class by CLASSES)."""
    def rank(x: bool | str) -> int:
        return len(CLASSES) if x is True else CLASSES.index("NOTE") if x is False else CLASSES.index(x)
    return a if rank(a) <= rank(b) else b


CLIENT_SIDE = ("littles-c2", "tput-c1", "ttft-c1")  # measured by the client: a PASS needs no server-side figure


def _make_cert(d: Path, name: str, *, hosts: tuple[str, ...] = ("localhost",), ip: str = "127.0.0.1",
               expired: bool = False) -> tuple[Path, Path]:
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])])
    now = datetime.datetime.now(datetime.UTC)
    start, end = (now - datetime.timedelta(days=400), now - datetime.timedelta(days=365)) if expired else (
        now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=1))
    san = [x509.DNSName(h) for h in hosts] + [x509.IPAddress(ipaddress.ip_address(ip))]
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(start).not_valid_after(end)
            .add_extension(x509.SubjectAlternativeName(san), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True).sign(key, hashes.SHA256()))
    c, k = d / f"{name}.pem", d / f"{name}.key"
    c.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    k.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption()))
    return c, k


@case("9.60-9.61-9.62-9.63-9.64-9.65-tls", "NOTE")
def tls_cases(d: Path) -> tuple[bool | str, str]:
    import socket
    import ssl

    def ctx(pem: tuple[Path, Path]) -> ssl.SSLContext:
        c = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        c.load_cert_chain(str(pem[0]), str(pem[1]))
        return c

    good = _make_cert(d, "good")
    notes, worst = [], True
    runs = [("control", good, good[0], None), ("self-signed", good, None, "self-signed"),
            ("expired", _make_cert(d, "old", expired=True), d / "old.pem", "expired"),
            ("wrong-host", _make_cert(d, "other", hosts=("example.com",), ip="10.0.0.1"), d / "other.pem", "match")]
    for name, pem, trust, want in runs:
        sub = d / name
        sub.mkdir()
        with StubServer(model="roofline-tiny", max_model_len=1024, tls=ctx(pem),
                        metrics="vllm:num_requests_running 0\nvllm:num_preemptions_total 0\n") as s:
            rc, out, t, passed = live(sub, s.url_at("localhost"), env={"SSL_CERT_FILE": str(trust)} if trust else None)
        v, what = _verdict(rc, out, t, passed, 60, allowed=tuple(passed) if name == "control" else ())
        if name == "control":
            v = v is True and rc == 0 and bool(passed)
        elif v is True and (rc == 0 or want not in out or t > 20):
            v = False
        notes.append(f"{name}: {what}" + (f", names '{want}': {want in out}" if want else "")
                     + ("" if v is True else f" [{v or 'NOT OK'}]"))
        worst = _worse(worst, v)
    # 9.64 a server that accepts TCP and never answers the handshake; 9.65 https:// to plain HTTP
    with socket.socket() as lst:
        lst.bind(("127.0.0.1", 0))
        lst.listen(8)
        sub = d / "stall"
        sub.mkdir()
        rc, out, t, passed = live(sub, f"https://127.0.0.1:{lst.getsockname()[1]}")
        v, what = _verdict(rc, out, t, passed, 60)
        notes.append(f"tls-stall: {what}")
        worst = _worse(worst, v if v is not True or rc != 0 else False)
    with StubServer(model="roofline-tiny", max_model_len=1024) as s:
        sub = d / "plain"
        sub.mkdir()
        rc, out, t, passed = live(sub, s.url.replace("http://", "https://"))
        v, what = _verdict(rc, out, t, passed, 60)
        notes.append(f"https-to-http: {what}")
        worst = _worse(worst, v if v is not True or rc != 0 else False)
    return worst, "; ".join(notes)


ZERO_TOKENS = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 130\r\n\r\n"
               + (b'data: {"id":"x","object":"text_completion","choices":[],"usage":{"prompt_tokens":16,'
                  b'"completion_tokens":0,"total_tokens":16}}\n\n' + b"data: [DONE]\n\n").ljust(130))
METRICS = "vllm:num_requests_running 0\nvllm:num_preemptions_total 0\n"


class RedirectStub(StubServer):
    """The stub that answers 307 to ``target`` on the paths in ``redirect``."""

    def __init__(self, redirect: set[str], target: str, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.redirect, self.target = redirect, target

    async def _answer(self, q, reader, writer):  # noqa: ANN001, ANN202
        if q.path in self.redirect:
            self.requests.append(q) if q not in self.requests else None
            await self._write(writer, f"HTTP/1.1 307 Temporary Redirect\r\nlocation: {self.target}{q.path}\r\n"
                                      "content-length: 0\r\n\r\n".encode())
            return True
        return await super()._answer(q, reader, writer)


def _every(n: int) -> Callable:
    return lambda q: Fault(status=500) if q.index % n == n - 1 else None


def _after(n: int) -> Callable:
    seen = [0]

    def fault(q: Request) -> Fault | None:
        seen[0] += 1
        return Fault(status=500) if seen[0] > n else None

    return fault


@case("9.66-9.67-9.68-9.71-9.72-streams", "FALSE-PASS")
def streams(d: Path) -> tuple[bool | str, str]:
    runs = {
        "9.66 tokens slower than request_timeout": dict(token_delay_s=2.0),
        "9.67 comment lines then the connection closes": dict(faults=Fault(raw=(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n" + b": ping\n\n" * 20))),
        "9.68 200 then one byte a second": dict(trickle={"/v1/completions"}),
        "9.71 200 and [DONE], no token": dict(faults=Fault(raw=ZERO_TOKENS)),
        "9.72 usage claims 10x the tokens": dict(faults=Fault(usage_delta=36)),
    }
    notes, worst = [], True
    for i, (name, kw) in enumerate(runs.items()):
        sub = d / f"s{i}"
        sub.mkdir()
        with StubServer(model="roofline-tiny", max_model_len=1024, metrics=METRICS, **kw) as s:
            rc, out, t, passed = live(sub, s.url)
        v, what = _verdict(rc, out, t, passed, 120)
        notes.append(f"{name}: {what}")
        worst = _worse(worst, v)
    return worst, "; ".join(notes)


@case("9.73-9.74-9.75-redirects", "LEAK")
def redirects(d: Path) -> tuple[bool | str, str]:
    notes, worst = [], True
    for path in ("/v1/completions", "/v1/models", "/metrics"):
        sub = d / path.strip("/").replace("/", "-")
        sub.mkdir()
        with StubServer(model="roofline-tiny", max_model_len=1024, metrics=METRICS) as target, \
                RedirectStub({path}, target.url_at("localhost"), model="roofline-tiny", max_model_len=1024,
                             api_key="sk-REDIRECT-SECRET", metrics=METRICS) as s:
            rc, out, t, passed = live(sub, s.url, env={"PROBE_KEY": "sk-REDIRECT-SECRET"},
                                      extra=["--endpoint-key-env", "PROBE_KEY"])
            followed = len(target.requests)
            keyed = sum(1 for q in target.requests if "REDIRECT-SECRET" in q.auth)
        v, what = _verdict(rc, out, t, passed, 120, allowed=CLIENT_SIDE if path == "/metrics" else ())
        if keyed:
            v = "LEAK"
        notes.append(f"307 on {path}: {what}; target got {followed} request(s), {keyed} with the key")
        worst = _worse(worst, v)
    return worst, "; ".join(notes)


@case("9.76-9.79b-9.79e-9.79f-metrics-and-replicas", "FALSE-PASS")
def metrics_cases(d: Path) -> tuple[bool | str, str]:
    big = METRICS + "".join(f'extra_gauge{{i="{i}"}} {i}\n' for i in range(1_600_000))  # ~50 MB
    calls = [0]

    def then_garbage(q: Request) -> str:
        calls[0] += 1
        return METRICS if calls[0] == 1 else "garbage {{{ not prometheus\n"

    notes, worst = [], True
    sub = d / "m50"
    sub.mkdir()
    with StubServer(model="roofline-tiny", max_model_len=1024, metrics=big) as s:
        rc, out, t, passed = live(sub, s.url)
    v, what = _verdict(rc, out, t, passed, 200, allowed=(*CLIENT_SIDE, "preempt-c2"))  # the figures are valid
    notes.append(f"9.76 /metrics {len(big) / 1e6:.0f} MB: {what}")
    worst = _worse(worst, v)
    sub = d / "garbage"
    sub.mkdir()
    with StubServer(model="roofline-tiny", max_model_len=1024, metrics=then_garbage) as s:
        rc, out, t, passed = live(sub, s.url)
    v, what = _verdict(rc, out, t, passed, 120, allowed=CLIENT_SIDE)
    notes.append(f"9.79b /metrics fine then garbage: {what}")
    worst = _worse(worst, v)
    import socket

    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        closed_url = f"http://127.0.0.1:{free.getsockname()[1]}"
    for name, second in (("9.79e refused", None), ("9.79f garbage", "garbage {{{\n")):
        sub = d / name.split()[0]
        sub.mkdir()
        with StubServer(model="roofline-tiny", max_model_len=1024, metrics=METRICS) as a, \
                StubServer(model="roofline-tiny", metrics=second or METRICS) as b:
            url_b = closed_url if second is None else b.url
            rc, out, t, passed = live(sub, a.url, engine_extra=f", replicas: 2, replica_metrics: [{a.url}, {url_b}]")
        v, what = _verdict(rc, out, t, passed, 120)
        notes.append(f"{name} replica: {what}")
        worst = _worse(worst, v)
    return worst, "; ".join(notes)


@case("9.85-9.86-9.87-9.89-9.89b-adaptive-and-processes", "FALSE-PASS")
def sweeps_faulty(d: Path) -> tuple[bool | str, str]:
    runs = [
        ("9.85 adaptive, every 7th a 500", "  adaptive: true\n", dict(faults=_every(7))),
        ("9.86 adaptive, 500s after 5", "  adaptive: true\n", dict(faults=_after(5))),
        ("9.87 processes 2, every 7th a 500", "  processes: 2\n", dict(faults=_every(7))),
        ("9.89 processes 2, never answers", "  processes: 2\n", dict(faults=Fault(stall=True))),
        ("9.89b processes 2, no token", "  processes: 2\n", dict(faults=Fault(raw=ZERO_TOKENS))),
    ]
    notes, worst = [], True
    for i, (name, sweep, kw) in enumerate(runs):
        sub = d / f"s{i}"
        sub.mkdir()
        with StubServer(model="roofline-tiny", max_model_len=1024, metrics=METRICS, **kw) as s:
            rc, out, t, passed = live(sub, s.url, sweep_extra=sweep)
        v, what = _verdict(rc, out, t, passed, 150)
        if v is True and rc == 0:
            v = False
        notes.append(f"{name}: {what}")
        worst = _worse(worst, v)
    return worst, "; ".join(notes)


SECRET_KEY, HF_SECRET = "sk-PROBE-KEY-7f3a9c", "hf_PROBE_TOKEN_55e1d"


def _secrets_run(d: Path, store: str, password: str | None = None) -> tuple[bool | str, str]:
    with StubServer(model="roofline-tiny", max_model_len=1024, metrics=METRICS, api_key=SECRET_KEY,
                    echo_auth=True) as s:
        rc, out, t, passed = live(d, s.url, engine_extra=f", env: {{HF_TOKEN: {HF_SECRET}}}",
                                  env={"PROBE_KEY": SECRET_KEY},
                                  extra=["--endpoint-key-env", "PROBE_KEY", f"--roofline-history={store}",
                                         "--roofline-history-label", f"nightly token={SECRET_KEY}",
                                         "--junitxml", "junit.xml", "--roofline-scorecard", "card.html"])
        accepted = sum(1 for q in s.requests if q.auth == f"Bearer {SECRET_KEY}")
    rh, oh, _ = cli(d, "history", store, "-o", str(d / "trend.html"))
    outs = out + oh
    secrets_ = [x for x in (SECRET_KEY, HF_SECRET, password) if x]
    leaks = [f"output:{x[:6]}" for x in secrets_ if x in outs]
    files = 0
    for f in d.rglob("*"):
        if f.is_file() and f.suffix != ".py" and f.name != "probe.roofline.yaml":  # not the input the probe wrote
            files += 1
            data = f.read_bytes()
            leaks += [f"{f.name}:{x[:6]}" for x in secrets_ if x.encode() in data]
    if store.startswith("sqlite"):
        data = Path(store.split("///", 1)[1]).read_bytes()
        leaks += [f"db:{x[:6]}" for x in secrets_ if x.encode() in data]
    runs = _runs_listed(store)
    ok: bool | str = "LEAK" if leaks else (rc == 0 and runs == 1 and accepted > 0 and clean(outs))
    return ok, (f"pytest rc={rc}, key accepted on {accepted} requests, {files} files, runs stored {runs}, "
                f"history rc={rh}; leaks: {leaks or 0}")


@case("9.90-9.91-secrets-dir-sqlite", "LEAK")
def secrets_dir_sqlite(d: Path) -> tuple[bool | str, str]:
    (d / "dir").mkdir()
    (d / "sql").mkdir()
    a = _secrets_run(d / "dir", str(d / "dir" / "hist"))
    b = _secrets_run(d / "sql", f"sqlite:///{d / 'sql' / 'h.db'}")
    worst = a[0] if a[0] is not True else b[0]
    return worst, f"dir: {a[1]}; sqlite: {b[1]}"


@case("9.18-9.21-9.92-postgres-bad-password-outputs-secrets", "LEAK")
def pg_more(d: Path) -> tuple[bool | str, str]:
    notes, worst = [], True
    with _postgres() as pg:
        import sqlalchemy as sa

        eng = sa.create_engine(pg.url(), isolation_level="AUTOCOMMIT")
        with eng.connect() as conn:
            conn.execute(sa.text("ALTER ROLE roofline PASSWORD 'PGPASS-SECRET-91'"))
        eng.dispose()
        good = f"postgresql+psycopg://{pg.user}:PGPASS-SECRET-91@{pg.host}:{pg.port}/postgres"
        wrong = f"postgresql+psycopg://{pg.user}:WRONG-SECRET-18@{pg.host}:{pg.port}/postgres"
        sub = d / "bad"
        sub.mkdir()
        rp, op, tp = night(sub, f"--roofline-history={wrong}")
        rh, oh, _ = cli(sub, "history", wrong, "-o", "t.html")
        rc, oc, _ = cli(sub, "compare", "a", "b", "--store", wrong)
        leaked = "WRONG-SECRET-18" in op + oh + oc
        ok18 = rp != 0 and rh != 0 and rc != 0 and clean(op + oh + oc) and not leaked and tp < 60
        notes.append(f"9.18 wrong password: pytest rc={rp} in {tp:.1f} s, history rc={rh}, compare rc={rc}, "
                     f"printed: {leaked}")
        worst = _worse(worst, "LEAK" if leaked else (True if ok18 else "NOTE"))
        sub = d / "outputs"
        sub.mkdir()
        v, what = _secrets_run(sub, good, "PGPASS-SECRET-91")
        ids = [r.run_id for r in __import__("pytest_roofline.history", fromlist=["open_store"]).open_store(good).runs()]
        rc, oc, _ = cli(sub, "compare", ids[0], ids[0], "--store", good) if ids else (-1, "", 0)
        if "PGPASS-SECRET-91" in oc:
            v = "LEAK"
        notes.append(f"9.21/9.92 PostgreSQL store: {what}; compare rc={rc}")
        worst = _worse(worst, v)
    return worst, "; ".join(notes)


# ------------------------------------------------------------------ a real full disk (9.83): tmpfs in a mount namespace
def _in_tmpfs(d: Path, mount: Path, size: str, script: str, timeout: float = 300) -> tuple[int, str, float]:
    """``script`` (sh) run with a ``size`` tmpfs mounted at ``mount`` in a private mount namespace (unshare -m; the
    mount is gone when it ends, so the script copies what must be looked at afterwards)."""
    mount.mkdir(exist_ok=True)
    return sh(["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o size={size} tmpfs '{mount}' && {script}"], d, timeout)


@case("9.83-disk-full", "TRACEBACK")
def disk_full(d: Path) -> tuple[bool | str, str]:
    rc0, out0, _ = sh(["unshare", "-m", "true"], d, 30)
    if rc0 != 0:
        return "NOT-RUN", f"unshare -m is refused here: {out0.strip()[:120]}"
    # (a) --roofline-out on a 48 KiB tmpfs during a 4-point sweep
    sweep = "  timeline: 0.25 s\n"
    (d / "probe.roofline.yaml").write_text(
        PROBE_YAML.format(engine_extra="", workload_extra="", sweep_extra=sweep).replace("[1, 2]", "[1, 2, 3, 4]")
        .replace(": 6\n", ": 30\n").replace("at: {concurrency: 2}", "at: {concurrency: every}"))
    with StubServer(model="roofline-tiny", max_model_len=1024, metrics=METRICS) as s:
        argv = f"{PY} -m pytest -p no:cacheprovider probe.roofline.yaml --endpoint {s.url}/v1 --roofline-out out -rA"
        rca, outa, ta = _in_tmpfs(d, d / "out", "48k", f"{argv}; rc=$?; mkdir -p saved; cp -r out/. saved/; exit $rc")
    results = next((d / "saved").rglob("results.json"), None)
    try:
        doc = json.loads(results.read_text()) if results else None
    except ValueError:
        doc = None
    kept = [p["id"] for p in doc["points"]] if doc else []
    passed = sorted({ln.split("::")[1].split()[0] for ln in outa.splitlines()
                     if ln.startswith("PASSED") and "::" in ln})
    says = "no space" in outa.lower() or "No space" in outa
    kept_c = {f"concurrency={p.rsplit('-c', 1)[-1]}" for p in kept}
    passed = [p for p in passed if not any(c + "]" in p for c in kept_c)]  # a PASS on a point not kept
    a_ok = rca != 0 and clean(outa) and says and doc is not None and not passed
    # (b) the history store on a 1 MiB tmpfs filled to ~6 KiB free when the run is stored
    (d / "predictions").mkdir(exist_ok=True)
    shutil.copy(REPO / "predictions/cpu-tiny.yaml", d / "predictions/cpu-tiny.yaml")
    def nightly(results: Path) -> str:
        return (f"{PY} -m pytest -p no:cacheprovider -p no:html --no-roofline-progress --replay {results} "
                f"predictions/cpu-tiny.yaml --roofline-history=hist")

    fill = (f"{PY} -c \"import os; s=os.statvfs('hist'); open('hist/filler','wb').write(b'x'*max(0, "
            f"s.f_bavail*s.f_frsize-6*1024))\"")
    # the night before is stored; the recorded night, a new run, meets the full disk, then is stored once freed
    before = shifted(d, -1)
    index = "hist/" + "index.jsonl"  # the scratch store's index, under the probe's folder
    script = (f"{nightly(before)} > n1.out 2>&1; wc -l < {index} > lines1; {fill}; "
              f"{nightly(RECORDED)} > n2.out 2>&1; echo $? > rc2; wc -l < {index} > lines2; "
              f"find hist -mindepth 4 -maxdepth 4 -type d ! -exec test -e {{}}/run.json \\; -print | wc -l > orphans; "
              f"rm hist/filler; {nightly(RECORDED)} > n3.out 2>&1; echo $? > rc3; wc -l < {index} > lines3")
    _in_tmpfs(d, d / "hist", "2m", script)
    r = {f: (d / f).read_text().strip() if (d / f).exists() else "?" for f in
         ("rc2", "rc3", "lines1", "lines2", "lines3", "orphans")}
    out2 = (d / "n2.out").read_text() if (d / "n2.out").exists() else ""
    b_ok = (r["rc2"] != "0" and "could not store" in out2 and clean(out2) and r["lines1"] == r["lines2"]
            and r["orphans"] == "0" and r["rc3"] == "0" and r["lines3"] == str(int(r["lines1"]) + 1))
    what = (f"(a) out on 48 KiB: rc={rca} in {ta:.1f} s, clean={clean(outa)}, says 'no space': {says}, results.json "
            f"valid: {doc is not None} with {kept}, PASS on a point not in it: {passed or 'none'}; (b) history on "
            f"a full 2 MiB "
            f"tmpfs: rc={r['rc2']}, says 'could not store': {'could not store' in out2}, index lines {r['lines1']} -> "
            f"{r['lines2']}, run folders without run.json {r['orphans']}; after freeing space rc={r['rc3']}, index "
            f"lines {r['lines3']}")
    if not clean(outa + out2):
        return "TRACEBACK", what
    return a_ok and b_ok, what


# ------------------------------------------------------------------ the CPU vLLM engine (9.84, 9.84b): --engine
ENGINE_LOCK = str(Path(tempfile.gettempdir()) / "roofline-engine.lock")


def _engine_interrupt(d: Path, sig: int) -> tuple[bool | str, str]:
    """pytest on predictions/cpu-tiny.yaml (the real CPU engine), ``sig`` once point 2 runs; then: no process of
    the run left, results.json valid and not 'running'. Under flock ENGINE_LOCK (one engine at a time)."""
    shutil.copy(REPO / "predictions/cpu-tiny.yaml", d / "cpu-tiny.yaml")
    proc = subprocess.Popen(["flock", ENGINE_LOCK, PY, "-m", "pytest", "-p", "no:cacheprovider", "cpu-tiny.yaml",
                             "--gpu", "cpu", "--roofline-out", "out"], cwd=d, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True, preexec_fn=sigint_as_ctrl_c)
    results = d / "out" / "cpu-tiny" / "results.json"
    end = time.monotonic() + 600
    kids: set[int] = set()
    while time.monotonic() < end and proc.poll() is None:
        with contextlib.suppress(OSError, ValueError):
            if len(json.loads(results.read_text())["points"]) >= 1:
                kids = _children(proc.pid)
                break
        time.sleep(0.2)
    if not kids:
        proc.kill()
        return "NOT-RUN", f"point 2 never started within 600 s (rc {proc.poll()})"
    pytest_pid = next((k for k in _children(proc.pid) if k in kids and _parent(k) == proc.pid), proc.pid)
    os.kill(pytest_pid, sig)  # pytest itself (flock's child), as Ctrl-C or the OOM killer would reach it
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(120)
    time.sleep(20)
    left = [k for k in kids if _alive(k)]
    for k in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(k, signal.SIGKILL)
    doc = json.loads(results.read_text())
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    ok = not left and doc["status"] == "interrupted" and "Traceback" not in err
    what = (f"{len(kids)} processes during point 2; exit {proc.returncode}; left 20 s after: {len(left)}; "
            f"results.json points {[p['id'] for p in doc['points']]}, status {doc['status']!r}")
    return ("ORPHAN" if left else ok), what


@case("9.84-engine-sigkill", "ORPHAN", engine=True)
def engine_sigkill(d: Path) -> tuple[bool | str, str]:
    return _engine_interrupt(d, signal.SIGKILL)


@case("9.84b-engine-sigint", "NOTE", engine=True)
def engine_sigint(d: Path) -> tuple[bool | str, str]:
    return _engine_interrupt(d, signal.SIGINT)




# ------------------------------------------------------------------ a live point on a big dataset
@case("issue23-live-dataset-100MB-memory", "KILLED/OOM", slow=True)
def live_dataset_memory(d: Path) -> tuple[bool | str, str]:
    """A 100 MB JSONL dataset (100,000 prompts of 200 words, 20M tokens; a word-level tokenizer.json) measured live
    against the stub: the peak RSS of pytest. 830 MB before the prompts were kept as array('I')."""
    import random

    from support.word_tokenizer import word_tokenizer

    words = [f"w{i}" for i in range(1000)]
    word_tokenizer(d, words)
    rnd = random.Random(1)
    with open(d / "ds.jsonl", "w") as f:
        for _ in range(100_000):
            f.write(json.dumps({"prompt": " ".join(rnd.choice(words) for _ in range(200)), "output_len": 4}) + "\n")
    size = (d / "ds.jsonl").stat().st_size
    (d / "probe.roofline.yaml").write_text(
        PROBE_YAML.format(engine_extra="", workload_extra=", dataset: {path: ds.jsonl, tokenizer: tokenizer.json}",
                          sweep_extra=""))
    with StubServer(model="roofline-tiny", max_model_len=1024, metrics=METRICS) as s:
        rc, out, t = sh(["/usr/bin/time", "-f", "PEAK %M", PY, "-m", "pytest", "-p", "no:cacheprovider",
                         "probe.roofline.yaml", "--endpoint", s.url + "/v1", "--roofline-out", "out", "-q"], d, 600)
    doc = json.loads(next((d / "out").rglob("results.json")).read_text())
    points = {p["id"]: (p["client"]["completed"], p["client"]["failed"]) for p in doc["points"]}
    measured = bool(points) and all(not f for _, f in points.values())  # the points its prediction needs
    peak = _peak_mb(out)
    return clean(out) and measured and peak < 2.5 * size / 1e6, (
        f"{size / 1e6:.0f} MB dataset: rc={rc} in {t:.1f} s, points (completed, failed) {points}, "
        f"peak RSS {peak:.0f} MB "
        f"(830 MB before; bound 2.5x the file)")


def case_ids(name: str) -> list[str]:
    """The case numbers a probe case covers: ``9.18b-9.19-9.20-...`` -> 9.18b, 9.19, 9.20."""
    return re.findall(r"(?:^|-)(\d\.\d+[a-z]?)(?=-)", name)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="leave out the slow cases (1 GB dataset, 10,000 files, ...)")
    ap.add_argument("--engine", action="store_true",
                    help="also the cases that start the real CPU vLLM engine (9.84, 9.84b; under "
                         "flock on roofline-engine.lock in the temporary folder, a few minutes)")
    ap.add_argument("-k", default="", help="run only the cases whose name holds this text")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="roofline-probe-") as tmp:
        os.chmod(tmp, 0o755)
        for c in CASES:
            if (args.quick and c.slow) or (c.engine and not args.engine) or args.k not in c.__name__:  # type: ignore[attr-defined]
                continue
            c(Path(tmp))
    by_class: dict[str, list[str]] = {}
    for name, cls, _ in RESULTS:
        for rid in case_ids(name) or [name]:
            by_class.setdefault(cls, []).append(rid)
    n = sum(len(v) for v in by_class.values())
    print(f"\n{len(RESULTS)} probe cases covering {n} of the numbered cases; per class:")
    for cls in CLASSES:
        if by_class.get(cls):
            ids = sorted(set(by_class[cls]))
            print(f"  {cls:<13} {len(by_class[cls]):3d}" + ("" if cls == "OK" else f"  {', '.join(ids)}"))


if __name__ == "__main__":
    main()
