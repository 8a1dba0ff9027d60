"""One chat turn as a stream of events: bring code (@codebase, @-commands) or reuse it, then answer.

Events are (name, data) pairs that the web app sends as Server-Sent Events:
    status   {"stage": hyde|search|rerank|answer, "state": start|done|skipped, "ms", "detail"}
    sources  {"results": [...], "commands": [...], "reused": bool,
              "context": {"included", "trimmed", "omitted", "tokens", "budget"}}
    facts    {"kind", "name", "title", "items": [{"name", "file_path", "line", "start_line", "end_line",
              "text", "note"}], "total", "external"}  (a structural question's exact lookup)
    notice   {"message", "code"}  (about the answer: "cut" at max_tokens, "loop" stopped, "uncited")
    token    {"text"}
    error    {"message", "code"}
    done     {"timings_ms", "prompt_tokens", "max_tokens"}

The model reads its sources numbered (`[n] path:start-end  Name`, see chat/packing.py) and
cites them as `[n]`; the answer's text streams with each marker written out as the source's
`[path:start-end]`, which the UI links to the viewer. Earlier turns go to the model only for a
follow-up (`refers_back`).
"""

from __future__ import annotations

import logging
import queue
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from codeqa.chat.chat_commands import ParsedMessage, parse_message
from codeqa.chat.chat_store import ChatStore, ChatStoreUnavailable, StoredContext
from codeqa.chat.context import AssembledContext, ContextBuilder
from codeqa.chat.packing import Source, estimate_tokens, numbered_sources
from codeqa.chat.structural import IndexFacts
from codeqa.core.errors import CodeQAError, LLMUnavailable
from codeqa.llm import prompts
from codeqa.llm.client import Decoding, LLMClient
from codeqa.search.options import SearchOptions
from codeqa.search.query import QueryError

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
    def from_settings(cls, settings, **overrides) -> ChatBudget:
        """The settings' budgets; the embedded small model reads fewer sources in a smaller
        context (CODEQA_LOCAL_CONTEXT_TOKENS): on the Flask questions, 4 sources in 1,000 tokens
        held a gold file as often as 8 in 1,800, at 55% of the tokens (docs/answers.md)."""
        embedded = not settings.llm_base_url and settings.local_llm
        context = (
            {"context_tokens": settings.local_context_tokens, "k": SMALL_MODEL_SOURCES}
            if embedded
            else {"context_tokens": settings.context_tokens}
        )
        return cls(
            **{
                **context,
                "history_tokens": settings.history_tokens,
                "answer_tokens": settings.answer_tokens,
                **overrides,
            }
        )


SMALL_MODEL_SOURCES = 4  # search hits the embedded model reads (a configured endpoint's model: 8)


@dataclass(frozen=True)
class ChatTurn:
    user: str
    repo: str
    message: str
    hyde: bool = False
    rerank: bool | None = None  # None: the CODEQA_RERANK_CHAT setting


@dataclass
class Reply:
    """What one answer became: its text as shown, the notices it earned, what it cost."""

    parts: list[str] = field(default_factory=list)
    notices: list[dict] = field(default_factory=list)
    usage: dict = field(default_factory=dict)  # {"prompt_tokens", "max_tokens"}, sent with `done`
    complete: bool = True  # False: the stream failed or looped; never fed back to the LLM


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


# --- Follow-ups: when earlier turns go to the model ------------------------------------------

# A message that opens like this continues the conversation ("and what does it return?").
_CONTINUES = re.compile(
    r"^\W*(?:and|but|so|also|then|or|what about|how about|what else|same|ok|okay|"
    r"can you|could you|show me|now)\b",
    re.IGNORECASE,
)
# Words that point back at something said before; `this`/`that` only as a pronoun or before a
# noun of the conversation, so "the function that parses" does not count.
_POINTS_BACK = re.compile(
    r"\b(?:it|its|it's|they|them|their|those|these|you said|you mentioned|your answer|the answer|"
    r"above|previous|earlier|again|instead|more detail|elaborate)\b"
    r"|\b(?:this|that)(?=\s*(?:[?.!,]|$)|\s+(?:one|function|method|class|file|code|part|line|call|value|"
    r"variable|error|case|example|snippet|answer|step|check))",
    re.IGNORECASE,
)
# A name in code: dotted (`app.run`), snake_case, camelCase / CamelCase, or called (`run()`).
_SYMBOL = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|\b\w+_\w+\b|\b[a-z]+[A-Z]\w*|\b[A-Z][a-z0-9]+[A-Z]\w*|\b\w+\(\)")
SHORT_FOLLOW_UP_WORDS = 3  # "why?", "an example?", "show the test": too short to stand alone


def refers_back(parsed: ParsedMessage, history: list[dict]) -> bool:
    """Whether a message is a follow-up that needs the earlier turns: it brings no code of its
    own (no @-command), names no symbol the conversation has not, and names one it has, opens
    with a continuation ("and ..."), points back ("it", "that one", "your answer") or is too
    short to stand alone. Anything else is a new question: sent alone, it can't inherit an old
    answer's mistakes."""
    if parsed.commands or not any(m.get("role") == "assistant" for m in history):
        return False
    question = parsed.question.strip()
    said = " ".join(str(m.get("content") or "") for m in history)
    symbols = [symbol.rstrip("()") for symbol in _SYMBOL.findall(question)]
    if any(symbol not in said for symbol in symbols):
        return False
    return bool(
        symbols
        or _CONTINUES.search(question)
        or _POINTS_BACK.search(question)
        or len(question.split()) <= SHORT_FOLLOW_UP_WORDS
    )


# --- Answer length: max_tokens sized to the question -------------------------------------------

# Questions whose answer is a place or a name; those that ask for a walk-through, a list or code.
_SHORT_ANSWER = re.compile(
    r"^\W*(?:where|which|who|is there|are there|does|do|can|what file|what is the name)\b", re.IGNORECASE
)
_LONG_ANSWER = re.compile(
    r"\b(?:summari[sz]e|walk (?:me )?through|step by step|list (?:all|every)|every|all the|"
    r"write|implement|refactor|rewrite|example|tests? for|document|compare|differences?)\b",
    re.IGNORECASE,
)
SHORT_ANSWER_TOKENS = 256
ANSWER_TOKENS = 384


def answer_token_limit(question: str, cap: int) -> int:
    """max_tokens for an answer: a place or a name needs fewer tokens than an explanation, a
    walk-through or code gets the whole `cap` (CODEQA_ANSWER_TOKENS), which bounds them all."""
    if _LONG_ANSWER.search(question):
        return cap
    return min(cap, SHORT_ANSWER_TOKENS if _SHORT_ANSWER.search(question) else ANSWER_TOKENS)


# --- Citations: the model's [n] written out as the source's path:line ---------------------------

# `[1]`, `[1, 3]`, with the spaces before it (a dropped marker takes them along).
_MARKER = re.compile(r"([ \t]*)\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\]")
# The end of the text so far that may still become a marker, or a run of backticks that may grow.
_OPEN_TAIL = re.compile(r"[ \t]*(?:\[[\d, ]{0,12})?$|`+$")
_CODE_BEFORE = re.compile(r"[\w)]$")  # `items[1]`, `f()[0]`: an index in code, not a citation


class Citations:
    """Rewrites the `[n]` markers of a streamed answer as `[path:start-end]` of source n, as
    the text arrives, so the UI links them to the viewer; a marker naming no given source is
    dropped, never guessed at. Markers in code (fenced or inline) are left alone. Text that may
    still turn into a marker is held back until the next delta shows what it is."""

    def __init__(self, sources: dict[int, Source]) -> None:
        self.sources = sources
        self.held = ""
        self.last = ""  # the last character let through
        self.in_fence = False
        self.in_inline = False
        self.dropped = 0  # markers that named no given source

    def feed(self, delta: str) -> str:
        """The text that can be shown now."""
        text = self.held + delta
        tail = _OPEN_TAIL.search(text)
        cut = tail.start() if tail else len(text)
        self.held = text[cut:]
        return self._rewrite(text[:cut])

    def flush(self) -> str:
        """What was held back, at the end of the answer."""
        text, self.held = self.held, ""
        return self._rewrite(text)

    def _rewrite(self, text: str) -> str:
        out: list[str] = []
        for piece in re.split(r"(`+)", text):
            if piece.startswith("`"):
                if len(piece) >= 3:  # a fence opens or closes a code block
                    self.in_fence, self.in_inline = not self.in_fence, False
                elif not self.in_fence:
                    self.in_inline = not self.in_inline
            elif not (self.in_fence or self.in_inline):
                piece = _MARKER.sub(lambda m, p=piece: self._expand(m, p), piece)
            out.append(piece)
            self.last = (self.last + piece)[-1:]
        return "".join(out)

    def _expand(self, match: re.Match[str], piece: str) -> str:
        before = piece[: match.start()] or self.last
        if not match.group(1) and _CODE_BEFORE.search(before):
            return match.group()
        numbers = [int(n) for n in re.findall(r"\d+", match.group(2))]
        known = [self.sources[n].citation for n in dict.fromkeys(numbers) if n in self.sources]
        self.dropped += len(numbers) - len(known)
        return f"{match.group(1)}[{', '.join(known)}]" if known else ""


def cited_files(answer: str, sources: dict[int, Source]) -> set[str]:
    """The given sources' files that an answer cites as `path:line` (written out from a marker,
    or by the model itself)."""
    return {s.path for s in sources.values() if re.search(rf"(?<![\w/.-]){re.escape(s.path)}:\d", answer)}


# --- Decoding: how the answer is sampled, and the embedded model's grammar ------------------------

# Sampling for answers, measured with the embedded model (docs/answers.md). A new paragraph that
# opens like the first ("According to [n], ...") is how the small model's template loops begin:
# in the answer eval every such answer repeated its first paragraph or looped, so it ends there.
ANSWER_DECODING = Decoding(temperature=0.2, top_p=0.95, repeat_penalty=1.1, stop=("\n\nAccording to",))


def answer_grammar(opening: int | None, lead: str = "") -> str:
    """The llama.cpp grammar the embedded model's answer follows. With sources given, it opens from
    source `opening`, `According to [n], `, then `lead` (a structural question's "`X` is called
    by "), and may cite any other after that (asked in the
    prompt only, the 0.5B model cited in 2 answers of 8; made to end on a citation, it rambled on
    to reach one; left to pick the opening number itself, it named a gold file less often than
    the search's first source is one: docs/answers.md). No number is followed by `|`: that is a
    numbered code line of a source, copied out, which the small model otherwise starts doing.
    Without sources (`opening` None) it opens with prose, not with `[`."""
    text = "( [^0-9] | [0-9]+ [^0-9|] )* [0-9]*"
    if opening is None:
        return f"root ::= [^\\[ \\t\\n0-9#|] text\ntext ::= {text}\n"
    literal = f"According to [{opening}], {lead}".replace("\\", "\\\\").replace('"', '\\"')
    return f'root ::= "{literal}" text\ntext ::= {text}\n'


def opening_source(sources: dict[int, Source], facts: IndexFacts | None) -> int | None:
    """The source an answer opens from: the one holding what a structural question's lookup
    found (the first caller's call, X's own lines for what X calls), else [1], the best-ranked
    code; None without sources."""
    if not sources:
        return None
    anchor = facts.anchor() if facts else None
    if anchor:
        path, line = anchor
        found = [s.number for s in sources.values() if s.path == path and s.start <= line <= s.end]
        if found:
            return min(found)
    return min(sources)


# --- Loops: an answer that repeats itself is stopped --------------------------------------------

LOOP_REPEATS = 3  # the third time the same line or run of words comes, the answer is looping
LOOP_LINE_CHARS = 20  # shorter lines (`}`, `return x`) repeat in honest code
LOOP_WORDS = 12  # a run of this many words, seen LOOP_REPEATS times
LOOP_TAIL_CHARS = 60  # the answer's end made of one short unit repeated ("!!!!", "a a a a")


class LoopGuard:
    """Watches a streamed answer for the loops a small model falls into (the same paragraph or
    line again and again) so the stream can be stopped instead of running to max_tokens."""

    def __init__(self) -> None:
        self.text = ""
        self.lines: dict[str, int] = {}
        self.runs: dict[tuple[str, ...], int] = {}
        self.words: list[str] = []
        self.line_start = 0

    def feed(self, delta: str) -> bool:
        """Add a delta; True once the answer is looping."""
        self.text += delta
        looping = False
        while (end := self.text.find("\n", self.line_start)) >= 0:
            line = " ".join(self.text[self.line_start : end].split())
            self.line_start = end + 1
            if len(line) >= LOOP_LINE_CHARS:
                self.lines[line] = self.lines.get(line, 0) + 1
                looping |= self.lines[line] >= LOOP_REPEATS
        words = self.text.split()
        complete = words if self.text[-1:].isspace() else words[:-1]
        for index in range(len(self.words), len(complete)):
            self.words.append(complete[index])
            if index + 1 >= LOOP_WORDS:
                run = tuple(self.words[index + 1 - LOOP_WORDS : index + 1])
                self.runs[run] = self.runs.get(run, 0) + 1
                looping |= self.runs[run] >= LOOP_REPEATS
        return looping or self._repeating_tail()

    def _repeating_tail(self) -> bool:
        tail = self.text[-LOOP_TAIL_CHARS:]
        if len(tail) < LOOP_TAIL_CHARS or not tail.strip():
            return False
        return any(tail == (tail[:unit] * (LOOP_TAIL_CHARS // unit + 1))[:LOOP_TAIL_CHARS] for unit in range(1, 9))


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
        except Exception:
            log.exception("chat turn failed")
            yield (
                "error",
                {"code": "internal", "message": "The answer failed unexpectedly: the server log has the details."},
            )
            yield "done", {"timings_ms": {}}

    def _run(self, turn: ChatTurn) -> Iterator[Event]:
        started = time.perf_counter()
        timings: dict[str, float] = {}
        parsed = parse_message(turn.message)
        fresh = bool(parsed.commands)
        history: list[dict] = []
        context = None
        facts: IndexFacts | None = None
        store_down = False
        try:
            history = self.store.history(turn.user, turn.repo)
            context = None if fresh else self.store.load_context(turn.user, turn.repo)
        except ChatStoreUnavailable as exc:  # the search and the answer go ahead without it
            store_down = True
            yield (
                "notice",
                {"code": exc.code, "message": f"{exc} This answer goes ahead without the conversation so far."},
            )
        for problem in parsed.problems:
            yield "notice", {"code": "command", "message": problem}

        if fresh:
            for name, data in self._assemble(turn, parsed):
                if name == "_context":
                    context, facts = data["context"], data["facts"]
                    timings.update(data["timings"])
                    continue
                yield name, data
                if name == "error":
                    yield "done", {"timings_ms": timings}
                    return
        elif context:
            yield "sources", {"results": context.sources, "commands": [], "reused": True, "context": {}}
        elif not store_down:
            yield (
                "notice",
                {
                    "code": "no_context",
                    "message": (
                        "No code has been brought into this conversation yet: start your message with "
                        f"@codebase to search {turn.repo}, or name code with @definition, @references, "
                        "@file or @symbols-at."
                    ),
                },
            )

        reply = Reply()
        yield from self._answer(turn, parsed, context, facts, history, reply, timings)
        answer: dict[str, object] = {
            "role": "assistant",
            "content": "".join(reply.parts),
            "sources": context.sources if context else None,
        }
        if facts:
            answer["facts"] = facts.to_event()  # the list is shown again with the answer
        if reply.notices:
            answer["notices"] = reply.notices  # shown again with the answer when the history is read
        if not reply.complete:
            answer["truncated"] = True  # kept for the user to see, never fed back to the LLM as an answer
        try:
            self.store.append(turn.user, turn.repo, {"role": "user", "content": turn.message}, answer)
        except ChatStoreUnavailable as exc:
            yield (
                "notice",
                {
                    "code": exc.code,
                    "message": "This answer was not saved." if store_down else f"This answer was not saved: {exc}",
                },
            )
        timings["total"] = (time.perf_counter() - started) * 1000
        yield "done", {"timings_ms": {k: round(v, 1) for k, v in timings.items()}, **reply.usage}

    def _assemble(self, turn: ChatTurn, parsed: ParsedMessage) -> Iterator[Event]:
        """Resolve the commands and search in a worker thread, relaying stage reports live."""
        events: queue.Queue = queue.Queue()
        rerank = turn.rerank if turn.rerank is not None else self.contexts.retriever.settings.rerank_chat
        options = SearchOptions(k=self.budget.k, hyde=turn.hyde, rerank=rerank)

        def progress(stage: str, state: str, ms: float | None, detail: str) -> None:
            events.put(
                (
                    "status",
                    {"stage": stage, "state": state, "ms": round(ms, 1) if ms is not None else None, "detail": detail},
                )
            )

        def work() -> None:
            try:
                events.put(
                    (
                        "_result",
                        self.contexts.build(turn.repo, parsed, options, self.budget.context_tokens, progress=progress),
                    )
                )
            except QueryError as exc:
                events.put(("error", {"code": "empty_question", "message": exc.message}))
            except CodeQAError as exc:
                events.put(("error", {"code": "search_failed", "message": exc.message}))
            except Exception:
                log.exception("search for a chat turn failed")
                events.put(
                    (
                        "error",
                        {
                            "code": "search_failed",
                            "message": "Search failed unexpectedly: the server log has the details.",
                        },
                    )
                )

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
        stored = StoredContext(
            query=parsed.question or turn.message, text=assembled.text, sources=sources, created_at=time.time()
        )
        yield "sources", {"results": sources, "commands": commands, "reused": False, "context": assembled.summary()}
        if assembled.facts:
            yield "facts", assembled.facts.to_event()
        try:
            self.store.save_context(turn.user, turn.repo, stored)
        except ChatStoreUnavailable as exc:
            yield "notice", {"code": exc.code, "message": f"The context was not saved for follow-ups: {exc}"}
        timings = assembled.search.timings_ms if assembled.search else {}
        yield "_context", {"context": stored, "facts": assembled.facts, "timings": timings}

    def _answer(
        self,
        turn: ChatTurn,
        parsed: ParsedMessage,
        context: StoredContext | None,
        facts: IndexFacts | None,
        history: list[dict],
        reply: Reply,
        timings: dict[str, float],
    ) -> Iterator[Event]:
        """Stream the LLM's answer into `reply`, its citations written out, and say what is wrong
        with it: cut at max_tokens, stopped in a loop, or citing no source."""
        sources = numbered_sources(context.text) if context else {}
        messages = [{"role": "system", "content": prompts.chat_system_prompt(context.text if context else None)}]
        if refers_back(parsed, history):
            messages += history_window(history, self.budget.history_tokens)
        messages.append({"role": "user", "content": turn.message})
        limit = answer_token_limit(parsed.question or turn.message, self.budget.answer_tokens)
        yield "status", {"stage": "answer", "state": "start", "ms": None, "detail": ""}
        started = time.perf_counter()
        opening = opening_source(sources, facts)
        lead = facts.lead() if facts and opening is not None else ""
        decoding = replace(ANSWER_DECODING, grammar=answer_grammar(opening, lead))
        stream = self.llm.stream("chat", messages, max_tokens=limit, decoding=decoding)
        citations, guard = Citations(sources), LoopGuard()
        looping = False
        try:
            for delta in stream:
                if "first_token" not in timings:
                    timings["first_token"] = (time.perf_counter() - started) * 1000
                if shown := citations.feed(delta):
                    reply.parts.append(shown)
                    yield "token", {"text": shown}
                if looping := guard.feed(delta):
                    stream.close()
                    break
        except LLMUnavailable as exc:
            if rest := citations.flush():
                reply.parts.append(rest)
                yield "token", {"text": rest}
            shown = " The sources above are what CodeQA found." if context else ""
            yield "error", {"code": "llm_unavailable", "message": f"No answer from the LLM: {exc}.{shown}"}
            yield "status", {"stage": "answer", "state": "skipped", "ms": None, "detail": str(exc)}
            reply.complete = False
            return
        if rest := citations.flush():
            reply.parts.append(rest)
            yield "token", {"text": rest}
        timings["answer"] = (time.perf_counter() - started) * 1000
        reply.usage = {"prompt_tokens": stream.prompt_tokens, "max_tokens": limit}
        for code, message in self._verdicts(looping, stream.finish_reason, limit, reply, sources):
            reply.notices.append({"code": code, "message": message})
            yield "notice", {"code": code, "message": message}
        reply.complete = not looping
        yield "status", {"stage": "answer", "state": "done", "ms": round(timings["answer"], 1), "detail": ""}

    @staticmethod
    def _verdicts(
        looping: bool, finish_reason: str | None, limit: int, reply: Reply, sources: dict[int, Source]
    ) -> list[tuple[str, str]]:
        """The notices an answer earns: the user sees what is wrong with it, nothing is patched."""
        found = []
        if looping:
            found.append(("loop", "The answer started repeating itself, so it was stopped there."))
        elif finish_reason == "length":
            found.append(("cut", f"Answer cut at {limit} tokens: ask for the rest, or a narrower question."))
        if sources and not cited_files("".join(reply.parts), sources):
            found.append(("uncited", "This answer cites no source: check it against the sources before relying on it."))
        return found
