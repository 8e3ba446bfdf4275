"""The declared layout of every objective config."""

from __future__ import annotations

import pyarrow as pa

from builder.derive import OBJECTIVE_MODULES
from schemas.objectives import MESSAGE, OBJECTIVES, SFT_MESSAGE, WEIGHTED_MESSAGE
from schemas.tables import column_docs, describe

LINEAGE = ["question_id", "episode_id", "trace_id", "difficulty", "source"]
COLUMNS = {
    "sft": ["messages", "question_id", "episode_id", "trace_id", "session_id", "difficulty",
            "source", "n_human_actions", "n_ai_actions", "n_dataset_actions"],
    "sft_turns": ["prompt", "completion", "message_index", "question_id", "episode_id",
                  "trace_id", "session_id", "difficulty", "source", "n_human_actions",
                  "n_ai_actions", "n_dataset_actions"],
    "rl": ["prompt", "question", "expected_final_answer_hash", "expected_final_answer",
           "accepted_answer_hashes",
           "gold_hooks", "hash_precision", "answer_tolerance", "csv_source", "question_id", "episode_id", "difficulty", "source"],
    "prm": ["step", "value", "value_hash", "label", "hook_index", "turn_index", *LINEAGE],
    "prm_stepwise": ["prompt", "completions", "labels", *LINEAGE],
    "orm": ["prompt", "completion", "label", "execution_success", "trace_role", *LINEAGE],
    "dpo": ["prompt", "chosen", "rejected", "chosen_trace_id", "rejected_trace_id", "pair_kind",
            "question_id", "episode_id", "difficulty", "source"],
    "self_correction": ["failed_code", "error_feedback", "fixed_code", "code_diff", "error_type",
                        "error_message", "trace_role", "turn_index", "corrects_turn", "prompt",
                        "completion", "messages", "question_id", "episode_id", "trace_id",
                        "session_id", "difficulty", "source"],
}  # fmt: skip


def large_types(type_: pa.DataType) -> bool:
    if pa.types.is_large_string(type_) or pa.types.is_large_list(type_):
        return True
    return any(large_types(type_.field(i).type) for i in range(type_.num_fields))


def test_configs_in_order_with_exact_columns() -> None:
    assert list(OBJECTIVES) == list(COLUMNS)
    assert {name: schema.names for name, schema in OBJECTIVES.items()} == COLUMNS
    assert list(OBJECTIVE_MODULES) == list(OBJECTIVES)
    for name, module in OBJECTIVE_MODULES.items():
        assert name == module.NAME
        assert module.SCHEMA is OBJECTIVES[name]


def test_every_config_and_column_is_described_and_plain() -> None:
    for schema in OBJECTIVES.values():
        assert describe(schema)
        assert all(column_docs(schema).values())
        assert not any(large_types(f.type) for f in schema)


def test_message_types_and_key_nullability() -> None:
    assert OBJECTIVES["sft"].field("messages").type == pa.list_(SFT_MESSAGE)
    assert SFT_MESSAGE.names == ["role", "content", "weight", "tool_calls", "tool_call_id", "name"]
    call = SFT_MESSAGE.field("tool_calls").type.value_type
    assert call.names == ["id", "type", "function"]
    assert call.field("function").type.names == ["name", "arguments"]
    assert WEIGHTED_MESSAGE.names == ["role", "content", "weight"]
    assert WEIGHTED_MESSAGE.field("weight").type == pa.int64()
    for name in ("prompt", "chosen", "rejected"):
        assert OBJECTIVES["dpo"].field(name).type == pa.list_(MESSAGE)
    for name, schema in OBJECTIVES.items():
        assert not schema.field("question_id").nullable
        assert not schema.field("source").nullable
        sessions = name in ("sft", "sft_turns", "self_correction")
        assert schema.field("episode_id").nullable == sessions
        assert ("session_id" in schema.names) == sessions
    assert OBJECTIVES["prm"].field("label").type == pa.float64()
    assert OBJECTIVES["prm_stepwise"].field("labels").type == pa.list_(pa.bool_())
