""":class:`Engine`: a vLLM server subprocess we start, wait for, ask for its self-report, and tear down."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import httpx

from pytest_roofline import redact
from pytest_roofline.errors import EngineDied, EngineError, EngineStartError
from pytest_roofline.measure.engine import _http, _process
from pytest_roofline.measure.engine._config import EngineConfig, redact_env
from pytest_roofline.measure.engine._report import (
    build_report,
    engine_version_from_metadata,
    get_metrics,
    get_version,
    missing_workers_sentence,
    workers_report,
)
from pytest_roofline.measure.engine._served import model_ids, pick_served_model
from pytest_roofline.measure.engine.startup_log import parse_startup_log, startup_failure_reason, workers_seen

__all__ = ["Engine"]


def _process_name(pid: int) -> str:
    """``/proc/<pid>/comm`` ("" when unreadable: gone, or no /proc)."""
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return ""


#: how the lines the plugin writes at the top of an engine log start (every other line is vLLM's)
LAUNCH_HEADER_PREFIX = "[pytest-roofline] "


#: the launch header's lines (an engine's log tail leaves them out: the results file's setup.engine has both)
_HEADER_LINES = tuple(LAUNCH_HEADER_PREFIX + x for x in ("command: ", "environment set by the plugin",
                                                         "to start this server by hand: "))


def launch_header(argv: list[str], env: dict[str, str]) -> str:
    """The lines written at the top of the engine log before vLLM's own: the exact command, shell-quoted (paste
    it to start the same server by hand, e.g. for a peer's ``vllm bench serve``), and the environment variables
    the plugin set on top of its own environment, each as ``NAME=value``; secrets redacted
    (:mod:`pytest_roofline.redact`)."""
    import shlex

    cmd = shlex.join(str(a) for a in redact.redact_argv(argv))
    pairs = " ".join(f"{k}={shlex.quote(str(v))}" for k, v in sorted(redact_env(env).items()))
    return (f"{LAUNCH_HEADER_PREFIX}command: {cmd}\n"
            f"{LAUNCH_HEADER_PREFIX}environment set by the plugin (on top of its own): {pairs or '(none)'}\n"
            f"{LAUNCH_HEADER_PREFIX}to start this server by hand: env {pairs + ' ' if pairs else ''}{cmd}\n")


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
        self._log_fh: IO[bytes] | None = None
        self._watchdog: _process.Watchdog | None = None
        self._known_pids: set[int] = set()
        self._pid_names: dict[int, str] = {}  # the processes' names (/proc/<pid>/comm) as they started
        #: the engine process's start time (clock ticks since boot), read once it runs: a worker the log names is
        #: one of its own only if it started later, and the engine may be gone (and reaped) when that is asked
        self._start_ticks: int | None = None
        self._state = "new"  # new | starting | ready | stopping | stopped
        self._lock = threading.RLock()
        self._served_model_name: str | None = config.served_model_name
        self.max_model_len: int | None = config.max_model_len
        self.startup_s: float | None = None
        self.returncode: int | None = None
        self.argv: list[str] | None = None
        #: local processes of the engine still alive after the last teardown (SIGTERM, grace, SIGKILL): pids
        self.survivors: list[int] = []
        #: seconds into ``start()`` when an interrupt (Ctrl-C, SIGTERM) stopped it, and how long the engine's stop
        #: took then (None: not interrupted); the stop comes first, so the caller's own clock reads their sum
        self.interrupted_after_s: float | None = None
        self.interrupt_stop_s: float | None = None

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
        return self.pid  # process_group=0: the child leads its own group

    @property
    def _other_interpreter(self) -> bool:
        return self.config.python is not None or self.config.command is not None

    @property
    def api_key(self) -> str | None:
        """The key the server requires when its arguments set one (``engine.args.api_key``); never printed."""
        return self.config.api_key()

    def auth_headers(self) -> dict[str, str]:
        key = self.api_key
        return {"Authorization": f"Bearer {key}"} if key else {}

    # -- lifecycle
    def start(self, timeout_s: float = 600.0, on_wait: Callable[[str], None] | None = None) -> Engine:
        """Launch and wait until /health and /v1/models answer; raises EngineStartError. ``on_wait`` is called
        with the endpoint still awaited (``/health``, ``/v1/models``) on every poll while it waits (4 Hz)."""
        with self._lock:
            if self._state != "new":
                raise EngineError(f"engine already {self._state}")
            self._state = "starting"
        _process.install_hooks()
        began = time.monotonic()
        deadline = began + timeout_s
        attempts = 1 if self._requested_port is not None else 3
        for attempt in range(attempts):
            t0 = time.monotonic()
            try:
                self._spawn(append=attempt > 0)
                self._wait_ready(deadline, timeout_s, on_wait)
            except EngineStartError as e:
                retry = ("address already in use" in e.log_tail.lower()
                         and attempt + 1 < attempts and time.monotonic() < deadline - 10)
                self._teardown(self.stop_timeout_s)
                if retry:
                    self._state = "starting"
                    continue
                self._state = "stopped"
                raise
            except BaseException as e:
                stop_t0 = time.monotonic()
                if not isinstance(e, Exception):  # Ctrl-C, SIGTERM: when it came, before the stop's wait
                    self.interrupted_after_s = stop_t0 - began
                try:
                    self._teardown(self.stop_timeout_s)
                finally:
                    if not isinstance(e, Exception):
                        self.interrupt_stop_s = time.monotonic() - stop_t0
                self._state = "stopped"
                raise
            self.startup_s = time.monotonic() - t0
            self._remember_descendants()  # every worker is up now: remember it even if it later leaves the group
            self._state = "ready"
            return self
        raise AssertionError("unreachable")  # pragma: no cover

    def _spawn(self, *, append: bool) -> None:
        self.port = self._requested_port or _process.free_port(self.config.host)
        self.argv = self.config.argv(self.python_executable, self.port)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log_fh = open(self.log_path, "ab" if append else "wb")
        self._log_fh.write(launch_header(self.argv, self.config.env_overrides()).encode("utf-8"))
        self._log_fh.flush()  # before the child's first byte: it writes through its own descriptor
        main_thread = threading.current_thread() is threading.main_thread()
        try:
            self._proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=self._log_fh,
                stderr=subprocess.STDOUT,
                env=self.config.launch_env(),
                # its own process group (pgid == pid) in this process's session: why, in the package docstring
                process_group=0,
                close_fds=True,
                preexec_fn=_process.make_preexec(signal.SIGTERM if main_thread else None, os.getpid()),
            )
        except OSError as e:
            self._log_fh.close()
            self._log_fh = None
            raise EngineStartError(f"could not run {self.argv[0]!r}: {e}") from e
        self._start_ticks = _process.start_ticks(self._proc.pid)
        _process.register(self)
        self._watchdog = None
        if self.use_watchdog:
            with contextlib.suppress(OSError):  # without it the other layers still apply
                self._watchdog = _process.Watchdog(self._proc.pid, self.watchdog_grace_s)

    def _wait_ready(self, deadline: float, timeout_s: float,
                    on_wait: Callable[[str], None] | None = None) -> None:
        assert self._proc is not None
        stage = "/health"
        with httpx.Client(timeout=5.0) as client:
            while True:
                rc = self._proc.poll()
                if rc is not None:
                    why = self._startup_failure_reason()
                    raise EngineStartError(
                        f"vLLM exited during startup ({_process.describe_returncode(rc)})"
                        f"{f': {why}' if why else ''}; {self._workers_note()}log: {self.log_path}",
                        log_tail=self.log_tail(60), returncode=rc)
                if time.monotonic() > deadline:
                    raise EngineStartError(
                        f"vLLM not ready after {timeout_s:.0f} s (waiting for {stage}); {self._workers_note()}"
                        f"log: {self.log_path}", log_tail=self.log_tail(60))
                with contextlib.suppress(httpx.HTTPError, ValueError, KeyError, TypeError):
                    if stage == "/health":
                        if _http.get(client, self.base_url + "/health", timeout_s=5).status_code == 200:
                            stage = "/v1/models"
                    if stage == "/v1/models":
                        r = _http.get(client, self.base_url + "/v1/models", headers=self.auth_headers(), timeout_s=5)
                        if r.status_code == 200:
                            data = r.json()["data"]
                            if data:
                                self._on_models(data)
                                return
                if on_wait is not None:
                    on_wait(stage)
                self._remember_descendants()  # a worker that leaves the group is still ours if the start fails
                time.sleep(0.25)

    def workers(self) -> dict[str, Any]:
        """``engine_report.workers``: the workers this configuration starts (tensor x pipeline x data parallel),
        the ones the log has shown so far (rank, pid, ip; ``startup_log.workers_seen``) and the ranks still missing."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            text = ""
        c = self.config
        seen = workers_seen(text, tensor_parallel_size=c.tensor_parallel_size,
                            pipeline_parallel_size=c.pipeline_parallel_size)
        return workers_report(c.expected_workers(), seen, c.distributed_executor_backend)

    def _workers_note(self) -> str:
        """``"<which ranks never appeared>; "`` for a startup error of a multi-worker engine, else ``""``."""
        if self.config.world_size() <= 1:
            return ""
        sentence = missing_workers_sentence(self.workers())
        return f"{sentence}; " if sentence else "every worker appeared in the log; "

    def _startup_failure_reason(self) -> str | None:
        """What the startup log says made vLLM fail (no room for the KV cache); None if it does not say."""
        try:
            return startup_failure_reason(self.log_path.read_text(errors="replace"))
        except OSError:
            return None

    def _on_models(self, data: list[dict]) -> None:
        want = self.config.served_model_name
        served = pick_served_model(data, want)
        if served is None:
            raise EngineStartError(f"server serves {model_ids(data)}, not {want!r}", log_tail=self.log_tail(20))
        self._served_model_name = served.name
        if served.max_model_len is not None:
            self.max_model_len = served.max_model_len

    def is_alive(self) -> bool:
        """True while the vLLM main process runs."""
        return self._proc is not None and self._proc.poll() is None

    def check_alive(self) -> None:
        """Raise EngineDied (with the log tail) if the engine is gone."""
        if self._proc is None:
            raise EngineError("engine was never started")
        rc = self._proc.poll()
        if rc is None:
            self._remember_descendants()  # before each point: the processes (and their titles) a death would name
        if rc is not None:
            raise EngineDied(f"vLLM engine (pid {self._proc.pid}) is gone: {_process.describe_returncode(rc)}; "
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
        lines = [x for x in lines if not x.startswith(_HEADER_LINES)]  # the launch is in launch_info, not a tail
        return redact.redact_text("\n".join(lines[-n_lines:]))  # the log prints the engine's arguments

    def pids(self) -> set[int]:
        """Live pids of the engine: its process group plus descendants that left it."""
        if self._proc is None:
            return set()
        self._remember_descendants()
        live = _process.process_group_members(self._proc.pid)
        live |= {p for p in self._known_pids if _process.pid_alive(p)}
        return live

    def _remember_descendants(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._known_pids |= _process.descendants(self._proc.pid)
            for pid in self._known_pids:  # the latest name: vLLM retitles a process (VLLM::EngineCore) once it runs
                self._pid_names[pid] = _process_name(pid) or self._pid_names.get(pid, "")

    def death(self, wait_s: float = 3.0) -> str | None:
        """After a point failed: one line saying that the engine's process died — the server process (its exit
        code or signal) or one of the processes it had started (vLLM's EngineCore, a worker) — with the log's
        path; None while the server and every ``VLLM::``-titled process it had started still run. Waits up to
        ``wait_s`` for the server to exit after the loss of its EngineCore (vLLM shuts the API server down then)."""
        if self._proc is None:
            return None
        lost = [p for p in self._known_pids if p != self._proc.pid and not _process.pid_alive(p)]
        # named: vLLM's own processes only (it titles them VLLM::EngineCore, VLLM::Worker...); a helper that ran at
        # the start and ended is no death, but any loss waits a moment for the server to follow
        gone = sorted(p for p in lost if self._pid_names.get(p, "").startswith("VLLM"))
        deadline = time.monotonic() + (wait_s if lost else 0.0)
        while self._proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        rc = self._proc.poll()
        if rc is None and not gone:
            return None
        children = ", ".join(f"pid {p}{f' ({self._pid_names[p]})' if self._pid_names.get(p) else ''}"
                             for p in gone[:3]) + (f" and {len(gone) - 3} more" if len(gone) > 3 else "")
        if rc is not None:
            what = f"the vLLM server process (pid {self._proc.pid}) exited: {_process.describe_returncode(rc)}"
            if gone:
                what += f"; before it, {children} had gone"
        else:
            what = f"{children} of the vLLM server (pid {self._proc.pid}) died; the server process still runs"
        return f"the engine died: {what}; log: {self.log_path}"

    def _remember_logged_workers(self) -> None:
        """Local workers the log names (rank, pid) that are still alive and started after this engine did: a
        worker that left the process group and lost its parent before it was seen in the process tree."""
        if self._proc is None or self.config.world_size() <= 1:
            return
        t0 = self._start_ticks
        if t0 is None:
            return
        for w in self.workers()["seen"]:
            pid = w.get("pid")
            if pid and not w.get("ip") and pid != os.getpid():
                t = _process.start_ticks(pid)
                # a process older than the engine is not one of its workers (its pid was in the log of an
                # earlier start); the pid of a worker that already exited could only have been reused since
                # by a process started after it, which this does not tell apart
                if t is not None and t >= t0:
                    self._known_pids.add(pid)

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
        return (not _process.process_group_members(pgid)
                and not any(_process.pid_alive(p) for p in self._known_pids))

    def _kill_hard(self, pgid: int) -> None:
        _process.signal_quietly(os.killpg, pgid, signal.SIGKILL)
        for p in list(self._known_pids):
            _process.signal_quietly(os.kill, p, signal.SIGKILL)

    def _teardown(self, timeout_s: float) -> None:
        proc = self._proc
        if proc is None:
            return
        pgid = proc.pid
        all_clear = False
        try:
            self._remember_descendants()
            self._remember_logged_workers()
            self._known_pids.discard(os.getpid())
            if proc.poll() is not None:
                # The main process is already gone (crashed or killed): what is left are orphans
                # with nobody to coordinate a clean shutdown, so give them a short grace only.
                timeout_s = min(timeout_s, self.orphan_grace_s)
            _process.signal_quietly(os.killpg, pgid, signal.SIGTERM)
            for p in self._known_pids:
                _process.signal_quietly(os.kill, p, signal.SIGTERM)
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
            self.survivors = sorted(_process.process_group_members(pgid)
                                    | {p for p in self._known_pids if _process.pid_alive(p)})
            if self.survivors:
                warnings.warn(f"vLLM engine (pid {pgid}): {len(self.survivors)} process(es) survived SIGKILL: "
                              f"{self.survivors} (uninterruptible, or not ours to signal); log: {self.log_path}",
                              RuntimeWarning, stacklevel=3)
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
            _process.unregister(self)

    def __enter__(self) -> Engine:
        if self._state == "new":
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- self-report
    def report(self) -> dict[str, Any]:
        """``engine_report`` (docs/results-schema.md): the startup log and cache_config_info, cross-checked."""
        try:
            log = parse_startup_log(self.log_path.read_text(errors="replace"))
            log_reason = None
        except OSError as e:
            log, log_reason = None, f"log not readable ({e})"
        version: str | None = None
        vsrc: str | None = None
        metrics: dict | None = None
        mreason: str | None = "engine not running"
        if self.is_alive():
            with httpx.Client() as client:
                version = get_version(client, self.base_url, self.auth_headers())
                vsrc = "/version" if version else None
                metrics, mreason = get_metrics(client, self.base_url, self.api_key, self.served_model_name)
        if version is None and log and log.get("version"):
            version, vsrc = log["version"], "log"
        if version is None and not self._other_interpreter:
            v, dist = engine_version_from_metadata()
            if v:
                version, vsrc = v, f"importlib.metadata ({dist})"
        rep = build_report(log=log, log_reason=log_reason, metrics=metrics, metrics_reason=mreason,
                           version=version, version_source=vsrc, max_model_len=self.max_model_len,
                           configured_block_size=self.config.block_size, workers=self.workers())
        rep["startup_s"] = self.startup_s
        rep["mode"] = "engine"
        return rep

    def launch_info(self) -> dict[str, Any]:
        """``setup.engine`` for the results file (secret-looking arguments and env values redacted)."""
        # engine.python / engine.command run another vLLM than this environment's: its version comes from the
        # server (/version, engine_report), not from this interpreter's metadata
        v = None if self._other_interpreter else engine_version_from_metadata()[0]
        if v is None and self.is_alive():
            with httpx.Client() as client:
                v = get_version(client, self.base_url, self.auth_headers())
        return {"name": "vllm", "version": v, "argv": redact.redact_argv(self.argv or []),
                "env": redact_env(self.config.env_overrides()), "log_file": str(self.log_path),
                "config_key": self.config.key(), "startup_s": self.startup_s}
