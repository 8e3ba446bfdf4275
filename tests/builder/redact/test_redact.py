"""Secret redaction (builder.redact) against the planted-secrets corpus in tests/data/secrets.

Each corpus case is injected into one field of a generated episode (code, stdout, stderr,
reasoning, hook values, conversation messages, the system prompt, unknown fields, submission
metadata); the episodes go through the real ingest into staging tables, which are redacted
in place. Then: no planted secret is left anywhere, the counts by kind are exactly the
corpus's, every look-alike is untouched, and no id, hash or other non-text column changed.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import sqlite3
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from builder.config import BuildConfig
from builder.contract.hashing import (
    canonical_json,
    normalize_question_text,
    question_id,
    value_hash,
)
from builder.derive.splits import SplitConfig, split_of
from builder.export.buckets import PARTITION_BATCH_ROWS
from builder.ingest.files import ingest_files
from builder.ingest.rejects import RejectsWriter
from builder.ingest.staging import segment_name
from builder.pipeline import build
from builder.redact import REDACTED_COLUMNS, TableRedactor, redact_strings
from builder.redact.options import RedactionOptions
from builder.redact.patterns import PATTERN_DOCS, looks_secret
from builder.redact.split_key import split_key_texts
from samples.episodes import generate_episode
from samples.files import write_jsonl
from schemas.tables import JSON, TABLES, TEXT, role_of

ROOT = Path(__file__).resolve().parents[3]
CORPUS = Path(__file__).resolve().parents[2] / "data" / "secrets" / "corpus.json"
KINDS = tuple(RedactionOptions().kinds)


@dataclass
class Case:
    field: str
    text: str
    expect: Counter[str] = field(default_factory=Counter)
    variable: str | None = None
    keep: tuple[str, ...] = ()
    context: str = ""  # redacted only thanks to another text or field (see the corpus)


@dataclass
class Corpus:
    secrets: dict[str, str]  # name -> value
    kinds: dict[str, str]  # name -> kind
    cases: list[Case]
    lookalikes: list[Case]

    @property
    def probes(self) -> list[str]:
        """Every planted secret, PEM bodies line by line (real or JSON-escaped newlines)."""
        return [p for v in self.secrets.values() for p in re.split(r"\n|\\n", v) if p]

    @property
    def expected(self) -> dict[str, int]:
        total: Counter[str] = Counter()
        for case in self.cases:
            total.update(case.expect)
        return {kind: total.get(kind, 0) for kind in KINDS}


def load_corpus() -> Corpus:
    """Secrets are stored in two parts each (so secret scanners leave the file alone) and
    texts name them as ``<<name>>`` (``<<name:json>>``: JSON-escaped)."""
    raw = json.loads(CORPUS.read_text(encoding="utf-8"))
    secrets = {name: "".join(s["parts"]) for name, s in raw["secrets"].items()}
    fragments = {name: "".join(parts) for name, parts in raw["fragments"].items()}
    values = secrets | fragments

    def fill(text: str) -> str:
        def one(m: re.Match[str]) -> str:
            value = values[m[1]]
            return json.dumps(value)[1:-1] if m[2] == "json" else value

        return re.sub(r"<<(\w+)(?::(json))?>>", one, text)

    def case(item: dict[str, Any]) -> Case:
        return Case(
            item["field"],
            fill(item["text"]),
            Counter(item.get("expect", {})),
            item.get("variable"),
            tuple(item.get("keep", ())),
            item.get("context", ""),
        )

    kinds = {name: s["kind"] for name, s in raw["secrets"].items()}
    return Corpus(
        secrets, kinds, [case(c) for c in raw["cases"]], [case(c) for c in raw["lookalikes"]]
    )


CORPUS_DATA = load_corpus()


# --------------------------------------------------------------------------- episodes


def inject(episode: dict[str, Any], case: Case) -> None:
    """Put ``case.text`` into the named field of the episode's first gold turn (or episode)."""
    gold = episode["teacher_gold_trace"]
    turn = gold["turns"][0]
    conversation = episode.setdefault("conversation_for_sft", {"messages": []})
    match case.field:
        case "code" | "reasoning":
            turn[case.field] = case.text
        case "stdout" | "stderr":
            turn["execution"][case.field] = case.text
        case "hook_value":
            value = json.loads(case.text)
            turn["execution"]["hooks"].append(
                {
                    "code_line": f"{case.variable} = load_config()",
                    "variable_name": case.variable,
                    "value_hash": value_hash(value),
                    "description": "planted",
                    "depends_on": [],
                    "value": value,
                }
            )
        case "message":
            conversation["messages"].append({"role": "user", "content": case.text})
        case "message_parts":
            conversation["messages"].append({"role": "user", "content": json.loads(case.text)})
        case "system_prompt":
            conversation["system_prompt"] = case.text
        case "extra_field":
            episode["capture_debug"] = case.text
        case "submission_metadata":
            gold["submission_metadata"].update(json.loads(case.text))
        case _:
            raise AssertionError(f"unknown corpus field {case.field}")


def stored_form(case: Case) -> str:
    """How a look-alike reads in its table column."""
    if case.field == "hook_value":
        return canonical_json(json.loads(case.text))
    return case.text


def corpus_episodes() -> list[dict[str, Any]]:
    episodes = []
    for i, case in enumerate(CORPUS_DATA.cases + CORPUS_DATA.lookalikes):
        episode = generate_episode(random.Random(f"redact:{i}"), i, form="turns")
        inject(episode, case)
        episodes.append(episode)
    # A question whose text holds a secret: its id stays that of the original text.
    episode = generate_episode(random.Random("redact:question"), 999, form="turns")
    q = episode["question"]
    q["question_text"] += " (creds: " + CORPUS_DATA.secrets["aws_key"] + ")"
    q["id"] = question_id(q["question_text"], q.get("hint"))
    episodes.append(episode)
    return episodes


QUESTION_EXPECT = Counter({"aws_access_key": 1})


def redact_tables(
    tables_dir: Path, options: RedactionOptions, batch_rows: int = PARTITION_BATCH_ROWS
) -> dict[str, int]:
    """The build's redaction of staging tables (``TableRedactor``, batch by batch as the
    partition pass reads them), written back in place so the tests can read the result; a
    table the redactor returns unchanged is not rewritten."""
    redactor = TableRedactor(tables_dir, options)
    for name in REDACTED_COLUMNS:
        path = tables_dir / f"{name}.parquet"
        source = pq.ParquetFile(path)
        schema = source.schema_arrow
        pieces, changed = [], False
        for batch in source.iter_batches(batch_size=batch_rows):
            frame = pl.from_arrow(batch)
            assert isinstance(frame, pl.DataFrame)
            redacted = redactor.frame(name, frame)
            changed |= redacted is not frame
            pieces.append(redacted.to_arrow().cast(schema))
        source.close()
        if changed:
            pq.write_table(pa.concat_tables(pieces), path)
    return redactor.counts()


def write_staging(tmp: Path, batch_lines: int = 2048) -> tuple[Path, Path]:
    """The corpus episodes as a JSONL input and its staging tables (real ingest)."""
    source = tmp / "episodes.jsonl"
    write_jsonl(source, corpus_episodes())
    staging = tmp / "tables"
    config = BuildConfig(episodes=(str(source),), batch_lines=batch_lines)
    result = ingest_files(config, staging, RejectsWriter(None))
    assert result.rejected == 0
    return source, staging / segment_name(1)  # the file's segment: every episode row


def text_values(path: Path) -> list[str]:
    """Every string in a Parquet file (list elements and struct fields included)."""
    table = pq.read_table(path)
    out: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)

    for column in table.columns:
        for value in column.to_pylist():
            walk(value)
    return out


def folder_text(folder: Path) -> str:
    parts = []
    for path in sorted(folder.rglob("*")):
        if path.suffix == ".parquet":
            parts += text_values(path)
        elif path.is_file():
            parts.append(path.read_text(encoding="utf-8", errors="replace"))
    return "\n".join(parts)


def untouched_columns(staging: Path) -> dict[str, pa.Table]:
    out = {}
    for name in TABLES:
        table = pq.read_table(staging / f"{name}.parquet")
        kept = [c for c in table.column_names if c not in REDACTED_COLUMNS[name]]
        kept = [c for c in kept if c != "normalized_text"]
        out[name] = table.select(kept)
    return out


@dataclass
class Redacted:
    before: Path
    after: Path
    counts: dict[str, int]


@pytest.fixture(scope="module")
def redacted(tmp_path_factory: pytest.TempPathFactory) -> Redacted:
    tmp = tmp_path_factory.mktemp("redact")
    _, staging = write_staging(tmp)
    before = tmp / "before"
    shutil.copytree(staging, before)
    counts = redact_tables(staging, RedactionOptions())
    return Redacted(before, staging, counts)


# ------------------------------------------------------------------------------ tests


def test_redacted_columns_are_the_text_and_json_roles() -> None:
    for name, schema in TABLES.items():
        redacted = set(REDACTED_COLUMNS[name])
        assert redacted == {f.name for f in schema if role_of(f) in (TEXT, JSON)}, name
        assert not any(c.endswith(("_id", "_hash")) for c in redacted), name


def test_corpus_covers_every_builtin_kind() -> None:
    assert set(CORPUS_DATA.kinds.values()) == set(KINDS) == set(PATTERN_DOCS)
    assert {c.field for c in CORPUS_DATA.cases} >= {
        "code",
        "stdout",
        "stderr",
        "reasoning",
        "hook_value",
        "message",
        "message_parts",
        "system_prompt",
    }


@pytest.mark.parametrize("case", CORPUS_DATA.cases, ids=lambda c: f"{c.field}-{min(c.expect)}")
def test_each_case_alone(case: Case) -> None:
    """Each case as a loose string (hook values as stored), counted exactly."""
    text = stored_form(case)
    [out], counts = redact_strings([text], RedactionOptions())
    if case.context:
        assert out == text and not any(counts.values())
        return
    assert {k: n for k, n in counts.items() if n} == dict(case.expect)
    for probe in CORPUS_DATA.probes:
        assert probe not in out
    for kept in case.keep:
        assert kept in out
    for kind in case.expect:
        assert f"<REDACTED:{kind}>" in out


@pytest.mark.parametrize("case", CORPUS_DATA.lookalikes, ids=lambda c: c.text[:30])
def test_lookalike_alone_is_untouched(case: Case) -> None:
    text = stored_form(case)
    [out], counts = redact_strings([text], RedactionOptions())
    assert out == text
    assert not any(counts.values())


def test_counts_by_kind_are_exact(redacted: Redacted) -> None:
    expected = Counter(CORPUS_DATA.expected)
    expected.update(QUESTION_EXPECT)
    assert redacted.counts == {kind: expected[kind] for kind in KINDS}
    assert list(redacted.counts) == list(KINDS)


def test_no_planted_secret_remains(redacted: Redacted) -> None:
    before, after = folder_text(redacted.before), folder_text(redacted.after)
    for probe in CORPUS_DATA.probes:
        assert probe in before  # planted where the test meant to
        assert probe not in after, probe
    for kind in KINDS:
        assert f"<REDACTED:{kind}>" in after


def test_context_is_kept(redacted: Redacted) -> None:
    after = folder_text(redacted.after)
    for case in CORPUS_DATA.cases:
        for kept in case.keep:
            assert kept in after


def test_lookalikes_untouched(redacted: Redacted) -> None:
    values = set()
    for name in TABLES:
        values.update(text_values(redacted.after / f"{name}.parquet"))
    for case in CORPUS_DATA.lookalikes:
        assert stored_form(case) in values, case.text


def test_hash_id_and_other_columns_unchanged(redacted: Redacted) -> None:
    before, after = untouched_columns(redacted.before), untouched_columns(redacted.after)
    for name in TABLES:
        assert after[name].equals(before[name]), name
        schema_before = pq.read_schema(redacted.before / f"{name}.parquet")
        assert pq.read_schema(redacted.after / f"{name}.parquet").equals(
            schema_before, check_metadata=True
        )


def test_question_ids_stay_and_normalized_text_follows(redacted: Redacted) -> None:
    questions = pl.read_parquet(redacted.after / "questions.parquet")
    redacted_rows = questions.filter(pl.col("question_text").str.contains("<REDACTED:"))
    assert redacted_rows.height == 1
    row = redacted_rows.row(0, named=True)
    assert row["normalized_text"] == normalize_question_text(row["question_text"])
    original = pl.read_parquet(redacted.before / "questions.parquet")
    assert set(original["question_id"]) == set(questions["question_id"])
    others = questions.filter(~pl.col("question_text").str.contains("<REDACTED:"))
    assert others["normalized_text"].to_list() == (
        original.filter(pl.col("question_id").is_in(others["question_id"].implode()))[
            "normalized_text"
        ].to_list()
    )


def test_json_columns_stay_valid_json(redacted: Redacted) -> None:
    json_columns = {
        "hooks": ("value",),
        "traces": ("submission_metadata", "final_answer"),
        "episodes": ("extra_fields",),
        "messages": ("content_parts",),
    }
    for name, columns in json_columns.items():
        frame = pl.read_parquet(redacted.after / f"{name}.parquet")
        for column in columns:
            for text in frame[column].drop_nulls():
                json.loads(text)


def test_untouched_tables_are_byte_identical(redacted: Redacted) -> None:
    # No corpus case lands in corrections: the redactor hands its frames back unchanged.
    name = "corrections.parquet"
    assert (redacted.after / name).read_bytes() == (redacted.before / name).read_bytes()


def test_second_pass_finds_nothing(redacted: Redacted, tmp_path: Path) -> None:
    again = tmp_path / "again"
    shutil.copytree(redacted.after, again)
    counts = redact_tables(again, RedactionOptions())
    assert not any(counts.values())
    for name in TABLES:
        path = f"{name}.parquet"
        assert (again / path).read_bytes() == (redacted.after / path).read_bytes()


def test_many_row_groups_give_the_same_rows(redacted: Redacted, tmp_path: Path) -> None:
    """Ingest flushes every few lines and the redactor sees a few rows at a time: the rows
    and counts are those of a one-pass redaction."""
    _, staging = write_staging(tmp_path, batch_lines=4)
    assert pq.ParquetFile(staging / "turns.parquet").num_row_groups > 5
    assert redact_tables(staging, RedactionOptions(), batch_rows=7) == redacted.counts
    for name in TABLES:
        many = pq.read_table(staging / f"{name}.parquet")
        one = pq.read_table(redacted.after / f"{name}.parquet")
        keep = [c for c in one.column_names if c != "source_file"]  # another input path
        assert many.select(keep).equals(one.select(keep)), name


def test_disabled_touches_nothing(tmp_path: Path) -> None:
    _, staging = write_staging(tmp_path)
    before = {p.name: p.read_bytes() for p in staging.iterdir()}
    assert redact_tables(staging, RedactionOptions(enabled=False)) == {}
    assert {p.name: p.read_bytes() for p in staging.iterdir()} == before


def test_allowlist_and_extra_patterns() -> None:
    example = "AKIA" + "IOSFODNN7EXAMPLE"  # the AWS documentation's example key
    token = "itk_" + "0123456789abcdef" * 2
    texts = [f"key {example} and {CORPUS_DATA.secrets['aws_key']}", f"internal {token}"]
    out, counts = redact_strings(texts, RedactionOptions())
    assert example not in out[0] and token in out[1]
    assert counts["aws_access_key"] == 2
    options = RedactionOptions(
        extra_patterns={"internal_token": r"\bitk_[0-9a-f]{32}\b"}, allowlist=(example,)
    )
    out, counts = redact_strings(texts, options)
    assert out == [
        f"key {example} and <REDACTED:aws_access_key>",
        "internal <REDACTED:internal_token>",
    ]
    assert counts["aws_access_key"] == 1 and counts["internal_token"] == 1
    assert list(counts)[-1] == "secret_assignment"


def test_allowlisted_assignment_value_is_kept() -> None:
    value = "Xk29fLmQ83nVb7Tz9qPw"
    text = f'api_key = "{value}"'
    assert redact_strings([text], RedactionOptions())[0] == [
        'api_key = "<REDACTED:secret_assignment>"'
    ]
    assert redact_strings([text], RedactionOptions(allowlist=(value,)))[0] == [text]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"extra_patterns": {"Bad Kind": "x"}}, "must match"),
        ({"extra_patterns": {"bad": "(unclosed"}}, "invalid regex"),
        ({"extra_patterns": {"bad": "(?=lookahead)x"}}, "invalid regex"),
        ({"extra_patterns": {"empty": "x*"}}, "empty string"),
        ({"allowlist": ("",)}, "non-empty"),
    ],
)
def test_invalid_options(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RedactionOptions(**options)


@pytest.mark.parametrize(
    ("value", "secret"),
    [
        ("Xk29fLmQ83nVb7Tz", True),
        ("0123456789abcdef0123456789abcdef", True),
        ("Tr0ub4dor&3horse!", True),
        ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.abcDEF123", True),
        ("Xk29fLmQ83nVb7T", False),  # 15 characters
        ("settings.SECRET_KEY_VALUE2", False),  # a dotted name
        ("tokenizer_v2_config_path", False),  # lower case and digits only, short
        ("YOUR_API_KEY_HERE_123", False),
        ("1234567890123456", False),
        ("aaaaaaaaaaaaaaaaaaaaaaaaaAAAA1111", False),  # low entropy
    ],
)
def test_looks_secret(value: str, secret: bool) -> None:
    assert looks_secret(value) is secret


ASSIGNED = "Xk29fLmQ83nVb7Tz9qPw"


def test_nulls_and_empty_lists_survive(tmp_path: Path) -> None:
    path = tmp_path / "hooks.parquet"
    schema = TABLES["hooks"]
    rows = [
        {"trace_id": "t", "hook_index": 0, "episode_id": "e", "depends_on": []},
        {"trace_id": "t", "hook_index": 1, "episode_id": "e", "depends_on": None},
        {
            "trace_id": "t",
            "hook_index": 2,
            "episode_id": "e",
            "name": "x",
            "code_line": f'api_key = "{ASSIGNED}"',
            "depends_on": ["a", CORPUS_DATA.secrets["ghp"], None, ASSIGNED],
        },
    ]
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
    for name in TABLES:
        if name != "hooks":
            pq.write_table(schema_table(name), tmp_path / f"{name}.parquet")
    written = pq.read_schema(path)
    counts = redact_tables(tmp_path, RedactionOptions())
    assert counts["github_token"] == 1
    assert counts["secret_assignment"] == 2
    after = pq.read_table(path)
    assert after.schema.equals(written, check_metadata=True)
    assert after.column("depends_on").to_pylist() == [
        [],
        None,
        ["a", "<REDACTED:github_token>", None, "<REDACTED:secret_assignment>"],
    ]
    assert after.column("code_line").to_pylist()[2] == 'api_key = "<REDACTED:secret_assignment>"'


def schema_table(name: str) -> pa.Table:
    return TABLES[name].empty_table()


def test_full_build_folder_has_no_planted_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real build, which redacts as it cuts the staging tables into buckets: no planted
    secret anywhere in the published folder, derived configs included, and the manifest
    counts every replacement the table pass counts."""
    source, _ = write_staging(tmp_path / "input")
    out = tmp_path / "dataset"
    config = replace(
        BuildConfig(),
        episodes=(str(source),),
        out=out,
        rejects=tmp_path / "rejects.jsonl",
        max_reject_ratio=1.0,
    )
    manifest = build(config).manifest
    text = folder_text(out)
    for probe in CORPUS_DATA.probes:
        assert probe not in text, probe
    for case in CORPUS_DATA.lookalikes:
        if case.field in {"code", "stdout"}:
            assert case.text in text
    sft = pl.read_parquet(out / "sft" / "*.parquet")
    contents = sft.select(pl.col("messages").explode().struct.field("content")).to_series()
    assert contents.str.contains("<REDACTED:").any()
    staging = tmp_path / "staging"
    ingest_files(config, staging, RejectsWriter(tmp_path / "again.jsonl"))
    counts = redact_tables(staging / segment_name(1), RedactionOptions())
    assert manifest["redaction"]["by_kind"] == counts


def test_a_questions_split_does_not_depend_on_what_redaction_found(tmp_path: Path) -> None:
    """The split is that of the question's text as captured. A value assigned to a secret
    name in a later file is redacted wherever it appears after that, so one question asked
    with two hints had two published texts, and its rows parted across splits (and moved
    between releases as files were added); a session asking it did too, and its published
    ``normalized_instruction`` kept the secret."""
    rng = random.Random(3)
    value, other = "Zq8mXr2vLp4nTw6bYc1dKf3h", "Rt5yUi8oPa2sDf4gHj6kLz9x"
    token = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh"  # a pattern's: redacted everywhere
    text = f"Log in with {token}. Does the id {value} appear in the data? How many rows?"
    base = generate_episode(rng, 0)

    def asking(hint: str | None, episode_id: str) -> dict[str, Any]:
        episode = json.loads(json.dumps(base))
        episode["episode_id"] = episode_id
        episode["question"].update(question_text=text, hint=hint, id=question_id(text, hint))
        return episode

    secret = generate_episode(rng, 1)
    secret["conversation_for_sft"]["system_prompt"] = f'api_key = "{value}"'
    write_jsonl(tmp_path / "a.jsonl", [asking("hint one", "ep-1")])
    again = asking("hint one", "ep-3")  # its question's row was published by a.jsonl
    write_jsonl(tmp_path / "b.jsonl", [secret, asking("hint two", "ep-2"), again])
    sessions = tmp_path / "s.db"
    con = sqlite3.connect(sessions)
    with con:
        con.executescript((ROOT / "schemas" / "sql" / "sqlite.sql").read_text())
        assigned = f'secret_token = "{other}"'  # in one table, printed bare in the other
        con.execute("INSERT INTO sessions VALUES (1, ?, ?, NULL, 1)", (text, assigned))
        con.execute("INSERT INTO actions VALUES ('u1', 1, 1, 'set_code', 'print(t)', 1, 'ai')")
        con.execute(
            "INSERT INTO actions VALUES ('u2', 1, 2, 'set_exec_output', ?, NULL, 'ai')", (other,)
        )
    con.close()
    config = replace(
        BuildConfig(),
        episodes=(str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")),
        sessions=f"sqlite:///{sessions}",
        out=tmp_path / "ds",
        rejects=tmp_path / "rejects.jsonl",
        segment_bytes=1,  # a segment per file: the secret is learned after the first
        max_reject_ratio=1.0,
    )
    build(config)
    splits = pl.read_parquet(tmp_path / "ds" / "splits" / "*.parquet")
    expected = split_of(normalize_question_text(text), SplitConfig.of(config))
    asked = [question_id(text, h) for h in ("hint one", "hint two", None)]
    by_id = dict(zip(splits["question_id"], splits["split"], strict=True))
    assert [by_id[q] for q in asked] == [expected] * 3
    episodes = pl.read_parquet(tmp_path / "ds" / "episodes" / f"{expected}-*.parquet")
    assert {"ep-1", "ep-2"} <= set(episodes["episode_id"])
    published = pl.read_parquet(tmp_path / "ds" / "sessions" / "*.parquet")
    (normalized,) = published["normalized_instruction"]
    assert token.lower() not in normalized and "<redacted:hf_token>" in normalized
    assert value.lower() not in normalized  # assigned in the episodes, redacted here too
    actions = pl.read_parquet(tmp_path / "ds" / "actions" / "*.parquet")
    assert other not in " ".join(actions["action"].drop_nulls())
    assert token.lower() not in " ".join(splits["normalized_text"])
    (later,) = splits.filter(pl.col("question_id") == asked[1])["normalized_text"]
    assert value.lower() not in later  # published as redacted once the value was known
    rl = pl.read_parquet(tmp_path / "ds" / "rl" / "*.parquet")  # ep-3: the looked-up text
    (prompt,) = rl.filter(pl.col("episode_id") == "ep-3")["question"]
    assert value not in prompt and "<REDACTED:secret_assignment>" in prompt


def test_a_split_key_replaces_the_secrets_a_text_shows_itself() -> None:
    """Two questions that differ only in a key are one published prompt: one split. A
    text's own secrets are replaced in its key, whatever their case (the key is a function
    of the normalized text: texts that normalize alike share it); values learned elsewhere
    are not."""
    texts = [
        'Using api_key = "Ab3dEf6hIj9kLm2nQp5rSt8u", how many rows?',
        'Using api_key = "Zz9yXw8vUt7sRq6pOn5mLk4j", how many rows?',
        'USING API_KEY = "AB3DEF6HIJ9KLM2NQP5RST8U", HOW MANY ROWS?',
        "Log in with hf_AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh, then count.",
        "How many rows does Zz9yXw8vUt7sRq6pOn5mLk4j have?",
        "Which customer is CUST-1042?",
    ]
    normalized = pl.Series([normalize_question_text(t) for t in texts])
    keys = split_key_texts(normalized, {"customer": r"CUST-[0-9]{4}"}).to_list()
    assert keys[0] == keys[1] == keys[2] and "ab3def6hij9klm2nqp5rst8u" not in keys[0]
    assert "hf_abcd" not in keys[3] and "<REDACTED:hf_token>" in keys[3]
    assert keys[4] == normalized[4]  # a bare value is no secret of this text's own
    assert keys[5] == "which customer is <REDACTED:customer>?"
