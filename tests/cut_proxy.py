"""A TCP relay in front of a real server that can go down at a chosen moment: when one
connection has carried a given number of bytes one way (mid-stream, mid-upload), it runs
an action (stopping the server behind it, say), drops every connection and stops
listening, so that the client sees what a dead server looks like: a reset, then refused
connections. ``up()`` listens again on the same port for the rerun.

The server's own state survives (an in-memory S3 server cannot be killed without losing
the objects a test must compare); only the client's way to it dies.
"""

from __future__ import annotations

import contextlib
import re
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass

_REQUEST = re.compile(rb"^(GET|PUT|POST|HEAD|DELETE) (\S+) HTTP/1\.[01]\r\n")


@dataclass
class Trigger:
    direction: str  # "up": client to server; "down": server to client
    after: int  # bytes over every connection (from the marker on, on each that has one)
    action: Callable[[], None] | None = None
    marker: bytes = b""  # counting starts once the client has sent this
    seen: int = 0
    hang: bool = False  # then stop relaying, every connection left open: a hung server


class CutProxy:
    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.requests: list[tuple[str, str]] = []  # (method, path) of HTTP requests relayed
        self.connections: list[dict[str, int]] = []  # bytes each way, per connection
        self.cuts = 0
        self.hung = False  # nothing is relayed, nothing closed
        self._held: list[socket.socket] = []  # connections taken while hung
        self._trigger: Trigger | None = None
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._listener: socket.socket | None = None
        self.port = 0
        self.up()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def cut_when(
        self,
        direction: str,
        after: int,
        action: Callable[[], None] | None = None,
        marker: bytes = b"",
        hang: bool = False,
    ) -> None:
        self._trigger = Trigger(direction, after, action, marker, hang=hang)

    def up(self) -> None:
        self.hung = False
        if self._listener is not None:
            return
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def down(self) -> None:
        """Drop every connection (with a reset) and stop listening."""
        with self._lock:
            listener, self._listener = self._listener, None
            sockets, self._sockets = self._sockets, set()
        if listener is not None:
            listener.close()
        for sock in sockets:
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            if self.hung:  # taken, and never answered
                self._held.append(client)
                continue
            try:
                server = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self._lock:
                if self._listener is not listener:
                    client.close()
                    server.close()
                    return
                self._sockets |= {client, server}
            counts = {"up": 0, "down": 0, "armed": 0}
            self.connections.append(counts)
            for source, sink, direction in ((client, server, "up"), (server, client, "down")):
                threading.Thread(
                    target=self._pump, args=(source, sink, direction, counts), daemon=True
                ).start()

    def _pump(
        self, source: socket.socket, sink: socket.socket, direction: str, counts: dict
    ) -> None:
        while True:
            try:
                data = source.recv(1 << 16)
            except OSError:
                data = b""
            if self.hung:  # read and dropped: neither side hears from the other again
                if not data:
                    return
                continue
            if not data:
                for sock in (source, sink):
                    with contextlib.suppress(OSError):
                        sock.shutdown(socket.SHUT_RDWR)
                return
            if direction == "up" and (request := _REQUEST.match(data)):
                self.requests.append((request[1].decode(), request[2].decode()))
            trigger = self._trigger
            if trigger is not None and direction == "up" and trigger.marker in data:
                counts["armed"] = 1
            armed = trigger is not None and (counts["armed"] or not trigger.marker)
            if trigger is not None and armed and trigger.direction == direction:
                room = trigger.after - trigger.seen
                if room < len(data):
                    self._trigger = None
                    with contextlib.suppress(OSError):
                        sink.sendall(data[: max(room, 0)])
                    if trigger.action is not None:
                        trigger.action()
                    self.cuts += 1
                    if trigger.hang:
                        self.hung = True
                        continue
                    self.down()
                    return
            counts[direction] += len(data)
            if trigger is not None and armed and trigger.direction == direction:
                trigger.seen += len(data)
            try:
                sink.sendall(data)
            except OSError:
                return
