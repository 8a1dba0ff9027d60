"""One chat turn as a stream of events: bring code (@codebase, @-commands) or reuse it, then answer.

Events are (name, data) pairs that the web app sends as Server-Sent Events:
    status   {"stage": hyde|search|rerank|answer, "state": start|done|skipped, "ms", "detail"}
    sources  {"results": [...], "commands": [...], "reused": bool,
              "context": {"included", "trimmed", "omitted", "tokens", "budget"}}
    notice   {"message", "code"}
    token    {"text"}
    error    {"message", "code"}
    done     {"timings_ms"}
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from dataclasses import dataclass
from typing import Generator, Iterator

from codeqa.llm import prompts
from codeqa.chat.chat_commands import ParsedMessage, parse_message
from codeqa.chat.chat_store import ChatStore, ChatStoreUnavailable, StoredContext
from codeqa.chat.context import AssembledContext, ContextBuilder
from codeqa.core.errors import CodeQAError, LLMUnavailable
from codeqa.llm.client import LLMClient
from codeqa.search.packing import estimate_tokens
from codeqa.search.retrieval import QueryError, SearchOptions

log = logging.getLogger("codeqa.answer")

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
    hyde: bool = False
    rerank: bool | None = None  # None: the CODEQA_RERANK setting, as for every search


def history_window(history: list[dict], budget_tokens: int) -> list[dict]:
    """The most recent turns, whole messages only, that fit the budget, oldest first."""
    window: list[dict] = []
    used = 0
    for message in reversed(history):
        if message.get("role") not in {"user", "assistant"} or not message.get("content") or message.get("truncated"):
            continue
        cost = estimate_tokens(message["content"]) + 4
        if used + cost > budget_tokens:
            break
        window.append({"role": message["role"], "content": message["content"]})
        used += cost
    window.reverse()
    return window


class ChatService:
    """Runs chat turns with one context builder, one chat store and one LLM client."""

    def __init__(self, contexts: ContextBuilder, store: ChatStore, llm: LLMClient, budget: ChatBudget) -> None:
        self.contexts = contexts
        self.store = store
        self.llm = llm
        self.budget = budget

    def run(self, turn: ChatTurn) -> Iterator[Event]:
        """The turn's events, always ending with `done` (after an `error` if it failed)."""
        try:
            yield from self._run(turn)
        except Exception:  # noqa: BLE001 - a bug must still end the stream readably
            log.exception("chat turn failed")
            yield "error", {"code": "internal", "message": "The answer failed unexpectedly: the server log has the details."}
            yield "done", {"timings_ms": {}}

    def _run(self, turn: ChatTurn) -> Iterator[Event]:
        started = time.perf_counter()
        timings: dict[str, float] = {}
        parsed = parse_message(turn.message)
        fresh = bool(parsed.commands)
        history: list[dict] = []
        context = None
        store_down = False
        try:
            history = self.store.history(turn.user, turn.repo)
            context = None if fresh else self.store.load_context(turn.user, turn.repo)
        except ChatStoreUnavailable as exc:  # the search and the answer go ahead without it
            store_down = True
            yield "notice", {"code": exc.code, "message": f"{exc} This answer goes ahead without the "
                                                          "conversation so far."}
        for problem in parsed.problems:
            yield "notice", {"code": "command", "message": problem}

        if fresh:
            for name, data in self._assemble(turn, parsed):
                if name == "_context":
                    context = data["context"]
                    timings.update(data["timings"])
                    continue
                yield name, data
                if name == "error":
                    yield "done", {"timings_ms": timings}
                    return
        elif context:
            yield "sources", {"results": context.sources, "commands": [], "reused": True, "context": {}}
        elif not store_down:
            yield "notice", {"code": "no_context", "message": (
                "No code has been brought into this conversation yet: start your message with "
                f"@codebase to search {turn.repo}, or name code with @definition, @references, "
                "@file or @symbols-at.")}

        answer_parts: list[str] = []
        complete = yield from self._answer(turn, context, history, answer_parts, timings)
        answer = {"role": "assistant", "content": "".join(answer_parts),
                  "sources": context.sources if context else None}
        if not complete:
            answer["truncated"] = True  # kept for the user to see, never fed back to the LLM as an answer
        try:
            self.store.append(turn.user, turn.repo, {"role": "user", "content": turn.message}, answer)
        except ChatStoreUnavailable as exc:
            yield "notice", {"code": exc.code, "message": "This answer was not saved." if store_down
                             else f"This answer was not saved: {exc}"}
        timings["total"] = (time.perf_counter() - started) * 1000
        yield "done", {"timings_ms": {k: round(v, 1) for k, v in timings.items()}}

    def _assemble(self, turn: ChatTurn, parsed: ParsedMessage) -> Iterator[Event]:
        """Resolve the commands and search in a worker thread, relaying stage reports live."""
        events: queue.Queue = queue.Queue()
        options = SearchOptions(k=self.budget.k, hyde=turn.hyde, rerank=turn.rerank)

        def progress(stage: str, state: str, ms: float | None, detail: str) -> None:
            events.put(("status", {"stage": stage, "state": state,
                                   "ms": round(ms, 1) if ms is not None else None, "detail": detail}))

        def work() -> None:
            try:
                events.put(("_result", self.contexts.build(turn.repo, parsed, options, self.budget.context_tokens,
                                                           progress=progress)))
            except QueryError as exc:
                events.put(("error", {"code": "empty_question", "message": exc.message}))
            except CodeQAError as exc:
                events.put(("error", {"code": "search_failed", "message": exc.message}))
            except Exception:  # noqa: BLE001 - a failed search must end the stream readably
                log.exception("search for a chat turn failed")
                events.put(("error", {"code": "search_failed",
                                      "message": "Search failed unexpectedly: the server log has the details."}))

        threading.Thread(target=work, name="codeqa-context", daemon=True).start()
        while True:
            name, data = events.get()
            if name == "_result":
                yield from self._found(turn, parsed, data)
                return
            yield name, data
            if name == "error":
                return

    def _found(self, turn: ChatTurn, parsed: ParsedMessage, assembled: AssembledContext) -> Iterator[Event]:
        """Tell the user what the commands and the search brought, and keep it for follow-ups."""
        for resolution in assembled.resolutions:
            if resolution.problem:
                yield "notice", {"code": "not_found", "message": resolution.problem}
        for notice in assembled.search.notices if assembled.search else []:
            yield "notice", {"code": "pipeline", "message": notice}
        sources = assembled.sources()
        commands = [{k: v for k, v in r.to_json().items() if k != "results"} for r in assembled.resolutions]
        stored = StoredContext(query=parsed.question or turn.message, text=assembled.text, sources=sources,
                               created_at=time.time())
        yield "sources", {"results": sources, "commands": commands, "reused": False, "context": assembled.summary()}
        try:
            self.store.save_context(turn.user, turn.repo, stored)
        except ChatStoreUnavailable as exc:
            yield "notice", {"code": exc.code, "message": f"The context was not saved for follow-ups: {exc}"}
        yield "_context", {"context": stored, "timings": assembled.search.timings_ms if assembled.search else {}}

    def _answer(self, turn: ChatTurn, context: StoredContext | None, history: list[dict],
                parts: list[str], timings: dict[str, float]) -> Generator[Event, None, bool]:
        """Stream the LLM's answer into `parts`; returns whether it was complete."""
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
            return False
        timings["answer"] = (time.perf_counter() - started) * 1000
        yield "status", {"stage": "answer", "state": "done", "ms": round(timings["answer"], 1), "detail": ""}
        return True
