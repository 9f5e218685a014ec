"""Benchmark of the load generator: is it the bottleneck, and does its clock lie?

    .venv/bin/python benchmarks/loadgen_bench.py [--duration 20] [--points 256x10000,256x4000]
                                                 [--clients roofline,aiohttp,httpx,vllm]
                                                 [--apis completions,chat] [--schemes http,https]
                                                 [--processes 1,2] [--client-cpus rest]

``--processes`` runs the roofline clients with each number of client processes (``LoadSpec.processes``:
the streams dealt out over N worker processes, one merged record); ``--client-cpus rest`` (default) pins
the client to every CPU but the server's CPU 0, ``all`` lets it share the server's CPU too.  Processes beyond
the client's CPUs cannot raise its ceiling: on a 2-CPU machine the client has one CPU of its own.

``--apis`` and ``--schemes`` multiply the roofline clients' runs: each point is also run against the stub's
``/v1/chat/completions`` (vLLM's chat stream format) and over TLS (``stubserver.c`` built with ``-DSTUB_TLS``
against OpenSSL, a self-signed certificate made with the ``openssl`` CLI for the run).  The other clients run
completions over http only.

For every point (streams × tick interval) and every client:

1. compile and start ``stubserver.c`` pinned to CPU 0 (``taskset``): it emits one token per active stream
   per tick, all streams on the same tick (the worst case, like one batched decode step), and logs the
   CLOCK_MONOTONIC send time of every token and the arrival time of every request;
2. run the client pinned to CPUs 1.. (``bench_clients.py``) as a closed loop at the point's concurrency for
   ``--duration`` seconds (64-token prompts, 256 output tokens);
3. sample the CPU time (utime + stime of the whole process tree) of client and server every 0.2 s (this
   orchestrator pins itself to CPU 0, next to the server, to stay off the client's CPU);
4. compare, over the steady window (the middle 70 % of the span between the first and the last request
   arrival at the server), the server's truth with what the client recorded for the same requests.

Columns: offered tok/s = streams / tick; achieved = tokens the server emitted in the steady window per
second (a client that reacts late to a finished stream leaves its slot idle); ITL p99 of the client's
pooled chunk gaps vs the same gaps from the server's send times; ts lag = client chunk time − server send
time; TTFT error = client TTFT − (first token send − request arrival) at the server; CPU % of one core over
the window.  Results are printed and written to ``benchmarks/RESULTS.md`` (``--markdown ''`` skips that).

The figures need a quiet machine; ``loadgen_cpu_bench.py`` measures the client's own CPU cost per token
without a server, which moves much less with busy neighbours.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
BUILD = HERE / "build"
PY = sys.executable
CLK_TCK = os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------------------------------------------------
# processes
# ---------------------------------------------------------------------------------------------------------


def build(name: str, *, tls: bool = False) -> Path:
    """Compile benchmarks/<name>.c into benchmarks/build/<name> (``<name>-tls`` with ``-DSTUB_TLS`` and
    OpenSSL) when missing or stale."""
    BUILD.mkdir(exist_ok=True)
    exe = BUILD / (f"{name}-tls" if tls else name)
    src = HERE / f"{name}.c"
    if not exe.exists() or exe.stat().st_mtime < src.stat().st_mtime:
        cc = shutil.which("cc") or shutil.which("gcc")
        if cc is None:
            sys.exit("no C compiler (cc) found")
        flags = ["-DSTUB_TLS"] if tls else []
        libs = ["-lssl", "-lcrypto"] if tls else []
        subprocess.run([cc, "-O2", *flags, "-o", str(exe), str(src), *libs], check=True)
    return exe


def self_signed_cert() -> tuple[Path, Path]:
    """A throw-away certificate for localhost / 127.0.0.1 (the openssl CLI), for the TLS runs."""
    cert, key = BUILD / "bench-cert.pem", BUILD / "bench-key.pem"
    if not cert.exists():
        if shutil.which("openssl") is None:
            sys.exit("--schemes https needs the openssl CLI")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                        "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "7", "-subj", "/CN=localhost",
                        "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"], check=True, capture_output=True)
    return cert, key


def _proc_cpu_s(pid: int) -> float:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    rest = raw[raw.rindex(")") + 2:].split()
    return (int(rest[11]) + int(rest[12])) / CLK_TCK


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            raw = Path(f"/proc/{d}/stat").read_text()
        except OSError:
            continue
        children.setdefault(int(raw[raw.rindex(")") + 2:].split()[1]), []).append(int(d))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


class TreeCPU:
    """utime + stime (s) of a process and its descendants (each /proc/PID/stat covers all its threads).
    The tree is rescanned every 2 s; in between only the known pids are read, to keep the sampler light."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.pids: list[int] = [pid]
        self.t_scan = 0.0

    def __call__(self) -> float:
        now = time.perf_counter()
        if now - self.t_scan > 2.0:
            self.pids = _descendants(self.pid)
            self.t_scan = now
        return sum(_proc_cpu_s(p) for p in self.pids)


def system_busy_s() -> float:
    """Busy CPU seconds of the whole machine so far (all CPUs, from /proc/stat)."""
    f = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    user, nice, system, idle, iowait, irq, softirq, steal = (int(x) for x in f[1:9])
    return (user + nice + system + irq + softirq + steal) / CLK_TCK


def wait_quiet(threshold_pct: float, max_wait_s: float) -> float:
    """Wait until other processes use less than ``threshold_pct`` % of one core (over 1 s); return the
    load seen last (in % of one core)."""
    t_end = time.perf_counter() + max_wait_s
    while True:
        b0, t0 = system_busy_s(), time.perf_counter()
        time.sleep(1.0)
        load = (system_busy_s() - b0) / (time.perf_counter() - t0) * 100
        if load < threshold_pct or time.perf_counter() > t_end:
            return load


def have_taskset() -> bool:
    return shutil.which("taskset") is not None and (os.cpu_count() or 1) >= 2


def pinned(cpus: str, argv: list[str]) -> list[str]:
    return ["taskset", "-c", cpus, *argv] if have_taskset() else argv


def client_cpus(which: str) -> str:
    """The CPU list the client is pinned to: ``rest`` = every CPU but the server's CPU 0, ``all`` = all."""
    n = os.cpu_count() or 1
    if which == "all" or n < 2:
        return f"0-{n - 1}" if n > 1 else "0"
    return "1" if n == 2 else f"1-{n - 1}"


def cpu_count_of(cpus: str) -> int:
    a, _, b = cpus.partition("-")
    return int(b or a) - int(a) + 1


def load_average() -> str:
    """The 1/5/15-minute load averages (/proc/loadavg): how busy the shared machine was."""
    try:
        return " / ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


@dataclass
class Run:
    client: str  # the client, with " chat" / " https" when the run used them
    streams: int
    interval_us: int
    log: Path
    out: Path
    # (t, client tree cpu s, server cpu s, whole machine busy s)
    cpu_samples: list[tuple[float, float, float, float]] = field(default_factory=list)
    quiet_before: float | None = None
    server_stderr: str = ""
    client_rc: int = 0
    client_stderr: str = ""


def run_one(server_exe: Path, client: str, streams: int, interval_us: int, args, *, api: str = "completions",
            cert: tuple[Path, Path] | None = None, processes: str = "1") -> Run:
    label = (client + (f" ×{processes} proc" if processes != "1" else "") + (" chat" if api == "chat" else "")
             + (" https" if cert else ""))
    tag = f"{label.replace(' ', '-').replace('×', 'x')}-c{streams}-i{interval_us}"
    logs = BUILD / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    run = Run(label, streams, interval_us, logs / f"{tag}.log", logs / f"{tag}.json")
    for stale in logs.glob(f"{tag}.*"):
        if stale.is_file():
            stale.unlink()
    tls_args = ["--cert", str(cert[0]), "--key", str(cert[1])] if cert else []
    srv = subprocess.Popen(pinned("0", [str(server_exe), "--port", "0", "--interval-us", str(interval_us),
                                      "--log", str(run.log), *tls_args]),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = srv.stdout.readline().split()
        port = int(line[1])
        url = f"https://localhost:{port}" if cert else f"http://127.0.0.1:{port}"
        extra = ["--api", api] + (["--ca-bundle", str(cert[0])] if cert else [])
        if processes != "1":
            extra += ["--processes", processes]
        cmd = pinned(client_cpus(args.client_cpus), [PY, str(HERE / "bench_clients.py"), client, "--url", url,
                         "--concurrency", str(streams), "--input-len", str(args.input_len),
                         "--output-len", str(args.output_len), "--duration", str(args.duration),
                         "--interval-s", str(interval_us / 1e6), "--out", str(run.out), *extra])
        env = dict(os.environ, PYTHONPATH=str(ROOT), TOKENIZERS_PARALLELISM="false", VLLM_LOGGING_LEVEL="WARNING")
        cli = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
        deadline = time.perf_counter() + args.duration * 4 + 180
        cli_cpu, srv_cpu = TreeCPU(cli.pid), TreeCPU(srv.pid)
        while cli.poll() is None:
            run.cpu_samples.append((time.perf_counter(), cli_cpu(), srv_cpu(), system_busy_s()))
            if time.perf_counter() > deadline:
                cli.kill()
                break
            time.sleep(0.2)
        run.client_rc = cli.wait()
        run.client_stderr = cli.stderr.read()[-3000:]
    finally:
        srv.send_signal(signal.SIGTERM)
        try:
            _, err = srv.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            srv.kill()
            _, err = srv.communicate()
        run.server_stderr = err.strip()
    return run


# ---------------------------------------------------------------------------------------------------------
# analysis
# ---------------------------------------------------------------------------------------------------------


def parse_log(path: Path):
    reqs: dict[str, dict] = {}
    ticks = []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if not parts:
                continue
            if parts[0] == "R":
                rid = parts[1]
                reqs[rid] = {
                    "arrival": int(parts[2]) * 1e-9, "arrival_read": int(parts[3]) * 1e-9,
                    "prompt": int(parts[4]), "max": int(parts[5]),
                    "status": parts[7], "times": np.array(parts[8:], dtype=np.int64) * 1e-9,
                }
            elif parts[0] == "T":
                ticks.append((int(parts[1]), int(parts[2]), int(parts[3]), int(parts[4])))
    return reqs, np.array(ticks, dtype=np.float64).reshape(-1, 4)


def interp_cpu(samples, t0, t1, which):
    ts = np.array([s[0] for s in samples])
    cs = np.array([s[which] for s in samples])
    if len(ts) < 2 or t1 <= t0:
        return None
    return float((np.interp(t1, ts, cs) - np.interp(t0, ts, cs)) / (t1 - t0) * 100.0)


def analyse(run: Run) -> dict:
    if not run.out.exists():
        tail = " ".join(run.client_stderr.strip().splitlines()[-2:])
        return {"client": run.client, "error": f"client failed (rc={run.client_rc}): {tail[-300:]}"}
    cdata = json.loads(run.out.read_text())
    sreqs, ticks = parse_log(run.log)
    arrivals = sorted(r["arrival"] for r in sreqs.values())
    a0, a1 = arrivals[0], arrivals[-1]
    w0, w1 = a0 + 0.15 * (a1 - a0), a0 + 0.85 * (a1 - a0)
    tick_start = ticks[:, 1] * 1e-9
    in_win = (tick_start >= w0) & (tick_start < w1)
    tokens = ticks[in_win, 3].sum()
    busy = ((ticks[in_win, 2] - ticks[in_win, 1]) * 1e-9).sum()
    achieved = tokens / (w1 - w0)
    offered = run.streams / (run.interval_us * 1e-6)
    itl_c, itl_s, lag, ttft_err = [], [], [], []
    matched = skipped = 0
    for cr in cdata["requests"]:
        sr = sreqs.get(cr["rid"])
        if sr is None or not cr["ok"] or sr["status"] != "ok" or not (w0 <= sr["arrival"] < w1):
            continue
        c = np.asarray(cr["chunks"], dtype=np.float64)
        s = sr["times"]
        if len(c) != len(s) or len(c) == 0:
            skipped += 1
            continue
        matched += 1
        itl_c.append(np.diff(c))
        itl_s.append(np.diff(s))
        lag.append(c - s)
        ttft_err.append((c[0] - cr["sent"]) - (s[0] - sr["arrival"]))
    res = {
        "client": run.client, "streams": run.streams, "interval_ms": run.interval_us / 1000,
        "offered": offered, "achieved": achieved, "pct": 100 * achieved / offered,
        "reported": cdata.get("reported_output_tok_s"),
        "matched_requests": matched, "skipped_requests": skipped,
        "client_cpu": interp_cpu(run.cpu_samples, w0, w1, 1),
        "server_cpu": interp_cpu(run.cpu_samples, w0, w1, 2),
        "machine_cpu": interp_cpu(run.cpu_samples, w0, w1, 3),
        "server_busy_pct": 100 * busy / (w1 - w0),
        "server_ceiling_tok_s": tokens / busy if busy > 0 else None,
        "notes": cdata.get("notes"),
    }
    if res["machine_cpu"] is not None and res["client_cpu"] is not None and res["server_cpu"] is not None:
        res["other_cpu"] = max(0.0, res["machine_cpu"] - res["client_cpu"] - res["server_cpu"])
    else:
        res["other_cpu"] = None
    if matched:
        ic, is_, lg = np.concatenate(itl_c) * 1e3, np.concatenate(itl_s) * 1e3, np.concatenate(lag) * 1e3
        te = np.array(ttft_err) * 1e3
        res.update({
            "itl_mean_client": float(ic.mean()), "itl_p99_client": float(np.percentile(ic, 99)),
            "itl_mean_true": float(is_.mean()), "itl_p99_true": float(np.percentile(is_, 99)),
            "lag_p50": float(np.percentile(lg, 50)), "lag_p99": float(np.percentile(lg, 99)),
            "ttft_err_mean": float(te.mean()), "ttft_err_p99": float(np.percentile(te, 99)),
        })
        res["itl_p99_delta"] = res["itl_p99_client"] - res["itl_p99_true"]
    return res


# ---------------------------------------------------------------------------------------------------------
# reporting
# ---------------------------------------------------------------------------------------------------------

HEAD = ("| client | streams × tick | offered tok/s | achieved tok/s (server) | % of offered | "
        "ITL p99 client (true) ms | ΔITL p99 ms | ts lag p50/p99 ms | TTFT err mean/p99 ms | client CPU % | "
        "server CPU % | other procs CPU % |")
SEP = "|---" * (HEAD.count("|") - 1) + "|"


def fmt(x, spec=".2f"):
    return "—" if x is None else format(x, spec)


def row(r: dict) -> str:
    if "error" in r:
        return f"| {r['client']} | | | | | | | | | | | {r['error'][:160].replace('|', '/')} |"
    point = f"{r['streams']} × {r['interval_ms']:g} ms"
    itl = f"{fmt(r.get('itl_p99_client'))} ({fmt(r.get('itl_p99_true'))})"
    lag = f"{fmt(r.get('lag_p50'))} / {fmt(r.get('lag_p99'))}"
    tt = f"{fmt(r.get('ttft_err_mean'))} / {fmt(r.get('ttft_err_p99'))}"
    return (f"| {r['client']} | {point} | {r['offered']:,.0f} | {r['achieved']:,.0f} | {r['pct']:.1f} | {itl} | "
            f"{fmt(r.get('itl_p99_delta'), '+.2f')} | {lag} | {tt} | {fmt(r['client_cpu'], '.0f')} | "
            f"{fmt(r['server_cpu'], '.0f')} | {fmt(r.get('other_cpu'), '.0f')} |")


def environment() -> str:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    pin = (f"on (server CPU 0, client CPUs {client_cpus(CLIENT_CPUS[0])})" if have_taskset()
           else "OFF (no taskset / 1 CPU)")
    return (f"{os.cpu_count()} CPUs ({cpu}), kernel {platform.release()}, Python {platform.python_version()}, "
            f"load average {load_average()}, "
            f"pinning {pin}")


CLIENT_CPUS = ["rest"]  # set from --client-cpus in main()


def side_by_side(results: list[dict], procs: list[str], args) -> list[str]:
    """Per point, each client (the roofline client once per process count): % of offered, ΔITL p99, client
    CPU (best and worst of the repeats), with the machine's cores and load, and what the cores can show."""
    n_client = cpu_count_of(client_cpus(args.client_cpus)) if have_taskset() else (os.cpu_count() or 1)
    out = [f"Side by side ({os.cpu_count()} CPUs, client on {n_client} CPU(s) "
           f"[{client_cpus(args.client_cpus) if have_taskset() else 'unpinned'}], load average {load_average()}):",
           "",
           "| point (offered tok/s) | client | % of offered | ΔITL p99 ms | client CPU % of one core "
           "| other procs CPU % |",
           "|---|---|---|---|---|---|"]
    points: dict[tuple[int, float], list[dict]] = {}
    for r in results:
        if "error" not in r:
            points.setdefault((r["streams"], r["interval_ms"]), []).append(r)
    for (streams, interval_ms), rows in points.items():
        by: dict[str, list[dict]] = {}
        for r in rows:
            by.setdefault(r["client"].split(" #")[0], []).append(r)
        for client, rs in by.items():
            pct = sorted(x["pct"] for x in rs)
            dl = sorted(x.get("itl_p99_delta", float("nan")) for x in rs)
            cpu = sorted(x["client_cpu"] or 0.0 for x in rs)
            oth = sorted(x.get("other_cpu") or 0.0 for x in rs)

            def span(v, f):
                return format(v[0], f) if len(v) == 1 or format(v[0], f) == format(v[-1], f) else \
                    f"{format(v[0], f)} – {format(v[-1], f)}"

            out.append(f"| {streams} × {interval_ms:g} ms ({rs[0]['offered']:,.0f}) | {client} | {span(pct, '.1f')} | "
                       f"{span(dl, '+.2f')} | {span(cpu, '.0f')} | {span(oth, '.0f')} |")
    many = [p for p in procs if p not in ("1", "auto") and int(p) > n_client]
    if many:
        out += ["", f"Processes beyond the client's {n_client} CPU(s) ({', '.join(many)}) share those CPUs: they can "
                "show that the split and the merge are correct and what they cost, not a higher ceiling."]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=20.0, help="seconds of load per client and point")
    ap.add_argument("--points", default="256x10000,256x4000,512x4000", help="STREAMSxINTERVAL_US,...")
    ap.add_argument("--clients", default="c-ref,roofline,aiohttp,httpx,vllm",
                    help="any of c-ref, roofline, roofline-user, aiohttp, aiohttp-uvloop, httpx, vllm")
    ap.add_argument("--input-len", type=int, default=64)
    ap.add_argument("--output-len", type=int, default=256)
    ap.add_argument("--quiet-pct", type=float, default=10.0,
                    help="before each run wait until other processes use less than this %% of one core")
    ap.add_argument("--quiet-wait", type=float, default=120.0, help="give up waiting for quiet after this long")
    ap.add_argument("--repeat", type=int, default=1, help="runs per client and point (all are reported)")
    ap.add_argument("--markdown", default=str(HERE / "RESULTS.md"), help="'' to skip writing the file")
    ap.add_argument("--apis", default="completions",
                    help="completions,chat: the APIs the roofline clients call (the others: completions)")
    ap.add_argument("--schemes", default="http", help="http,https: TLS runs for the roofline clients")
    ap.add_argument("--processes", default="1,2",
                    help="client process counts for the roofline clients (LoadSpec.processes), e.g. 1,2,auto")
    ap.add_argument("--client-cpus", default="rest", choices=("rest", "all"),
                    help="rest: every CPU but the server's CPU 0; all: the client may share the server's CPU")
    args = ap.parse_args()
    CLIENT_CPUS[0] = args.client_cpus
    procs = [x.strip() for x in args.processes.split(",") if x.strip()]

    if have_taskset():
        os.sched_setaffinity(0, {0})  # keep this sampler off the client's CPU
    exe = build("stubserver")
    apis = [a.strip() for a in args.apis.split(",") if a.strip()]
    schemes = [x.strip() for x in args.schemes.split(",") if x.strip()]
    exe_tls = build("stubserver", tls=True) if "https" in schemes else None
    cert = self_signed_cert() if "https" in schemes else None
    if "c-ref" in args.clients:
        build("refclient")
    points = [tuple(int(x) for x in p.split("x")) for p in args.points.split(",")]
    clients = [c.strip() for c in args.clients.split(",") if c.strip()]
    results = []
    print(environment())
    print(HEAD)
    print(SEP)
    variants = [(api, scheme) for scheme in schemes for api in apis]
    for streams, interval_us in points:
        for client in clients:
            roofline = client.startswith("roofline")
            runs = ([(api, scheme, pr) for api, scheme in variants for pr in procs] if roofline
                    else [("completions", "http", "1")])
            for api, scheme, pr in runs:
                for k in range(args.repeat):
                    quiet = wait_quiet(args.quiet_pct, args.quiet_wait)
                    https = scheme == "https"
                    run = run_one(exe_tls if https and exe_tls else exe, client, streams, interval_us, args,
                                  api=api, cert=cert if https else None, processes=pr)
                    r = analyse(run)
                    r["server_stderr"] = run.server_stderr
                    r["quiet_before"] = quiet
                    if args.repeat > 1:
                        r["client"] = f"{run.client} #{k + 1}"
                    r["processes"] = pr
                    results.append(r)
                    print(row(r), flush=True)
    side = side_by_side(results, procs, args)
    print()
    print("\n".join(side))
    notes = []
    for r in results:
        if "error" in r:
            continue
        notes.append(
            f"- {r['client']} @ {r['streams']}×{r['interval_ms']:g} ms: {r['matched_requests']} requests matched "
            f"({r['skipped_requests']} skipped); server tick loop busy {r['server_busy_pct']:.1f} % of the window "
            f"→ server ceiling ≈ {fmt(r['server_ceiling_tok_s'], ',.0f')} tok/s"
            + (f"; client-reported {r['reported']:,.0f} tok/s" if r.get("reported") else "")
            + (f"; {json.dumps(r['notes'])}" if r.get("notes") else "")
        )
    for line in notes:
        print(line)
    if args.markdown:
        md = [
            "# Load-generator benchmark",
            "",
            f"Measured {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC with "
            f"`benchmarks/loadgen_bench.py --duration {args.duration:g} --points {args.points} "
            f"--clients {args.clients} --apis {args.apis} --schemes {args.schemes} --processes {args.processes} "
            f"--client-cpus {args.client_cpus} --repeat {args.repeat}`.",
            f"Machine: {environment()}.",
            f"Closed loop, {args.input_len}-token prompts, {args.output_len} output tokens, all streams emitting on "
            "the same server tick.  Steady window = middle 70 % of the request-arrival span.  See the module "
            "docstring of loadgen_bench.py for the column definitions.",
            "",
            HEAD,
            SEP,
            *[row(r) for r in results],
            "",
            *side,
            "",
            "Details:",
            "",
            *notes,
            "",
        ]
        Path(args.markdown).write_text("\n".join(md))
        print(f"wrote {args.markdown}")


if __name__ == "__main__":
    main()
