"""Walk a repository and decide, file by file, what gets indexed and why not.

One pass over the tree with `os.scandir`, pruning ignored and vendored directories
without descending into them, so huge `node_modules` or build trees cost one stat.
The walk reads no file whose name says its language: it finds candidates with their size and
mtime, and `WalkReport.read` reads, sniffs and decodes one when the indexer needs its content
(a file whose size and mtime match the manifest is never read). Only a file whose language
its name leaves open has its head read during the walk (`languages.needs_content`): an
extensionless script's `#!` line, a `.h` header's C++ constructs.
A watcher keeps its walk between runs (`LiveWalk`) and scans again only the folders where the
tree changed.

Decisions worth knowing:
- Every text file is indexed: one that no grammar or text format knows is `other` (file
  rows and line windows); only binary, minified, oversized, ignored, vendored and secret
  (`.env`, `id_rsa`: `languages.is_secret`) files and version control's own files
  (`.gitignore`) are left out.
- `.gitignore` files are honoured at every level (patterns relative to their own
  directory, deeper files win), plus `.git/info/exclude`. The user's global
  `core.excludesFile` is not read: the index should not depend on who runs it.
- `.codeqaignore` files (`IGNORE_FILE`) have the same syntax and work at every level too: what
  git tracks but the index should not hold (fixtures, generated docs). In one directory they
  are read after `.gitignore`, so their patterns win: `!dist/api.py` there brings back a file
  `.gitignore` leaves out (not one below an excluded directory: git's rule).
- Symlinks are never followed. A link pointing outside the repo is `symlink_outside`;
  a directory link to itself or an ancestor is `symlink_loop`; any other link inside
  the repo is `symlink_duplicate`, because its target is indexed under its real path
  (a target that is itself ignored stays unindexed). A dangling link is `unreadable`.
  Not following links makes loops impossible by construction.
- Fifos, sockets and devices are `unreadable`: opening a fifo would block the walk.
- A file or folder whose name is not valid UTF-8 is `non_utf8_name` (shown with `\\xNN`
  escapes): the index, the API and the UI all speak UTF-8.
- UTF-16 and UTF-32 files with a byte-order mark are decoded as such (not taken for binary).
- `third_party` counts as vendored: by convention it holds copied upstream code.
- Skip counts for `ignored` and `vendored` count pruned directories once each.
"""

from __future__ import annotations

import codecs
import hashlib
import os
import stat
import time
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field, fields
from pathlib import Path

import pathspec

from codeqa.core.errors import CodeQAError, is_valid_unicode
from codeqa.parsing.languages import (
    DOC_LANGUAGES,
    IGNORE_FILE,
    OTHER_LANGUAGE,
    VCS_FILES,
    VENDORED_DIRS,
    VENDORED_MARKERS,
    file_name,
    file_suffix,
    is_secret,
    language_for,
    language_from_content,
    needs_content,
)

BINARY_EXTENSIONS = frozenset(
    {
        ".png",
        ".jpg",
        ".jpeg",
        ".gif",
        ".bmp",
        ".ico",
        ".webp",
        ".tiff",
        ".psd",
        ".pdf",
        ".zip",
        ".gz",
        ".tgz",
        ".bz2",
        ".xz",
        ".7z",
        ".rar",
        ".tar",
        ".jar",
        ".war",
        ".class",
        ".so",
        ".dylib",
        ".dll",
        ".exe",
        ".o",
        ".a",
        ".lib",
        ".obj",
        ".pyc",
        ".pyo",
        ".whl",
        ".woff",
        ".woff2",
        ".ttf",
        ".otf",
        ".eot",
        ".mp3",
        ".mp4",
        ".wav",
        ".ogg",
        ".flac",
        ".mov",
        ".avi",
        ".mkv",
        ".sqlite",
        ".db",
        ".bin",
        ".npy",
        ".npz",
        ".pkl",
        ".parquet",
        ".onnx",
        ".pt",
        ".gguf",
        ".wasm",
        ".swp",
        ".swo",
        ".swx",  # vim's swap files: an editor writes them on every change
    }
)
BINARY_SNIFF_BYTES = 8192
MINIFIED_MIN_BYTES = 4096
MINIFIED_AVG_LINE = 300
MINIFIED_MAX_LINE = 5000
MAX_EXAMPLES = 5
FULL_WALK_SECONDS = 600.0  # a LiveWalk walks the whole tree again this long after its last whole walk
# A file modified this close to now may be rewritten without its size or mtime changing (coarse
# filesystem clocks: FAT's are 2 s), so neither the manifest nor a LiveWalk trusts its stat yet.
RACY_NS = 2_000_000_000
GIT_DIR, GIT_EXCLUDE = ".git/", ".git/info/exclude"


class RepoPathError(CodeQAError, ValueError):
    """The repository root is missing or not a directory."""

    http_status = 400


@dataclass(frozen=True, slots=True)
class FoundFile:
    """A file the walk found indexable by its name and metadata; its content is not read yet."""

    path: str  # relative to the repo root, `/`-separated
    abs_path: str  # the path to open it by (a string: a watcher keeps one of these a file)
    language: str
    size: int
    mtime_ns: int


@dataclass(frozen=True, slots=True)
class ReadFile(FoundFile):
    """A found file whose content was read, passed the content checks and was hashed. Its text is
    not kept: an index plan holds thousands of these, and the parser reads the file again."""

    sha256: str
    decoded_with_replacement: bool
    encoding: str = "utf-8"  # or utf-16 / utf-32, by the file's byte-order mark


@dataclass(frozen=True, slots=True)
class SourceFile(ReadFile):
    """A read file with its text."""

    text: str = field(kw_only=True)

    def without_text(self) -> ReadFile:
        """What a plan keeps of it."""
        return ReadFile(**{f.name: getattr(self, f.name) for f in fields(ReadFile)})


@dataclass
class WalkReport:
    """Files found indexable plus an account of everything left out (reads included)."""

    max_file_bytes: int = 1_000_000
    files: list[FoundFile] = field(default_factory=list)
    skips: list[tuple[str, str]] = field(default_factory=list)  # (reason, path; a pruned folder ends in /)
    non_utf8: int = 0  # of the files read so far
    bom_decoded: Counter[str] = field(default_factory=Counter)  # utf-16/utf-32 files read so far
    # path → (size, mtime, reason) of files their content ruled out, kept by a LiveWalk between
    # runs: no manifest entry remembers them, so each run would read them all again.
    ruled_out: dict[str, tuple[int, int, str]] = field(default_factory=dict)

    def skip(self, reason: str, rel_path: str) -> None:
        """Record a skipped path and why (a pruned folder once, not the files below it)."""
        self.skips.append((reason, rel_path))

    @property
    def skipped(self) -> Counter[str]:
        """How many paths were skipped, by reason."""
        return Counter(reason for reason, _ in self.skips)

    @property
    def skipped_examples(self) -> dict[str, list[str]]:
        """The first few skipped paths of each reason, for a summary."""
        examples: dict[str, list[str]] = {}
        for reason, path in self.skips:
            shown = examples.setdefault(reason, [])
            if len(shown) < MAX_EXAMPLES:
                shown.append(path)
        return examples

    def read(self, found: FoundFile) -> SourceFile | None:
        """Read one found file; None (and the reason counted) when its content rules it out,
        now or, with the same size and mtime, in an earlier run (`ruled_out`)."""
        known = self.ruled_out.get(found.path)
        if known is not None and known[:2] == (found.size, found.mtime_ns):
            self.skip(known[2], found.path)
            return None
        source = read_source(found, self.max_file_bytes)
        if isinstance(source, str):
            self.skip(source, found.path)
            if source != "unreadable" and time.time_ns() - found.mtime_ns > RACY_NS:
                self.ruled_out[found.path] = (found.size, found.mtime_ns, source)
            return None
        self.non_utf8 += source.decoded_with_replacement
        if source.encoding != "utf-8":
            self.bom_decoded[source.encoding] += 1
        return source

    def read_all(self) -> list[SourceFile]:
        """Every found file that passes the content checks, in path order."""
        return [source for source in map(self.read, self.files) if source is not None]


@dataclass(frozen=True)
class _IgnoreLayer:
    """The patterns of one directory's `.gitignore` and `.codeqaignore`, relative to `base`
    ("" or "dir/sub/")."""

    base: str
    spec: pathspec.PathSpec


def hash_bytes(data: bytes) -> str:
    """Hex sha256 of raw file bytes: the content identity used for re-index checks."""
    return hashlib.sha256(data).hexdigest()


def _is_ignored(rel_path: str, is_dir: bool, layers: tuple[_IgnoreLayer, ...]) -> bool:
    """Git semantics: the deepest directory with a matching pattern decides."""
    for layer in reversed(layers):
        if not rel_path.startswith(layer.base):
            continue
        local = rel_path[len(layer.base) :] + ("/" if is_dir else "")
        verdict = layer.spec.check_file(local).include
        if verdict is not None:
            return verdict
    return False


def _read_patterns(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read().splitlines()
    except OSError:
        return []


_IGNORE_FILES = frozenset({".gitignore", IGNORE_FILE})
_ROOT_RULE_FILES = (*sorted(_IGNORE_FILES), GIT_EXCLUDE)


def _layer_for(abs_dir: str, rel_dir: str, is_root: bool) -> _IgnoreLayer | None:
    """One directory's ignore patterns: `.gitignore`, then `.codeqaignore` (later lines win)."""
    lines = _read_patterns(os.path.join(abs_dir, ".gitignore")) + _read_patterns(os.path.join(abs_dir, IGNORE_FILE))
    if is_root:
        # exclude comes first so the checked-in .gitignore overrides it.
        lines = _read_patterns(os.path.join(abs_dir, GIT_EXCLUDE)) + lines
    if not any(line.strip() and not line.startswith("#") for line in lines):
        return None
    # Plain last-match-wins patterns, as git applies them to each path it visits. GitIgnoreSpec
    # adds a rule for files below an excluded directory (which the walk prunes anyway) and gets
    # directories wrong with it: `*` then `!*/` (un-ignore every directory) left them ignored.
    return _IgnoreLayer(rel_dir, _ignore_spec(lines))


def _ignore_spec(lines: list[str]) -> pathspec.PathSpec:
    """The patterns git can read; git skips a line it cannot (psf/black's `.gitignore` has a
    lone `!`, on which `PathSpec.from_lines` raises) and applies the rest, and so does the walk."""
    pattern = pathspec.util.lookup_pattern("gitignore")
    patterns = []
    for line in lines:
        try:
            patterns.append(pattern(line))
        except ValueError:  # pathspec's GitIgnorePatternError
            continue
    return pathspec.PathSpec(patterns)


def _is_vendored_dir(name: str, abs_path: str) -> bool:
    if name in VENDORED_DIRS:
        return True
    return any(os.path.isfile(os.path.join(abs_path, marker)) for marker in VENDORED_MARKERS)


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _symlink_reason(entry: os.DirEntry[str], root: str) -> str:
    """Why a symlink is skipped: links are never followed (see module docstring)."""
    target = os.path.realpath(entry.path)
    if not _within(target, root):
        return "symlink_outside"
    if not os.path.exists(target):
        return "unreadable"
    link_dir = os.path.realpath(os.path.dirname(entry.path))
    if os.path.isdir(target) and _within(link_dir, target):
        return "symlink_loop"
    return "symlink_duplicate"


def _looks_minified(rel_path: str, data: bytes) -> bool:
    """Minified or generated: long lines on average, or one huge line holding most bytes.

    A single long line alone is not enough: real modules embed a long template or
    table line (seen in transformers and sympy) and must stay indexed.
    """
    if ".min." in file_name(rel_path).lower():
        return True
    if len(data) < MINIFIED_MIN_BYTES:
        return False
    lines = data.split(b"\n")
    longest = max(map(len, lines))
    if longest > MINIFIED_MAX_LINE and longest * 2 > len(data):
        return True
    return len(data) / len(lines) > MINIFIED_AVG_LINE


# Byte-order marks of the encodings other than UTF-8 a source file is found in (Windows tools
# write UTF-16 with a BOM). UTF-32's little-endian mark starts with UTF-16's: test it first.
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def bom_encoding(data: bytes) -> str | None:
    """`utf-16` or `utf-32` when the bytes start with that encoding's byte-order mark."""
    return next((encoding for bom, encoding in _BOMS if data.startswith(bom)), None)


def decode_text(data: bytes) -> tuple[str, bool]:
    """A file's text and whether characters were replaced: UTF-16/32 when a byte-order mark says
    so, else UTF-8 (without its BOM); undecodable bytes become U+FFFD rather than losing the file.
    The indexer and the file view decode alike, so line numbers agree."""
    encoding = bom_encoding(data) or "utf-8-sig"
    try:
        return data.decode(encoding), False
    except UnicodeDecodeError:
        return data.decode(encoding, errors="replace"), True


def shown_path(path: str) -> str:
    """A path fit for messages and the index: bytes that are not UTF-8 (kept by the OS as lone
    surrogates) written as `\\xe9`."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


@dataclass(slots=True)
class _Folder:
    """One folder's part of a walk: its files and skips (a pruned subfolder's included) and the
    subfolders to visit, each with the ignore layers it inherits; `layers`: those it inherited."""

    abs_dir: str
    layers: tuple[_IgnoreLayer, ...]
    files: list[FoundFile] = field(default_factory=list)
    skips: list[tuple[str, str]] = field(default_factory=list)
    subdirs: list[tuple[str, str, tuple[_IgnoreLayer, ...]]] = field(default_factory=list)  # (abs, rel, layers)
    links: bool = False  # holds a symlink: what it is skipped as depends on its target, elsewhere
    # What `LiveWalk.refresh` compares to tell that the folder changed: when it was scanned, its
    # own mtime then, the stats of its ignore files and of what it skipped for what it held or
    # how large it was (files; vendored folders, whose markers can go).
    scanned_ns: int = 0
    mtime_ns: int = -1  # -1: unreadable
    rule_stats: tuple[tuple[str, int, int], ...] = ()
    skipped_stats: list[tuple[str, int, int]] = field(default_factory=list)

    def moved(self) -> bool:
        """Whether entries may have come or gone since the scan: its mtime changed (or was too
        close to the scan to tell, `RACY_NS`), or it could not be read."""
        return self.mtime_ns < 0 or _stat_of(self.abs_dir)[2] != self.mtime_ns or _racy(self.mtime_ns, self.scanned_ns)

    def files_changed(self) -> bool:
        """Whether a file it found, or skipped by its stats, changed since the scan."""
        return any(
            _stat_of(path)[1:] != (size, mtime) or _racy(mtime, self.scanned_ns)
            for path, size, mtime in (
                *((f.abs_path, f.size, f.mtime_ns) for f in self.files),
                *self.skipped_stats,
            )
        )


def _stat_of(path: str) -> tuple[str, int, int]:
    """(path, size, mtime) of a path, without following a link; sizes and mtimes -1 if it is gone."""
    try:
        info = os.lstat(path)
    except OSError:
        return path, -1, -1
    return path, info.st_size, info.st_mtime_ns


def _rule_stats(abs_dir: str, names: Collection[str]) -> tuple[tuple[str, int, int], ...]:
    """The stats of the rule files among `names` that the folder holds."""
    return tuple(found for name in names if (found := _stat_of(os.path.join(abs_dir, name)))[1] >= 0)


def _racy(mtime_ns: int, seen_ns: int) -> bool:
    return seen_ns - mtime_ns <= RACY_NS


class _Walker:
    """Holds the walk's rules and settings so each step stays a small method."""

    def __init__(self, root: Path, max_file_bytes: int) -> None:
        self.root_str = str(root)
        self.max_file_bytes = max_file_bytes

    def walk(self, abs_dir: str, rel_dir: str, layers: tuple[_IgnoreLayer, ...], into: dict[str, _Folder]) -> None:
        """Scan the folder `rel_dir` and every folder below it that the walk keeps, into `into`."""
        stack = [(abs_dir, rel_dir, layers)]
        while stack:
            abs_dir, rel_dir, layers = stack.pop()
            folder = into[rel_dir] = self.scan(abs_dir, rel_dir, layers)
            stack.extend(folder.subdirs)

    def scan(self, abs_dir: str, rel_dir: str, layers: tuple[_IgnoreLayer, ...]) -> _Folder:
        """One folder: its files and skips, and its subfolders to visit."""
        folder = _Folder(abs_dir, layers, scanned_ns=time.time_ns())
        try:
            folder.mtime_ns = os.stat(abs_dir).st_mtime_ns
            with os.scandir(abs_dir) as scan:
                entries = sorted(scan, key=lambda entry: entry.name)
        except OSError:
            folder.mtime_ns = -1
            folder.skips.append(("unreadable", rel_dir.rstrip("/") or "."))
            return folder
        # Only a folder with an ignore file has patterns of its own (the root: git's exclude
        # too): trying to open both in every folder was a fifth of a walk of eight copies of django/.
        if not rel_dir or any(entry.name in _IGNORE_FILES for entry in entries):
            folder.rule_stats = _rule_stats(abs_dir, _ROOT_RULE_FILES if not rel_dir else _IGNORE_FILES)
            layer = _layer_for(abs_dir, rel_dir, is_root=not rel_dir)
            if layer is not None:
                layers = (*layers, layer)
        neighbours = frozenset(file_suffix(entry.name).lower() for entry in entries)
        for entry in entries:
            rel_path = rel_dir + entry.name
            if not is_valid_unicode(entry.name):  # the index, the UI and the API all speak UTF-8
                folder.skips.append(("non_utf8_name", shown_path(rel_path)))
                continue
            if entry.is_dir(follow_symlinks=False):
                pruned = self._prune_reason(entry, rel_path, layers)
                if pruned:
                    folder.skips.append((pruned, rel_path + "/"))
                    if pruned == "vendored":  # a marker added or removed in it changes its mtime
                        folder.skipped_stats.append(_stat_of(entry.path))
                else:
                    folder.subdirs.append((entry.path, rel_path + "/", layers))
                continue
            folder.links = folder.links or entry.is_symlink()
            found = self._check_file(entry, rel_path, layers, neighbours)
            if isinstance(found, str):
                folder.skips.append((found, rel_path))
                if found in _SKIPPED_BY_STATS or (found == "binary" and needs_content(rel_path)):
                    folder.skipped_stats.append(_stat_of(entry.path))
            else:
                folder.files.append(found)
        return folder

    def _prune_reason(self, entry: os.DirEntry[str], rel_path: str, layers: tuple[_IgnoreLayer, ...]) -> str | None:
        """Why the walk does not descend into a folder, or None."""
        if _is_vendored_dir(entry.name, entry.path):
            return "vendored"
        if _is_ignored(rel_path, True, layers):
            return "ignored"
        return None

    def _check_file(
        self,
        entry: os.DirEntry[str],
        rel_path: str,
        layers: tuple[_IgnoreLayer, ...],
        neighbours: frozenset[str],
    ) -> FoundFile | str:
        """Checks cheapest first (content only where the name leaves the language open): the
        file, or why it is skipped."""
        if _is_ignored(rel_path, False, layers):
            return "ignored"
        if entry.is_symlink():
            return _symlink_reason(entry, self.root_str)
        if file_suffix(rel_path).lower() in BINARY_EXTENSIONS:
            return "binary"
        if is_secret(rel_path):
            return "secret"
        if entry.name in VCS_FILES:
            return "vcs"
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            return "unreadable"
        if not stat.S_ISREG(info.st_mode):
            return "unreadable"
        if info.st_size > self.max_file_bytes:
            return "too_large"
        language = language_for(rel_path) or OTHER_LANGUAGE
        if needs_content(rel_path):
            head = _read_head(Path(entry.path))
            if head is None:
                return "unreadable"
            if bom_encoding(head) is None and b"\x00" in head:
                return "binary"
            language = language_from_content(rel_path, decode_text(head)[0], neighbours)
        return FoundFile(rel_path, entry.path, language, info.st_size, info.st_mtime_ns)


# Skips a file's new stats can undo (binary too, where its content, not its name, said so).
_SKIPPED_BY_STATS = frozenset({"too_large", "unreadable"})


def _read_head(path: Path) -> bytes | None:
    """The first bytes of a file, enough for its `#!` line and a header's first declarations."""
    try:
        with open(path, "rb") as handle:
            return handle.read(BINARY_SNIFF_BYTES)
    except OSError:
        return None


class ChangeFilter:
    """The walk's rules applied to single changed paths, for a watcher: whether a change (of a
    file or directory, existing or deleted) can change what the walk finds.

    A change under `.git/`, a vendored or ignored directory, or to an ignored, binary-by-name or
    secret file cannot; a `.gitignore` or `.codeqaignore` can, and so can a directory created or
    moved in (its files may arrive as one event), and any other file (every text file is
    indexed). Content checks stay with the walk. Ignore files are read once per instance: make
    one per batch of changes.
    """

    def __init__(self, root: Path) -> None:
        self.root = str(root)
        self._layers: dict[str, _IgnoreLayer | None] = {}

    def _layer(self, rel_dir: str) -> _IgnoreLayer | None:
        if rel_dir not in self._layers:
            self._layers[rel_dir] = _layer_for(os.path.join(self.root, rel_dir), rel_dir, is_root=not rel_dir)
        return self._layers[rel_dir]

    def matters(self, rel_path: str) -> bool:
        """`rel_path`: relative to the root, `/`-separated."""
        *dirs, name = rel_path.split("/")
        layers: tuple[_IgnoreLayer, ...] = ()
        rel_dir = ""
        for part in [*dirs, None]:
            layer = self._layer(rel_dir)
            if layer is not None:
                layers = (*layers, layer)
            if part is None:
                break
            if _is_vendored_dir(part, os.path.join(self.root, rel_dir, part)) or _is_ignored(
                rel_dir + part, True, layers
            ):
                return False
            rel_dir += part + "/"
        abs_path = os.path.join(self.root, rel_path)
        if os.path.isdir(abs_path):
            return not _is_vendored_dir(name, abs_path) and not _is_ignored(rel_path, True, layers)
        if name in _IGNORE_FILES:
            return True
        if _is_ignored(rel_path, False, layers) or file_suffix(name).lower() in BINARY_EXTENSIONS:
            return False
        return not is_secret(rel_path) and name not in VCS_FILES


def read_source(found: FoundFile, max_file_bytes: int) -> SourceFile | str:
    """Read, sniff and decode one found file: the source, or the reason it is skipped."""
    data = read_bytes(found, max_file_bytes)
    return "unreadable" if data is None else source_from_bytes(found, data, max_file_bytes)


def read_bytes(found: FoundFile, max_file_bytes: int) -> bytes | None:
    """A found file's bytes, one past `max_file_bytes` at most (so "too large" can be told); None
    when it can't be read. A cluster's driver ships these to nodes that can't see its disk."""
    try:
        with open(found.abs_path, "rb") as handle:
            return handle.read(max_file_bytes + 1)
    except OSError:
        return None


def source_from_bytes(found: FoundFile, data: bytes, max_file_bytes: int) -> SourceFile | str:
    """Sniff and decode a found file's bytes (`read_bytes`): the source, or why it is skipped."""
    if len(data) > max_file_bytes:
        return "too_large"
    encoding = bom_encoding(data)
    if encoding is None and b"\x00" in data[:BINARY_SNIFF_BYTES]:
        return "binary"
    text, replaced = decode_text(data)
    if found.language not in DOC_LANGUAGES and _looks_minified(found.path, text.encode("utf-8", "replace")):
        return "minified"
    return SourceFile(
        path=found.path,
        abs_path=found.abs_path,
        language=found.language,
        size=len(data),
        mtime_ns=found.mtime_ns,
        text=text,
        sha256=hash_bytes(data),
        decoded_with_replacement=replaced,
        encoding=encoding or "utf-8",
    )


def repo_root(root: str | Path) -> Path:
    """The repository folder a user named, resolved; a one-line error for anything else."""
    if not str(root).strip():
        raise RepoPathError("The repository path is empty: give the folder to index.")
    root_path = Path(root).expanduser()
    if not root_path.exists():
        raise RepoPathError(f"{root} does not exist.")
    if not root_path.is_dir():
        raise RepoPathError(f"{root} is not a directory.")
    resolved = root_path.resolve()
    try:
        str(resolved).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise RepoPathError(f"{ascii(str(resolved))} is not a valid UTF-8 path: rename the folder.") from exc
    return resolved


def walk_repo(root: Path, max_file_bytes: int = 1_000_000) -> WalkReport:
    """Every file under `root` that may be indexed, sorted by path, and why the rest was skipped.

    Content checks (binary, minified, decoding) happen when a file is read: `WalkReport.read`.
    """
    walker = _Walker(_existing_folder(Path(root).expanduser()).resolve(), max_file_bytes)
    folders: dict[str, _Folder] = {}
    walker.walk(walker.root_str, "", (), folders)
    return _report(folders, max_file_bytes)


def _existing_folder(root: Path) -> Path:
    if not root.exists():
        raise RepoPathError(f"Repository path does not exist: {root}")
    if not root.is_dir():
        raise RepoPathError(f"Repository path is not a directory: {root}")
    return root


class LiveWalk:
    """A walk of one tree kept between index runs, for a watcher: after a whole walk,
    `walk(changed)` scans again only the folders that changes to those paths can affect, and
    returns what a whole walk would, provided they are all the paths that changed.

    A changed file, or a folder created, moved or deleted, has its folder scanned again (a new
    folder is walked whole); a changed ignore file, its folder and everything below (the rules
    of every folder below change; `.git/info/exclude`: the whole tree); a changed `pyvenv.cfg`,
    the folder above too (it decides whether its folder is vendored). A path inside a folder
    the walk prunes has the nearest folder it keeps scanned again. Folders holding symlinks
    are scanned again every time: what a link is skipped as depends on its target, which may
    have changed anywhere. Each folder is scanned once per walk however many of its paths
    changed. A watcher can miss changes (a full event queue), so the tree is walked whole
    again when the last whole walk is `full_every` seconds old.

    It also remembers the files that reading ruled out (binary content under a name that did not
    say so, like gettext's `.mo`; minified code), by size and mtime: nothing else does, and each
    run would read them all again (Django's 1,226 `.mo` files: 0.4 s of a one-file run on eight
    copies)."""

    def __init__(self, root: Path, max_file_bytes: int = 1_000_000, full_every: float = FULL_WALK_SECONDS) -> None:
        self._walker = _Walker(Path(root).resolve(), max_file_bytes)
        self._folders: dict[str, _Folder] = {}
        self._full_every = full_every
        self._walked_at = 0.0
        self._ruled_out: dict[str, tuple[int, int, str]] = {}  # shared with each report (`WalkReport.read`)

    @property
    def root(self) -> Path:
        return Path(self._walker.root_str)

    def walk(self, changed: Collection[str] | None = None) -> WalkReport:
        """The walk's report now: whole when `changed` is None, else after the changes to
        these repo-relative, `/`-separated paths."""
        if changed is None or self._due():
            return self._walk_whole()
        self._apply(*self._affected(changed))
        return self._gathered(whole=False)

    def refresh(self) -> WalkReport:
        """The walk's report now, found without being told what changed, by stats, as git's
        untracked cache finds them: a folder whose mtime changed is scanned again (and the one
        above it, which decides whether it is vendored), as is one holding a file whose size or
        mtime changed; a changed ignore file, everything below it. A stat too close to its scan
        to trust (`RACY_NS`) counts as changed. A fifth of a whole walk (a stat a file and a
        folder), for a check that the index holds the files as they are now
        (`indexer.CurrentFilesCheck`)."""
        _existing_folder(self.root)
        if self._due():
            return self._walk_whole()
        subtrees: set[str] = set()
        folders: dict[str, set[str]] = {}
        for rel_dir, folder in self._folders.items():
            moved = folder.moved()
            if moved or folder.links or folder.files_changed():
                folders.setdefault(rel_dir, set())
            if moved and rel_dir:
                folders.setdefault(_folder_above(rel_dir), set())
            if moved or folder.rule_stats or not rel_dir:
                names = _ROOT_RULE_FILES if not rel_dir else _IGNORE_FILES
                if _rule_stats(folder.abs_dir, names) != folder.rule_stats:
                    subtrees.add(rel_dir)
        self._apply(subtrees, folders)
        return self._gathered(whole=False)

    def _due(self) -> bool:
        return not self._folders or time.monotonic() - self._walked_at >= self._full_every

    def _walk_whole(self) -> WalkReport:
        self._folders = {}
        self._walker.walk(self._walker.root_str, "", (), self._folders)
        self._walked_at = time.monotonic()
        return self._gathered(whole=True)

    def _apply(self, subtrees: set[str], folders: dict[str, set[str]]) -> None:
        """Scan again these folders with all they hold, then these others (each with the
        subfolders to walk again whole)."""
        for rel_dir in sorted(subtrees):
            self._rescan(rel_dir, subtree=True)
        for rel_dir, again in sorted(folders.items()):
            self._rescan(rel_dir, again=again)

    def _gathered(self, whole: bool) -> WalkReport:
        report = _report(self._folders, self._walker.max_file_bytes)
        if whole:  # forget the files that are gone
            found = {file.path for file in report.files}
            self._ruled_out = {path: known for path, known in self._ruled_out.items() if path in found}
        report.ruled_out = self._ruled_out
        return report

    def _affected(self, changed: Collection[str]) -> tuple[set[str], dict[str, set[str]]]:
        """The folders to scan again for these changes: those to scan with all they hold, and
        the others, each with the subfolders to walk again whole."""
        subtrees: set[str] = set()
        folders: dict[str, set[str]] = {rel_dir: set() for rel_dir, held in self._folders.items() if held.links}
        for path in changed:
            if path.startswith(GIT_DIR):  # never walked, but `.git/` itself is one of the root's skips
                folders.setdefault("", set())
                if path == GIT_EXCLUDE:  # the root's ignore rules
                    subtrees.add("")
                continue
            *dirs, name = path.split("/")
            folder = "".join(part + "/" for part in dirs)
            if name in VENDORED_MARKERS and dirs:
                folders.setdefault(self._nearest(_folder_above(folder)), set()).add(folder)
            nearest = self._nearest(folder)
            if name in _IGNORE_FILES and nearest == folder:
                subtrees.add(folder)
            else:
                folders.setdefault(nearest, set()).add(path + "/" if nearest == folder else "")
        return subtrees, folders

    def _nearest(self, rel_dir: str) -> str:
        """`rel_dir`, or the nearest folder above it that the walk holds."""
        while rel_dir not in self._folders:
            rel_dir = _folder_above(rel_dir)
        return rel_dir

    def _rescan(self, rel_dir: str, subtree: bool = False, again: Collection[str] = ()) -> None:
        """Scan the folder `rel_dir` again, walking whole each subfolder it did not hold, those
        in `again`, or, with `subtree`, every one."""
        if rel_dir not in self._folders:  # gone: a folder above it was scanned again
            return
        old = self._folders[rel_dir]
        folder = self._walker.scan(old.abs_dir, rel_dir, old.layers)
        held = {sub for _, sub, _ in old.subdirs}
        kept = {sub for _, sub, _ in folder.subdirs}
        self._forget(rel_dir, held if subtree else (held - kept) | (kept & set(again)))
        self._folders[rel_dir] = folder
        for abs_dir, sub, layers in folder.subdirs:
            if sub not in self._folders:
                self._walker.walk(abs_dir, sub, layers, self._folders)

    def _forget(self, rel_dir: str, subfolders: set[str]) -> None:
        """Drop these subfolders of `rel_dir` and everything below them (one pass, when any)."""
        if subfolders:
            for key in [key for key in self._folders if key != rel_dir and key.startswith(rel_dir)]:
                if _child(rel_dir, key) in subfolders:
                    del self._folders[key]


def _folder_above(rel_dir: str) -> str:
    """The folder above `rel_dir`: "a/b/" → "a/", "a/" → ""."""
    return rel_dir[: rel_dir.rstrip("/").rfind("/") + 1]


def _child(rel_dir: str, below: str) -> str:
    """The subfolder of `rel_dir` that holds the folder `below` (or is it)."""
    return rel_dir + below[len(rel_dir) :].split("/", 1)[0] + "/"


def _report(folders: dict[str, _Folder], max_file_bytes: int) -> WalkReport:
    """A walk's report from its folders, gathered in the order the walk visits them."""
    report = WalkReport(max_file_bytes)
    stack = [""]
    while stack:
        folder = folders[stack.pop()]
        report.files.extend(folder.files)
        report.skips.extend(folder.skips)
        stack.extend(sub for _, sub, _ in folder.subdirs)
    report.files.sort(key=lambda source: source.path)
    return report
