"""A throwaway PostgreSQL server for the history store's tests, from Debian's binaries (``apt-get install -y
postgresql`` puts ``initdb`` and ``pg_ctl`` under ``/usr/lib/postgresql/<major>/bin``).

The cluster lives in a temporary directory, listens on 127.0.0.1 at a free port and on a unix socket in that
directory, and requires a password over TCP (scram-sha-256), so the tests connect the way a team's runners
would. PostgreSQL refuses to run as root: as root the server runs as the ``postgres`` user the Debian package
creates (``runuser -u postgres --``).
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

#: what a fresh Debian machine needs for these tests (the lead's scripts/install.sh runs it)
INSTALL_HINT = "apt-get install -y postgresql"


@dataclass(frozen=True)
class PostgresServer:
    host: str
    port: int
    user: str
    password: str
    database: str
    data_dir: Path

    def url(self, password: str | None = None) -> str:
        pw = self.password if password is None else password
        return f"postgresql+psycopg://{self.user}:{pw}@{self.host}:{self.port}/{self.database}"


def find_bin_dir() -> Path | None:
    """The directory holding ``initdb`` and ``pg_ctl``: the newest ``/usr/lib/postgresql/*/bin``, else PATH."""
    def major(p: str) -> int:
        part = Path(p).parent.parent.name
        return int(part) if part.isdigit() else 0

    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=major, reverse=True):
        if (Path(candidate) / "initdb").is_file() and (Path(candidate) / "pg_ctl").is_file():
            return Path(candidate)
    initdb, pg_ctl = shutil.which("initdb"), shutil.which("pg_ctl")
    if initdb and pg_ctl and Path(initdb).parent == Path(pg_ctl).parent:
        return Path(initdb).parent
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def running_postgres(bin_dir: Path) -> Iterator[PostgresServer]:
    """Start a fresh cluster, yield how to reach it, then stop it (``-m immediate``) and delete it."""
    as_root = os.geteuid() == 0
    prefix: list[str] = []
    base = Path(tempfile.mkdtemp(prefix="roofline-pg-"))
    if as_root:
        try:
            pg = pwd.getpwnam("postgres")
        except KeyError as exc:  # Debian's package creates this user; without it there is no one to run as
            raise RuntimeError("running as root, and there is no 'postgres' user to run PostgreSQL as "
                               f"({INSTALL_HINT} creates it)") from exc
        prefix = ["runuser", "-u", "postgres", "--"]
    data, sock, log = base / "data", base / "sock", base / "server.log"
    sock.mkdir()
    password = secrets.token_hex(12)
    pwfile = base / "pwfile"
    pwfile.write_text(password + "\n", encoding="utf-8")
    if as_root:
        for p in (base, sock, pwfile):
            os.chown(p, pg.pw_uid, pg.pw_gid)
    port = _free_port()
    user = "roofline"
    started = False
    try:
        subprocess.run([*prefix, str(bin_dir / "initdb"), "-D", str(data), "-U", user, "-E", "UTF8",
                        "--no-sync", "--auth-local=trust", "--auth-host=scram-sha-256", f"--pwfile={pwfile}"],
                       check=True, capture_output=True, text=True, timeout=120)
        opts = (f"-p {port} -k {sock} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off "
                "-c full_page_writes=off")
        out = subprocess.run([*prefix, str(bin_dir / "pg_ctl"), "-D", str(data), "-o", opts, "-l", str(log),
                              "-w", "-t", "60", "start"], capture_output=True, text=True, timeout=90)
        if out.returncode != 0:
            tail = log.read_text(encoding="utf-8", errors="replace")[-2000:] if log.exists() else ""
            raise RuntimeError(f"pg_ctl start failed ({out.returncode}): {out.stdout}{out.stderr}\n{tail}")
        started = True
        yield PostgresServer("127.0.0.1", port, user, password, "postgres", data)
    finally:
        if started:
            subprocess.run([*prefix, str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
                           capture_output=True, timeout=60)
        shutil.rmtree(base, ignore_errors=True)
