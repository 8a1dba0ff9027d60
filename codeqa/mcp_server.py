"""CodeQA as an MCP server: the index's search, definitions, references and files as tools for
coding agents (Claude Code, Cursor, VS Code, Zed, ...), over stdio.

    codeqa mcp [--repo NAME] [--watch]        # or: python -m codeqa mcp

A face over the one core (`services.Services`), like the CLIs and the web app. It reads the
index that `codeqa index` / `watch` writes, and sees each new version of it without a restart;
its index tools (`mcp_indexing`: index, status, refresh, remove) write it too, with the same
indexer, in the background. It never needs the LLM: search runs without HyDE (the agent's own model
does the thinking), so an answer takes milliseconds once the embedding model is loaded (it
loads in the background while the client connects).

Each tool answers with text written for a model to read (`path:start-end` locations, numbered
lines) and the same data as structured content (its output schema is published). Errors a
user can act on (`errors.CodeQAError`) come back as tool errors carrying the CLI's one-line
message; so do arguments the tool's input schema refuses ("k must be a whole number from 1 to
50."), never a validation dump. Names the repository chose are shown escaped
(`errors.printable`): an agent's terminal shows tool output too.

Which repo a call is about: its `repo` argument (a name, or a folder's path), else `--repo`,
else the indexed repo whose root holds the server's working directory (editors start servers
in the project folder), else the only indexed repo.
"""

from __future__ import annotations

import argparse
import logging
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path, PurePosixPath
from typing import Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field, ValidationError

from codeqa.chat.resolver import MAX_DEFINITIONS, ROW_COLUMNS
from codeqa.core.config import Settings
from codeqa.core.errors import CodeQAError, InvalidArgument, one_line, printable, printable_lines, run_cli, user_error
from codeqa.core.records import RepoInfo
from codeqa.mcp_indexing import (
    MAX_PATH_CHARS,
    IndexTools,
    RepoOrFolder,
    folder_repo,
    is_folder,
    progress_to,
    register_index_tools,
)
from codeqa.mcp_models import (
    MAX_CODE_LINES,
    SHOWN_REFERENCES,
    CodeOutput,
    Definition,
    FileResult,
    ReferencesOutput,
    ReposOutput,
    RepoSummary,
    SearchHit,
    SearchOutput,
    Symbol,
    SymbolOutput,
    UseSite,
)
from codeqa.mcp_stdio import answering_stdio
from codeqa.parsing.languages import language_for
from codeqa.parsing.references import is_resolved
from codeqa.search.options import MAX_PATH_PREFIX, SearchOptions
from codeqa.search.query import MAX_QUERY_CHARS
from codeqa.services import Services
from codeqa.store.errors import UnknownRepoError

log = logging.getLogger("codeqa.mcp")

MAX_K = 50  # search results per call, as the web API allows
MAX_READ_LINES = 500  # lines read_code returns per call
DEFAULT_USES = 200  # uses find_references lists unless asked for more
MAX_USES = 2000
MAX_NAME_CHARS = 1_000  # of a symbol name or id argument (no qualified name comes close)
MAX_ARGUMENT_CHARS = 1_000  # of a string argument whose schema sets no maxLength of its own
NO_REPOS = (
    "No repo is indexed yet: call index_repository with the project's folder, or search_code with repo set to it."
)

INSTRUCTIONS = """\
CodeQA has indexed these repositories with tree-sitter: every function, method, class (and docs
section) with exact line ranges, and every place each one is used. Start with search_code for a
question, a task or a bug report (paste error messages and stack traces as they are); use
find_symbol when you know a name, find_references to see who uses something before changing it,
and read_code to read lines of a file. Locations are `path:start-end` relative to the repo root.
list_repos tells which repos there are; `repo` may be left out when there is one default.
A project that is not indexed yet: call search_code with repo set to its folder's absolute path
(it is indexed first), or index_repository then index_status. After editing files, call
refresh_repository before searching again (unless the server was started with --watch)."""

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)


class CodeRangeError(CodeQAError, ValueError):
    """Lines asked for that the file does not have."""

    http_status = 400


# --- The tools' work, on the core ------------------------------------------------------------


def _numbered(lines: list[str], first: int) -> list[str]:
    width = len(str(first + len(lines) - 1))
    return [f"{first + i:>{width}}  {line}" for i, line in enumerate(lines)]


def _name_argument(value: str, argument: str) -> str:
    """A name to look up, refused when blank: every definition's name would 'match' it."""
    if not value.strip():
        raise InvalidArgument(f"{argument} must be a symbol name such as parse or Cart.add, not empty.")
    return value


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _repo_relative(info: RepoInfo, path: str) -> str:
    """An absolute path inside the repo's folder as the index names it (agents often pass
    those); any other path as given, for the index's own checks to judge."""
    pure = PurePosixPath(path)
    return pure.relative_to(info.root).as_posix() if pure.is_absolute() and pure.is_relative_to(info.root) else path


def _headline(d: Symbol) -> str:
    marked = ", a declaration: no implementation in the repository" if d.declaration else ""
    return f"{d.location}  {d.kind} {d.qualified_name}  (id {d.id}, used {_plural(d.reference_count, 'time')}{marked})"


def _overloads(d: Symbol) -> list[str]:
    """The signatures of a definition's overload set, one a line (none for a single signature)."""
    return [f"  signature: {one_line(signature)}" for signature in d.signatures]


class CodeTools:
    """What each tool does, as (text for the model, structured data); errors are CodeQAErrors."""

    def __init__(self, services: Services, default_repo: str | None = None, workdir: Path | None = None) -> None:
        self.services = services
        self.default_repo = default_repo
        self.workdir = (workdir or Path.cwd()).resolve()

    def default(self, repos: list[RepoInfo]) -> RepoInfo | None:
        """The repo a call without `repo` is about, if one can be told."""
        if self.default_repo:
            return next((r for r in repos if r.name == self.default_repo), None)
        here = [r for r in repos if self.workdir.is_relative_to(r.root)]
        if here:
            return max(here, key=lambda r: len(r.root))
        return repos[0] if len(repos) == 1 else None

    def repo(self, name: str | None) -> RepoInfo:
        named = name or self.default_repo
        if named and is_folder(named):
            return folder_repo(self.services, named, self.workdir)
        if named:
            return self.services.repo(named)
        repos = self.services.repos()
        if not repos:
            raise UnknownRepoError(NO_REPOS)
        chosen = self.default(repos)
        if chosen is None:
            raise UnknownRepoError(
                f"Several repos are indexed ({', '.join(r.name for r in repos)}): say which one with `repo`."
            )
        return chosen

    def search_code(
        self, query: str, repo: str | None, k: int, lang: str | None, path: str | None, notices: list[str]
    ) -> tuple[str, SearchOutput]:
        """The search; `notices` (what was done first: the folder indexed) come before its own."""
        info = self.repo(repo)
        options = SearchOptions(
            k=k,
            hyde=False,
            language=lang,
            rerank=self.services.settings.rerank_chat,
            path_prefix=path and _repo_relative(info, path),
        )
        result = self.services.retriever.search(info.name, query, options)
        hits = []
        for found in result.results:
            data = found.to_json()
            data["references"] = data["references"][:SHOWN_REFERENCES]
            hits.append(SearchHit(**{**data, **SearchHit.fields_of(data)}))
        lines = [f"{_plural(len(hits), 'result')} in {info.name} (hybrid search):"]
        notices = notices + result.notices
        lines += [f"note: {notice}" for notice in notices]
        for rank, hit in enumerate(hits, 1):
            exact = "  (named in the query)" if hit.exact_match else ""
            lines.append(f"{rank}. {hit.location}  {hit.kind} {hit.qualified_name}  score {hit.score:.2f}{exact}")
            if hit.signature:
                lines.append(f"   {one_line(hit.signature)}")
            uses = f"used {_plural(hit.reference_count, 'time')}" + (", e.g.:" if hit.references else "")
            lines.append(f"   id {hit.id} · {uses}")
            lines += [f"     {u.file_path}:{u.line}:{u.column}  {one_line(u.text, 120)}" for u in hit.references[:3]]
        files = [FileResult(**file.to_json()) for file in result.files]
        if files:
            lines.append("Files, best first:")
            lines += [
                f"{rank}. {file.path} ({file.role})"
                + (
                    ": " + ", ".join(f"{s.qualified_name} {s.start_line}-{s.end_line}" for s in file.symbols)
                    if file.symbols
                    else ""
                )
                for rank, file in enumerate(files, 1)
            ]
        if not hits and lang and lang.lower() not in info.stats.files_by_language:
            lines.append(f"No {lang} files are indexed; languages: {', '.join(sorted(info.stats.files_by_language))}.")
        return printable_lines(lines), SearchOutput(repo=info.name, results=hits, files=files, notices=notices)

    def _definitions(self, info: RepoInfo, name: str, columns: list[str]) -> tuple[list[dict], list[str]]:
        """Rows defining `name` (best first), or suggestions of similar names."""
        rows = self.services.commands.definitions(info, name, columns)
        if rows:
            return rows, []
        similar = self.services.commands.symbol_index(info).similar_symbols(name)
        return [], [f"{s.qualified_name} ({s.file_path}:{s.start_line})" for s in similar]

    def find_symbol(self, name: str, repo: str | None) -> tuple[str, SymbolOutput]:
        name = _name_argument(name, "name")
        info = self.repo(repo)
        rows, suggestions = self._definitions(info, name, ROW_COLUMNS + ["code"])
        lookup = self.services.commands.lookup(info)
        found = []
        for row in rows[:MAX_DEFINITIONS]:
            text = lookup.text(row["file_path"])  # the file as it is now; as indexed if it is gone
            code = text.lines[row["start_line"] - 1 : row["end_line"]] if text else (row["code"] or "").splitlines()
            found.append(
                Definition(
                    **Definition.fields_of(row),
                    code="\n".join(code[:MAX_CODE_LINES]),
                    code_truncated=len(code) > MAX_CODE_LINES,
                )
            )
        output = SymbolOutput(repo=info.name, name=name, total=len(rows), definitions=found, suggestions=suggestions)
        if not found:
            return _not_found(name, info, suggestions), output
        lines = [
            f"{_plural(len(rows), 'definition')} of {name} in {info.name}"
            + (f" (the first {len(found)}):" if len(rows) > len(found) else ":")
        ]
        for d in found:
            lines += ["", _headline(d), *_overloads(d), *_numbered(d.code.splitlines(), d.start_line)]
            if d.code_truncated:
                lines.append(
                    f"... (to line {d.end_line}: read_code path={d.file_path} start={d.start_line + MAX_CODE_LINES})"
                )
        return printable_lines(lines), output

    def find_references(self, symbol: str, repo: str | None, limit: int) -> tuple[str, ReferencesOutput]:
        symbol = _name_argument(symbol, "symbol")
        info = self.repo(repo)
        rows = self.services.index.reader(info).definitions_by_ids([symbol], ROW_COLUMNS)
        suggestions: list[str] = []
        if not rows:
            rows, suggestions = self._definitions(info, symbol, ROW_COLUMNS)
        rows = rows[:MAX_DEFINITIONS]
        ranked = self.services.commands.lookup(info).uses(rows)
        uses = [
            UseSite(
                location=f"{u['file_path']}:{u['line']}:{u['column']}",
                file_path=u["file_path"],
                line=u["line"],
                column=u["column"],
                text=u["text"],
                caller=u["caller"] or None,
                resolution=u["resolution"],
                definition_id=row["id"],
            )
            for row, u in ranked[:limit]
        ]
        definitions = [Symbol(**Symbol.fields_of(row)) for row in rows]
        resolved = sum(is_resolved(u["resolution"]) for _, u in ranked)
        output = ReferencesOutput(
            repo=info.name,
            symbol=symbol,
            definitions=definitions,
            total=len(ranked),
            resolved=resolved,
            name_matches=len(ranked) - resolved,
            uses=uses,
            suggestions=suggestions,
        )
        if not rows:
            return _not_found(symbol, info, suggestions), output
        lines = [f"{d.qualified_name}: {_headline(d)}" for d in definitions]
        shown = f" (the first {len(uses)} shown)" if len(ranked) > len(uses) else ""
        matches = len(ranked) - resolved
        lines.append(
            f"{resolved} resolved, {matches} name match{'' if matches == 1 else 'es'}{shown}"
            if ranked
            else "No uses recorded."
        )
        for title, group in (
            ("Uses, most relevant first:", [u for u in uses if is_resolved(u.resolution)]),
            (
                "Name matches (a call of this name on a receiver of unknown type):",
                [u for u in uses if not is_resolved(u.resolution)],
            ),
        ):
            if group:
                lines += [title] + [
                    f"{u.location}  {one_line(u.text, 160)}" + (f"  [in {u.caller}]" if u.caller else "") for u in group
                ]
        return printable_lines(lines), output

    def read_code(self, path: str, repo: str | None, start: int, end: int | None) -> tuple[str, CodeOutput]:
        info = self.repo(repo)
        path = _repo_relative(info, path)
        lines = self.services.read_file(info, path).splitlines()  # the one gate to the disk
        if start > max(len(lines), 1):
            raise CodeRangeError(f"{path} has {_plural(len(lines), 'line')}.")
        if end is not None and end < start:
            raise CodeRangeError("end must not be before start.")
        wanted = min(len(lines), end or len(lines))
        last = min(wanted, start + MAX_READ_LINES - 1)
        shown = lines[start - 1 : last]
        language = language_for(path) or "text"
        more = f"; call again with start={last + 1} for more" if last < wanted else ""
        header = f"{path} lines {start}-{last} of {len(lines)} ({language}){more}:"
        return printable_lines([header, *_numbered(shown, start)]), CodeOutput(
            repo=info.name, path=path, language=language, start=start, end=last, total_lines=len(lines), lines=shown
        )

    def list_repos(self) -> tuple[str, ReposOutput]:
        repos = self.services.repos()
        default = self.default(repos)
        summaries = [RepoSummary(**info.summary()) for info in repos]
        if not repos:
            return NO_REPOS, ReposOutput(repos=[], default=None)
        lines = []
        for s in summaries:
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(s.indexed_at)) if s.indexed_at else "never"
            languages = ", ".join(f"{lang} {n}" for lang, n in sorted(s.languages.items()))
            mark = "  (default)" if default and default.name == s.name else ""
            lines.append(f"{s.name}{mark}: {s.root}")
            lines.append(
                f"  {s.files} files ({languages}); {s.methods} functions, {s.classes} classes, "
                f"{s.docs} docs sections, {s.references} references; indexed {when}"
            )
        return printable_lines(lines), ReposOutput(repos=summaries, default=default.name if default else None)


def _not_found(name: str, info: RepoInfo, suggestions: list[str]) -> str:
    hint = f" Did you mean: {'; '.join(suggestions)}?" if suggestions else " Try search_code."
    return printable(f"No definition named {name} in {info.name}.{hint}")


# --- The MCP face ----------------------------------------------------------------------------


def _tool_error(message: object) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=printable(one_line(message, 1000)))], is_error=True)


def _answer(work: Callable[[], tuple[str, BaseModel]]) -> CallToolResult:
    """Run a tool's work: its text and data, or a tool error with the one-line message."""
    try:
        text, data = work()
    except Exception as exc:
        problem = user_error(exc)
        if problem is None:
            raise  # a bug: the SDK logs it and tells the client no more than the tool's name
        return _tool_error(problem)
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=data.model_dump(mode="json")
    )


def _allowed(prop: dict[str, Any]) -> str:
    """What an argument of this JSON schema may be, in words: `a whole number from 1 to 50`."""
    options = prop.get("anyOf", [prop])
    value = next((option for option in options if option.get("type") != "null"), prop)
    if value.get("type") == "integer":
        low, high = value.get("minimum"), value.get("maximum")
        what = (
            f"a whole number from {low:,} to {high:,}"
            if low is not None and high is not None
            else f"a whole number of at least {low:,}"
            if low is not None
            else "a whole number"
        )
    else:
        what = {"string": "a string", "boolean": "true or false"}.get(str(value.get("type")), "valid")
        if value.get("maxLength") is not None:
            what += f" of at most {value['maxLength']:,} characters"
    return what + (", or left out" if len(options) > 1 else "")


def _max_length(prop: dict[str, Any]) -> int:
    """The most characters a string argument may have: its schema's maxLength, or the default."""
    lengths = [option["maxLength"] for option in prop.get("anyOf", [prop]) if "maxLength" in option]
    return lengths[0] if lengths else MAX_ARGUMENT_CHARS


def argument_problem(
    tool: str, schema: dict[str, Any], arguments: dict[str, Any], error: ValidationError | None
) -> str | None:
    """One line on what is wrong with a call's arguments, from the tool's input schema (unknown
    names, strings longer than allowed, then the first value the schema refused), or None when
    they are fine. Never the value itself: a 100,000-character name is not sent back."""
    properties: dict[str, Any] = schema.get("properties", {})
    unknown = sorted(set(arguments) - set(properties))
    if unknown:
        takes = ", ".join(properties) or "no arguments"
        return f"{tool} has no argument {unknown[0]!r}; it takes {takes}."
    for name, value in arguments.items():
        limit = _max_length(properties[name])
        if isinstance(value, str) and len(value) > limit:
            return f"{name} has {len(value):,} characters; the limit is {limit:,}."
    if error is None:
        return None
    first = error.errors()[0]
    name = str(first["loc"][0]) if first["loc"] else ""
    if name not in properties:
        return f"{tool}'s arguments are not valid: it takes {', '.join(properties)}."
    if first["type"] == "missing":
        return f"{name} is required: {properties[name].get('description', 'see the tool description')}."
    return f"{name} must be {_allowed(properties[name])}."


class CodeQAServer(MCPServer):
    """The SDK's server, with argument errors said as CodeQA says its own: one line on what is
    allowed (`k must be a whole number from 1 to 50.`), not the validation dump the SDK sends;
    and every line on stdin answered, one the SDK can't read too (`mcp_stdio`)."""

    async def run_stdio_async(self) -> None:
        async with answering_stdio() as (read_stream, write_stream):
            await self._lowlevel_server.run(
                read_stream, write_stream, self._lowlevel_server.create_initialization_options()
            )

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        schemas = {tool.name: tool.input_schema for tool in await self.list_tools()}
        if name in schemas and (problem := argument_problem(name, schemas[name], arguments, None)):
            return _tool_error(problem)
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if name not in schemas or not isinstance(exc.__cause__, ValidationError):
                raise
            return _tool_error(argument_problem(name, schemas[name], arguments, exc.__cause__))


RepoArg = RepoOrFolder


def create_server(tools: CodeTools, indexing: IndexTools) -> MCPServer:
    """The MCP server with CodeQA's five read tools over `tools` and the four index tools over
    `indexing`."""

    @asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncIterator[None]:
        # Load the embedding model while the client connects, so the first search is fast;
        # a failure here is only logged: the first search reports it.
        threading.Thread(target=_warm_up, args=(tools.services,), daemon=True, name="codeqa-warm-up").start()
        if indexing.jobs.watching:
            indexing.start_watching()
        try:
            yield
        finally:
            indexing.close()  # runs stop at their next step; the next run finishes their work
            tools.services.close()

    server = CodeQAServer("codeqa", instructions=INSTRUCTIONS, lifespan=lifespan)

    @server.tool(annotations=READ_ONLY)
    def search_code(
        query: Annotated[
            str,
            Field(
                max_length=MAX_QUERY_CHARS,
                description="a question, a task, or a bug report / error message / "
                f"stack trace as is (up to {MAX_QUERY_CHARS:,} characters)",
            ),
        ],
        ctx: Context,
        repo: Annotated[
            str | None,
            Field(
                max_length=MAX_PATH_CHARS,
                description="an indexed repo's name (see list_repos), or a repository folder's absolute "
                "path: one not indexed yet is indexed first, one that changed is brought up to date "
                "(the answer says so); default: the project's repo, or the only one",
            ),
        ] = None,
        k: Annotated[int, Field(ge=1, le=MAX_K, strict=True, description="how many results")] = 10,
        lang: Annotated[
            str | None,
            Field(
                description="only this language: python, java, javascript, typescript, rust, go, c, cpp, markdown, ..."
            ),
        ] = None,
        path: Annotated[
            str | None,
            Field(max_length=MAX_PATH_PREFIX, description="only files under this path prefix, e.g. src/api/"),
        ] = None,
    ) -> Annotated[CallToolResult, SearchOutput]:
        """Search the indexed code by meaning and keywords (hybrid vector + BM25 over functions,
        methods, classes and docs sections). Use it first for 'where is X handled?', 'how does Y
        work?', or a pasted bug report: it returns ranked symbols with `path:start-end`, kind,
        qualified name, signature, score, and the first places each is used, and the files most
        likely involved (whole-file evidence), each with its best symbols. Symbols and files
        the query names exactly are put on top. Then read_code to see the code, find_symbol when
        you know a name, find_references to see who uses it."""
        return _answer(
            lambda: tools.search_code(query, repo, k, lang, path, indexing.prepare_search(repo, progress_to(ctx)))
        )

    @server.tool(annotations=READ_ONLY)
    def find_symbol(
        name: Annotated[
            str,
            Field(
                max_length=MAX_NAME_CHARS,
                description="a name (`parse`), a qualified name (`Cart.add`, "
                "`Outer.Inner.method`, `Type::method`) or its tail",
            ),
        ],
        repo: RepoArg = None,
    ) -> Annotated[CallToolResult, SymbolOutput]:
        """Find the definition(s) of a function, method, class, struct, interface, trait, enum or
        type by name: exact qualified-name matches first, then names ending in `.name`, test code
        last. Returns each definition's `path:start-end`, signature, symbol id and numbered code
        (long bodies are cut; read_code has the rest). Prefer it to search_code when you know the
        name; an unknown name gets 'did you mean' suggestions."""
        return _answer(lambda: tools.find_symbol(name, repo))

    @server.tool(annotations=READ_ONLY)
    def find_references(
        symbol: Annotated[
            str,
            Field(
                max_length=MAX_NAME_CHARS,
                description="a name or qualified name (as for find_symbol), or a "
                "symbol id from search_code / find_symbol to pick one "
                "definition among several with the same name",
            ),
        ],
        repo: RepoArg = None,
        limit: Annotated[
            int, Field(ge=1, le=MAX_USES, strict=True, description="most uses to list (the total is always given)")
        ] = DEFAULT_USES,
    ) -> Annotated[CallToolResult, ReferencesOutput]:
        """List every recorded use of a symbol (calls, instantiations, type uses, `extends` /
        `implements`, reads of a constant) as `path:line:column` with the line's text and the function it sits in,
        most relevant first (non-test code and surely resolved uses first). Use it before
        changing a function's behaviour or signature, to find its callers."""
        return _answer(lambda: tools.find_references(symbol, repo, limit))

    @server.tool(annotations=READ_ONLY)
    def read_code(
        path: Annotated[
            str,
            Field(
                max_length=MAX_PATH_PREFIX,
                description="file path relative to the repo root, as the other tools "
                "print it (an absolute path inside the repo works too)",
            ),
        ],
        repo: RepoArg = None,
        start: Annotated[int, Field(ge=1, strict=True, description="first line, 1-based")] = 1,
        end: Annotated[
            int | None, Field(ge=1, strict=True, description="last line, inclusive (default: to the end)")
        ] = None,
    ) -> Annotated[CallToolResult, CodeOutput]:
        """Read numbered lines of an indexed file (at most 500 per call; the answer says where to
        continue). Only files in the repo's index can be read."""
        return _answer(lambda: tools.read_code(path, repo, start, end))

    @server.tool(annotations=READ_ONLY)
    def list_repos() -> Annotated[CallToolResult, ReposOutput]:
        """List the indexed repositories: name, root folder, counts of files, symbols and
        references, languages, when last indexed, and which one tools use when `repo` is left
        out."""
        return _answer(tools.list_repos)

    register_index_tools(server, indexing, _answer)
    return server


def _warm_up(services: Services) -> None:
    try:
        services.retriever  # noqa: B018 - builds the retriever: loads the embedding model
    except CodeQAError as exc:
        log.warning("search is not ready: %s", exc)


def build_parser(prog: str = "codeqa mcp") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog, description="Serve CodeQA's tools to MCP clients (coding agents, editors) over stdio."
    )
    parser.add_argument(
        "--repo",
        help="the repo tools use when a call does not name one "
        "(default: the repo holding the working directory, or the only one)",
    )
    parser.add_argument(
        "--watch",
        action="store_true",
        help="keep the indexed repos live: bring each one whose folder is on this machine up to date, "
        "then re-index it after every burst of file changes (as `codeqa watch`), and every repo "
        "indexed through the tools too",
    )
    return parser


def main(argv: list[str] | None = None, prog: str = "codeqa mcp") -> int:
    args = build_parser(prog).parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    return run_cli(lambda: _serve(args.repo, args.watch))


def _serve(repo: str | None, watch: bool) -> int:
    """Serve the tools over stdio until the client hangs up; `main` reports the errors a user can act on."""
    tools = CodeTools(Services(Settings.from_env()), repo)
    create_server(tools, IndexTools(tools.services, tools.repo, tools.workdir, watch)).run("stdio")
    return 0


if __name__ == "__main__":
    sys.exit(main())
