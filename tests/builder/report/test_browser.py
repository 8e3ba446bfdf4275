"""The report in a real headless Chromium: it loads from the file alone, quickly, with no
console error and no request; every chart has a size; the numbers it shows are the
manifest's; markup in the data stays text. A screenshot is kept in ``.artifacts/report/``."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from builder.pipeline import BuildReport
from builder.report.page import write_report

from .conftest import XSS

LOAD_SECONDS = 1.0


class Opened:
    def __init__(self, page: Any, requests: list[str], console: list[str], seconds: float):
        self.page, self.requests, self.console, self.seconds = page, requests, console, seconds

    def metric(self, name: str) -> int:
        value = self.page.get_attribute(f'[data-metric="{name}"]', "data-value")
        assert value is not None, f"no element shows {name}"
        return int(value)


def open_report(browser: Any, path: Path) -> Iterator[Opened]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    requests: list[str] = []
    console: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.on(
        "console", lambda m: console.append(f"{m.type}: {m.text}") if m.type == "error" else None
    )
    page.on("pageerror", lambda e: console.append(f"pageerror: {e}"))
    page.on("dialog", lambda d: (console.append(f"dialog: {d.message}"), d.dismiss()))
    started = time.perf_counter()
    page.goto(path.as_uri(), wait_until="load")
    seconds = time.perf_counter() - started
    try:
        yield Opened(page, requests, console, seconds)
    finally:
        context.close()


@pytest.fixture
def opened(browser: Any, sample_report: Path) -> Iterator[Opened]:
    yield from open_report(browser, sample_report)


def test_loads_offline_fast_and_clean(opened: Opened, artifacts: Path) -> None:
    print(f"loaded in {opened.seconds:.3f} s")
    assert opened.console == []
    assert opened.requests == [opened.page.url]  # the file itself, nothing else
    assert opened.seconds < LOAD_SECONDS
    shot = artifacts / "sample-report.png"
    opened.page.screenshot(path=str(shot), full_page=True)
    print(f"screenshot: {shot}")
    assert shot.stat().st_size > 10_000


def test_every_chart_has_a_size(opened: Opened) -> None:
    charts = opened.page.query_selector_all("figure.chart svg")
    names = opened.page.eval_on_selector_all("figure.chart", "els => els.map(e => e.dataset.chart)")
    assert len(charts) == len(names) >= 10
    assert {"funnel", "rejects", "checks", "lengths", "turns_per_trace"} <= set(names)
    for name, chart in zip(names, charts, strict=True):
        box = chart.bounding_box()
        assert box is not None and box["width"] > 50 and box["height"] > 50, name


def test_numbers_on_the_page_are_the_manifests(opened: Opened, sample_build: BuildReport) -> None:
    manifest = json.loads((sample_build.out / "manifest.json").read_text())
    for name, meta in manifest["configs"].items():
        for split in ("train", "validation", "test"):
            assert opened.metric(f"rows.{name}.{split}") == meta["rows"].get(split, 0)
        assert opened.metric(f"rows.{name}.total") == sum(meta["rows"].values())
    for reason, n in manifest["training_exclusions"].items():
        assert opened.metric(f"exclusions.{reason}") == n
    episodes = [i for i in manifest["inputs"] if i["kind"] == "episodes"]
    assert opened.metric("funnel.input_lines") == sum(i["lines"] for i in episodes)
    assert opened.metric("funnel.valid") == sum(i["valid"] for i in episodes)
    trained = sum(i["valid"] for i in episodes) - sum(manifest["training_exclusions"].values())
    assert opened.metric("funnel.trainable") == trained
    for name, meta in manifest["configs"].items():
        if meta["kind"] == "objective":
            assert opened.metric(f"funnel.rows.{name}") == sum(meta["rows"].values())
            assert opened.metric(f"lengths.{name}.rows") == sum(meta["rows"].values())
    assert opened.metric("rejects.total") == manifest["rejects"]["total"]
    for tile in ("input_lines", "verified", "trainable"):
        assert opened.metric(f"tile.{tile}") == opened.metric(f"funnel.{tile}")
    for i in manifest["inputs"]:
        assert opened.metric(f"input.{i['path']}.lines") == i["lines"]
    sessions = manifest["sessions"]
    assert opened.metric("sessions.sessions") == sessions["sessions"]
    assert opened.metric("sessions.verified_sessions") == sessions["verified_sessions"]
    assert opened.metric("sessions.sft_rows") == sessions["sft_rows"]
    assert opened.metric("leakage.shared_question_ids") == 0
    assert opened.metric("leakage.shared_texts") == 0
    # What the page shows is what its data attribute says.
    shown = opened.page.inner_text('[data-metric="rows.sft.train"]')
    assert int(shown.replace(",", "")) == manifest["configs"]["sft"]["rows"]["train"]


def test_rows_render_as_conversations(opened: Opened) -> None:
    page = opened.page
    for config in ("sft", "sft_turns", "dpo", "prm_stepwise", "self_correction"):
        assert page.query_selector(f'details.row[data-config="{config}"]'), config
    assert page.query_selector('details.row[data-config="sft"] .msg.role-assistant')
    assert page.query_selector('details.row[data-config="sft"] pre code')  # a code block
    labels = page.inner_text('details.row[data-config="prm_stepwise"]')
    assert "label " in labels


def test_weight_zero_messages_are_greyed(browser: Any, sample_report: Path) -> None:
    for opened in open_report(browser, sample_report):
        page = opened.page
        page.eval_on_selector_all("details.row", "els => els.forEach(e => e.open = true)")
        greyed = page.query_selector_all('.msg[data-weight="0"]')
        trained = page.query_selector_all('.msg[data-weight="1"]')
        assert greyed and trained
        opacity = page.eval_on_selector('.msg[data-weight="0"]', "e => getComputedStyle(e).opacity")
        assert float(opacity) < 1


def test_markup_in_the_data_shows_as_text(
    browser: Any, hostile_build: Path, tmp_path: Path, artifacts: Path
) -> None:
    path = write_report(hostile_build, tmp_path / "hostile.html").path
    for opened in open_report(browser, path):
        page = opened.page
        page.eval_on_selector_all("details", "els => els.forEach(e => e.open = true)")
        assert opened.console == []  # no alert() ran: a dialog would be listed
        assert page.eval_on_selector_all("script", "els => els.length") == 1
        assert page.eval_on_selector_all("img", "els => els.length") == 0
        text = page.inner_text("body")
        assert XSS in text  # shown, as text
        assert text.count(XSS) >= 3  # the conversation, the gold turn's rows, the raw reject
        page.screenshot(path=str(artifacts / "hostile-report.png"), full_page=True)
