"""Process supervision for engine subprocesses: the process table, the parent-death signal, the watchdog,
and the process-wide registry with its ``atexit`` and SIGTERM hooks.

Three layers make sure that no engine outlives the process that started it (see the package docstring):
``Engine.stop()``; the hooks installed here (``atexit``, SIGTERM -> stop every registered engine); and, for
a parent that dies without running Python code, :class:`Watchdog` plus ``PR_SET_PDEATHSIG``.

Linux facts used: ``/proc/<pid>/stat`` fields 3-5 are state, ppid and pgrp, after a command name in
parentheses that may itself contain ``)`` (proc(5), "/proc/pid/stat"); ``prctl(PR_SET_PDEATHSIG, sig)``
(``PR_SET_PDEATHSIG`` = 1) delivers ``sig`` when the *thread* that forked the child exits, and a parent
that died before the call leaves the child re-parented (prctl(2)).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import ctypes.util
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any, Protocol

__all__ = [
    "free_port", "process_group_members", "descendants", "pid_alive", "signal_quietly", "make_preexec",
    "Watchdog", "register", "unregister", "install_hooks", "stop_all", "describe_returncode", "start_ticks",
]


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


def descendants(root: int) -> set[int]:
    """Every process below ``root`` in the parent tree (children, grandchildren, ...)."""
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


def start_ticks(pid: int) -> int | None:
    """When ``pid`` started, in clock ticks since boot (``/proc/<pid>/stat`` field 22, ``starttime``, proc(5));
    None where it cannot be read. Tells a process apart from a later one that reused its pid."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            rest = f.read().decode(errors="replace").rsplit(")", 1)[-1].split()
        return int(rest[19])  # fields after "(comm)" start at field 3: field 22 is rest[19]
    except (OSError, IndexError, ValueError):
        return None


def pid_alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie counts as gone)."""
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


def signal_quietly(fn: Callable[[int, int], Any], target: int, sig: int) -> None:
    """``fn(target, sig)`` (``os.kill`` / ``os.killpg``), ignoring a target that is gone or not ours."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        fn(target, sig)


_PR_SET_PDEATHSIG = 1
try:
    _libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    _prctl = _libc.prctl if sys.platform.startswith("linux") else None
except (OSError, AttributeError):  # pragma: no cover - non-Linux
    _prctl = None


def make_preexec(pdeathsig: int | None, parent_pid: int) -> Callable[[], None]:
    """A ``preexec_fn`` that asks for ``pdeathsig`` when the parent dies (no-op without prctl)."""
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


class Watchdog:
    """A small process in its own session that ends process group ``pgid`` if this process dies.

    It holds the read end of a pipe whose write end only this process holds; EOF without the "all clear"
    byte means this process is gone."""

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


class _Stoppable(Protocol):
    def stop(self, timeout_s: float | None = None) -> Any: ...


_LIVE: set[_Stoppable] = set()
_LIVE_LOCK = threading.Lock()
_ATEXIT_INSTALLED = False
_SIGTERM_INSTALLED = False


def register(engine: _Stoppable) -> None:
    """Stop ``engine`` at exit or on SIGTERM until :func:`unregister` is called."""
    with _LIVE_LOCK:
        _LIVE.add(engine)


def unregister(engine: _Stoppable) -> None:
    with _LIVE_LOCK:
        _LIVE.discard(engine)


def stop_all(timeout_s: float = 10.0) -> None:
    """Stop every registered engine (errors are swallowed: this runs at exit)."""
    with _LIVE_LOCK:
        engines = list(_LIVE)
    for e in engines:
        with contextlib.suppress(Exception):
            e.stop(timeout_s=timeout_s)


def install_hooks() -> None:
    """Once per process: ``atexit`` -> :func:`stop_all`; SIGTERM -> :func:`stop_all`, then the previous
    handler, or ``KeyboardInterrupt`` so that pytest's interrupt handling (teardown, summary) still runs."""
    global _ATEXIT_INSTALLED, _SIGTERM_INSTALLED
    if not _ATEXIT_INSTALLED:
        _ATEXIT_INSTALLED = True
        atexit.register(stop_all)
    if _SIGTERM_INSTALLED or threading.current_thread() is not threading.main_thread():
        return  # signal handlers can only be set from the main thread
    _SIGTERM_INSTALLED = True
    prev = signal.getsignal(signal.SIGTERM)
    if prev is signal.SIG_IGN:
        return  # someone decided this process ignores SIGTERM: respect it

    def _on_sigterm(signum, frame):
        stop_all(timeout_s=10.0)
        if callable(prev):
            return prev(signum, frame)
        # Default disposition would kill us without teardown; hand it to pytest (or any caller)
        # as an interrupt instead, so its KeyboardInterrupt handling runs.
        raise KeyboardInterrupt("SIGTERM")

    signal.signal(signal.SIGTERM, _on_sigterm)


def describe_returncode(rc: int) -> str:
    """``Popen.returncode`` in words (``"killed by SIGKILL"``, ``"exit code 3"``)."""
    if rc < 0:
        try:
            return f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exit code {rc}"


# --------------------------------------------------------------------------- children that end with their parent


def exit_with_parent(parent_pid: int | None = None, interval_s: float = 0.5) -> None:
    """Called first thing in a child of the run (the /metrics scraper, a load-generator worker): end this process
    as soon as its parent is gone, so a pytest killed outright (SIGKILL: no atexit, no signal handler) leaves no
    child polling or loading the server. A ``multiprocessing`` child waits on its parent's sentinel (ready when
    the parent exits); another child polls ``os.getppid()`` against ``parent_pid`` every ``interval_s``."""
    import multiprocessing
    import multiprocessing.connection
    import time

    parent = multiprocessing.parent_process()
    if parent is not None and parent.sentinel is not None:
        sentinel = parent.sentinel

        def wait_for_parent() -> None:
            multiprocessing.connection.wait([sentinel])
            os._exit(1)

        threading.Thread(target=wait_for_parent, name="roofline-exit-with-parent", daemon=True).start()
        return
    pid = parent_pid if parent_pid is not None else os.getppid()
    if os.getppid() != pid:  # gone already (re-parented before this line ran)
        os._exit(1)

    def poll_parent() -> None:
        while os.getppid() == pid:
            time.sleep(interval_s)
        os._exit(1)

    threading.Thread(target=poll_parent, name="roofline-exit-with-parent", daemon=True).start()
