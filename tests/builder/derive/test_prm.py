"""prm: one row per hook of every gold trace, labelled 1.0 when verified as captured and
recomputed; no row of an episode with a failed check other than verified_mismatch."""

from __future__ import annotations


def test_one_row_per_gold_hook_of_every_episode_with_its_label(derived) -> None:
    rows = derived["prm"].select("episode_id", "hook_index", "turn_index", "step", "label")
    assert rows.rows() == [
        ("ep-a", 0, 0, "df = pd.read_csv('sales.csv')", 1.0),
        ("ep-a", 1, 2, "m = df['revenue'].mean()", 1.0),
        ("ep-d", 0, None, "y = 5", 0.0),  # claims verified, recomputation fails: label 0
        ("ep-d", 1, None, "z = y", 0.0),
        ("ep-c", 0, 0, "x = 1", 0.0),
        ("ep-b", 0, None, "n = len(df)", 1.0),
    ]  # sorted by question id, then episode, then hook; ep-e (a failed check) is left out
    assert derived["prm"]["question_id"].is_sorted()
    assert derived["prm"]["trace_id"].str.ends_with(":gold").all()


def test_value_is_the_stored_json_next_to_its_hash(derived) -> None:
    first = derived["prm"].row(0, named=True)
    assert first["value"] == '{"shape": [3, 2]}'
    assert len(first["value_hash"]) == 16
    assert first["source"] == "episode"


def test_a_capture_that_did_not_claim_verified_labels_its_steps_0(make) -> None:
    """The traces bear verification out, but the capture said false: the episode trains
    nowhere as verified, and its steps are not labelled as a verified episode's either."""
    from builder.derive import prm
    from builder.derive.options import DeriveOptions

    gold = make.trace(7, cells=["x = 7", "submit(x)"], hooks=[make.hook("x = 7", 7)])
    episode = make.episode("ep-f", "Seven?", gold, [make.trace(7, cells=["submit(7)"])])
    unclaimed = {**episode, "episode_id": "ep-g", "verified": False}
    found = prm.derive(make.build_tables([episode, unclaimed]), DeriveOptions()).collect()
    assert dict(found.select("episode_id", "label").iter_rows()) == {"ep-f": 1.0, "ep-g": 0.0}
