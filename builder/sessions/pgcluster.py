"""A throwaway PostgreSQL server for tests and benchmarks: ``initdb`` + ``pg_ctl`` in a temp dir.

The sessions reader must be tested against a real server, not a mock, and CI machines have
the server binaries but no running server. PostgreSQL refuses to run as root, so when we are
root the cluster directory is handed to an unprivileged user (``postgres`` if it exists, else
``nobody``) and every server command runs through ``runuser``. The server listens on
127.0.0.1 on a free port, with its Unix socket inside the temp dir, trusts local connections,
and runs with ``fsync=off``: it is thrown away afterwards, so durability buys nothing.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from builder.errors import EnvironmentProblem

SERVER_BINARIES = ("initdb", "pg_ctl", "postgres")
_FALLBACK_USERS = ("postgres", "nobody")


class ClusterError(EnvironmentProblem, RuntimeError):
    """The throwaway server could not be created or started (with its log attached)."""


def find_bindir() -> Path | None:
    """The directory holding ``initdb``/``pg_ctl``/``postgres``, or None when not installed."""
    on_path = [shutil.which(name) for name in SERVER_BINARIES]
    if all(on_path):
        return Path(on_path[1]).resolve().parent  # type: ignore[arg-type]
    candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=_version_key)
    for bindir in reversed(candidates):
        if all((bindir / name).is_file() for name in SERVER_BINARIES):
            return bindir
    return None


def _version_key(path: Path) -> tuple[int, ...]:
    digits = path.parent.name.split(".")
    return tuple(int(d) for d in digits if d.isdigit())


def server_user() -> str | None:
    """The OS user the server runs as: None (ourselves) unless we are root."""
    if os.geteuid() != 0:
        return None
    for name in _FALLBACK_USERS:
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue
        return name
    raise ClusterError("running as root and neither a 'postgres' nor a 'nobody' user exists")


def _reachable_tmp(user: str | None) -> str | None:
    """A temp parent the server user can enter: ``$TMPDIR`` when every ancestor is
    world-searchable (or when we run as ourselves), else ``/tmp``."""
    if user is None:
        return None
    parents = Path(tempfile.gettempdir()).resolve()
    if all(p.stat().st_mode & stat.S_IXOTH for p in (parents, *parents.parents)):
        return None
    return "/tmp"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class PostgresCluster:
    directory: Path
    port: int
    database: str = "postgres"
    role: str = "postgres"

    @property
    def url(self) -> str:
        return f"postgresql://{self.role}@127.0.0.1:{self.port}/{self.database}"


def _run(command: list[str], user: str | None, cwd: Path) -> None:
    if user is not None:
        command = ["runuser", "-u", user, "--", *command]
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise ClusterError(f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}")


@contextmanager
def temporary_cluster(bindir: Path | None = None) -> Iterator[PostgresCluster]:
    """Create, start, yield and finally stop and delete a private PostgreSQL cluster."""
    bindir = bindir or find_bindir()
    if bindir is None:
        raise ClusterError("PostgreSQL server binaries (initdb, pg_ctl) not found")
    user = server_user()
    root = Path(tempfile.mkdtemp(prefix="sessions-pg-", dir=_reachable_tmp(user)))
    if user is not None:
        entry = pwd.getpwnam(user)
        os.chown(root, entry.pw_uid, entry.pw_gid)
    data, log = root / "data", root / "server.log"
    started = False
    try:
        initdb = [str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres"]
        _run([*initdb, "-E", "UTF8", "--locale=C", "--no-sync"], user, root)
        for _attempt in range(5):
            port = free_port()
            options = (
                f"-c listen_addresses=127.0.0.1 -p {port} -k {root} "
                "-c fsync=off -c full_page_writes=off -c synchronous_commit=off"
            )
            pg_ctl = [str(bindir / "pg_ctl"), "-D", str(data), "-l", str(log), "-w", "-t", "60"]
            try:
                _run([*pg_ctl, "-o", options, "start"], user, root)
            except ClusterError as exc:
                if "could not bind" in _tail(log):  # lost the race for the port: retry
                    continue
                raise ClusterError(f"{exc}\nserver log:\n{_tail(log)}") from exc
            started = True
            break
        else:
            raise ClusterError(f"no free port after 5 attempts\nserver log:\n{_tail(log)}")
        yield PostgresCluster(root, port)
    finally:
        if started:
            stop = [str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"]
            with contextlib.suppress(ClusterError):  # the directory is removed below anyway
                _run(stop, user, root)
        shutil.rmtree(root, ignore_errors=True)


def _tail(log: Path, size: int = 4000) -> str:
    try:
        return log.read_text(errors="replace")[-size:]
    except OSError:
        return ""
