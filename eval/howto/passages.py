"""A maintainer's document → passages → masked questions with gold files.

A passage is a paragraph, a list item (with its continuation lines) or a table row of a
Markdown, reStructuredText or plain-text document; code blocks and headings are not passages
(a passage's nearest heading is kept as its context). A *mention* is a name in the passage
that may point at code: a code span (`` `x` ``, an RST role ``:mod:`x` ``), a link's target,
or a bare token that looks like a path or a file name (`src/x.c`, `bundler.go`).

Masking replaces every mention that names a file or folder of the repository (gold or not),
and every path-like token, with `MASK`; then every remaining identifier-like token equal to a
gold file's stem or folder's name (`js_parser`, `Lexer`, `ChangeSet`; not a plain lowercase
word like `parser`, which a user would say too). What is left is the maintainer's description
of the part, in their words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from eval.howto.resolve import Tree, normalize

MASK = "…"
CODE_EXTENSIONS = ("c", "h", "cc", "cpp", "cxx", "hpp", "hh", "go", "rs", "py", "js", "mjs", "cjs", "ts", "tsx",
                   "jsx", "java", "kt", "kts", "swift", "rb", "php", "cs", "scala", "lua", "ex", "exs", "hs",
                   "zig", "dart", "sh", "bash", "vue")
_EXT = "|".join(sorted(CODE_EXTENSIONS, key=len, reverse=True))
_CODE_SPAN = re.compile(r"(?::[\w:+-]+:)?(`+)(?P<body>[^`\n]+?)\1")
_LINK = re.compile(r"!?\[(?P<text>[^\]\n]*)\]\((?P<target>[^)\s]+)(?:\s+\"[^\"]*\")?\)")
_RST_LINK = re.compile(r"`(?P<text>[^`<\n]+?)\s*<(?P<target>[^>\n]+)>`_+")
_BARE = re.compile(rf"(?<![\w/.@-])(?P<body>(?:[\w.-]+/)+[\w.-]*\w|[\w-]+(?:\.[\w-]+)*\.(?:{_EXT}))(?![\w/])")
_GITHUB_BLOB = re.compile(r"https?://github\.com/[^/]+/[^/]+/(?:blob|tree)/[^/]+/(?P<path>[^#?]+)")
_IDENTIFIER = re.compile(r"[A-Za-z_][\w-]*(?:(?:\.|::)[A-Za-z_]\w*)*")
_WORD = re.compile(r"[A-Za-z]{2,}")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_MD_HEADING = re.compile(r"^#{1,6}\s+(?P<title>.*?)\s*#*\s*$")
_RST_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+_])\1{2,}\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{3,}")
_HTML = re.compile(r"<[^>\n]+>")


@dataclass
class Passage:
    start: int  # 1-based, inclusive
    end: int
    text: str
    heading: str


@dataclass
class Mention:
    span: tuple[int, int]  # in the passage text
    name: str  # what resolves (a code span's body, a link's target, a bare path)
    files: list[str] = field(default_factory=list)
    how: str = ""


def split_passages(text: str) -> list[Passage]:
    """The document's paragraphs, list items and table rows with their line ranges."""
    lines = text.splitlines()
    passages: list[Passage] = []
    heading = ""
    block: list[tuple[int, str]] = []
    in_fence = False
    rst_literal = False  # inside an indented block after a line ending in `::`

    def flush() -> None:
        if block:
            passages.append(Passage(block[0][0], block[-1][0], "\n".join(line for _, line in block).strip(), heading))
            block.clear()

    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if _FENCE.match(line):
            flush()
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        if rst_literal:
            if not stripped or line[:1].isspace():
                continue
            rst_literal = False
        if not stripped:
            flush()
            continue
        heading_match = _MD_HEADING.match(line)
        if heading_match:
            flush()
            heading = heading_match.group("title")
            continue
        if _RST_UNDERLINE.match(line) and block and len(block) == 1:
            heading = block[0][1].strip()
            block.clear()
            continue
        if _RST_UNDERLINE.match(line) or stripped.startswith(".. ") or _TABLE_SEPARATOR.match(line):
            flush()
            continue
        if stripped.startswith("|") and stripped.endswith("|"):
            flush()
            block.append((number, stripped.strip("|").replace("|", " — ")))
            flush()
            continue
        if _BULLET.match(line):
            flush()
        block.append((number, line))
        if stripped.endswith("::") and not stripped.startswith(".."):
            flush()
            rst_literal = True
    flush()
    return passages


def find_mentions(text: str) -> list[Mention]:
    """Code spans, links and bare path-like tokens, in text order, not overlapping."""
    found: list[Mention] = []
    taken: list[tuple[int, int]] = []

    def add(start: int, end: int, name: str) -> None:
        if any(start < e and s < end for s, e in taken):
            return
        taken.append((start, end))
        found.append(Mention((start, end), name))

    for match in _RST_LINK.finditer(text):
        add(match.start(), match.end(), _link_path(match.group("target")))
    for match in _LINK.finditer(text):
        add(match.start(), match.end(), _link_path(match.group("target")))
    for match in _CODE_SPAN.finditer(text):
        add(match.start(), match.end(), match.group("body").strip())
    for match in _BARE.finditer(text):
        add(match.start(), match.end(), match.group("body"))
    return sorted(found, key=lambda m: m.span)


def _link_path(target: str) -> str:
    blob = _GITHUB_BLOB.match(target)
    if blob:
        return "/" + blob.group("path")
    if re.match(r"^[a-z]+:", target) or target.startswith("#"):
        return ""
    return target


def resolve_mentions(mentions: list[Mention], tree: Tree, doc_dir: str, stems: bool = True) -> None:
    """Fill each mention's files (and how it was read); a link to a URL resolves to nothing."""
    for mention in mentions:
        if mention.name:
            mention.files, mention.how = tree.resolve(mention.name, doc_dir, stems)
        else:
            mention.how = "external link"


def is_code_name(mention: Mention, tree: Tree, doc_dir: str) -> bool:
    """Whether a mention names repository code or looks like a path (masked either way)."""
    if mention.files:
        return True
    name = mention.name.strip("/").lstrip("./")
    if not name:
        return False
    if tree.resolve(name, doc_dir)[1] in ("not source", "directory without entry file", "ambiguous file name",
                                          "ambiguous stem", "ambiguous path", "ambiguous module", "ambiguous directory"):
        return True
    return bool(re.search(rf"\.(?:{_EXT})$", name) or ("/" in mention.name.strip("`") and " " not in name))


def mask(text: str, mentions: list[Mention], masked: set[int], gold: list[str]) -> str:
    """The passage with the chosen mentions and the gold names masked, Markdown markup dropped."""
    pieces: list[str] = []
    last = 0
    for index, mention in enumerate(mentions):
        start, end = mention.span
        pieces.append(text[last:start])
        if index in masked:
            pieces.append(MASK)
        else:
            pieces.append(_unmarked(text[start:end]))
        last = end
    pieces.append(text[last:])
    out = "".join(pieces)
    names = {normalize(PurePosixPath(p).stem) for p in gold}
    names |= {normalize(PurePosixPath(p).parent.name) for p in gold if PurePosixPath(p).stem in _ENTRY_STEMS}
    names.discard("")

    def hide(match: re.Match) -> str:
        token = match.group(0)
        head = re.split(r"\.|::", token)[0]
        if _identifier_like(token) and (normalize(token) in names or normalize(head) in names):
            return MASK
        return token

    out = _IDENTIFIER.sub(hide, out)
    out = _HTML.sub(" ", out)
    out = re.sub(r"\*\*|__|(?<!\w)\*(?!\s)|(?<!\s)\*(?!\w)", "", out)
    out = _BULLET.sub("", out)
    out = re.sub(rf"(?:{MASK}[\s,/]*(?:and|or)?[\s,/]*)+{MASK}", MASK, out)
    return re.sub(r"[ \t]+", " ", re.sub(r"\s*\n\s*", " ", out)).strip()


_ENTRY_STEMS = frozenset({"mod", "lib", "main", "__init__", "index", "init", "doc"})


def _identifier_like(token: str) -> bool:
    """A token a plain sentence would not contain: snake_case, kebab-case, CamelCase, dotted."""
    return bool(re.search(r"[_.:-]|[a-z][A-Z]|^[A-Z][a-z]+[A-Z]", token)) or token[:1].isupper()


def _unmarked(piece: str) -> str:
    """A kept link or code span as plain text."""
    link = _LINK.fullmatch(piece) or _RST_LINK.fullmatch(piece)
    if link:
        return link.group("text").replace("`", "")
    span = _CODE_SPAN.fullmatch(piece)
    return span.group("body") if span else piece


def words(text: str) -> int:
    """How many words of two or more letters a text has."""
    return len(_WORD.findall(text))
