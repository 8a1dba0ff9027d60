"""Settings shared by the indexer CLI, the search CLI and the web app.

Everything comes from the environment, optionally seeded from a `.env` file in the
working directory, so one place documents every knob (see README, "Configuration").
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from dotenv import load_dotenv

from codeqa.core.errors import ConfigError


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity, which a container or taskset narrows)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _env(name: str, default: str = "") -> str:
    value = os.environ.get(name, "")
    return value.strip() if value.strip() else default


def _env_int(name: str, default: int) -> int:
    raw = _env(name)
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise ConfigError(f"{name} must be an integer, got {raw!r}") from exc


def _env_niceness(name: str, default: int) -> int:
    value = _env_int(name, default)
    if not 0 <= value <= 19:
        raise ConfigError(f"{name} must be a POSIX nice increment from 0 to 19, got {value}")
    return value


def _env_float(name: str, default: float) -> float:
    raw = _env(name)
    if not raw:
        return default
    try:
        return float(raw)
    except ValueError as exc:
        raise ConfigError(f"{name} must be a number, got {raw!r}") from exc


def _env_bool(name: str, default: bool) -> bool:
    raw = _env(name).lower()
    if not raw:
        return default
    return raw in {"1", "true", "yes", "on"}


# The file models: "auto" picks one of the shipped ones (codeqa/search/models/) by the question's
# kind (search/question_kind.py), "reports" and "structure" name one.
FILE_MODELS = ("auto", "reports", "structure")


def _env_file_model(name: str) -> str:
    value = _env(name, "auto").strip() or "auto"
    if value.lower() in FILE_MODELS:
        return value.lower()
    if not Path(value).expanduser().is_file():
        raise ConfigError(f"{name} must be {' or '.join(FILE_MODELS)}, or the path of a model file; "
                          f"{value!r} is neither")
    return str(Path(value).expanduser())


# Platforms a search can prefer among platform twins (search/twins.py knows their folder words).
PLATFORMS = ("linux", "darwin", "freebsd", "windows", "android", "ios", "wasm")


def _env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    value = _env(name, default).strip().lower() or default
    if value not in choices:
        raise ConfigError(f"{name} must be one of {', '.join(choices)}; got {value!r}")
    return value


def _env_list(name: str) -> tuple[str, ...]:
    """A comma-separated setting as its non-empty items, lowercased (host names and origins)."""
    return tuple(item.strip().lower() for item in _env(name).split(",") if item.strip())


def _env_origins(name: str) -> tuple[str, ...]:
    """Web origins as a browser sends them in `Origin`: `scheme://host[:port]`, nothing after."""
    origins = _env_list(name)
    for origin in origins:
        if not re.fullmatch(r"https?://[^/\s]+", origin):
            raise ConfigError(f"{name} takes origins like https://codeqa.example.com (scheme, host and an "
                              f"optional port, no path), got {origin!r}")
    return origins


def default_data_dir() -> Path:
    """`~/.codeqa` unless CODEQA_DATA_DIR says otherwise."""
    return Path(_env("CODEQA_DATA_DIR", str(Path.home() / ".codeqa"))).expanduser()


@dataclass(frozen=True)
class Settings:
    """One immutable bag of configuration; build it with `Settings.from_env()`."""

    data_dir: Path = field(default_factory=default_data_dir)
    lancedb_uri: str = ""  # defaults to <data_dir>/lancedb; may be s3://, gs://, az://
    max_file_bytes: int = 1_000_000
    write_batch: int = 200  # files per atomic write: bounds memory and the work a crash can lose

    # Embeddings: "local" (all-MiniLM-L6-v2 shipped in a PyPI wheel) or "openai" (any
    # OpenAI-compatible /v1/embeddings endpoint).
    embedding_provider: str = "local"
    embedding_model: str = "all-MiniLM-L6-v2"
    embedding_base_url: str = ""
    embedding_api_key: str = ""
    embedding_batch_size: int = 32
    embedding_device: str = "auto"  # local model: "auto" (a CUDA GPU when torch sees one), "cpu", "cuda"
    embedding_max_tokens: int = 128  # local model: tokens read per text (its max_seq_length); see README

    # Chat/HyDE LLM: any OpenAI-compatible endpoint; empty base URL = embedded llama.cpp.
    llm_base_url: str = ""
    llm_api_key: str = ""
    hyde_model: str = ""
    chat_model: str = ""
    llm_timeout: float = 120.0
    local_llm: bool = True  # start the embedded llama.cpp server when no endpoint is set
    # Generation on one thread (a second one, descheduled on a busy box, made it ten times
    # slower); the prompt on every core, which reads it twice as fast on an idle 2-core box
    # (docs/answers.md). The server runs niced, so searches still come first.
    local_llm_threads: int = 1
    local_llm_prompt_threads: int = field(default_factory=usable_cores)
    # How far below normal CPU priority the embedded LLM server and index runs work (POSIX nice
    # 0-19): on a machine with few cores, the web app's searches go first.
    background_niceness: int = 10

    # Search: the platform whose file of a set of platform twins (`unix/`, `win/`) is listed first
    platform: str = "linux"
    # The file model: "auto" (by the question's kind: "reports" for bug reports and changes,
    # "structure", which weighs the repository's structure, for how-it-works questions;
    # docs/retrieval.md), one of those two, or the path of a model file train_ranker.py wrote
    file_model: str = "auto"

    # Reranking: the cross-encoder that reorders the best files' definitions (search/rerank.py).
    # Off for the search API and CLI (it does not gain in every language, and costs ~0.5 s); on
    # for the chat and MCP, where an answer takes seconds anyway (docs/retrieval.md, "Reranking")
    rerank: bool = False
    rerank_chat: bool = True
    rerank_model: str = "codeqa-reranker"  # the shipped model, or a folder holding a model.onnx

    # Answers: token budgets of the prompt (defaults fit the embedded 4k-context model)
    context_tokens: int = 1800
    history_tokens: int = 600
    answer_tokens: int = 512

    # Web app
    redis_url: str = ""
    secret_key: str = ""
    history_ttl_seconds: int = 7 * 24 * 3600
    # Host names the web app answers to besides 127.0.0.1, localhost and [::1] (and the address
    # `serve --host` binds): a LAN name, or the name a reverse proxy passes on. Any other `Host`
    # gets 421, so a web page can't reach the app through DNS rebinding.
    allowed_hosts: tuple[str, ...] = ()
    # Origins (`https://codeqa.example.com`) whose pages may POST to the app besides its own, e.g.
    # the public origin of a reverse proxy that terminates TLS or rewrites `Host`.
    allowed_origins: tuple[str, ...] = ()

    # The embedded LLM server: a GGUF file of your own to run instead of the bundled
    # Qwen2.5-Coder-0.5B (see docs/answers.md); empty: the bundled model.
    local_llm_model: str = ""
    # The context budget when the embedded model answers (CODEQA_CONTEXT_TOKENS is for a
    # configured endpoint's model): a small model on a CPU answers best, and soonest, from fewer
    # sources (docs/answers.md).
    local_context_tokens: int = 1000

    @property
    def database_uri(self) -> str:
        """Where LanceDB lives: CODEQA_LANCEDB_URI, else `<data_dir>/lancedb`."""
        return self.lancedb_uri or str(self.data_dir / "lancedb")

    @classmethod
    def from_env(cls, dotenv_path: str | Path | None = None, **overrides: object) -> "Settings":
        """Read the environment (after `.env`), then apply explicit overrides."""
        load_dotenv(dotenv_path or Path.cwd() / ".env", override=False)
        data_dir = default_data_dir()
        openai_key = _env("OPENAI_API_KEY")
        settings = cls(
            data_dir=data_dir,
            lancedb_uri=_env("CODEQA_LANCEDB_URI"),
            max_file_bytes=_env_int("CODEQA_MAX_FILE_BYTES", 1_000_000),
            write_batch=max(1, _env_int("CODEQA_WRITE_BATCH", 200)),
            embedding_provider=_env("CODEQA_EMBEDDING_PROVIDER", "local").lower(),
            embedding_model=_env("CODEQA_EMBEDDING_MODEL", "all-MiniLM-L6-v2"),
            embedding_base_url=_env("CODEQA_EMBEDDING_BASE_URL"),
            embedding_api_key=_env("CODEQA_EMBEDDING_API_KEY", openai_key),
            embedding_batch_size=_env_int("CODEQA_EMBEDDING_BATCH_SIZE", 32),
            embedding_device=_env("CODEQA_EMBEDDING_DEVICE", "auto").lower(),
            embedding_max_tokens=_env_int("CODEQA_EMBEDDING_MAX_TOKENS", 128),
            llm_base_url=_env("CODEQA_LLM_BASE_URL"),
            llm_api_key=_env("CODEQA_LLM_API_KEY", openai_key),
            hyde_model=_env("CODEQA_HYDE_MODEL"),
            chat_model=_env("CODEQA_CHAT_MODEL"),
            llm_timeout=_env_float("CODEQA_LLM_TIMEOUT", 120.0),
            local_llm=_env_bool("CODEQA_LOCAL_LLM", True),
            local_llm_threads=_env_int("CODEQA_LOCAL_LLM_THREADS", 1),
            local_llm_prompt_threads=_env_int("CODEQA_LOCAL_LLM_PROMPT_THREADS", usable_cores()),
            background_niceness=_env_niceness("CODEQA_BACKGROUND_NICENESS", 10),
            platform=_env_choice("CODEQA_PLATFORM", "linux", PLATFORMS),
            file_model=_env_file_model("CODEQA_FILE_MODEL"),
            rerank=_env_bool("CODEQA_RERANK", False),
            rerank_chat=_env_bool("CODEQA_RERANK_CHAT", True),
            rerank_model=_env("CODEQA_RERANK_MODEL", "codeqa-reranker"),
            context_tokens=_env_int("CODEQA_CONTEXT_TOKENS", 1800),
            history_tokens=_env_int("CODEQA_HISTORY_TOKENS", 600),
            answer_tokens=_env_int("CODEQA_ANSWER_TOKENS", 512),
            redis_url=_env("REDIS_URL"),
            secret_key=_env("CODEQA_SECRET_KEY"),
            history_ttl_seconds=_env_int("CODEQA_HISTORY_TTL", 7 * 24 * 3600),
            allowed_hosts=_env_list("CODEQA_ALLOWED_HOSTS"),
            allowed_origins=_env_origins("CODEQA_ALLOWED_ORIGINS"),
            local_llm_model=_env("CODEQA_LOCAL_LLM_MODEL"),
            local_context_tokens=_env_int("CODEQA_LOCAL_CONTEXT_TOKENS", 1000),
        )
        return replace(settings, **overrides) if overrides else settings
