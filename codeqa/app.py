"""The CodeQA web chat: the Flask application factory and the production server.

    flask --app app run                # development server
    python app.py [--host H] [--port P]  # production server (waitress), 127.0.0.1:5000 by default

Routes live in `web.py`; everything they use comes from one `services.Services` per app.
"""

from __future__ import annotations

import argparse
import logging
import os
import secrets
import signal
import sys
from collections.abc import Mapping
from typing import Any

from flask import Flask

from codeqa import web
from codeqa.chat.answer import ChatBudget
from codeqa.core.config import Settings
from codeqa.core.errors import run_cli
from codeqa.services import Services

log = logging.getLogger("codeqa.app")

MAX_REQUEST_BYTES = 64 * 1024


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


def create_app(config: Mapping[str, Any] | None = None) -> Flask:
    """Build the app. `config` may carry `CODEQA_SETTINGS` (a Settings), `CODEQA_HOST` (the
    address the server is bound to: a name the app answers to) and Flask config keys."""
    app = Flask(__name__)
    app.config.update(
        MAX_CONTENT_LENGTH=MAX_REQUEST_BYTES,
        CODEQA_CHAT_BUDGET={},
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        PERMANENT_SESSION_LIFETIME=365 * 24 * 3600,
        JSON_SORT_KEYS=False,
    )
    if config:
        app.config.update(config)
    settings: Settings = app.config.get("CODEQA_SETTINGS") or Settings.from_env()
    app.config["SECRET_KEY"] = _load_secret(settings)
    budget = ChatBudget.from_settings(settings, **app.config["CODEQA_CHAT_BUDGET"])
    app.extensions["codeqa"] = Services(settings, chat_budget=budget)  # parts are built on first use
    web.register(app, web.FrontDoor.from_settings(settings, app.config.get("CODEQA_HOST", "")))
    return app


def close_app(app: Flask) -> None:
    """Stop what the app started (embedded Redis, embedded LLM server)."""
    app.extensions["codeqa"].close()


SERVE_EPILOG = """\
The app answers only requests naming 127.0.0.1, localhost, [::1] or the --host address, and
takes chat messages and other changes only from its own page, so no web page the browser
opens can use it. For a name of its own (on the LAN, or a reverse proxy that passes its
public Host on) set CODEQA_ALLOWED_HOSTS=codeqa.example.com[,...]; behind a proxy that
terminates TLS or rewrites Host, also CODEQA_ALLOWED_ORIGINS=https://codeqa.example.com."""


def build_parser(prog: str = "app.py") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Serve the CodeQA web chat (waitress).",
        epilog=SERVE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--host", help="address to listen on (default: CODEQA_HOST, else 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=int, help="port to listen on (default: CODEQA_PORT, else 5000)")
    parser.add_argument(
        "--threads",
        type=int,
        default=16,
        help="requests served at once (default 16; a chat holds one while it streams)",
    )
    return parser


def main(argv: list[str] | None = None, prog: str = "app.py") -> int:
    args = build_parser(prog).parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return run_cli(lambda: _serve(args))


def _serve(args: argparse.Namespace) -> int:
    """Start the app and serve it until stopped; `main` reports the errors a user can act on."""
    from waitress import serve

    settings = Settings.from_env()
    host, port = args.host or settings.host, args.port or settings.port
    app = create_app({"CODEQA_SETTINGS": settings, "CODEQA_HOST": host})
    try:
        app.extensions["codeqa"].start()  # load models and start embedded services before the first request
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # run atexit cleanups on `kill`
        log.info("CodeQA on http://%s:%d", host, port)
        serve(app, host=host, port=port, threads=args.threads, channel_timeout=300)
    finally:
        close_app(app)
    return 0


if __name__ == "__main__":
    sys.exit(main())
