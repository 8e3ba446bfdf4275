"""A local Hugging Face Hub over real HTTP, for the tests of code that talks to the Hub.

It implements the endpoints ``huggingface_hub`` (2.x) and ``datasets`` (5.x) call, with the
wire formats of those versions, so the real client libraries run unmodified against it:

- ``GET /api/whoami-v2``; ``POST /api/repos/create``; ``DELETE /api/repos/delete``;
  ``POST /api/validate-yaml``
- ``GET /api/{type}s/{repo}[/revision/{rev}]`` (``?blobs=true`` adds sizes and LFS info)
- ``POST /api/{type}s/{repo}/preupload/{rev}`` (upload mode, ``shouldIgnore``, remote ``oid``)
- ``POST /{type}s/{repo}.git/info/lfs/objects/batch`` (git-lfs batch API: basic transfer, and
  multipart for files above 10 MB) and ``…/objects/verify``; the uploads themselves go to a
  separate "storage" listener (like S3 behind pre-signed URLs), which never sees a token
- ``POST /api/{type}s/{repo}/commit/{branch}`` (NDJSON: header, file, lfsFile, deletedFile,
  deletedFolder; ``parentCommit`` checked), atomic
- ``POST|DELETE /api/{type}s/{repo}/tag/{rev|tag}``, ``POST|DELETE …/branch/{name}``,
  ``GET …/refs``, ``GET …/commits/{rev}``
- ``GET /api/{type}s/{repo}/tree/{rev}[/{path}]`` (``recursive``, ``expand``, cursor pagination
  with a ``Link`` header) and ``POST …/paths-info/{rev}`` (form-encoded ``paths``)
- ``HEAD|GET /{type}s/{repo}/resolve/{rev}/{path}``: ``X-Repo-Commit``, ``ETag``, ``Range``;
  LFS files answer ``302`` to the storage listener with ``X-Linked-Etag``/``X-Linked-Size``

Errors carry ``X-Error-Code`` (RepoNotFound, RevisionNotFound, EntryNotFound) and
``X-Error-Message`` like the Hub's. Xet is not implemented: clients run with
``HF_HUB_DISABLE_XET=1``. ``fail()`` injects faults (dropped connections, error statuses) and
``requests`` records every request for assertions.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import math
import re
import secrets
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlencode, urlsplit

from tests.hub_server.git import blob_oid
from tests.hub_server.state import (
    LFS_THRESHOLD,
    Commit,
    HubError,
    HubState,
    Repo,
    User,
    iso,
)

TYPES = {"models": "model", "datasets": "dataset", "spaces": "space"}
PAGE_SIZE = 1000
EXPANDED_PAGE_SIZE = 50
MULTIPART_CHUNK = 5 * 1024 * 1024


@dataclass
class Response:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def json(cls, value: Any, status: int = 200, **headers: str) -> Response:
        data = json.dumps(value).encode()
        return cls(status, data, {"Content-Type": "application/json; charset=utf-8", **headers})


@dataclass
class Fault:
    """What to do with the next ``times`` requests matching ``method`` and ``path`` (a regex).

    ``drop``: read half the request body, then close the connection without answering.
    ``drop_after``: handle the request (its effects happen) but close without answering.
    ``die``: as ``drop``, and the whole server goes down with it: both listeners close, so
    every later request is refused until ``revive()`` (the state is kept, as a real Hub's
    is on disk).
    ``status``: answer with that HTTP status instead of handling the request (with
    ``Retry-After: seconds`` when ``seconds`` is set, and ``headers``, e.g. a ``RateLimit``).
    ``truncate``: handle the request, send the headers and half the body, then close.
    ``delay``: wait ``seconds`` before handling the request (a Hub slower than the client's
    timeout: its effects still happen).
    ``trickle``: send the headers, then the body a byte every ``seconds`` (a download that
    never stalls for a timeout, and never ends in a test's time).
    """

    method: str
    path: str
    action: str = "drop"
    times: int = 1
    status: int = 500
    hits: int = 0
    seconds: float | None = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Request:
    listener: str  # "hub" or "storage"
    method: str
    path: str
    status: int  # 0: the connection was dropped
    authorization: bool
    length: int


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, hub: HubServer, listener: str, port: int = 0) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.hub = hub
        self.listener = listener

    def handle_error(self, request: Any, client_address: Any) -> None:
        # a request cut off by ``stop``, or a client gone before its answer (it timed out
        # waiting for a ``delay``), is no error of the server's
        if not self.hub.down and not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Dropped(Exception):
    pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out as separate writes
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def setup(self) -> None:
        super().setup()
        with self.server.hub._lock:
            self.server.hub._open.add(self.connection)

    def finish(self) -> None:
        with self.server.hub._lock:
            self.server.hub._open.discard(self.connection)
        super().finish()

    def do_GET(self) -> None:
        self._handle("GET")

    def do_HEAD(self) -> None:
        self._handle("HEAD")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    def _read_body(self, limit: int | None = None) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
                if limit is not None and sum(map(len, chunks)) >= limit:
                    break
            return b"".join(chunks)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length if limit is None else min(limit, length))

    def _drop(self) -> None:
        self.close_connection = True
        try:
            self.connection.setsockopt(
                socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00"
            )
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _handle(self, method: str) -> None:
        hub = self.server.hub
        if hub.down:  # accepted while the server was stopping: a dead server answers no one
            self._drop()
            return
        listener = self.server.listener
        raw = urlsplit(self.path)
        fault = hub._fault_for(listener, method, raw.path)
        auth = self.headers.get("Authorization")
        length = int(self.headers.get("Content-Length") or 0)
        if fault is not None and fault.action in ("drop", "die"):
            self._read_body(limit=max(1, length // 2) if length else 1)
            hub._record(Request(listener, method, raw.path, 0, bool(auth), length))
            if fault.action == "die":  # down before the client hears of it: it finds no one
                hub.stop()  # from this request's thread, not the listeners' own
            self._drop()
            return
        body = self._read_body() if method in ("POST", "PUT", "DELETE") else b""
        if fault is not None and fault.action == "delay":
            time.sleep(fault.seconds or 0)
        if fault is not None and fault.action == "status":
            response = Response.json({"error": "injected failure"}, fault.status)
            if fault.seconds is not None:
                response.headers["Retry-After"] = f"{fault.seconds:g}"
            response.headers.update(fault.headers)
        else:
            try:
                response = hub._dispatch(listener, method, raw.path, raw.query, self.headers, body)
            except HubError as exc:
                response = Response.json(
                    {"error": exc.message},
                    exc.status,
                    **{"X-Error-Message": exc.message},
                    **({"X-Error-Code": exc.code} if exc.code else {}),
                    **exc.headers,
                )
            except Exception as exc:  # a bug in the server: answer 500, keep serving
                response = Response.json({"error": f"test hub server error: {exc!r}"}, 500)
        if fault is not None and fault.action == "drop_after":
            hub._record(Request(listener, method, raw.path, 0, bool(auth), len(body)))
            self._drop()
            return
        hub._record(Request(listener, method, raw.path, response.status, bool(auth), len(body)))
        self.send_response(response.status)
        headers = {"Content-Length": str(len(response.body)), **response.headers}
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        if method == "HEAD":
            return
        if fault is not None and fault.action == "trickle":
            for byte in response.body:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(fault.seconds or 1)
            return
        if fault is not None and fault.action == "truncate" and response.body:
            self.wfile.write(response.body[: len(response.body) // 2])
            self.wfile.flush()
            self._drop()
            return
        self.wfile.write(response.body)


def _bool(value: str | None) -> bool:
    return (value or "").lower() in ("1", "true", "yes")


class HubServer:
    """Two listeners: the Hub (``url``) and its object storage (``storage_url``)."""

    def __init__(self, users: list[User] | None = None) -> None:
        self.state = HubState(users or [User("tester", "hf_test_write_token", orgs=("org",))])
        self.requests: list[Request] = []
        self.faults: list[Fault] = []
        self._secret = secrets.token_bytes(16)
        self._lock = threading.Lock()
        self._servers = [_Server(self, "hub"), _Server(self, "storage")]
        self._threads: list[threading.Thread] = []
        self._open: set[socket.socket] = set()  # kept-alive connections, closed by ``stop``
        self.down = False

    # ------------------------------------------------------------------ lifecycle

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._servers[0].server_address[1]}"

    @property
    def storage_url(self) -> str:
        return f"http://127.0.0.1:{self._servers[1].server_address[1]}"

    def start(self) -> HubServer:
        for server in self._servers:
            thread = threading.Thread(target=server.serve_forever, daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> None:
        with self._lock:
            if self.down:
                return
            self.down = True
            open_now, self._open = self._open, set()
        for server in self._servers:
            server.shutdown()
            server.server_close()
        for connection in open_now:  # a dead server's clients lose their kept-alive ones too
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)

    def revive(self) -> None:
        """Listen again, on the same ports, after ``stop`` (or a ``die`` fault)."""
        for thread in self._threads:
            thread.join(10)
        self._threads = []
        ports = [server.server_address[1] for server in self._servers]
        self._servers = [
            _Server(self, name, port) for name, port in zip(("hub", "storage"), ports, strict=True)
        ]
        self.down = False
        self.start()

    # ------------------------------------------------------------------ test helpers

    def fail(
        self,
        method: str,
        path: str,
        action: str = "drop",
        times: int = 1,
        status: int = 500,
        seconds: float | None = None,
        headers: dict[str, str] | None = None,
    ) -> Fault:
        """Inject a fault into the next ``times`` requests matching (see ``Fault``)."""
        fault = Fault(method, path, action, times, status, seconds=seconds, headers=headers or {})
        with self._lock:
            self.faults.append(fault)
        return fault

    def clear(self) -> None:
        with self._lock:
            self.faults.clear()
            self.requests.clear()

    def repo(self, repo_id: str, repo_type: str = "dataset") -> Repo:
        return self.state.repos[f"{repo_type}s/{repo_id}"]

    def _fault_for(self, listener: str, method: str, path: str) -> Fault | None:
        with self._lock:
            for fault in self.faults:
                active = fault.hits < fault.times and fault.method in (method, "*")
                if active and re.search(fault.path, unquote(path)):
                    fault.hits += 1
                    return fault
        return None

    def _record(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)

    def _sign(self, *parts: str) -> str:
        return hmac.new(self._secret, "\0".join(parts).encode(), hashlib.sha256).hexdigest()

    # ------------------------------------------------------------------ routing

    def _dispatch(
        self, listener: str, method: str, path: str, query: str, headers: Any, body: bytes
    ) -> Response:
        params = parse_qs(query, keep_blank_values=True)
        parts = [unquote(p) for p in path.split("/")[1:]]
        if listener == "storage":
            return self._storage(method, parts, params, headers, body)
        user = self.state.user(headers.get("Authorization"))
        if parts[:1] == ["api"]:
            return self._api(method, parts[1:], params, headers, body, user)
        # /{type}s/{ns}/{name}/… (models have no prefix)
        if parts and parts[0] in TYPES and len(parts) > 3:
            repo_type, parts = TYPES[parts[0]], parts[1:]
        else:
            repo_type = "model"
        if (
            len(parts) >= 3
            and parts[1].endswith(".git")
            and parts[2:5] == ["info", "lfs", "objects"]
        ):
            repo_id = f"{parts[0]}/{parts[1][:-4]}"
            if method == "POST" and parts[5:] == ["batch"]:
                return self._lfs_batch(repo_type, repo_id, body, user)
            if method == "POST" and parts[5:] == ["verify"]:
                return self._lfs_verify(repo_type, repo_id, body, user)
        if len(parts) >= 5 and parts[2] == "resolve" and method in ("GET", "HEAD"):
            repo_id = f"{parts[0]}/{parts[1]}"
            return self._resolve(repo_type, repo_id, parts[3], "/".join(parts[4:]), headers, user)
        raise HubError(404, f"Not found: {method} {path}")

    def _api(
        self, method: str, parts: list[str], params: dict, headers: Any, body: bytes, user
    ) -> Response:
        if parts == ["whoami-v2"] and method == "GET":
            return self._whoami(user)
        if parts == ["repos", "create"] and method == "POST":
            return self._create_repo(json.loads(body or b"{}"), user)
        if parts == ["repos", "delete"] and method == "DELETE":
            payload = json.loads(body or b"{}")
            if user is None:
                raise HubError(401, "Authentication required")
            repo_id = "/".join(p for p in (payload.get("organization"), payload["name"]) if p)
            self.state.delete_repo(user, payload.get("type") or "model", repo_id)
            return Response.json({})
        if parts == ["validate-yaml"] and method == "POST":
            return self._validate_yaml(json.loads(body or b"{}"))
        if len(parts) < 3 or parts[0] not in TYPES:
            raise HubError(404, f"Not found: /api/{'/'.join(parts)}")
        repo_type, repo_id, rest = TYPES[parts[0]], f"{parts[1]}/{parts[2]}", parts[3:]
        write = method in ("POST", "PUT", "DELETE") and rest[:1] != ["paths-info"]
        repo = self.state.repo(repo_type, repo_id, user, write=write)
        with self.state.lock:
            return self._repo_api(method, repo, rest, params, headers, body, user)

    def _repo_api(
        self, method: str, repo: Repo, rest: list[str], params, headers, body: bytes, user
    ) -> Response:
        op = rest[0] if rest else ""
        if method == "GET" and not rest:
            return self._info(repo, repo.resolve("main"), params)
        if method == "GET" and op == "revision" and len(rest) >= 2:
            return self._info(repo, repo.resolve("/".join(rest[1:])), params)
        if method == "POST" and op == "preupload":
            return self._preupload(repo, "/".join(rest[1:]), json.loads(body or b"{}"))
        if method == "POST" and op == "commit":
            if _bool((params.get("create_pr") or [""])[0]):
                raise HubError(400, "Pull requests are not supported by the test Hub")
            return self._commit(repo, "/".join(rest[1:]), body, user)
        if op == "tag" and method == "POST":
            payload = json.loads(body or b"{}")
            self.state.create_tag(
                repo, "/".join(rest[1:]), payload.get("tag", ""), payload.get("message", "")
            )
            return Response.json({})
        if op == "tag" and method == "DELETE":
            self.state.delete_tag(repo, "/".join(rest[1:]))
            return Response.json({})
        if op == "branch" and method == "POST":
            payload = json.loads(body or b"{}")
            self.state.create_branch(repo, "/".join(rest[1:]), payload.get("startingPoint"))
            return Response.json({})
        if op == "branch" and method == "DELETE":
            self.state.delete_branch(repo, "/".join(rest[1:]))
            return Response.json({})
        if op == "refs" and method == "GET":
            return self._refs(repo, _bool((params.get("include_prs") or [""])[0]))
        if op == "commits" and method == "GET":
            return self._commits(repo, repo.resolve("/".join(rest[1:]) or "main"))
        if op == "tree" and method == "GET" and len(rest) >= 2:
            return self._tree(repo, rest[1], "/".join(rest[2:]).strip("/"), params)
        if op == "paths-info" and method == "POST":
            return self._paths_info(repo, "/".join(rest[1:]), headers, body)
        raise HubError(404, f"Not found: {method} /api/{repo.key}/{'/'.join(rest)}")

    # ------------------------------------------------------------------ account & repos

    def _whoami(self, user: User | None) -> Response:
        if user is None:
            raise HubError(401, "Invalid credentials in Authorization header")
        return Response.json(
            {
                "type": "user",
                "id": hashlib.sha1(user.name.encode()).hexdigest()[:24],
                "name": user.name,
                "fullname": user.name.title(),
                "email": None,
                "canPay": False,
                "isPro": False,
                "orgs": [{"type": "org", "name": org, "fullname": org} for org in user.orgs],
                "auth": {
                    "type": "access_token",
                    "accessToken": {"displayName": "tests", "role": user.role},
                },
            }
        )

    def _create_repo(self, payload: dict, user: User | None) -> Response:
        if user is None:
            raise HubError(401, "You must be authenticated to create a repo")
        name = payload.get("name") or ""
        namespace = payload.get("organization") or user.name
        repo_type = payload.get("type") or "model"
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}", name) or repo_type not in (
            "model",
            "dataset",
            "space",
        ):
            raise HubError(400, f"Invalid repo name or type: {namespace}/{name} ({repo_type})")
        private = payload.get("visibility") == "private" or bool(payload.get("private"))
        prefix = "" if repo_type == "model" else f"{repo_type}s/"
        url = f"{self.url}/{prefix}{namespace}/{name}"
        try:
            repo = self.state.create_repo(user, repo_type, f"{namespace}/{name}", private)
        except HubError as exc:
            if exc.status == 409:
                return Response.json({"error": exc.message, "url": url}, 409)
            raise
        return Response.json({"url": url, "name": repo.id, "id": repo.id})

    def _validate_yaml(self, payload: dict) -> Response:
        import yaml

        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

        content = payload.get("content") or ""
        match = re.match(r"^---\s*\n(.*?)\n---\s*(\n|$)", content, re.DOTALL)
        if not match:
            return Response.json(
                {
                    "errors": [],
                    "warnings": [{"message": "empty or missing yaml metadata in repo card"}],
                }
            )
        errors = []
        try:
            data = yaml.load(match.group(1), Loader=loader)
        except yaml.YAMLError as exc:
            data, errors = None, [{"message": f"Invalid YAML: {exc}"}]
        if data is not None and not isinstance(data, dict):
            errors.append({"message": "YAML metadata must be a mapping"})
        elif isinstance(data, dict):
            for config in data.get("configs") or []:
                if not isinstance(config, dict) or not isinstance(config.get("config_name"), str):
                    errors.append({"message": '"configs" items need a string "config_name"'})
                    break
        if errors:
            return Response.json({"errors": errors, "warnings": []}, 400)
        return Response.json({"errors": [], "warnings": []})

    def _info(self, repo: Repo, commit: Commit, params: dict) -> Response:
        blobs = _bool((params.get("blobs") or [""])[0])
        siblings = []
        for path in sorted(commit.files):
            entry = commit.files[path]
            sibling: dict[str, Any] = {"rfilename": path}
            if blobs:
                sibling["size"] = entry.size
                sibling["blobId"] = entry.oid
                if entry.sha256:
                    sibling["lfs"] = {
                        "sha256": entry.sha256,
                        "size": entry.size,
                        "pointerSize": entry.pointer_size,
                    }
            siblings.append(sibling)
        card = self.state.card_data(repo, commit)
        namespace = repo.id.split("/")[0]
        data = {
            "_id": hashlib.sha1(repo.key.encode()).hexdigest()[:24],
            "id": repo.id,
            "author": namespace,
            "sha": commit.oid,
            "lastModified": iso(commit.date),
            "createdAt": iso(repo.created_at),
            "private": repo.private,
            "gated": False,
            "disabled": False,
            "downloads": 0,
            "likes": 0,
            "tags": [],
            "siblings": siblings,
            "usedStorage": sum(len(v) for v in repo.lfs.values())
            + sum(len(v) for v in repo.blobs.values()),
        }
        if card is not None:
            data["cardData"] = card
        return Response.json(data)

    # ------------------------------------------------------------------ uploads

    def _preupload(self, repo: Repo, revision: str, payload: dict) -> Response:
        commit = repo.resolve(revision)
        ignore = [
            line.strip()
            for line in (payload.get("gitIgnore") or "").splitlines()
            if line.strip() and not line.startswith("#")
        ]
        files = []
        for item in payload.get("files", []):
            path = item["path"]
            sample = base64.b64decode(item.get("sample") or "")
            mode = self.state.upload_mode(repo, commit, path, int(item.get("size", 0)), sample)
            info: dict[str, Any] = {
                "path": path,
                "uploadMode": mode,
                "shouldIgnore": any(re.fullmatch(_glob(p), path) for p in ignore),
            }
            entry = commit.files.get(path)
            if entry is not None:
                info["oid"] = entry.sha256 or entry.oid
            files.append(info)
        return Response.json({"files": files, "commitOid": commit.oid})

    def _lfs_batch(self, repo_type: str, repo_id: str, body: bytes, user) -> Response:
        payload = json.loads(body or b"{}")
        operation = payload.get("operation")
        repo = self.state.repo(repo_type, repo_id, user, write=operation == "upload")
        objects = []
        multipart = False
        for obj in payload.get("objects", []):
            oid, size = obj.get("oid", ""), int(obj.get("size", -1))
            item: dict[str, Any] = {"oid": oid, "size": size, "authenticated": True}
            if not re.fullmatch(r"[0-9a-f]{64}", oid) or size < 0:
                item["error"] = {"code": 422, "message": "Invalid oid or size"}
            elif operation == "download":
                if oid not in repo.lfs:
                    item["error"] = {"code": 404, "message": "Object does not exist"}
                else:
                    item["actions"] = {"download": {"href": self._object_url(repo, oid)}}
            elif oid not in repo.lfs:  # already stored objects get no actions: not re-sent
                query = urlencode(
                    {"repo": repo.key, "size": size, "sig": self._sign("up", repo.key, oid)}
                )
                upload_url = f"{self.storage_url}/upload/{oid}?{query}"
                header: dict[str, str] = {}
                if size > LFS_THRESHOLD and "multipart" in payload.get("transfers", ["basic"]):
                    multipart = True
                    parts = max(1, math.ceil(size / MULTIPART_CHUNK))
                    header["chunk_size"] = str(MULTIPART_CHUNK)
                    for n in range(1, parts + 1):
                        header[f"{n:05d}"] = f"{self.storage_url}/upload/{oid}/part/{n}?{query}"
                    upload_url = f"{self.storage_url}/upload/{oid}/complete?{query}"
                prefix = "" if repo_type == "model" else f"{repo_type}s/"
                item["actions"] = {
                    "upload": {"href": upload_url, **({"header": header} if header else {})},
                    "verify": {
                        "href": f"{self.url}/{prefix}{repo_id}.git/info/lfs/objects/verify",
                        "header": {},
                    },
                }
            objects.append(item)
        return Response.json(
            {
                "transfer": "multipart" if multipart else "basic",
                "objects": objects,
                "hash_algo": "sha256",
            },
            **{"Content-Type": "application/vnd.git-lfs+json"},
        )

    def _lfs_verify(self, repo_type: str, repo_id: str, body: bytes, user) -> Response:
        repo = self.state.repo(repo_type, repo_id, user, write=True)
        payload = json.loads(body or b"{}")
        data = repo.lfs.get(payload.get("oid", ""))
        if data is None or len(data) != payload.get("size"):
            raise HubError(404, "Object not found or size mismatch")
        return Response.json({})

    def _object_url(self, repo: Repo, oid: str) -> str:
        query = urlencode({"repo": repo.key, "sig": self._sign("down", repo.key, oid)})
        return f"{self.storage_url}/objects/{oid}?{query}"

    def _storage(
        self, method: str, parts: list[str], params: dict, headers, body: bytes
    ) -> Response:
        """The object store: pre-signed uploads (basic and multipart) and ranged downloads."""
        key = (params.get("repo") or [""])[0]
        sig = (params.get("sig") or [""])[0]
        repo = self.state.repos.get(key)
        if parts[:1] == ["objects"] and method in ("GET", "HEAD") and len(parts) == 2:
            oid = parts[1]
            if repo is None or not hmac.compare_digest(sig, self._sign("down", key, oid)):
                return Response(403, b"<Error><Code>AccessDenied</Code></Error>")
            data = repo.lfs.get(oid)
            if data is None:
                return Response(404, b"<Error><Code>NoSuchKey</Code></Error>")
            return _ranged(data, f'"{oid}"', headers.get("Range"), {})
        if parts[:1] != ["upload"] or len(parts) < 2 or repo is None:
            return Response(404, b"<Error><Code>NoSuchKey</Code></Error>")
        oid = parts[1]
        if not hmac.compare_digest(sig, self._sign("up", key, oid)):
            return Response(403, b"<Error><Code>SignatureDoesNotMatch</Code></Error>")
        size = int((params.get("size") or ["-1"])[0])
        if method == "PUT" and len(parts) == 2:
            return self._store_object(repo, oid, size, body)
        if method == "PUT" and len(parts) == 4 and parts[2] == "part":
            with self.state.lock:
                repo.uploads.setdefault(oid, {})[int(parts[3])] = body
            return Response(200, b"", {"ETag": f'"{hashlib.md5(body).hexdigest()}"'})
        if method == "POST" and parts[2:] == ["complete"]:
            payload = json.loads(body or b"{}")
            with self.state.lock:
                stored = repo.uploads.pop(oid, {})
            parts = sorted(payload.get("parts", []), key=lambda p: p["partNumber"])
            chunks = []
            for part in parts:
                chunk = stored.get(part["partNumber"])
                if chunk is None or part["etag"].strip('"') != hashlib.md5(chunk).hexdigest():
                    return Response(400, b"<Error><Code>InvalidPart</Code></Error>")
                chunks.append(chunk)
            data = b"".join(chunks)
            return self._store_object(repo, oid, size, data)
        return Response(405, b"<Error><Code>MethodNotAllowed</Code></Error>")

    def _store_object(self, repo: Repo, oid: str, size: int, data: bytes) -> Response:
        if hashlib.sha256(data).hexdigest() != oid or (size >= 0 and len(data) != size):
            return Response(400, b"<Error><Code>BadDigest</Code></Error>")
        with self.state.lock:
            repo.lfs[oid] = data
        return Response(200, b"", {"ETag": f'"{hashlib.md5(data).hexdigest()}"'})

    def _commit(self, repo: Repo, branch: str, body: bytes, user: User) -> Response:
        lines = [json.loads(line) for line in body.splitlines() if line.strip()]
        if not lines or lines[0].get("key") != "header":
            raise HubError(400, "The first line of a commit must be its header")
        commit = self.state.commit(repo, user, branch, lines[0].get("value") or {}, lines[1:])
        prefix = "" if repo.type == "model" else f"{repo.type}s/"
        return Response.json(
            {
                "success": True,
                "commitOid": commit.oid,
                "commitUrl": f"{self.url}/{prefix}{repo.id}/commit/{commit.oid}",
                "hookOutput": "",
                "pullRequestUrl": None,
            }
        )

    # ------------------------------------------------------------------ reads

    def _refs(self, repo: Repo, include_prs: bool) -> Response:
        data: dict[str, Any] = {
            "branches": [
                {"name": n, "ref": f"refs/heads/{n}", "targetCommit": oid}
                for n, oid in sorted(repo.branches.items())
            ],
            "tags": [
                {"name": n, "ref": f"refs/tags/{n}", "targetCommit": t.target}
                for n, t in sorted(repo.tags.items())
            ],
            "converts": [],
        }
        if include_prs:
            data["pullRequests"] = []
        return Response.json(data)

    def _commits(self, repo: Repo, commit: Commit) -> Response:
        items = []
        current: Commit | None = commit
        while current is not None:
            items.append(
                {
                    "id": current.oid,
                    "title": current.title,
                    "message": current.message,
                    "authors": [{"user": current.author}],
                    "date": iso(current.date),
                }
            )
            current = repo.commits[current.parents[0]] if current.parents else None
        return Response.json(items)

    def _tree(self, repo: Repo, revision: str, path: str, params: dict) -> Response:
        commit = repo.resolve(revision)
        if path and path not in commit.trees:
            raise HubError(
                404, f"Entry not found: {path}", "EntryNotFound", {"X-Repo-Commit": commit.oid}
            )
        expand = _bool((params.get("expand") or [""])[0])
        recursive = _bool((params.get("recursive") or [""])[0])
        paths = self.state.listing(repo, commit, path, recursive)
        size = EXPANDED_PAGE_SIZE if expand else PAGE_SIZE
        start = int(base64.urlsafe_b64decode((params.get("cursor") or ["MA=="])[0]).decode())
        page = paths[start : start + size]
        headers = {"X-Repo-Commit": commit.oid}
        if start + size < len(paths):
            cursor = base64.urlsafe_b64encode(str(start + size).encode()).decode()
            query = urlencode({"recursive": recursive, "expand": expand, "cursor": cursor})
            prefix = f"{repo.type}s"
            encoded = "/" + quote(path, safe="") if path else ""
            url = f"{self.url}/api/{prefix}/{repo.id}/tree/{quote(revision, safe='')}{encoded}?{query}"
            headers["Link"] = f'<{url}>; rel="next"'
        infos = [self.state.path_info(repo, commit, p, expand) for p in page]
        return Response.json(infos, **headers)

    def _paths_info(self, repo: Repo, revision: str, headers: Any, body: bytes) -> Response:
        commit = repo.resolve(revision)
        if "json" in (headers.get("Content-Type") or ""):
            payload = json.loads(body or b"{}")
            paths, expand = payload.get("paths", []), bool(payload.get("expand"))
        else:
            form = parse_qs(body.decode(), keep_blank_values=True)
            paths, expand = form.get("paths", []), _bool((form.get("expand") or [""])[0])
        infos = [self.state.path_info(repo, commit, p.strip("/"), expand) for p in paths]
        return Response.json([i for i in infos if i is not None], **{"X-Repo-Commit": commit.oid})

    def _resolve(
        self, repo_type: str, repo_id: str, revision: str, path: str, headers: Any, user
    ) -> Response:
        repo = self.state.repo(repo_type, repo_id, user)
        with self.state.lock:
            commit = repo.resolve(revision)
            entry = commit.files.get(path)
            if entry is None:
                raise HubError(
                    404, f"Entry not found: {path}", "EntryNotFound", {"X-Repo-Commit": commit.oid}
                )
            common = {"X-Repo-Commit": commit.oid, "Accept-Ranges": "bytes"}
            if entry.sha256:
                return Response(
                    302,
                    b"",
                    {
                        **common,
                        "Location": self._object_url(repo, entry.sha256),
                        "X-Linked-Etag": f'"{entry.sha256}"',
                        "X-Linked-Size": str(entry.size),
                        "ETag": f'"{entry.oid}"',
                    },
                )
            data = repo.blobs[entry.oid]
        return _ranged(data, f'"{blob_oid(data)}"', headers.get("Range"), common)


def _glob(pattern: str) -> str:
    out = re.escape(pattern.strip("/")).replace(r"\*\*", ".*").replace(r"\*", "[^/]*")
    return out.replace(r"\?", ".")


def _ranged(data: bytes, etag: str, range_header: str | None, headers: dict) -> Response:
    base = {**headers, "ETag": etag, "Accept-Ranges": "bytes"}
    base["Content-Type"] = "application/octet-stream"
    if not range_header:
        return Response(200, data, base)
    match = re.fullmatch(r"bytes=(\d*)-(\d*)", range_header.strip())
    total = len(data)
    if not match or match.groups() == ("", ""):
        return Response(416, b"", {**base, "Content-Range": f"bytes */{total}"})
    first, last = match.groups()
    if first == "":
        start, end = max(0, total - int(last)), total - 1
    else:
        start = int(first)
        end = min(int(last), total - 1) if last else total - 1
    if start >= total or start > end:
        return Response(416, b"", {**base, "Content-Range": f"bytes */{total}"})
    base["Content-Range"] = f"bytes {start}-{end}/{total}"
    return Response(206, data[start : end + 1], base)


def rate_limit(seconds: int) -> dict[str, str]:
    """The Hub's own 429 headers: no request left in the window, which resets in ``seconds``."""
    return {
        "RateLimit": f'"api";r=0;t={seconds}',
        "RateLimit-Policy": '"fixed window";"api";q=500;w=300',
    }
