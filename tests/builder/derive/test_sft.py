"""sft: the captured conversation, or the gold trace rendered, with per-message weights."""

from __future__ import annotations

import json

from builder.derive import DEFAULT_SYSTEM_PROMPT, DeriveOptions, sft


def msg(role: str, content: str, weight: int | None = None, **tools: object) -> dict:
    fields = {"tool_calls": None, "tool_call_id": None, "name": None} | tools
    return {"role": role, "content": content, "weight": weight, **fields}


def row(derived, episode_id: str) -> dict:
    (found,) = derived["sft"].filter(episode_id=episode_id).to_dicts()
    return found


def test_gold_rendering_zeroes_the_failed_turn_a_later_turn_corrects(derived, make) -> None:
    found = row(derived, "ep-a")
    assert found["messages"] == [
        msg("system", DEFAULT_SYSTEM_PROMPT),
        msg("user", "What is the mean revenue?"),
        msg("assistant", f"Load the data.\n```python\n{make.LOAD}\n```", 1),
        msg("user", "[stdout]:\nok"),
        msg("assistant", f"```python\n{make.BAD}\n```", 0),
        msg("user", "[stdout]:\n\n[stderr]:\nKeyError: 'revenu'"),
        msg("assistant", f"Fix the column.\n```python\n{make.GOOD}\n```", 1),
        msg("user", "[stdout]:\n42.5"),
        msg("assistant", f"```python\n{make.SUBMIT}\n```", 1),
        msg("user", "[stdout]:\n"),
    ]
    assert found["trace_id"] == "ep-a:gold"
    assert (found["difficulty"], found["source"], found["session_id"]) == ("HARD", "episode", None)
    assert found["n_human_actions"] is None


def test_captured_conversation_follows_its_system_prompt(derived) -> None:
    found = row(derived, "ep-b")
    assert found["messages"] == [
        msg("system", "Be brief."),
        msg("user", "How many rows?"),
        msg("assistant", "```python\nn = len(df)\n```", 1),
        msg("user", "[stdout]:\n3"),  # list-of-parts content, reduced to its text
        msg("assistant", "```python\nsubmit(n)\n```", 1),
    ]
    assert found["trace_id"] is None


def test_every_failed_attempt_is_context_with_a_correction_or_without(make) -> None:
    # A trace that trains succeeded: a later turn recovered from each failed one, whether or
    # not the capture wrote a correction for it; code that raised is never a target.
    t = make.turn
    gold = make.trace(
        2,
        turns=[
            t(0, "a = 1", stdout="1"),
            t(1, "b = x", success=False, stderr="NameError"),
            t(2, "b = y", success=False, stderr="NameError"),
            t(3, "b = a + 1", correction=make.correction(1, "NameError", ["b = x"], ["b = a"])),
            t(4, "oops()", success=False, stderr="NameError"),
            t(5, "submit(b)", submitted=2),
        ],
    )
    episode = make.episode("ep-f", "Add one.", gold, [make.trace(2, cells=["submit(2)"])])
    tables = make.build_tables([episode])
    options = DeriveOptions(default_system_prompt="Sys.")
    (found,) = sft.derive(tables, options).collect().to_dicts()
    weights = [(m["content"].split("\n")[1], m["weight"]) for m in found["messages"][2::2]]
    assert weights == [
        ("a = 1", 1),
        ("b = x", 0),
        ("b = y", 0),
        ("b = a + 1", 1),
        ("oops()", 0),
        ("submit(b)", 1),
    ]
    assert found["messages"][0] == msg("system", "Sys.")
    assert {m["weight"] for m in found["messages"][1::2]} == {None}


def test_code_that_writes_a_fence_gets_a_longer_one() -> None:
    """CommonMark: a block fenced by N backticks ends at the first line of N or more, so the
    fence is longer than the longest run of backticks in the code."""
    import polars as pl

    from builder.derive.messages import fenced

    codes = ["x = 1", 'readme = "```python\\nprint(1)\\n```"', "s = '`````'", None]
    rendered = pl.DataFrame({"c": codes}).select(fenced(pl.col("c"))).to_series().to_list()
    assert rendered == [
        "```python\nx = 1\n```",
        '````python\nreadme = "```python\\nprint(1)\\n```"\n````',
        "````````python\ns = '`````'\n````````",  # longer than the longest run
        "```python\n\n```",
    ]


def test_a_captured_failed_attempt_that_a_later_turn_fixes_is_context(make) -> None:
    """The capture's conversation holds each attempt as it was made: the assistant message
    whose code is a failed turn trains at weight 0, as it does in a conversation rendered
    from the turns, with a correction or without."""
    t = make.turn
    gold = make.trace(
        2,
        turns=[
            t(0, "a = 1", stdout="1"),
            t(1, "b = x", success=False, stderr="NameError"),
            t(2, "b = a + 1", correction=make.correction(1, "NameError", ["b = x"], ["b = a"])),
            t(3, "oops()", success=False, stderr="NameError"),
            t(4, "submit(b)", submitted=2),
        ],
    )
    said = ["First a.", "Then b.", "x was never defined.", "Try.", "Done."]
    codes = ["a = 1", "b = x", "b = a + 1", "oops()", "submit(b)"]
    messages = [{"role": "user", "content": "Add one."}]
    for words, code in zip(said, codes, strict=True):
        messages.append({"role": "assistant", "content": f"{words}\n```python\n{code}\n```"})
        messages.append({"role": "user", "content": "Output:\n"})
    conversation = {"system_prompt": "Sys.", "messages": messages}
    episode = make.episode(
        "ep-g", "Add one.", gold, [make.trace(2, cells=["submit(2)"])], conversation=conversation
    )
    (found,) = sft.derive(make.build_tables([episode]), DeriveOptions()).collect().to_dicts()
    weights = [m["weight"] for m in found["messages"] if m["role"] == "assistant"]
    assert weights == [1, 0, 1, 0, 1]
    assert found["trace_id"] is None  # the captured conversation, not a rendering


def test_a_failed_attempt_made_as_a_tool_call_is_context(make) -> None:
    """A tool-calling conversation runs code as a call's ``{"code": ...}`` arguments: the
    call whose code is a failed gold turn trains at weight 0, as a fenced block would."""
    t = make.turn
    gold = make.trace(
        2,
        turns=[
            t(0, "b = x", success=False, stderr="NameError"),
            t(1, "b = 2", stdout=""),
            t(2, "submit(b)", submitted=2),
        ],
    )
    messages: list[dict] = [{"role": "user", "content": "Two?"}]
    for i, code in enumerate(["b = x", "b = 2", "submit(b)"]):
        call = {"id": f"c{i}", "type": "function"}
        call["function"] = {"name": "run_python", "arguments": json.dumps({"code": code})}
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": "ok"})
    conversation = {"system_prompt": "Sys.", "messages": messages}
    consistency = [make.trace(2, cells=["submit(2)"])]
    episode = make.episode("ep-tc", "Two?", gold, consistency, conversation=conversation)
    (found,) = sft.derive(make.build_tables([episode]), DeriveOptions()).collect().to_dicts()
    assert [m["weight"] for m in found["messages"] if m["role"] == "assistant"] == [0, 1, 1]


def test_a_conversation_that_captured_its_system_message_has_one(make) -> None:
    """Chat templates take one system message, first: a capture that holds system messages
    in ``messages`` too keeps one (``system_prompt`` and the captured ones joined in order,
    each text once, blank ones adding nothing), and the default stands in only when it has
    none."""
    gold = make.trace(2, turns=[make.turn(0, "submit(2)", submitted=2)])
    consistency = [make.trace(2, cells=["submit(2)"])]

    def episode(episode_id: str, system_prompt: str | None, system: list[str]) -> dict:
        messages = [{"role": "system", "content": text} for text in system]
        messages += [
            {"role": "user", "content": "Two?"},
            {"role": "assistant", "content": "```python\nsubmit(2)\n```"},
        ]
        conversation = {"system_prompt": system_prompt, "messages": messages}
        return make.episode(episode_id, "Two?", gold, consistency, conversation=conversation)

    episodes = [
        episode("e-null", None, ["Captured."]),
        episode("e-same", "Captured.", ["Captured.\n"]),  # the same up to blank edges
        episode("e-both", "Own.", ["Captured.", "More."]),
        episode("e-none", None, []),
        episode("e-empty", "", ["Captured."]),
        episode("e-blank-only", " \n", []),  # a blank prompt is none: the default
    ]
    late = episode("e-late", "Own.", [])  # a system message in the middle: moved first
    late["conversation_for_sft"]["messages"].insert(1, {"role": "system", "content": "Late."})
    blank = episode("e-blank", "Own.", [])
    blank["conversation_for_sft"]["messages"].insert(0, {"role": "system", "content": None})
    episodes += [late, blank]
    options = DeriveOptions(default_system_prompt="Default.")
    found = sft.derive(make.build_tables(episodes), options).collect()
    systems = {
        row["episode_id"]: [m["content"] for m in row["messages"] if m["role"] == "system"]
        for row in found.to_dicts()
    }
    assert systems == {
        "e-null": ["Captured."],
        "e-same": ["Captured."],
        "e-both": ["Own.\n\nCaptured.\n\nMore."],
        "e-none": ["Default."],
        "e-empty": ["Captured."],
        "e-blank-only": ["Default."],
        "e-late": ["Own.\n\nLate."],
        "e-blank": ["Own."],
    }
    for row in found.to_dicts():
        assert [m["role"] for m in row["messages"]] == ["system", "user", "assistant"]


def test_blank_reasoning_is_no_reasoning(make) -> None:
    t = make.turn
    gold = make.trace(2, turns=[t(0, "b = 2", reasoning=""), t(1, "submit(b)", reasoning=" \n")])
    episode = make.episode("ep-r", "Two?", gold, [make.trace(2, cells=["submit(2)"])])
    (found,) = sft.derive(make.build_tables([episode]), DeriveOptions()).collect().to_dicts()
    said = [m["content"] for m in found["messages"] if m["role"] == "assistant"]
    assert said == ["```python\nb = 2\n```", "```python\nsubmit(b)\n```"]


def test_a_captured_attempt_whose_feedback_shows_an_error_is_context(make) -> None:
    """A flat gold trace's cells carry no success of their own, but the capture's
    conversation shows what each run printed: an attempt answered by a traceback trains at
    weight 0, whether its output came back as a user or a tool message."""
    cells = ["m = df.groupby('sex').age.mean()", "m = df.groupby('Sex').Age.mean()", "submit(m)"]
    gold = make.trace(2, cells=cells)
    error = "Traceback (most recent call last):\n  ...\nKeyError: 'sex'"
    messages: list[dict] = [{"role": "user", "content": "Mean age by sex?"}]
    for code, said in zip(cells, [error, "Sex\nfemale 27.9", "ok"], strict=True):
        messages.append({"role": "assistant", "content": f"```python\n{code}\n```"})
        messages.append({"role": "user", "content": f"[stdout]:\n{said}"})
    conversation = {"system_prompt": "Sys.", "messages": messages[:-1]}
    consistency = [make.trace(2, cells=["submit(2)"])]
    episode = make.episode("ep-x", "Mean age by sex?", gold, consistency, conversation=conversation)
    (found,) = sft.derive(make.build_tables([episode]), DeriveOptions()).collect().to_dicts()
    assert [m["weight"] for m in found["messages"] if m["role"] == "assistant"] == [0, 1, 1]
    printed = "MeanSquaredError: 0.5\ndone"  # a metric, not an error: the run went on
    messages[2]["content"] = f"[stdout]:\n{printed}"
    (found,) = sft.derive(make.build_tables([episode]), DeriveOptions()).collect().to_dicts()
    assert [m["weight"] for m in found["messages"] if m["role"] == "assistant"] == [1, 1, 1]


def test_code_that_failed_once_and_ran_again_as_is_trains_where_it_ran(make) -> None:
    """A transient error: the same code failed, then ran. By its text both messages would
    be the failed turn; their order tells them apart (the k-th occurrence of a code is the
    k-th turn with it)."""
    t = make.turn
    gold = make.trace(
        2,
        turns=[
            t(0, "x = fetch()", success=False, stderr="ConnectionError: timed out"),
            t(1, "x = fetch()", stdout="ok"),
            t(2, "submit(x)", submitted=2),
        ],
    )
    messages: list[dict] = [{"role": "user", "content": "Fetch it."}]
    for code, said in [
        ("x = fetch()", "[stderr]:\nConnectionError: timed out"),
        ("x = fetch()", "[stdout]:\nok"),
        ("submit(x)", None),
    ]:
        messages.append({"role": "assistant", "content": f"```python\n{code}\n```"})
        if said is not None:
            messages.append({"role": "user", "content": said})
    conversation = {"system_prompt": "Sys.", "messages": messages}
    consistency = [make.trace(2, cells=["submit(2)"])]
    episode = make.episode("ep-rt", "Fetch it.", gold, consistency, conversation=conversation)
    (found,) = sft.derive(make.build_tables([episode]), DeriveOptions()).collect().to_dicts()
    assert [m["weight"] for m in found["messages"] if m["role"] == "assistant"] == [0, 1, 1]


def test_a_turn_that_succeeded_trains_whatever_its_output_prints(make) -> None:
    """A turn's own success flag decides: one that caught an exception and printed its
    traceback, then recovered, ran; the feedback rule is for flat cells, which have none."""
    t = make.turn
    caught = "Traceback (most recent call last):\n  ...\nUnicodeDecodeError: bad byte\nretrying"
    gold = make.trace(
        2,
        turns=[t(0, "df = load()", stdout=caught), t(1, "submit(2)", submitted=2)],
    )
    messages: list[dict] = [{"role": "user", "content": "Load it."}]
    messages.append({"role": "assistant", "content": "```python\ndf = load()\n```"})
    messages.append({"role": "user", "content": f"[stdout]:\n{caught}\nValidationError: 0"})
    messages.append({"role": "assistant", "content": "```python\nsubmit(2)\n```"})
    conversation = {"system_prompt": "Sys.", "messages": messages}
    consistency = [make.trace(2, cells=["submit(2)"])]
    episode = make.episode("ep-ok", "Load it.", gold, consistency, conversation=conversation)
    (found,) = sft.derive(make.build_tables([episode]), DeriveOptions()).collect().to_dicts()
    assert [m["weight"] for m in found["messages"] if m["role"] == "assistant"] == [1, 1]


def test_a_code_quoted_twice_in_a_message_is_one_attempt(make) -> None:
    """Reasoning that quotes the code it is about to run says it once: the count of a
    code's messages, not of its copies, finds its turn. Code written otherwise than the
    turn's (a tool call's ``source`` argument) is judged by its feedback."""
    t = make.turn
    bad = "x = df['sex']"
    gold = make.trace(
        2,
        turns=[
            t(0, bad, success=False, stderr="KeyError: 'sex'"),
            t(1, bad, success=False, stderr="KeyError: 'sex'"),
            t(2, "x = df['Sex']", stdout="ok"),
            t(3, "y = 1", success=False, stderr="NameError: z"),
            t(4, "submit(2)", submitted=2),
        ],
    )
    quoted = f"Run `{bad}` again:\n```python\n{bad}\n```\n```python\n{bad}\n```"
    call = {"id": "c", "type": "function"}
    call["function"] = {"name": "run_python", "arguments": json.dumps({"source": "y = 1"})}
    messages: list[dict] = [
        {"role": "user", "content": "Sex?"},
        {"role": "assistant", "content": f"```python\n{bad}\n```"},
        {"role": "user", "content": "[stderr]:\nKeyError: 'sex'"},
        {"role": "assistant", "content": quoted},
        {"role": "user", "content": "[stderr]:\nKeyError: 'sex'"},
        {"role": "assistant", "content": "```python\nx = df['Sex']\n```"},
        {"role": "user", "content": "[stdout]:\nok"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c", "content": "NameError: z"},
        {"role": "assistant", "content": "```python\nsubmit(2)\n```"},
    ]
    conversation = {"system_prompt": "Sys.", "messages": messages}
    consistency = [make.trace(2, cells=["submit(2)"])]
    episode = make.episode("ep-q", "Sex?", gold, consistency, conversation=conversation)
    (found,) = sft.derive(make.build_tables([episode]), DeriveOptions()).collect().to_dicts()
    weights = [m["weight"] for m in found["messages"] if m["role"] == "assistant"]
    assert weights == [0, 0, 1, 0, 1]


def test_a_conversation_with_nothing_to_train_is_no_row(make) -> None:
    """A captured conversation without an assistant message has nothing to train: the gold
    trace is rendered instead, as for an episode that captured none. A gold trace whose every
    turn failed (or that gave none) has no weight-1 message: a trainer would get an example
    without a label, so it is no ``sft`` row (as a session without a trained action is
    none)."""
    gold = make.trace(2, turns=[make.turn(0, "submit(2)", submitted=2)])
    consistency = [make.trace(2, cells=["submit(2)"])]
    conversation = {"system_prompt": "Sys.", "messages": [{"role": "user", "content": "Two?"}]}
    silent = make.episode("ep-s", "Two?", gold, consistency, conversation=conversation)
    talking = make.episode("ep-t", "Two?", gold, consistency)
    found = sft.derive(make.build_tables([silent, talking]), DeriveOptions()).collect()
    assert found["episode_id"].to_list() == ["ep-s", "ep-t"]
    assert found["trace_id"].to_list() == ["ep-s:gold", "ep-t:gold"]  # both rendered
