"""Which episodes train, and the excluded counts the manifest reports."""

from __future__ import annotations

from builder.derive import eligible_episodes, exclusion_counts, exclusion_reasons


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
    }


def test_counts_list_every_reason_even_when_nothing_is_excluded(make) -> None:
    tables = make.build_tables([make.analysis_episode()])
    assert exclusion_counts(tables) == {
        "not_verified": 0,
        "verified_mismatch": 0,
        "failed_checks": 0,
        "duplicate_turn_index": 0,
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
