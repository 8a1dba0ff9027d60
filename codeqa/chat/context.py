"""A chat message → the context an LLM reads: its @-commands resolved, the search run, all packed.

One builder serves the chat, `POST /api/context` and `codeqa context`, so what a script
sees is what the LLM saw. Resolving commands is `resolver.py`'s job, searching
`retrieval.py`'s, fitting it all into the token budget `packing.py`'s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from codeqa.chat.chat_commands import ParsedMessage, parse_message
from codeqa.chat.packing import FileText, Packed, Span, pack
from codeqa.chat.resolver import COMMAND_RANK, CommandResolver, Lookup, Resolution
from codeqa.chat.structural import IndexFacts, look_up, recognise
from codeqa.search.options import SearchOptions
from codeqa.search.query import QueryError, parse_query
from codeqa.search.results import SearchResult
from codeqa.search.retrieval import Progress, Retriever

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
    facts: IndexFacts | None = None  # what the exact lookup of a structural question found

    @property
    def text(self) -> str:
        return self.packed.text

    def sources(self) -> list[dict]:
        """What each command brought, then the search hits (in the order of the file ranking),
        each labelled by who brought it."""
        out = [source for r in self.resolutions for source in r.sources]
        if self.facts:
            out += self.facts.sources
        if self.search:
            out += [{**hit.to_json(), "source": CODEBASE_LABEL} for hit in self.search.results]
        return out

    def summary(self) -> dict:
        """How much of each source made it into the context (the sources panel's meta line)."""
        counts = {"included": 0, "trimmed": 0, "omitted": 0}
        for source in self.sources():
            held = source["end_line"] - source["start_line"] + 1
            shown = self.packed.shown(source["file_path"], source["start_line"], source["end_line"])
            counts["included" if shown == held else "trimmed" if shown else "omitted"] += 1
        return {**counts, "tokens": self.packed.tokens, "budget": self.packed.budget}

    def to_json(self) -> dict:
        return {
            "question": self.message.question,
            "problems": list(self.message.problems),
            "commands": [r.to_json() for r in self.resolutions],
            "search": self.search.to_json() if self.search else None,
            "facts": self.facts.to_event() if self.facts else None,
            "notices": self.notices,
            "context": {
                "text": self.text,
                **self.summary(),
                "complete": self.packed.complete,
                "files": [
                    {"path": f.path, "labels": f.labels, "lines_shown": len(f.shown), "lines_held": f.eligible}
                    for f in self.packed.files
                    if f.shown
                ],
            },
        }


def _question_lines(text: FileText, start: int, end: int, names: tuple[str, ...]) -> frozenset[int]:
    """Lines of a hit that use a name the question names (the lines that matched)."""
    if not names:
        return frozenset()
    pattern = re.compile(r"\b(?:{})\b".format("|".join(re.escape(n.rsplit(".", 1)[-1]) for n in names)))
    found = [n for n in range(max(1, start), min(end, len(text.lines)) + 1) if pattern.search(text.lines[n - 1])]
    return frozenset(found[:MATCHED_PER_HIT])


class ContextBuilder:
    """Message → AssembledContext, shared by the chat, `POST /api/context` and the CLI."""

    def __init__(self, retriever: Retriever, resolver: CommandResolver) -> None:
        self.retriever = retriever
        self.resolver = resolver

    def build(
        self,
        repo_name: str,
        message: str | ParsedMessage,
        options: SearchOptions,
        budget_tokens: int,
        progress: Progress | None = None,
    ) -> AssembledContext:
        """Resolve the commands, search when @codebase asks for it, pack it all to the budget.

        Raises QueryError for an @codebase message with nothing to search for."""
        parsed = message if isinstance(message, ParsedMessage) else parse_message(message)
        repo = self.resolver.index.repo(repo_name)
        lookup = self.resolver.lookup(repo)
        resolutions = lookup.resolve(parsed.lookups)
        notices = list(parsed.problems) + [r.problem for r in resolutions if r.problem]
        spans = [span for r in resolutions for span in r.spans]
        notes = [note for r in resolutions for note in r.notes]
        search = None
        facts = None
        if parsed.codebase:
            query = parsed.question or " ".join(c.argument for c in parsed.lookups)
            if not query:
                raise QueryError("Ask a question after @codebase.")
            base = len(parsed.lookups) * COMMAND_RANK
            facts = self._structural(lookup, parsed.question, base)
            if facts:
                spans += facts.spans
                base += COMMAND_RANK
            search = self.retriever.search(repo_name, query, options, progress=progress)
            notices += search.notices
            names = parse_query(query).symbols
            for number, hit in enumerate(search.results):
                row = {
                    "file_path": hit.file_path,
                    "start_line": hit.start_line,
                    "end_line": hit.end_line,
                    "qualified_name": hit.qualified_name,
                }
                found = lookup.definition_spans(row, CODEBASE_LABEL, base + number)
                if found:
                    matched = _question_lines(lookup.files[hit.file_path], hit.start_line, hit.end_line, names)
                    found[0] = Span(
                        found[0].path,
                        found[0].start,
                        found[0].end,
                        found[0].label,
                        found[0].rank,
                        found[0].matched | matched,
                    )
                spans += found
        packed = pack(spans, lookup.files, budget_tokens, notes, facts.prompt_block() if facts else "")
        return AssembledContext(parsed, resolutions, search, packed, notices, facts)

    @staticmethod
    def _structural(lookup: Lookup, question: str, rank: float) -> IndexFacts | None:
        """The exact lookup of a structural question ("what calls X?"), when the question is one
        and the lookup finds something (for what X calls, names it could not resolve count: Koa's
        `app.callback()` calls only `this.` methods and an import); else None, and the search
        alone answers."""
        ask = recognise(question) if question else None
        if ask is None:
            return None
        found = look_up(lookup, ask, rank)
        return found if found.items or found.external else None
