"""Re-run the December reliability review's cases that issue 23 fixed (docs/reference/refusals.md) and print, per
case, OK or NOT OK with what happened, then the counts.

    .venv/bin/python benchmarks/reliability_probe.py            # every case (about 3 minutes on 2 cores)
    .venv/bin/python benchmarks/reliability_probe.py --quick    # without the 1 GB dataset and 10,000-file report

Cases are named by the December reliability review's case numbers; each case's input is built in this file. A case is
OK when the plugin gave what the review expected: a clear error (no traceback, no INTERNALERROR) in bounded time
and memory, no PASS on a measurement that did not happen, no child outliving pytest, a results file that says how
the run ended. The history store's cases run against directory and SQLite stores and a throwaway PostgreSQL
(tests/support/postgres.py; ``apt-get install -y postgresql``). Cases that need tmpfs mounts, a user without
CAP_DAC_OVERRIDE (read-only stores, as root) or the CPU engine are not run here. Nothing is asserted: the tests
hold the claims.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
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

from support.openai_stub import Fault, StubServer  # noqa: E402

PY = sys.executable
RESULTS: list[tuple[str, bool, str]] = []


def case(name: str) -> Callable[[Callable[[Path], tuple[bool, str]]], Callable[[Path], None]]:
    def wrap(fn: Callable[[Path], tuple[bool, str]]) -> Callable[[Path], None]:
        def run(scratch: Path) -> None:
            d = scratch / name
            d.mkdir()
            t0 = time.monotonic()
            try:
                ok, what = fn(d)
            except Exception as exc:  # noqa: BLE001 - a probe reports, never stops
                ok, what = False, f"probe raised {type(exc).__name__}: {str(exc)[:200]}"
            RESULTS.append((name, ok, f"{what} ({time.monotonic() - t0:.1f} s)"))
            print(f"{'OK    ' if ok else 'NOT OK'} {name}: {what} ({time.monotonic() - t0:.1f} s)", flush=True)

        run.__name__ = name
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
    tolerance: ±50%
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


@case("9.77-metrics-trickle")
def metrics_trickle(d: Path) -> tuple[bool, str]:
    return bounded_run(d, 60, stub={"trickle": {"/metrics"}})


@case("9.78-models-trickle")
def models_trickle(d: Path) -> tuple[bool, str]:
    return bounded_run(d, 90, stub={"trickle": {"/v1/models"}})


@case("9.79-version-trickle")
def version_trickle(d: Path) -> tuple[bool, str]:
    return bounded_run(d, 60, stub={"trickle": {"/version"}})


@case("9.79g-replica-trickle")
def replica_trickle(d: Path) -> tuple[bool, str]:
    with (
        StubServer(model="roofline-tiny", max_model_len=1024, metrics="vllm:num_requests_running 0\n") as a,
        StubServer(model="roofline-tiny", metrics="", trickle={"/metrics"}) as b,
    ):
        rc, out, t = pytest_run(d, a, engine_extra=f", replicas: 2, replica_metrics: [{a.url}, {b.url}]")
    ok = clean(out) and t < 90 and "littles-c2" in out and " PASSED" not in out.split("short test summary")[-1]
    return ok, f"rc={rc} in {t:.1f} s, clean={clean(out)}; the point is an error naming the replica"


@case("9.69-sse-100MB-line")
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


@case("9.79c-version-hostile")
def version_hostile(d: Path) -> tuple[bool, str]:
    with StubServer(model="roofline-tiny", max_model_len=1024, version="<script>\x1b[2J../x") as s:
        rc, out, t = pytest_run(d, s)
    doc = json.loads(next((d / "out").rglob("results.json")).read_text())
    v = doc["setup"]["engine"]["version"]
    return "\x1b" not in out and "\x1b" not in json.dumps(
        doc
    ), f"rc={rc}; ESC in terminal: {out.count(chr(27))}; version {v!r}"


@case("9.79d-version-20MB")
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


@case("9.81-sigkill-mid-sweep")
def sigkill(d: Path) -> tuple[bool, str]:
    return _interrupt(d, signal.SIGKILL)


@case("9.80-sigint-mid-sweep")
def sigint(d: Path) -> tuple[bool, str]:
    return _interrupt(d, signal.SIGINT)


@case("9.82-double-sigint")
def double_sigint(d: Path) -> tuple[bool, str]:
    return _interrupt(d, signal.SIGINT, twice=True)


@case("9.47-dataset-bad-tokenizer")
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


@case("9.42-dataset-non-utf8")
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


@case("9.43-dataset-deep-nesting")
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


@case("9.40-dataset-bigint-output")
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


@case("9.45-dataset-1GB")
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


@case("9.53-calibration-file-hand-edited")
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


@case("9.52-calibrate-duplicate-points")
def calibrate_dupes(d: Path) -> tuple[bool, str]:
    rec = REPO / "predictions" / "recorded" / "cpu-tiny-2026-12-01.results.json"
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


@case("2-fuzzer-concurrency-1e40")
def concurrency_1e40(d: Path) -> tuple[bool, str]:
    (d / "p.yaml").write_text(
        "hardware: a100-sxm4-80gb\nmodel: qwen3-8b\npredictions:\n  - id: params\n"
        "    quantity: output_throughput\n    at: {concurrency: " + "9" * 40 + "}\n"
        "    predicted: 5,060 tok/s\n"
    )
    rc, out, t = sh([PY, "-m", "pytest", "-p", "no:cacheprovider", "p.yaml", "-q"], d, 120)
    return clean(out) and "outside [0, 10,000]" in out, f"rc={rc}, clean={clean(out)} in {t:.1f} s"


@case("7.24-report-bad-yaml")
def report_1e999(d: Path) -> tuple[bool, str]:
    (d / "p.yaml").write_text(
        "hardware: a100-sxm4-80gb\nmodel: qwen3-8b\npredictions:\n  - id: p\n"
        "    quantity: max_num_seqs\n    predicted: 1e999\n"
    )
    rc, out, _ = sh([PY, "-m", "pytest_roofline.cli", "report", "p.yaml", "-o", "r.html"], d)
    return rc != 0 and clean(out), f"rc={rc}: {out.strip().splitlines()[-1][:120]}"


@case("3.16-deep-nesting")
def yaml_deep(d: Path) -> tuple[bool, str]:
    (d / "p.yaml").write_text(
        "hardware: a100-sxm4-80gb\nmodel: qwen3-8b\nengine:\n  args:\n    x: "
        + "[" * 100_000
        + "]" * 100_000
        + "\npredictions: []\n"
    )
    rc, out, _ = sh([PY, "-m", "pytest", "-p", "no:cacheprovider", "p.yaml", "-q"], d, 120)
    return clean(out), f"rc={rc}, clean={clean(out)}: {next((ln for ln in out.splitlines() if 'nest' in ln), '')[:100]}"


@case("9.39-peers-10000-files")
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


@case("9.37-peers-deep-nesting")
def peers_deep(d: Path) -> tuple[bool, str]:
    (d / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (d / "p.yaml").write_text((REPO / "predictions/cpu-tiny.yaml").read_text())
    rc, out, _ = sh([PY, "-m", "pytest", "-p", "no:cacheprovider", "p.yaml", "--replay", "deep.json", "-q"], d, 120)
    said = next((ln for ln in out.splitlines() if "nest" in ln), "")[:120]
    return clean(out) and rc != 0, f"rc={rc}, clean={clean(out)}: {said}"


@case("9.37b-peers-deep-object-jsonl-folder")
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


@case("9.33-peers-completed-lt-num-prompts")
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


@case("9.39c-aiperf-zero")
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


@case("9.70-stream-bad-utf8")
def stream_bad_utf8(d: Path) -> tuple[bool, str]:
    return _stream_case(d, BAD_UTF8, "")


@case("9.70b-stream-malformed-compact")
def stream_malformed_compact(d: Path) -> tuple[bool, str]:
    return _stream_case(d, COMPACT_NOT_JSON, "")


@case("9.86b-adaptive-malformed-compact")
def adaptive_malformed_compact(d: Path) -> tuple[bool, str]:
    return _stream_case(d, COMPACT_NOT_JSON, "  adaptive: true\n")


@case("9.88-processes-malformed-compact")
def processes_malformed_compact(d: Path) -> tuple[bool, str]:
    return _stream_case(d, COMPACT_NOT_JSON, "  processes: 2\n")


# ------------------------------------------------------------------ the history store (issue 21's fixes, re-run)
RECORDED = REPO / "predictions/recorded/cpu-tiny-2026-12-01.results.json"


def night(d: Path, *args: str, results: Path = RECORDED) -> tuple[int, str, float]:
    """One replayed night of predictions/cpu-tiny.yaml (the recorded CPU run) with the given history options."""
    (d / "predictions").mkdir(exist_ok=True)
    shutil.copy(REPO / "predictions/cpu-tiny.yaml", d / "predictions/cpu-tiny.yaml")
    env = {"COLUMNS": "120"}
    return sh([PY, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:html", "--no-roofline-progress", "--replay",
               str(results), "predictions/cpu-tiny.yaml", *args], d, 300, env=env)


def cli(d: Path, *args: str) -> tuple[int, str, float]:
    return sh([PY, "-m", "pytest_roofline.cli", *args], d, 120)


@case("9.01-9.02-index-cut-and-corrupt")
def index_damaged(d: Path) -> tuple[bool, str]:
    hist = d / "hist"
    night(d, f"--roofline-history={hist}")
    night(d, f"--roofline-history={hist}")
    idx = hist / "index.jsonl"
    lines = idx.read_bytes().splitlines(keepends=True)
    idx.write_bytes(lines[0] + lines[1][: len(lines[1]) // 2])  # 9.01: cut mid-line
    rc1, out1, _ = night(d, f"--roofline-history={hist}")
    lines = idx.read_bytes().splitlines(keepends=True)
    idx.write_bytes(lines[0] + b"\x00\xff garbage \x01\n" + b"".join(lines[1:]))  # 9.02: a middle line of garbage
    rc2, out2, _ = night(d, f"--roofline-history={hist}")
    runs = len(list(hist.rglob("run.json")))
    noisy = [o for o in (out1, out2) if "HistoryIndexRebuiltWarning" in o or "_store.py" in o]
    ok = rc1 == 0 and rc2 == 0 and not noisy and runs == 4 and clean(out1 + out2)
    return ok, f"rc {rc1}/{rc2}, raw warnings: {len(noisy)}, stored runs {runs} of 4, clean={clean(out1 + out2)}"


@case("9.03-index-wrong-types")
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


@case("9.26-history-deep-index")
def index_deep(d: Path) -> tuple[bool, str]:
    hist = d / "hist"
    night(d, f"--roofline-history={hist}")
    with open(hist / "index.jsonl", "a") as fh:
        fh.write("[" * 100_000 + "]" * 100_000 + "\n")
    rp, op, _ = night(d, f"--roofline-history={hist}")
    rh, oh, _ = cli(d, "history", str(hist), "-o", str(d / "t.html"))
    return clean(op + oh) and rp == 0, f"pytest rc={rp}, history rc={rh}, clean={clean(op + oh)}"


@case("9.12-store-cannot-take-the-run")
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


@case("9.15-sqlite-locked-at-store")
def sqlite_locked(d: Path) -> tuple[bool, str]:
    db = d / "h.db"
    url = f"sqlite:///{db}"
    night(d, f"--roofline-history={url}")  # creates the database
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


@case("9.24-compare-hostile")
def compare_hostile(d: Path) -> tuple[bool, str]:
    hist = d / "hist"
    night(d, f"--roofline-history={hist}", "--roofline-history-label", "a\x1b[2J\x1b]0;owned\x07b")
    night(d, f"--roofline-history={hist}", "--roofline-history-label", "c\x1b[31mred")
    ids = [json.loads(x)["run_id"] for x in (hist / "index.jsonl").read_text().splitlines()]
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


@case("9.07-four-writers-fresh-postgres")
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


@case("9.18b-9.19-9.20-9.22-postgres-names-passwords-stop")
def pg_sessions(d: Path) -> tuple[bool, str]:
    import sqlalchemy as sa

    notes, bad = [], []
    with _postgres() as pg:
        # 9.19/9.20: a 300-character label, control characters in the label, a 204-character and a NUL model name
        url = _pg_database(pg, "names")
        rec = json.loads(RECORDED.read_text())
        for name, args, model in (("label-300", ["--roofline-history-label", "n" + "L" * 299], None),
                                  ("label-controls", ["--roofline-history-label", "a\x01b\x1b[2Jc\x7f"], None),
                                  ("model-204", [], "org/" + "m" * 200), ("model-nul", [], "mo\x00del")):
            results = RECORDED
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
        rc, out, t = night(d, f"--roofline-history={url}")
        (d / "conftest.py").unlink()
        notes.append(f"stopped mid-run: rc={rc} in {t:.1f} s, says 'could not store': {'could not store' in out}")
        if rc == 0 or not clean(out) or "SLASH-SECRET5" in out:
            bad.append("9.22: exit 0, unclean or the password printed")
    return not bad, "; ".join(notes) + (f"; NOT OK: {bad}" if bad else "")


SLOW = {"9.45-dataset-1GB", "9.39-peers-10000-files"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="leave out the 1 GB dataset and the 10,000-file report")
    ap.add_argument("-k", default="", help="run only the cases whose name holds this text")
    args = ap.parse_args()
    cases = [
        metrics_trickle,
        models_trickle,
        version_trickle,
        replica_trickle,
        sse_huge_line,
        version_hostile,
        version_huge,
        sigkill,
        sigint,
        double_sigint,
        bad_tokenizer,
        non_utf8,
        deep_dataset,
        bigint,
        gigabyte,
        calibration_files,
        calibrate_dupes,
        concurrency_1e40,
        report_1e999,
        yaml_deep,
        report_10k,
        peers_deep,
        peers_deep_more,
        peers_completed_1,
        aiperf_zero,
        stream_bad_utf8,
        stream_malformed_compact,
        adaptive_malformed_compact,
        processes_malformed_compact,
        index_damaged,
        index_wrong_types,
        index_deep,
        store_refuses,
        sqlite_locked,
        compare_hostile,
        pg_writers,
        pg_sessions,
    ]
    with tempfile.TemporaryDirectory(prefix="roofline-probe-") as tmp:
        for c in cases:
            if (args.quick and c.__name__ in SLOW) or args.k not in c.__name__:
                continue
            c(Path(tmp))
    ok = sum(1 for _, o, _ in RESULTS if o)
    print(f"\n{ok} OK, {len(RESULTS) - ok} NOT OK of {len(RESULTS)} cases")


if __name__ == "__main__":
    main()
