"""Test helpers for the sessions suite: a database to talk to, and row builders."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import psycopg

from builder.derive.sessions.replay import SYSTEM_PROMPT
from builder.sessions.db import init_database
from builder.sessions.read import read_source
from builder.sessions.validate import Validated, validate_source
from schemas.sessions import ACTION_ROW, SESSION_ROW

PASSWORD = "hunter2"
Kind = Literal["strict", "loose", "untyped"]

_TYPES = {
    "session_id": "INTEGER",
    "action_id": "INTEGER",
    "verified": "BOOLEAN",
    "correct": "BOOLEAN",
}


def _ddl(kind: Kind, dialect: str) -> list[str]:
    """Tables without any constraint: declared types (loose) or none at all (untyped)."""

    def column(name: str) -> str:
        if kind == "loose":
            return f"{name} {_TYPES.get(name, 'TEXT')}"
        return name if dialect == "sqlite" else f"{name} TEXT"  # SQLite: no type affinity

    return [
        f"CREATE TABLE sessions ({', '.join(column(c) for c in SESSION_ROW.names)})",
        f"CREATE TABLE actions ({', '.join(column(c) for c in ACTION_ROW.names)})",
    ]


@dataclass
class Backend:
    dialect: Literal["sqlite", "postgresql"]
    url: str
    dsn: str  # for the test's own setup statements (sqlite3 path or libpq URL)

    def execute(self, *statements: str) -> None:
        if self.dialect == "sqlite":
            con = sqlite3.connect(self.dsn)
            with con:
                for statement in statements:
                    con.execute(statement)
            con.close()
            return
        with psycopg.connect(self.dsn) as conn:
            for statement in statements:
                conn.execute(statement)

    def create(self, kind: Kind = "loose") -> None:
        if kind == "strict":
            init_database(self.url)
        else:
            self.execute(*_ddl(kind, self.dialect))

    def insert(self, table: str, rows: Sequence[Sequence[Any]]) -> None:
        if not rows:
            return
        width = len(rows[0])
        if self.dialect == "sqlite":
            con = sqlite3.connect(self.dsn)
            with con:
                con.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * width)})", rows)
            con.close()
            return
        with psycopg.connect(self.dsn) as conn, conn.cursor() as cur:
            cur.executemany(f"INSERT INTO {table} VALUES ({', '.join(['%s'] * width)})", rows)

    def load_script(self, script: str) -> None:
        if self.dialect == "sqlite":
            con = sqlite3.connect(self.dsn)
            con.executescript(script)
            con.close()
            return
        with psycopg.connect(self.dsn) as conn:
            conn.execute(script)  # no parameters: several statements in one call


def session(
    sid: Any,
    instruction: Any = "Load data.csv.",
    code: Any = None,
    output: Any = None,
    verified: Any = True,
) -> tuple[Any, ...]:
    return (sid, instruction, code, output, verified)


def action(
    uuid_: Any,
    sid: Any,
    aid: Any,
    type_: Any = "input",
    text: Any = "hello",
    correct: Any = None,
    source: Any = "human",
) -> tuple[Any, ...]:
    return (uuid_, sid, aid, type_, text, correct, source)


# A hand-written session (1) and three that must not train (2, 3: unverified; 4: nothing
# trainable), shared by the replay and self-correction tests.
INSTRUCTION = "Load data.csv and count the rows."
ERROR = (
    "Traceback (most recent call last):\n  File \"<cell>\", line 1, in <module>\nKeyError: 'Price'"
)
# Inserted out of order, with gaps in action_id: replay must order by action_id.
ACTIONS = [
    action("u5", 1, 50, "set_exec_output", ERROR, None, "ai"),
    action("u1", 1, 10, "set_code", "df = pd.read_csv('data.csv')\nlen(df)", True, "ai"),
    action("u8", 1, 80, "set_exec_output", "19.5", None, "human"),
    action("u3", 1, 30, "input", "Now the mean price.", None, "human"),
    action("u2", 1, 20, "set_exec_output", "120", None, "ai"),
    action("u7", 1, 70, "set_code", "df['price'].mean()", None, "human"),
    action("u4", 1, 40, "set_code", "df['Price'].mean()", False, "ai"),
    action("u6", 1, 60, "set_instruction", "Mean of the price column.", None, "dataset"),
]


def expected_messages(fix_weight: int, merged: bool = False) -> list[dict[str, object]]:
    """Sessions carry no tool calls: those fields of the ``sft`` messages are null. With
    ``merged`` (``sft``), adjacent messages of one role and weight are one message."""
    tools = {"tool_calls": None, "tool_call_id": None, "name": None}
    messages = _messages(fix_weight)
    if merged:
        out: list[dict[str, object]] = []
        for m in messages:
            last = out[-1] if out else None
            if last and (last["role"], last["weight"]) == (m["role"], m["weight"]) != (
                "system",
                None,
            ):
                last["content"] = f"{last['content']}\n\n{m['content']}"
            else:
                out.append(dict(m))
        messages = out
    return [tools | m for m in messages]


def _messages(fix_weight: int) -> list[dict[str, object]]:
    return [
        {"role": "system", "content": SYSTEM_PROMPT, "weight": None},
        {
            "role": "user",
            "content": INSTRUCTION + "\n\nCurrent code:\n```python\nimport pandas as pd\n```",
            "weight": None,
        },
        {
            "role": "assistant",
            "content": "```python\ndf = pd.read_csv('data.csv')\nlen(df)\n```",
            "weight": 1,
        },
        {"role": "user", "content": "[stdout]:\n120", "weight": None},
        {"role": "user", "content": "Now the mean price.", "weight": None},
        {"role": "assistant", "content": "```python\ndf['Price'].mean()\n```", "weight": 0},
        {"role": "user", "content": f"[stdout]:\n{ERROR}", "weight": None},
        {"role": "user", "content": "New instruction:\nMean of the price column.", "weight": None},
        {
            "role": "assistant",
            "content": "```python\ndf['price'].mean()\n```",
            "weight": fix_weight,
        },
        {"role": "user", "content": "[stdout]:\n19.5", "weight": None},
    ]


def load(backend: Backend) -> Validated:
    backend.create("strict")
    backend.insert(
        "sessions",
        [
            session(1, INSTRUCTION, "import pandas as pd", None, True),
            session(2, "Unverified.", None, None, False),
            session(3, "Not marked.", None, None, None),
            session(4, "Only failures.", None, "  a\n0 1", True),
        ],
    )
    backend.insert(
        "actions",
        [
            *ACTIONS,
            action("n1", 2, 1, "set_code", "x = 1", True, "ai"),
            action("n2", 3, 1, "set_code", "x = 2", True, "ai"),
            action("f1", 4, 1, "set_code", "x = ", False, "ai"),
        ],
    )
    return validate_source(read_source(backend.url))
