"""The held-out plan of a build, made once before any segment is derived: every question's
split (``assign``), the questions and episodes kept out of the training configs (bridges and
eval matches), and the manifest's ``splits`` audit and ``decontamination`` sections.

It reads the staging tables of the segments being built, the splits of those the cache
reuses and of the previous build, and the sessions' questions; it hands the export values
(frames and dicts), nothing live.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from builder.derive.decontamination import decontaminate, load_evals
from builder.derive.splits import SplitConfig
from builder.derive.splits.assign import QUESTION_COLUMNS, SplitPolicy, assign
from builder.derive.splits.audit import audit
from builder.derive.splits.copies import (
    EXCLUDED_EPISODES,
    EXCLUDED_SESSIONS,
    SESSION_PROMPTS,
    held_out_copies,
    held_out_episodes,
)
from builder.derive.splits.previous import read_previous, settings_of, with_reused
from builder.derive.splits.prompts import episode_prompts, execution_output, prompts_of, read_tables
from builder.redact.split_key import split_key_texts
from schemas.vocabulary import GROUP_BY_NEAR_DUPLICATE, HELD_OUT_COPY

# What differs between a first build and a rebuild of the same data into the same folder
REBUILD_COUNTS = ("pinned", "joined_pinned_groups")
EXCLUDED_QUESTIONS = {"question_id": pl.String, "reason": pl.String}
CARRIED_COLUMNS = {
    "question_id": pl.String,
    "normalized_text": pl.String,
    "split": pl.String,
    "reason": pl.String,
}


@dataclass(frozen=True)
class HeldOutPlan:
    assignment: pl.DataFrame  # question_id, split
    excluded_questions: pl.DataFrame  # question_id, reason: out of every training config
    excluded_episodes: pl.DataFrame  # episode_id, reason
    splits: dict[str, Any]  # the manifest's splits section, shares and counts aside
    decontamination: dict[str, Any] | None
    # earlier builds' questions this one does not hold (question_id, normalized_text, split,
    # reason): listed again so that one coming back in a later build keeps its split
    carried: pl.DataFrame
    # session_id, reason: sessions out of every training config, their question aside
    excluded_sessions: pl.DataFrame = field(
        default_factory=lambda: pl.DataFrame(schema=EXCLUDED_SESSIONS)
    )

    def split_of(self, ids: pl.DataFrame) -> pl.DataFrame:
        """``ids`` (with ``question_id``) and their ``split``."""
        return ids.join(self.assignment, on="question_id", how="left", maintain_order="left")

    def listed(self, questions: pl.DataFrame) -> pl.DataFrame:
        """The ``splits`` config's rows of this build's ``questions`` (``question_id``,
        ``normalized_text``): each one's split and why its rows are out of training, if
        they are; sorted by id."""
        return (
            self.split_of(questions)
            .join(self.excluded_questions, on="question_id", how="left")
            .with_columns(in_build=pl.lit(True))
            .sort("question_id")
        )

    def carried_rows(self) -> pl.DataFrame:
        """The ``splits`` config's rows of the earlier builds' questions this one lacks."""
        return self.carried.with_columns(in_build=pl.lit(False))


def policy_of(config: Any) -> SplitPolicy:
    return SplitPolicy(
        config.split_group_by, config.split_near_duplicate_threshold, SplitConfig.of(config)
    )


QUESTION_SOURCE = ["question_id", "normalized_text", "template_name", "dataset"]
EPISODE_SOURCE = ["question_id", "csv_source"]


def _stored(reused: Iterable[tuple[Path, list[str]]], table: str) -> list[Path]:
    """The files of ``table`` that the cache's reused segments link into the dataset."""
    return [data / f for data, names in reused for f in names if f.startswith(f"{table}/")]


def _questions(
    tables: Path,
    sessions: pl.DataFrame | None,
    extra: dict[str, str],
    reused: Iterable[tuple[Path, list[str]]] = (),
) -> pl.DataFrame:
    """This build's questions (``QUESTION_COLUMNS``): key text, weight, dataset, template;
    those of the segments being built (their staging tables) and of those the cache reuses
    (their published tables: a rebuild that reuses every segment audits the same questions
    as the build that stored them)."""
    reused = list(reused)
    folders = sorted(p for p in tables.glob("*") if p.is_dir())
    found = [
        read_tables([f / "questions.parquet" for f in folders], QUESTION_SOURCE),
        read_tables(_stored(reused, "questions"), QUESTION_SOURCE),
    ]
    questions = (
        pl.concat([f for f in found if f.height], how="diagonal_relaxed")
        if any(f.height for f in found)
        else pl.DataFrame()
    )
    if questions.height:
        questions = questions.sort("question_id")
    rows = [
        read_tables([f / "episodes.parquet" for f in folders], EPISODE_SOURCE),
        read_tables(_stored(reused, "episodes"), EPISODE_SOURCE),
    ]
    episodes = (
        pl.concat([r for r in rows if r.height]) if any(r.height for r in rows) else pl.DataFrame()
    )
    parts = []
    if questions.height:
        parts.append(
            questions.unique("question_id", keep="first", maintain_order=True)
            .select(
                "question_id",
                text=split_key_texts(questions.get_column("normalized_text"), extra),
                template="template_name",
                named="dataset",
            )
            .unique("question_id", keep="first", maintain_order=True)
        )
    if sessions is not None and sessions.height:
        parts.append(
            sessions.select(
                "question_id", text=split_key_texts(sessions.get_column("split_text"), extra)
            ).unique("question_id", keep="first", maintain_order=True)
        )
    if not parts:
        return pl.DataFrame(schema=QUESTION_COLUMNS)
    every = pl.concat(parts, how="diagonal_relaxed").unique(
        "question_id", keep="first", maintain_order=True
    )
    rows = [episodes.select("question_id", "csv_source")] if episodes.height else []
    if sessions is not None and sessions.height:
        rows.append(sessions.select("question_id", csv_source=pl.lit(None, pl.String)))
    # a CSV named as the capture project names it, and its banks: ``<name>/data.csv`` by its
    # folder, any other file by its stem
    file = pl.col("csv_source").str.extract(r"([^/\\]+)$")
    folder = pl.col("csv_source").str.extract(r"([^/\\]+)[/\\][^/\\]+$")
    stem = (
        pl.when((file == "data.csv") & folder.is_not_null())
        .then(folder)
        .otherwise(file.str.extract(r"^(.+?)(?:\.[^.]*)?$"))
    )
    counts = (
        pl.concat(rows).group_by("question_id").agg(n=pl.len(), csv=stem.drop_nulls().min())
        if rows
        else pl.DataFrame(schema={"question_id": pl.String, "n": pl.UInt32, "csv": pl.String})
    )
    for column in ("named", "template"):  # sessions alone have neither
        if column not in every.columns:
            every = every.with_columns(pl.lit(None, pl.String).alias(column))
    return (
        every.join(counts, on="question_id", how="left")
        .with_columns(
            weight=1 + pl.col("n").fill_null(0).cast(pl.Int64),
            dataset=pl.coalesce("named", "csv"),
        )
        .select(list(QUESTION_COLUMNS))
        .cast(QUESTION_COLUMNS)
        .sort("question_id")
    )


def _worth_recording(config: Any, previous: Any) -> bool:
    """An earlier build named with ``--previous``, or the folder's own build when it was
    made under other settings (its assignment was not followed: the user should know)."""
    return bool(config.split_previous) or previous.info.get("followed") is False


def plan_held_out(
    tables: Path,
    config: Any,
    sessions: pl.DataFrame | None = None,
    reused: Iterable[tuple[Path, list[str]]] = (),
    session_prompts: pl.DataFrame | None = None,
) -> HeldOutPlan:
    """``tables``: the staging folder (a folder per segment being built); ``sessions``: the
    sessions' ``question_id`` and ``split_text``; ``reused``: (data folder, files) of every
    segment the cache links in; ``session_prompts`` (``SESSION_PROMPTS``): what each session
    says after its question (its ``set_instruction`` and ``input`` actions)."""
    if session_prompts is None:
        session_prompts = pl.DataFrame(schema=SESSION_PROMPTS)
    policy = policy_of(config)
    reused = list(reused)
    extra = dict(config.redaction_extra_patterns)
    questions = _questions(tables, sessions, extra, reused)
    previous = with_reused(read_previous(config.split_previous, config.out, policy), reused)
    assigned = assign(questions, previous.pinned, policy)
    bridges = assigned.frame.filter(pl.col("reason").is_not_null()).select(list(EXCLUDED_QUESTIONS))
    excluded_questions = bridges
    excluded_sessions = held_out_copies(
        session_prompts,
        assigned.frame,
        questions.select("question_id", "text"),
        previous.pinned,
        config.decontamination_ngram,
        config.decontamination_threshold,
    )
    asked = prompts_of(tables, questions, session_prompts, config.max_output_chars)
    excluded_episodes = held_out_episodes(
        episode_prompts(tables, asked, questions),
        assigned.frame,
        questions.select("question_id", "text"),
        previous.pinned,
        config.decontamination_ngram,
        config.decontamination_threshold,
        own_questions_excused=policy.group_by != GROUP_BY_NEAR_DUPLICATE,
    )
    decontamination = None
    if config.decontamination_evals:
        evals = load_evals(config.decontamination_evals)
        found = decontaminate(
            pl.concat([asked, execution_output(tables, config.max_output_chars)]),
            evals,
            config.decontamination_ngram,
            config.decontamination_threshold,
        )
        excluded_questions = pl.concat([bridges, found.questions.cast(EXCLUDED_QUESTIONS)]).unique(
            "question_id", keep="first", maintain_order=True
        )
        excluded_episodes = pl.concat([excluded_episodes, found.episodes.cast(EXCLUDED_EPISODES)])
        excluded_episodes = excluded_episodes.unique("episode_id", keep="first").sort("episode_id")
        excluded_sessions = pl.concat([excluded_sessions, found.sessions.cast(EXCLUDED_SESSIONS)])
        excluded_sessions = excluded_sessions.unique("session_id", keep="first").sort("session_id")
        decontamination = {
            "ngram": config.decontamination_ngram,
            "threshold": config.decontamination_threshold,
            "max_share": config.decontamination_max_share,
            **found.summary,
        }
    excluded = excluded_questions.get_column("question_id")
    # A rebuild into the same folder must write the same bytes as the first build: the
    # folder's own previous build is not recorded, nor are counts that only it changes.
    stats = {k: v for k, v in assigned.stats.items() if k not in REBUILD_COUNTS}
    splits = {
        **settings_of(policy),
        **({"previous": previous.info} if _worth_recording(config, previous) else {}),
        "groups": stats,
        "held_out_copies": excluded_sessions.filter(pl.col("reason") == HELD_OUT_COPY).height,
        "held_out_copy_episodes": excluded_episodes.filter(
            pl.col("reason") == HELD_OUT_COPY
        ).height,
        "audit": audit(assigned, questions, policy, excluded),
    }
    carried = (
        previous.pinned.join(questions, on="question_id", how="anti")
        .select("question_id", "split", "reason", normalized_text="text")
        .select(list(CARRIED_COLUMNS))
        .sort("question_id")
    )
    if config.redaction_enabled and not previous.redacted:
        # an unredacted build's texts are not published again: its questions keep their
        # splits by id; their near-copies no longer find them
        carried = carried.with_columns(normalized_text=pl.lit(None, pl.String))
    return HeldOutPlan(
        assigned.frame.select("question_id", "split"),
        excluded_questions.sort("question_id"),
        excluded_episodes.sort("episode_id"),
        splits,
        decontamination,
        carried,
        excluded_sessions,
    )


def held_out_problems(plan: HeldOutPlan, config: Any) -> list[str]:
    """What ``--strict`` refuses: held-out questions with a near-copy in train, and eval sets
    matched above ``[decontamination] max_share``."""
    problems = []
    audit_ = plan.splits["audit"]
    leaking = audit_["at_or_above_threshold"]
    if leaking:
        closest = (audit_.get("closest") or [{}])[0]
        pair = (
            f", the closest {_quoted(closest['question'])} ({closest['split']}) and "
            f"{_quoted(closest['nearest_train_question'])} at {closest['similarity']:.2f}"
            if closest
            else ""
        )
        problems.append(
            f"{leaking} held-out questions have a training question at or above similarity "
            f"{audit_['threshold']:g}{pair}"
        )
    one_word = audit_.get("one_word_from_train", 0)
    if one_word:
        problems.append(f"{one_word} held-out questions have a training question one word apart")
    clause = audit_.get("added_clause_from_train", 0)
    if clause:
        problems.append(
            f"{clause} held-out questions are a training question with a clause added or left out"
        )
    if leaking or one_word or clause:  # nothing is written: the manifest listing them is not
        problems.append("build without --strict to see every pair in manifest.json splits.audit")
    for found in (plan.decontamination or {}).get("evals", []):
        if found["matched_share"] > config.decontamination_max_share:
            problems.append(
                f"eval set {found['name']}: {found['matched_share']:.1%} of its items match "
                f"training prompts, above [decontamination] max_share "
                f"{config.decontamination_max_share:.1%}"
            )
    return problems


def _quoted(text: str, width: int = 60) -> str:
    return repr(text if len(text) <= width else text[: width - 1] + "…")


def check_held_out_inputs(config: Any) -> None:
    """Before any work: ``--previous`` names a build or a release, and every eval set named
    for decontamination is there (each a one-line error)."""
    from builder.derive.decontamination.evals import eval_files, parse_eval_spec
    from builder.derive.splits.previous import check_previous

    check_previous(config.split_previous)
    for spec in config.decontamination_evals:
        eval_files(Path(parse_eval_spec(spec)[0]))
