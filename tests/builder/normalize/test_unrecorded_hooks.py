"""Names a trace's ``depends_on`` may give that no hook of it records: the frame the capture's
sandbox preloads, and hooks the capture dropped with the cell that failed after them. The
episodes are lines the capture project's own code wrote (``tests/data/capture``)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pyarrow.parquet as pq
import pytest

from builder.config import BuildConfig
from builder.contract.rewards import process_reward
from builder.normalize.hook_dag import check_hook_dag, unrecorded_names
from builder.pipeline import build
from schemas.vocabulary import HOOK_UNKNOWN_DEPENDENCY

CAPTURE = Path(__file__).resolve().parents[2] / "data" / "capture"


def _turn(code: str, success: bool | None) -> SimpleNamespace:
    return SimpleNamespace(code=code, execution=SimpleNamespace(success=success))


def test_names_hooked_in_a_failed_cell_count_and_others_do_not() -> None:
    trace = SimpleNamespace(
        turns=[
            _turn("a = 1\nhook(a, 'a = 1', name='a')\nb = a['x']", False),  # keyword
            _turn("c = 2\nhook(c, 'c = 2', 'c', depends_on=['a'])\n1 / 0", False),  # positional
            _turn(
                "env.hook(d, 'd = 3',\n         name=\"d\")\nboom()", False
            ),  # attribute, 2 lines
            _turn("e = (\nhook(e, 'e', name='e')", False),  # does not parse: ran nothing
            _turn("f = 4\nhook(f, 'f = 4', name=label)\nboom()", False),  # not a literal
            _turn("g = 5\nhook(g, 'g = 5', name='g')", True),  # ran: its hooks are recorded
        ]
    )
    assert unrecorded_names(trace) == {"df", "a", "c", "d"}
    assert unrecorded_names(SimpleNamespace(turns=None)) == {"df"}


def test_only_a_name_found_nowhere_fails_the_check() -> None:
    def bound() -> frozenset[str]:
        return frozenset({"df", "ctrl"})

    assert check_hook_dag([("x", ["df"])]) == [HOOK_UNKNOWN_DEPENDENCY]
    assert check_hook_dag([("x", ["df"]), ("m", ["ctrl", "x"])], bound) == []
    assert check_hook_dag([("m", ["ctrl", "ghost"])], bound) == [HOOK_UNKNOWN_DEPENDENCY]


def _build(tmp: Path, fixture: str, **options: object) -> Path:
    out = tmp / fixture
    config = BuildConfig(
        episodes=(str(CAPTURE / f"{fixture}.jsonl"),),
        out=out,
        rejects=tmp / f"{fixture}-rejects.jsonl",
        hash_precision=2,
        **options,
    )
    build(config)
    return out


@pytest.mark.parametrize(
    ("fixture", "dependency"),
    [
        ("episode_gen_depends_on_df", "df"),  # the teacher's first hook depends on the data
        ("episode_gen_failed_cell_hook", "ctrl"),  # hooked, then the cell raised KeyError
    ],
)
@pytest.mark.parametrize("strict", [False, True])
def test_the_capture_s_episode_trains_the_hook_configs(
    tmp_path: Path, fixture: str, dependency: str, strict: bool
) -> None:
    record = json.loads((CAPTURE / f"{fixture}.jsonl").read_text(encoding="utf-8"))
    hooks = [h for t in record["gold_trace"]["turns"] for h in t["execution"]["hooks"]]
    assert dependency in {d for h in hooks for d in h["depends_on"]}
    assert dependency not in {h["variable_name"] for h in hooks}
    out = _build(tmp_path, fixture, strict=strict)
    (episode,) = pq.read_table(out / "episodes").to_pylist()
    assert episode["checks"] == [] and episode["verified_recomputed"]
    (rl,) = pq.read_table(out / "rl").to_pylist()
    assert rl["episode_id"] == record["episode_id"]
    # the gold trace's own hooks earn the whole dense reward
    assert process_reward(rl["gold_hooks"], rl["gold_hooks"], precision=2).reward == 1.0
    # each gold step that ran is credited: its hooks wait on nothing the trace lacks
    (gold,) = [t for t in pq.read_table(out / "traces").to_pylist() if t["role"] == "gold"]
    turns = [
        t for t in pq.read_table(out / "turns").to_pylist() if t["trace_id"] == gold["trace_id"]
    ]
    ran = [t["success"] for t in sorted(turns, key=lambda t: t["turn_index"])]
    assert False in ran and ran[-1]
    stepwise = {r["trace_id"]: r for r in pq.read_table(out / "prm_stepwise").to_pylist()}
    assert stepwise[gold["trace_id"]]["labels"] == ran
