"""Which episodes train, and the excluded counts the manifest reports."""

from __future__ import annotations

from builder.derive import derive_all, eligible_episodes, exclusion_counts, exclusion_reasons


def test_only_verified_recomputed_and_clean_episodes_train(tables) -> None:
    eligible = eligible_episodes(tables).collect()
    assert sorted(eligible["episode_id"]) == ["ep-a", "ep-b"]


def test_each_excluded_episode_counted_once_under_its_first_reason(tables) -> None:
    reasons = exclusion_reasons(tables).sort("episode_id").collect()
    assert reasons.rows() == [
        ("ep-a", None),
        ("ep-b", None),
        ("ep-c", "not_verified"),
        ("ep-d", "verified_mismatch"),  # its checks list also holds verified_mismatch
        ("ep-e", "failed_checks"),
    ]
    assert exclusion_counts(tables) == {
        "not_verified": 1,
        "verified_mismatch": 1,
        "failed_checks": 1,
        "duplicate_turn_index": 0,
        "failed_hook_checks": 0,
    }


def test_counts_list_every_reason_even_when_nothing_is_excluded(make) -> None:
    tables = make.build_tables([make.analysis_episode()])
    assert exclusion_counts(tables) == {
        "not_verified": 0,
        "verified_mismatch": 0,
        "failed_checks": 0,
        "duplicate_turn_index": 0,
        "failed_hook_checks": 0,
    }
    assert eligible_episodes(tables).collect().to_series().to_list() == ["ep-a"]


def test_derived_configs_only_hold_eligible_episodes(derived) -> None:
    for name, frame in derived.items():
        episodes = set(frame["episode_id"])
        if name == "prm":
            assert episodes == {"ep-a", "ep-b", "ep-c", "ep-d"}  # ep-e: a failed check
        elif name in ("dpo", "self_correction"):  # ep-b has no failed trace, no correction
            assert episodes == {"ep-a"}, name
        else:
            assert episodes == {"ep-a", "ep-b"}, name


def test_a_trace_with_a_repeated_turn_index_does_not_train(make) -> None:
    turns = [make.turn(0, "a = 1"), make.turn(0, "submit(a)", submitted=1)]
    episode = make.episode("ep-j", "One.", make.trace(1, turns=turns), [make.trace(1)])
    tables = make.build_tables([episode, make.analysis_episode()])
    assert exclusion_counts(tables)["duplicate_turn_index"] == 1
    assert eligible_episodes(tables).collect()["episode_id"].to_list() == ["ep-a"]


def test_failed_hook_checks_leave_out_only_the_configs_that_read_hooks(make) -> None:
    """A ``depends_on`` naming no hook (a teacher's hook call that names a variable it never
    hooked) says nothing of the answer or the code: ``sft``, ``orm``, ``dpo`` and
    ``self_correction`` train on the episode; ``prm``, ``prm_stepwise`` and ``rl`` (whose
    ``gold_hooks`` drive the dense reward) do not. It is counted apart."""
    episode = make.analysis_episode()
    episode["episode_id"] = "ep-h"
    gold_hook = episode["teacher_gold_trace"]["turns"][2]["execution"]["hooks"][0]
    gold_hook["depends_on"] = ["df_raw"]  # never hooked
    tables = make.build_tables([episode])
    (checks,) = tables["episodes"].select("checks").collect().to_series().to_list()
    assert checks == ["hook_unknown_dependency"]
    assert exclusion_counts(tables)["failed_hook_checks"] == 1
    assert exclusion_counts(tables)["failed_checks"] == 0
    assert eligible_episodes(tables).collect().to_series().to_list() == ["ep-h"]
    assert eligible_episodes(tables, hooks=True).collect().height == 0
    derived = {name: frame.collect() for name, frame in derive_all(tables).items()}
    trained = {name for name, frame in derived.items() if frame.height}
    assert trained == {"sft", "sft_turns", "orm", "dpo", "self_correction"}
