"""Why does this tool measure C = 1 faster than ``vllm bench serve`` on the same CPU engine? (issue 20)

``benchmarks/peer_agreement.py`` found, at C = 1 only and in every round, this tool's throughput ~1.7x vLLM's and
its TTFT/TPOT/E2E lower. This script measures, for each tool's run at the same point (alternating order):

* the work sent: prompt tokens per request as the server counted them (this tool: ``usage.prompt_tokens`` per
  record; both: the server's ``vllm:prompt_tokens_total`` / ``vllm:generation_tokens_total`` deltas) and vLLM's own
  ``input_lens``;
* the server's own view: ``/metrics`` histogram deltas of the run (TTFT, E2E, prefill, decode, queue: mean per
  request), so "the server did more work" and "the client added time" can be told apart;
* CPU: this process's CPU seconds (the client; a sampler thread every 20 ms, cut to the measured window) and each
  engine process's CPU seconds over the same window, per request.

One engine start, then ``--rounds`` rounds of both tools at ``--concurrency`` (default 1), ``--requests`` each.
Run it under the engine lock and keep it short:

    flock /tmp/roofline-engine.lock python benchmarks/peer_c1_diagnosis.py --rounds 2 --requests 24

``--vllm-subprocess`` runs ``vllm bench serve`` in its own process (its CPU then read from /proc) instead of this
one, and ``--vllm-nice N`` under ``nice -n N`` (does the server slow down less when vLLM's client yields the
CPU?). ``--roofline-prompts vllm`` makes this tool send the token ids vLLM's random dataset sends (decoded,
re-encoded and truncated by vLLM's own ``RandomDataset``), so the prompts are identical. ``--user-stamps`` adds
a third run per round: this tool with user-space read times (as ``vllm bench serve`` stamps) instead of the
kernel's receive stamps. ``--pool A.json B.json ...`` starts nothing and pools saved ``--json-out`` files.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_roofline.measure import loadgen, stats  # noqa: E402
from pytest_roofline.measure.engine import Engine, EngineConfig, vllm_cli  # noqa: E402
from pytest_roofline.measure.engine import tiny_model as tinymodel  # noqa: E402
from pytest_roofline.measure.engine.metrics import histogram_delta, scrape_metrics  # noqa: E402
from pytest_roofline.measure.loadgen import _http1  # noqa: E402
from pytest_roofline.measure.results.peers import load_any  # noqa: E402
from pytest_roofline.model.workload import DatasetLengths  # noqa: E402

_TICK = os.sysconf("SC_CLK_TCK")


def _cpu_s(pid: int) -> float | None:
    try:
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(f[11]) + int(f[12])) / _TICK  # utime + stime (fields 14, 15)


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"


class Sampler:
    """Every ``interval_s``: (perf_counter, this process's CPU s, each engine pid's CPU s, each extra pid's)."""

    def __init__(self, pids: set[int], interval_s: float = 0.02) -> None:
        self.pids, self.extra, self.interval_s = sorted(pids), set[int](), interval_s
        self.rows: list[tuple[float, float, dict[int, float | None]]] = []
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.rows.append((time.perf_counter(), time.process_time(),
                              {p: _cpu_s(p) for p in [*self.pids, *self.extra]}))
            self._stop.wait(self.interval_s)

    def __enter__(self) -> Sampler:
        self._t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._t.join()

    def window(self, t0: float, t1: float) -> dict[str, Any]:
        """CPU seconds between the last sample at or before ``t0`` and the first at or after ``t1``."""
        a = max((r for r in self.rows if r[0] <= t0), key=lambda r: r[0], default=self.rows[0])
        b = min((r for r in self.rows if r[0] >= t1), key=lambda r: r[0], default=self.rows[-1])
        per_pid = {p: (b[2].get(p) or 0.0) - (a[2].get(p) or 0.0) for p in b[2] if a[2].get(p) is not None}
        return {"wall_s": b[0] - a[0], "self_cpu_s": b[1] - a[1], "pids": per_pid}


def _hist_means(before: dict, after: dict) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ("ttft", "e2e", "prefill", "decode", "queue", "itl", "tpot", "inference"):
        d = histogram_delta((before.get("histograms") or {}).get(key), (after.get("histograms") or {}).get(key))
        if d and d["count"]:
            out[key + "_ms"] = round(1000 * d["sum"] / d["count"], 2)
            out[key + "_n"] = int(d["count"])
    for key in ("prompt_tokens", "generation_tokens", "request_success", "prefix_cache_hits"):
        if after.get(key) is not None and before.get(key) is not None:
            out[key] = after[key] - before[key]
    return out


def run_roofline(url: str, c: int, n: int, rnd: int, args: argparse.Namespace,
                 prompts: list[list[int]] | None) -> tuple[dict, float, float, dict]:
    extra: dict[str, Any] = {}
    if prompts is not None:  # vLLM's prompts, entry i for request i (warm-up first), the same output length
        extra = {"dataset": DatasetLengths(input_lens=tuple(len(p) for p in prompts),
                                           output_lens=(args.output_len,) * len(prompts)),
                 "dataset_prompts": tuple(tuple(p) for p in prompts)}
    spec = loadgen.LoadSpec(model="roofline-tiny", mode="closed", concurrency=c, num_requests=n, warmup_requests=c,
                            input_len=args.input_len, output_len=args.output_len, seed=100 + rnd,
                            point_id=f"diag-c{c}-r{rnd}",
                            token_id_range=(tinymodel.PROMPT_TOKEN_ID_MIN, tinymodel.PROMPT_TOKEN_ID_MAX + 1),
                            **extra)
    res = loadgen.run_load(url, spec)
    meas = [r for r in res.records if r.in_sample and r.ok]
    client = stats.summarize(res)
    info = {"prompt_tokens": sorted({r.prompt_tokens for r in meas}),
            "completion_tokens": sorted({r.completion_tokens for r in meas}),
            "timestamp_source": res.timestamp_source}
    return client, res.measure_start_s, max(r.end_s for r in meas), info


def _vllm_argv(url: str, c: int, n: int, rnd: int, out: Path, tok: Path, name: str, args: argparse.Namespace
               ) -> list[str]:
    return ["bench", "serve", "--backend", "openai", "--base-url", url, "--endpoint", "/v1/completions",
            "--model", "roofline-tiny", "--tokenizer", str(tok), "--dataset-name", "random",
            "--random-input-len", str(args.input_len), "--random-output-len", str(args.output_len),
            "--random-range-ratio", "0", "--num-prompts", str(n), "--max-concurrency", str(c),
            "--request-rate", "inf", "--num-warmups", str(c), "--ignore-eos",
            "--percentile-metrics", "ttft,tpot,itl,e2el", "--metric-percentiles", "50,99", "--save-result",
            "--save-detailed", "--result-dir", str(out), "--result-filename", name, "--disable-tqdm",
            "--seed", str(100 + rnd), "--ready-check-timeout-sec", "0"]


def run_vllm(url: str, c: int, n: int, rnd: int, out: Path, tok: Path, args: argparse.Namespace,
             sampler: Sampler) -> tuple[dict, float, float, dict]:
    name = f"vllm-c{c}-r{rnd}.json"
    argv = _vllm_argv(url, c, n, rnd, out, tok, name, args)
    if args.vllm_subprocess:
        import subprocess

        nice = ["nice", "-n", str(args.vllm_nice)] if args.vllm_nice else []
        p = subprocess.Popen([*nice, sys.executable, "-m", "pytest_roofline.measure.engine.vllm_cli", *argv],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        sampler.extra.add(p.pid)
        rc = p.wait()
        args._vllm_pid = p.pid
    else:
        rc = vllm_cli.main(argv)
    if rc:
        raise RuntimeError(f"vllm bench serve exited {rc}")
    doc = json.loads((out / name).read_text())
    (pt,) = load_any(out / name)["points"]
    starts = doc["start_times"]
    t0 = min(starts)
    info = {"input_lens": sorted(set(doc["input_lens"])), "output_lens": sorted(set(doc["output_lens"])),
            "total_input_tokens": doc.get("total_input_tokens"), "duration_s": doc.get("duration")}
    return pt["client"], t0, t0 + float(doc["duration"]), info


def vllm_prompt_ids(tok: Path, n: int, rnd: int, args: argparse.Namespace) -> list[list[int]]:
    """The token ids vLLM's random dataset sends (its RandomDataset, the same seed), as the server will see them."""
    from transformers import AutoTokenizer
    from vllm.benchmarks.datasets.datasets import RandomDataset

    tk = AutoTokenizer.from_pretrained(str(tok))
    reqs = RandomDataset(random_seed=100 + rnd).sample(tokenizer=tk, num_requests=n, input_len=args.input_len,
                                                       output_len=args.output_len, range_ratio=0.0)
    return [tk(r.prompt, add_special_tokens=True)["input_ids"] for r in reqs]


def pool(files: list[Path]) -> None:
    """Medians over the rounds of several ``--json-out`` files, and the paired per-round differences (vLLM's run
    minus this tool's in the same round): the tables of benchmarks/RESULTS-peer-agreement.md."""
    rows = [dict(r, src=str(f)) for f in files for r in json.loads(f.read_text())]
    med = statistics.median
    for tool in ("roofline", "roofline-user", "vllm"):
        m = [r for r in rows if r["tool"] == tool]
        if not m:
            continue
        sv = [r["server"] for r in m]
        print(f"{tool}: {len(m)} rounds; output tok/s {med(r['client']['output_tok_s'] for r in m):.0f}; "
              f"client E2E mean {med(r['client']['e2e_mean_ms'] for r in m):.1f} ms; server E2E "
              f"{med(s['e2e_ms'] for s in sv):.1f}, TTFT {med(s['ttft_ms'] for s in sv):.2f}, prefill "
              f"{med(s['prefill_ms'] for s in sv):.2f}, ITL {med(s['itl_ms'] for s in sv):.2f} ms; client - server "
              f"E2E {med(r['client']['e2e_mean_ms'] - r['server']['e2e_ms'] for r in m):.2f} ms; client CPU "
              f"{med(r['cpu_ms_per_request']['client'] for r in m):.2f} ms/request; prompt tokens/request "
              f"{med(s['prompt_tokens'] / s['request_success'] for s in sv):.1f}")
    by: dict[tuple[str, int], dict[str, dict]] = {}
    for r in rows:
        by.setdefault((r["src"], r["round"]), {})[r["tool"]] = r
    pairs = [(v["vllm"], v["roofline"]) for v in by.values() if "vllm" in v and "roofline" in v]
    for label, f in (("client E2E mean", lambda r: r["client"]["e2e_mean_ms"]),
                     ("server E2E mean", lambda r: r["server"]["e2e_ms"]),
                     ("client - server E2E", lambda r: r["client"]["e2e_mean_ms"] - r["server"]["e2e_ms"]),
                     ("client CPU / request", lambda r: r["cpu_ms_per_request"]["client"])):
        d = [f(a) - f(b) for a, b in pairs]
        print(f"paired vllm - roofline, {label}: median {med(d):+.1f}, vllm larger in {sum(x > 0 for x in d)} "
              f"of {len(d)} rounds")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--concurrency", type=int, default=1)
    ap.add_argument("--requests", type=int, default=24)
    ap.add_argument("--input-len", type=int, default=96)
    ap.add_argument("--output-len", type=int, default=32)
    ap.add_argument("--vllm-subprocess", action="store_true")
    ap.add_argument("--vllm-nice", type=int, default=0, help="with --vllm-subprocess: run it under nice -n N")
    ap.add_argument("--roofline-prompts", choices=("own", "vllm"), default="own")
    ap.add_argument("--user-stamps", action="store_true",
                    help="also run this tool with user-space read times instead of kernel receive stamps")
    ap.add_argument("--json-out", type=Path)
    ap.add_argument("--pool", type=Path, nargs="+", metavar="JSON",
                    help="start nothing: pool saved --json-out files (medians and paired per-round differences)")
    args = ap.parse_args()
    if args.pool:
        pool(args.pool)
        return 0
    c, n = args.concurrency, args.requests

    vllm_cli.cpu_build_alias()
    model_dir = tinymodel.make_tiny_model(tinymodel.default_model_dir())
    cfg = EngineConfig(model=str(model_dir), served_model_name="roofline-tiny", device="cpu", dtype="bfloat16",
                       max_model_len=512, enforce_eager=True, kv_cache_space_gib=1, max_num_seqs=8,
                       enable_prefix_caching=False)
    rows: list[dict[str, Any]] = []
    t_start = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp, Engine(cfg, Path(tmp) / "engine.log").start(timeout_s=900) as eng:
        out = Path(tmp)
        pids = eng.pids()
        print(f"engine up in {time.monotonic() - t_start:.0f} s; pids "
              + ", ".join(f"{p} {_comm(p)}" for p in sorted(pids)), flush=True)
        with Sampler(pids) as sampler:
            for rnd in range(args.rounds):
                order: tuple[str, ...] = ("roofline", "vllm") if rnd % 2 == 0 else ("vllm", "roofline")
                if args.user_stamps:  # this tool again, stamping chunks with user-space read times
                    order = (*order, "roofline-user") if rnd % 2 == 0 else ("roofline-user", *order)
                for tool in order:
                    before = scrape_metrics(eng.base_url, model_name="roofline-tiny")
                    if tool.startswith("roofline"):
                        prompts = (vllm_prompt_ids(model_dir, n + c, rnd, args)
                                   if args.roofline_prompts == "vllm" else None)
                        anc = _http1._ANC_SIZE
                        if tool == "roofline-user":
                            _http1._ANC_SIZE = 0  # no ancillary buffer: no kernel stamp, the read's own time
                        try:
                            client, t0, t1, info = run_roofline(eng.base_url, c, n, rnd, args, prompts)
                        finally:
                            _http1._ANC_SIZE = anc
                    else:
                        client, t0, t1, info = run_vllm(eng.base_url, c, n, rnd, out, model_dir, args, sampler)
                    time.sleep(0.05)  # let the sampler pass t1
                    after = scrape_metrics(eng.base_url, model_name="roofline-tiny")
                    cpu = sampler.window(t0, t1)
                    if args.vllm_subprocess and tool == "vllm":
                        cpu["self_cpu_s"] = cpu["pids"].pop(args._vllm_pid, float("nan"))
                    row = {"tool": tool, "round": rnd + 1, "info": info, "server": _hist_means(before, after),
                           "client": {"output_tok_s": client["output_throughput_tok_s"],
                                      "ttft_p50_ms": client["ttft_ms"]["p50"],
                                      "ttft_mean_ms": client["ttft_ms"]["mean"],
                                      "tpot_p50_ms": client["tpot_ms"]["p50"], "e2e_p50_ms": client["e2e_ms"]["p50"],
                                      "e2e_mean_ms": client["e2e_ms"]["mean"]},
                           "cpu_ms_per_request": {"client": round(1000 * cpu["self_cpu_s"] / n, 1),
                                                  **{f"{p} {_comm(p)}": round(1000 * v / n, 1)
                                                     for p, v in cpu["pids"].items()}},
                           "window_wall_s": round(cpu["wall_s"], 2)}
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    print(f"\ndone in {time.monotonic() - t_start:.0f} s\n")
    print(f"{'tool':<9} {'rnd':>3} {'tok/s':>6} {'TTFT50':>7} {'TPOT50':>7} {'E2E50':>6} | server mean ms: "
          f"{'TTFT':>6} {'E2E':>6} {'prefill':>7} {'decode':>6} {'queue':>5} | {'prompt':>6} {'gen':>5} | "
          "CPU ms/request: client, engine processes")
    for r in rows:
        s, cl = r["server"], r["client"]
        eng_cpu = ", ".join(f"{v:g}" for k, v in r["cpu_ms_per_request"].items() if k != "client")
        print(f"{r['tool']:<9} {r['round']:>3} {cl['output_tok_s']:>6.0f} {cl['ttft_p50_ms']:>7.1f} "
              f"{cl['tpot_p50_ms']:>7.2f} {cl['e2e_p50_ms']:>6.0f} | {'':>15} {s.get('ttft_ms', 0):>6.1f} "
              f"{s.get('e2e_ms', 0):>6.0f} {s.get('prefill_ms', 0):>7.1f} {s.get('decode_ms', 0):>6.0f} "
              f"{s.get('queue_ms', 0):>5.1f} | {s.get('prompt_tokens', 0):>6} {s.get('generation_tokens', 0):>5} | "
              f"{r['cpu_ms_per_request']['client']:g}; {eng_cpu}")
    for tool in ("roofline", "roofline-user", "vllm"):
        mine = [r for r in rows if r["tool"] == tool]
        if mine:
            print(f"{tool}: median client E2E p50 {statistics.median(r['client']['e2e_p50_ms'] for r in mine):.0f} ms, "
                  f"server E2E mean {statistics.median(r['server'].get('e2e_ms', 0) for r in mine):.0f} ms")
    if args.json_out:
        args.json_out.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
