"""The assignment an earlier build made, so that no question moves between versions.

Read from ``--previous`` (a build folder, or ``org/name@revision``: a release on the Hub) or,
without it, from the output folder's own last build; and from the splits files of every
segment the cache reuses (their files are kept as they were built). An earlier build made
under other split settings (group policy, threshold, salt or ratios) is not followed: the
manifest says so and which settings differ, and only its validation and test questions keep
their splits. Its training questions are split afresh under the new settings, but what it
held out was published as held out and never trains later.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from builder.derive.splits.assign import PINNED_COLUMNS, SplitPolicy
from builder.errors import UsageError
from builder.fs.releases import HUB_RELEASE, ReleaseUnreadable, download_release
from schemas.manifest import MANIFEST, Manifest, ManifestError, read_manifest
from schemas.vocabulary import BRIDGES_SPLITS, GROUP_BY_QUESTION, HELD_OUT

OWN_FOLDER = "the output folder's last build"


class PreviousUnreadable(UsageError, ValueError):
    """``--previous`` names nothing this builder can read."""


@dataclass(frozen=True)
class Previous:
    pinned: pl.DataFrame  # PINNED_COLUMNS
    info: dict[str, Any]  # for the manifest: where from, followed or not and why
    redacted: bool = True  # its texts went through redaction (its manifest says so)


def settings_of(policy: SplitPolicy) -> dict[str, Any]:
    """The split settings a build's manifest records, which an earlier build must share."""
    ratios = policy.ratios
    return {
        "group_by": policy.group_by,
        "threshold": policy.threshold if policy.group_by != GROUP_BY_QUESTION else None,
        "salt": ratios.salt,
        "ratios": {"train": ratios.train, "validation": ratios.validation, "test": ratios.test},
    }


def _recorded(manifest: Manifest) -> dict[str, Any]:
    splits = manifest.get("splits") or {}
    group_by = splits.get("group_by", GROUP_BY_QUESTION)  # builds before groups
    return {
        "group_by": group_by,
        "threshold": splits.get("threshold") if group_by != GROUP_BY_QUESTION else None,
        "salt": splits.get("salt"),
        "ratios": splits.get("ratios"),
    }


SPLITS_COLUMNS = ["question_id", "normalized_text", "split"]  # what an assignment is read from
# Of the reasons a splits file gives, the one that stands in later builds: a bridge stays out
# of training (it near-copies two splits however the data grows). An eval match is the
# build's own: the next is decontaminated against its own eval sets.
_KEPT_REASONS = (BRIDGES_SPLITS,)


def _empty() -> pl.DataFrame:
    return pl.DataFrame(schema=PINNED_COLUMNS)


def _read_splits(files: Iterable[Path], whose: str) -> pl.DataFrame:
    """The assignment in an earlier build's splits files. One that cannot be read (cut
    short, emptied, edited in place) stops the build: going on without it could move its
    questions between splits, so the user decides (``whose``: what the message calls it)."""
    files = sorted(files)
    if not files:
        return _empty()
    try:
        # builds before the reason column pinned no bridge: they recorded none
        frame = pl.concat([_splits_file(f) for f in files], how="diagonal_relaxed").with_columns(
            reason=_kept_reason()
        )
    except (pl.exceptions.PolarsError, OSError) as exc:
        damaged = next((f for f in files if not _readable(f)), files[0])
        error = PreviousUnreadable(
            f"{whose}: its splits file {damaged} cannot be read ({str(exc).splitlines()[0]}); "
            "the split of every question it holds is kept from it: put that build back, or "
            "move it away to assign every split afresh"
        )
        error.hint = ""  # the message says what to do
        raise error from exc
    renamed = frame.rename({"normalized_text": "text"})
    return renamed.select(list(PINNED_COLUMNS)).cast(PINNED_COLUMNS)


def _splits_file(file: Path) -> pl.DataFrame:
    has_reason = "reason" in pl.read_parquet_schema(file)
    frame = pl.read_parquet(file, columns=SPLITS_COLUMNS + (["reason"] if has_reason else []))
    return frame if has_reason else frame.with_columns(reason=pl.lit(None, pl.String))


def _kept_reason() -> pl.Expr:
    kept = pl.col("reason").is_in(list(_KEPT_REASONS))
    return pl.when(kept).then(pl.col("reason")).otherwise(pl.lit(None, pl.String))


def _readable(file: Path) -> bool:
    try:
        _splits_file(file)
    except (pl.exceptions.PolarsError, OSError):
        return False
    return True


def hub_folder(spec: str) -> Path:
    """A release's manifest and splits files, downloaded (``org/name@revision``)."""
    try:
        return download_release(spec, ("splits",))
    except ReleaseUnreadable as exc:
        raise PreviousUnreadable(
            f"--previous {spec}: cannot read that release from the Hub ({exc}); check the "
            "repository and revision, or give a local build folder"
        ) from exc


def check_previous(spec: str) -> None:
    """A local ``--previous`` must hold a build (a release is checked when it is read)."""
    release = bool(HUB_RELEASE.match(spec)) and not Path(spec).exists()
    if spec and not release and not (Path(spec) / MANIFEST).is_file():
        raise PreviousUnreadable(
            f"--previous {spec}: no build there (no {MANIFEST}); give a build folder or "
            "org/name@version"
        )


def read_previous(spec: str, out: Path, policy: SplitPolicy) -> Previous:
    """The earlier assignment to keep: ``spec`` (``--previous``) or ``out``'s last build.
    With both, the named build's stands (made under other split settings, ``out``'s own
    stands and the named one's held-out questions it does not know join it), and
    ``out``'s own keeps the questions the named one does not know: a question any earlier
    build assigned keeps its split (not recorded in the manifest, which a rebuild into the
    same folder must write again byte for byte)."""
    check_previous(spec)
    if not spec:  # named as such, not by its path: the manifest publishes no local folder name
        return _read_build(out, OWN_FOLDER, f"the last build in {out}", policy)
    if HUB_RELEASE.match(spec) and not Path(spec).exists():
        named = _read_build(hub_folder(spec), spec, f"--previous {spec}", policy)
    else:
        named = _read_build(Path(spec), spec, f"--previous {spec}", policy)
    if _same_folder(Path(spec), out):
        return named
    own = _read_build(out, OWN_FOLDER, f"the last build in {out}", policy)
    if not own.pinned.height:
        return named
    if not named.info.get("followed"):  # other settings: the folder's own, then its held-out
        held = named.pinned.join(own.pinned, on="question_id", how="anti")
        return Previous(pl.concat([own.pinned, held]), named.info, own.redacted and named.redacted)
    unknown = own.pinned.join(named.pinned, on="question_id", how="anti")
    pinned = pl.concat([named.pinned, unknown])
    return Previous(pinned, named.info, named.redacted and own.redacted)


def _same_folder(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and a.resolve() == b.resolve()
    except OSError:
        return False


def _read_build(folder: Path, source: str, whose: str, policy: SplitPolicy) -> Previous:
    try:
        manifest = read_manifest(folder)
    except ManifestError:  # no build there yet (or not one this builder wrote)
        return Previous(_empty(), {"source": None})
    pinned = _read_splits((folder / "splits").glob("*.parquet"), whose)
    redacted = (manifest.get("redaction") or {}).get("enabled", True) is not False
    wanted, recorded = settings_of(policy), _recorded(manifest)
    if recorded != wanted:
        differ = sorted(k for k in wanted if wanted[k] != recorded.get(k))
        held = pinned.filter(pl.col("split").is_in(HELD_OUT))
        info = {"source": source, "followed": False, "differs": differ, "held_out": held.height}
        return Previous(held, info, redacted)
    info = {"source": source, "followed": True, "questions": pinned.height}
    return Previous(pinned, info, redacted)


def with_reused(previous: Previous, reused: Iterable[tuple[Path, list[str]]]) -> Previous:
    """``previous`` with the assignments of the cache's reused segments (their data folder,
    their files): those files are linked in as they are, so their splits stand."""
    files = [data / f for data, names in reused for f in names if f.startswith("splits/")]
    if not files:
        return previous
    pinned = pl.concat([_read_splits(files, "a segment the cache reuses"), previous.pinned]).unique(
        "question_id", keep="first", maintain_order=True
    )
    info = {**previous.info, "reused_segments_questions": len(files)}
    return Previous(pinned, info, previous.redacted)
