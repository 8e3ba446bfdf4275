"""Builds for the report's tests: the sample (``tests/conftest.py``), and a small build whose
agent text and rejected line carry markup that must show as text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from builder.config import BuildConfig
from builder.pipeline import BuildReport, build

ROOT = Path(__file__).resolve().parents[3]
SAMPLE_EPISODES = ROOT / "data" / "episodes" / "episodes.jsonl"
XSS = "<script>alert(1)</script>"
MARKUP = f'{XSS}</details></pre><img src="x" onerror="alert(2)"> & "quotes"'


def hostile_episode() -> dict:
    """The sample's first verified episode with markup in its reasoning and messages (fields
    no hash covers, so it still verifies and trains)."""
    for line in SAMPLE_EPISODES.read_text(encoding="utf-8").splitlines():
        episode = json.loads(line)
        if episode.get("verified") and episode.get("conversation_for_sft"):
            break
    episode["teacher_gold_trace"]["turns"][0]["reasoning"] = f"Let me look. {MARKUP}"
    for message in episode["conversation_for_sft"]["messages"]:
        message["content"] = f"{MARKUP}\n{message['content']}"
    return episode


@pytest.fixture(scope="session")
def sample_report(sample_build: BuildReport, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample build's report, written once for the tests that only read it."""
    from builder.report.page import write_report

    written = write_report(sample_build.out, tmp_path_factory.mktemp("report") / "sample.html")
    print(f"sample report: {written.bytes:,} bytes in {written.seconds:.2f} s")
    return written.path


@pytest.fixture(scope="session")
def hostile_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One episode with markup in its text, and one rejected line holding a script."""
    folder = tmp_path_factory.mktemp("hostile")
    source = folder / "episodes.jsonl"
    bad = '{"episode_id": "' + XSS + '", "broken": '
    source.write_text(json.dumps(hostile_episode()) + "\n" + bad + "\n", encoding="utf-8")
    config = BuildConfig(
        episodes=(str(source),),
        out=folder / "dataset",
        rejects=folder / "rejects.jsonl",
        max_reject_ratio=1.0,
    )
    build(config)
    return folder / "dataset"


# Chromium is part of the test set-up (`make test` installs Debian's `chromium`): without it
# these tests fail, saying so. Only `make test-fast` sets REPORT_BROWSER=optional, to skip.
BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def chromium_path() -> str:
    import os
    import shutil

    named = os.environ.get("CHROMIUM")
    found = named or next((p for n in BROWSER_NAMES if (p := shutil.which(n))), None)
    if found:
        return found
    message = (
        "no Chromium found (looked for " + ", ".join(BROWSER_NAMES) + " and $CHROMIUM): "
        "install it (`apt-get install chromium`, which `make test` does) to test the report"
    )
    if os.environ.get("REPORT_BROWSER") == "optional":
        pytest.skip(message + " [skipped: REPORT_BROWSER=optional, make test-fast]")
    pytest.fail(message)


@pytest.fixture(scope="session")
def browser():  # type: ignore[no-untyped-def]
    """Headless Chromium (the system's, through Playwright's driver): no sandbox (root in a
    container), no GPU, no background networking."""
    executable = chromium_path()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("playwright is not installed: pip install -e '.[test]'")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=executable,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        yield launched
        launched.close()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """Where screenshots are kept after the run (``.artifacts/``, git-ignored)."""
    folder = ROOT / ".artifacts" / "report"
    folder.mkdir(parents=True, exist_ok=True)
    return folder
