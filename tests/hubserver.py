"""A Hugging Face Hub stand-in for tests: enough of huggingface.co for the real client.

It serves the calls ``huggingface_hub`` 2.x makes for ``snapshot_download`` (repo info, the
recursive tree listing, HEAD/GET on ``/resolve/``) and for ``create_repo`` + ``create_commit``
(``/api/repos/create``, ``preupload``, the NDJSON ``commit``), with the Hub's ``X-Error-Code``
404s so the client raises its real exception types. Every upload is answered "regular" (inline
base64), so no LFS or Xet transfer is needed; clients should still set ``HF_HUB_DISABLE_XET=1``.
Repo ids must be ``org/name``. Point a client at it with ``HF_ENDPOINT=server.url`` *before*
importing huggingface_hub.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

LFS_SUFFIXES = (".safetensors", ".bin")  # stored in LFS on the Hub: their ETag is the sha256


def git_blob_sha(content: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


@dataclass
class Repo:
    commits: dict[str, dict[str, bytes]] = field(default_factory=dict)  # sha -> {path: content}
    refs: dict[str, str] = field(default_factory=dict)  # branch or tag -> sha

    def resolve(self, revision: str) -> str | None:
        return self.refs.get(revision) or (revision if revision in self.commits else None)


class NotFound(Exception):
    """A 404 the client must classify: ``code`` goes out as ``X-Error-Code``."""

    def __init__(self, code: str, message: str, commit: str | None = None):
        super().__init__(message)
        self.code, self.commit = code, commit


class HubServer:
    """The Hub on 127.0.0.1 at a free port; a context manager that starts and stops it."""

    def __init__(self) -> None:
        self.repos: dict[str, Repo] = {}
        self.lost_blobs: set[tuple[str, str]] = set()
        self.requests: list[str] = []  # "GET /api/models/org/name/revision/main", ... in arrival order
        self.trickle_s = 0.0  # > 0: each downloaded file's bytes arrive over this long, in pieces
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.hub = self  # type: ignore[attr-defined]
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def start(self) -> HubServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        """Stop answering: the port then refuses connections, like a Hub that is down."""
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> HubServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def add_repo(self, repo_id: str, folder: Path, *, branch: str | None = "main", sha: str | None = None) -> str:
        """Commit every file under ``folder`` as the new state of ``branch``; returns the sha."""
        files = {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
        return self.commit(repo_id, files, branch=branch, sha=sha)

    def commit(
        self, repo_id: str, files: dict[str, bytes], *, branch: str | None = "main", sha: str | None = None
    ) -> str:
        """Add a commit of ``files``. ``sha``: the hash a real repo's commit has (default: one made
        from the content); ``branch=None`` moves no branch, like a commit only a pull request's
        ref points at, so only its hash finds it."""
        with self.lock:
            repo = self.repos.setdefault(repo_id, Repo())
            tree = sorted((path, git_blob_sha(data)) for path, data in files.items())
            sha = sha or hashlib.sha1(json.dumps([repo_id, branch, len(repo.commits), tree]).encode()).hexdigest()
            repo.commits[sha] = dict(files)
            if branch is not None:
                repo.refs[branch] = sha
            return sha

    def lose_blob(self, repo_id: str, path: str) -> None:
        """Keep listing ``path`` but 404 on downloading it, as when a Hub blob goes missing."""
        self.lost_blobs.add((repo_id, path))

    def files_at(self, repo_id: str, revision: str) -> tuple[str, dict[str, bytes]]:
        repo = self.repos.get(repo_id)
        if repo is None:
            raise NotFound("RepoNotFound", f"Repository {repo_id} not found")
        sha = repo.resolve(revision)
        if sha is None:
            raise NotFound("RevisionNotFound", f"Invalid rev id: {revision}")
        return sha, repo.commits[sha]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        """Quiet: the test output should show the client's behaviour, not the access log."""

    @property
    def hub(self) -> HubServer:
        return self.server.hub  # type: ignore[attr-defined]

    def do_HEAD(self) -> None:
        self._dispatch(head=True)

    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def _dispatch(self, head: bool = False) -> None:
        self.hub.requests.append(f"{self.command} {self.path}")
        url = urlsplit(self.path)
        parts = [unquote(p) for p in url.path.strip("/").split("/")] if url.path.strip("/") else []
        query = parse_qs(url.query)
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            if not parts:
                return self._send(200, b"", head=head)  # the endpoint root: what reachability probes hit
            if parts[:2] == ["api", "repos"] and parts[2:] == ["create"]:
                return self._create_repo(json.loads(body))
            if parts[:2] == ["api", "validate-yaml"]:
                return self._json({})
            if parts[:2] == ["api", "models"] and len(parts) >= 4:
                repo_id, action, rest = "/".join(parts[2:4]), (parts[4:5] or ["revision"])[0], parts[5:]
                revision = rest[0] if rest else "main"
                if action == "revision":
                    return self._info(repo_id, revision)
                if action == "tree":
                    recursive = query.get("recursive", ["false"])[0].lower() == "true"
                    return self._tree(repo_id, revision, "/".join(rest[1:]), recursive)
                if action == "preupload":
                    return self._preupload(repo_id, revision, json.loads(body))
                if action == "commit":
                    return self._commit(repo_id, revision, body)
            if len(parts) >= 5 and parts[2] == "resolve":
                return self._resolve("/".join(parts[:2]), parts[3], "/".join(parts[4:]), head)
            self._send(404, b"Not Found", head=head)
        except NotFound as missing:
            headers = {"X-Error-Code": missing.code, "X-Error-Message": str(missing)}
            if missing.commit:
                headers["X-Repo-Commit"] = missing.commit
            self._json({"error": str(missing)}, 404, headers, head=head)

    def _info(self, repo_id: str, revision: str) -> None:
        sha, files = self.hub.files_at(repo_id, revision)
        self._json({"id": repo_id, "sha": sha, "private": False, "siblings": [{"rfilename": p} for p in files]})

    def _tree(self, repo_id: str, revision: str, under: str, recursive: bool) -> None:
        _, files = self.hub.files_at(repo_id, revision)
        prefix = f"{under}/" if under else ""
        entries: dict[str, dict] = {}
        for path, data in sorted(files.items()):
            if not path.startswith(prefix):
                continue
            parts = path[len(prefix) :].split("/")
            folders = [prefix + "/".join(parts[:depth]) for depth in range(1, len(parts))]
            for folder in folders if recursive else folders[:1]:
                entries.setdefault(folder, {"type": "directory", "path": folder, "size": 0, "oid": "0" * 40})
            if recursive or not folders:
                entries[path] = self._file_entry(path, data)
        self._json(list(entries.values()))

    @staticmethod
    def _file_entry(path: str, data: bytes) -> dict:
        entry = {"type": "file", "path": path, "size": len(data), "oid": git_blob_sha(data)}
        if path.endswith(LFS_SUFFIXES):
            entry["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
        return entry

    def _resolve(self, repo_id: str, revision: str, path: str, head: bool) -> None:
        sha, files = self.hub.files_at(repo_id, revision)
        if path not in files or (repo_id, path) in self.hub.lost_blobs:
            raise NotFound("EntryNotFound", f"{path} does not exist on {revision}", commit=sha)
        data = files[path]
        lfs = path.endswith(LFS_SUFFIXES)
        etag = hashlib.sha256(data).hexdigest() if lfs else git_blob_sha(data)
        headers = {"X-Repo-Commit": sha, "ETag": f'"{etag}"', "Accept-Ranges": "bytes"}
        status, start, end = 200, 0, len(data)
        wanted = self.headers.get("Range", "")
        if wanted.startswith("bytes="):
            first, _, last = wanted[len("bytes=") :].partition("-")
            status, start, end = 206, int(first or 0), int(last) + 1 if last else len(data)
            headers["Content-Range"] = f"bytes {start}-{end - 1}/{len(data)}"
        self._send(status, data[start:end], headers, head=head, trickle_s=self.hub.trickle_s)

    def _create_repo(self, request: dict) -> None:
        repo_id = "/".join(filter(None, (request.get("organization"), request["name"])))
        if repo_id in self.hub.repos:
            return self._json({"error": "You already created this model repo", "url": f"{self.hub.url}/{repo_id}"}, 409)
        self.hub.commit(repo_id, {})
        self._json({"url": f"{self.hub.url}/{repo_id}", "name": repo_id, "id": repo_id})

    def _preupload(self, repo_id: str, revision: str, request: dict) -> None:
        _, files = self.hub.files_at(repo_id, revision)
        answers = [
            {
                "path": f["path"],
                "uploadMode": "regular",
                "shouldIgnore": False,
                "oid": git_blob_sha(files[f["path"]]) if f["path"] in files else None,
            }
            for f in request["files"]
        ]
        self._json({"files": answers})

    def _commit(self, repo_id: str, branch: str, body: bytes) -> None:
        _, files = self.hub.files_at(repo_id, branch)
        files = dict(files)
        for line in body.decode().splitlines():
            item = json.loads(line)
            value = item["value"]
            if item["key"] == "file":
                files[value["path"]] = base64.b64decode(value["content"])
            elif item["key"] == "deletedFile":
                files.pop(value["path"], None)
            elif item["key"] != "header":
                return self._json({"error": f"hubserver does not support {item['key']} operations"}, 400)
        sha = self.hub.commit(repo_id, files, branch=branch)
        self._json({"commitUrl": f"{self.hub.url}/{repo_id}/commit/{sha}", "commitOid": sha, "success": True})

    def _json(self, payload: object, status: int = 200, headers: dict | None = None, head: bool = False) -> None:
        self._send(status, json.dumps(payload).encode(), {"Content-Type": "application/json", **(headers or {})}, head)

    def _send(self, status: int, body: bytes, headers: dict | None = None, head: bool = False,
              trickle_s: float = 0.0) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if head:
            return
        pieces = 10 if trickle_s else 1
        step = -(-len(body) // pieces) or 1
        for start in range(0, len(body), step):
            self.wfile.write(body[start:start + step])
            self.wfile.flush()
            time.sleep(trickle_s / pieces)
