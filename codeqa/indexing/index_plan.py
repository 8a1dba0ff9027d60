"""What an index run will do, decided before anything is written (Continue's refresh-index shape).

`plan_index` compares the files a walk found with the manifest of the last run and returns an
`IndexPlan`: files to add, to change, to delete and left unchanged. The indexer then applies it;
every step of that is idempotent, so a rerun after a crash computes the plan again from what
was written and repairs the rest.

A file whose size and mtime match its manifest entry is taken as unchanged without being read
(like git's index). Two cases make the manifest hold mtime 0 instead, which never matches, so
the file is hashed on the next run: manifests written before mtimes were kept, and files
modified within `RACY_NS` of the walk, whose next edit could keep the same timestamp
(git's "racily clean" entries). A touched file with the same content is re-recorded with its
new size and mtime (`restat`), so it is read once, not on every run.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace

from codeqa.core.records import FileState
from codeqa.parsing.repo_files import RACY_NS, FoundFile, ReadFile, SourceFile


@dataclass(frozen=True)
class IndexPlan:
    """One run's refresh: every current file is in exactly one of add, change and unchanged."""

    add: tuple[ReadFile, ...]  # read and hashed; the writer reads them again to parse them
    change: tuple[ReadFile, ...]
    delete: tuple[str, ...]  # paths with manifest entries or rows but no current file
    unchanged: tuple[FoundFile, ...]
    restat: tuple[FileState, ...]  # unchanged content whose new size/mtime to record
    non_utf8: int  # current files decoded with replacement characters
    deleted_from_manifest: int  # how many of `delete` the manifest lists (the rest are leftovers)

    @property
    def to_write(self) -> list[ReadFile]:
        """Added and changed files in path order: parsed, embedded and written in batches."""
        return sorted(self.add + self.change, key=lambda source: source.path)

    @property
    def current(self) -> tuple[FoundFile, ...]:
        """Every file the index holds once the plan is applied."""
        return self.add + self.change + self.unchanged

    @property
    def writes(self) -> bool:
        """Whether applying the plan changes any rows."""
        return bool(self.add or self.change or self.delete)


def recorded_mtime(mtime_ns: int, walked_at_ns: int) -> int:
    """The mtime to keep in the manifest: 0 when the file is too recent to trust (see above)."""
    return mtime_ns if walked_at_ns - mtime_ns > RACY_NS else 0


def plan_index(
    found: Sequence[FoundFile],
    manifest: Mapping[str, FileState],
    stored_paths: Collection[str],
    read: Callable[[FoundFile], SourceFile | None],
    walked_at_ns: int,
) -> IndexPlan:
    """Decide what the run does. `read` is called only for files whose size or mtime differ
    from the manifest (or that it lacks); it returns None for a file its content rules out,
    which then counts as gone."""
    add: list[ReadFile] = []
    change: list[ReadFile] = []
    unchanged: list[FoundFile] = []
    restat: list[FileState] = []
    non_utf8 = 0
    for file in found:
        entry = manifest.get(file.path)
        if entry is not None and entry.same_stat(file.size, file.mtime_ns):
            unchanged.append(file)
            non_utf8 += entry.non_utf8
            continue
        source = read(file)
        if source is None:
            continue
        non_utf8 += source.decoded_with_replacement
        if entry is None:
            add.append(source.without_text())
        elif entry.sha256 != source.sha256:
            change.append(source.without_text())
        else:
            unchanged.append(source.without_text())
            mtime = recorded_mtime(source.mtime_ns, walked_at_ns)
            if (entry.size, entry.mtime_ns) != (source.size, mtime):
                restat.append(replace(entry, size=source.size, mtime_ns=mtime))
    current = {file.path for file in add + change + unchanged}
    delete = sorted((set(manifest) | set(stored_paths)) - current)
    return IndexPlan(
        add=tuple(add),
        change=tuple(change),
        delete=tuple(delete),
        unchanged=tuple(unchanged),
        restat=tuple(restat),
        non_utf8=non_utf8,
        deleted_from_manifest=sum(1 for path in delete if path in manifest),
    )
