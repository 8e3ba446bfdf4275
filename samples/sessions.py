"""Deterministic sample sessions: the shipped ``data/sessions/sample.sql`` and bench/test data
(``python -m samples.sessions`` rewrites the sample).

Sessions are pandas analyses of a few small datasets, built from hand-written steps (an
instruction, the code, the output it prints) and, for some steps, a realistic failure: code
marked ``correct = false`` whose output is a Python traceback, sometimes a hint typed by the
human, then the fixed code and its output. Sources mix as in a real environment: humans type
instructions and sometimes code, the model (``ai``) writes most code, and sessions imported
from a reference dataset (``dataset``) start from initial code and output. About one
session in five is not verified.

``generate`` builds a pool of session *templates* in Python (a few dozen, each exactly
``actions_per_session`` actions long), then assigns templates to sessions and repeats their
rows with vectorized ``take``: a million actions take a second, not a Python loop.
``write_sample`` writes a readable SQL dump (the DDL of ``schemas/sql/sqlite.sql`` plus
``INSERT``s with ``TRUE``/``FALSE`` literals, so it also runs in ``psql``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa

from builder.sessions.db import ddl
from schemas.sessions import ACTION_ROW, SESSION_ROW

SAMPLE_PATH = Path(__file__).resolve().parents[1] / "data" / "sessions" / "sample.sql"
SAMPLE_SESSIONS, SAMPLE_ACTIONS_PER_SESSION, SAMPLE_SEED = 30, 10, 4
MAX_TEMPLATES = 48
VERIFIED_SHARE = 0.8


@dataclass(frozen=True)
class Step:
    instruction: str
    code: str
    output: str
    wrong_code: str | None = None  # a failing attempt (correct = false)
    error: str | None = None  # its traceback
    hint: str | None = None  # what the human types after seeing the error


def _traceback(line: str, code_line: str, error: str) -> str:
    return (
        "Traceback (most recent call last):\n"
        f'  File "<cell>", line {line}, in <module>\n'
        f"    {code_line}\n"
        f"{error}"
    )


DATASETS: dict[str, list[Step]] = {
    "sales.csv": [
        Step(
            "Load sales.csv and show the first rows.",
            'import pandas as pd\n\ndf = pd.read_csv("sales.csv", parse_dates=["date"])\ndf.head()',
            "        date region    product  units  unit_price\n"
            "0 2024-01-03  North     Widget     12        4.50\n"
            "1 2024-01-03  South     Gadget      3       19.99\n"
            "2 2024-01-04   East     Widget      7        4.50\n"
            "3 2024-01-05   West  Doohickey      1       89.00\n"
            "4 2024-01-05  North     Gadget      5       19.99",
        ),
        Step(
            "Compute total revenue per region, largest first.",
            'df["revenue"] = df["units"] * df["unit_price"]\n'
            'df.groupby("region")["revenue"].sum().sort_values(ascending=False)',
            "region\nNorth    18234.55\nWest     15020.10\nSouth    12877.42\nEast      9310.75\n"
            "Name: revenue, dtype: float64",
            'df["revenue"] = df["units"] * df["unit_price"]\n'
            'df.groupby("Region")["revenue"].sum().sort_values(ascending=False)',
            _traceback(
                "2",
                'df.groupby("Region")["revenue"].sum().sort_values(ascending=False)',
                "KeyError: 'Region'",
            ),
            "The column names are lowercase: use region.",
        ),
        Step(
            "Show monthly revenue for the first half of 2024.",
            'monthly = df.set_index("date").resample("MS")["revenue"].sum()\nmonthly.head(6)',
            "date\n2024-01-01    9120.40\n2024-02-01    8733.15\n2024-03-01    9954.80\n"
            "2024-04-01    9410.05\n2024-05-01    9002.62\n2024-06-01    9218.90\n"
            "Freq: MS, Name: revenue, dtype: float64",
            'monthly = df.set_index("date").resample("MS")["Revenue"].sum()\nmonthly.head(6)',
            _traceback(
                "1",
                'monthly = df.set_index("date").resample("MS")["Revenue"].sum()',
                "KeyError: 'Column not found: Revenue'",
            ),
            None,
        ),
        Step(
            "Which product sold the most units?",
            'df.groupby("product")["units"].sum().idxmax()',
            "'Widget'",
        ),
    ],
    "titanic.csv": [
        Step(
            "Load titanic.csv and tell me how big it is.",
            'import pandas as pd\n\ndf = pd.read_csv("titanic.csv")\ndf.shape',
            "(891, 12)",
        ),
        Step(
            "What is the survival rate by passenger class?",
            'df.groupby("Pclass")["Survived"].mean().round(3)',
            "Pclass\n1    0.630\n2    0.473\n3    0.242\nName: Survived, dtype: float64",
            'df.groupby("class")["Survived"].mean().round(3)',
            _traceback("1", 'df.groupby("class")["Survived"].mean().round(3)', "KeyError: 'class'"),
            "It's Pclass, with a capital P.",
        ),
        Step(
            "How many ages are missing? Fill them with the median age for each sex.",
            'print(df["Age"].isna().sum())\n'
            'df["Age"] = df["Age"].fillna(df.groupby("Sex")["Age"].transform("median"))\n'
            'df["Age"].isna().sum()',
            "177\n0",
            'print(df["Age"].isna().sum())\n'
            'df["Age"] = df["Age"].fillna(df.groupby("Sex").median())',
            "177\n"
            + _traceback(
                "2",
                'df["Age"] = df["Age"].fillna(df.groupby("Sex").median())',
                "TypeError: agg function failed [how->median,dtype->object]",
            ),
            "Only take the median of Age, not of every column.",
        ),
        Step(
            "Summarize the fares.",
            'df["Fare"].describe().round(2)',
            "count    891.00\nmean      32.20\nstd       49.69\nmin        0.00\n25%        7.91\n"
            "50%       14.45\n75%       31.00\nmax      512.33\nName: Fare, dtype: float64",
        ),
    ],
    "weather.csv": [
        Step(
            "Load weather.csv and check the column types.",
            'import pandas as pd\n\ndf = pd.read_csv("weather.csv", parse_dates=["date"])\n'
            "df.dtypes",
            "date         datetime64[ns]\ncity                 object\n"
            "temp_c              float64\nprecip_mm           float64\ndtype: object",
        ),
        Step(
            "Find the hottest day for each city.",
            'df.loc[df.groupby("city")["temp_c"].idxmax(), ["city", "date", "temp_c"]]',
            "         city       date  temp_c\n212    Berlin 2024-07-31    34.1\n"
            "1307   Madrid 2024-08-10    41.3\n943      Oslo 2024-07-02    29.8",
        ),
        Step(
            "Add a 7-day rolling mean of the temperature for each city.",
            'df = df.sort_values(["city", "date"])\n'
            'df["temp_7d"] = df.groupby("city")["temp_c"].transform(\n'
            "    lambda s: s.rolling(7).mean()\n)\n"
            'df[["city", "date", "temp_c", "temp_7d"]].tail(3)',
            "      city       date  temp_c    temp_7d\n1093  Oslo 2024-12-29    -3.2  -1.842857\n"
            "1094  Oslo 2024-12-30    -4.0  -2.214286\n1095  Oslo 2024-12-31    -2.7  -2.400000",
            'df = df.sort_values(["city", "date"])\n'
            'df["temp_7d"] = df.groupby("city")["temp_c"].rolling(7).mean()',
            _traceback(
                "2",
                'df["temp_7d"] = df.groupby("city")["temp_c"].rolling(7).mean()',
                "TypeError: incompatible index of inserted column with frame index",
            ),
            "Use transform so the result keeps the frame's index.",
        ),
        Step(
            "Count the rainy days (more than 1 mm) per city.",
            '(df["precip_mm"] > 1).groupby(df["city"]).sum()',
            "city\nBerlin    104\nMadrid     41\nOslo      139\nName: precip_mm, dtype: int64",
        ),
    ],
    "employees.csv": [
        Step(
            "Load employees.csv and show its structure.",
            'import pandas as pd\n\ndf = pd.read_csv("employees.csv")\ndf.info()',
            "<class 'pandas.core.frame.DataFrame'>\nRangeIndex: 240 entries, 0 to 239\n"
            "Data columns (total 4 columns):\n #   Column      Non-Null Count  Dtype \n"
            "---  ------      --------------  ----- \n 0   name        240 non-null    object\n"
            " 1   department  240 non-null    object\n 2   salary      240 non-null    int64 \n"
            " 3   hire_date   240 non-null    object\ndtypes: int64(1), object(3)",
        ),
        Step(
            "Give me mean and median salary and the headcount per department.",
            'df.groupby("department")["salary"].agg(["mean", "median", "count"]).round(0)',
            "                mean    median  count\ndepartment                         \n"
            "Engineering  98250.0   96000.0     92\nMarketing    71400.0   70500.0     48\n"
            "Sales        64800.0   62000.0     71\nSupport      52100.0   51500.0     29",
            'df.groupby("department").agg({"salary": ["mean", "median"], "count"})',
            '  File "<cell>", line 1\n'
            '    df.groupby("department").agg({"salary": ["mean", "median"], "count"})\n'
            "                                                                      ^\n"
            "SyntaxError: ':' expected after dictionary key",
            None,
        ),
        Step(
            "Add each person's years of service as of 2024-12-31.",
            'df["hire_date"] = pd.to_datetime(df["hire_date"])\n'
            'df["years"] = ((pd.Timestamp("2024-12-31") - df["hire_date"]).dt.days / 365.25)'
            ".round(1)\n"
            'df["years"].describe().round(1)',
            "count    240.0\nmean       5.8\nstd        4.1\nmin        0.2\n25%        2.4\n"
            "50%        4.9\n75%        8.7\nmax       19.6\nName: years, dtype: float64",
            'df["years"] = ((pd.Timestamp("2024-12-31") - df["hire_date"]).dt.days / 365.25)'
            ".round(1)",
            _traceback(
                "1",
                'df["years"] = ((pd.Timestamp("2024-12-31") - df["hire_date"]).dt.days / 365.25)',
                "TypeError: unsupported operand type(s) for -: 'Timestamp' and 'str'",
            ),
            "hire_date is still text, convert it first.",
        ),
        Step(
            "Who are the three best-paid people?",
            'df.nlargest(3, "salary")[["name", "department", "salary"]]',
            "              name   department  salary\n17     Ada Lovelace  Engineering  182000\n"
            "201   Grace Hopper  Engineering  175500\n88     Alan Turing  Engineering  171000",
        ),
    ],
    "orders.parquet": [
        Step(
            "Load orders.parquet and count the orders by status.",
            'import pandas as pd\n\ndf = pd.read_parquet("orders.parquet")\n'
            'df["status"].value_counts()',
            "status\ncompleted    8412\nshipped       911\ncancelled     503\nreturned      174\n"
            "Name: count, dtype: int64",
        ),
        Step(
            "What is the average value of a completed order?",
            'round(df.loc[df["status"] == "completed", "amount"].mean(), 2)',
            "57.38",
            'round(df.query("status == completed")["amount"].mean(), 2)',
            _traceback(
                "1",
                'round(df.query("status == completed")["amount"].mean(), 2)',
                "pandas.errors.UndefinedVariableError: name 'completed' is not defined",
            ),
            "completed is a string value, quote it.",
        ),
        Step(
            "How many customers ordered more than once?",
            '(df.groupby("customer_id").size() > 1).sum()',
            "2318",
        ),
        Step(
            "Join customers.csv and total the completed revenue by country.",
            'customers = pd.read_csv("customers.csv")\n'
            'done = df[df["status"] == "completed"].merge(customers, on="customer_id")\n'
            'done.groupby("country")["amount"].sum().round(2).sort_values(ascending=False)',
            "country\nGermany    201455.10\nFrance     118302.44\nSpain       96210.87\n"
            "Italy       66711.02\nName: amount, dtype: float64",
            'customers = pd.read_csv("customers.csv")\n'
            'done = df[df["status"] == "completed"].merge(customers, on="customer")',
            _traceback(
                "2",
                'done = df[df["status"] == "completed"].merge(customers, on="customer")',
                "KeyError: 'customer'",
            ),
            "The key is customer_id in both files.",
        ),
    ],
}

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
