"""The held-out plan of a build, made once before any segment is derived: every question's
split (``assign``), the questions and episodes kept out of the training configs (bridges and
eval matches), and the manifest's ``splits`` audit and ``decontamination`` sections.

It reads the staging tables of the segments being built, the splits of those the cache
reuses and of the previous build, and the sessions' questions; it hands the export values
(frames and dicts), nothing live.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from builder.derive.decontamination import decontaminate, load_evals
from builder.derive.decontamination.overlap import EPISODE, PROMPTS, QUESTION
from builder.derive.splits import SplitConfig
from builder.derive.splits.assign import QUESTION_COLUMNS, SplitPolicy, assign
from builder.derive.splits.audit import audit
from builder.derive.splits.previous import read_previous, settings_of, with_reused
from builder.redact.split_key import split_key_texts

EXCLUDED_QUESTIONS = {"question_id": pl.String, "reason": pl.String}
EXCLUDED_EPISODES = {"episode_id": pl.String, "reason": pl.String}


@dataclass(frozen=True)
class HeldOutPlan:
    assignment: pl.DataFrame  # question_id, split
    excluded_questions: pl.DataFrame  # question_id, reason: out of every training config
    excluded_episodes: pl.DataFrame  # episode_id, reason
    splits: dict[str, Any]  # the manifest's splits section, shares and counts aside
    decontamination: dict[str, Any] | None

    def split_of(self, ids: pl.DataFrame) -> pl.DataFrame:
        """``ids`` (with ``question_id``) and their ``split``."""
        return ids.join(self.assignment, on="question_id", how="left", maintain_order="left")


def policy_of(config: Any) -> SplitPolicy:
    return SplitPolicy(
        config.split_group_by, config.split_near_duplicate_threshold, SplitConfig.of(config)
    )


def _read(files: list[Path], columns: list[str]) -> pl.DataFrame:
    present = [f for f in files if f.is_file()]
    if not present:
        return pl.DataFrame()
    return pl.read_parquet(present, columns=columns)


def _questions(tables: Path, sessions: pl.DataFrame | None, extra: dict[str, str]) -> pl.DataFrame:
    """This build's questions (``QUESTION_COLUMNS``): key text, weight, dataset, template."""
    folders = sorted(p for p in tables.glob("*") if p.is_dir())
    questions = _read(
        [f / "questions.parquet" for f in folders],
        ["question_id", "normalized_text", "template_name", "dataset"],
    )
    episodes = _read([f / "episodes.parquet" for f in folders], ["question_id", "csv_source"])
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
    # a CSV named by its file's stem, as banks name their datasets
    stem = pl.col("csv_source").str.extract(r"([^/\\]+?)(?:\.[^./\\]*)?$")
    counts = (
        pl.concat(rows).group_by("question_id").agg(n=pl.len(), csv=stem.drop_nulls().min())
        if rows
        else pl.DataFrame(schema={"question_id": pl.String, "n": pl.UInt32, "csv": pl.String})
    )
    if "named" not in every.columns:
        every = every.with_columns(named=pl.lit(None, pl.String))
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


def _prompts(tables: Path, questions: pl.DataFrame, sessions: pl.DataFrame | None) -> pl.DataFrame:
    folders = sorted(p for p in tables.glob("*") if p.is_dir())
    messages = _read([f / "messages.parquet" for f in folders], ["episode_id", "role", "content"])
    parts = [questions.select(kind=pl.lit(QUESTION), key="question_id", text="text")]
    if messages.height:
        parts.append(
            messages.filter(pl.col("role") == "user").select(
                kind=pl.lit(EPISODE), key="episode_id", text="content"
            )
        )
    return pl.concat([p.cast(PROMPTS) for p in parts]).filter(pl.col("text").is_not_null())


def plan_held_out(
    tables: Path,
    config: Any,
    sessions: pl.DataFrame | None = None,
    reused: Iterable[tuple[Path, list[str]]] = (),
) -> HeldOutPlan:
    """``tables``: the staging folder (a folder per segment being built); ``sessions``: the
    sessions' ``question_id`` and ``split_text``; ``reused``: (data folder, files) of every
    segment the cache links in."""
    policy = policy_of(config)
    extra = dict(config.redaction_extra_patterns)
    questions = _questions(tables, sessions, extra)
    previous = with_reused(read_previous(config.split_previous, config.out, policy), reused)
    assigned = assign(questions, previous.pinned, policy)
    bridges = assigned.frame.filter(pl.col("reason").is_not_null()).select(list(EXCLUDED_QUESTIONS))
    excluded_questions, excluded_episodes = bridges, pl.DataFrame(schema=EXCLUDED_EPISODES)
    decontamination = None
    if config.decontamination_evals:
        evals = load_evals(config.decontamination_evals)
        found = decontaminate(
            _prompts(tables, questions, sessions),
            evals,
            config.decontamination_ngram,
            config.decontamination_threshold,
        )
        excluded_questions = pl.concat([bridges, found.questions.cast(EXCLUDED_QUESTIONS)]).unique(
            "question_id", keep="first", maintain_order=True
        )
        excluded_episodes = found.episodes.cast(EXCLUDED_EPISODES)
        decontamination = {
            "ngram": config.decontamination_ngram,
            "threshold": config.decontamination_threshold,
            "max_share": config.decontamination_max_share,
            **found.summary,
        }
    excluded = excluded_questions.get_column("question_id")
    splits = {
        **settings_of(policy),
        "previous": previous.info,
        "groups": assigned.stats,
        "audit": audit(assigned, questions, policy, excluded),
    }
    return HeldOutPlan(
        assigned.frame.select("question_id", "split"),
        excluded_questions.sort("question_id"),
        excluded_episodes.sort("episode_id"),
        splits,
        decontamination,
    )


def held_out_problems(plan: HeldOutPlan, config: Any) -> list[str]:
    """What ``--strict`` refuses: held-out questions with a near-copy in train, and eval sets
    matched above ``[decontamination] max_share``."""
    problems = []
    audit_ = plan.splits["audit"]
    leaking = audit_["at_or_above_threshold"]
    if leaking:
        problems.append(
            f"{leaking} held-out questions have a training question at or above similarity "
            f"{audit_['threshold']:g} (manifest.json splits.audit lists the closest)"
        )
    for found in (plan.decontamination or {}).get("evals", []):
        if found["matched_share"] > config.decontamination_max_share:
            problems.append(
                f"eval set {found['name']}: {found['matched_share']:.1%} of its items match "
                f"training prompts, above [decontamination] max_share "
                f"{config.decontamination_max_share:.1%}"
            )
    return problems


def check_held_out_inputs(config: Any) -> None:
    """Before any work: ``--previous`` names a build or a release, and every eval set named
    for decontamination is there (each a one-line error)."""
    from builder.derive.decontamination.evals import eval_files, parse_eval_spec
    from builder.derive.splits.previous import check_previous

    check_previous(config.split_previous)
    for spec in config.decontamination_evals:
        eval_files(Path(parse_eval_spec(spec)[0]))
