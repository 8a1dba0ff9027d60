"""The one core of CodeQA: every service its faces share, built from `Settings`.

The search CLI, the indexing CLI's `list`/`remove`, the web app and the MCP server are faces
over this core (Datasette's shape: one core, several faces). A face builds one `Services`
per process and asks it for what it needs; each part is built on first use and then
shared, so a face pays only for what it uses (listing repos never loads the embedding
model, a search never starts Redis). Parts are safe to share between threads.

    from codeqa.core.config import Settings
    from codeqa.search.retrieval import SearchOptions
    from codeqa.services import Services

    with Services(Settings.from_env()) as services:   # close() on the way out
        for repo in services.repos():                       # records.RepoInfo, with .stats
            print(repo.name, repo.stats.files)
        result = services.retriever.search("myrepo", "where is the config parsed?",
                                           SearchOptions(k=5, hyde=False))
        lookup = services.commands.lookup(services.repo("myrepo"))  # @definition, @references...
        text = services.read_file(services.repo("myrepo"), "src/app.py")  # the one gate to disk

`close()` stops what it started (embedded Redis, the embedded LLM).

Errors a user can act on derive from `errors.CodeQAError`; map them once at the face.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

from codeqa.core.config import Settings
from codeqa.core.records import RepoInfo
from codeqa.store.connection import connect
from codeqa.store.index import Index

if TYPE_CHECKING:  # the chat parts are imported when first built: a CLI search never loads them
    import lancedb

    from codeqa.chat.answer import ChatBudget, ChatService
    from codeqa.chat.chat_store import ChatStore
    from codeqa.chat.context import ContextBuilder
    from codeqa.chat.resolver import CommandResolver
    from codeqa.llm.client import LLMClient
    from codeqa.search.retrieval import Retriever

T = TypeVar("T")


class Services:
    """The shared parts of CodeQA for one `Settings`, each built once, on first use."""

    def __init__(self, settings: Settings, chat_budget: ChatBudget | None = None) -> None:
        self.settings = settings
        self.chat_budget = chat_budget  # None: ChatBudget.from_settings(settings), when the chat is built
        self._lock = threading.RLock()
        self._parts: dict[str, Any] = {}

    def _part(self, name: str, build: Callable[[], T]) -> T:
        with self._lock:
            if name not in self._parts:
                self._parts[name] = build()
            return self._parts[name]

    @property
    def db(self) -> lancedb.DBConnection:
        """The LanceDB connection (local directory or object storage) every part shares."""
        return self._part("db", lambda: connect(self.settings))

    @property
    def index(self) -> Index:
        """Every indexed repo of the database: the registry, and a reader per repo (store.index)."""
        return self._part("index", lambda: Index(self.db, self.settings.resident_rows))

    @property
    def llm(self) -> LLMClient:
        """The OpenAI-compatible client; the embedded llama.cpp server starts on its first call."""
        from codeqa.llm.client import LLMClient

        return self._part("llm", lambda: LLMClient(self.settings))

    @property
    def retriever(self) -> Retriever:
        """Search (`retriever.search(repo, question, SearchOptions(...))`); loads its models.
        It shares the LLM client, built only if a search asks the LLM (HyDE)."""
        return self._part("retriever", self._build_retriever)

    def _build_retriever(self) -> Retriever:
        """The models load on a thread of their own while LanceDB is imported for the index: the
        two are most of a one-shot `codeqa search`'s start (docs/benchmarks.md, "The models load
        beside LanceDB's import")."""
        from codeqa.search.retrieval import Retriever, load_models

        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="codeqa-models") as loader:
            models = loader.submit(load_models, self.settings)
            index = self.index
            models.result()
        return Retriever(self.settings, llm=lambda: self.llm, index=index)

    @property
    def commands(self) -> CommandResolver:
        """The chat's @-commands (@definition, @references, @file, @symbols-at) on the index."""
        from codeqa.chat.resolver import CommandResolver

        return self._part("commands", lambda: CommandResolver(self.index))

    @property
    def context(self) -> ContextBuilder:
        """A message (commands + @codebase search) packed into an LLM's context."""
        from codeqa.chat.context import ContextBuilder

        return self._part("context", lambda: ContextBuilder(self.retriever, self.commands))

    @property
    def store(self) -> ChatStore:
        """Per-user chat history and context in Redis (the embedded one unless REDIS_URL is set)."""
        from codeqa.chat.chat_store import ChatStore

        return self._part(
            "store",
            lambda: ChatStore.connect(
                self.settings.redis_url, self.settings.data_dir, ttl_seconds=self.settings.history_ttl_seconds
            ),
        )

    @property
    def chat(self) -> ChatService:
        """One chat turn as a stream of events."""
        from codeqa.chat.answer import ChatBudget, ChatService

        budget = self.chat_budget or ChatBudget.from_settings(self.settings)
        return self._part("chat", lambda: ChatService(self.context, self.store, self.llm, budget))

    def repos(self) -> list[RepoInfo]:
        """Every indexed repo, by name."""
        return self.index.repos()

    def repo(self, name: str) -> RepoInfo:
        """One indexed repo; `UnknownRepoError` (404) names the ones there are."""
        return self.index.repo(name)

    def read_file(self, repo: RepoInfo, path: object) -> str:
        """The text of a file of the repo's index, as it was indexed; anything else is refused."""
        return self.index.read_file(repo, path)

    def start(self) -> None:
        """Build what a server needs now rather than during its first request (loads models)."""
        self.chat  # noqa: B018 - builds the retriever, the LLM client and the chat store

    def __enter__(self) -> Services:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop what was started (embedded Redis, an embedded LLM server this process owns);
        parts are built afresh if used again."""
        with self._lock:
            parts, self._parts = self._parts, {}
        if "store" in parts:
            parts["store"].close()
        if "llm" in parts:
            parts["llm"].close()
