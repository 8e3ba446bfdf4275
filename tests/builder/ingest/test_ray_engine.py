"""The Ray engine (``engine = "ray"``): the same generated input built with the local engine
and on a local Ray (2 CPUs, started by the test) gives identical dataset folders and
rejects, byte for byte. Skipped when ``ray[data]`` is not installed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray")
pytest.importorskip("ray.data")

from builder.config import BuildConfig  # noqa: E402
from builder.ingest.ray_engine import RayEngine  # noqa: E402
from builder.pipeline import build  # noqa: E402
from samples.episodes import generate_episodes  # noqa: E402
from samples.files import write_jsonl  # noqa: E402
from samples.questions import generate_questions  # noqa: E402


@dataclass(frozen=True)
class EngineConfig(BuildConfig):
    """``BuildConfig`` plus the engine keys (``ingest_files`` reads them with getattr)."""

    engine: str = "local"
    ray_address: str | None = None
    cache_dir: Path | None = None


def folder_digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    """One local Ray for the module (the engine joins it instead of starting its own)."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        yield
    finally:
        ray.shutdown()


def write_inputs(folder: Path) -> None:
    records: list[Any] = list(generate_episodes(90, seed=11, question_pool=20))
    records.insert(10, records[4])  # duplicate id
    records.insert(20, b"{not json")
    records.insert(21, b"")
    broken = json.loads(json.dumps(records[30]))
    broken["triangulation_metadata"]["majority_count"] += 1
    records.insert(31, broken | {"episode_id": "broken"})
    records.append(records[5] | {"episode_id": "unknown-fields", "zz_new": {"a": 1}})
    write_jsonl(folder / "one.jsonl", records[:60])
    write_jsonl(folder / "two.jsonl.gz", records[60:])
    write_jsonl(folder / "bank.jsonl", generate_questions(8, seed=11))


def run(folder: Path, name: str, **kw: Any) -> dict[str, Any]:
    if not (folder / "one.jsonl").exists():
        write_inputs(folder)
    config = EngineConfig(
        episodes=(str(folder / "one.jsonl"), str(folder / "two.jsonl.gz")),
        synthetic_questions=(str(folder / "bank.jsonl"),),
        out=folder / name / "dataset",
        rejects=folder / name / "rejects.jsonl",
        max_reject_ratio=1.0,
        batch_lines=9,  # many batches, several windows
        **kw,
    )
    build(config)
    return {"dataset": folder_digest(config.out), "rejects": config.rejects.read_bytes()}


@pytest.mark.parametrize("strict", [False, True])
def test_ray_engine_builds_the_same_dataset_as_the_local_engine(
    tmp_path: Path, local_ray: None, strict: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    local = run(tmp_path, "local", strict=strict)
    windows = []
    original = RayEngine._run

    def counted(self: RayEngine, *args: Any) -> Any:
        windows.append(self)
        return original(self, *args)

    monkeypatch.setattr(RayEngine, "_run", counted)
    on_ray = run(tmp_path, "ray", strict=strict, engine="ray")
    assert on_ray == local
    assert len(windows) >= 3  # the batches really went through Ray Data, in windows
    assert b"already seen at" in local["rejects"]


def test_ray_engine_with_the_incremental_cache(tmp_path: Path, local_ray: None) -> None:
    local = run(tmp_path, "local")
    cache = tmp_path / "cache"
    assert run(tmp_path, "cold", engine="ray", cache_dir=cache) == local
    assert run(tmp_path, "warm", engine="ray", cache_dir=cache) == local


def test_results_come_back_in_order(local_ray: None) -> None:
    engine = RayEngine(window=3)

    def items() -> Iterator[tuple[Any, ...]]:
        for i in range(8):
            yield ([], i, None, None)  # lines, hook limit, hash precision, answer tolerance

    out = list(engine.map(_echo, items()))
    engine.close()
    assert [r.outcomes for r in out] == [[] for _ in range(8)]
    assert [r.tables["questions"].num_rows for r in out] == [0] * 8


def _echo(lines: list[Any], limit: int, precision: int | None, tolerance: float | None) -> Any:
    from builder.ingest.files import normalize_batch

    return normalize_batch(lines, limit, precision, tolerance)
