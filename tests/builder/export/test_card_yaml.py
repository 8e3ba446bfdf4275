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


# The fields, in the order the build passed them: the hub writes its own fields in the order
# of its signature, and the others (tags, configs) in the order given.
CALLED_WITH = (
    "pretty_name", "license", "language", "tags", "task_categories", "size_categories", "configs"
)  # fmt: skip


def _by_the_hub(ours: str) -> str:
    """The same fields through ``huggingface_hub``'s card data, called as the build called it
    before it wrote the YAML itself (the configs and features as ours lists them: what they
    hold is checked by loading the build with ``datasets``)."""
    fields = yaml.safe_load(ours)
    data = DatasetCardData(**{name: fields[name] for name in CALLED_WITH})
    if "dataset_info" in fields:
        data["dataset_info"] = fields["dataset_info"]
    return data.to_yaml()


def _same_as_the_hubs(configs: list[ExportedConfig], settings: CardConfig, episodes: int) -> bool:
    loadable = card._loadable(configs)
    ours = card._card_yaml(loadable, settings, episodes, card._dataset_info(loadable))
    assert yaml.safe_load(ours)["pretty_name"] == settings.pretty_name
    return ours == _by_the_hub(ours)


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
    assert _same_as_the_hubs(configs, settings, 5_000)


def test_one_config_alone_and_none_with_rows() -> None:
    only = [c for c in _configs() if c.name == "sft"]
    assert _same_as_the_hubs(only, CardConfig(), 3)
    empty = [replace(c, rows={}) for c in only]
    assert _same_as_the_hubs(empty, CardConfig(), 0)


@settings(max_examples=150, deadline=None)
@given(
    # what ``[card]`` accepts: one line of printable text (``builder.config``)
    name=st.text(min_size=1, max_size=120).filter(str.isprintable),
    tags=st.lists(st.text(min_size=1, max_size=40).filter(str.isprintable), max_size=4),
)
def test_any_card_text_is_written_as_the_hub_writes_it(name: str, tags: list[str]) -> None:
    settings = replace(CardConfig(), pretty_name=name, tags=tuple(tags))
    configs = [c for c in _configs(1) if c.name in ("sft", "questions")]
    assert _same_as_the_hubs(configs, settings, 10)


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
    assert _same_as_the_hubs(configs, settings, 10)


@pytest.mark.parametrize("name", ["été", "agent 🤖", "two\nlines", "tab\there", ""])
def test_other_text_is_written_by_pythons_emitter(name: str) -> None:
    settings = replace(CardConfig(), tags=(name,))
    assert card._dumper(settings) is (yaml.CDumper if name == "" else yaml.Dumper)
