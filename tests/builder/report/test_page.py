"""The report file itself: size, self-containment, escaping, determinism."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from builder.pipeline import BuildReport
from builder.report import style
from builder.report.page import default_output, script_hash, write_report

from .conftest import XSS

MAX_BYTES = 2_000_000


def test_the_sample_report_is_small_and_refers_to_nothing_outside(sample_report: Path) -> None:
    text = sample_report.read_text(encoding="utf-8")
    assert sample_report.stat().st_size < MAX_BYTES
    assert not re.search(r"<(link|iframe|object|embed|img)\b", text)
    assert not re.search(r"\b(src|srcset|action)\s*=", text)
    assert all(h.startswith("#") for h in re.findall(r'\bhref="([^"]*)"', text))  # xlink: too
    assert all(u.startswith("#") for u in re.findall(r"url\(([^)]*)\)", text))  # SVG clips
    assert "@import" not in text
    assert text.count("<script>") == 1  # the page's own, inline
    assert "default-src 'none'" in text  # and the browser may fetch nothing anyway
    # only the page's own script runs, by its hash: none that escaping ever let in would
    assert (
        f"script-src '{script_hash(style.SCRIPT)}'" in text and "'unsafe-inline'; img" not in text
    )


def test_the_sessions_database_is_an_input_and_the_tiles_say_what_they_count(
    sample_report: Path, sample_build: BuildReport
) -> None:
    import json

    text = sample_report.read_text(encoding="utf-8")
    sessions = json.loads((sample_build.out / "manifest.json").read_text())["sessions"]
    read = sessions["rows_read"]["sessions"] + sessions["rows_read"]["actions"]
    assert f'data-metric="input.{sessions["source"]}.lines" data-value="{read}"' in text
    for label in ("episode lines", "rejected lines and rows", "verified episodes"):
        assert f"</b>{label}</div>" in text
    assert "</b>input lines</div>" not in text
    assert "input files and a sessions database</summary>" in text


def test_default_output_is_beside_the_build_folder(sample_build: BuildReport) -> None:
    assert default_output(sample_build.out) == sample_build.out.parent / "dataset-report.html"


def test_a_link_to_the_page_stays_a_link(sample_build: BuildReport, tmp_path: Path) -> None:
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "report.html").write_text("last week's")
    link = tmp_path / "report.html"
    link.symlink_to(tmp_path / "site" / "report.html")
    written = write_report(sample_build.out, link)
    assert link.is_symlink() and written.path == tmp_path / "site" / "report.html"
    assert "last week's" not in link.read_text()
    assert sorted(p.name for p in (tmp_path / "site").iterdir()) == ["report.html"]


def test_two_reports_of_one_build_are_identical(
    sample_build: BuildReport, sample_report: Path, tmp_path: Path
) -> None:
    again = write_report(sample_build.out, tmp_path / "again.html").path
    assert again.read_bytes() == sample_report.read_bytes()


def test_markup_in_traces_and_rejects_is_text(hostile_build: Path, tmp_path: Path) -> None:
    text = write_report(hostile_build, tmp_path / "report.html").path.read_text(encoding="utf-8")
    assert XSS not in text
    assert "onerror=" not in text.replace("onerror=&quot;", "")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert text.count("<script>") == 1
    assert text.count("<img") == 0


def test_failed_checks_show_their_rows(tmp_path: Path) -> None:
    import html
    import json

    from builder.config import BuildConfig
    from builder.pipeline import build
    from schemas.vocabulary import MEANINGS

    from .conftest import hostile_episode

    episode = hostile_episode()
    episode["teacher_gold_trace"]["final_answer_hash"] = "0" * 16  # no longer its answer's
    source = tmp_path / "checked.jsonl"
    source.write_text(json.dumps(episode) + "\n", encoding="utf-8")
    out = tmp_path / "dataset"
    config = BuildConfig(episodes=(str(source),), out=out, rejects=tmp_path / "rejects.jsonl")
    failed = build(config).manifest["checks"]["episodes_by_kind"]
    assert failed
    text = write_report(out, tmp_path / "r.html").path.read_text(encoding="utf-8")
    for kind, count in failed.items():
        assert f'data-metric="checks.{kind}" data-value="{count}"' in text
        assert html.escape(MEANINGS[kind]) in text  # what the check found, in words
    assert f"{source}:1" in text and episode["episode_id"] in text


def test_a_rejected_line_that_is_not_utf8_shows_as_text(tmp_path: Path) -> None:
    """Its rejects record has ``raw_base64`` and no ``raw``: the report shows the line with
    U+FFFD for the bad bytes and says where the exact bytes are, never ``null``."""
    import json

    from builder.config import BuildConfig
    from builder.pipeline import build

    from .conftest import hostile_episode

    source = tmp_path / "episodes.jsonl"
    good = json.dumps(hostile_episode()).encode()
    source.write_bytes(good + b"\n" + b'{"episode_id": "caf\xe9 <b>"}\n')
    out = tmp_path / "dataset"
    config = BuildConfig(
        episodes=(str(source),), out=out, rejects=tmp_path / "rejects.jsonl", max_reject_ratio=1
    )
    build(config)
    text = write_report(out, tmp_path / "r.html").path.read_text(encoding="utf-8")
    assert "[not UTF-8: 26 bytes; raw_base64 in the rejects file]" in text
    assert "{&quot;episode_id&quot;: &quot;caf\ufffd &lt;b&gt;&quot;}" in text


def test_a_build_without_training_rows_says_so_and_shows_no_zero_lengths(tmp_path: Path) -> None:
    import json

    from builder.config import BuildConfig
    from builder.pipeline import build

    from .conftest import hostile_episode

    episode = hostile_episode()
    episode["verified"] = False  # nothing trains; prm keeps the gold trace's hooks, if any
    episode["teacher_gold_trace"]["hooks"] = []
    for turn in episode["teacher_gold_trace"].get("turns") or []:
        turn["execution"]["hooks"] = []
    source = tmp_path / "episodes.jsonl"
    source.write_text(json.dumps(episode) + "\n", encoding="utf-8")
    out = tmp_path / "dataset"
    config = BuildConfig(episodes=(str(source),), out=out, rejects=tmp_path / "r.jsonl")
    rows = build(config).manifest["configs"]
    assert not any(sum(c["rows"].values()) for c in rows.values() if c["kind"] == "objective")
    text = write_report(out, tmp_path / "r.html").path.read_text(encoding="utf-8")
    assert "This build has no training rows" in text
    assert 'data-metric="lengths.sft.p50"' not in text and '<td class="num">—</td>' in text


def test_without_chromium_the_browser_tests_fail_and_say_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from .conftest import chromium_path

    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("CHROMIUM", raising=False)
    monkeypatch.delenv("REPORT_BROWSER", raising=False)
    with pytest.raises(pytest.fail.Exception, match=r"no Chromium found.*apt-get install chromium"):
        chromium_path()
    monkeypatch.setenv("REPORT_BROWSER", "optional")  # make test-fast only
    with pytest.raises(pytest.skip.Exception, match="make test-fast"):
        chromium_path()
