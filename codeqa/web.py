"""The web chat's routes: the page and the JSON/SSE API (two blueprints), with their error handling.

Every route reaches CodeQA through the app's one `services.Services` (`services()`), and every
error a user can act on (`errors.CodeQAError`) becomes a JSON `{"error": message}` with the
error's own HTTP status, in one handler. `app.py` builds the Flask app around these.

The front door (`FrontDoor`) keeps web pages out: the app reads the user's code, so a page on
another site must not be able to use it from the user's browser. It answers only requests
naming one of its own hosts (DNS rebinding gives an attacker's name the app's address, not
its name), and a request that changes state or starts a chat only when it comes from the
app's own page (`Origin`, or `Referer`) and carries JSON (which a page on another origin
can't send without the app's consent).
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from flask import (
    Blueprint,
    Flask,
    Response,
    current_app,
    jsonify,
    render_template,
    request,
    session,
    stream_with_context,
)
from werkzeug.exceptions import HTTPException

from codeqa.chat.answer import ChatTurn
from codeqa.chat.chat_commands import complete_commands, completion_target, quote_argument
from codeqa.core.config import Settings
from codeqa.core.errors import UNSAFE_PATTERN, CodeQAError, is_valid_unicode, printable, user_error, without_paths
from codeqa.core.records import RepoInfo
from codeqa.parsing.languages import language_for
from codeqa.search.options import SearchOptions, check_options
from codeqa.services import Services

log = logging.getLogger("codeqa.web")

MAX_MESSAGE_CHARS = 8_000
MAX_FILE_WINDOW = 400  # lines a snippet view may return
MAX_COMPLETE_CHARS = 1_000  # of the text before the caret that /api/complete reads
MAX_CONTEXT_BUDGET = 200_000  # tokens POST /api/context may be asked to pack
MAX_LINE = 10_000_000  # a line number the file view accepts (no indexed file comes close)
SNIPPET_PADDING = 6
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)


class ApiError(CodeQAError):
    """A bad request, answered with its own HTTP status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.http_status = status


def services() -> Services:
    """The app's shared services (built by `app.create_app`)."""
    return current_app.extensions["codeqa"]


# --- Helpers -------------------------------------------------------------------------------------


def user_id() -> str:
    """The caller's server-generated id, kept in the signed session cookie."""
    if "uid" not in session:
        session["uid"] = uuid.uuid4().hex
        session.permanent = True
    return session["uid"]


def json_body() -> dict:
    """The request's JSON object (`FrontDoor` has refused any other content type)."""
    try:
        data = request.get_json(silent=True)
    except RecursionError as exc:  # json's parser recurses per level; 64 KiB holds 30,000 of them
        raise ApiError(400, "The JSON body is nested too deeply.") from exc
    if not isinstance(data, dict):
        raise ApiError(400, "The request body must be a JSON object.")
    return data


def repo_info(name: Any) -> RepoInfo:
    """The repo a request names; 404 (UnknownRepoError) when there is none by that name."""
    if not isinstance(name, str) or not name:
        raise ApiError(400, "Choose a repository (the 'repo' field).")
    return services().repo(name)


def text_field(data: dict, name: str, limit: int) -> str:
    value = data.get(name)
    if not isinstance(value, str) or not value.strip():
        raise ApiError(400, f"The '{name}' field must be a non-empty string.")
    if len(value) > limit:
        raise ApiError(413, f"The {name} has {len(value):,} characters; the limit is {limit:,}.")
    if not is_valid_unicode(value):
        raise ApiError(400, f"The '{name}' field is not valid Unicode text (it holds a lone surrogate).")
    return value


def flag(data: dict, name: str, default: bool) -> bool:
    """A JSON boolean the client may leave out (`"false"`, a string, is refused, not taken as true)."""
    value = optional_flag(data, name)
    return default if value is None else value


def optional_flag(data: dict, name: str) -> bool | None:
    """A switch the client may leave out: None lets the server's setting decide."""
    value = data.get(name)
    if value is not None and not isinstance(value, bool):
        raise ApiError(400, f"'{name}' must be true or false.")
    return value


def optional_field(data: dict, name: str) -> Any:
    """A filter the client may leave out or send empty (search checks the value itself)."""
    value = data.get(name)
    return None if value is None or value == "" else value


def repo_summary(info: RepoInfo) -> dict:
    """What a web client may know of an indexed repo: not where it lives on the server (the MCP
    server, a tool on the user's own machine, shows that)."""
    return {key: value for key, value in info.summary().items() if key != "root"}


def status_report() -> dict:
    svc = services()
    llm_status = svc.llm.status()
    rerank_status = svc.retriever.reranker().status()
    redis_ok, redis_reason = svc.store.ping()
    return public(
        {
            "llm": {"available": llm_status.available, "reason": llm_status.reason, "embedded": llm_status.embedded},
            "rerank": {"available": rerank_status.available, "reason": rerank_status.reason},
            "redis": {"ok": redis_ok, "reason": redis_reason},
        }
    )


# Fields of a response that carry messages, as opposed to data (code, file paths of the repo).
MESSAGE_FIELDS = frozenset({"message", "detail", "reason", "notices", "error"})


def public(data: Any) -> Any:
    """`data` with the server's absolute paths taken out of its messages (`errors.without_paths`):
    an error or a notice may quote a path (a model file, a log, the index) the client has no
    business knowing. Code and repo-relative paths are data and pass unchanged."""
    if isinstance(data, dict):
        return {key: (_scrub(value) if key in MESSAGE_FIELDS else public(value)) for key, value in data.items()}
    if isinstance(data, list):
        return [public(item) for item in data]
    return data


def message_text(text: str) -> str:
    """A message as it leaves the server: no server paths, and a file name the repo chose that it
    quotes shown escaped (`errors.printable`)."""
    return printable(without_paths(text))


def _scrub(value: Any) -> Any:
    if isinstance(value, str):
        return message_text(value)
    if isinstance(value, list):
        return [_scrub(item) for item in value]
    return public(value)


def sse(events: Iterator[tuple[str, dict]]) -> Iterator[str]:
    for name, data in events:
        yield f"event: {name}\ndata: {json.dumps(public(data))}\n\n"


def safe_json_for_html(data: Any) -> str:
    """JSON that can sit inside a <script type="application/json"> block without ending it."""
    return json.dumps(data).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


# --- Blueprints --------------------------------------------------------------------------------

pages = Blueprint("pages", __name__)
api = Blueprint("api", __name__, url_prefix="/api")


@pages.get("/")
def index() -> str:
    user_id()
    config = {
        "repos": [repo_summary(info) for info in services().repos()],
        "status": status_report(),
        "limits": {"message_chars": MAX_MESSAGE_CHARS},
        "defaults": {"rerank": services().settings.rerank_chat},  # the toggle is the chat's
        "unsafe_text": UNSAFE_PATTERN,
    }  # what the page escapes in the names it shows
    return render_template("index.html", config_json=safe_json_for_html(config))


@api.get("/repos")
def repos() -> Response:
    return jsonify({"repos": [repo_summary(info) for info in services().repos()]})


@api.get("/status")
def status() -> Response:
    return jsonify(status_report())


@api.post("/chat")
def chat() -> Response:
    data = json_body()
    info = repo_info(data.get("repo"))
    message = text_field(data, "message", MAX_MESSAGE_CHARS)
    turn = ChatTurn(
        user=user_id(),
        repo=info.name,
        message=message,
        hyde=flag(data, "hyde", False),
        rerank=optional_flag(data, "rerank"),
    )
    events = services().chat.run(turn)
    return Response(
        stream_with_context(sse(events)),
        mimetype="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


@api.post("/search")
def search() -> Response:
    data = json_body()
    info = repo_info(data.get("repo"))
    query = text_field(data, "query", MAX_MESSAGE_CHARS)
    options = SearchOptions(
        k=data.get("k", 10),
        hyde=flag(data, "hyde", False),
        rerank=optional_flag(data, "rerank"),
        language=optional_field(data, "lang"),
        path_prefix=optional_field(data, "path"),
    )
    result = services().retriever.search(info.name, query, options)  # QueryError (400) for bad k, lang, path
    return jsonify(public(result.to_json()))


@api.get("/complete")
def complete() -> Response:
    """Autocomplete for the message box: what the end of `text` (the text before the caret) is
    completing — a command, a symbol name or a path — and the candidates, best first."""
    info = repo_info(request.args.get("repo"))
    text = request.args.get("text", "")
    if len(text) > MAX_COMPLETE_CHARS:
        raise ApiError(413, f"Send at most {MAX_COMPLETE_CHARS:,} characters of text before the caret.")
    target = completion_target(text)
    if target is None:
        return jsonify({"target": None, "items": []})
    if target.kind == "command":
        items = complete_commands(target.prefix)
    else:
        index = services().commands.symbol_index(info)
        items = (
            index.complete_symbols(target.prefix) if target.kind == "symbol" else index.complete_paths(target.prefix)
        )
    shown = [
        {
            **item,
            "value": quote_argument(item["value"]) if target.kind == "path" else item["value"],
            "label": printable(item["label"]),
            "detail": printable(item.get("detail") or ""),
        }
        for item in items
    ]
    return jsonify({"target": {"kind": target.kind, "prefix": target.prefix, "start": target.start}, "items": shown})


@api.post("/context")
def context() -> Response:
    """What the LLM would see for a chat message: its commands resolved, the search, the packed context."""
    data = json_body()
    info = repo_info(data.get("repo"))
    message = text_field(data, "message", MAX_MESSAGE_CHARS)
    budget = data.get("budget", services().settings.context_tokens)
    if not isinstance(budget, int) or isinstance(budget, bool) or not 1 <= budget <= MAX_CONTEXT_BUDGET:
        raise ApiError(400, f"'budget' must be a number of tokens from 1 to {MAX_CONTEXT_BUDGET:,}.")
    rerank = optional_flag(data, "rerank")  # as the chat would: the context is the chat's
    options = SearchOptions(
        k=data.get("k", 8),
        hyde=flag(data, "hyde", False),
        rerank=services().settings.rerank_chat if rerank is None else rerank,
    )
    check_options(options)  # also when the message has no @codebase to search
    return jsonify(public(services().context.build(info.name, message, options, budget).to_json()))


@api.get("/history")
def history() -> Response:
    info = repo_info(request.args.get("repo"))
    messages = services().store.history(user_id(), info.name)
    return jsonify(
        {
            "messages": [
                {
                    "role": m["role"],
                    "content": m["content"],
                    "sources": m.get("sources"),
                    "facts": m.get("facts"),  # a structural question's exact lookup, listed again
                    "truncated": bool(m.get("truncated")),
                }
                for m in messages
            ]
        }
    )


@api.delete("/history")
def clear_history() -> Response:
    info = repo_info(request.args.get("repo"))
    services().store.clear(user_id(), info.name)
    return jsonify({"cleared": True})


def _line_arg(name: str, default: int) -> int:
    """A line number from the query string: plain digits, 1 to MAX_LINE (`int()` alone would take
    ` 7`, `+7`, `1_000`, other scripts' digits, and numbers of any length)."""
    raw = request.args.get(name)
    if raw is None:
        return default
    if not re.fullmatch(r"[0-9]{1,8}", raw) or not 1 <= int(raw) <= MAX_LINE:
        raise ApiError(400, f"'{name}' must be a line number from 1 to {MAX_LINE:,}.")
    return int(raw)


@api.get("/file")
def file_view() -> Response:
    info = repo_info(request.args.get("repo"))
    path = request.args.get("path") or ""
    text = services().read_file(info, path)  # 400 malformed, 404 not indexed or not a plain file, 409 changed
    start = _line_arg("start", 1)
    end = _line_arg("end", start)
    if end < start:
        raise ApiError(400, "'end' must not be before 'start'.")
    if end - start + 1 > MAX_FILE_WINDOW:
        raise ApiError(400, f"At most {MAX_FILE_WINDOW} lines at a time.")
    lines = text.splitlines()
    if start > max(len(lines), 1):
        raise ApiError(400, f"'start' is past the end of the file ({len(lines):,} lines).")
    first = max(1, start - SNIPPET_PADDING)
    last = min(len(lines), end + SNIPPET_PADDING)
    return jsonify(
        {
            "repo": info.name,
            "path": path,
            "language": language_for(path) or "text",
            "start": start,
            "end": end,
            "first_line": first,
            "total_lines": len(lines),
            "lines": lines[first - 1 : last],
        }
    )


# --- Errors and headers -------------------------------------------------------------------------


def _error(status: int, message: str) -> Response:
    response = jsonify({"error": message})
    response.status_code = status
    return response


def register_errors(app: Flask) -> None:
    """One handler for every CodeQA error, JSON for HTTP errors under /api, strict headers."""

    @app.errorhandler(CodeQAError)
    def codeqa_error(exc: CodeQAError) -> Response:
        return _error(exc.http_status, message_text(exc.message))

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> Response | HTTPException:
        if request.path.startswith("/api/") or exc.code == 413:
            message = "The request is too large." if exc.code == 413 else exc.description or ""
            return _error(exc.code or 500, message)
        return exc

    @app.errorhandler(Exception)
    def unexpected_error(exc: Exception) -> Response:
        """The disk refusing the index (`errors.user_error`) is said in one line; anything else
        is a bug: the traceback goes to the server log, the client gets no details (no paths)."""
        problem = user_error(exc)
        if isinstance(problem, CodeQAError):
            log.warning("%s %s failed: %s", request.method, request.path, exc)
            return codeqa_error(problem)
        log.exception("%s %s failed", request.method, request.path)
        return _error(500, "Internal error: the server log has the details.")

    @app.after_request
    def security_headers(response: Response) -> Response:
        response.headers.setdefault("Content-Security-Policy", CSP)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        response.headers.setdefault("X-Frame-Options", "DENY")
        return response


# --- The front door -----------------------------------------------------------------------------

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
WILDCARD_ADDRESSES = frozenset({"", "0.0.0.0", "::"})  # bound to every interface: no name of its own
STATE_CHANGING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
WITH_BODY = frozenset({"POST", "PUT", "PATCH"})


def host_name(host: str) -> str:
    """The name in a `Host` header, without its port and brackets, lowercased: `[::1]:5000` → `::1`."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def origin_of(url: str) -> str:
    """`scheme://host[:port]` of a URL (a `Referer`), as a browser writes an `Origin`."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower() if parts.scheme and parts.netloc else "null"


@dataclass(frozen=True)
class FrontDoor:
    """Which requests the app lets in (see the module's docstring): those naming one of `hosts`;
    and of those that change state, only the ones from the app's own page or one of `origins`,
    carrying JSON."""

    hosts: frozenset[str]
    origins: frozenset[str]

    @classmethod
    def from_settings(cls, settings: Settings, bound: str = "") -> FrontDoor:
        """The loopback names, the address the server is bound to (unless it is every interface's),
        and CODEQA_ALLOWED_HOSTS / CODEQA_ALLOWED_ORIGINS."""
        bound_name = host_name(bound)
        own = {bound_name} if bound_name not in WILDCARD_ADDRESSES else set()
        return cls(
            LOOPBACK_HOSTS | own | {host_name(h) for h in settings.allowed_hosts}, frozenset(settings.allowed_origins)
        )

    def refusal(self) -> ApiError | None:
        """Why the current request may not come in, if it may not."""
        if host_name(request.host) not in self.hosts:
            return ApiError(
                421,
                "This server answers only to its own host names: open it as "
                "http://127.0.0.1:PORT, or add the name to CODEQA_ALLOWED_HOSTS.",
            )
        if request.method not in STATE_CHANGING:
            return None
        sender = request.headers.get("Origin") or (origin_of(request.referrer) if request.referrer else None)
        if sender is not None and sender.lower() not in self.origins | {f"{request.scheme}://{request.host}".lower()}:
            return ApiError(
                403,
                "Only CodeQA's own page may send this request (a reverse proxy's public "
                "origin goes in CODEQA_ALLOWED_ORIGINS).",
            )
        if request.method in WITH_BODY and not request.is_json:
            return ApiError(415, "Send JSON with Content-Type: application/json.")
        return None


def register(app: Flask, front_door: FrontDoor) -> None:
    """Install the front door, the routes and their error handling on `app`."""

    @app.before_request
    def check_front_door() -> None:
        refusal = front_door.refusal()
        if refusal is not None:
            raise refusal

    app.register_blueprint(pages)
    app.register_blueprint(api)
    register_errors(app)
