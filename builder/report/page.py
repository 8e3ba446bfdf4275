"""The report page: every section of a build, as one self-contained HTML file.

Styles and the one small script are inline, charts are inline SVG, and nothing refers to
anything outside the file (no fonts, no CDN, no images by URL), so it opens offline.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import time
from dataclasses import dataclass
from pathlib import Path

from builder.fs.named_file import replaced
from builder.report import funnel, lengths, sections, stats, style
from builder.report.errors import OutputInBuildError, ReportOutputError
from builder.report.folder import BuildFolder
from builder.report.held_out import held_out_section
from builder.report.html import Raw, el, render

ROWS_PER_CONFIG = 3


@dataclass(frozen=True)
class Options:
    against: Path | None = None
    tokenizer: Path | None = None
    rows_per_config: int = ROWS_PER_CONFIG


def html_page(build: BuildFolder, options: Options) -> str:
    verified = stats.verified_counts(build)
    steps = stats.funnel(build.manifest, verified)
    found = lengths.of_build(build, options.tokenizer)
    body = el(
        "body",
        sections.header(build),
        el(
            "main",
            funnel.funnel_section(build, steps),
            funnel.rejects_section(build, stats.check_examples(build)),
            sections.distributions_section(stats.distributions(build)),
            sections.lengths_section(found),
            sections.splits_section(build, stats.leakage(build)),
            held_out_section(build.manifest),
            sections.rows_section(build, options.rows_per_config),
            sections.changes_section(build, options.against),
        ),
    )
    head = el(
        "head",
        Raw('<meta charset="utf-8">'),
        Raw('<meta name="viewport" content="width=device-width, initial-scale=1">'),
        # Nothing may be fetched: no network at all, even by a chart or a pasted trace. The
        # page's one script runs by its hash: a script that escaping ever let into the
        # page would not.
        Raw(
            '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
            f"style-src 'unsafe-inline'; script-src '{script_hash(style.SCRIPT)}'; "
            'img-src data:">'
        ),
        el("title", f"Build report: {build.path.name}"),
        el("style", Raw(style.CSS)),
        el("script", Raw(style.SCRIPT)),
    )
    return "<!DOCTYPE html>\n" + render(el("html", head, body, lang="en")) + "\n"


def script_hash(script: str) -> str:
    """A CSP hash source for an inline script's exact text."""
    digest = hashlib.sha256(script.encode("utf-8")).digest()
    return "sha256-" + base64.b64encode(digest).decode("ascii")


@dataclass(frozen=True)
class Written:
    path: Path
    bytes: int
    seconds: float


def default_output(folder: Path) -> Path:
    """Beside the build folder, like its rejects file (it shows rejected lines, so it is no
    part of the dataset): ``build/dataset`` → ``build/dataset-report.html``."""
    return folder.parent / f"{folder.name}-report.html"


def write_report(
    folder: Path,
    out: Path | None = None,
    rejects: Path | None = None,
    options: Options | None = None,
) -> Written:
    started = time.perf_counter()
    build = BuildFolder(folder, rejects)
    target = out or default_output(folder)
    if target.resolve().is_relative_to(folder.resolve()):
        raise OutputInBuildError(f"--out {target} is inside the build folder {folder}")
    _ = build.rejects  # fails early, before any chart, on a missing or stale rejects file
    text = html_page(build, options or Options())
    target = replaced(target)  # a link to the page stays a link (``builder.fs.named_file``)
    temporary = target.with_name(f".{target.name}.partial")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary.write_text(text, encoding="utf-8")
        temporary.replace(target)
    except OSError as exc:
        with contextlib.suppress(OSError):  # none there, or no folder to hold one
            temporary.unlink(missing_ok=True)
        blocker = next((p for p in target.parents if p.exists() and not p.is_dir()), None)
        why = f"{blocker} is a file, not a folder" if blocker else exc.strerror
        raise ReportOutputError(f"cannot write {target}: {why}") from exc
    return Written(target, len(text.encode()), time.perf_counter() - started)
