"""Retrieved code → the context an LLM reads: snippets with references, to a token budget.

Whole snippets come first, then trimmed ones (a prefix of whole lines with a note of what was
left out); nothing is cut mid-line and the budget, separators included, is never exceeded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import create_tables
from chat_commands import ParsedMessage, parse_message
from packing import FileText, Packed, Span, pack
from resolver import COMMAND_RANK, CommandResolver, Resolution
from retrieval import Progress, QueryError, Retriever, SearchOptions, SearchResult, parse_query

if TYPE_CHECKING:
    from retrieval import Hit

CONTEXT_REFERENCES = 5


def estimate_tokens(text: str) -> int:
    """A deliberately pessimistic token count (≈3 characters per token for code)."""
    return (len(text) + 2) // 3


@dataclass
class ContextPart:
    hit: Hit
    text: str
    trimmed: bool


@dataclass
class Context:
    parts: list[ContextPart]
    omitted: list[Hit]
    budget: int

    @property
    def text(self) -> str:
        return "\n\n".join(part.text for part in self.parts)

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.text)


def _header(hit: Hit) -> str:
    return f"### {hit.file_path}:{hit.start_line}-{hit.end_line} ({hit.kind} {hit.qualified_name})"


def _references_block(hit: Hit) -> str:
    if not hit.references:
        return ""
    shown = hit.references[:CONTEXT_REFERENCES]
    lines = [f"Used in ({len(shown)} of {hit.reference_count}):"]
    lines += [f"- {r['file_path']}:{r['line']}: {r['text']}" for r in shown]
    return "\n".join(lines)


def _block(hit: Hit, code_lines: list[str], trimmed_from: int | None) -> str:
    parts = [_header(hit), "```" + hit.language, *code_lines]
    if trimmed_from is not None:
        parts.append(f"... (lines {trimmed_from}-{hit.end_line} not shown)")
    parts.append("```")
    refs = _references_block(hit)
    return "\n".join(parts + ([refs] if refs else []))


def build_context(hits: list[Hit], budget_tokens: int) -> Context:
    """Assemble snippets to a token budget: whole snippets first, then trimmed ones.

    Never cuts inside a line and never exceeds the budget (separators included)."""
    parts: dict[int, ContextPart] = {}
    used = 0
    separator = estimate_tokens("\n\n")
    deferred = []
    for index, hit in enumerate(hits):
        whole = _block(hit, hit.code.splitlines(), None)
        cost = estimate_tokens(whole) + separator
        if used + cost <= budget_tokens:
            parts[index] = ContextPart(hit, whole, False)
            used += cost
        else:
            deferred.append(index)
    omitted = []
    for index in deferred:
        hit = hits[index]
        lines = hit.code.splitlines()
        best = None
        low, high = 1, len(lines) - 1
        while low <= high:  # the longest prefix of whole lines that fits
            mid = (low + high) // 2
            candidate = _block(hit, lines[:mid], hit.start_line + mid)
            if used + estimate_tokens(candidate) + separator <= budget_tokens:
                best, low = candidate, mid + 1
            else:
                high = mid - 1
        if best is None:
            omitted.append(hit)
            continue
        parts[index] = ContextPart(hit, best, True)
        used += estimate_tokens(best) + separator
    ordered = [parts[i] for i in sorted(parts) if not parts[i].trimmed] + \
              [parts[i] for i in sorted(parts) if parts[i].trimmed]
    return Context(ordered, omitted, budget_tokens)


# --- Commands + search → one packed context -------------------------------------------------

CODEBASE_LABEL = "@codebase"
MATCHED_PER_HIT = 5  # lines of a search hit that name what the question names


@dataclass
class AssembledContext:
    """Everything one message brought: resolved commands, the search, and the packed context."""

    message: ParsedMessage
    resolutions: list[Resolution]
    search: SearchResult | None
    packed: Packed
    notices: list[str]  # for the user: commands that could not be read or found, search notes

    @property
    def text(self) -> str:
        return self.packed.text

    def sources(self) -> list[dict]:
        """What each command brought, then the search hits, each labelled by who brought it."""
        out = [source for r in self.resolutions for source in r.sources]
        if self.search:
            out += [{**hit.to_json(), "source": CODEBASE_LABEL} for hit in self.search.results]
        return out

    def summary(self) -> dict:
        """How much of what was brought made it into the context (sources panel meta line)."""
        shown = self.packed.span_lines
        return {"included": sum(1 for s, held in shown if held and s == held),
                "trimmed": sum(1 for s, held in shown if 0 < s < held),
                "omitted": sum(1 for s, held in shown if held and not s),
                "tokens": self.packed.tokens, "budget": self.packed.budget}

    def to_json(self) -> dict:
        return {"question": self.message.question, "problems": list(self.message.problems),
                "commands": [r.to_json() for r in self.resolutions],
                "search": self.search.to_json() if self.search else None,
                "notices": self.notices,
                "context": {"text": self.text, **self.summary(), "complete": self.packed.complete,
                            "files": [{"path": f.path, "labels": f.labels, "lines_shown": len(f.shown),
                                       "lines_held": f.eligible} for f in self.packed.files if f.shown]}}


def _question_lines(text: FileText, start: int, end: int, names: tuple[str, ...]) -> frozenset[int]:
    """Lines of a hit that use a name the question names (the lines that matched)."""
    if not names:
        return frozenset()
    pattern = re.compile(r"\b(?:%s)\b" % "|".join(re.escape(n.rsplit(".", 1)[-1]) for n in names))
    found = [n for n in range(max(1, start), min(end, len(text.lines)) + 1) if pattern.search(text.lines[n - 1])]
    return frozenset(found[:MATCHED_PER_HIT])


class ContextBuilder:
    """Message → AssembledContext, shared by the chat, `POST /api/context` and the CLI."""

    def __init__(self, retriever: Retriever, resolver: CommandResolver) -> None:
        self.retriever = retriever
        self.resolver = resolver

    def build(self, repo_name: str, message: str | ParsedMessage, options: SearchOptions, budget_tokens: int,
              progress: Progress | None = None) -> AssembledContext:
        """Resolve the commands, search when @codebase asks for it, pack it all to the budget.

        Raises QueryError for an @codebase message with nothing to search for."""
        parsed = message if isinstance(message, ParsedMessage) else parse_message(message)
        repo = create_tables.get_repo(self.resolver.db, repo_name)
        lookup = self.resolver.lookup(repo)
        resolutions = lookup.resolve(parsed.lookups)
        notices = list(parsed.problems) + [r.problem for r in resolutions if r.problem]
        spans = [span for r in resolutions for span in r.spans]
        notes = [note for r in resolutions for note in r.notes]
        search = None
        if parsed.codebase:
            query = parsed.question or " ".join(c.argument for c in parsed.lookups)
            if not query:
                raise QueryError("Ask a question after @codebase.")
            search = self.retriever.search(repo_name, query, options, progress=progress)
            notices += search.notices
            names = parse_query(query).symbols
            base = len(parsed.lookups) * COMMAND_RANK
            for number, hit in enumerate(search.results):
                row = {"file_path": hit.file_path, "start_line": hit.start_line, "end_line": hit.end_line,
                       "qualified_name": hit.qualified_name}
                found = lookup.definition_spans(row, CODEBASE_LABEL, base + number)
                if found:
                    matched = _question_lines(lookup.files[hit.file_path], hit.start_line, hit.end_line, names)
                    found[0] = Span(found[0].path, found[0].start, found[0].end, found[0].label, found[0].rank,
                                    found[0].matched | matched)
                spans += found
        packed = pack(spans, lookup.files, budget_tokens, notes)
        return AssembledContext(parsed, resolutions, search, packed, notices)
