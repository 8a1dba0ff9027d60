"""Every prompt CodeQA sends to an LLM, in one place, with the budgets they are written for.

Prompts are short on purpose: the embedded model reads ~85 tokens/s on one CPU thread, so
every sentence here costs the user time.
"""

from __future__ import annotations

HYDE_MAX_TOKENS = 160
EXPANSION_MAX_TOKENS = 120

HYDE_SYSTEM = (
    "You write the source code that a codebase most likely contains to answer a developer's "
    "question. Output only code: plausible function and class definitions with names, "
    "signatures, docstrings and key calls. No prose, no markdown fences."
)


def hyde_messages(question: str, languages: str) -> list[dict[str, str]]:
    """HyDE step 1: imagine the code that answers the question."""
    return [
        {"role": "system", "content": HYDE_SYSTEM},
        {"role": "user", "content": f"Codebase languages: {languages}.\nQuestion: {question}"},
    ]


EXPANSION_SYSTEM = (
    "You turn a developer's question into a search query for their codebase. You are shown "
    "code that a first search found. Reply with one line: the exact function, method, class "
    "and file names from that code that are relevant to the question, then the question's "
    "key terms. No explanation."
)


def expansion_messages(question: str, snippets: str) -> list[dict[str, str]]:
    """HyDE step 2: rewrite the question with the codebase's real names."""
    return [
        {"role": "system", "content": EXPANSION_SYSTEM},
        {"role": "user", "content": f"Code found:\n{snippets}\n\nQuestion: {question}\nSearch query:"},
    ]


CHAT_SYSTEM = (
    "You are CodeQA, an assistant that answers questions about the user's codebase. "
    "Answer from the code context below; when it does not contain the answer, say so plainly "
    "instead of guessing. Cite code as `path:line` (for example `src/app.py:42`) using the "
    "line numbers given in the context. Be concise; use markdown with fenced code blocks.\n"
    "In the context each code line starts with its line number and `|`; `...` stands for lines "
    "left out; Notes say what the user's @-commands found or could not find."
)

NO_CONTEXT_SYSTEM = (
    "You are CodeQA, an assistant that answers questions about the user's codebase. No code "
    "has been retrieved yet in this conversation: tell the user to start their question with "
    "@codebase so that you can search the repository (or to name code with @definition NAME, "
    "@references NAME, @file PATH or @symbols-at PATH:LINE), and do not invent code."
)


def chat_system_prompt(context: str | None) -> str:
    """The system message for an answer: instructions plus the retrieved context, if any."""
    if not context:
        return NO_CONTEXT_SYSTEM
    return f"{CHAT_SYSTEM}\n\n# Code context\n\n{context}"
