"""The card's YAML memo: a rebuild that changes nothing the YAML is made from reuses it, and
anything it is made from (schemas, which splits have rows, card settings) makes a new one."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from builder.config import CardConfig
from builder.export import _total, card
from builder.export.card import ExportedConfig, card_yaml
from schemas.tables import TABLES


def configs(rows: dict[str, int]) -> list[ExportedConfig]:
    return [
        ExportedConfig("questions", TABLES["questions"], rows, "table"),
        ExportedConfig("episodes", TABLES["episodes"], {"train": 5}, "table"),
    ]


def calls_to(monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    """A list that gets a 1 for every call of ``card.<name>`` from now on."""
    calls: list[int] = []
    real = getattr(card, name)

    def counted(*args: object) -> object:
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(card, name, counted)
    return calls


def test_the_memo_gives_the_yaml_it_was_made_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memo = tmp_path / "card.json"
    fresh = card_yaml(configs({"train": 3, "test": 1}), CardConfig(), 4)
    assert card_yaml(configs({"train": 3, "test": 1}), CardConfig(), 4, memo) == fresh
    assert memo.is_file()

    made = calls_to(monkeypatch, "_card_yaml")
    # other row counts, same splits with rows: the memo
    assert card_yaml(configs({"train": 30, "test": 9}), CardConfig(), 4, memo) == fresh
    assert made == []
    # a split without rows leaves the YAML's data files: made again
    emptied = card_yaml(configs({"train": 3}), CardConfig(), 4, memo)
    assert "questions/test-*" in fresh
    assert made == [1] and "questions/test-*" not in emptied
    # card settings and schemas are in the key
    card_yaml(configs({"train": 3}), replace(CardConfig(), pretty_name="Other"), 4, memo)
    other = [ExportedConfig("questions", TABLES["turns"], {"train": 3}, "table")]
    card_yaml(other, CardConfig(), 4, memo)
    assert made == [1, 1, 1]


def test_new_file_names_make_the_yaml_without_deriving_the_features_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An incremental rebuild lists new data files: the YAML is written again, the same as
    without a memo, but the features ``datasets`` derived from unchanged schemas are reused
    (no ``datasets`` import); a changed schema derives them again."""
    memo = tmp_path / "card.json"
    card_yaml(configs({"train": 3}), CardConfig(), 4, memo)
    listed = [
        replace(c, files={"train": [f"{c.name}/train-0001-abc.parquet"]})
        for c in configs({"train": 3})
    ]
    changed = [replace(listed[0], schema=TABLES["turns"]), listed[1]]
    without_memo = [card_yaml(listed, CardConfig(), 4), card_yaml(changed, CardConfig(), 4)]
    derived = calls_to(monkeypatch, "_dataset_info")
    again = card_yaml(listed, CardConfig(), 4, memo)
    assert derived == [] and "train-0001-abc.parquet" in again
    assert again == without_memo[0]
    assert card_yaml(changed, CardConfig(), 4, memo) == without_memo[1]
    assert derived == [1]


def test_a_damaged_memo_is_ignored(tmp_path: Path) -> None:
    memo = tmp_path / "card.json"
    memo.write_text("{not json")
    assert card_yaml(configs({"train": 1}), CardConfig(), 1, memo) == card_yaml(
        configs({"train": 1}), CardConfig(), 1
    )


def test_counts_added_up_across_segments_do_not_depend_on_the_order_listed() -> None:
    # A fresh segment lists its redactions in pattern order, one reused from the cache sorted:
    # the card shows the totals in one order either way, or a cached build's card differs.
    fresh = [{"url_password": 1, "secret_assignment": 1}]
    cached = [{"secret_assignment": 1, "url_password": 1}]
    assert list(_total(fresh)) == list(_total(cached)) == ["secret_assignment", "url_password"]
    assert list(_total([{"b": 1, "z": 2}], keys=("z", "a"))) == ["z", "a", "b"]


def test_recipes_are_shown_only_for_configs_with_rows_and_pin_a_revision() -> None:
    """``load_dataset`` cannot load a config without rows: the card shows no recipe for one
    and says so. Every recipe loads at ``REVISION``, which the setup says to pin."""
    from builder.export.recipes import RECIPES, recipes_section

    text = "\n".join(recipes_section("org/name", {"sft", "sft_turns", "prm_stepwise"}))
    assert "### `sft`" in text and "### `sft_turns`" in text
    assert "### `dpo`" not in text and "### `rl`" not in text
    assert (
        "No recipe for `self_correction`, `dpo`, `orm`, `rl`: this build has no train rows" in text
    )
    assert 'REVISION = None  # on the Hub, pin a release: its tag, such as "v1.2.0"' in text
    for recipe in RECIPES.values():
        loads = recipe.code.count("load_dataset(DATASET")
        assert loads == recipe.code.count("revision=REVISION)"), recipe.config
