"""Episode layouts: the capture project's later layout builds to the same training rows as the
same episodes in the seeds' layout; a line of neither layout names the nearest one."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import orjson
import pyarrow.parquet as pq

from builder.build import build
from builder.config import BuildConfig
from builder.derive import OBJECTIVE_MODULES
from builder.sources import SourceLine
from builder.validate import SCHEMA, Reject, Valid, Validator
from samples.synthetic import generate_episodes, to_capture_v2, without_v2_fields
from schemas.episode import Episode
from schemas.json_schema import episode_json_schema
from schemas.layouts import CAPTURE_V2, LAYOUTS

DATA = Path(__file__).resolve().parents[3] / "data"


def build_file(tmp: Path, name: str, records: list[dict]) -> Path:
    source = tmp / f"{name}.jsonl"
    source.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    out = tmp / name
    build(BuildConfig(episodes=(str(source),), out=out, rejects=tmp / f"{name}-rejects.jsonl"))
    return out


def test_the_later_layout_builds_the_same_training_rows(tmp_path: Path) -> None:
    episodes = list(generate_episodes(40, 3))
    seeds = build_file(tmp_path, "seeds", [without_v2_fields(e) for e in episodes])
    later = build_file(tmp_path, "later", [to_capture_v2(e) for e in episodes])
    for config in OBJECTIVE_MODULES:
        a, b = pq.read_table(seeds / config), pq.read_table(later / config)
        assert a.num_rows > 0 or config == "self_correction", config
        assert a.equals(b), config
    manifest = json.loads((later / "manifest.json").read_text())
    assert manifest["layouts"] == {CAPTURE_V2.name: 40}
    assert manifest["rejects"]["total"] == 0 and manifest["checks"]["episodes_by_kind"] == {}
    assert manifest["extra_fields"]["$.timing"] == 40  # kept, not lost
    layouts = pq.read_table(later / "episodes", columns=["layout"]).column("layout")
    assert set(layouts.to_pylist()) == {CAPTURE_V2.name}


def test_unknown_fields_are_named_as_the_later_layout_spells_them(tmp_path: Path) -> None:
    record = to_capture_v2(next(generate_episodes(1, 9)))
    record["gold_trace"]["sampler"] = "nucleus"
    record["triangulation"]["judge"] = "vote"
    out = build_file(tmp_path, "later", [record])
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["extra_fields"]["$.gold_trace.sampler"] == 1
    assert manifest["extra_fields"]["$.triangulation.judge"] == 1
    assert not any("teacher_gold_trace" in p for p in manifest["extra_fields"])
    (extra,) = pq.read_table(out / "episodes", columns=["extra_fields"]).column(0).to_pylist()
    assert json.loads(extra)["$.gold_trace.sampler"] == "nucleus"


def validate(record: dict) -> Valid | Reject:
    return Validator(Episode).validate(SourceLine("e.jsonl", 7, orjson.dumps(record)))


def test_a_line_of_no_layout_names_the_nearest_and_what_it_lacks() -> None:
    record = to_capture_v2(next(generate_episodes(1, 5)))
    del record["gold_trace"]
    outcome = validate(record)
    assert isinstance(outcome, Reject) and outcome.kind == SCHEMA
    (error,) = outcome.errors
    assert error.path == "$.gold_trace"
    assert "nearest, 'capture_v2', lacks gold_trace" in error.message
    del record["question"]
    (error,) = validate(record).errors
    assert error.path == "$" and "lacks question, gold_trace" in error.message


def test_rejects_of_the_later_layout_use_its_own_names() -> None:
    record = to_capture_v2(next(generate_episodes(1, 5)))
    record["gold_trace"]["success"] = "yes"
    outcome = validate(record)
    assert isinstance(outcome, Reject)
    assert [e.path for e in outcome.errors] == ["$.gold_trace.success"]


def test_the_sample_has_both_layouts_and_the_json_schema_accepts_both() -> None:
    validator = jsonschema.Draft202012Validator(episode_json_schema())
    seen = set()
    for path in sorted((DATA / "episodes").glob("*.jsonl")):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            validator.validate(record)
            outcome = validate(record)
            assert isinstance(outcome, Valid)
            seen.add(outcome.layout)
    assert seen == {layout.name for layout in LAYOUTS}
