"""The ``[card]`` table of ``dataset.toml``: what the dataset card's metadata says."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from builder.errors import ConfigError


@dataclass(frozen=True)
class CardConfig:
    pretty_name: str = "Agent traces"
    license: str = "other"
    tags: tuple[str, ...] = ("code", "agents", "reasoning")
    task_categories: tuple[str, ...] = ("text-generation",)
    language: tuple[str, ...] = ("en",)
    description: str = "Training data derived from code-agent execution episodes."
    size_category: str = ""  # empty: derived from the number of episodes
    default_config: str = "sft"


# The Hub's size categories (a card's ``size_categories``).
SIZE_CATEGORIES = tuple(
    [
        "n<1K",
        "1K<n<10K",
        "10K<n<100K",
        "100K<n<1M",
        "1M<n<10M",
        "10M<n<100M",
        "100M<n<1B",
        "1B<n<10B",
        "10B<n<100B",
        "100B<n<1T",
        "n>1T",
    ]
)


# What the card's metadata must name: empty, the Hub reads no license and no title
_CARD_NAMED = ("pretty_name", "license")
# The card's YAML metadata: one line of printable text each (a line break or a control
# character in a title or a tag is a slip, and YAML reads some of them back as other text)
_CARD_ONE_LINE = ("pretty_name", "license", "language", "tags", "task_categories")


def card_config(path: Path, table: dict[str, Any]) -> CardConfig:
    known = {f.name for f in fields(CardConfig)}
    unknown = set(table) - known
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) in [card]: {', '.join(sorted(unknown))}")
    values: dict[str, Any] = {}
    defaults = CardConfig()
    for key, value in table.items():
        default = getattr(defaults, key)
        if isinstance(default, tuple):
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ConfigError(f"{path}: [card] {key} must be a list of strings")
            if not all(v.strip() for v in value):  # the Hub's metadata has no empty tag
                raise ConfigError(f"{path}: [card] {key} must not hold an empty string")
            value = tuple(value)
            if key in _CARD_ONE_LINE and not all(v.isprintable() for v in value):
                raise ConfigError(f"{path}: [card] {key} must hold one line of printable text each")
        elif not isinstance(value, str):
            raise ConfigError(f"{path}: [card] {key} must be a string")
        elif key in _CARD_NAMED and not value.strip():
            leave = f"leave it out for {default!r}"
            raise ConfigError(f"{path}: [card] {key} must not be empty ({leave})")
        elif key in _CARD_ONE_LINE and not value.isprintable():
            raise ConfigError(f"{path}: [card] {key} must be one line of printable text")
        elif key == "size_category" and value and value not in SIZE_CATEGORIES:
            known = ", ".join(SIZE_CATEGORIES)
            raise ConfigError(f"{path}: [card] size_category must be one of {known}, not {value!r}")
        values[key] = value
    return CardConfig(**values)


def card_settings(card: CardConfig) -> dict[str, Any]:
    """The card's settings as the manifest records them (``build --from`` reads them back)."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(card).items()}
