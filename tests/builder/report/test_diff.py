"""``--against``: what changed since another build, per config and split and per reject kind."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from builder.config import BuildConfig
from builder.pipeline import BuildReport, build
from builder.report import diff
from builder.report.errors import AgainstError
from builder.report.page import Options, write_report

from .conftest import SAMPLE_EPISODES


def _metric(text: str, name: str) -> int:
    match = re.search(rf'data-metric="{re.escape(name)}" data-value="(-?\d+)"', text)
    assert match, name
    return int(match.group(1))


def test_changes_against_a_smaller_build(sample_build: BuildReport, tmp_path: Path) -> None:
    lines = SAMPLE_EPISODES.read_text(encoding="utf-8").splitlines(keepends=True)
    source = tmp_path / "few.jsonl"
    source.write_text("".join(lines[:20]) + "{broken\n", encoding="utf-8")
    other = tmp_path / "other" / "dataset"
    config = BuildConfig(
        episodes=(str(source),),
        out=other,
        rejects=other.parent / "rejects.jsonl",
        max_reject_ratio=1.0,
    )
    build(config)
    before = json.loads((other / "manifest.json").read_text())
    after = json.loads((sample_build.out / "manifest.json").read_text())
    page = write_report(sample_build.out, tmp_path / "r.html", options=Options(against=other))
    text = page.path.read_text(encoding="utf-8")
    sft_before = before["configs"]["sft"]["rows"]["train"]
    sft_after = after["configs"]["sft"]["rows"]["train"]
    assert sft_before != sft_after
    assert _metric(text, "diff.rows.sft/train.before") == sft_before
    assert _metric(text, "diff.rows.sft/train.after") == sft_after
    assert _metric(text, "diff.rejects.invalid_json.before") == 1
    assert _metric(text, "diff.rejects.invalid_json.after") == 0
    # A manifest file (e.g. the previous release's) works as well as its folder.
    again = write_report(
        sample_build.out, tmp_path / "m.html", options=Options(against=other / "manifest.json")
    )
    assert (
        _metric(again.path.read_text(encoding="utf-8"), "diff.rows.sft/train.before") == sft_before
    )


def test_compare_lists_every_count_of_both_builds() -> None:
    base = {
        "configs": {"sft": {"rows": {"train": 2}}},
        "rejects": {"by_kind": {"schema": 1}},
        "checks": {"episodes_by_kind": {}},
        "training_exclusions": {"not_verified": 1},
        "inputs": [{"path": "a.jsonl", "lines": 3}],
        "files": {"sft/a.parquet": "1", "images/x.png": "2"},
    }
    new = {
        **base,
        "configs": {"sft": {"rows": {"train": 5}}, "dpo": {"rows": {"test": 1}}},
        "rejects": {"by_kind": {"invalid_json": 2}},
        "files": {"sft/a.parquet": "9", "dpo/b.parquet": "3", "images/x.png": "2"},
    }
    changes = {(c.section, c.key): (c.before, c.after) for c in diff.compare(base, new)}
    assert changes[("rows", "sft/train")] == (2, 5)
    assert changes[("rows", "dpo/test")] == (0, 1)
    assert changes[("rejects", "schema")] == (1, 0)
    assert changes[("rejects", "invalid_json")] == (0, 2)
    assert diff.file_changes(base, new) == {"added": 1, "removed": 0, "changed": 1, "unchanged": 1}


def test_against_something_that_is_no_build_names_the_flag(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"a": 1}\n{"b": 2}\n')
    for other in (rows, tmp_path / "nothing"):
        with pytest.raises(AgainstError, match=r"^--against ") as caught:
            diff.load_other(other)
        assert "episodes build" not in caught.value.hint  # the other build is not rebuilt
