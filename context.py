"""Retrieved code → the context an LLM reads: snippets with references, to a token budget.

Whole snippets come first, then trimmed ones (a prefix of whole lines with a note of what was
left out); nothing is cut mid-line and the budget, separators included, is never exceeded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

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
