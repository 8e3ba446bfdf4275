"""Arrow schemas of the normalized tables: the contract between normalize and every later stage.

Nested lists of an episode become child tables keyed by their parent's id and their list
index (``trace_id`` + ``turn_index``, ``trace_id`` + ``hook_index``). Any-typed values are
canonical JSON text (``builder.hashing.canonical_json``) next to their hash, so the JSON
string ``"1"`` and the number ``1`` stay distinct. Each column carries a description in its
field metadata; the dataset card is generated from these schemas, never written by hand.
"""

from __future__ import annotations

import pyarrow as pa

TIMESTAMP = pa.timestamp("us", tz="UTC")
STRINGS = pa.list_(pa.string())
# An OpenAI chat tool call; ``arguments`` is the JSON text OpenAI sends, kept as text.
TOOL_CALL = pa.struct(
    [
        pa.field("id", pa.string()),
        pa.field("type", pa.string()),
        pa.field(
            "function",
            pa.struct([pa.field("name", pa.string()), pa.field("arguments", pa.string())]),
        ),
    ]
)
TOOL_CALLS = pa.list_(TOOL_CALL)


# The role of a column says what the builder may do with its values; each text column of
# a table declares one, and every stage takes its column lists from these declarations.
KEY = "key"  # an id or a position that joins the tables: never rewritten
TEXT = "text"  # free text the capture wrote: secrets in it are redacted
JSON = "json"  # canonical JSON text of an any-typed value: redacted (its hash stays the original's)
HASH = "hash"  # a hash as captured: never rewritten, so it stays the original value's
LABEL = "label"  # an enum, a flag or a check name the capture or the builder sets: never rewritten
SOURCE = "source"  # where the row was read from (input file and line)
DERIVED = "derived"  # computed from another column of the row; recomputed, never rewritten
ROLES = (KEY, TEXT, JSON, HASH, LABEL, SOURCE, DERIVED)
REDACTED_ROLES = (TEXT, JSON)


def column(
    name: str, type_: pa.DataType, doc: str, nullable: bool = True, role: str | None = None
) -> pa.Field:
    metadata = {"description": doc}
    if role is not None:
        if role not in ROLES:
            raise ValueError(f"column {name}: unknown role {role!r}; one of {', '.join(ROLES)}")
        metadata["role"] = role
    return pa.field(name, type_, nullable=nullable, metadata=metadata)


def role_of(field: pa.Field) -> str | None:
    """The declared role of a column (None when it declares none)."""
    value = (field.metadata or {}).get(b"role")
    return value.decode() if value is not None else None


def columns_with_role(schema: pa.Schema, *roles: str) -> tuple[str, ...]:
    """The names of ``schema``'s columns that declare one of ``roles``, in schema order."""
    return tuple(f.name for f in schema if role_of(f) in roles)


def is_text(type_: pa.DataType) -> bool:
    """A string column, or a list of strings (redacted element by element)."""
    if pa.types.is_list(type_) or pa.types.is_large_list(type_):
        type_ = type_.value_type
    return pa.types.is_string(type_) or pa.types.is_large_string(type_)


def table_schema(doc: str, *fields: pa.Field) -> pa.Schema:
    return pa.schema(fields, metadata={"description": doc})


def empty_table(schema: pa.Schema) -> pa.Table:
    """A table of ``schema`` with no rows (one empty chunk per column), as
    ``schema.empty_table()`` gives, without the pandas import that one makes (≈ 0.2 s)."""
    arrays = [pa.nulls(0, field.type) for field in schema]
    return pa.Table.from_batches([pa.RecordBatch.from_arrays(arrays, schema=schema)])


def describe(schema: pa.Schema) -> str:
    """The human description stored in a schema's metadata."""
    return (schema.metadata or {}).get(b"description", b"").decode()


def column_docs(schema: pa.Schema) -> dict[str, str]:
    return {f.name: (f.metadata or {}).get(b"description", b"").decode() for f in schema}


CHECKS = column(
    "checks", STRINGS, "Integrity checks that failed on this row (empty when clean)", role=LABEL
)

QUESTIONS = table_schema(
    "One row per question id, from the question banks and from episodes",
    column("question_id", pa.string(), "sha256(question_text|hint)[:16]", nullable=False, role=KEY),
    column("question_text", pa.string(), "The question as asked", role=TEXT),
    column(
        "normalized_text",
        pa.string(),
        "invisible characters dropped, NFKC, casefolded, whitespace-collapsed text",
        role=DERIVED,
    ),
    column("hint", pa.string(), "Hint given to the gold teacher run, if any", role=TEXT),
    column(
        "difficulty",
        pa.string(),
        "EASY, MEDIUM, HARD, VERY_HARD (any other text as captured) or null",
        role=LABEL,
    ),
    column("n_steps", pa.int32(), "Expected number of solution steps"),
    column("created_at", TIMESTAMP, "When the question was created (naive times read as UTC)"),
    column(
        "source",
        pa.string(),
        "Where the question was first seen: synthetic, llm or episode",
        role=LABEL,
    ),
    column(
        "ground_truth",
        pa.string(),
        "Known answer of a synthetic question (canonical JSON)",
        role=JSON,
    ),
    column("ground_truth_hash", pa.string(), "Hash of ground_truth", role=HASH),
    column(
        "ground_truth_hashes",
        STRINGS,
        "Every accepted answer hash of a question with several valid answers (null if none)",
        role=HASH,
    ),
    column(
        "capture_id",
        pa.string(),
        "The producer's own id of the question when its id was not the content address",
        role=KEY,
    ),
    column("category", pa.string(), "Question category, as captured", role=LABEL),
    column("tags", STRINGS, "Question tags, as captured", role=LABEL),
    column("template_name", pa.string(), "Template that generated the question", role=LABEL),
    column("template_params", pa.string(), "Its parameters (canonical JSON)", role=JSON),
    column(
        "dataset",
        pa.string(),
        "The CSV dataset the question is about: the record's dataset, else the folder of a "
        "bank written as <dataset>/questions.json (null when unknown)",
        role=LABEL,
    ),
    column("output_type", pa.string(), "Expected answer type, as captured", role=LABEL),
    column("output_schema", pa.string(), "Expected answer shape (canonical JSON)", role=JSON),
    column(
        "extra_fields",
        pa.string(),
        "A bank record's other fields, keyed by JSON path (canonical JSON); an episode's "
        "question keeps its own in episodes.extra_fields",
        role=JSON,
    ),
    column("source_file", pa.string(), "Input file the row was read from", role=SOURCE),
    column("source_line", pa.int64(), "1-based line in source_file", role=SOURCE),
    CHECKS,
)

EPISODES = table_schema(
    "One row per episode line",
    column("episode_id", pa.string(), "Episode id (unique)", nullable=False, role=KEY),
    column("question_id", pa.string(), "Key into questions", role=KEY),
    column("timestamp", TIMESTAMP, "Capture time (naive times read as UTC)"),
    column("verified", pa.bool_(), "verified flag as captured"),
    column("verified_recomputed", pa.bool_(), "verified recomputed from the traces"),
    column("system_prompt", pa.string(), "conversation_for_sft.system_prompt", role=TEXT),
    column("n_messages", pa.int32(), "Messages in conversation_for_sft (null when absent)"),
    column(
        "expected_final_answer",
        pa.string(),
        "rl_verification_data answer (canonical JSON)",
        role=JSON,
    ),
    column(
        "expected_final_answer_hash", pa.string(), "rl_verification_data answer hash", role=HASH
    ),
    column(
        "ground_truth_hashes",
        STRINGS,
        "Answer hashes the episode's question accepts, as its line carries them "
        "(ground_truth_hash and ground_truth_hashes; empty when it knows no answer)",
        role=HASH,
    ),
    column("n_consistency_traces", pa.int32(), "Consistency traces present in the episode"),
    column("n_consistency_runs", pa.int32(), "triangulation_metadata as captured"),
    column("n_consistency_succeeded", pa.int32(), "triangulation_metadata as captured"),
    column("majority_answer_hash", pa.string(), "triangulation_metadata as captured", role=HASH),
    column("majority_count", pa.int32(), "triangulation_metadata as captured"),
    column("gold_matches_majority", pa.bool_(), "triangulation_metadata as captured"),
    column(
        "csv_source", pa.string(), "The data file the question is about, as captured", role=TEXT
    ),
    column(
        "extra_fields",
        pa.string(),
        "Unknown input fields, JSON object keyed by JSON path",
        role=JSON,
    ),
    column(
        "line_patch",
        pa.string(),
        "What the line held that the other columns do not give back (a field left out "
        "rather than null, a spelling, its question's own fields): [path, value] and [path] "
        "edits onto the line rebuilt from the rows (canonical JSON; see export-jsonl)",
        role=JSON,
    ),
    column("layout", pa.string(), "Episode layout of the line: seeds or capture_v2", role=LABEL),
    column("source_file", pa.string(), "Input file the episode was read from", role=SOURCE),
    column("source_line", pa.int64(), "1-based line in source_file", role=SOURCE),
    column(
        "checks", STRINGS, "Every check that failed in this episode or its children", role=LABEL
    ),
)

TRACES = table_schema(
    "One row per trace: the gold teacher trace and each consistency trace",
    column(
        "trace_id",
        pa.string(),
        "{episode_id}:gold or {episode_id}:c{index}",
        nullable=False,
        role=KEY,
    ),
    column("episode_id", pa.string(), "Key into episodes", nullable=False, role=KEY),
    column("role", pa.string(), "gold (run with the hint) or consistency (without)", role=LABEL),
    column(
        "trace_index", pa.int32(), "0 for gold; position in consistency_traces otherwise", role=KEY
    ),
    column(
        "form",
        pa.string(),
        "turns (has turns) or flat (code_cells + trace-level hooks)",
        role=LABEL,
    ),
    column("execution_success", pa.bool_(), "Whether the run succeeded"),
    column("submitted", pa.bool_(), "Whether submit() was called (an answer or its hash given)"),
    column(
        "final_answer",
        pa.string(),
        "The submit() value (canonical JSON); null when nothing was submitted",
        role=JSON,
    ),
    column(
        "final_answer_hash",
        pa.string(),
        "Hash of the final answer as captured; computed when an answer came without one",
        role=HASH,
    ),
    column("submission_metadata", pa.string(), "Raw submit() metadata (canonical JSON)", role=JSON),
    column("total_turns", pa.int32(), "total_turns as captured (or null)"),
    column("archived_turn_count", pa.int32(), "archived_turn_count as captured (or null)"),
    column("n_turns", pa.int32(), "Rows of this trace in turns"),
    column("n_hooks", pa.int32(), "Rows of this trace in hooks"),
    CHECKS,
)

TURNS = table_schema(
    "One row per turn (for flat traces: per code cell)",
    column("trace_id", pa.string(), "Key into traces", nullable=False, role=KEY),
    column("turn_index", pa.int32(), "Position in the trace", nullable=False, role=KEY),
    column("episode_id", pa.string(), "Key into episodes", nullable=False, role=KEY),
    column(
        "reasoning",
        pa.string(),
        "Model reasoning before the code (null for flat traces)",
        role=TEXT,
    ),
    column("code", pa.string(), "Code executed in this turn", role=TEXT),
    column("success", pa.bool_(), "Did the code run without error (null when unknown)"),
    column("stdout", pa.string(), "Execution output (full text)", role=TEXT),
    column("stderr", pa.string(), "Error output (full text)", role=TEXT),
    column("submitted", pa.bool_(), "Whether this turn called submit() (a non-null answer)"),
    column("submitted_answer", pa.string(), "Value passed to submit() (canonical JSON)", role=JSON),
    column("has_correction", pa.bool_(), "Whether this turn fixes an earlier failed turn"),
    column("n_hooks", pa.int32(), "Hooks produced by this turn"),
)

HOOKS = table_schema(
    "One row per hook checkpoint (trace-level and turn-level listings merged)",
    column("trace_id", pa.string(), "Key into traces", nullable=False, role=KEY),
    column("hook_index", pa.int32(), "Position among the trace's hooks", nullable=False, role=KEY),
    column("episode_id", pa.string(), "Key into episodes", nullable=False, role=KEY),
    column("turn_index", pa.int32(), "Turn that produced the hook (null when unknown)", role=KEY),
    column("name", pa.string(), "variable_name, or code_line when it is null or empty", role=TEXT),
    column("code_line", pa.string(), "The code that produced this checkpoint", role=TEXT),
    column("variable_name", pa.string(), "Variable name, if any", role=TEXT),
    column("value_hash", pa.string(), "Hash of the full normalized value", role=HASH),
    column("value", pa.string(), "Stored value or bounded summary (canonical JSON)", role=JSON),
    column("value_bounded", pa.bool_(), "The stored value exceeded the size limit and was bounded"),
    column("description", pa.string(), "Semantic description of the checkpoint", role=TEXT),
    column("depends_on", STRINGS, "Names of hooks this one depends on (DAG edges)", role=TEXT),
    column(
        "listed_in", pa.string(), "turn, trace or both: where the capture listed it", role=LABEL
    ),
)

CORRECTIONS = table_schema(
    "One row per self-correction (a turn that fixes an earlier failed turn)",
    column("trace_id", pa.string(), "Key into traces", nullable=False, role=KEY),
    column("turn_index", pa.int32(), "The fixing turn", nullable=False, role=KEY),
    column("episode_id", pa.string(), "Key into episodes", nullable=False, role=KEY),
    column("corrects_turn", pa.int32(), "The failed turn it fixes", role=KEY),
    column("error_type", pa.string(), "KeyError, ValueError, ...", role=TEXT),
    column("error_message", pa.string(), "The specific error", role=TEXT),
    column("attempts_since_error", pa.int32(), "Attempts between failure and fix"),
    column("removed_lines", STRINGS, "Lines of the failed code", role=TEXT),
    column("added_lines", STRINGS, "Lines of the fixed code", role=TEXT),
)

MESSAGES = table_schema(
    "One row per message of conversation_for_sft",
    column("episode_id", pa.string(), "Key into episodes", nullable=False, role=KEY),
    column("message_index", pa.int32(), "Position in the conversation", nullable=False, role=KEY),
    column("role", pa.string(), "system, user, assistant, tool, ...", role=LABEL),
    column(
        "content", pa.string(), "Text content (null when the content is a list of parts)", role=TEXT
    ),
    column("content_parts", pa.string(), "List-of-parts content (canonical JSON)", role=JSON),
    column(
        "tool_calls",
        pa.string(),
        "OpenAI tool calls [{id, type, function {name, arguments}}] (canonical JSON; "
        "arguments as JSON text); text, so secrets in arguments are redacted",
        role=JSON,
    ),
    column("tool_call_id", pa.string(), "The tool call a tool message answers", role=LABEL),
    column("name", pa.string(), "Name of the tool or participant", role=TEXT),
    column("extra_fields", pa.string(), "Other message fields (canonical JSON)", role=JSON),
)

TABLES: dict[str, pa.Schema] = {
    "questions": QUESTIONS,
    "episodes": EPISODES,
    "traces": TRACES,
    "turns": TURNS,
    "hooks": HOOKS,
    "corrections": CORRECTIONS,
    "messages": MESSAGES,
}

SPLIT_ASSIGNMENT = table_schema(
    "The split of every question id: a keyed hash of its normalized text (see the card)",
    column("question_id", pa.string(), "Question id (sessions: id of the initial instruction)"),
    column(
        "normalized_text",
        pa.string(),
        "The normalized text the split was derived from (as published: redacted)",
    ),
    column("split", pa.string(), "train, validation or test"),
    column(
        "reason",
        pa.string(),
        "Why the question's rows are out of every training config (null: they are not): "
        "bridges_splits (it near-copies questions in two splits; kept out in later builds "
        "too) or eval:<name> (its prompt overlaps that eval set in this build)",
    ),
    column(
        "in_build",
        pa.bool_(),
        "False for a question an earlier build assigned that this build does not hold: it "
        "is listed so that it keeps its split if it comes back",
        nullable=False,
    ),
)
