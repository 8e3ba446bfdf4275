"""Faults from outside, each injected on a real target: a small disk that fills, a build
killed outright, a PostgreSQL server stopped while the sessions stream, an object store and
a Hub that go down mid-transfer. For each: the exit code, one line with no traceback, the
previous output byte for byte, nothing left beside it, and the same command run again
completes."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from builder.engine.orphans import alive
from builder.errors import UNAVAILABLE
from builder.fs import space
from samples.episodes import generate_episodes
from samples.files import write_jsonl
from tests.small_disk import fill, small_disk

ROOT = Path(__file__).resolve().parents[2]
BAD = ROOT / "data/bad/bad_lines.jsonl"
BASE_ENV = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}


def episodes(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    # The bad lines' rejects are in every build (a rejects file to keep intact): allowed.
    extra = ["--no-progress", "--max-reject-ratio", "0.5"] if args[0] == "build" else []
    return subprocess.Popen(
        [sys.executable, "-m", "builder", *args, *extra],
        cwd=cwd,
        env={**BASE_ENV, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def run(*args: str, cwd: Path, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    process = episodes(*args, cwd=cwd, env=env)
    out, err = process.communicate(timeout=300)
    return process.returncode, out, err


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def snapshot(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }


def _bytes(path: Path) -> bytes | None:
    return path.read_bytes() if path.exists() else None


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The previous build's input and the next one's (other episodes: another output)."""
    root = tmp_path_factory.mktemp("fault-inputs")
    made = {"before": root / "before.jsonl", "after": root / "after.jsonl"}
    write_jsonl(made["before"], generate_episodes(130, 3))
    write_jsonl(made["after"], generate_episodes(150, 4))
    made["large"] = root / "large.jsonl"
    write_jsonl(made["large"], generate_episodes(800, 17))
    return made


@pytest.fixture(scope="module")
def previous(inputs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A build of the previous input, copied wherever a test needs one in place."""
    root = tmp_path_factory.mktemp("fault-previous")
    code, _, err = run(
        "build",
        *("--episodes", str(inputs["before"]), str(BAD)),
        *("--out", str(root / "ds"), "--rejects", str(root / "rejects.jsonl")),
        cwd=root,
    )
    assert code == 0, err
    return root


@pytest.fixture(scope="module")
def previous_mostly_rejected(
    inputs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """A build whose input was mostly bytes of lines it rejected: its manifest counts them,
    so its size, scaled by input bytes (the estimate the next build checks), is short of
    what a build of well-formed episodes needs."""
    root = tmp_path_factory.mktemp("fault-previous-rejected")
    junk = root / "junk.jsonl"
    junk.write_text(("{not json " + "x" * 100_000 + "\n") * 20, encoding="utf-8")
    code, _, err = run(
        "build",
        *("--episodes", str(inputs["before"]), str(junk)),
        *("--out", str(root / "ds"), "--rejects", str(root / "rejects.jsonl")),
        cwd=root,
    )
    assert code == 0, err
    junk.unlink()
    return root


@pytest.fixture(scope="module")
def next_size(inputs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> int:
    """The size of the build of the next input, built where there is room."""
    root = tmp_path_factory.mktemp("fault-next")
    code, _, err = run(
        "build",
        *("--episodes", str(inputs["after"]), str(BAD)),
        *("--out", str(root / "ds"), "--rejects", str(root / "rejects.jsonl")),
        cwd=root,
    )
    assert code == 0, err
    return space.folder_size(root / "ds")


# ---------------------------------------------------------------------- a disk that fills


@dataclass(frozen=True)
class DiskFault:
    """Which of the build's folders live on a 12 MB disk, and how much of it is left free
    when the next build starts (from the space the finished build is estimated to need)."""

    name: str
    on_disk: tuple[str, ...]  # "out" (its folder and rejects), "rejects", "cache"
    # (the build's estimate of its finished size, the size it has) -> bytes left free
    leave: Callable[[int, int], int]
    says: str  # the folder named is the disk, or the cache on it: {disk}
    # the fixture of the build already on the disk (None: a first build, whose estimate is
    # a share of its input)
    previous: str | None = "previous"


DISK_FAULTS = [
    DiskFault(
        "room for less than the finished build: refused before any work",
        ("out",),
        lambda estimate, size: estimate // 2,
        "no space left on the device of {disk}: ",
    ),
    # Room for the estimate the build checks first, not for the build, which fills the disk
    # on the way. (Beside the usual previous build the estimate, that build's size scaled by
    # the input, is more than a build of the next input needs at its peak.)
    DiskFault(
        "a rebuild with room for its estimate only: the disk fills up during the build",
        ("out",),
        lambda estimate, size: estimate + (16 << 10),
        "the device of {disk} filled up during the build: it needs more than the ",
        previous="previous_mostly_rejected",
    ),
    DiskFault(
        "a first build with room for its estimate only: the disk fills up during the build",
        ("out",),
        lambda estimate, size: estimate + (16 << 10),
        "the device of {disk} filled up during the build: it needs more than the ",
        previous=None,
    ),
    DiskFault(
        "the cache's disk fills up",
        ("cache",),
        lambda estimate, size: 64 << 10,
        "the device of {disk}/cache filled up during the build",
    ),
    DiskFault(
        "a rebuild whose cache shares the disk: its completed entries go with it",
        ("out", "cache"),
        lambda estimate, size: estimate + (16 << 10),
        "the device of {disk} filled up during the build: it needs more than the ",
        previous="previous_mostly_rejected",
    ),
    DiskFault(
        "the rejects file's disk is full",
        ("rejects",),
        lambda estimate, size: 0,
        "the device of {disk} filled up during the build",
    ),
]


@pytest.mark.parametrize("fault", DISK_FAULTS, ids=lambda f: f.name)
def test_a_disk_that_fills(
    fault: DiskFault,
    inputs: dict[str, Path],
    next_size: int,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    previous = request.getfixturevalue(fault.previous or "previous")
    with small_disk(tmp_path / "disk", 12) as disk:
        home = disk if "out" in fault.on_disk else tmp_path / "local"
        home.mkdir(exist_ok=True)
        if fault.previous is not None:
            shutil.copytree(previous, home, dirs_exist_ok=True)
        out, rejects = home / "ds", home / "rejects.jsonl"
        if "rejects" in fault.on_disk:
            shutil.copy(previous / "rejects.jsonl", disk / "rejects.jsonl")
            rejects = disk / "rejects.jsonl"
        args = ["--episodes", str(inputs["after"]), str(BAD), "--out", str(out)]
        args += ["--rejects", str(rejects)]
        if "cache" in fault.on_disk:
            args += ["--cache-dir", str(disk / "cache")]
        before, rejects_before = snapshot(out), _bytes(rejects)
        around = {folder: names(folder) for folder in {out.parent, rejects.parent}}
        estimate = space.final_size(out, inputs["after"].stat().st_size + BAD.stat().st_size)
        filler = fill(disk, fault.leave(estimate, next_size))

        started = time.monotonic()
        code, _, err = run("build", *args, cwd=tmp_path)
        took = time.monotonic() - started

        assert code == UNAVAILABLE, err
        line = one_line(err)
        assert fault.says.format(disk=disk) in line, line
        assert line.endswith("— free space there, or choose another folder, and run it again")
        assert snapshot(out) == before and _bytes(rejects) == rejects_before
        for folder, listed in around.items():
            made = {filler.name, "cache"}  # the cache folder itself may stay, emptied below
            assert [n for n in names(folder) if n not in made] == listed
        if "cache" in fault.on_disk:
            assert not [p for p in (disk / "cache").rglob(".tmp-*")]  # half-written entries
            # nor the entries and segments it completed: their space is the rerun's
            assert not [p for p in (disk / "cache").glob("*/*") if p.is_dir()]
        assert took < 60

        filler.unlink()
        code, _, err = run("build", *args, cwd=tmp_path)
        assert code == 0, err
        assert snapshot(out) != before and err == ""


# ---------------------------------------------------------------------- a build killed outright


@pytest.mark.parametrize("then", ["build", "doctor"])
def test_a_killed_builds_leftovers_go_with_the_next_command(
    then: str, inputs: dict[str, Path], previous: Path, tmp_path: Path
) -> None:
    shutil.copytree(previous, tmp_path, dirs_exist_ok=True)
    out, rejects = tmp_path / "ds", tmp_path / "rejects.jsonl"
    common = ["--out", str(out), "--rejects", str(rejects)]
    before, around = snapshot(out), names(tmp_path)
    build = episodes(
        "build", "--episodes", str(inputs["large"]), "--workers", "1", *common, cwd=tmp_path
    )
    work = tmp_path / ".ds.work"
    deadline = time.monotonic() + 60
    while not (work / "tables").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)  # well inside the ingest of 800 episodes
    build.send_signal(signal.SIGKILL)
    build.communicate(timeout=30)
    assert build.returncode == -signal.SIGKILL
    left = sorted(set(names(tmp_path)) - set(around))
    partial = f".rejects.jsonl.{build.pid}.partial"
    assert left == sorted([".ds.lock", ".ds.work", partial])
    assert snapshot(out) == before

    if then == "doctor":
        code, said, err = run("doctor", str(out), cwd=tmp_path)
        assert code == 0 and err == ""
        first = said.splitlines()[0]
        assert first.startswith(f"removed what an interrupted build left: .ds.work, {partial}")
        assert names(tmp_path) == around and snapshot(out) == before
        code, said, _ = run("doctor", str(out), cwd=tmp_path)
        assert code == 0 and said == f"nothing left behind beside {out}\n"
        return
    code, _, err = run("build", "--episodes", str(inputs["after"]), *common, cwd=tmp_path)
    assert code == 0, err
    line = one_line(err)
    assert line.startswith("episodes build: removed what an interrupted build left: .ds.work, ")
    assert partial in line and ".ds.lock" in line and "MB freed)" in line
    assert names(tmp_path) == around


def _descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (from ``/proc``)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_bytes().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def test_a_killed_builds_workers_end_with_it(inputs: dict[str, Path], tmp_path: Path) -> None:
    """Workers come from the fork server, not from the build: killed outright, the build
    takes them (and the server) with it, so nothing holds its stdout open."""
    common = ["--out", str(tmp_path / "ds"), "--rejects", str(tmp_path / "r.jsonl")]
    build = episodes(
        "build", "--episodes", str(inputs["large"]), "--workers", "2", *common, cwd=tmp_path
    )
    deadline = time.monotonic() + 60
    below: set[int] = set()
    while len(below) < 4 and time.monotonic() < deadline:  # tracker, server, two workers
        time.sleep(0.05)
        below = _descendants(build.pid)
    assert len(below) >= 4, below
    build.send_signal(signal.SIGKILL)
    build.communicate(timeout=30)  # the pipes close: no worker holds them
    deadline = time.monotonic() + 15
    while below and time.monotonic() < deadline:
        time.sleep(0.1)
        below = {p for p in below if alive(p)}
    assert not below, below


# ---------------------------------------------------------------------- a server that dies


class Scene:
    """One remote and a command that uses it: ``arm`` sets the fault for the next run,
    ``revive`` brings the remote back, ``remote`` is the state that must not change, and
    ``resent`` what the rerun sent again of what had arrived before the fault."""

    command: list[str]
    env: dict[str, str]
    says: str
    out: Path | None  # the local output that must stay as it was (None: it is the new one)

    def arm(self) -> None: ...
    def revive(self) -> None: ...
    def remote(self) -> object:
        return None

    def mark(self) -> None: ...
    def resent(self) -> list[str]:
        return []


def build_args(root: Path, *inputs: str) -> list[str]:
    return [
        "build",
        "--episodes",
        *inputs,
        "--out",
        str(root / "ds"),
        "--rejects",
        str(root / "rejects.jsonl"),
    ]


@pytest.fixture(scope="module")
def postgres() -> object:
    from builder.sessions.pgcluster import find_bindir, temporary_cluster

    if find_bindir() is None:
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl, postgres) are not installed")
    with temporary_cluster() as cluster:
        yield cluster


def pg_ctl(cluster: object, *args: str) -> None:
    """``pg_ctl`` on the cluster, as its owner; the server it starts logs to its file and
    holds none of this process's pipes (a started server never closes them)."""
    from builder.sessions.pgcluster import find_bindir, server_user

    data, log = cluster.directory / "data", cluster.directory / "server.log"
    command = [str(find_bindir() / "pg_ctl"), "-D", str(data), "-l", str(log), "-w", *args]
    user = server_user()
    if user is not None:
        command = ["runuser", "-u", user, "--", *command]
    quiet = subprocess.DEVNULL
    subprocess.run(command, stdout=quiet, stderr=quiet, check=True, cwd=cluster.directory)


class PostgresStopped(Scene):
    """The sessions database stopped (``pg_ctl stop -m immediate``) while the actions stream:
    the relay in front of it stops it once the query for them is on its way."""

    says = "the connection was lost while reading table actions"

    def __init__(self, cluster: object, root: Path, inputs: dict[str, Path]) -> None:
        import psycopg

        from tests.cut_proxy import CutProxy

        with psycopg.connect(cluster.url, autocommit=True) as conn:
            conn.execute("DROP DATABASE IF EXISTS faults")
            conn.execute("CREATE DATABASE faults")
        with psycopg.connect(cluster.url.rsplit("/", 1)[0] + "/faults") as conn:
            conn.execute((ROOT / "data/sessions/sample.sql").read_text())
        self.cluster, self.relay = cluster, CutProxy("127.0.0.1", cluster.port)
        url = f"postgresql://postgres@{self.relay.address}/faults"
        self.env, self.out = {}, root / "ds"
        self.command = [*build_args(root, str(inputs["after"])), "--sessions", url]
        first = [*build_args(root, str(inputs["before"])), "--sessions", url]
        code, _, err = run(*first, cwd=root)
        assert code == 0, err

    def arm(self) -> None:
        stop = lambda: pg_ctl(self.cluster, "-m", "immediate", "stop")  # noqa: E731
        self.relay.cut_when("down", 4096, stop, marker=b'FROM "actions"')

    def revive(self) -> None:
        pg_ctl(self.cluster, "restart")  # with the options it was started with
        self.relay.up()


class PostgresHangs(PostgresStopped):
    """The sessions database stops answering while the actions stream, its connections left
    open (a hung host, a network that drops packets): the read gives up after
    ``EPISODES_TIMEOUT`` × 4 without a batch, and connecting again times out."""

    says = "the server sent nothing for 4 s while the sessions were read"

    def __init__(self, cluster: object, root: Path, inputs: dict[str, Path]) -> None:
        super().__init__(cluster, root, inputs)
        self.env = {"EPISODES_TIMEOUT": "1", "EPISODES_RETRIES": "1"}

    def arm(self) -> None:
        self.relay.cut_when("down", 4096, marker=b'FROM "actions"', hang=True)

    def revive(self) -> None:
        self.relay.up()


@pytest.fixture(scope="module")
def moto() -> object:
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    yield server
    server.stop()


def s3_admin(moto: object) -> object:
    import pyarrow.fs as pafs

    host, port = moto.get_host_and_port()
    return pafs.S3FileSystem(
        endpoint_override=f"{host}:{port}",
        scheme="http",
        access_key="test",
        secret_key="test",
        region="us-east-1",
        allow_bucket_creation=True,
    )


def s3_env(address: str) -> dict[str, str]:
    return {
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": f"http://{address}",
        "AWS_EC2_METADATA_DISABLED": "true",
    }


class StoreGoneMidRead(Scene):
    """The episodes are read from the store, which goes away 512 KB into the file."""

    says = "s3://faults-read/in/after.jsonl: cannot read: "

    def __init__(self, moto: object, root: Path, inputs: dict[str, Path], previous: Path) -> None:
        from tests.cut_proxy import CutProxy

        admin = s3_admin(moto)
        admin.create_dir("faults-read")
        with admin.open_output_stream("faults-read/in/after.jsonl") as stream:
            stream.write(inputs["after"].read_bytes())
        self.relay = CutProxy(*moto.get_host_and_port())
        self.env, self.out = s3_env(self.relay.address), root / "ds"
        shutil.copytree(previous, root, dirs_exist_ok=True)
        self.command = build_args(root, "s3://faults-read/in/after.jsonl", str(BAD))

    def arm(self) -> None:
        self.relay.cut_when("down", 512 << 10)

    def revive(self) -> None:
        self.relay.up()


class StoreGoneMidUpload(Scene):
    """A build copied to the store (``--upload-to``) that goes away 200 KB into the upload:
    the build is complete here; the store keeps the previous manifest and every file it
    lists; the rerun does not send again the data files that had arrived."""

    says = "but s3://faults-up/out: cannot upload: "

    def __init__(self, moto: object, root: Path, inputs: dict[str, Path]) -> None:
        from tests.cut_proxy import CutProxy

        self.admin = s3_admin(moto)
        self.admin.create_dir("faults-up")
        self.relay = CutProxy(*moto.get_host_and_port())
        self.env, self.out = s3_env(self.relay.address), None
        upload = ["--upload-to", "s3://faults-up/out"]
        code, _, err = run(
            *build_args(root, str(inputs["before"])), *upload, cwd=root, env=self.env
        )
        assert code == 0, err
        self.command = build_args(root, str(inputs["after"])) + upload

    def listing(self) -> dict[str, bytes]:
        import pyarrow.fs as pafs

        found = self.admin.get_file_info(pafs.FileSelector("faults-up/out", recursive=True))
        files = [i.path for i in found if i.type == pafs.FileType.File]
        return {p: self.admin.open_input_stream(p).read() for p in files}

    def remote(self) -> object:
        import json

        stored = self.listing()
        manifest = stored["faults-up/out/manifest.json"]
        listed = json.loads(manifest)["files"]
        return manifest, {rel: stored[f"faults-up/out/{rel}"] for rel in listed}

    def arm(self) -> None:
        self.relay.cut_when("up", 200 << 10)

    def revive(self) -> None:
        self.relay.up()

    def mark(self) -> None:
        """The data files that had arrived when the store went away."""
        self.arrived = {p for p in self.listing() if p.endswith(".parquet")}
        self.since = len(self.relay.requests)

    def resent(self) -> list[str]:
        sent = [path for method, path in self.relay.requests[self.since :] if method == "PUT"]
        return [p for p in sent if p.split("?")[0].lstrip("/") in self.arrived]


TOKEN = "hf_test_WRITE_faults_0a1b2c"


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> object:
    from tests.hub_server import HubServer, User

    server = HubServer([User("tester", TOKEN, orgs=("org",))]).start()
    yield server
    server.stop()


class HubDiesMidCommit(Scene):
    """``publish`` of a second release; the Hub dies while it receives the commit (both of
    its listeners close). Its branches, tags and commits stay as they were; the rerun sends
    no file again."""

    says = "publishing v1.1.0 failed"

    def __init__(self, hub: object, root: Path, inputs: dict[str, Path], previous: Path) -> None:
        from tests.hub_server.clients import _env

        self.hub, self.out = hub, previous / "ds"
        self.env = {**_env(hub.url, root / "hf-home"), "HF_TOKEN": TOKEN}
        code, _, err = run(*build_args(root, str(inputs["after"])), cwd=root)
        assert code == 0, err
        self.repo = f"org/faults-{root.name}"[:80]
        first = ["publish", str(previous / "ds"), "--repo", self.repo, "--version", "1.0.0"]
        code, _, err = run(*first, cwd=root, env=self.env)
        assert code == 0, err
        self.command = ["publish", str(root / "ds"), "--repo", self.repo, "--version", "1.1.0"]

    def remote(self) -> object:
        repo = self.hub.repo(self.repo)
        tags = {name: tag.target for name, tag in repo.tags.items()}
        return dict(repo.branches), tags, set(repo.commits)

    def arm(self) -> None:
        self.hub.fail("POST", rf"^/api/datasets/{self.repo}/commit/main$", "die")

    def revive(self) -> None:
        self.hub.revive()

    def mark(self) -> None:
        self.since = len(self.hub.requests)

    def resent(self) -> list[str]:
        return [
            r.path
            for r in self.hub.requests[self.since :]
            if r.listener == "storage" and r.method == "PUT"
        ]


SERVER_FAULTS = {
    "postgresql stopped while the sessions stream": lambda r, t, i, p: PostgresStopped(
        r.getfixturevalue("postgres"), t, i
    ),
    "postgresql hangs while the sessions stream": lambda r, t, i, p: PostgresHangs(
        r.getfixturevalue("postgres"), t, i
    ),
    "the store goes away mid-read": lambda r, t, i, p: StoreGoneMidRead(
        r.getfixturevalue("moto"), t, i, p
    ),
    "the store goes away mid-upload": lambda r, t, i, p: StoreGoneMidUpload(
        r.getfixturevalue("moto"), t, i
    ),
    "the hub dies mid-commit": lambda r, t, i, p: HubDiesMidCommit(
        r.getfixturevalue("hub"), t, i, p
    ),
}


@pytest.mark.parametrize("fault", list(SERVER_FAULTS))
def test_a_server_that_dies(
    fault: str,
    request: pytest.FixtureRequest,
    inputs: dict[str, Path],
    previous: Path,
    tmp_path: Path,
) -> None:
    scene = SERVER_FAULTS[fault](request, tmp_path, inputs, previous)
    before = snapshot(scene.out) if scene.out is not None else None
    around = names(tmp_path)
    remote = scene.remote()

    scene.arm()
    started = time.monotonic()
    code, _, err = run(*scene.command, cwd=tmp_path, env=scene.env)
    took = time.monotonic() - started
    assert code == UNAVAILABLE, err
    line = one_line(err)
    assert scene.says in line, line
    assert "run" in line.lower() and "again" in line  # the line says to run it again
    if scene.out is not None:
        assert snapshot(scene.out) == before
    assert names(tmp_path) == around
    assert scene.remote() == remote
    assert took < 30

    scene.revive()
    scene.mark()
    code, _, err = run(*scene.command, cwd=tmp_path, env=scene.env)
    assert code == 0, err
    assert scene.resent() == []
    if scene.out is not None and scene.command[0] == "build":
        assert snapshot(scene.out) != before


def _in_process_fault(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], inject: Callable[[], None]
) -> str:
    """A build in this process, then ``inject`` (a fault, by monkeypatching) and the same
    build again: it must exit 5 with one line (returned), leave the first build byte for
    byte and nothing beside it."""
    from builder.cli.episodes import main

    source = tmp_path / "episodes.jsonl"
    write_jsonl(source, generate_episodes(60, 5))
    out = tmp_path / "ds"
    args = ["build", "--episodes", str(source), "--out", str(out), "--no-progress"]
    assert main(args) == 0
    before, beside = snapshot(out), sorted(p.name for p in tmp_path.iterdir())
    inject()
    capsys.readouterr()
    assert main(args) == UNAVAILABLE
    line = one_line(capsys.readouterr().err)
    assert snapshot(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == beside  # nothing left beside it
    return line


def test_a_work_folder_removed_under_the_build_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import builder.pipeline as pipeline

    plan = pipeline.plan_splits

    def removed_first(work: Path, *rest: object) -> object:
        shutil.rmtree(work)  # as another process would, with the build half done
        return plan(work, *rest)

    line = _in_process_fault(
        tmp_path, capsys, lambda: monkeypatch.setattr(pipeline, "plan_splits", removed_first)
    )
    assert f"its work folder {tmp_path / '.ds.work'} was removed while it ran" in line


def test_a_disk_that_fails_the_flush_is_one_line_and_the_build_in_place_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import errno
    import os

    def failing(fd: int) -> None:  # what a dying disk answers
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    line = _in_process_fault(tmp_path, capsys, lambda: monkeypatch.setattr(os, "fsync", failing))
    assert "the disk failed to write" in line and "Input/output error" in line
    assert str(tmp_path / ".ds.work" / "dataset") in line  # the file it failed on


def test_a_disk_out_of_inodes_is_said_so(tmp_path: Path, inputs: dict[str, Path]) -> None:
    """A file system may run out of inodes with bytes to spare (ENOSPC all the same): the
    line says so and what to do, not "free space"; nothing is left on the disk."""
    with small_disk(tmp_path / "disk", 200, inodes=40) as disk:
        out = disk / "ds"
        args = ["--episodes", str(inputs["after"]), "--out", str(out)]
        code, _, err = run("build", *args, "--rejects", str(disk / "r.jsonl"), cwd=tmp_path)
        assert code == UNAVAILABLE, err
        line = one_line(err)
        assert f"the device of {disk}" in line and "ran out of inodes" in line, line
        assert "free space there" not in line and "remove files there" in line, line
        assert names(disk) == []
