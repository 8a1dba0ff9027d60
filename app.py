"""The CodeQA web chat: a Flask application factory, the chat page and the JSON/SSE API.

    flask --app app run                # development server
    python app.py [--host H] [--port P]  # production server (waitress), 127.0.0.1:5000 by default
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import secrets
import signal
import sys
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping

from flask import Blueprint, Flask, Response, current_app, jsonify, render_template, request, session, stream_with_context
from werkzeug.exceptions import HTTPException

import create_tables
from answer import ChatBudget, ChatService, ChatTurn
from chat_store import ChatStore, ChatStoreUnavailable
from config import Settings
from embeddings import EmbeddingError
from languages import language_for
from llm import LLMClient
from retrieval import QueryError, Retriever, SearchOptions

log = logging.getLogger("codeqa.app")

MAX_MESSAGE_CHARS = 8_000
MAX_REQUEST_BYTES = 64 * 1024
MAX_FILE_WINDOW = 400  # lines a snippet view may return
SNIPPET_PADDING = 6
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")


class ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


# --- Services shared by all requests -----------------------------------------------------------

@dataclass
class Services:
    settings: Settings
    store: ChatStore
    llm: LLMClient
    retriever: Retriever
    chat: ChatService

    def close(self) -> None:
        self.store.close()
        self.llm.close()


def _load_secret(settings: Settings) -> str:
    """The configured secret, or one generated once and kept in the data dir (restarts keep sessions)."""
    if settings.secret_key:
        return settings.secret_key
    path = settings.data_dir / "secret_key"
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text().strip()
    with os.fdopen(fd, "w") as handle:
        handle.write(secrets.token_hex(32))
    return path.read_text().strip()


def services() -> Services:
    """Build the heavy services once per app, on first use (model loading takes seconds)."""
    ext = current_app.extensions["codeqa"]
    with ext["lock"]:
        if ext["services"] is None:
            settings: Settings = ext["settings"]
            store = ChatStore.connect(settings.redis_url, settings.data_dir,
                                      ttl_seconds=settings.history_ttl_seconds)
            llm = LLMClient(settings)
            retriever = Retriever(settings, llm=llm)
            budget = ChatBudget.from_settings(settings, **current_app.config["CODEQA_CHAT_BUDGET"])
            ext["services"] = Services(settings, store, llm, retriever, ChatService(retriever, store, llm, budget))
        return ext["services"]


# --- Helpers -------------------------------------------------------------------------------------

def user_id() -> str:
    """The caller's server-generated id, kept in the signed session cookie."""
    if "uid" not in session:
        session["uid"] = uuid.uuid4().hex
        session.permanent = True
    return session["uid"]


def json_body() -> dict:
    if not request.is_json:
        raise ApiError(415, "Send JSON with Content-Type: application/json.")
    data = request.get_json(silent=True)
    if not isinstance(data, dict):
        raise ApiError(400, "The request body must be a JSON object.")
    return data


def repo_info(name: Any) -> create_tables.RepoInfo:
    if not isinstance(name, str) or not name:
        raise ApiError(400, "Choose a repository (the 'repo' field).")
    try:
        return create_tables.get_repo(create_tables.connect(services().settings), name)
    except create_tables.UnknownRepoError as exc:
        raise ApiError(404, str(exc)) from exc


def text_field(data: dict, name: str, limit: int) -> str:
    value = data.get(name)
    if not isinstance(value, str) or not value.strip():
        raise ApiError(400, f"The '{name}' field must be a non-empty string.")
    if len(value) > limit:
        raise ApiError(413, f"The {name} has {len(value):,} characters; the limit is {limit:,}.")
    return value


def optional_flag(data: dict, name: str) -> bool | None:
    """A switch the client may leave out: None lets the server's setting decide."""
    value = data.get(name)
    return None if value is None else bool(value)


def repo_summary(info: create_tables.RepoInfo) -> dict:
    stats = info.stats
    return {"name": info.name, "root": info.root, "files": stats.files, "methods": stats.methods,
            "classes": stats.classes, "docs": stats.docs, "references": stats.references,
            "indexed_at": info.indexed_at, "languages": stats.files_by_language}


def status_report() -> dict:
    svc = services()
    llm_status = svc.llm.status()
    rerank_status = svc.retriever.reranker().status()
    redis_ok, redis_reason = svc.store.ping()
    return {"llm": {"available": llm_status.available, "reason": llm_status.reason,
                    "embedded": llm_status.embedded},
            "rerank": {"available": rerank_status.available, "reason": rerank_status.reason},
            "redis": {"ok": redis_ok, "reason": redis_reason}}


def sse(events: Iterator[tuple[str, dict]]) -> Iterator[str]:
    for name, data in events:
        yield f"event: {name}\ndata: {json.dumps(data)}\n\n"


def safe_json_for_html(data: Any) -> str:
    """JSON that can sit inside a <script type="application/json"> block without ending it."""
    return (json.dumps(data).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


# --- Blueprints --------------------------------------------------------------------------------

pages = Blueprint("pages", __name__)
api = Blueprint("api", __name__, url_prefix="/api")


@pages.get("/")
def index() -> str:
    user_id()
    db = create_tables.connect(services().settings)
    config = {"repos": [repo_summary(info) for info in create_tables.list_repos(db)],
              "status": status_report(), "limits": {"message_chars": MAX_MESSAGE_CHARS},
              "defaults": {"rerank": services().settings.rerank}}
    return render_template("index.html", config_json=safe_json_for_html(config))


@api.get("/repos")
def repos() -> Response:
    db = create_tables.connect(services().settings)
    return jsonify({"repos": [repo_summary(info) for info in create_tables.list_repos(db)]})


@api.get("/status")
def status() -> Response:
    return jsonify(status_report())


@api.post("/chat")
def chat() -> Response:
    data = json_body()
    info = repo_info(data.get("repo"))
    message = text_field(data, "message", MAX_MESSAGE_CHARS)
    turn = ChatTurn(user=user_id(), repo=info.name, message=message, hyde=bool(data.get("hyde", True)),
                    rerank=optional_flag(data, "rerank"))
    events = services().chat.run(turn)
    return Response(stream_with_context(sse(events)), mimetype="text/event-stream",
                    headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


@api.post("/search")
def search() -> Response:
    data = json_body()
    info = repo_info(data.get("repo"))
    query = text_field(data, "query", MAX_MESSAGE_CHARS)
    try:
        k = int(data.get("k", 10))
    except (TypeError, ValueError) as exc:
        raise ApiError(400, "'k' must be an integer.") from exc
    if not 1 <= k <= 50:
        raise ApiError(400, "'k' must be between 1 and 50.")
    options = SearchOptions(k=k, hyde=bool(data.get("hyde", False)), rerank=optional_flag(data, "rerank"),
                            language=data.get("lang") or None, path_prefix=data.get("path") or None)
    result = services().retriever.search(info.name, query, options)
    return jsonify(result.to_json())


@api.get("/history")
def history() -> Response:
    info = repo_info(request.args.get("repo"))
    messages = services().store.history(user_id(), info.name)
    return jsonify({"messages": [{"role": m["role"], "content": m["content"], "sources": m.get("sources")}
                                 for m in messages]})


@api.delete("/history")
def clear_history() -> Response:
    info = repo_info(request.args.get("repo"))
    services().store.clear(user_id(), info.name)
    return jsonify({"cleared": True})


def _int_arg(name: str, default: int | None = None) -> int:
    raw = request.args.get(name)
    if raw is None and default is not None:
        return default
    try:
        value = int(raw or "")
    except ValueError as exc:
        raise ApiError(400, f"'{name}' must be a positive integer.") from exc
    if value < 1:
        raise ApiError(400, f"'{name}' must be a positive integer.")
    return value


def indexed_file(info: create_tables.RepoInfo, raw_path: Any) -> Path:
    """The on-disk file for a path of this repo's index, refusing anything else."""
    try:
        return create_tables.indexed_file_path(create_tables.connect(services().settings), info, raw_path)
    except create_tables.InvalidPathError as exc:
        raise ApiError(400, str(exc)) from exc
    except create_tables.FileNotIndexedError as exc:
        raise ApiError(404, str(exc)) from exc


@api.get("/file")
def file_view() -> Response:
    info = repo_info(request.args.get("repo"))
    path = request.args.get("path")
    target = indexed_file(info, path)
    start = _int_arg("start", 1)
    end = _int_arg("end", start)
    if end < start:
        raise ApiError(400, "'end' must not be before 'start'.")
    if end - start + 1 > MAX_FILE_WINDOW:
        raise ApiError(400, f"At most {MAX_FILE_WINDOW} lines at a time.")
    lines = target.read_text(encoding="utf-8", errors="replace").splitlines()
    first = max(1, start - SNIPPET_PADDING)
    last = min(len(lines), end + SNIPPET_PADDING)
    return jsonify({"repo": info.name, "path": path, "language": language_for(path) or "text",
                    "start": start, "end": end, "first_line": first,
                    "total_lines": len(lines), "lines": lines[first - 1:last]})


# --- Errors and headers -------------------------------------------------------------------------

def _error(status: int, message: str) -> Response:
    response = jsonify({"error": message})
    response.status_code = status
    return response


def register_errors(app: Flask) -> None:
    @app.errorhandler(ApiError)
    def api_error(exc: ApiError) -> Response:
        return _error(exc.status, exc.message)

    @app.errorhandler(ChatStoreUnavailable)
    def store_down(exc: ChatStoreUnavailable) -> Response:
        return _error(503, str(exc))

    @app.errorhandler(QueryError)
    def bad_query(exc: QueryError) -> Response:
        return _error(400, str(exc))

    @app.errorhandler(create_tables.IndexStoreError)
    def index_problem(exc: create_tables.IndexStoreError) -> Response:
        return _error(409, str(exc))

    @app.errorhandler(EmbeddingError)
    def embedding_down(exc: EmbeddingError) -> Response:
        return _error(503, str(exc))

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> Response:
        if request.path.startswith("/api/") or exc.code == 413:
            message = ("The request is too large." if exc.code == 413 else exc.description)
            return _error(exc.code or 500, message)
        return exc

    @app.after_request
    def security_headers(response: Response) -> Response:
        response.headers.setdefault("Content-Security-Policy", CSP)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        response.headers.setdefault("X-Frame-Options", "DENY")
        return response


# --- Factory -----------------------------------------------------------------------------------

def create_app(config: Mapping[str, Any] | None = None) -> Flask:
    """Build the app. `config` may carry `CODEQA_SETTINGS` (a Settings) and Flask config keys."""
    app = Flask(__name__)
    app.config.update(MAX_CONTENT_LENGTH=MAX_REQUEST_BYTES, CODEQA_CHAT_BUDGET={},
                      SESSION_COOKIE_HTTPONLY=True, SESSION_COOKIE_SAMESITE="Lax",
                      PERMANENT_SESSION_LIFETIME=365 * 24 * 3600, JSON_SORT_KEYS=False)
    if config:
        app.config.update(config)
    settings: Settings = app.config.get("CODEQA_SETTINGS") or Settings.from_env()
    app.config["SECRET_KEY"] = _load_secret(settings)
    app.extensions["codeqa"] = {"settings": settings, "services": None, "lock": threading.Lock()}
    app.register_blueprint(pages)
    app.register_blueprint(api)
    register_errors(app)
    return app


def close_app(app: Flask) -> None:
    """Stop what the app started (embedded Redis, embedded LLM server)."""
    svc = app.extensions["codeqa"]["services"]
    if svc is not None:
        svc.close()
        app.extensions["codeqa"]["services"] = None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="app.py", description="Serve the CodeQA web chat (waitress).")
    parser.add_argument("--host", default=os.environ.get("CODEQA_HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("CODEQA_PORT", "5000")))
    parser.add_argument("--threads", type=int, default=16)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from waitress import serve

    app = create_app()
    with app.app_context():
        services()  # load models and start embedded services before the first request
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # run atexit cleanups on `kill`
    log.info("CodeQA on http://%s:%d", args.host, args.port)
    try:
        serve(app, host=args.host, port=args.port, threads=args.threads, channel_timeout=300)
    finally:
        close_app(app)
    return 0


if __name__ == "__main__":
    sys.exit(main())
