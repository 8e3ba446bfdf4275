"""The card's charts drawn by a process of their own.

Drawing is Python that holds the GIL: matplotlib's import (≈ 0.6 s) and ≈ 0.3 s a chart.
In the build's process that is a second or more at the end of every build that draws, and
the import slows the export's threads while it runs. A chart process started when the
build knows it will draw imports matplotlib on the other core meanwhile, and draws while
the build counts the row lengths. It reads pickled ``(name, numbers)`` requests on stdin
and answers each, in order, with the PNG's bytes on stdout; it ends when stdin closes.

The PNG bytes are the same as drawn in this process (the same code and matplotlib). A
process that fails, or could not start, leaves the chart to be drawn here.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import Any, BinaryIO, Protocol

from builder.report import card_charts

# What the process imports before its first request.
PRELOAD = ("matplotlib.figure", "matplotlib.backends.backend_agg", "builder.report.charts")


class ChartDrawer(Protocol):
    def submit(self, name: str, data: Mapping[str, Any]) -> Future[bytes]:
        """Chart ``name`` drawn from ``data`` (``card_charts.draw_chart``)."""
        ...

    def close(self) -> None: ...


class DrawnHere:
    """Each chart drawn in this process, when it is asked for."""

    def submit(self, name: str, data: Mapping[str, Any]) -> Future[bytes]:
        done: Future[bytes] = Future()
        done.set_result(card_charts.draw_chart(name, data))
        return done

    def close(self) -> None:
        pass


def chart_drawer() -> ChartDrawer:
    """A chart process; drawing here if none can start (no process or pipe left)."""
    try:
        return ChartProcess()
    except OSError:
        return DrawnHere()


class ChartProcess:
    """The chart process, and the charts asked of it in order. Its answers are read by a
    thread that waits on the pipe (outside the GIL)."""

    def __init__(self) -> None:
        from builder.engine.import_path import child_environment
        from builder.engine.interrupts import interrupts_ignored

        package_root = str(Path(__file__).resolve().parents[2])
        env = child_environment()  # this process's import path, not the folder's
        env["PYTHONPATH"] = os.pathsep.join((package_root, env["PYTHONPATH"]))
        # Ctrl-C reaches the whole process group: the build says so in one line, and this
        # process ends when the build closes its stdin (or ends).
        with interrupts_ignored():
            self._child = subprocess.Popen(
                [sys.executable, "-m", __name__],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=env,
            )
        self._lock, self._writing = threading.Lock(), threading.Lock()
        self._waiting: deque[Future[bytes]] = deque()
        self._failed = False
        self._reader = threading.Thread(target=self._read, name="chart-process", daemon=True)
        self._reader.start()

    def submit(self, name: str, data: Mapping[str, Any]) -> Future[bytes]:
        future: Future[bytes] = Future()
        # One request written at a time, its future queued first: answers come in that
        # order. The write may wait for the process to read it (a full pipe); ``_lock``,
        # which the reader thread takes to hand over each answer, is not held meanwhile.
        with self._writing:
            with self._lock:
                if self._failed:
                    return DrawnHere().submit(name, data)
                self._waiting.append(future)
            try:
                assert self._child.stdin is not None
                pickle.dump((name, dict(data)), self._child.stdin, pickle.HIGHEST_PROTOCOL)
                self._child.stdin.flush()
            except OSError:
                with self._lock:
                    self._failed = True
                    if future in self._waiting:  # else the reader has failed it already
                        self._waiting.remove(future)
                        future.set_exception(ChartProcessFailed("the chart process ended"))
        return future

    def _read(self) -> None:
        stdout = self._child.stdout
        assert stdout is not None
        while True:
            try:
                answer = pickle.load(stdout)
            except Exception:  # ended or broken: what is still asked is drawn here
                answer = None
            with self._lock:
                if answer is None or not self._waiting:
                    self._failed = True
                    waiting, self._waiting = list(self._waiting), deque()
                    break
                future = self._waiting.popleft()
            if isinstance(answer, bytes):
                future.set_result(answer)
            else:
                future.set_exception(ChartProcessFailed(str(answer)))
        for future in waiting:
            future.set_exception(ChartProcessFailed("the chart process ended"))

    def close(self) -> None:
        """Close its stdin and wait for it to end (killed if it does not within seconds)."""
        with self._writing, self._lock:
            self._failed = True
        if self._child.stdin is not None:
            with contextlib.suppress(OSError):
                self._child.stdin.close()
        try:
            self._child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._child.kill()
            self._child.wait()
        self._reader.join(timeout=10)


class ChartProcessFailed(RuntimeError):
    """The chart process could not draw a chart (it is drawn in the build's process)."""


def drawn(future: Future[bytes], name: str, data: Mapping[str, Any]) -> bytes:
    """The chart's bytes; drawn here if the chart process failed (a real error in the
    drawing is raised by drawing it here)."""
    try:
        return future.result()
    except ChartProcessFailed:
        return card_charts.draw_chart(name, data)


def _build_mathtext_parser() -> None:
    """Build matplotlib's mathtext parser (the lengths chart's log axis labels its ticks in
    mathtext): ≈ 0.05 s once per process, built here while the build is still exporting
    rather than during a chart it waits for. The parser is built once per process whatever
    the text, and keeps no state from one parse to the next: the PNG bytes do not change."""
    from matplotlib.mathtext import MathTextParser

    MathTextParser("agg").parse("$1$")


def serve(requests: BinaryIO, answers: BinaryIO) -> None:
    """The process's loop: a chart's PNG bytes for each request, or the error's text."""
    import importlib

    for module in PRELOAD:
        importlib.import_module(module)
    _build_mathtext_parser()
    while True:
        try:
            name, data = pickle.load(requests)
        except EOFError:
            return
        try:
            answer: bytes | str = card_charts.draw_chart(name, data)
        except Exception as exc:  # answered, so the build draws it and reports it itself
            answer = f"{type(exc).__name__}: {exc}"
        pickle.dump(answer, answers, pickle.HIGHEST_PROTOCOL)
        answers.flush()


if __name__ == "__main__":
    serve(sys.stdin.buffer, sys.stdout.buffer)
    # Every answer is flushed; the interpreter's teardown (matplotlib's) would only keep
    # the build waiting for this process to end (≈ 0.2 s).
    os._exit(0)
