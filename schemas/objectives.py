"""Arrow schemas of the per-objective training configs (``builder.derive`` produces them).

Every config keeps its rows' lineage: ``question_id`` (never null: the exporter assigns the
split by joining on it), ``episode_id``, ``trace_id`` where a row comes from one trace,
``difficulty`` and ``source`` (``episode``; ``session`` rows are added to ``sft`` and
``self_correction`` by the sessions reader, which is why those two carry ``session_id``).
Conversational columns are lists of ``{role, content}`` structs, as TRL reads them; ``sft``
and ``self_correction`` messages also carry ``weight`` (1 = train on it, 0 = context only,
null on non-assistant roles), the field OpenAI's fine-tuning format and Axolotl's
``message_field_training`` read. Types are plain ``string``/``list``, never ``large_*``.
"""

from __future__ import annotations

import pyarrow as pa

from schemas.tables import STRINGS, TOOL_CALLS, column, table_schema

MESSAGE = pa.struct([pa.field("role", pa.string()), pa.field("content", pa.string())])
WEIGHTED_MESSAGE = pa.struct(
    [
        pa.field("role", pa.string()),
        pa.field("content", pa.string()),
        pa.field("weight", pa.int64()),
    ]
)
MESSAGES = pa.list_(MESSAGE)
WEIGHTED_MESSAGES = pa.list_(WEIGHTED_MESSAGE)
# ``sft`` keeps what the captured OpenAI messages carry: tool calls, tool results, names.
SFT_MESSAGE = pa.struct(
    [
        pa.field("role", pa.string()),
        pa.field("content", pa.string()),
        pa.field("weight", pa.int64()),
        pa.field("tool_calls", TOOL_CALLS),
        pa.field("tool_call_id", pa.string()),
        pa.field("name", pa.string()),
    ]
)
SFT_MESSAGES = pa.list_(SFT_MESSAGE)
TOOLS_DOC = "tool_calls, tool_call_id and name as captured (null where absent)"
GOLD_HOOK = pa.struct(
    [
        pa.field("name", pa.string()),
        pa.field("value_hash", pa.string()),
        pa.field("depends_on", STRINGS),
    ]
)
CODE_DIFF = pa.struct([pa.field("removed_lines", STRINGS), pa.field("added_lines", STRINGS)])

PROMPT_DOC = "system prompt, then the question as the user message"
WEIGHTS_DOC = "weight: 1 = train on it, 0 = context only, null on non-assistant roles"


TRACE_DOC = "{episode_id}:gold or {episode_id}:c{index}"


def lineage(trace: str | None = TRACE_DOC, sessions: bool = False) -> list[pa.Field]:
    """The lineage columns; ``trace`` documents ``trace_id`` (None: no such column).
    Configs that take ``sessions`` rows have nullable episode and trace ids and a
    ``session_id``."""
    key = (
        "Key into questions for an episode's row; for a session's, the id of its initial "
        "instruction (in splits and sessions). Decides the split"
        if sessions
        else "Key into questions; decides the split"
    )
    fields = [
        column("question_id", pa.string(), key, False),
        column("episode_id", pa.string(), "Source episode (null for session rows)", sessions),
    ]
    if trace is not None:
        fields.append(column("trace_id", pa.string(), trace, sessions))
    if sessions:
        fields.append(column("session_id", pa.int64(), "Source session (null for episodes)"))
    fields += [
        column(
            "difficulty",
            pa.string(),
            "EASY, MEDIUM, HARD, VERY_HARD (any other text as captured) or null",
        ),
        column("source", pa.string(), "episode or session", False),
    ]
    return fields


SFT = table_schema(
    "Supervised fine-tuning conversations: the system prompt, then the episode's "
    "conversation_for_sft (weight 1 on every assistant message) or, where it is missing, the "
    "gold trace rendered turn by turn (weight 0 on failed turns that a later turn corrects)",
    column("messages", SFT_MESSAGES, f"The conversation; {WEIGHTS_DOC}; {TOOLS_DOC}"),
    *lineage("Gold trace the messages were rendered from (null for conversation_for_sft)", True),
    column("n_human_actions", pa.int32(), "Session actions by humans (null for episodes)"),
    column("n_ai_actions", pa.int32(), "Session actions by models (null for episodes)"),
    column("n_dataset_actions", pa.int32(), "Session actions from datasets (null for episodes)"),
)

RL = table_schema(
    "Prompt-only rows for online RL (GRPO-style); reward functions receive the expected answer "
    "and the gold hooks as keyword columns",
    column("prompt", MESSAGES, PROMPT_DOC),
    column("question", pa.string(), "The question text"),
    column("expected_final_answer_hash", pa.string(), "Hash the student's answer must match"),
    column("expected_final_answer", pa.string(), "The expected answer (canonical JSON)"),
    column(
        "accepted_answer_hashes",
        pa.list_(pa.string()),
        "Every answer hash that scores: the expected one first, then each other hash the "
        "question's ground truth accepts (a question with several valid answers)",
    ),
    column(
        "gold_hooks",
        pa.list_(GOLD_HOOK),
        "Gold trace hooks in order: {name, value_hash, depends_on}",
    ),
    column(
        "hash_precision",
        pa.int32(),
        "Hash scheme of the hashes: null exact, else floats rounded to this many places",
    ),
    column(
        "answer_tolerance",
        pa.float64(),
        "The build's answer tolerance: an answer matching expected_final_answer by value "
        "within it also scores (the capture code's comparison); null: by hash only",
    ),
    column(
        "csv_source",
        pa.string(),
        "The data file the question is about, as captured (null when the line named none): "
        "what a reward runs the completion's code against",
    ),
    *lineage(None),
)

PRM = table_schema(
    "Process-reward samples: one row per hook of every gold trace, verified or not, "
    "without a failed integrity check",
    column("step", pa.string(), "The code line that produced the checkpoint"),
    column(
        "value",
        pa.string(),
        "Stored value or bounded summary (canonical JSON); null for a hook listed without one "
        "(a flat trace's trace-level hooks)",
    ),
    column("value_hash", pa.string(), "Hash of the full normalized value"),
    column(
        "label", pa.float64(), "1.0 when the episode's recomputed verified flag holds, else 0.0"
    ),
    column("hook_index", pa.int32(), "Position among the trace's hooks", False),
    column("turn_index", pa.int32(), "Turn that produced the hook (null when unknown)"),
    *lineage(),
)

PRM_STEPWISE = table_schema(
    "TRL stepwise supervision: one row per trace with at least one step (gold and consistency) "
    "of a training-eligible episode; a step is a turn (a code cell for flat traces). A step is "
    "labelled true when it ran successfully (where known) and every hook attributed to it is "
    "matched by builder.rewards.process_reward: it has the value hash of a gold hook whose "
    "depends_on hooks were credited earlier in the same trace. Flat traces: cell success is "
    "unknown except for the last cell, which takes the trace's execution_success; a hook without a "
    "turn is attributed to the first cell whose code contains its code line",
    column("prompt", pa.string(), "The question text"),
    column("completions", STRINGS, "One rendered step (reasoning + fenced code) per turn"),
    column(
        "labels",
        pa.list_(pa.bool_()),
        "One per step: true when the step ran successfully (where known) and every hook it "
        "produced is credited by process_reward",
    ),
    *lineage(),
)

ORM = table_schema(
    "Outcome-reward rows (also TRL's unpaired preference / KTO layout): one row per trace, gold "
    "and consistency, of each training-eligible episode",
    column("prompt", MESSAGES, PROMPT_DOC),
    column(
        "completion",
        MESSAGES,
        "The trace as messages: code turns and execution feedback, up to its last code turn",
    ),
    column("label", pa.bool_(), "The trace's final answer hash equals the expected hash"),
    column("execution_success", pa.bool_(), "Whether the run succeeded"),
    column("trace_role", pa.string(), "gold or consistency"),
    *lineage(),
)

DPO = table_schema(
    "Preference pairs: a good trace (gold, or a successful consistency trace) over a failed "
    "consistency trace (execution failed, or answer hash differs from the expected one)",
    column("prompt", MESSAGES, PROMPT_DOC),
    column("chosen", MESSAGES, "The preferred trace as messages, up to its last code turn"),
    column("rejected", MESSAGES, "The failed trace as messages, up to its last code turn"),
    column("chosen_trace_id", pa.string(), "Trace of chosen", False),
    column("rejected_trace_id", pa.string(), "Trace of rejected", False),
    column(
        "pair_kind", pa.string(), "gold_vs_failed_consistency or consistency_vs_failed_consistency"
    ),
    *lineage(None),
)

SELF_CORRECTION = table_schema(
    "Error recovery: one row per correction in any trace of a training-eligible episode; the "
    "loss goes on the fix only",
    column("failed_code", pa.string(), "Code of the failed turn"),
    column("error_feedback", pa.string(), "stderr of the failed turn"),
    column("fixed_code", pa.string(), "Code of the fixing turn"),
    column("code_diff", CODE_DIFF, "Lines removed from the failed code, lines added by the fix"),
    column("error_type", pa.string(), "KeyError, ValueError, ..."),
    column("error_message", pa.string(), "The specific error"),
    column("trace_role", pa.string(), "gold or consistency"),
    column("turn_index", pa.int32(), "The fixing turn"),
    column("corrects_turn", pa.int32(), "The failed turn it fixes"),
    column(
        "prompt",
        MESSAGES,
        "System, question, then every turn before the fix with its "
        "execution feedback (ends with the error feedback)",
    ),
    column("completion", MESSAGES, "The fixing assistant message"),
    column(
        "messages",
        WEIGHTED_MESSAGES,
        "prompt + completion; weight 0 on the assistant turns "
        "of the prompt, 1 on the fix, null on other roles",
    ),
    *lineage(TRACE_DOC + " (null for session rows)", True),
)

SFT_TURNS = table_schema(
    "TRL conversational prompt-completion rows: one per trained (weight 1) assistant message "
    "of an sft conversation; the prompt is every message before it",
    column("prompt", SFT_MESSAGES, f"Every earlier message of the conversation; {WEIGHTS_DOC}"),
    column("completion", SFT_MESSAGES, "The trained assistant message"),
    column("message_index", pa.int32(), "The completion's position in the sft conversation"),
    *lineage("Gold trace the messages were rendered from (null for conversation_for_sft)", True),
    column("n_human_actions", pa.int32(), "Session actions by humans (null for episodes)"),
    column("n_ai_actions", pa.int32(), "Session actions by models (null for episodes)"),
    column("n_dataset_actions", pa.int32(), "Session actions from datasets (null for episodes)"),
)

OBJECTIVES: dict[str, pa.Schema] = {
    "sft": SFT,
    "sft_turns": SFT_TURNS,
    "rl": RL,
    "prm": PRM,
    "prm_stepwise": PRM_STEPWISE,
    "orm": ORM,
    "dpo": DPO,
    "self_correction": SELF_CORRECTION,
}
