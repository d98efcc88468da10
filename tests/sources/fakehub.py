"""A local stand-in for the Hugging Face Hub HTTP API, enough for the real huggingface_hub client:
GET /api/models/{repo}[/revision/{rev}] (model_info with blobs), HEAD/GET /{repo}/resolve/{rev}/{file}
with Range (206), X-Repo-Commit, ETag and X-Error-Code headers for 404 / gated 401.

A repo can misbehave per file (``misbehave={"config.json": "endless"}``; the key "api" is its model info):
"endless" streams zeros until the client hangs up, "drip" sends one byte every DRIP_S seconds, "huge" declares and
sends HUGE_BYTES of spaces, "ignore_range" answers a ranged GET with the whole file (200)."""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

DRIP_S = 0.5
HUGE_BYTES = 200 * 10**6


class Repo:
    def __init__(self, files: dict[str, bytes | Path], gated: bool = False, sleep: float = 0.0,
                 misbehave: dict[str, str] | None = None):
        self.files, self.gated, self.sleep = files, gated, sleep
        self.misbehave = misbehave or {}
        self.sha = hashlib.sha1(repr(sorted(files)).encode()).hexdigest()

    def size(self, name: str) -> int:
        v = self.files[name]
        return v.stat().st_size if isinstance(v, Path) else len(v)

    def read(self, name: str, a: int, b: int) -> bytes:
        v = self.files[name]
        if isinstance(v, Path):
            with open(v, "rb") as f:
                f.seek(a)
                return f.read(b - a + 1)
        return v[a:b + 1]


class FakeHub:
    def __init__(self):
        self.repos: dict[str, Repo] = {}
        self.requests: list[str] = []
        hub = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_HEAD(self):
                hub._serve(self, head=True)

            def do_GET(self):
                hub._serve(self, head=False)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.server.daemon_threads = True
        self.server.handle_error = lambda *a: None  # clients that time out close the socket mid-answer
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    # ------------------------------------------------------------------ routing
    def _err(self, h, status: int, code: str, msg: str, head: bool):
        body = json.dumps({"error": msg}).encode()
        h.send_response(status)
        h.send_header("X-Error-Code", code)
        h.send_header("X-Error-Message", msg)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        if not head:
            h.wfile.write(body)

    def _repo(self, h, repo_id: str, head: bool) -> Repo | None:
        repo = self.repos.get(repo_id)
        if repo is None:
            self._err(h, 404, "RepoNotFound", "Repository not found", head)
            return None
        if repo.sleep:
            time.sleep(repo.sleep)
        if repo.gated and "authorization" not in {k.lower() for k in h.headers}:
            self._err(h, 401, "GatedRepo", "Access to model is restricted. You must be authenticated.", head)
            return None
        return repo

    def _serve(self, h, head: bool):
        path = h.path.split("?", 1)[0]
        self.requests.append(f"{h.command} {h.path}")
        m = re.match(r"^/api/models/([^/]+/[^/]+)(?:/revision/([^/]+))?$", path)
        if m:
            repo = self._repo(h, m[1], head)
            if repo is None:
                return
            if not head and repo.misbehave.get("api"):
                return self._misbehave(h, repo.misbehave["api"], repo, None)
            body = json.dumps({
                "id": m[1], "sha": repo.sha, "private": False, "gated": "manual" if repo.gated else False,
                "siblings": [{"rfilename": n, "size": repo.size(n), "blobId": hashlib.sha1(n.encode()).hexdigest()}
                             for n in sorted(repo.files)]}).encode()
            h.send_response(200)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(body)))
            h.end_headers()
            if not head:
                h.wfile.write(body)
            return
        m = re.match(r"^/([^/]+/[^/]+)/resolve/([^/]+)/(.+)$", path)
        if not m:
            return self._err(h, 404, "EntryNotFound", "no route", head)
        repo = self._repo(h, m[1], head)
        if repo is None:
            return
        fname = m[3]
        if fname not in repo.files:
            return self._err(h, 404, "EntryNotFound", f"{fname} not found", head)
        if not head and repo.misbehave.get(fname):
            return self._misbehave(h, repo.misbehave[fname], repo, fname)
        size = repo.size(fname)
        a, b, status = 0, size - 1, 200
        rng = h.headers.get("Range") or h.headers.get("range")
        if rng and not head:
            rm = re.match(r"bytes=(\d+)-(\d*)", rng)
            a = int(rm[1])
            b = min(int(rm[2]) if rm[2] else size - 1, size - 1)
            status = 206
        body = b"" if head else repo.read(fname, a, b)
        h.send_response(status)
        h.send_header("X-Repo-Commit", repo.sha)
        h.send_header("ETag", '"' + hashlib.sha1(f"{repo.sha}/{fname}".encode()).hexdigest() + '"')
        h.send_header("Accept-Ranges", "bytes")
        h.send_header("Content-Length", str(size if head else len(body)))
        if status == 206:
            h.send_header("Content-Range", f"bytes {a}-{b}/{size}")
        h.end_headers()
        if not head:
            h.wfile.write(body)


    def _misbehave(self, h, mode: str, repo: Repo, fname: str | None):
        """Hostile answers; each ends when the client hangs up (BrokenPipe / ConnectionReset)."""
        try:
            h.send_response(200)
            h.send_header("X-Repo-Commit", repo.sha)
            if mode == "huge":
                h.send_header("Content-Length", str(HUGE_BYTES))
            elif mode == "ignore_range":
                h.send_header("Content-Length", str(repo.size(fname)))
            h.end_headers()
            if mode == "endless":
                while True:
                    h.wfile.write(b"0" * 2**20)
            elif mode == "drip":
                while True:
                    h.wfile.write(b" ")
                    h.wfile.flush()
                    time.sleep(DRIP_S)
            elif mode == "huge":
                for _ in range(HUGE_BYTES // 2**20):
                    h.wfile.write(b" " * 2**20)
            elif mode == "ignore_range":
                size, pos = repo.size(fname), 0
                while pos < size:
                    chunk = repo.read(fname, pos, min(pos + 2**20, size) - 1)
                    h.wfile.write(chunk)
                    pos += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass


def fixture_config(repo: str) -> bytes:
    """A recorded config.json from tests/sources/fixtures/hub/<repo>/."""
    return (Path(__file__).parent / "fixtures" / "hub" / repo / "config.json").read_bytes()
