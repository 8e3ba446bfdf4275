"""The ``messages`` rows of an episode's SFT conversation."""

from __future__ import annotations

from typing import Any

from builder.contract.hashing import canonical_json
from builder.normalize.rows import MessageRow, Rows


def message_rows(out: Rows, ep: Any) -> None:
    if ep.conversation_for_sft is None:
        return
    rows = out["messages"]
    eid = ep.episode_id
    for i, msg in enumerate(ep.conversation_for_sft.messages):
        text = msg.content if isinstance(msg.content, str) else None
        parts = None if text is not None or msg.content is None else canonical_json(msg.content)
        extra = msg.model_extra
        calls = tool_calls(msg.tool_calls)
        rows.append(
            MessageRow(
                episode_id=eid,
                message_index=i,
                role=msg.role,
                content=text,
                content_parts=parts,
                tool_calls=None if calls is None else canonical_json(calls),
                tool_call_id=msg.tool_call_id,
                name=msg.name,
                extra_fields=canonical_json(extra) if extra else None,
            )
        )


def _text(value: Any) -> str | None:
    return value if value is None or isinstance(value, str) else canonical_json(value)


def tool_calls(value: Any) -> list[dict[str, Any]] | None:
    """OpenAI ``tool_calls`` as ``{id, type, function {name, arguments}}``; ``arguments``
    stays the JSON text OpenAI sends (an object is written as its canonical JSON)."""
    if not isinstance(value, list):
        return None
    calls = []
    for call in value:
        call = call if isinstance(call, dict) else {}
        function = call.get("function") if isinstance(call.get("function"), dict) else {}
        arguments = function.get("arguments")
        calls.append(
            {
                "id": _text(call.get("id")),
                "type": _text(call.get("type", "function")),
                "function": {
                    "name": _text(function.get("name")),
                    "arguments": None if arguments is None else _text(arguments),
                },
            }
        )
    return calls
