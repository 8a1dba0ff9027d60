"""One chat turn as a stream of events: retrieve (for @codebase) or reuse context, then answer.

Events are (name, data) pairs that the web app sends as Server-Sent Events:
    status   {"stage": hyde|search|rerank|answer, "state": start|done|skipped, "ms", "detail"}
    sources  {"results": [...], "reused": bool, "context": {"included", "trimmed", "omitted"}}
    notice   {"message", "code"}
    token    {"text"}
    error    {"message", "code"}
    done     {"timings_ms"}
"""

from __future__ import annotations

import queue
import re
import threading
import time
from dataclasses import dataclass
from typing import Iterator

import prompts
from chat_store import ChatStore, ChatStoreUnavailable, StoredContext
from context import build_context, estimate_tokens
from errors import CodeQAError, LLMUnavailable
from llm import LLMClient
from retrieval import Retriever, SearchOptions

CODEBASE_TAG = re.compile(r"@codebase\b", re.IGNORECASE)
Event = tuple[str, dict]


@dataclass(frozen=True)
class ChatBudget:
    """Token budgets of one answer's prompt, and how many sources retrieval returns."""

    context_tokens: int = 1800
    history_tokens: int = 600
    answer_tokens: int = 512
    k: int = 8

    @classmethod
    def from_settings(cls, settings, **overrides) -> "ChatBudget":
        return cls(**{"context_tokens": settings.context_tokens, "history_tokens": settings.history_tokens,
                      "answer_tokens": settings.answer_tokens, **overrides})


@dataclass(frozen=True)
class ChatTurn:
    user: str
    repo: str
    message: str
    hyde: bool = True
    rerank: bool | None = None  # None: the CODEQA_RERANK setting, as for every search


def mentions_codebase(message: str) -> bool:
    return bool(CODEBASE_TAG.search(message))


def history_window(history: list[dict], budget_tokens: int) -> list[dict]:
    """The most recent turns, whole messages only, that fit the budget, oldest first."""
    window: list[dict] = []
    used = 0
    for message in reversed(history):
        if message.get("role") not in {"user", "assistant"} or not message.get("content"):
            continue
        cost = estimate_tokens(message["content"]) + 4
        if used + cost > budget_tokens:
            break
        window.append({"role": message["role"], "content": message["content"]})
        used += cost
    window.reverse()
    return window


class ChatService:
    """Runs chat turns against one retriever, one chat store and one LLM client."""

    def __init__(self, retriever: Retriever, store: ChatStore, llm: LLMClient, budget: ChatBudget) -> None:
        self.retriever = retriever
        self.store = store
        self.llm = llm
        self.budget = budget

    def run(self, turn: ChatTurn) -> Iterator[Event]:
        started = time.perf_counter()
        timings: dict[str, float] = {}
        search = mentions_codebase(turn.message)
        try:
            history = self.store.history(turn.user, turn.repo)
            context = None if search else self.store.load_context(turn.user, turn.repo)
        except ChatStoreUnavailable as exc:
            yield "error", exc.event()
            yield "done", {"timings_ms": {}}
            return

        if search:
            for name, data in self._retrieve(turn):
                if name == "_context":
                    context = data["context"]
                    timings.update(data["timings"])
                    continue
                yield name, data
                if name == "error":
                    yield "done", {"timings_ms": timings}
                    return
        elif context:
            yield "sources", {"results": context.sources, "reused": True, "context": {}}
        else:
            yield "notice", {"code": "no_context", "message": (
                "No code has been retrieved in this conversation yet: start your message with "
                f"@codebase to search {turn.repo}.")}

        answer_parts: list[str] = []
        yield from self._answer(turn, context, history, answer_parts, timings)
        try:
            self.store.append(turn.user, turn.repo,
                              {"role": "user", "content": turn.message},
                              {"role": "assistant", "content": "".join(answer_parts),
                               "sources": context.sources if context else None})
        except ChatStoreUnavailable as exc:
            yield "notice", {"code": exc.code, "message": f"This answer was not saved: {exc}"}
        timings["total"] = (time.perf_counter() - started) * 1000
        yield "done", {"timings_ms": {k: round(v, 1) for k, v in timings.items()}}

    def _retrieve(self, turn: ChatTurn) -> Iterator[Event]:
        """Search in a worker thread, relaying its stage reports as they happen."""
        question = CODEBASE_TAG.sub(" ", turn.message).strip()
        if not question:
            yield "error", {"code": "empty_question", "message": "Ask a question after @codebase."}
            return
        events: queue.Queue = queue.Queue()
        options = SearchOptions(k=self.budget.k, hyde=turn.hyde, rerank=turn.rerank)

        def progress(stage: str, state: str, ms: float | None, detail: str) -> None:
            events.put(("status", {"stage": stage, "state": state,
                                   "ms": round(ms, 1) if ms is not None else None, "detail": detail}))

        def work() -> None:
            try:
                events.put(("_result", self.retriever.search(turn.repo, question, options, progress=progress)))
            except CodeQAError as exc:
                events.put(("error", {"code": "search_failed", "message": exc.message}))
            except Exception as exc:  # noqa: BLE001 - a failed search must end the stream readably
                events.put(("error", {"code": "search_failed", "message": f"Search failed: {exc}"}))

        threading.Thread(target=work, name="codeqa-search", daemon=True).start()
        while True:
            name, data = events.get()
            if name != "_result":
                yield name, data
                if name == "error":
                    return
                continue
            result = data
            for notice in result.notices:
                yield "notice", {"code": "pipeline", "message": notice}
            context = build_context(result.results, self.budget.context_tokens)
            sources = [hit.to_json() for hit in result.results]
            stored = StoredContext(query=question, text=context.text, sources=sources, created_at=time.time())
            yield "sources", {"results": sources, "reused": False, "context": {
                "included": sum(1 for p in context.parts if not p.trimmed),
                "trimmed": sum(1 for p in context.parts if p.trimmed), "omitted": len(context.omitted)}}
            try:
                self.store.save_context(turn.user, turn.repo, stored)
            except ChatStoreUnavailable as exc:
                yield "notice", {"code": exc.code, "message": f"The context was not saved for follow-ups: {exc}"}
            yield "_context", {"context": stored, "timings": result.timings_ms}
            return

    def _answer(self, turn: ChatTurn, context: StoredContext | None, history: list[dict],
                parts: list[str], timings: dict[str, float]) -> Iterator[Event]:
        messages = [{"role": "system", "content": prompts.chat_system_prompt(context.text if context else None)}]
        messages += history_window(history, self.budget.history_tokens)
        messages.append({"role": "user", "content": turn.message})
        yield "status", {"stage": "answer", "state": "start", "ms": None, "detail": ""}
        started = time.perf_counter()
        first_token = None
        try:
            for text in self.llm.stream("chat", messages, max_tokens=self.budget.answer_tokens):
                if first_token is None:
                    first_token = time.perf_counter()
                    timings["first_token"] = (first_token - started) * 1000
                parts.append(text)
                yield "token", {"text": text}
        except LLMUnavailable as exc:
            shown = " The sources above are what CodeQA found." if context else ""
            yield "error", {"code": "llm_unavailable", "message": f"No answer from the LLM: {exc}.{shown}"}
            yield "status", {"stage": "answer", "state": "skipped", "ms": None, "detail": str(exc)}
            return
        timings["answer"] = (time.perf_counter() - started) * 1000
        yield "status", {"stage": "answer", "state": "done", "ms": round(timings["answer"], 1), "detail": ""}
