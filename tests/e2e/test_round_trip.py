"""``build`` then ``export-jsonl`` gives back every accepted line as the same JSON value: the
tables are a lossless form of the episodes, but for what the manifest's ``round_trip``
declares (hook values bounded at ``hook_value_limit``; redacted secrets)."""

from __future__ import annotations

import copy
import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builder.config import BuildConfig
from builder.contract.stored_values import bound_stored_value
from builder.pipeline import build
from builder.restore.episodes import episode_lines
from schemas.layouts import recognise
from schemas.lines import same
from tests.e2e.round_trip_lines import episode_lines as generated_lines

LIMIT = 300  # bytes of a hook value's JSON kept whole; the generator makes some longer


def _write(path: Path, lines: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


def _build(tmp: Path, lines: list[dict[str, Any]], **options: Any) -> Path:
    _write(tmp / "episodes.jsonl", lines)
    config = BuildConfig(
        episodes=(str(tmp / "episodes.jsonl"),),
        out=tmp / "ds",
        rejects=tmp / "rejects.jsonl",
        max_reject_ratio=1.0,
        hook_value_limit=LIMIT,
        split_group_by="question",
        **options,
    )
    build(config)
    return tmp / "ds"


def _traces(line: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    gold = "gold_trace" if "gold_trace" in line else "teacher_gold_trace"
    out = [(f"$.{gold}", line[gold])]
    return out + [("$.consistency_traces[*]", t) for t in line.get("consistency_traces", [])]


def bounded(line: dict[str, Any], limit: int) -> tuple[dict[str, Any], Counter[str]]:
    """``line`` with every hook value longer than ``limit`` as the build bounds it, and how
    many were bounded, by JSON path: what the manifest must declare."""
    line, lost = copy.deepcopy(line), Counter[str]()
    for where, trace in _traces(line):
        listings = [(".hooks[*].value", trace.get("hooks", []))]
        for turn in trace.get("turns") or []:
            listings.append(
                (".turns[*].execution.hooks[*].value", turn["execution"].get("hooks", []))
            )
        for path, hooks in listings:
            for hook in hooks:
                if "value" in hook:
                    text, cut = bound_stored_value(json.dumps(hook["value"], sort_keys=True), limit)
                    if cut:
                        hook["value"] = json.loads(text)
                        lost[where + path] += 1
    return line, lost


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def assert_round_trip(folder: Path, lines: list[dict[str, Any]], limit: int = LIMIT) -> int:
    """Every input line comes back from the folder as the same JSON value, but for the
    values the manifest declares, and the manifest declares exactly those."""
    back = {line["episode_id"]: line for line in episode_lines(folder)}
    assert sorted(back) == sorted(line["episode_id"] for line in lines)
    declared = Counter[str]()
    for line in lines:
        expected, lost = bounded(line, limit)
        declared += lost
        assert same(back[line["episode_id"]], expected), line["episode_id"]
        # as JSON text too: an integer comes back an integer (10**20 is no 1e+20)
        assert _text(back[line["episode_id"]]) == _text(expected), line["episode_id"]
        recognise(back[line["episode_id"]])  # in its own layout
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["round_trip"]["not_round_tripped"]["bounded_hook_values"] == dict(declared)
    return len(back)


@settings(
    max_examples=int(os.environ.get("ROUND_TRIP_EXAMPLES", "6")),
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.function_scoped_fixture,
        HealthCheck.data_too_large,
    ],
)
@given(data=st.data())
def test_build_then_export_gives_back_every_line(tmp_path_factory: Any, data: Any) -> None:
    n = data.draw(st.integers(1, 5))
    lines = [data.draw(generated_lines(i)) for i in range(n)]
    tmp = tmp_path_factory.mktemp("round-trip")
    folder = _build(tmp, lines, redaction_enabled=False)
    rejects = (tmp / "rejects.jsonl").read_text() if (tmp / "rejects.jsonl").exists() else ""
    assert rejects == "", rejects  # the strategy makes lines the builder accepts
    assert assert_round_trip(folder, lines) == n


def test_a_redacted_secret_comes_back_redacted_and_is_counted(tmp_path: Path) -> None:
    from tests.builder.conftest import episode

    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    line = episode("ep-secret")
    line["teacher_gold_trace"]["turns"][0]["execution"]["stdout"] = f"token {secret}\n"
    line["x_note"] = f"pushed with {secret}"
    folder = _build(tmp_path, [line])
    (back,) = episode_lines(folder)
    assert secret not in json.dumps(back)
    expected = json.loads(json.dumps(line).replace(secret, "<REDACTED:github_token>"))
    assert same(back, expected)
    manifest = json.loads((folder / "manifest.json").read_text())
    lost = manifest["round_trip"]["not_round_tripped"]
    assert lost["redacted_secrets"] == 2
    assert lost["redacted_values"] == {"episodes.extra_fields": 1, "turns.stdout": 1}
    assert "2 redacted secrets" in (folder / "README.md").read_text()


@pytest.mark.parametrize("limit", [LIMIT])
def test_a_value_dropped_silently_fails_the_round_trip(tmp_path: Path, limit: int) -> None:
    """The check itself: a line whose field the tables lost is caught."""
    from tests.builder.conftest import episode

    line = episode("ep-0001")
    folder = _build(tmp_path, [line])
    changed = copy.deepcopy(line)
    changed["question"]["difficulty"] = "HARD"  # what a lost field would look like
    with pytest.raises(AssertionError):
        assert_round_trip(folder, [changed], limit)


def test_a_bounded_hook_value_comes_back_as_its_summary_and_is_declared(tmp_path: Path) -> None:
    from tests.builder.conftest import episode, hook, turn, turns_trace

    big = {"rows": list(range(200))}
    gold = turns_trace(
        turns=[turn(0, "x = load()", hooks=[hook("x", big)]), turn(1, "submit(42)", submitted=42)]
    )
    line = episode("ep-big", gold=gold)
    folder = _build(tmp_path, [line])
    (back,) = episode_lines(folder)
    value = back["teacher_gold_trace"]["turns"][0]["execution"]["hooks"][0]["value"]
    assert value["truncated"] is True and value["type"] == "dict"
    manifest = json.loads((folder / "manifest.json").read_text())
    declared = manifest["round_trip"]["not_round_tripped"]["bounded_hook_values"]
    assert declared == {"$.teacher_gold_trace.turns[*].execution.hooks[*].value": 1}
    assert "1 hook value kept only as a bounded summary" in (folder / "README.md").read_text()
    assert_round_trip(folder, [line])


def test_a_trace_in_both_forms_and_keys_no_path_step_can_spell_come_back(tmp_path: Path) -> None:
    """A trace giving ``code_cells`` and ``turns`` (that disagree: a failed check, or agree)
    and unknown keys holding dots, brackets and quotes come back as the lines gave them."""
    from samples.variants import to_capture_v2
    from tests.builder.conftest import episode, turns_trace

    mixed = episode("ep-mixed")
    mixed["teacher_gold_trace"]["code_cells"] = ["x = 1", "submit(x)"]
    agreeing = episode("ep-agree")
    gold = agreeing["teacher_gold_trace"]
    gold["code_cells"] = [t["code"] for t in gold["turns"]]
    keys = episode("ep-keys")
    keys["a.b[0]"] = 1
    keys["a"] = {"b": [2]}
    keys["teacher_gold_trace"]["turns"][1]['say "hi" [0]'] = 3
    later = to_capture_v2(episode("ep-v2", gold=turns_trace(42)))
    later["gold_trace"]["code_cells"] = ["submit(42)"]
    later["gold_trace"]["x.y"] = 4
    lines = [mixed, agreeing, keys, later]
    folder = _build(tmp_path, lines, redaction_enabled=False)
    assert assert_round_trip(folder, lines) == 4
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["checks"]["episodes_by_kind"] == {"code_listing_mismatch": 2}
    assert manifest["extra_fields"]['$["a.b[0]"]'] == 1
    assert manifest["extra_fields"]["$.a"] == 1
    assert manifest["extra_fields"]['$.teacher_gold_trace.turns[*]["say \\"hi\\" [0]"]'] == 1
    assert manifest["extra_fields"]['$.gold_trace["x.y"]'] == 1
    assert "$.a.b[*]" not in manifest["extra_fields"]
