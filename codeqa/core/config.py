"""Settings shared by the indexer, the search CLI, the web app and the MCP server.

Every setting is declared once, as a field of `Settings` with its environment variable, its
default and its help (`setting(...)`). From that one list come `Settings.from_env` (the
environment, optionally seeded from a `.env` file in the working directory), `codeqa config`
(what each setting is now) and the README's configuration table (`settings_table`; a test keeps
the two equal).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from dotenv import load_dotenv

from codeqa.core.errors import ConfigError

Parse = Callable[[str, str], Any]  # (variable name, its text) → the value, or ConfigError


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity, which a container or taskset narrows)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


# --- How a variable's text becomes a value --------------------------------------------------------


def text(name: str, raw: str) -> str:
    return raw


def lowercase(name: str, raw: str) -> str:
    return raw.lower()


def path(name: str, raw: str) -> Path:
    return Path(raw).expanduser()


def integer(low: int | None = None, high: int | None = None, what: str = "an integer") -> Parse:
    def parse(name: str, raw: str) -> int:
        try:
            value = int(raw)
        except ValueError as exc:
            raise ConfigError(f"{name} must be {what}, got {raw!r}") from exc
        if (low is not None and value < low) or (high is not None and value > high):
            raise ConfigError(f"{name} must be {what}, got {value}")
        return value

    return parse


def number(name: str, raw: str) -> float:
    try:
        return float(raw)
    except ValueError as exc:
        raise ConfigError(f"{name} must be a number, got {raw!r}") from exc


def flag(name: str, raw: str) -> bool:
    return raw.lower() in {"1", "true", "yes", "on"}


def choice(choices: tuple[str, ...]) -> Parse:
    def parse(name: str, raw: str) -> str:
        value = raw.lower()
        if value not in choices:
            raise ConfigError(f"{name} must be one of {', '.join(choices)}; got {value!r}")
        return value

    return parse


def names(name: str, raw: str) -> tuple[str, ...]:
    """A comma-separated list, its items lowercased (host names and origins)."""
    return tuple(item.strip().lower() for item in raw.split(",") if item.strip())


def origins(name: str, raw: str) -> tuple[str, ...]:
    """Web origins as a browser sends them in `Origin`: `scheme://host[:port]`, nothing after."""
    found = names(name, raw)
    for origin in found:
        if not re.fullmatch(r"https?://[^/\s]+", origin):
            raise ConfigError(
                f"{name} takes origins like https://codeqa.example.com (scheme, host and an "
                f"optional port, no path), got {origin!r}"
            )
    return found


# The file models: "auto" picks one of the shipped ones (codeqa/search/models/) by the question's
# kind (search/question_kind.py), "reports" and "structure" name one.
FILE_MODELS = ("auto", "reports", "structure")
# Platforms a search can prefer among platform twins (search/twins.py knows their folder words).
PLATFORMS = ("linux", "darwin", "freebsd", "windows", "android", "ios", "wasm")


def file_model(name: str, raw: str) -> str:
    if raw.lower() in FILE_MODELS:
        return raw.lower()
    if not Path(raw).expanduser().is_file():
        raise ConfigError(f"{name} must be {' or '.join(FILE_MODELS)}, or the path of a model file; {raw!r} is neither")
    return str(Path(raw).expanduser())


def setting(
    env: str,
    default: Any,
    help: str,
    parse: Parse = text,
    *,
    shown: str | None = None,
    fallback: str = "",
    factory: Callable[[], Any] | None = None,
    secret: bool = False,
) -> Any:
    """A field of `Settings`: read from `env` by `parse` (else from the variable `fallback` names,
    else `default`, or `factory()`); `shown` is how docs write a computed default."""
    metadata = {"env": env, "help": help, "parse": parse, "shown": shown, "fallback": fallback, "secret": secret}
    if factory is not None:
        return field(default_factory=factory, metadata=metadata)
    return field(default=default, metadata=metadata)


def _default_data_dir() -> Path:
    return Path.home() / ".codeqa"


@dataclass(frozen=True)
class Settings:
    """One immutable bag of configuration; build it with `Settings.from_env()`."""

    data_dir: Path = setting(
        "CODEQA_DATA_DIR",
        None,
        "where the index, the embedded model file, Redis data and the session secret live",
        path,
        factory=_default_data_dir,
        shown="~/.codeqa",
    )
    lancedb_uri: str = setting(
        "CODEQA_LANCEDB_URI",
        "",
        "LanceDB location; may be `s3://bucket/path`, `gs://`, `az://`",
        shown="$CODEQA_DATA_DIR/lancedb",
    )
    max_file_bytes: int = setting("CODEQA_MAX_FILE_BYTES", 1_000_000, "larger files are skipped", integer(1))
    index_processes: int = setting(
        "CODEQA_INDEX_PROCESSES",
        None,
        "processes that parse files in an index run (1: the run's own only)",
        integer(1),
        factory=usable_cores,
        shown="(every usable core)",
    )
    write_batch: int = setting(
        "CODEQA_WRITE_BATCH",
        200,
        "files per atomic write (bounds memory and what a crash can lose)",
        integer(1, what="a whole number of files, at least 1"),
    )
    cluster: str = setting(
        "CODEQA_CLUSTER",
        "",
        "a Ray cluster (`HOST:6379`) whose nodes parse and embed an index run's files (`pip install "
        "codeqa[cluster]`; `codeqa index --cluster`); this process stays the one writer",
        shown="(this machine)",
    )

    # Embeddings: the local model shipped in wheels, or any OpenAI-compatible /v1/embeddings endpoint.
    embedding_provider: str = setting(
        "CODEQA_EMBEDDING_PROVIDER",
        "local",
        "`local` or `openai` (any OpenAI-compatible `/v1/embeddings`)",
        choice(("local", "openai")),
    )
    embedding_model: str = setting(
        "CODEQA_EMBEDDING_MODEL",
        "codeqa-static",
        "local provider: a shipped model by name (`codeqa-static`, the static code model; the transformers "
        "`all-MiniLM-L6-v2` and `codeqa-matcher`), or the path of an ONNX export of your own (a file, or a "
        "folder holding `model.onnx`, as `training/export_onnx.py` writes); openai provider: e.g. "
        "`text-embedding-3-large`, or an Ollama model name",
    )
    embedding_base_url: str = setting(
        "CODEQA_EMBEDDING_BASE_URL", "", "e.g. `http://localhost:11434/v1` for Ollama", shown="OpenAI"
    )
    embedding_api_key: str = setting(
        "CODEQA_EMBEDDING_API_KEY",
        "",
        "the embedding endpoint's bearer token",
        fallback="OPENAI_API_KEY",
        shown="$OPENAI_API_KEY",
        secret=True,
    )
    embedding_batch_size: int = setting("CODEQA_EMBEDDING_BATCH_SIZE", 32, "texts per embedding call", integer(1))
    embedding_device: str = setting(
        "CODEQA_EMBEDDING_DEVICE",
        "auto",
        "local transformer: `auto` (CUDA when onnxruntime-gpu is installed, else the CPU), `cpu` or `cuda`",
        choice(("auto", "cpu", "cuda")),
    )
    embedding_max_tokens: int = setting(
        "CODEQA_EMBEDDING_MAX_TOKENS",
        128,
        "local transformer: tokens it reads of each text, rows and queries alike (1–512)",
        integer(),
    )

    # The LLM (chat and HyDE): any OpenAI-compatible endpoint; empty base URL = embedded llama.cpp.
    llm_base_url: str = setting(
        "CODEQA_LLM_BASE_URL",
        "",
        "any OpenAI-compatible endpoint: OpenAI, Ollama, vLLM, Groq, llama.cpp",
        shown="(embedded llama.cpp)",
    )
    llm_api_key: str = setting(
        "CODEQA_LLM_API_KEY",
        "",
        "the LLM endpoint's bearer token",
        fallback="OPENAI_API_KEY",
        shown="$OPENAI_API_KEY",
        secret=True,
    )
    hyde_model: str = setting("CODEQA_HYDE_MODEL", "", "a small fast model for HyDE (empty: the chat model)")
    chat_model: str = setting(
        "CODEQA_CHAT_MODEL", "", "the model that answers (empty: the endpoint's first listed model)"
    )
    llm_timeout: float = setting(
        "CODEQA_LLM_TIMEOUT",
        120.0,
        "seconds one LLM call may wait in all, retries included (an endpoint "
        "that never answers costs one timeout, then a message); a streamed answer may also pause this long "
        "between tokens",
        number,
    )
    local_llm: bool = setting(
        "CODEQA_LOCAL_LLM", True, "start the embedded Qwen2.5-Coder-0.5B server when no endpoint is set", flag
    )
    # Generation on one thread (a second one, descheduled on a busy box, made it ten times
    # slower); the prompt on every core, which reads it twice as fast on an idle 2-core box
    # (docs/answers.md). The server runs niced, so searches still come first.
    local_llm_threads: int = setting(
        "CODEQA_LOCAL_LLM_THREADS",
        1,
        "threads of the embedded server that write the answer (more only on "
        "cores that are otherwise idle: a descheduled thread stalls the rest)",
        integer(1),
    )
    local_llm_prompt_threads: int = setting(
        "CODEQA_LOCAL_LLM_PROMPT_THREADS",
        None,
        "threads of the embedded server that read the prompt (set 1 on a box whose cores are busy with other work)",
        integer(1),
        factory=usable_cores,
        shown="(every usable core)",
    )
    local_llm_model: str = setting(
        "CODEQA_LOCAL_LLM_MODEL",
        "",
        "a GGUF file of your own for the embedded server, or `qwen2.5-coder-1.5b`: the bigger shipped model "
        "(the `bigger-llm` extra; better answers, ~3× the arithmetic per token and ~2 GB of memory, docs/answers.md)",
        shown="(the bundled Qwen2.5-Coder-0.5B)",
    )
    local_context_tokens: int = setting(
        "CODEQA_LOCAL_CONTEXT_TOKENS",
        1000,
        "the context budget when the embedded model answers (`CODEQA_CONTEXT_TOKENS` is an endpoint's)",
        integer(1),
    )
    background_niceness: int = setting(
        "CODEQA_BACKGROUND_NICENESS",
        10,
        "how far below normal CPU priority (POSIX nice, 0–19) index runs "
        "and the embedded LLM server work, so searches go first",
        integer(0, 19, "a POSIX nice increment from 0 to 19"),
    )

    # Search
    file_model: str = setting(
        "CODEQA_FILE_MODEL",
        "auto",
        "the file ranking: `auto` ranks a how-it-works question with "
        "`structure` (modules, entry files, the reference graph) and a bug report or a change to make "
        "with `reports`; `reports` or `structure` for every question; or the path of a model "
        "`training/train_ranker.py` wrote",
        file_model,
    )
    platform: str = setting(
        "CODEQA_PLATFORM",
        "linux",
        "which of a set of platform twins (`src/unix/fs.c`, `src/win/fs.c`) a "
        f"search lists first: {', '.join(f'`{p}`' for p in PLATFORMS)}",
        choice(PLATFORMS),
    )
    # A repo this small is searched from memory once read (store/resident.py): the same results;
    # Django's sdist (57,861 rows), search without rerank p50 81 → 23 ms for ~0.25 GB more memory
    # (docs/benchmarks.md). Read in the background after its first search. 0: always LanceDB.
    resident_rows: int = setting(
        "CODEQA_RESIDENT_ROWS",
        60_000,
        "a server (web app, MCP, a `--batch` search) holds a repo of up to this many rows in memory "
        "and searches it there: the same results, ~4× faster, ~4 KB of memory a row (0: never)",
        integer(0),
    )
    # Reranking: the cross-encoder that reorders the best files' definitions (search/rerank.py).
    # On everywhere: over the static model's first stage it gains function hit@10 in both halves
    # of the realistic eval (docs/retrieval.md, "Reranking"); it costs ~0.5 s a search.
    rerank: bool = setting(
        "CODEQA_RERANK",
        True,
        'rerank by default in the search CLI and `/api/search` (`--no-rerank` / `"rerank": false` per query)',
        flag,
    )
    rerank_chat: bool = setting(
        "CODEQA_RERANK_CHAT",
        True,
        "rerank by default in the chat, `/api/context`, `codeqa context` and MCP's "
        "`search_code` (the UI's toggle starts from it)",
        flag,
    )
    # Every core by default: on an idle 2-core box the stage's p50 was 498 ms on two threads against
    # 869 ms on one (bench/search_bench.py --rerank-threads 1 2, docs/benchmarks.md), and 277 ms
    # since each pair runs alone on its own core (rerank.py); a server whose searches run side by
    # side can set 1, so that they share the cores.
    rerank_threads: int = setting(
        "CODEQA_RERANK_THREADS",
        None,
        "definitions the cross-encoder scores at once, one core each (set 1 where concurrent searches share the cores)",
        integer(1),
        factory=usable_cores,
        shown="(every usable core)",
    )
    rerank_model: str = setting(
        "CODEQA_RERANK_MODEL",
        "codeqa-reranker",
        "the cross-encoder: the shipped one, or a folder holding a "
        "`model.onnx` that `training/export_onnx.py --reranker` wrote",
    )

    # Answers: token budgets of the prompt (defaults fit the embedded 4k-context model)
    context_tokens: int = setting(
        "CODEQA_CONTEXT_TOKENS",
        1800,
        "what a configured endpoint's model reads of the sources (raise it for a large-context model)",
        integer(1),
    )
    history_tokens: int = setting("CODEQA_HISTORY_TOKENS", 600, "earlier turns a follow-up carries", integer(0))
    answer_tokens: int = setting("CODEQA_ANSWER_TOKENS", 512, "the longest answer", integer(1))

    # Web app
    host: str = setting("CODEQA_HOST", "127.0.0.1", "where `codeqa serve` / `python app.py` listens (`--host`)")
    port: int = setting("CODEQA_PORT", 5000, "its port (`--port`)", integer(1, 65535, "a port from 1 to 65535"))
    redis_url: str = setting("REDIS_URL", "", "e.g. `redis://localhost:6379/0`", shown="(embedded)", secret=True)
    secret_key: str = setting(
        "CODEQA_SECRET_KEY",
        "",
        "session-cookie signing key",
        shown="(generated once into `$CODEQA_DATA_DIR/secret_key`)",
        secret=True,
    )
    history_ttl_seconds: int = setting(
        "CODEQA_HISTORY_TTL", 7 * 24 * 3600, "seconds a conversation is kept after its last use", integer(1)
    )
    # Any other `Host` gets 421, so a web page can't reach the app through DNS rebinding.
    allowed_hosts: tuple[str, ...] = setting(
        "CODEQA_ALLOWED_HOSTS",
        (),
        "comma-separated host names the app answers besides loopback and `--host` (a LAN name, a proxy's)",
        names,
        shown="(none)",
    )
    allowed_origins: tuple[str, ...] = setting(
        "CODEQA_ALLOWED_ORIGINS",
        (),
        "comma-separated origins whose pages may POST to it besides its own (a TLS proxy's)",
        origins,
        shown="(none)",
    )

    @property
    def database_uri(self) -> str:
        """Where LanceDB lives: CODEQA_LANCEDB_URI, else `<data_dir>/lancedb`."""
        return self.lancedb_uri or str(self.data_dir / "lancedb")

    @classmethod
    def from_env(cls, dotenv_path: str | Path | None = None, **overrides: Any) -> Settings:
        """Read the environment (after `.env`), then apply explicit overrides."""
        load_dotenv(dotenv_path or Path.cwd() / ".env", override=False)
        values = {}
        for spec in fields(cls):
            meta = spec.metadata
            raw = _env(meta["env"]) or (_env(meta["fallback"]) if meta["fallback"] else "")
            if raw:
                values[spec.name] = meta["parse"](meta["env"], raw)
        return replace(cls(**values), **overrides) if overrides else cls(**values)

    def described(self) -> list[tuple[str, str, str, str]]:
        """(variable, its value now, its default, its help) of every setting; secrets are not shown."""
        default = Settings()
        rows = []
        for spec in fields(self):
            meta = spec.metadata
            value = getattr(self, spec.name)
            now = ("(set)" if value else "") if meta["secret"] else _written(value)
            rows.append((meta["env"], now, meta["shown"] or _written(getattr(default, spec.name)), meta["help"]))
        return rows


def _env(name: str) -> str:
    return os.environ.get(name, "").strip()


def _written(value: object) -> str:
    """A value as a user writes it in the environment."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, tuple):
        return ",".join(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def settings_table() -> str:
    """The README's configuration table, made from the declared settings."""
    lines = ["| variable | default | meaning |", "| --- | --- | --- |"]
    for env, _, default, help in Settings().described():
        shown = default if default.startswith("(") or not default else f"`{default}`"
        lines.append(f"| `{env}` | {shown} | {help} |")
    return "\n".join(lines)
