"""The MCP tools that index: an agent indexes a folder, follows the run, brings the index up to date
after edits and removes it, without asking its human to run the CLI; and `search_code` on a
folder that is not indexed yet indexes it first (semble's flow).

    index_repository(path)   → at once: a job id; the run goes on in the server
    index_status(repo)       → phase, counts, searchable yet, embedded %, errors, model
    refresh_repository(repo) → an incremental run (only changed files), waited for
    remove_repository(repo)  → the index deleted, the folder untouched

The runs are `indexing.jobs.IndexJobs`: the CLI's own `index_repo` in a thread of the server,
one per repo, under the same lease, so a concurrent `codeqa index` is waited for, never raced.
Calls that wait (`wait_seconds`, and `search_code` on a new folder) send MCP progress
notifications when the client asked for them (a `progressToken`).

A folder an agent names is untrusted input: it must be an existing directory reached without
a symbolic link, not the file-system root, a home folder or a system folder, and no `..`
(`agent_folder`); errors echo only what the agent sent, other absolute paths become `<path>`.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Annotated

import anyio.from_thread
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, Field

from codeqa.core.errors import CodeQAError, InvalidArgument, is_valid_unicode, one_line, printable_lines, user_error
from codeqa.core.errors import without_paths as _without_paths
from codeqa.core.records import RepoInfo
from codeqa.indexing.indexer import CurrentFilesCheck, remove_repo, resolve_repo_name
from codeqa.indexing.jobs import DONE, FAILED, IndexJobs, JobStatus, Ticket
from codeqa.mcp_models import IndexJob, IndexStatusOutput, RemovedOutput
from codeqa.parsing.repo_files import RepoPathError, repo_root
from codeqa.services import Services
from codeqa.store.errors import UnknownRepoError
from codeqa.store.lease import IndexBusyError

MAX_PATH_CHARS = 4096  # PATH_MAX: no folder's path is longer
MAX_WAIT_S = 60  # the longest a call waits for a run (clients time tool calls out)
REFRESH_WAIT_S = 30  # refresh_repository waits this long unless told otherwise
SEARCH_WAIT_S = 60  # search_code waits this long for a new folder to become searchable
STOP_WAIT_S = 30.0  # remove_repository waits this long for this server's run to stop
SYSTEM_FOLDERS = tuple(Path(p) for p in ("/proc", "/sys", "/dev", "/etc", "/boot", "/run"))
SHOWN_PATH_CHARS = 120  # of an agent's path echoed in an error

Reporter = Callable[[JobStatus], None]  # hears each new status of a run a call waits for


class IndexToolError(CodeQAError):
    """An index tool's failure, said without the server's own paths."""


def is_folder(repo: str) -> bool:
    """Whether a `repo` argument names a folder rather than an indexed repo: a repo name never
    holds a `/` and starts with a letter or digit (`registry.check_repo_name`)."""
    return "/" in repo or repo.startswith((".", "~"))


def agent_folder(value: str, workdir: Path) -> Path:
    """The repository folder an agent named, checked before anything reads it: a relative path
    is taken from the server's working directory (the project, where editors start servers)."""
    shown = one_line(value, SHOWN_PATH_CHARS)
    text = value.strip()
    if not text:
        raise InvalidArgument("path is empty: give the repository's folder (an absolute path).")
    if "\x00" in text or not is_valid_unicode(text):
        raise InvalidArgument("path holds characters that no folder name can have.")
    if ".." in PurePosixPath(text).parts:
        raise InvalidArgument(f"{shown}: '..' is not allowed; give the folder's absolute path.")
    path = Path(os.path.normpath(workdir / Path(text).expanduser()))
    if path.is_symlink() or os.path.realpath(path) != str(path):  # a link to itself "resolves" to itself
        raise RepoPathError(f"{shown} is or goes through a symbolic link: give the folder's real path.")
    if not path.exists():
        raise RepoPathError(f"{shown} does not exist.")
    if not path.is_dir():
        raise RepoPathError(f"{shown} is not a folder: give the repository's folder, not a file in it.")
    if path in (Path(path.anchor), Path.home()) or any(path.is_relative_to(system) for system in SYSTEM_FOLDERS):
        raise InvalidArgument(
            f"{shown} is not a repository: the file-system root, the home folder and system folders are never indexed."
        )
    if not os.access(path, os.R_OK | os.X_OK):
        raise RepoPathError(f"{shown} cannot be read (permission denied).")
    return repo_root(path)


def indexed_folder(services: Services, root: Path) -> RepoInfo | None:
    """The indexed repo whose root is `root`, if there is one."""
    return next((info for info in services.repos() if info.root == str(root)), None)


def folder_repo(services: Services, value: str, workdir: Path) -> RepoInfo:
    """The indexed repo whose root is the folder an agent named."""
    found = indexed_folder(services, agent_folder(value, workdir))
    if found is None:
        raise UnknownRepoError(
            f"{one_line(value, SHOWN_PATH_CHARS)} is not indexed yet: call index_repository with it, "
            "or search_code with repo set to it (which indexes it first)."
        )
    return found


def hide_server_paths(text: str, own: list[str]) -> str:
    """`text` with absolute paths replaced by `<path>`, except the agent's own folder (and what
    lies in it): a failure deep in the store must not show an agent the server's layout."""
    marks = {f"\ue000{i}x": path for i, path in enumerate(sorted(filter(None, own), key=len, reverse=True))}
    for mark, path in marks.items():
        text = text.replace(path, mark)
    text = _without_paths(text)
    for mark, path in marks.items():
        text = text.replace(mark, path)
    return text


def _own_paths(value: str | None) -> list[str]:
    """The forms of the agent's path argument its errors may show: as sent, and resolved."""
    if not value:
        return []
    try:
        return [value, str(Path(value).expanduser().resolve())]
    except (OSError, ValueError, RuntimeError):
        return [value]


@contextmanager
def _agent_errors(value: str | None) -> Iterator[None]:
    """Errors a user can act on, re-raised with server paths hidden; bugs untouched."""
    try:
        yield
    except IndexToolError:
        raise
    except Exception as exc:
        problem = user_error(exc)
        if problem is None:
            raise
        raise IndexToolError(hide_server_paths(str(problem), _own_paths(value))) from exc


@dataclass(frozen=True)
class _Target:
    """The repo a call is about: its name, its folder, and its registry row if it is indexed."""

    name: str
    root: Path
    info: RepoInfo | None


class IndexTools:
    """What each index tool does, as (text for the model, structured data)."""

    def __init__(
        self, services: Services, find_repo: Callable[[str | None], RepoInfo], workdir: Path, watch: bool = False
    ) -> None:
        self.services = services
        self.find_repo = find_repo  # a repo argument (name, folder, or None: the default) → its row
        self.workdir = workdir
        self.jobs = IndexJobs(services.settings, services.db, watch)
        # Whether each folder's index is current, asked before every `search_code` on it.
        self._checks: dict[Path, CurrentFilesCheck] = {}
        self._checks_lock = threading.Lock()

    # --- the tools ------------------------------------------------------------------------------

    def index(self, path: str, name: str | None, wait_seconds: int, report: Reporter) -> tuple[str, IndexStatusOutput]:
        with _agent_errors(path):
            root = agent_folder(path, self.workdir)
            name = resolve_repo_name(self.services.db, root, name)
            started, ticket = self.jobs.start(root, name, "index")
            self.jobs.wait(name, ticket.finished, wait_seconds, report)
            target = _Target(name, root, self._registered(name))
            joined = " (it was under way already)" if ticket.joined else ""
            return self._status(target, [f"Job {started.id}: indexing {root} as {name}{joined}."], ticket)

    def status(self, repo: str | None, wait_seconds: int, report: Reporter) -> tuple[str, IndexStatusOutput]:
        with _agent_errors(repo):
            target = self._target(repo)
            self.jobs.wait(target.name, lambda status: not status.active, wait_seconds, report)
            return self._status(self._target(repo), [], None)

    def refresh(self, repo: str | None, wait_seconds: int, report: Reporter) -> tuple[str, IndexStatusOutput]:
        with _agent_errors(repo):
            target = self._target(repo)
            job = self.jobs.status(target.name)
            idle = job is None or not job.active
            if target.info is None and idle:
                raise UnknownRepoError(f"{target.name} is not indexed yet: call index_repository with its folder.")
            if idle and self._up_to_date(target):
                return self._status(target, ["Up to date: nothing changed since the last run."], None)
            started, ticket = self.jobs.start(target.root, target.name, "refresh")
            self.jobs.wait(target.name, ticket.finished, wait_seconds, report)
            return self._status(self._target(repo), [f"Job {started.id}: bringing {target.name} up to date."], ticket)

    def remove(self, repo: str) -> tuple[str, RemovedOutput]:
        with _agent_errors(repo):
            target = self._target(repo)
            running = self.jobs.status(target.name)
            stopped = running.id if running is not None and running.active else None
            if not self.jobs.cancel(target.name, STOP_WAIT_S):
                raise IndexBusyError(f"{target.name}'s index run is still stopping: try again in a minute.")
            if stopped is not None and self._registered(target.name) is None:
                text = f"Stopped the run (job {stopped}) on {target.root} before it had written anything."
                return text, RemovedOutput(repo=target.name, root=str(target.root), stopped_run=True)
            try:
                removed = remove_repo(self.services.db, target.name, wait=STOP_WAIT_S)
            except IndexBusyError as exc:
                raise IndexBusyError(
                    f"{target.name} is being indexed by another process: try again when it has finished."
                ) from exc
            self.jobs.forget(target.name)
            with self._checks_lock:
                self._checks.pop(target.root, None)
            text = f"Removed the index of {removed.name} ({removed.root}); the folder itself is untouched." + (
                f" Its run (job {stopped}) was stopped." if stopped is not None else ""
            )
            output = RemovedOutput(repo=removed.name, root=removed.root, stopped_run=stopped is not None)
            return printable_lines([text]), output

    def prepare_search(self, repo: str | None, report: Reporter) -> list[str]:
        """Before search_code on a folder: index it if it is new, bring it up to date if it
        changed, and wait (up to SEARCH_WAIT_S) until search sees it; notices for the answer.
        A repo named by name is searched as it is."""
        if repo is None or not is_folder(repo):
            return []
        with _agent_errors(repo):
            target = self._target(repo)
            if target.info is not None and self._holds_current_files(target):
                job = self.jobs.status(target.name)
                if target.info.stats.vectors_pending and (job is None or not job.active):
                    # an interrupted run's vectors: embed them, and search by text meanwhile
                    self.jobs.start(target.root, target.name, "refresh")
                return []
            _, ticket = self.jobs.start(target.root, target.name, "index" if target.info is None else "refresh")
            status = self.jobs.wait(target.name, ticket.searchable, SEARCH_WAIT_S, report)
            return self._search_notices(target, status, ticket)

    def start_watching(self) -> None:
        """`--watch`: bring every indexed repo whose folder is on this machine up to date, then
        keep it so; in the background, so the server answers at once."""

        def work() -> None:
            for info in self.services.repos():
                target = _Target(info.name, Path(info.root), info)
                if not target.root.is_dir():
                    continue
                if self._up_to_date(target):
                    self.jobs.watch(info.name, target.root)
                else:
                    self.jobs.start(target.root, info.name, "refresh")  # watched once it is done

        threading.Thread(target=work, name="codeqa-watch-start", daemon=True).start()

    def close(self) -> None:
        self.jobs.close()

    # --- helpers --------------------------------------------------------------------------------

    def _registered(self, name: str) -> RepoInfo | None:
        return next((info for info in self.services.repos() if info.name == name), None)

    def _holds_current_files(self, target: _Target) -> bool:
        with self._checks_lock:
            check = self._checks.get(target.root)
            if check is None:
                max_bytes = self.services.settings.max_file_bytes
                check = self._checks[target.root] = CurrentFilesCheck(repo_root(target.root), max_bytes)
        watched = self.jobs.tree(target.name)  # with `--watch`: the watcher's walk, not a second one
        refresh = watched.refresh if watched is not None else None
        return check.holds_current_files(self.services.db, target.name, refresh)

    def _up_to_date(self, target: _Target) -> bool:
        """Nothing for a run to do: the files are indexed as they are, and every row has its vector."""
        info = self._registered(target.name)
        return info is not None and not info.stats.vectors_pending and self._holds_current_files(target)

    def _target(self, repo: str | None) -> _Target:
        """The repo an argument names: a folder (indexed or not), a name (indexed, or being
        indexed by this server), or the default repo."""
        if repo is not None and is_folder(repo):
            root = agent_folder(repo, self.workdir)
            info = indexed_folder(self.services, root)
            if info is not None:
                return _Target(info.name, root, info)
            name = self.jobs.name_of(root) or resolve_repo_name(self.services.db, root, None)
            return _Target(name, root, None)
        job = self.jobs.status(repo) if repo else None
        if job is not None:
            return _Target(job.name, Path(job.root), self._registered(job.name))
        info = self.find_repo(repo)
        return _Target(info.name, Path(info.root), info)

    def _search_notices(self, target: _Target, status: JobStatus | None, ticket: Ticket) -> list[str]:
        """What search_code says about the run it waited for (or raises, if it can't search)."""
        name, root, before = target.name, target.root, target.info
        if status is None or status.phase == FAILED or not ticket.searchable(status):
            why = status.describe() if status is not None else "not started"
            if before is None:
                raise IndexToolError(
                    f"{root} is not searchable yet ({why}): call index_status with repo={name} and "
                    f"wait_seconds={MAX_WAIT_S}, then search again."
                )
            return [f"Bringing {name} up to date did not finish ({why}): these results are from its last index."]
        after = self._registered(name)
        embedded = after.stats.embedded_percent if after else 0
        vectors = (
            f" Its vectors are still being computed ({embedded}% embedded): until then the rest is found by "
            "its text and names; index_status shows how far it is."
            if embedded < 100
            else ""
        )
        if before is None:
            files = after.stats.files if after else 0
            return [f"{root} was not indexed: indexed it just now as {name} ({files:,} files).{vectors}"]
        return [f"{name} had changed: brought it up to date first.{vectors}"]

    def _status(self, target: _Target, head: list[str], ticket: Ticket | None) -> tuple[str, IndexStatusOutput]:
        """index_status's answer for a repo, after `head` (what the call did)."""
        info = self._registered(target.name) or target.info
        job = self.jobs.status(target.name)
        holder = self.services.index.lock_holder(target.name) if job is None or not job.active else None
        elsewhere = f"{holder.activity} by another process ({holder.describe(time.time())})" if holder else None
        error = job.error if job is not None and job.phase == FAILED else None
        own = _own_paths(str(target.root))
        output = IndexStatusOutput(
            repo=target.name,
            root=str(target.root),
            state=_state(info, job, elsewhere),
            searchable=bool(info and info.indexed_at),
            embedded_percent=info.summary()["embedded_percent"] if info else 0,
            files=info.stats.files if info else 0,
            rows=info.stats.rows if info else 0,
            references=info.stats.references if info else 0,
            languages=info.stats.files_by_language if info else {},
            skipped=info.stats.skipped if info else {},
            syntax_errors=info.stats.syntax_errors if info else 0,
            last_indexed=(info.indexed_at or None) if info else None,
            model=info.embedding_model if info else self.services.settings.embedding_model,
            job=_job_model(job, own) if job is not None else None,
            indexing_elsewhere=elsewhere,
            error=hide_server_paths(error, own) if error else None,
        )
        return printable_lines(head + _status_lines(output, ticket, job)), output


def _state(info: RepoInfo | None, job: JobStatus | None, elsewhere: str | None) -> str:
    if (job is not None and job.active) or elsewhere:
        return "indexing"
    if job is not None and job.phase == FAILED:
        return "failed"
    return "ready" if info is not None and info.indexed_at else "not_indexed"


def _job_model(job: JobStatus, own: list[str]) -> IndexJob:
    report = job.last_report
    return IndexJob(
        id=job.id,
        kind=job.kind,
        phase=job.phase,
        percent=job.percent,
        activity=hide_server_paths(job.describe(), own),
        run=job.run,
        done=job.done,
        total=job.total,
        started_at=job.started_at,
        finished_at=job.finished_at,
        added=report.added if report else 0,
        changed=report.changed if report else 0,
        deleted=report.deleted if report else 0,
        unchanged=report.unchanged if report else 0,
    )


def _when(timestamp: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(timestamp)) if timestamp else "never"


def _status_lines(out: IndexStatusOutput, ticket: Ticket | None, job: JobStatus | None) -> list[str]:
    """index_status's answer as text: the state first, then what an agent does next."""
    languages = ", ".join(f"{lang} {n}" for lang, n in sorted(out.languages.items(), key=lambda kv: -kv[1]))
    lines = [f"{out.repo}: {out.state.replace('_', ' ')} ({out.root})"]
    if out.job is not None:
        run = out.job
        again = f", run {run.run}" if run.run > 1 else ""
        lines.append(f"job {run.id} ({run.kind}{again}): {run.activity}, {run.percent}%")
        if run.phase == DONE:
            lines.append(
                f"  last run: {run.added} added, {run.changed} changed, {run.deleted} deleted, "
                f"{run.unchanged} unchanged files"
            )
    if out.indexing_elsewhere:
        lines.append(f"being indexed elsewhere: {out.indexing_elsewhere}")
    if out.error:
        lines.append(f"error: {out.error}")
    if out.searchable:
        lines.append(
            f"searchable: yes; {out.embedded_percent}% embedded"
            + (" (rows without a vector are found by their text meanwhile)" if out.embedded_percent < 100 else "")
        )
        lines.append(f"  {out.files:,} files ({languages}), {out.rows:,} rows, {out.references:,} references")
        lines.append(f"  last indexed {_when(out.last_indexed)} with {out.model}")
    else:
        lines.append("searchable: not yet")
    if out.skipped:
        lines.append("  skipped: " + ", ".join(f"{reason} {n}" for reason, n in sorted(out.skipped.items())))
    if out.syntax_errors:
        lines.append(f"  {out.syntax_errors} files have syntax errors (indexed as far as they parse)")
    lines.append(_next_step(out, ticket, job))
    return lines


def _next_step(out: IndexStatusOutput, ticket: Ticket | None, job: JobStatus | None) -> str:
    """What to call next, in one line."""
    if out.state == "indexing":
        ready = out.searchable and (ticket is None or job is None or ticket.searchable(job))
        wait = f"index_status(repo={out.repo!r}, wait_seconds={MAX_WAIT_S})"
        return f"next: search_code now (results so far), or {wait} for the rest" if ready else f"next: {wait}"
    if out.state == "not_indexed":
        return "next: index_repository with this folder, or search_code with repo set to it"
    if out.state == "failed":
        return "next: fix what the error says, then refresh_repository (or index_repository)"
    return f"next: search_code(query, repo={out.repo!r})"


# --- The MCP face ---------------------------------------------------------------------------


def progress_to(ctx: Context) -> Reporter:
    """A run's progress as MCP progress notifications of the current call, if the client asked
    for them (a progressToken; else the SDK sends nothing). Each carries the percentage (of
    100) and the phase in words; a percentage is sent only when it grew, as the spec requires."""
    sent = -1

    def report(status: JobStatus) -> None:
        nonlocal sent
        if status.percent > sent:
            sent = status.percent
            anyio.from_thread.run(ctx.report_progress, status.percent, 100, f"{status.name}: {status.describe()}")

    return report


RepoOrFolder = Annotated[
    str | None,
    Field(
        max_length=MAX_PATH_CHARS,
        description="an indexed repo's name (see list_repos) or a repository folder's absolute path; "
        "default: the project's repo, or the only one",
    ),
]
WaitSeconds = Annotated[
    int,
    Field(
        ge=0,
        le=MAX_WAIT_S,
        strict=True,
        description="how long to wait for the run to finish before answering (progress notifications meanwhile)",
    ),
]
CHANGES = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


def register_index_tools(
    server: MCPServer, tools: IndexTools, answer: Callable[[Callable[[], tuple[str, BaseModel]]], CallToolResult]
) -> None:
    """Add the four index tools to `server`; `answer` runs a tool's work as the server's other
    tools do (text and structured content, or a one-line tool error)."""

    @server.tool(annotations=CHANGES)
    def index_repository(
        path: Annotated[
            str,
            Field(
                max_length=MAX_PATH_CHARS,
                description="the repository's folder: an absolute path (or relative to the project folder)",
            ),
        ],
        ctx: Context,
        name: Annotated[
            str | None, Field(max_length=100, description="the name to index it under (default: the folder's name)")
        ] = None,
        wait_seconds: WaitSeconds = 0,
    ) -> Annotated[CallToolResult, IndexStatusOutput]:
        """Index a repository folder so that search_code, find_symbol, find_references and
        read_code can answer about it. Returns at once with a job id while the server does the
        work (seconds for a small repo, minutes for a large one: embedding is most of it); the
        repo is searchable by text before its vectors are done. Follow it with
        index_status(repo=NAME, wait_seconds=60). You rarely need this tool: search_code with
        repo set to a folder indexes it first. On a folder already indexed it re-reads only the
        changed files."""
        return answer(lambda: tools.index(path, name, wait_seconds, progress_to(ctx)))

    @server.tool(annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False))
    def index_status(
        ctx: Context, repo: RepoOrFolder = None, wait_seconds: WaitSeconds = 0
    ) -> Annotated[CallToolResult, IndexStatusOutput]:
        """How far a repository's index is: its state (not_indexed, indexing, ready, failed),
        the run under way (phase, files parsed, rows embedded, percent), whether it is
        searchable yet, how much is embedded, the last error, when it was last indexed, with
        which model, and what was skipped. With wait_seconds it waits for the run to finish
        (up to that long) instead of you polling; the answer ends with what to call next."""
        return answer(lambda: tools.status(repo, wait_seconds, progress_to(ctx)))

    @server.tool(annotations=CHANGES)
    def refresh_repository(
        ctx: Context,
        repo: RepoOrFolder = None,
        wait_seconds: Annotated[
            int,
            Field(
                ge=0,
                le=MAX_WAIT_S,
                strict=True,
                description="how long to wait for the run to finish before answering",
            ),
        ] = REFRESH_WAIT_S,
    ) -> Annotated[CallToolResult, IndexStatusOutput]:
        """Bring an indexed repository up to date after files changed (your edits, a git
        checkout or pull): only added, changed and deleted files are read again, so it takes a
        second or two, and it waits for the run before answering; then the other tools see the
        changes. Answers at once when nothing changed. Not needed when the server runs with
        --watch, nor before search_code with repo set to a folder (that refreshes first)."""
        return answer(lambda: tools.refresh(repo, wait_seconds, progress_to(ctx)))

    @server.tool(annotations=ToolAnnotations(destructive_hint=True, idempotent_hint=True, open_world_hint=False))
    def remove_repository(
        repo: Annotated[
            str,
            Field(
                max_length=MAX_PATH_CHARS,
                description="the indexed repo's name (see list_repos) or its folder's absolute path",
            ),
        ],
    ) -> Annotated[CallToolResult, RemovedOutput]:
        """Delete a repository's index (the folder and its files are not touched), stopping
        this server's run on it if one is under way. Only when the user no longer wants it
        searched: to pick up changes, call refresh_repository instead."""
        return answer(lambda: tools.remove(repo))
