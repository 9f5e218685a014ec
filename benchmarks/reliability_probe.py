"""Re-run the December reliability review's cases that issue 23 fixed (docs/reference/refusals.md) and print, per
case, OK or NOT OK with what happened, then the counts.

    .venv/bin/python benchmarks/reliability_probe.py            # every case (about 3 minutes on 2 cores)
    .venv/bin/python benchmarks/reliability_probe.py --quick    # without the 1 GB dataset and 10,000-file report

Cases are named by the review's numbers (../shared/reviews is the review; its table gives each input). A case is
OK when the plugin gave what the review expected: a clear error (no traceback, no INTERNALERROR) in bounded time
and memory, no PASS on a measurement that did not happen, no child outliving pytest, a results file that says how
the run ended. Cases that need PostgreSQL, tmpfs mounts or the CPU engine, and those of the issue-20/21 areas
(peers' false PASSes, the history store), are not run here. Nothing is asserted: the tests hold the claims.
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
    return clean(out), f"rc={rc}, clean={clean(out)} (the vllm bench reader: issue 20's area)"


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
