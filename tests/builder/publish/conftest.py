"""A local Hub for the publish tests, started when this conftest is imported.

``huggingface_hub`` and ``datasets`` read ``HF_ENDPOINT`` (and cache, token, Xet settings) at
import time. This conftest is imported when pytest collects this folder, before its test
modules — which import the libraries only inside tests — so the environment is in place for
them. If another test module of the suite imported the libraries first, their constants are
patched instead; ``verify`` checks through the libraries' own helpers either way.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from builder.config import BuildConfig
from builder.pipeline import BuildReport, build
from samples.episodes import generate_episodes
from samples.files import write_jsonl
from tests.hub_server import HubServer, User, point_clients_at, verify

WRITE_TOKEN = "hf_test_WRITE_4f1c9a7e2b"
READ_TOKEN = "hf_test_READ_8d2e6b1a90"
OTHER_TOKEN = "hf_test_OTHER_0c3f5e7a1d"

_HOME = Path(tempfile.mkdtemp(prefix="hub-test-home-"))
SERVER = HubServer(
    [
        User("tester", WRITE_TOKEN, orgs=("org",)),
        User("reader", READ_TOKEN, orgs=("org",), role="read"),
        User("outsider", OTHER_TOKEN),
    ]
).start()
_restore = point_clients_at(SERVER.url, _HOME)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # huggingface_hub's own upload code passes file objects as httpx2 `data=`.
    quiet = pytest.mark.filterwarnings("ignore:Use 'content=<...>':DeprecationWarning")
    here = Path(__file__).parent
    for item in items:
        if item.path.is_relative_to(here):
            item.add_marker(quiet)


def pytest_unconfigure(config: pytest.Config) -> None:
    _restore()
    SERVER.stop()
    shutil.rmtree(_HOME, ignore_errors=True)


@pytest.fixture(scope="session")
def hub() -> HubServer:
    verify(SERVER.url)
    return SERVER


@pytest.fixture
def hf_token(monkeypatch: pytest.MonkeyPatch) -> str:
    """A write token in ``HF_TOKEN``, the way CI passes it."""
    monkeypatch.setenv("HF_TOKEN", WRITE_TOKEN)
    return WRITE_TOKEN


@pytest.fixture
def repo_id(request: pytest.FixtureRequest) -> str:
    """A fresh repository name per test (repositories live as long as the server)."""
    name = "".join(c if c.isalnum() else "-" for c in request.node.name)
    return "org/" + re.sub("-+", "-", name)[:80].strip("-")  # the Hub refuses "--"


def make_build(root: Path, episodes: int, seed: int) -> BuildReport:
    root.mkdir(parents=True, exist_ok=True)
    source = root / "episodes.jsonl"
    write_jsonl(source, generate_episodes(episodes, seed))
    return build(
        BuildConfig(episodes=(str(source),), out=root / "dataset", rejects=root / "r.jsonl")
    )


@pytest.fixture(scope="session")
def build_a(tmp_path_factory: pytest.TempPathFactory) -> BuildReport:
    return make_build(tmp_path_factory.mktemp("build-a"), 30, seed=11)


@pytest.fixture(scope="session")
def build_b(tmp_path_factory: pytest.TempPathFactory) -> BuildReport:
    return make_build(tmp_path_factory.mktemp("build-b"), 44, seed=11)


@pytest.fixture
def copy_build(tmp_path: Path) -> Iterator:
    """A private copy of a session build, for tests that change files or add releases."""

    def copy(report: BuildReport, name: str = "dataset") -> Path:
        target = tmp_path / name
        shutil.copytree(report.out, target)
        return target

    yield copy


def add_data_file(folder: Path, rel: str, data: bytes) -> None:
    """Add a data file the way the build would: written, and its digest in the manifest."""
    import hashlib

    (folder / rel).parent.mkdir(parents=True, exist_ok=True)
    (folder / rel).write_bytes(data)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["files"][rel] = hashlib.sha256(data).hexdigest()
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
