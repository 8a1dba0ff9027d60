"""Reading a question: what to embed, what BM25 should match, what it names exactly.

`check_query` refuses what no search can use; `parse_query` turns a question (a line, a task,
a whole bug report with stack traces and logs) into a `ParsedQuery`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from codeqa.core.errors import CodeQAError, is_valid_unicode
from codeqa.parsing.languages import INDEXED_EXTENSIONS
from codeqa.parsing.tokens import code_tokens
from codeqa.search.question_kind import QuestionKind, question_kind

MAX_QUERY_CHARS = 20_000
EMBED_QUERY_CHARS = 1_200  # what the embedder sees of a long query: its opening (title, prose)
MAX_KEYWORDS = 64  # BM25 terms taken from a query
MAX_FILE_TERMS = 400  # distinct query terms whole-file BM25 matches (a long report has ~300)
# The words that make a sentence a question, never part of what it asks. Code seldom holds them,
# so BM25 over code weighs them as rare and telling: "where are prices parsed?" ranked first the
# one file whose comment reads "Where an item is stored". The stemmed column drops English stop
# words (all of these but "whose"); the identifier-aware terms drop only these: dropping every stop
# word lost on Flask's questions and the realistic train split (docs/retrieval.md, "Question words").
QUESTION_WORDS = frozenset({"how", "where", "what", "which", "why", "when", "who", "whom", "whose"})
_TEST_WORDS = re.compile(r"\btests?\b|\bspecs?\b|pytest|unittest", re.IGNORECASE)
# A question asking for prose rather than code (ranking's `prose_asked`, an offset to the role's penalty).
_PROSE_WORDS = re.compile(
    r"\b(?:docs|documentation|readme|tutorials?|changelog)\b"  # "where are the docs for ..."
    r"|\b(?:an?|some|the|any)\s+(?:examples?|samples?|demos?)\b"  # "show me an example", not "for example"
    r"|\b(?:examples?|samples?)\s+(?:of|for|that|showing|using)\b",
    re.IGNORECASE,
)


class QueryError(CodeQAError, ValueError):
    """The query itself is unusable (empty, too long); the message says why."""

    http_status = 400


def check_query(query: object) -> str:
    """The query's text, stripped; `QueryError` when it is not text a search can use."""
    if not isinstance(query, str) or not query.strip():
        raise QueryError("The query is empty.")
    text = query.strip()
    if len(text) > MAX_QUERY_CHARS:
        raise QueryError(f"The query has {len(text):,} characters; the limit is {MAX_QUERY_CHARS:,}.")
    if not is_valid_unicode(text):
        raise QueryError("The query is not valid Unicode text (it holds a lone surrogate).")
    return text


_CODE_IDENT = re.compile(
    r"`([^`\n]{1,120})`"  # anything in backticks
    r"|\b([A-Za-z_][\w]*(?:(?:\.|::)[A-Za-z_]\w*)+)\b"  # dotted / :: paths
    r"|\b([A-Za-z_]\w*)(?=\()"  # name(
    r"|\b([a-z]+_\w+|_\w+|[A-Za-z]+[a-z0-9]+[A-Z]\w*|[A-Z]{2,}_\w+)\b"
)  # snake, _private, camel/Pascal
_FILE_MENTION = re.compile(
    r"[\w./\\-]*\w\.(?:{})\b".format(
        "|".join(sorted((re.escape(ext[1:]) for ext in INDEXED_EXTENSIONS), key=len, reverse=True))
    )
)
_PY_FRAME = re.compile(r'File "([^"]+)", line \d+, in (\w+)')
# Reading a report: fenced code blocks; stack-trace and log lines (Python, JVM, Go, Rust, JS,
# gdb/backtrace frames, `path:line` locations); error lines (`ValueError: ...`, `error: ...`,
# `panic: ...`, `thread 'main' panicked at ...`).
_FENCE = re.compile(r"^[ \t]*(```|~~~)[^\n]*\n(.*?)(?:^[ \t]*\1[ \t]*$|\Z)", re.S | re.M)
_TRACE_LINE = re.compile(
    r'^\s*(?:File "[^"]+", line \d+|Traceback \(most recent call last\)|at [\w$.<>/]+\(.*\)$'
    r"|at [\w$.<>/]+ \(?[\w./:-]+:\d+|#\d+\s+0x[0-9a-f]+|\d+:\s+0x[0-9a-f]+|goroutine \d+ \["
    r"|[\w./-]+\.\w+:\d+(?::\d+)?(?:\s|$)|\w+(?:\.\w+)*\(.*\)\s*$)",
    re.M,
)
_ERROR_LINE = re.compile(
    r"^\s*(?:[\w.]*(?:Error|Exception|Warning|Panic)\b:?.{0,240}|(?:error|fatal|panic)(?:\[\w+\])?: .{0,240}"
    r"|thread '[^']*' panicked at .{0,240})$",
    re.M,
)
_WHOLE_NAME = re.compile(r"[A-Za-z_$][\w$]*(?:(?:\.|::|#)[A-Za-z_$][\w$]*)*")
MAX_PIECES = 3  # extra query vectors: the first code blocks and the error lines
PIECE_CHARS = 1_000  # of each


@dataclass(frozen=True)
class ParsedQuery:
    text: str
    semantic: str  # what gets embedded
    keywords: str  # what BM25 gets
    symbols: tuple[str, ...]  # code-shaped names the question mentions
    files: tuple[str, ...]  # file names or paths it mentions
    about_tests: bool = False  # the question is about tests: don't rank test files lower
    about_prose: bool = False  # the question asks for docs or an example (a file feature, `prose_asked`)
    pieces: tuple[str, ...] = ()  # a report's code blocks and error lines, embedded on their own
    whole_name: str = ""  # the query is this one name, qualified name or file name, and nothing else
    kind: QuestionKind = "report"  # a report of something wrong or a change, or a how question (question_kind.py)

    @cached_property
    def terms(self) -> list[str]:
        """Its distinct identifier-aware tokens, in order (at most MAX_FILE_TERMS), less the
        QUESTION_WORDS it does not name as code: what whole-file BM25 and the definitions' BM25
        match, tokenized once per search."""
        named = set(code_tokens(" ".join(self.symbols + self.files)).split())
        terms = dict.fromkeys(code_tokens(self.text).split())
        return [term for term in terms if term not in QUESTION_WORDS or term in named][:MAX_FILE_TERMS]


def parse_query(text: str) -> ParsedQuery:
    """Split a question into what to embed, what BM25 should match and what it names exactly.

    A long issue report (stack traces, logs) is handled on purpose: the embedding sees its
    opening, where people describe the problem; BM25 sees its identifiers, code-shaped ones
    first, wherever they appear; stack-trace frames count as mentions.
    """
    symbols: list[str] = []
    files: list[str] = []
    whole_name = _whole_name(text)
    if whole_name:  # `colordemo`: a plain word the patterns below would take for prose
        (files if _FILE_MENTION.fullmatch(whole_name) else symbols).append(whole_name)
    for path, function in _PY_FRAME.findall(text):
        files.append(path)
        symbols.append(function)
    for match in _CODE_IDENT.finditer(text):
        token = next(g for g in match.groups() if g).strip().rstrip("()")
        if _FILE_MENTION.fullmatch(token):
            continue
        symbols.append(token.replace("::", "."))
    files += _FILE_MENTION.findall(text)
    symbols = list(dict.fromkeys(s for s in symbols if re.fullmatch(r"[\w.]+", s)))
    files = list(dict.fromkeys(f.replace("\\", "/").lstrip("./") for f in files))

    code_terms = code_tokens(" ".join(symbols + files)).split()
    prose_terms = code_tokens(text).split()
    keywords = list(dict.fromkeys(code_terms + prose_terms))[:MAX_KEYWORDS]
    prose, pieces = split_report(text)
    semantic = (
        prose
        if len(prose) <= EMBED_QUERY_CHARS
        else (prose[:EMBED_QUERY_CHARS].rsplit("\n", 1)[0] + "\n" + " ".join(symbols[:40]))
    )
    return ParsedQuery(
        text,
        semantic,
        " ".join(keywords),
        tuple(symbols[:20]),
        tuple(files[:10]),
        bool(_TEST_WORDS.search(text)),
        bool(_PROSE_WORDS.search(text)),
        pieces,
        whole_name,
        question_kind(text, bool(pieces)),
    )


def _whole_name(text: str) -> str:
    """The query itself when it is one name (`colordemo`, `Context.invoke`, `Foo::bar`) or one
    file name or path (`view.js`, `src/view.js`), backticks allowed; else ""."""
    stripped = text.strip().strip("`").strip()
    if _WHOLE_NAME.fullmatch(stripped):
        return stripped.replace("::", ".").replace("#", ".")
    if _FILE_MENTION.fullmatch(stripped):
        return stripped.replace("\\", "/").lstrip("./")
    return ""


def split_report(text: str) -> tuple[str, tuple[str, ...]]:
    """A report's prose (what its writer says, for the main query vector) and its pieces: the
    first code blocks and the error lines, each embedded on its own.

    One 1,200-character embedding of a whole report is mostly its logs; the prose says what is
    wrong, a code block shows the API in use, the error line names the failure."""
    blocks = [m.group(2).strip() for m in _FENCE.finditer(text)]
    prose = _FENCE.sub("\n", text)
    errors = list(dict.fromkeys(m.group(0).strip() for m in _ERROR_LINE.finditer(text)))
    kept: list[str] = []
    after_frame = False  # a Python frame's next line is its source line: part of the trace
    for line in prose.splitlines():
        trace = _TRACE_LINE.match(line) is not None or after_frame and line.startswith("    ")
        after_frame = bool(_PY_FRAME.search(line))
        if not trace and line.strip() not in errors:
            kept.append(line)
    prose = "\n".join(kept)
    prose = re.sub(r"\n{3,}", "\n\n", prose).strip() or text.strip()
    pieces = [block[:PIECE_CHARS] for block in blocks if len(block) >= 20][: MAX_PIECES - bool(errors)]
    if errors:
        pieces.append("\n".join(errors[:3])[:PIECE_CHARS])
    return prose, tuple(dict.fromkeys(pieces))


def with_question(generated: ParsedQuery, question: ParsedQuery) -> ParsedQuery:
    """Search text from LLM output, keeping the question's own names and words in BM25."""
    keywords = list(dict.fromkeys(question.keywords.split() + generated.keywords.split()))[:MAX_KEYWORDS]
    semantic = (generated.text[: EMBED_QUERY_CHARS // 2] + "\n" + question.semantic)[: EMBED_QUERY_CHARS * 2]
    return ParsedQuery(
        generated.text,
        semantic,
        " ".join(keywords),
        question.symbols,
        question.files,
        question.about_tests,
        question.about_prose,
        kind=question.kind,
    )
