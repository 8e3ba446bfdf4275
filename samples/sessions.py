"""Deterministic sample sessions: the shipped ``data/sessions/sample.sql`` and bench/test data
(``python -m samples.sessions`` rewrites the sample).

Sessions are pandas analyses of a few small datasets, built from hand-written steps
(``samples.session_steps``: an instruction, the code, the output it prints) and, for some
steps, a realistic failure: code marked ``correct = false`` whose output is a Python
traceback, sometimes a hint typed by the human, then the fixed code and its output. Sources
mix as in a real environment: humans type instructions and sometimes code, the model
(``ai``) writes most code, and sessions imported from a reference dataset (``dataset``)
start from initial code and output. About one session in five is not verified.

``generate`` builds a pool of session *templates* in Python (a few dozen, each exactly
``actions_per_session`` actions long), then assigns templates to sessions and repeats their
rows with vectorized ``take``: a million actions take a second, not a Python loop.
``write_sample`` writes a readable SQL dump (the DDL of ``schemas/sql/sqlite.sql`` plus
``INSERT``s with ``TRUE``/``FALSE`` literals, so it also runs in ``psql``).
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa

from builder.sessions.db import ddl
from samples.session_steps import DATASETS
from schemas.sessions import ACTION_ROW, SESSION_ROW

SAMPLE_PATH = Path(__file__).resolve().parents[1] / "data" / "sessions" / "sample.sql"
SAMPLE_SESSIONS, SAMPLE_ACTIONS_PER_SESSION, SAMPLE_SEED = 30, 10, 4
MAX_TEMPLATES = 48
VERIFIED_SHARE = 0.8


# One action: (action_type, action, correct, source).
ActionRow = tuple[str, str, bool | None, str]


def _code_author(rng: random.Random, imported: bool) -> tuple[bool | None, str]:
    """(correct, source) of a working set_code: the model labels 70% of its code correct;
    humans leave it unlabeled; imported reference code is correct."""
    if imported:
        return True, "dataset"
    if rng.random() < 0.15:
        return None, "human"
    return (True if rng.random() < 0.7 else None), "ai"


def _session_template(
    rng: random.Random, dataset: str, length: int
) -> tuple[tuple[str, str | None, str | None], list[ActionRow]]:
    """(initial instruction, code, output) and exactly ``length`` actions of one session.

    Steps repeat in a cycle until the session is long enough; the last one may be cut short.
    Every step but the first starts with the human's instruction (typed as ``input``, or as
    ``set_instruction`` replacing the current one).
    """
    load, *analysis = DATASETS[dataset]
    imported = rng.random() < 0.2  # a session imported from a reference dataset
    order = rng.sample(analysis, len(analysis))
    if imported:
        start = (order[0].instruction, load.code, load.output)
        steps = order
    else:
        start = (load.instruction, None, None)
        steps = [load, *order]
    instructor = "dataset" if imported else "human"
    actions: list[ActionRow] = []
    while len(actions) < length:
        for step in steps:
            if actions:
                typed = "set_instruction" if rng.random() < 0.3 else "input"
                actions.append((typed, step.instruction, None, instructor))
            if step.wrong_code is not None and not imported and rng.random() < 0.6:
                actions.append(("set_code", step.wrong_code, False, "ai"))
                actions.append(("set_exec_output", step.error or "", None, "ai"))
                if step.hint is not None and rng.random() < 0.5:
                    actions.append(("input", step.hint, None, "human"))
                correct, source = (True if rng.random() < 0.8 else None), "ai"
            else:
                correct, source = _code_author(rng, imported)
            actions.append(("set_code", step.code, correct, source))
            actions.append(("set_exec_output", step.output, None, source))
    return start, actions[:length]


def _uuids(rng: np.random.Generator, n: int) -> pl.Series:
    """``n`` random version-4-shaped UUID strings, vectorized (hex of random bytes)."""
    raw = rng.integers(0, 256, size=(n, 16), dtype=np.uint8)
    raw[:, 6] = (raw[:, 6] & 0x0F) | 0x40
    raw[:, 8] = (raw[:, 8] & 0x3F) | 0x80
    fixed = pa.FixedSizeBinaryArray.from_buffers(pa.binary(16), n, [None, pa.py_buffer(raw)])
    frame = pl.DataFrame({"h": pl.from_arrow(fixed.cast(pa.binary())).bin.encode("hex")})
    spans = ((0, 8), (8, 4), (12, 4), (16, 4), (20, 12))
    parts = [pl.col("h").str.slice(offset, size) for offset, size in spans]
    return frame.select(pl.concat_str(parts, separator="-").alias("action_uuid")).to_series()


def generate(n_sessions: int, actions_per_session: int, seed: int = 0) -> tuple[pa.Table, pa.Table]:
    """``(sessions, actions)`` in the database row schemas, deterministic for a seed.

    Session ids are 1..n; action ids 1..actions_per_session within each session.
    """
    rng = random.Random(seed)
    datasets = list(DATASETS)
    n_templates = max(1, min(n_sessions, MAX_TEMPLATES))
    starts, rows = [], []
    for t in range(n_templates):
        start, actions = _session_template(rng, datasets[t % len(datasets)], actions_per_session)
        starts.append(start)
        rows += actions
    template_actions = pl.DataFrame(
        rows,
        schema={
            "action_type": pl.String,
            "action": pl.String,
            "correct": pl.Boolean,
            "source": pl.String,
        },
        orient="row",
    )
    template = np.arange(n_sessions) % n_templates
    instruction, code, output = (pl.Series(x, dtype=pl.String) for x in zip(*starts, strict=True))
    nrng = np.random.default_rng(seed)
    sessions = pl.DataFrame(
        {
            "session_id": np.arange(1, n_sessions + 1, dtype=np.int64),
            "initial_instruction": instruction.gather(template),
            "initial_code": code.gather(template),
            "initial_exec_output": output.gather(template),
            "verified": nrng.random(n_sessions) < VERIFIED_SHARE,
        }
    )
    per = actions_per_session
    take = (template[:, None] * per + np.arange(per)[None, :]).ravel()
    actions = template_actions[take].with_columns(
        _uuids(nrng, n_sessions * per),
        pl.Series("session_id", np.repeat(sessions["session_id"].to_numpy(), per)),
        pl.Series("action_id", np.tile(np.arange(1, per + 1, dtype=np.int64), n_sessions)),
    )
    return (
        sessions.to_arrow().cast(SESSION_ROW),
        actions.select(ACTION_ROW.names).to_arrow().cast(ACTION_ROW),
    )


def sql_literal(value: object) -> str:
    """An SQL literal valid in SQLite and PostgreSQL."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    return "'" + str(value).replace("'", "''") + "'"


def _inserts(table: str, data: pa.Table) -> str:
    names = ", ".join(data.schema.names)
    rows = ",\n".join(
        "  (" + ", ".join(sql_literal(v) for v in row.values()) + ")" for row in data.to_pylist()
    )
    return f"INSERT INTO {table} ({names}) VALUES\n{rows};\n"


def dump_sql(sessions: pa.Table, actions: pa.Table) -> str:
    """A readable SQL dump of both tables: DDL, then one ``INSERT`` per table."""
    header = (
        "-- Sample sessions database: generated by samples.sessions.write_sample, do not\n"
        "-- edit by hand. The build loads it into a temporary SQLite database\n"
        "-- (sqlite:///data/sessions/sample.sql); it also loads with sqlite3 or psql.\n"
    )
    body = _inserts("sessions", sessions) + "\n" + _inserts("actions", actions)
    return f"{header}\nBEGIN;\n\n{ddl('sqlite')}\n{body}\nCOMMIT;\n"


def write_sample(path: Path = SAMPLE_PATH) -> Path:
    """Write the shipped sample dump (30 sessions, 300 actions); same bytes on every run."""
    sessions, actions = generate(SAMPLE_SESSIONS, SAMPLE_ACTIONS_PER_SESSION, SAMPLE_SEED)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dump_sql(sessions, actions), encoding="utf-8")
    return path


if __name__ == "__main__":
    print(write_sample())
