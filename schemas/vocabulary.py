"""Every name the stages and the readers of a build share, defined once: split names, the
integrity checks and what each means, the reject kinds of a line or a database row, and the
reasons an episode is held out of the training configs."""

from __future__ import annotations

SPLITS = ("train", "validation", "test")

# Characters that show nothing: Unicode's default-ignorable code points (soft hyphen,
# combining grapheme joiner, zero-width spaces and joiners, direction marks, embeddings and
# isolates, invisible operators, variation selectors, Hangul fillers, tags, byte-order mark),
# the Mongolian vowel separator and the blank braille pattern. A regex class body (Python's
# ``re`` and the Rust engines of pydantic and Polars read it alike); text made only of them
# is blank, and comparisons drop them: a copy of a question with one inside a word is still
# the same question.
INVISIBLE_CHARACTERS = (
    r"\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    r"\u2060-\u206f\u2800\u3164\ufe00-\ufe0f\ufeff\uffa0\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    r"\U000e0000-\U000e0fff"
)
HELD_OUT = SPLITS[1:]

# How questions are grouped so that a group never spans two splits ([splits] group_by).
GROUP_BY_NEAR_DUPLICATE = "near_duplicate"
GROUP_BY_DATASET = "dataset"
GROUP_BY_TEMPLATE = "template"
GROUP_BY_QUESTION = "question"
GROUP_POLICIES = (
    GROUP_BY_NEAR_DUPLICATE,
    GROUP_BY_DATASET,
    GROUP_BY_TEMPLATE,
    GROUP_BY_QUESTION,
)

# Why a question's rows are held out of every training config (they stay in the tables).
# A new question near-copying questions already in two different splits: either split
# would leak.
BRIDGES_SPLITS = "bridges_splits"
# Its prompt overlaps an item of a named eval set; the reason is ``eval:<name>``.
EVAL_PREFIX = "eval:"
# A training session's later instruction or chat input holds a validation or test question.
HELD_OUT_COPY = "held_out_copy"

# Reject kinds of an input line (``builder.validate``), in the order a line is examined.
LINE_TOO_LONG = "line_too_long"
INVALID_UTF8 = "invalid_utf8"
INVALID_JSON = "invalid_json"
SCHEMA = "schema"


# Integrity checks (``builder.normalize.checks``): the names a failed check gives an episode.
QUESTION_ID_MISMATCH = "question_id_mismatch"
FINAL_ANSWER_HASH_MISMATCH = "final_answer_hash_mismatch"
EXPECTED_ANSWER_HASH_MISMATCH = "expected_answer_hash_mismatch"
EXPECTED_ANSWER_NOT_GOLD = "expected_answer_not_gold"
TRIANGULATION_MISMATCH = "triangulation_mismatch"
VERIFIED_MISMATCH = "verified_mismatch"
GROUND_TRUTH_MISMATCH = "ground_truth_mismatch"
DUPLICATE_EPISODE_ID = "duplicate_episode_id"
HOOK_LISTING_MISMATCH = "hook_listing_mismatch"
# A trace given in both forms (``code_cells`` and ``turns``) whose code cells are not its
# turns' code, in order: which code the trace ran is unknown.
CODE_LISTING_MISMATCH = "code_listing_mismatch"
HOOK_UNKNOWN_DEPENDENCY = "hook_unknown_dependency"
HOOK_CYCLE = "hook_cycle"
CORRECTION_TARGET_INVALID = "correction_target_invalid"
# A captured hash that holds under the other hash scheme (exact vs rounded), not the
# configured one: most likely ``[hashing] precision`` does not match the capture side.
HASH_SCHEME_MISMATCH = "hash_scheme_mismatch"
# A captured answer hash of the capture code's first scheme (``hashing.pickle_hash``), under
# neither JSON scheme: the answer is intact, but no reward code can reproduce the hash.
PICKLE_HASH_SCHEME = "pickle_hash_scheme"
# A key twice in one object of the line: parsers keep the last, so the line is ambiguous.
DUPLICATE_JSON_KEY = "duplicate_json_key"

# What each failed check says about the line, as a reject under ``--strict`` words it.
MEANINGS: dict[str, str] = {
    QUESTION_ID_MISMATCH: "the question's id is not the content address of its text and hint",
    FINAL_ANSWER_HASH_MISMATCH: "a trace's final_answer_hash is not the hash of its final_answer",
    EXPECTED_ANSWER_HASH_MISMATCH: (
        "rl_verification_data's expected answer hash is not the hash of its expected answer"
    ),
    EXPECTED_ANSWER_NOT_GOLD: (
        "rl_verification_data's expected answer is not the gold trace's answer (the capture "
        "writes the gold's there: RL would reward another answer than the verified one)"
    ),
    TRIANGULATION_MISMATCH: (
        "triangulation_metadata (runs, majority answer and count, gold_matches_majority) "
        "disagrees with the consistency traces"
    ),
    VERIFIED_MISMATCH: (
        "verified disagrees with what the gold trace, the consistency majority and the "
        "ground truth establish"
    ),
    GROUND_TRUTH_MISMATCH: "the gold trace's answer is not the question's ground truth",
    DUPLICATE_EPISODE_ID: "an earlier line has the same episode_id",
    HOOK_LISTING_MISMATCH: "a trace's turn-level and trace-level hooks disagree",
    CODE_LISTING_MISMATCH: (
        "a trace's code_cells are not its turns' code, in order (it gives both forms, and "
        "which code it ran is unknown)"
    ),
    HOOK_UNKNOWN_DEPENDENCY: "a hook's depends_on names no hook of its trace",
    HOOK_CYCLE: "the depends_on edges of a trace's hooks form a cycle",
    CORRECTION_TARGET_INVALID: (
        "a correction's corrects_turn is not an earlier, failed turn of its trace"
    ),
    HASH_SCHEME_MISMATCH: (
        "a captured hash holds under the other hash scheme: set [hashing] precision to match "
        "the capture"
    ),
    PICKLE_HASH_SCHEME: (
        "an answer hash is of the capture code's first (pickle) scheme, which reward code "
        "cannot reproduce"
    ),
    DUPLICATE_JSON_KEY: "an object of the line has a key twice, so parsers disagree on its value",
}
ALL_CHECKS = tuple(MEANINGS)


# Reject kinds of a sessions database row (``builder.sessions.validate``).
INVALID_TYPE = "invalid_type"
NULL_FIELD = "null_field"
MISSING_ACTION_ID = "missing_action_id"
INVALID_ACTION_TYPE = "invalid_action_type"
INVALID_SOURCE = "invalid_source"
ORPHAN_ACTION = "orphan_action"
REJECTED_SESSION = "rejected_session"
DUPLICATE_SESSION_ID = "duplicate_session_id"
DUPLICATE_ACTION_UUID = "duplicate_action_uuid"
DUPLICATE_ACTION_ID = "duplicate_action_id"
SESSION_REJECT_KINDS = (
    INVALID_TYPE,
    INVALID_UTF8,
    NULL_FIELD,
    MISSING_ACTION_ID,
    INVALID_ACTION_TYPE,
    INVALID_SOURCE,
    ORPHAN_ACTION,
    REJECTED_SESSION,
    DUPLICATE_SESSION_ID,
    DUPLICATE_ACTION_UUID,
    DUPLICATE_ACTION_ID,
)

# An episode or a bank question whose integrity checks failed under ``--strict``.
CHECK_FAILED = "check_failed"

# Why an episode is left out of the training configs (``builder.derive.eligibility``): the
# first reason that applies. ``verified_mismatch`` is the check of that name, failed.
NOT_VERIFIED = "not_verified"
FAILED_CHECKS = "failed_checks"
DUPLICATE_TURN_INDEX = "duplicate_turn_index"
REASONS = (NOT_VERIFIED, VERIFIED_MISMATCH, FAILED_CHECKS, DUPLICATE_TURN_INDEX)
FAILED_HOOK_CHECKS = "failed_hook_checks"  # left out of the hook configs only
HOOK_ONLY = (FAILED_HOOK_CHECKS,)
# How summaries name each reason, where its key alone would mislead
REASON_LABELS = {FAILED_HOOK_CHECKS: f"{FAILED_HOOK_CHECKS} (prm, prm_stepwise, rl only)"}

# A question bank's id seen again with other content (``builder.ingest.question_banks``); the
# validator names a repeated unique field ``duplicate_<field>`` the same way.
DUPLICATE_ID = "duplicate_id"

# The check a session gets when some of its actions were rejected (``builder.sessions.tables``).
REJECTED_ACTIONS = "rejected_actions"
# Why a session is left out of the training configs (``builder.derive.sessions.replay``), in
# the order they are decided; ``rejected_actions`` is the check of that name.
UNVERIFIED = "unverified"
NO_INSTRUCTION = "no_instruction"  # nothing asked: no instruction, set_instruction or input
NO_TRAINABLE_TURNS = "no_trainable_turns"
