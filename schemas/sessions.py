"""Interactive sessions: the ``sessions`` and ``actions`` database tables and their Arrow tables.

The second capture format (seed ``000_b919fc473c808d12``): an interactive coding environment
logs one ``sessions`` row per session and one ``actions`` row per edit, run or message, in an
application database (SQLite or PostgreSQL; DDL in ``schemas/sql/``). The pydantic models are
the contract for one database row, exactly as the seed states it; the builder validates rows
vectorized (``builder.sessions.validate``) from the facts declared here (required fields,
enum values), so the two cannot drift apart.

Two Arrow schemas per table: ``*_ROW`` is what the reader yields (the database columns in
their declared types), ``SESSIONS``/``ACTIONS`` are the output tables, which add the split key
``question_id`` (on actions too, denormalized, so both tables split by a plain join) and
per-session counts. ``INT`` in the seed is SQL's 32-bit integer: ``action_id`` is ``int32``
(it becomes ``turn_index`` in ``self_correction``); ``session_id`` is widened to ``int64``, the
type of the ``session_id`` column of the training configs.
"""

from __future__ import annotations

import typing
from typing import Literal

import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr

from schemas.tables import DERIVED, KEY, LABEL, SOURCE, STRINGS, TEXT, column, table_schema

ActionType = Literal["input", "set_instruction", "set_code", "set_exec_output"]
ActionSource = Literal["human", "ai", "dataset"]

ACTION_TYPES: tuple[str, ...] = typing.get_args(ActionType)
ACTION_SOURCES: tuple[str, ...] = typing.get_args(ActionSource)
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


class Session(BaseModel):
    """One ``sessions`` row. A null ``verified`` is read as "not verified" (it does not train)."""

    model_config = ConfigDict(frozen=True)

    session_id: StrictInt = Field(description="Unique identifier for each session")
    # The seed puts no constraint on it: a session may start empty and take its instruction
    # from a later ``set_instruction``.
    initial_instruction: StrictStr | None = Field(
        default=None, description="The initial instruction given for the session"
    )
    initial_code: StrictStr | None = Field(
        default=None, description="The initial code state for the session"
    )
    initial_exec_output: StrictStr | None = Field(
        default=None, description="The initial execution output for the session"
    )
    verified: StrictBool | None = Field(
        default=None,
        description="Indicates whether the session was verified by the user. Online sessions "
        "should be marked as verified for training use",
    )


class Action(BaseModel):
    """One ``actions`` row. ``action`` may be null (an empty edit or an empty output)."""

    model_config = ConfigDict(frozen=True)

    action_uuid: StrictStr = Field(description="Unique identifier for each action")
    session_id: StrictInt = Field(description="References the session this action belongs to")
    action_id: StrictInt = Field(
        ge=INT32_MIN, le=INT32_MAX, description="Chronological order of actions within a session"
    )
    action_type: ActionType = Field(description="Type of action")
    action: StrictStr | None = Field(default=None, description="The content of the action")
    correct: StrictBool | None = Field(
        default=None,
        description="Indicates if the action is correct. Incorrect actions can be used for "
        "setup but should not be trained on directly",
    )
    source: ActionSource = Field(description="Source of the action")


def required_fields(model: type[BaseModel]) -> tuple[str, ...]:
    """Fields a row cannot have null: the ones the model requires."""
    return tuple(name for name, info in model.model_fields.items() if info.is_required())


def _doc(model: type[BaseModel], name: str) -> str:
    return model.model_fields[name].description or ""


# What the reader yields: the database columns, in their declared types.
SESSION_ROW = table_schema(
    "One row of the sessions database table, as read",
    column("session_id", pa.int64(), _doc(Session, "session_id"), role=KEY),
    column("initial_instruction", pa.string(), _doc(Session, "initial_instruction"), role=TEXT),
    column("initial_code", pa.string(), _doc(Session, "initial_code"), role=TEXT),
    column("initial_exec_output", pa.string(), _doc(Session, "initial_exec_output"), role=TEXT),
    column("verified", pa.bool_(), _doc(Session, "verified")),
)

ACTION_ROW = table_schema(
    "One row of the actions database table, as read",
    column("action_uuid", pa.string(), _doc(Action, "action_uuid"), role=KEY),
    column("session_id", pa.int64(), _doc(Action, "session_id"), role=KEY),
    column(
        "action_id", pa.int64(), _doc(Action, "action_id") + " (range-checked to INT)", role=KEY
    ),
    column("action_type", pa.string(), _doc(Action, "action_type"), role=LABEL),
    column("action", pa.string(), _doc(Action, "action"), role=TEXT),
    column("correct", pa.bool_(), _doc(Action, "correct")),
    column("source", pa.string(), _doc(Action, "source"), role=LABEL),
)

QUESTION_ID = "sha256(initial_instruction|)[:16]: the question id, the split key"

SESSIONS = table_schema(
    "One row per interactive session read from the sessions database",
    column("session_id", pa.int64(), _doc(Session, "session_id"), nullable=False, role=KEY),
    column("question_id", pa.string(), QUESTION_ID, nullable=False, role=KEY),
    column("initial_instruction", pa.string(), _doc(Session, "initial_instruction"), role=TEXT),
    column(
        "normalized_instruction",
        pa.string(),
        "invisible characters dropped, NFKC, casefolded, whitespace-collapsed",
        role=DERIVED,
    ),
    column("initial_code", pa.string(), _doc(Session, "initial_code"), role=TEXT),
    column("initial_exec_output", pa.string(), _doc(Session, "initial_exec_output"), role=TEXT),
    column("verified", pa.bool_(), "verified as captured (null: not marked, does not train)"),
    column("n_actions", pa.int32(), "Actions of this session in the actions table"),
    column("n_human_actions", pa.int32(), "Of which source = human"),
    column("n_ai_actions", pa.int32(), "Of which source = ai"),
    column("n_dataset_actions", pa.int32(), "Of which source = dataset"),
    column("n_rejected_actions", pa.int32(), "Actions of this session sent to the rejects file"),
    column("final_instruction", pa.string(), "Instruction after replaying every action", role=TEXT),
    column("final_code", pa.string(), "Code after replaying every action", role=TEXT),
    column(
        "final_exec_output", pa.string(), "Execution output after replaying every action", role=TEXT
    ),
    column(
        "source_url",
        pa.string(),
        "Database the row was read from (no user or password: host, port and database)",
        role=SOURCE,
    ),
    column(
        "checks", STRINGS, "rejected_actions: some actions were rejected, no replay", role=LABEL
    ),
)

ACTIONS = table_schema(
    "One row per action of a session, in action_id order within the session",
    column("action_uuid", pa.string(), _doc(Action, "action_uuid"), nullable=False, role=KEY),
    column("session_id", pa.int64(), "Key into sessions", nullable=False, role=KEY),
    column("question_id", pa.string(), QUESTION_ID + " (of the session)", nullable=False, role=KEY),
    column("action_id", pa.int32(), _doc(Action, "action_id"), nullable=False, role=KEY),
    column(
        "action_type",
        pa.string(),
        "input, set_instruction, set_code or set_exec_output",
        role=LABEL,
    ),
    column("action", pa.string(), _doc(Action, "action"), role=TEXT),
    column("correct", pa.bool_(), _doc(Action, "correct")),
    column("source", pa.string(), "human, ai or dataset", role=LABEL),
)

SESSION_TABLES: dict[str, pa.Schema] = {"sessions": SESSIONS, "actions": ACTIONS}
ROW_SCHEMAS: dict[str, pa.Schema] = {"sessions": SESSION_ROW, "actions": ACTION_ROW}
