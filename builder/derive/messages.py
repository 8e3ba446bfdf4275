"""How a trace reads as chat messages: one rendering shared by every objective.

* system: the episode's ``conversation_for_sft.system_prompt`` (``episodes.system_prompt``),
  else ``DeriveOptions.default_system_prompt``;
* the question: a user message with ``questions.question_text``;
* a turn: an assistant message ``"{reasoning}\\n```python\\n{code}\\n```"`` (the fenced code
  alone when reasoning is null or blank; a longer fence when the code holds ``` itself, ``fenced``),
  then a user message ``"[stdout]:\\n{stdout}"`` followed by ``"\\n[stderr]:\\n{stderr}"``
  when stderr is non-empty; each output longer than
  ``max_output_chars`` (``DeriveOptions``, default 8,000) keeps its first and last characters
  (half the limit each) around ``"\\n…[truncated 12,345 characters]…\\n"`` (``bounded``);
* the code cells of a flat trace: one assistant message of each cell's fenced code, joined
  by a blank line (their outputs were not captured, so no user message comes between them).

Messages are built long (one row per message, ``pos`` = its place: ``2 * turn_index`` for the
code, ``+ 1`` for the feedback) and gathered into lists by ``gather`` (group_by + sort_by).
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from builder.derive.options import DEFAULT_MAX_OUTPUT_CHARS

MESSAGE = pl.Struct({"role": pl.String, "content": pl.String})
WEIGHTED_MESSAGE = pl.Struct({"role": pl.String, "content": pl.String, "weight": pl.Int64})
NO_WEIGHT = pl.lit(None, dtype=pl.Int64)
RENDERED_TURNS, TRACE_MESSAGES = "rendered_turns", "trace_messages"
ASSISTANT, FEEDBACK = "_assistant_content", "_feedback_content"  # ``render_turns``' columns
TOOL_CALLS = pl.List(
    pl.Struct(
        {
            "id": pl.String,
            "type": pl.String,
            "function": pl.Struct({"name": pl.String, "arguments": pl.String}),
        }
    )
)


def fenced(code: pl.Expr) -> pl.Expr:
    """``code`` in a Markdown code block: fenced by three backticks, or by more than the
    longest run of backticks in the code (CommonMark), so a code that writes ``` itself (a
    README, a notebook's Markdown) does not end its block early. Four scans of the text
    cover runs of up to 31 backticks."""
    code = code.fill_null("")
    fence: pl.Expr = pl.lit("```")
    for run, longer in ((3, 4), (4, 8), (8, 16), (16, 32)):  # the longest run decides
        has_run = code.str.contains("`" * run, literal=True)
        fence = pl.when(has_run).then(pl.lit("`" * longer)).otherwise(fence)
    return pl.concat_str(fence, pl.lit("python\n"), code, pl.lit("\n"), fence)


def assistant_content() -> pl.Expr:
    """From ``reasoning`` and ``code`` columns; blank reasoning counts as none (it would add
    only an empty line)."""
    code = fenced(pl.col("code"))
    reasoning = pl.concat_str(pl.col("reasoning"), pl.lit("\n"), code)
    blank = pl.col("reasoning").fill_null("").str.strip_chars() == ""
    return pl.when(blank).then(code).otherwise(reasoning)


def thousands(n: pl.Expr) -> pl.Expr:
    """A non-negative integer as text with thousands separators: ``12345`` -> ``12,345``."""
    reversed_digits = n.cast(pl.String).str.reverse()
    grouped = reversed_digits.str.replace_all(r"\d{3}", "${0},").str.strip_chars_end(",")
    return grouped.str.reverse()


def bounded(text: pl.Expr, max_chars: int = DEFAULT_MAX_OUTPUT_CHARS) -> pl.Expr:
    """``text`` when at most ``max_chars`` characters; else its first ``max_chars // 2`` and
    last ``max_chars - max_chars // 2`` characters around ``"\\n…[truncated N characters]…\\n"``,
    N being the number of characters left out."""
    length = text.str.len_chars()
    head, tail = max_chars // 2, max_chars - max_chars // 2
    marker = pl.concat_str(
        pl.lit("\n…[truncated "), thousands(length - max_chars), pl.lit(" characters]…\n")
    )
    cut = pl.concat_str(text.str.head(head), marker, text.str.tail(tail))
    return pl.when(length > max_chars).then(cut).otherwise(text)


def feedback_content(max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS) -> pl.Expr:
    """From ``stdout`` and ``stderr`` columns, each ``bounded`` to ``max_output_chars``."""
    out = bounded(pl.col("stdout").fill_null(""), max_output_chars)
    stdout = pl.concat_str(pl.lit("[stdout]:\n"), out)
    err = bounded(pl.col("stderr"), max_output_chars)
    stderr = pl.concat_str(stdout, pl.lit("\n[stderr]:\n"), err)
    has_stderr = pl.col("stderr").fill_null("") != ""
    return pl.when(has_stderr).then(stderr).otherwise(stdout)


def message(role: str | pl.Expr, content: str | pl.Expr, weight: pl.Expr | None = None) -> pl.Expr:
    """A ``{role, content}`` struct, or ``{role, content, weight}`` when a weight is given."""
    role = pl.lit(role) if isinstance(role, str) else role
    content = pl.lit(content) if isinstance(content, str) else content
    if weight is None:
        return pl.struct(role=role, content=content)
    return pl.struct(role=role, content=content, weight=weight)


def header(weighted: bool = False) -> pl.Expr:
    """[system, user question] from the ``system`` and ``question`` columns."""
    weight = NO_WEIGHT if weighted else None
    return pl.concat_list(
        message("system", pl.col("system"), weight), message("user", pl.col("question"), weight)
    )


def rendered_key(max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS) -> str:
    """The name under which ``tables`` may hold ``render_turns``' frame: the export renders
    a bucket's turns once, and every objective that renders turns reads them from there."""
    return f"{RENDERED_TURNS}:{max_output_chars}"


def render_turns(
    tables: Mapping[str, pl.LazyFrame], max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS
) -> pl.LazyFrame:
    """``turns``, row for row, with ``ASSISTANT`` (``assistant_content``) and ``FEEDBACK``
    (``feedback_content``) columns."""
    return tables["turns"].with_columns(
        assistant_content().alias(ASSISTANT), feedback_content(max_output_chars).alias(FEEDBACK)
    )


def rendered(
    tables: Mapping[str, pl.LazyFrame], max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS
) -> tuple[pl.LazyFrame, pl.Expr, pl.Expr]:
    """(the turns, their assistant content, their feedback content): read from
    ``render_turns``' frame when ``tables`` holds it (``rendered_key``), else rendered
    from ``turns`` where the expressions are used (after any filter, so only the rows
    kept are rendered). The same values either way."""
    frame = tables.get(rendered_key(max_output_chars))
    if frame is None:
        return tables["turns"], assistant_content(), feedback_content(max_output_chars)
    return frame, pl.col(ASSISTANT), pl.col(FEEDBACK)


def turn_messages(
    tables: Mapping[str, pl.LazyFrame],
    max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
    traces: pl.LazyFrame | None = None,
) -> pl.LazyFrame:
    """One row per rendered message of every trace (of ``traces``, when given: only those
    are rendered): ``trace_id``, ``turn_index``, ``pos``, ``role``, ``content``, ``success``
    (of the turn); outputs bounded to ``max_output_chars`` (pass
    ``DeriveOptions.max_output_chars``)."""
    turns, assistant, feedback = rendered(tables, max_output_chars)
    if traces is not None:
        turns = turns.join(traces.select("trace_id").unique(), on="trace_id", how="semi")
    turns = turns.join(tables["traces"].select("trace_id", "form"), on="trace_id", how="left")
    keys = ("trace_id", "turn_index", "success")
    pos = pl.col("turn_index").cast(pl.Int64) * 2
    flat = pl.col("form") == "flat"
    code = turns.filter(~flat).select(*keys, pos=pos, role=pl.lit("assistant"), content=assistant)
    output = turns.filter(~flat).select(*keys, pos=pos + 1, role=pl.lit("user"), content=feedback)
    # A flat trace's cells have no output between them: one assistant message holds them
    # all, since chat templates that require user and assistant to alternate (Llama 2,
    # Mistral, Gemma) refuse two assistant messages in a row.
    cells = (
        turns.filter(flat)
        .with_columns(content=assistant)
        .group_by("trace_id", maintain_order=True)
        .agg(
            pl.col("turn_index").min(),
            pl.col("success").all(),
            pl.col("content").sort_by("turn_index").str.join("\n\n"),
        )
        .select(*keys, pos=pos, role=pl.lit("assistant"), content="content")
    )
    return pl.concat([code, output, cells])


def gather(rows: pl.LazyFrame, keys: str | list[str], **lists: pl.Expr) -> pl.LazyFrame:
    """Group ``rows`` by ``keys``; each named list holds its expression in ``pos`` order."""
    return rows.group_by(keys).agg(**{name: e.sort_by("pos") for name, e in lists.items()})


def or_empty(name: str, dtype: pl.DataType) -> pl.Expr:
    """A list column that a left join left null, as an empty list."""
    return pl.col(name).fill_null(pl.lit([], dtype=pl.List(dtype)))


def trace_messages(
    tables: Mapping[str, pl.LazyFrame],
    traces: pl.LazyFrame,
    max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
) -> pl.LazyFrame:
    """``trace_id``, ``messages``: every trace of ``traces`` rendered (empty when no turns),
    up to its last assistant message. The execution feedback after that message is the
    environment's: a trainer of completions (DPO, KTO) would teach the model to write it,
    and with it the next user turn's header. Read from ``render_traces``' frame when
    ``tables`` holds it (``messages_key``)."""
    ids = traces.select("trace_id").unique()
    every = tables.get(messages_key(max_output_chars))
    if every is not None:
        return ids.join(every, on="trace_id", how="left")
    rows = turn_messages(tables, max_output_chars, traces)
    last = pl.col("pos").filter(pl.col("role") == "assistant").max().over("trace_id")
    rows = rows.filter(pl.col("pos") <= last)
    lists = gather(rows, "trace_id", messages=message(pl.col("role"), pl.col("content")))
    return ids.join(lists, on="trace_id", how="left").with_columns(or_empty("messages", MESSAGE))


def messages_key(max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS) -> str:
    """The name under which ``tables`` may hold ``render_traces``' frame."""
    return f"{TRACE_MESSAGES}:{max_output_chars}"


def render_traces(
    tables: Mapping[str, pl.LazyFrame], max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS
) -> pl.LazyFrame:
    """``trace_messages`` of every trace of ``tables``: the export renders a bucket's traces
    once for the objectives that show whole traces (``orm``, ``dpo``), each reading those
    it needs. A trace's messages depend on its own turns alone."""
    return trace_messages(tables, tables["traces"], max_output_chars)


def failed_turns(tables: Mapping[str, pl.LazyFrame]) -> pl.LazyFrame:
    """``trace_id``, ``turn_index`` of the turns whose execution failed. In a trace that
    trains (verified: its gold trace succeeded and submitted) a later turn recovered from
    each, whether or not the capture wrote a correction for it: they are context, never a
    target (flat cells carry no execution, so none of them is failed)."""
    return tables["turns"].filter(pl.col("success").not_()).select("trace_id", "turn_index")


def parts_text(parts: pl.Expr) -> pl.Expr:
    """The ``text`` fields of list-of-parts content (canonical JSON), joined by newlines."""
    literal = r'"text": ("(?:[^"\\]|\\.)*")'
    texts = parts.str.extract_all(literal).list.eval(
        pl.element().str.slice(8).str.json_decode(pl.String)
    )
    return texts.list.join("\n")
