"""`plan api`: the planner's questions as a small local HTTP JSON API (stdlib http.server), for scripts and apps.

    POST /plan | /what_runs | /recommend | /buy | /serve   body: the question's arguments as a JSON object
    GET  /health                                          {"status": "ok", "questions": [...]}
    GET  /questions                                       each question's input schema (its request model)

Answers are the JSON the CLI's ``--json`` prints (cli/questions.py answers all three). Bad input -> 400 with
``{"error": "<one line>"}``; bodies over MAX_BODY bytes -> 413. Binds 127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import typer

from .questions import QUESTIONS, QuestionError, answer, one_line

MAX_BODY = 64 * 1024   # a question is a few hundred bytes; this bounds what one request can make us read


class Handler(BaseHTTPRequestHandler):
    server_version = "mac-llm-planner"
    protocol_version = "HTTP/1.1"
    quiet = True

    def _send(self, status: int, body: Any) -> None:
        data = (json.dumps(body, indent=2) + "\n").encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, msg: str, code: str | None = None, fields: dict | None = None) -> None:
        """The --json error object of the command line (cli/contract.py), the HTTP status beside it."""
        from .contract import SCHEMA_VERSION

        code = code or {404: "not_found", 405: "method", 413: "too_large", 500: "internal"}.get(status, "input")
        self._send(status, {"schema_version": SCHEMA_VERSION,
                            "error": {"code": code, "message": one_line(msg), **(fields or {})}})

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        path = self.path.split("?", 1)[0].rstrip("/")
        if path == "/health":
            self._send(200, {"status": "ok", "questions": list(QUESTIONS)})
        elif path == "/questions":
            self._send(200, {q.name: {"description": q.description, "input_schema": q.input_schema()}
                             for q in QUESTIONS.values()})
        else:
            self._error(404, f"GET {path or '/'}: not found; GET /health or /questions, POST /<question>")

    def do_POST(self) -> None:  # noqa: N802
        name = self.path.split("?", 1)[0].strip("/")
        if name not in QUESTIONS:
            self._error(404, f"POST /{name}: no such question; ask one of "
                        + ", ".join(f"/{q}" for q in QUESTIONS))
            return
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            self._error(400, "Content-Length: not a number")
            return
        if length < 0 or length > MAX_BODY:
            self.close_connection = True   # the body is not read: do not reuse the connection
            self._error(413, f"body of {length} bytes: at most {MAX_BODY} bytes")
            return
        raw = self.rfile.read(length) if length else b"{}"
        try:
            args = json.loads(raw.decode("utf-8"), object_pairs_hook=_once_each)
        except RecursionError:  # '[' * 60000: the decoder's recursion, not a traceback and a dropped connection
            self._error(400, "body: not JSON (nested too deeply); give an object of arguments")
            return
        except (UnicodeDecodeError, ValueError) as e:
            self._error(400, f"body: not JSON ({e})")
            return
        try:
            result = answer(name, args)
        except QuestionError as e:
            self._error(400, str(e), e.code, e.fields)
            return
        except Exception as e:  # noqa: BLE001 - a bug in the core: one line, not a traceback
            self._error(500, f"{name}: internal error: {type(e).__name__}: {e}")
            return
        self._send(200, result)

    def _not_allowed(self) -> None:
        self.close_connection = True
        self._error(405, f"{self.command} {self.path}: use GET /health, GET /questions or POST /<question>")

    do_PUT = do_DELETE = do_PATCH = _not_allowed  # noqa: N815

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        if not self.quiet:
            super().log_message(format, *args)


def _once_each(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose every key is given once: {"model": "a", "model": "b"} kept the last one silently, where the
    command line refuses an option given twice."""
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out and out[k] != v:
            raise ValueError(f"{k[:40]!r} given twice ({str(out[k])[:40]!r} and {str(v)[:40]!r}); give it once")
        out[k] = v
    return out


def make_server(host: str = "127.0.0.1", port: int = 0, quiet: bool = True) -> ThreadingHTTPServer:
    """A bound server (port 0: any free port; read it from ``server.server_address``)."""
    handler = type("PlannerHandler", (Handler,), {"quiet": quiet})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server


def serve_in_thread(host: str = "127.0.0.1", port: int = 0) -> tuple[ThreadingHTTPServer, threading.Thread]:
    server = make_server(host, port)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    return server, t


def api_cmd(
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind (default this machine only)"),
    port: int = typer.Option(8765, "--port", help="TCP port (0: any free port)"),
    log: bool = typer.Option(False, "--log", help="Log each request on stderr"),
):
    """Local HTTP JSON API: POST /plan, /what_runs, /recommend, /buy, /serve with the question's arguments as JSON
    (same answers as --json); GET /health."""
    from planner.errors import InputError

    if not 0 <= port <= 65535:
        raise InputError(f"--port {port}: give 0 to 65535")
    try:
        server = make_server(host, port, quiet=not log)
    except OSError as e:
        raise InputError(f"--host {host} --port {port}: cannot listen there ({e.strerror or e}); "
                         "try another --port") from None
    h, p = str(server.server_address[0]), server.server_address[1]
    if not h.startswith("127.") and h != "::1":
        typer.echo(f"plan api: note: bound to {h}: other machines on the network can ask too", err=True)
    typer.echo(f"plan api: listening on http://{h}:{p} (POST /plan, /what_runs, /recommend, /buy, /serve; "
               "GET /health); Ctrl-C stops", err=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
