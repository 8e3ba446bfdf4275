"""One build's surroundings, set up before its first stage and undone after its last.

The work folder beside the output (everything is written there and swapped in at the very
end, so a failed build leaves the previous dataset untouched), the rejects file, the
incremental cache, and the card's import warm-up. Whatever happens, each is undone and no
work file is left; a build the data refused keeps its rejects.
"""

from __future__ import annotations

import importlib
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from builder.cache import open_cache
from builder.config import BuildConfig
from builder.errors import DataRefused, EnvironmentProblem
from builder.export.card import CardImages
from builder.fs import space
from builder.fs.output import build_manifest, recover_interrupted_swap, refused_rejects
from builder.ingest.rejects import RejectsWriter
from builder.report import card_images as card_images_module

# What the card's YAML needs at the end of a build: PyYAML. (Its features are written without
# ``datasets``, ``export.features``, which is imported only for a type outside the project's
# schemas.) Warmed for a build without a card memo; a rebuild with one imports it where the
# YAML is written again (≈ 15 ms).
CARD_IMPORTS = ("yaml",)


def card_images() -> CardImages:
    """The card's charts, drawn by the report's code from the folder the export wrote."""
    return CardImages(card_images_module.write_card_images, card_images_module.card_section)


def warm_imports(modules: tuple[str, ...]) -> threading.Thread:
    """Import ``modules`` on a thread. Started when the configs are derived and written —
    work that runs in Polars and Arrow, outside the GIL, with this thread waiting — so the
    imports cost the build's end nothing. A failure is left for the real import to report."""

    def run() -> None:
        for name in modules:
            try:
                importlib.import_module(name)
            except Exception:  # the import where it is used says what is wrong
                return

    thread = threading.Thread(target=run, name="warm-imports", daemon=True)
    thread.start()
    return thread


def rejects_if_refused(config: BuildConfig) -> Path:
    """Where a build the data refuses keeps its rejects: the rejects file, unless the output
    folder holds a build, whose rejects file that is (``episodes report`` reads the two
    together): then beside it (``preflight.refused_rejects``), so the build left in place
    stays whole."""
    if build_manifest(config.out) is None:
        return config.rejects
    return refused_rejects(config.rejects)


WORK_MARK = ".building"


class WorkFolderRemoved(EnvironmentProblem):
    """Something outside the build removed its work folder while it ran."""

    def __init__(self, work: Path, out: Path) -> None:
        super().__init__(f"its work folder {work} was removed while it ran; {out} is as it was")
        self.hint = "run it again, and leave the folder until the build ends"


@dataclass
class BuildRun:
    config: BuildConfig  # with ``cache_dir`` cleared when this build runs without its cache
    work: Path
    rejects: RejectsWriter
    refused_at: Path  # where the rejects go if the data refuses the build
    cache: Any = None  # an open ``builder.cache`` around the ingest and the export
    cache_busy: Path | None = None  # the cache another build held: this one runs without it
    card_written: bool = False  # a segment is exported: the card is written again
    warming: list[threading.Thread] = field(default_factory=list)
    done: bool = False  # swapped in, or refused by the data: its rejects are kept

    @property
    def staged(self) -> Path:
        """The dataset folder being written, swapped in at the end."""
        return self.work / "dataset"

    @property
    def card_memo(self) -> Path | None:
        # A rebuild that reuses every segment reuses the card's YAML and images as well:
        # nothing to import or draw. One that exports a segment draws and writes them again.
        return self.cache.directory / "card.json" if self.cache is not None else None

    @classmethod
    @contextmanager
    def start(cls, config: BuildConfig) -> Iterator[BuildRun]:
        out = config.out
        work = out.parent / f".{out.name}.work"
        recover_interrupted_swap(out)
        refused_at = rejects_if_refused(config)
        shutil.rmtree(work, ignore_errors=True)
        run = cls(config, work, RejectsWriter(config.rejects), refused_at)
        kept_at = config.rejects
        try:
            # made now and removed only below: gone before that, the folder was removed from
            # outside (a later step may have made the folder again, not this mark)
            work.mkdir(parents=True)
            (work / WORK_MARK).touch()
            run.cache = open_cache(config) if config.cache_dir else None
            if run.cache is None:  # none configured, or another build holds it: uncached
                run.cache_busy = config.cache_dir
                run.config = replace(config, cache_dir=None)
            yield run
        except DataRefused:
            run.done, kept_at = True, refused_at
            raise
        except Exception as exc:
            if not (work / WORK_MARK).exists():  # whatever failed, the removal explains it
                raise WorkFolderRemoved(work, out) from exc
            if run.cache is not None and space.is_disk_full(exc):
                run.cache.forget_new()
            raise
        finally:
            try:  # each is undone even when one before it fails: no work files are left
                run.rejects.close(keep=run.done, to=kept_at)
            finally:
                if run.cache is not None:
                    run.cache.close()
                shutil.rmtree(work, ignore_errors=True)

    def card_to_come(self) -> None:
        """Called before a segment is exported (not linked from the cache): the card will be
        written again, so its imports warm up."""
        if not self.card_written:
            self.card_written = True
            memo = self.card_memo
            if memo is None or not memo.is_file():
                self.warming.append(warm_imports(CARD_IMPORTS))

    def card_images(self) -> CardImages:
        for thread in self.warming:
            thread.join()  # the card imports these next: one thread at a time
        return card_images()

    def finish_cache(self) -> dict[str, int] | None:
        """The cache's segments stored; what it served, for the summary."""
        if self.cache is None:
            return None
        self.cache.segments.finish()
        return {
            "segments reused": len(self.cache.segments.reused),
            "segments built": len(self.cache.segments.pending),
            "files replayed from cached batches": self.cache.hits,
            "files normalized": self.cache.misses,
        }

    @property
    def on_disk(self) -> frozenset[Path]:
        """The staged files linked from cached segments a build has flushed already."""
        return frozenset(self.cache.segments.on_disk) if self.cache is not None else frozenset()

    def finished(self) -> None:
        """Swapped in: its files are on disk, and so are the cached segments it used."""
        self.done = True
        if self.cache is not None:
            self.cache.segments.mark_flushed()
