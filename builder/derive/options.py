"""Options of the derive stage (the objective configs)."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_SYSTEM_PROMPT = (
    "You are a data analysis agent. Answer the user's question by writing Python code; each "
    "code block is executed and its output is shown to you. Call submit() with the final answer."
)
DEFAULT_MAX_OUTPUT_CHARS = 8_000
# The derive plans run on Polars' in-memory engine: a bucket's tables are in memory already,
# and on these plans (many joins and group-bys over a few thousand rows) the streaming
# engine that ``"auto"`` picks spent about twice the CPU time for the same rows
# (BENCHMARKS.md).
PLAN_ENGINE = "in-memory"


@dataclass(frozen=True)
class DeriveOptions:
    """``dpo_max_pairs_per_episode``: cap on preference pairs per episode (gold pairs first).
    ``default_system_prompt``: used where an episode has no conversation_for_sft prompt.
    ``max_output_chars``: each stdout/stderr rendered into a message keeps at most this many
    characters, head and tail, around a ``…[truncated N characters]…`` marker (the tables
    keep the full text). ``hash_precision``: the hash scheme (``builder.contract.hashing``).
    ``answer_tolerance``: the build's ``[checks] answer_tolerance``, carried by ``rl`` rows
    for rewards that also compare answers by value (``builder.contract.answers``)."""

    dpo_max_pairs_per_episode: int = 4
    default_system_prompt: str = DEFAULT_SYSTEM_PROMPT
    max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS
    hash_precision: int | None = None  # the build's hash scheme, carried by ``rl`` rows
    answer_tolerance: float | None = None

    def __post_init__(self) -> None:
        if self.dpo_max_pairs_per_episode < 0:
            raise ValueError("dpo_max_pairs_per_episode must be >= 0")
        if self.max_output_chars < 1:
            raise ValueError("max_output_chars must be >= 1")
