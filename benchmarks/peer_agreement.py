"""Do this tool's headline figures agree with `vllm bench serve`'s (and GuideLLM's) on the same engine?

One CPU engine (vLLM's CPU build serving the project's tiny model, prefix caching off) and alternating rounds of
three clients at the same closed-loop points (C = 1, 4, 8; the same request count, 96-token prompts, 32 output
tokens, EOS ignored):

* this tool's load generator (``measure.loadgen.run_load`` → ``measure.stats.summarize``, the whole-run figures a
  verdict is scored on);
* ``vllm bench serve`` (run in this process through ``pytest_roofline.measure.engine.vllm_cli``, random dataset,
  ``--save-result --save-detailed``), read back with the project's own reader;
* GuideLLM (its CLI in its own venv, ``--guidellm PATH``; concurrent profile), read back with the project's reader.

For each figure and point it prints every tool's mean ± sd over the rounds, the difference of this tool's mean
from ``vllm bench serve``'s (and GuideLLM's from vLLM's), the pooled standard error √(sd₁²/n₁ + sd₂²/n₂), and the
verdict ``agree`` when |difference| ≤ 2 × the pooled SE (``DIFFERS`` otherwise; ``—`` where a tool has no such
figure). Then the bursts: the share of requests in bursts (``measure.stats.bursts``) in this tool's records and
in ``vllm bench serve``'s per-chunk data (``--save-detailed`` itls).

Run it alone on the machine's engine lock and keep it short (the machine has 2 shared cores):

    flock /tmp/roofline-engine.lock python benchmarks/peer_agreement.py --rounds 3 \\
        --guidellm /path/to/guidellm-venv/bin/guidellm

GuideLLM 0.8.1 is installed into its own venv with ``pip install --no-deps guidellm==0.8.1`` plus
``more-itertools``, with a ``.pth`` file naming this project's venv's site-packages (its torch, transformers,
httpx): the way ``tests/data/peers/README.md`` recorded it. Without ``--guidellm`` its columns are left out.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_roofline.measure import loadgen, stats  # noqa: E402
from pytest_roofline.measure.engine import Engine, EngineConfig, vllm_cli  # noqa: E402
from pytest_roofline.measure.engine import tiny_model as tinymodel  # noqa: E402
from pytest_roofline.measure.results.peers import load_any  # noqa: E402
from pytest_roofline.measure.stats.bursts import bursts_from_gaps  # noqa: E402

#: (label, dot-path into a client object)
FIGURES = (("output tok/s", "output_throughput_tok_s"), ("request/s", "request_throughput_req_s"),
           ("TTFT p50 ms", "ttft_ms.p50"), ("TTFT p99 ms", "ttft_ms.p99"), ("TPOT p50 ms", "tpot_ms.p50"),
           ("TPOT mean ms", "tpot_ms.mean"), ("ITL p50 ms", "itl_ms.p50"), ("E2E p50 ms", "e2e_ms.p50"))
TOOLS = ("roofline", "vllm", "guidellm")


def _get(client: dict[str, Any], path: str) -> float | None:
    v: Any = client
    for part in path.split("."):
        v = v.get(part) if isinstance(v, dict) else None
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def run_roofline(url: str, c: int, n: int, rnd: int, args: argparse.Namespace) -> tuple[dict, float | None]:
    spec = loadgen.LoadSpec(model="roofline-tiny", mode="closed", concurrency=c, num_requests=n, warmup_requests=c,
                            input_len=args.input_len, output_len=args.output_len, seed=100 + rnd,
                            point_id=f"agree-c{c}-r{rnd}",
                            token_id_range=(tinymodel.PROMPT_TOKEN_ID_MIN, tinymodel.PROMPT_TOKEN_ID_MAX + 1))
    client = stats.summarize(loadgen.run_load(url, spec))
    return client, client["bursts"]["share"]


def run_vllm(url: str, c: int, n: int, rnd: int, out: Path, tok: Path, args: argparse.Namespace
             ) -> tuple[dict, float | None]:
    name = f"vllm-c{c}-r{rnd}.json"
    rc = vllm_cli.main([
        "bench", "serve", "--backend", "openai", "--base-url", url, "--endpoint", "/v1/completions",
        "--model", "roofline-tiny", "--tokenizer", str(tok), "--dataset-name", "random",
        "--random-input-len", str(args.input_len), "--random-output-len", str(args.output_len),
        "--random-range-ratio", "0", "--num-prompts", str(n), "--max-concurrency", str(c), "--request-rate", "inf",
        "--num-warmups", str(c), "--ignore-eos", "--percentile-metrics", "ttft,tpot,itl,e2el",
        "--metric-percentiles", "50,99", "--save-result", "--save-detailed", "--result-dir", str(out),
        "--result-filename", name, "--disable-tqdm", "--seed", str(100 + rnd), "--ready-check-timeout-sec", "0"])
    if rc:
        raise RuntimeError(f"vllm bench serve exited {rc}")
    doc = json.loads((out / name).read_text())
    (pt,) = load_any(out / name)["points"]
    share = None
    if isinstance(doc.get("itls"), list) and isinstance(doc.get("output_lens"), list):
        replies = [(g, int(n_out)) for g, n_out, err in zip(doc["itls"], doc["output_lens"], doc.get("errors") or [])
                   if not err and isinstance(g, list)]
        share = bursts_from_gaps(replies)["share"]
    return pt["client"], share


def run_guidellm(exe: str, url: str, cs: list[int], n: int, rnd: int, out: Path, tok: Path,
                 args: argparse.Namespace) -> dict[int, dict]:
    path = out / f"guidellm-r{rnd}.json"
    cmd = [exe, "run", "--backend", f"kind=openai_http,target={url},model=roofline-tiny,"
                                    "request_format=/v1/completions",
           "--profile", "kind=concurrent", "--override", "profile.streams", ",".join(str(c) for c in cs),
           "--data", f"kind=synthetic_text,prompt_tokens={args.input_len},output_tokens={args.output_len}",
           "--tokenizer", f"kind=huggingface_auto,model={tok}",
           "--constraint", f"kind=max_requests,count={n}", "--output", f"kind=json,path={path}",
           "--disable-console-interactive", "--disable-progress"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        raise RuntimeError(f"guidellm exited {r.returncode}: {r.stderr[-2000:]}")
    return {int(p["concurrency"]): p["client"] for p in load_any(path)["points"]}


def _ms(values: list[float]) -> tuple[float, float, int]:
    x = np.asarray(values, dtype=float)
    return float(x.mean()), float(x.std(ddof=1)) if x.size > 1 else math.nan, int(x.size)


def _fmt(v: float) -> str:
    return "—" if v is None or not math.isfinite(v) else (f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--concurrency", default="1,4,8")
    ap.add_argument("--requests", type=int, default=32, help="measured requests per point, every tool")
    ap.add_argument("--input-len", type=int, default=96)
    ap.add_argument("--output-len", type=int, default=32)
    ap.add_argument("--guidellm", help="the guidellm executable of its own venv (GuideLLM 0.8.1)")
    args = ap.parse_args()
    cs = [int(c) for c in args.concurrency.split(",")]

    vllm_cli.cpu_build_alias()
    model_dir = tinymodel.make_tiny_model(tinymodel.default_model_dir())
    cfg = EngineConfig(model=str(model_dir), served_model_name="roofline-tiny", device="cpu", dtype="bfloat16",
                       max_model_len=512, enforce_eager=True, kv_cache_space_gib=1, max_num_seqs=8,
                       enable_prefix_caching=False)
    vals: dict[tuple[str, int, str], list[float]] = {}
    shares: dict[tuple[str, int], list[float]] = {}

    def put(tool: str, c: int, client: dict, share: float | None) -> None:
        for _, key in FIGURES:
            v = _get(client, key)
            if v is not None:
                vals.setdefault((tool, c, key), []).append(v)
        if share is not None:
            shares.setdefault((tool, c), []).append(share)

    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp, Engine(cfg, Path(tmp) / "engine.log").start(timeout_s=900) as eng:
        out = Path(tmp)
        print(f"engine up in {time.monotonic() - t0:.0f} s; {args.rounds} rounds × C={cs}, {args.requests} requests "
              f"per point, {args.input_len} in / {args.output_len} out, prefix caching off", flush=True)
        for rnd in range(args.rounds):
            for c in cs:
                put("roofline", c, *run_roofline(eng.base_url, c, args.requests, rnd, args))
                put("vllm", c, *run_vllm(eng.base_url, c, args.requests, rnd, out, model_dir, args))
            if args.guidellm:
                try:
                    got = run_guidellm(args.guidellm, eng.base_url, cs, args.requests, rnd, out, model_dir, args)
                except Exception as exc:  # noqa: BLE001 - a peer that fails leaves its column empty, said so
                    print(f"  GuideLLM round {rnd + 1} failed: {str(exc)[-600:]}", flush=True)
                    got = {}
                for c, client in got.items():
                    put("guidellm", c, client, None)
            print(f"  round {rnd + 1} done at +{time.monotonic() - t0:.0f} s: "
                  + ", ".join(f"C={c} {vals[('roofline', c, 'output_throughput_tok_s')][-1]:.0f} / "
                              f"{vals[('vllm', c, 'output_throughput_tok_s')][-1]:.0f} tok/s" for c in cs),
                  flush=True)
    tools = [t for t in TOOLS if t != "guidellm" or args.guidellm]
    print(f"\n{args.rounds} rounds in {time.monotonic() - t0:.0f} s. mean ± sd over rounds; Δ = mean − vllm's; "
          "verdict: agree when |Δ| ≤ 2 × pooled SE\n")
    head = f"{'figure':<13} {'C':>2} " + " ".join(f"{t:>17}" for t in tools) + "".join(
        f" {'Δ ' + t:>12} {'2SE':>8} {'verdict':>8}" for t in tools if t != "vllm")
    print(head)
    print("-" * len(head))
    tally: dict[str, list[int]] = {}
    for label, key in FIGURES:
        for c in cs:
            cells, tail = [], []
            ref = vals.get(("vllm", c, key))
            for t in tools:
                v = vals.get((t, c, key))
                cells.append(f"{_fmt(_ms(v)[0])} ± {_fmt(_ms(v)[1])}".rjust(17) if v else f"{'—':>17}")
            for t in tools:
                if t == "vllm":
                    continue
                v = vals.get((t, c, key))
                if not v or not ref:
                    tail.append(f" {'—':>12} {'—':>8} {'—':>8}")
                    continue
                (m1, s1, n1), (m2, s2, n2) = _ms(v), _ms(ref)
                se = math.sqrt((s1 ** 2 / n1 if n1 > 1 else math.inf) + (s2 ** 2 / n2 if n2 > 1 else math.inf))
                d = m1 - m2
                ok = abs(d) <= 2 * se
                tally.setdefault(t, [0, 0])[0 if ok else 1] += 1
                tail.append(f" {_fmt(d):>12} {_fmt(2 * se):>8} {'agree' if ok else 'DIFFERS':>8}")
            print(f"{label:<13} {c:>2} " + " ".join(cells) + "".join(tail))
    for t, (ok, bad) in tally.items():
        print(f"\n{t} vs vllm bench serve: {ok} of {ok + bad} figure×point cells agree within 2 pooled SE")
    print("\nbursts (share of requests whose tokens arrived at < 50% as many distinct times; "
          "measure.stats.bursts):")
    for c in cs:
        mine, theirs = shares.get(("roofline", c), []), shares.get(("vllm", c), [])
        print(f"  C={c}: this tool {', '.join(f'{s:.0%}' for s in mine) or '—'}; vllm bench serve's per-chunk data "
              f"{', '.join(f'{s:.0%}' for s in theirs) or '—'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
