"""The rows of the relational tables (``schemas.tables``) as the normalize stage builds them,
and their conversion to Arrow.

Each table's row is a tuple type whose fields are the schema's columns, in order: every row
names each of its values, so a column added, moved or renamed in ``schemas.tables`` cannot
shift the values of a row into the wrong columns.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import pyarrow as pa

from schemas.tables import TABLES, empty_table

# The tables one episode adds rows to, in the order ``EpisodeInfo.counts`` counts them.
EPISODE_TABLES = ("episodes", "traces", "turns", "hooks", "corrections", "messages")
# The episodes row is built without ``checks``, which needs build-wide state (ground truth).
EPISODES_WITHOUT_CHECKS = TABLES["episodes"].remove(TABLES["episodes"].get_field_index("checks"))
Rows = dict[str, list[tuple[Any, ...]]]


def _row_type(name: str, schema: pa.Schema) -> Any:
    """The row type of ``schema``; ``name`` is the module attribute it is bound to, so rows
    pickle."""
    return namedtuple(name, schema.names)  # type: ignore[misc]


QuestionRow = _row_type("QuestionRow", TABLES["questions"])
EpisodeRow = _row_type("EpisodeRow", EPISODES_WITHOUT_CHECKS)
CheckedEpisodeRow = _row_type("CheckedEpisodeRow", TABLES["episodes"])
TraceRow = _row_type("TraceRow", TABLES["traces"])
TurnRow = _row_type("TurnRow", TABLES["turns"])
HookRow = _row_type("HookRow", TABLES["hooks"])
CorrectionRow = _row_type("CorrectionRow", TABLES["corrections"])
MessageRow = _row_type("MessageRow", TABLES["messages"])


def to_table(rows: list[tuple[Any, ...]], schema: pa.Schema) -> pa.Table:
    """Rows (tuples in ``schema`` column order: the row types above) to one Arrow table.

    One conversion of the rows as a struct array, then its fields as the columns: Arrow
    reads each tuple in place, where turning the rows into columns in Python first (a
    ``zip(*rows)``, then one conversion per column) took twice as long on the turns table
    (the widest: 28 against 13 ms for 500 episodes of the bench profile, the garbage
    collector paused as in the workers) and as long on the others."""
    if not rows:
        return empty_table(schema)
    rows_as_structs = pa.array(rows, type=pa.struct(schema))
    return pa.Table.from_struct_array(rows_as_structs).replace_schema_metadata(schema.metadata)


def empty_rows() -> Rows:
    return {t: [] for t in TABLES}
