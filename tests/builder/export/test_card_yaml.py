"""The card's YAML is what ``huggingface_hub`` writes for the same fields, byte for byte,
though the build writes it without the hub, with libyaml's emitter (``card._card_yaml``)."""

from __future__ import annotations

from dataclasses import replace

import pytest
import yaml
from huggingface_hub import DatasetCardData
from hypothesis import given, settings
from hypothesis import strategies as st

from builder.config import CardConfig
from builder.export import card
from builder.export.card import ExportedConfig
from schemas.objectives import OBJECTIVES
from schemas.tables import TABLES
from schemas.vocabulary import SPLITS


def _configs(files_per_split: int = 3) -> list[ExportedConfig]:
    """Every objective and table, each split with files named as the export names them (the
    questions with a split left empty, the episodes with a split given by glob)."""
    out = []
    for name, schema in {**OBJECTIVES, **TABLES}.items():
        rows = {s: 10 for s in SPLITS} | ({"validation": 0} if name == "questions" else {})
        files = {
            s: [
                f"{name}/{s}-0001-{i:05d}-of-{files_per_split:05d}-3f2a9c.parquet" for i in range(3)
            ]
            for s in SPLITS
            if name != "episodes" or s != "test"
        }
        out.append(ExportedConfig(name, schema, rows, "table", files))
    return out


def _by_the_hub(configs: list[ExportedConfig], settings: CardConfig, episodes: int) -> str:
    """The YAML as the build wrote it with ``huggingface_hub``'s card data."""
    loadable = card._loadable(configs)
    data = DatasetCardData(
        pretty_name=settings.pretty_name,
        license=settings.license,
        language=list(settings.language),
        tags=list(settings.tags),
        task_categories=list(settings.task_categories),
        size_categories=[settings.size_category or card.size_category(episodes)],
        configs=[
            {
                "config_name": c.name,
                "data_files": [
                    {"split": s, "path": list(c.files.get(s) or [f"{c.name}/{s}-*.parquet"])}
                    for s in SPLITS
                    if c.rows.get(s)
                ],
                **({"default": True} if c.name == settings.default_config else {}),
            }
            for c in loadable
        ],
    )
    info = card._dataset_info(loadable)
    if info is not None:
        data["dataset_info"] = info
    return data.to_yaml()


def _ours(configs: list[ExportedConfig], settings: CardConfig, episodes: int) -> str:
    loadable = card._loadable(configs)
    return card._card_yaml(loadable, settings, episodes, card._dataset_info(loadable))


@pytest.mark.parametrize(
    "settings",
    [
        CardConfig(),
        replace(CardConfig(), pretty_name="Traces: été — «csv» agent 🤖", tags=()),
        replace(CardConfig(), language=(), task_categories=(), size_category="n<1K"),
        replace(CardConfig(), license="apache-2.0", default_config="questions", tags=("a b",)),
        replace(CardConfig(), pretty_name="yes", license="null", tags=("1.0", "on", "- x")),
    ],
    ids=["default", "unicode", "empty lists", "default config", "yaml-looking words"],
)
def test_the_yaml_is_the_hubs(settings: CardConfig) -> None:
    configs = _configs()
    assert _ours(configs, settings, 5_000) == _by_the_hub(configs, settings, 5_000)


def test_one_config_alone_and_none_with_rows() -> None:
    only = [c for c in _configs() if c.name == "sft"]
    assert _ours(only, CardConfig(), 3) == _by_the_hub(only, CardConfig(), 3)
    empty = [replace(c, rows={}) for c in only]
    assert _ours(empty, CardConfig(), 0) == _by_the_hub(empty, CardConfig(), 0)


@settings(max_examples=150, deadline=None)
@given(
    name=st.text(min_size=1, max_size=120),
    tags=st.lists(st.text(min_size=1, max_size=40), max_size=4),
)
def test_any_card_text_is_written_as_the_hub_writes_it(name: str, tags: list[str]) -> None:
    settings = replace(CardConfig(), pretty_name=name, tags=tuple(tags))
    configs = [c for c in _configs(1) if c.name in ("sft", "questions")]
    assert _ours(configs, settings, 10) == _by_the_hub(configs, settings, 10)


@settings(max_examples=300, deadline=None)
@given(
    name=st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=300),
    tags=st.lists(st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E)), max_size=4),
)
def test_printable_ascii_is_written_by_libyaml_as_the_hub_writes_it(
    name: str, tags: list[str]
) -> None:
    settings = replace(CardConfig(), pretty_name=name, tags=tuple(tags))
    assert card._dumper(settings) is yaml.CDumper  # the wheels carry it
    configs = [c for c in _configs(1) if c.name in ("sft", "questions")]
    assert _ours(configs, settings, 10) == _by_the_hub(configs, settings, 10)


@pytest.mark.parametrize("name", ["été", "agent 🤖", "two\nlines", "tab\there", ""])
def test_other_text_is_written_by_pythons_emitter(name: str) -> None:
    settings = replace(CardConfig(), tags=(name,))
    assert card._dumper(settings) is (yaml.CDumper if name == "" else yaml.Dumper)
