"""What an index run of a folder would take in and leave out, before any work: `codeqa index
--dry-run`.

The preview runs the walk and the content checks exactly as an index run does (the same
`repo_files` code: ignore files, vendored trees, binary, size, minified, symlinks), so what it
says is what the run will do; it parses nothing, embeds nothing and never opens the index.
Each file is read once to check its content (binary, minified), which an index run does too.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from codeqa.parsing.languages import IGNORE_FILE
from codeqa.parsing.repo_files import repo_root, walk_repo

ROOT_FOLDER = "./"  # the folder of files at the repository's top level
IGNORE_FILES = (".gitignore", IGNORE_FILE)


def folder_of(path: str) -> str:
    """The top-level folder a repo-relative path is counted under (`src/`), `./` for a file at
    the top; a skipped top-level folder (`node_modules/`) counts under itself."""
    top, _, rest = path.partition("/")
    return f"{top}/" if rest or path.endswith("/") else ROOT_FOLDER


@dataclass
class FolderTally:
    """One folder's share of the preview."""

    files: int = 0
    bytes: int = 0
    skipped: Counter[str] = field(default_factory=Counter)


@dataclass(frozen=True)
class IndexPreview:
    """The files a run would index (path, language, size) and every path it would skip, why."""

    root: Path
    files: tuple[tuple[str, str, int], ...]
    skips: tuple[tuple[str, str], ...]  # (reason, path); a pruned folder ends in `/`

    @property
    def languages(self) -> Counter[str]:
        return Counter(language for _, language, _ in self.files)

    @property
    def skipped(self) -> Counter[str]:
        return Counter(reason for reason, _ in self.skips)

    @property
    def ignore_files(self) -> list[str]:
        """The `.gitignore` and `.codeqaignore` files whose rules the walk applied."""
        return sorted(path for _, path in self.skips if PurePosixPath(path).name in IGNORE_FILES)

    def by_folder(self) -> dict[str, FolderTally]:
        """Files indexed and paths skipped (by reason), per top-level folder, in path order."""
        tallies: dict[str, FolderTally] = {}
        for path, _, size in self.files:
            tally = tallies.setdefault(folder_of(path), FolderTally())
            tally.files += 1
            tally.bytes += size
        for reason, path in self.skips:
            tallies.setdefault(folder_of(path), FolderTally()).skipped[reason] += 1
        return dict(sorted(tallies.items()))


def preview_index(root: str | Path, max_file_bytes: int) -> IndexPreview:
    """Walk `root` as an index run would and read each candidate's content checks; nothing is
    written."""
    folder = repo_root(root)
    walked = walk_repo(folder, max_file_bytes)
    files = []
    for found in walked.files:
        source = walked.read(found)  # a file its content rules out is recorded as a skip
        if source is not None:
            files.append((source.path, source.language, source.size))
    return IndexPreview(root=folder, files=tuple(files), skips=tuple(walked.skips))
