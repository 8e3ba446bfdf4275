"""The card's charts drawn by a process of their own.

Drawing is Python that holds the GIL: matplotlib's import (≈ 0.6 s) and ≈ 0.3 s a chart.
In the build's process that is a second or more at the end of every build that draws, and
the import slows the export's threads while it runs. A chart process started when the
build knows it will draw imports matplotlib on the other core meanwhile; once imported, it
forks a helper, and the two draw the charts the build asks for at its end two at a time.
It reads pickled ``(name, numbers)`` requests on stdin and answers each, in order, with the
PNG's bytes on stdout; it ends when stdin closes.

The PNG bytes are the same as drawn in this process (the same code and matplotlib). A
process that fails, or could not start, leaves the chart to be drawn here.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import queue
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


def _answer(request: tuple[str, Mapping[str, Any]]) -> bytes | str:
    """A chart's PNG bytes, or the error's text (answered, so the build draws it and
    reports it itself)."""
    name, data = request
    try:
        return card_charts.draw_chart(name, data)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"


def _draw_loop(requests: BinaryIO, answers: BinaryIO) -> None:
    """Answer each request in turn until ``requests`` ends."""
    while True:
        try:
            request = pickle.load(requests)
        except EOFError:
            return
        pickle.dump(_answer(request), answers, pickle.HIGHEST_PROTOCOL)
        answers.flush()


class _Helper:
    """A second drawer, forked from this process once its imports are done: the build asks
    for its charts together at its very end and waits for all of them, with its own core
    idle, so two are drawn at a time (≈ 0.3 s a chart) at the cost of a fork rather than a
    second import. Forked before this process starts any thread; it keeps none of the
    build's pipes, so the build sees this process end when it ends, and it ends when its
    requests pipe closes (this process ended)."""

    def __init__(self, pid: int, requests: BinaryIO, answers: BinaryIO) -> None:
        self.pid, self.requests, self.answers = pid, requests, answers

    @classmethod
    def start(cls) -> _Helper | None:
        """The helper, or None where no process can be forked."""
        if not hasattr(os, "fork"):
            return None
        to_helper, from_helper = os.pipe(), os.pipe()
        try:
            pid = os.fork()
        except OSError:
            for fd in (*to_helper, *from_helper):
                os.close(fd)
            return None
        if pid == 0:  # the helper: its own two pipes, and not the build's
            try:
                os.close(to_helper[1])
                os.close(from_helper[0])
                null = os.open(os.devnull, os.O_RDWR)
                os.dup2(null, 0)
                os.dup2(null, 1)
                _draw_loop(os.fdopen(to_helper[0], "rb"), os.fdopen(from_helper[1], "wb"))
            finally:
                os._exit(0)
        os.close(to_helper[0])
        os.close(from_helper[1])
        return cls(pid, os.fdopen(to_helper[1], "wb"), os.fdopen(from_helper[0], "rb"))

    def ask(self, request: tuple[str, Mapping[str, Any]]) -> bool:
        """Hand ``request`` over; False if the helper is gone."""
        try:
            pickle.dump(request, self.requests, pickle.HIGHEST_PROTOCOL)
            self.requests.flush()
        except OSError:
            return False
        return True

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.requests.close()
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)


_END = object()  # a pipe ended


def _read_into(events: queue.SimpleQueue[tuple[str, Any]], kind: str, source: BinaryIO) -> None:
    while True:
        try:
            item = pickle.load(source)
        except Exception:  # ended (or broken): said once
            events.put((kind, _END))
            return
        events.put((kind, item))


def _serve_with(helper: _Helper, requests: BinaryIO, answers: BinaryIO) -> None:
    """Requests drawn by this process and the helper, two at a time, answered in order.
    Each pipe is read by a thread of its own into one queue of events, so a request is
    taken while a chart is drawn and a helper's answer while this process waits for more.
    A request goes to the helper when it is free, else is drawn here; what the helper was
    asked when it ended is drawn here."""
    events: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
    for kind, source in (("request", requests), ("helper", helper.answers)):
        threading.Thread(target=_read_into, args=(events, kind, source), daemon=True).start()
    slots: deque[list[Any]] = deque()  # [answer or None, request], in request order
    at_helper: list[Any] | None = None
    helper_alive, ended = True, False
    while not ended or slots:
        kind, item = events.get()
        if kind == "request" and item is _END:
            ended = True
        elif kind == "request":
            if at_helper is None and helper_alive and helper.ask(item):
                at_helper = [None, item]
                slots.append(at_helper)
            else:
                slots.append([_answer(item), item])
        elif item is _END:  # the helper ended
            helper_alive = False
            if at_helper is not None:
                at_helper[0], at_helper = _answer(at_helper[1]), None
        elif at_helper is not None:
            at_helper[0], at_helper = item, None
        while slots and slots[0][0] is not None:
            pickle.dump(slots.popleft()[0], answers, pickle.HIGHEST_PROTOCOL)
            answers.flush()


def serve(requests: BinaryIO, answers: BinaryIO) -> None:
    """The process's loop: a chart's PNG bytes for each request, or the error's text."""
    import importlib

    for module in PRELOAD:
        importlib.import_module(module)
    _build_mathtext_parser()
    helper = _Helper.start()
    if helper is None:
        _draw_loop(requests, answers)
        return
    try:
        _serve_with(helper, requests, answers)
    finally:
        helper.close()


if __name__ == "__main__":
    serve(sys.stdin.buffer, sys.stdout.buffer)
    # Every answer is flushed; the interpreter's teardown (matplotlib's) would only keep
    # the build waiting for this process to end (≈ 0.2 s).
    os._exit(0)
