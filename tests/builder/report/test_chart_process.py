"""``builder.report.chart_process``: the card's charts drawn by a process of their own are
the bytes drawn in the build's process; a process that fails leaves them to be drawn here."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from builder.report import card_charts, chart_process
from builder.report.chart_process import ChartProcess, ChartProcessFailed, drawn

NUMBERS: dict[str, Any] = {
    "funnel": {"episode lines read": 120, "valid episodes": 117, "sft rows": 98},
    "funnel_rows": ["sft rows"],
    "rejects": {"invalid_json": 2, "check: duplicate_episode_id": 1},
    "lengths": {
        "sft": np.arange(1, 400, 3, dtype=np.int32),
        "dpo": np.asarray([5, 5_000, 50_000], dtype=np.int32),
    },
}
NAMES = ("funnel", "rejects", "lengths")


@pytest.fixture
def process() -> Any:
    started = ChartProcess()
    yield started
    started.close()


def test_the_process_draws_the_bytes_drawn_here_in_order(process: ChartProcess) -> None:
    asked = [process.submit(name, NUMBERS) for name in NAMES]
    here = [card_charts.draw_chart(name, NUMBERS) for name in NAMES]
    assert [future.result(timeout=60) for future in asked] == here
    assert len(set(here)) == 3


def test_close_ends_the_process(process: ChartProcess) -> None:
    process.submit("rejects", NUMBERS).result(timeout=60)
    process.close()
    assert process._child.returncode == 0
    # asked after it ended: drawn here
    assert process.submit("rejects", NUMBERS).result() == card_charts.draw_chart("rejects", NUMBERS)


def test_a_process_that_dies_leaves_its_charts_to_be_drawn_here(process: ChartProcess) -> None:
    here = card_charts.draw_chart("funnel", NUMBERS)
    os.kill(process._child.pid, signal.SIGSTOP)  # asked, never answered
    asked = process.submit("funnel", NUMBERS)
    process._child.kill()
    with pytest.raises(ChartProcessFailed):
        asked.result(timeout=60)
    assert drawn(asked, "funnel", NUMBERS) == here
    # asked after it died: drawn here at once
    assert process.submit("funnel", NUMBERS).result(timeout=0) == here


def test_a_drawing_error_is_raised_by_drawing_it_here(process: ChartProcess) -> None:
    """The process answers with the error's text; drawn here, the error is the real one."""
    broken = {**NUMBERS, "funnel_rows": None}
    asked = process.submit("funnel", broken)
    with pytest.raises(ChartProcessFailed, match="TypeError"):
        asked.result(timeout=60)
    with pytest.raises(TypeError):
        drawn(asked, "funnel", broken)
    # and the process still answers what follows
    assert process.submit("rejects", NUMBERS).result(timeout=60).startswith(b"\x89PNG")


def test_ctrl_c_is_left_to_the_build(process: ChartProcess) -> None:
    """Ctrl-C reaches the whole process group: the chart process ignores it (the build
    stops and closes it) rather than printing a traceback of its own."""
    process.submit("rejects", NUMBERS).result(timeout=60)  # started and serving
    os.kill(process._child.pid, signal.SIGINT)
    time.sleep(0.2)
    assert process._child.poll() is None
    assert process.submit("rejects", NUMBERS).result(timeout=60).startswith(b"\x89PNG")


def test_the_process_imports_no_polars_or_arrow() -> None:
    """It starts on matplotlib alone (``card_charts`` imports no Polars or Arrow)."""
    import subprocess
    import sys

    code = (
        "import sys, builder.report.chart_process as c\n"
        "print(sorted(m for m in ('polars', 'pyarrow', 'pandas') if m in sys.modules))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "[]"
    assert chart_process.PRELOAD[0].startswith("matplotlib")


def test_when_no_process_can_start_the_charts_are_drawn_here(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_process(*args: object, **kwargs: object) -> None:
        raise OSError(24, "Too many open files")

    monkeypatch.setattr(chart_process.subprocess, "Popen", no_process)
    drawer = chart_process.chart_drawer()
    assert isinstance(drawer, chart_process.DrawnHere)
    assert drawer.submit("rejects", NUMBERS).result(timeout=0) == card_charts.draw_chart(
        "rejects", NUMBERS
    )
    drawer.close()


def test_many_charts_asked_at_once_are_all_answered(process: ChartProcess) -> None:
    """Asked faster than drawn, requests and answers larger than a pipe holds: each
    request waits for the process to read it while the answers are taken, and nothing
    blocks for good."""
    import threading

    large = {**NUMBERS, "unused": b"x" * 2**17}  # each request larger than a pipe holds
    asked: list[Any] = []
    asking = threading.Thread(
        target=lambda: asked.extend(process.submit("lengths", large) for _ in range(12))
    )
    asking.start()
    asking.join(timeout=120)
    assert not asking.is_alive(), "the requests were not all written"
    here = card_charts.draw_chart("lengths", NUMBERS)
    assert len(here) * 12 > 2**16  # more than a pipe's buffer of answers
    assert [future.result(timeout=120) for future in asked] == [here] * 12


def helper_of(process: ChartProcess) -> int:
    """The pid of the chart process's helper (forked once its imports are done)."""
    pid = process._child.pid
    for _ in range(600):
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        if children:
            return int(children[0])
        time.sleep(0.05)
    raise AssertionError("no helper")


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux's /proc")
def test_two_drawers_answer_in_order_and_close_together(process: ChartProcess) -> None:
    helper = helper_of(process)
    asked = [process.submit(name, NUMBERS) for name in (*NAMES, *NAMES)]
    here = [card_charts.draw_chart(name, NUMBERS) for name in (*NAMES, *NAMES)]
    assert [future.result(timeout=60) for future in asked] == here
    process.close()
    assert process._child.returncode == 0
    for _ in range(200):  # the helper ends with it (its requests pipe closed)
        if not Path(f"/proc/{helper}").exists() or "Z" in status_of(helper):
            break
        time.sleep(0.05)
    else:
        raise AssertionError("the helper outlived the chart process")


def status_of(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][:1]
    except OSError:
        return "Z"


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux's /proc")
def test_a_helper_that_dies_leaves_its_charts_to_the_process(process: ChartProcess) -> None:
    os.kill(helper_of(process), signal.SIGKILL)
    asked = [process.submit(name, NUMBERS) for name in NAMES]
    here = [card_charts.draw_chart(name, NUMBERS) for name in NAMES]
    assert [future.result(timeout=60) for future in asked] == here


def test_without_fork_one_process_draws_them_all(monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import pickle

    monkeypatch.setattr(chart_process._Helper, "start", classmethod(lambda cls: None))
    requests = io.BytesIO(b"".join(pickle.dumps((name, NUMBERS)) for name in NAMES))
    answers = io.BytesIO()
    chart_process.serve(requests, answers)  # type: ignore[arg-type]
    answers.seek(0)
    drawn_here = [pickle.load(answers) for _ in NAMES]
    assert drawn_here == [card_charts.draw_chart(name, NUMBERS) for name in NAMES]
