"""``sft_turns``: TRL's conversational prompt–completion layout, one row per trained message.

Every assistant message of weight 1 in an ``sft`` conversation becomes one row: ``prompt``
is every message before it (system, user, tool outputs, earlier assistant messages of any
weight), ``completion`` is that message alone. TRL's ``SFTTrainer`` computes the loss on the
completion only by default (``completion_only_loss``), so no token of a weight-0 message, an
environment output or the prompt is ever trained on — which the weights of ``sft`` cannot
say to a trainer that does not read them. Rows keep ``sft``'s lineage (same split per
question) and ``message_index``, the completion's place in the ``sft`` conversation.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from builder.derive import sft
from builder.derive.options import DeriveOptions
from schemas.objectives import OBJECTIVES

NAME = "sft_turns"
SCHEMA = OBJECTIVES[NAME]


def derive(tables: Mapping[str, pl.LazyFrame], options: DeriveOptions) -> pl.LazyFrame:
    return from_sft(sft.derive(tables, options))


def from_sft(conversations: pl.LazyFrame) -> pl.LazyFrame:
    """``sft``-shaped rows (episodes' or sessions') to one row per trained message."""
    message = pl.col("messages").list.get(pl.col("message_index"))
    trained = (message.struct.field("role") == "assistant") & (message.struct.field("weight") == 1)
    lineage = [c for c in SCHEMA.names if c not in ("prompt", "completion", "message_index")]
    return (
        conversations.with_columns(
            message_index=pl.int_ranges(pl.col("messages").list.len(), dtype=pl.Int32)
        )
        .explode("message_index")
        .filter(trained.fill_null(False))
        .select(
            pl.col("messages").list.head(pl.col("message_index")).alias("prompt"),
            pl.concat_list(message).alias("completion"),
            "message_index",
            *lineage,
        )
    )
