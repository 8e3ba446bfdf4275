"""Pydantic models of one episode line: the contract with the people who capture data.

Field names and shapes follow the episode JSONL schema and the data capture architecture
documents. Scalars are strict (``"yes"`` is not a bool, ``"3"`` is not an int) because a
coerced value would silently change a hash; datetimes accept ISO-8601 strings only (a number
could be seconds or milliseconds: it is refused, not guessed). Unknown fields
are *kept*: every model allows extras, and the builder stores them per episode in
``episodes.extra_fields`` keyed by JSON path, and counts them in the manifest, so a
capture-side addition is never dropped.

Values typed ``Any`` (answers, hook values, submission metadata) are arbitrary JSON; the
builder stores them as canonical JSON text next to their hash.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    StringConstraints,
)

from schemas.vocabulary import INVISIBLE_CHARACTERS

SCHEMA_VERSION = "1.0.0"

Hex16 = Annotated[str, StringConstraints(strict=True, pattern=r"^[0-9a-f]{16}$")]
# A question's text is the prompt a trainer is given: empty, blank or invisible, there is no
# question. Python's ``\s`` counts \x1c-\x1f as spaces and pydantic's engine does not: naming
# them keeps the two validators agreeing (``builder.validate.fastpath``).
QUESTION_TEXT_PATTERN = rf"[^\s\x1c-\x1f{INVISIBLE_CHARACTERS}]"  # one character that is text
QuestionText = Annotated[str, StringConstraints(strict=True, pattern=QUESTION_TEXT_PATTERN)]
INT32_MAX = 2**31 - 1  # counts and indexes are int32 columns in the tables


def _representable_in_utc(moment: datetime) -> datetime:
    """The tables store UTC; 0001-01-01T00:00+14:00 has no UTC representation."""
    if moment.tzinfo is not None:
        try:
            moment.astimezone(UTC)
        except OverflowError:
            raise ValueError("time is out of range once converted to UTC") from None
    return moment


def _iso_text(value: Any) -> Any:
    if not isinstance(value, str | datetime):
        raise ValueError(f"expected an ISO-8601 string, got {type(value).__name__} {value!r}")
    return value


Timestamp = Annotated[datetime, BeforeValidator(_iso_text), AfterValidator(_representable_in_utc)]
DIFFICULTIES = ("EASY", "MEDIUM", "HARD", "VERY_HARD")
DIFFICULTY_DOC = (
    "EASY, MEDIUM, HARD or VERY_HARD in any case, with a space or hyphen for the underscore "
    "(stored in these spellings); any other text is stored as given"
)


def canonical_difficulty(value: str | None) -> str | None:
    """The seeds' spelling of a difficulty (``"medium"``, ``"Very hard"`` → ``MEDIUM``,
    ``VERY_HARD``); other text as given. The capture code types it a free string and copies
    the question generator's text unchecked, so a valid episode may carry any spelling."""
    if value is None:
        return None
    key = "_".join(value.strip().upper().replace("-", " ").split())
    return key if key in DIFFICULTIES else value


Role = Literal["system", "user", "assistant", "tool", "developer", "function"]


class Record(BaseModel):
    """Base of every input model: unknown fields kept."""

    model_config = ConfigDict(extra="allow", frozen=True)


class Question(Record):
    """A question; ``id`` is ``sha256(f"{question_text}|{hint or ''}")[:16]``."""

    id: Hex16
    question_text: QuestionText
    hint: StrictStr | None = None
    difficulty: StrictStr | None = Field(default=None, description=DIFFICULTY_DOC)
    n_steps: StrictInt | None = Field(default=None, ge=0, le=INT32_MAX)
    created_at: Timestamp | None = None
    # Synthetic questions know their answer in advance; a question with several valid
    # answers lists every accepted hash in ``ground_truth_hashes``.
    ground_truth: Any = None
    ground_truth_hash: Hex16 | None = None
    ground_truth_hashes: list[Hex16] | None = None
    # What the capture side's later layout adds (all optional). ``capture_id`` is the
    # producer's own id (``llm_…``, ``syn_…``, ``prog_…``) of a question whose ``id`` was not
    # the content address; the builder then sets ``id`` to the content address.
    capture_id: StrictStr | None = None
    category: StrictStr | None = None
    tags: list[StrictStr] | None = None
    template_name: StrictStr | None = None
    template_params: Any = None
    # The CSV dataset the question is about, as the capture side's banks name it.
    dataset: StrictStr | None = None
    output_type: StrictStr | None = None
    output_schema: Any = None


# What a trace's code finds bound before its first cell: the capture's sandbox loads the
# question's CSV as ``df``. A ``depends_on`` may name it though no hook records it.
PRELOADED_NAMES = frozenset({"df"})


class Hook(Record):
    """An intermediate checkpoint. Its name (for ``depends_on``) is ``variable_name``,
    or ``code_line`` when there is no variable."""

    code_line: StrictStr
    variable_name: StrictStr | None = None
    value_hash: Hex16
    description: StrictStr | None = None
    depends_on: list[StrictStr] = Field(default_factory=list)
    # Turn-level hooks carry the stored value (exact scalar or bounded summary).
    value: Any = None


class CodeDiff(Record):
    removed_lines: list[StrictStr] = Field(default_factory=list)
    added_lines: list[StrictStr] = Field(default_factory=list)


class Correction(Record):
    """Present on a turn that fixes an earlier failed turn."""

    corrects_turn: StrictInt = Field(ge=0, le=INT32_MAX)
    error_type: StrictStr
    error_message: StrictStr
    attempts_since_error: StrictInt = Field(default=1, ge=0, le=INT32_MAX)
    code_diff: CodeDiff = Field(default_factory=CodeDiff)


class Execution(Record):
    success: StrictBool
    stdout: StrictStr = ""
    stderr: StrictStr = ""
    hooks: list[Hook] = Field(default_factory=list)
    # Present only on the turn that called submit(); absent and null differ.
    submitted_answer: Any = None


class Turn(Record):
    turn_index: StrictInt = Field(ge=0, le=INT32_MAX)
    reasoning: StrictStr | None = None
    code: StrictStr
    execution: Execution
    correction: Correction | None = None


class ExecutionTrace(Record):
    """A teacher run: flat (``code_cells`` + trace-level ``hooks``) or with ``turns``."""

    code_cells: list[StrictStr] = Field(default_factory=list)
    turns: list[Turn] | None = None
    final_answer: Any = None
    final_answer_hash: Hex16 | None = None
    execution_success: StrictBool
    hooks: list[Hook] = Field(default_factory=list)
    submission_metadata: dict[str, Any] = Field(default_factory=dict)
    # Absent from the later capture layout: null there, never a made-up 0 (``n_turns`` in
    # the tables counts the turns a trace has).
    total_turns: StrictInt | None = Field(default=None, ge=0, le=INT32_MAX)
    archived_turn_count: StrictInt | None = Field(default=None, ge=0, le=INT32_MAX)


class Message(Record):
    """OpenAI chat message; content is a string or a list of content parts."""

    role: Role
    content: StrictStr | list[dict[str, Any]] | None = None
    # OpenAI tool calling: {id, type, function {name, arguments}}; arguments JSON text.
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: StrictStr | None = None
    name: StrictStr | None = None


class ConversationForSft(Record):
    system_prompt: StrictStr | None = None
    messages: list[Message] = Field(default_factory=list)


class RlVerificationData(Record):
    # null when the gold trace never submitted (the capture side's ``str | None``)
    expected_final_answer_hash: Hex16 | None
    expected_final_answer: Any = None


class TriangulationMetadata(Record):
    n_consistency_runs: StrictInt = Field(ge=0, le=INT32_MAX)
    n_consistency_succeeded: StrictInt = Field(ge=0, le=INT32_MAX)
    majority_answer_hash: Hex16 | None = None
    majority_count: StrictInt = Field(ge=0, le=INT32_MAX)
    gold_matches_majority: StrictBool


class Episode(Record):
    """One line of an episodes JSONL file."""

    episode_id: StrictStr = Field(min_length=1)
    timestamp: Timestamp | None = None
    verified: StrictBool
    question: Question
    teacher_gold_trace: ExecutionTrace
    consistency_traces: list[ExecutionTrace] = Field(default_factory=list)
    conversation_for_sft: ConversationForSft | None = None
    rl_verification_data: RlVerificationData | None = None
    triangulation_metadata: TriangulationMetadata | None = None
    # The data file the question is about. Not in the seeds' schema, but the capture code
    # writes it in both of its layouts, and its own evaluation runs a model's code against it.
    csv_source: StrictStr | None = None
