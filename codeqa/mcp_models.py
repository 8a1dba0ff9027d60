"""What CodeQA's MCP tools answer, as structured content: each model is published as its tool's
output schema, and its field descriptions are what an agent reads about each value.

The tools themselves are in `mcp_server` (search, definitions, references, files) and
`mcp_indexing` (index, status, refresh, remove).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from codeqa.chat.resolver import MAX_DEFINITIONS

SHOWN_REFERENCES = 5  # uses listed with each search hit (the count is exact)
MAX_CODE_LINES = 80  # of a definition's code in find_symbol; read_code has the rest


class Use(BaseModel):
    file_path: str
    line: int
    column: int
    text: str


class Symbol(BaseModel):
    id: str = Field(description="symbol id: pass it to find_references to pick this definition")
    location: str = Field(description="path:start-end")
    kind: str
    name: str
    qualified_name: str
    signature: str
    file_path: str
    start_line: int
    end_line: int
    language: str
    reference_count: int = Field(
        description="how many resolved uses the index recorded (exact; name matches, "
        "calls on receivers of unknown type, not counted)"
    )
    declaration: bool = Field(
        False,
        description="a signature only (a prototype, an abstract or interface "
        "method) whose implementation is not in the repository",
    )
    signatures: list[str] = Field(
        default_factory=list,
        description="every signature of an overload set (declarations and implementation), when it has several",
    )

    @classmethod
    def fields_of(cls, row: dict) -> dict:
        """The fields of a row of the index (or a search hit's JSON), location included."""
        return {
            "location": f"{row['file_path']}:{row['start_line']}-{row['end_line']}",
            **{name: row[name] for name in Symbol.model_fields if name in row},
            "signature": row["signature"] or "",
            "reference_count": row["reference_count"] or 0,
        }


class SearchHit(Symbol):
    score: float = Field(
        description="relevance 0-1: the file model's estimate that this result's file is one "
        "the answer needs (1.0: the query is exactly its name); never higher "
        "than the result above it"
    )
    exact_match: bool = Field(description="the query names this symbol or file exactly")
    references: list[Use] = Field(description=f"the first {SHOWN_REFERENCES} uses")


class FileSymbol(BaseModel):
    kind: str
    qualified_name: str
    start_line: int
    end_line: int


class FileResult(BaseModel):
    path: str
    score: float = Field(description="relevance 0-1, as the results' (non-increasing down the list)")
    role: str = Field(description="source, test, example, benchmark, docs, generated or vendored")
    language: str
    twins: list[str] = Field(
        default_factory=list,
        description="the same file for other platforms (unix/ and win/), listed right beside this one",
    )
    symbols: list[FileSymbol] = Field(description="the file's rows that made it rank")


class SearchOutput(BaseModel):
    repo: str
    results: list[SearchHit]
    files: list[FileResult] = Field(
        description="the files most likely involved, best first, from whole-file evidence and their best symbols"
    )
    notices: list[str]


class Definition(Symbol):
    code: str = Field(description=f"the definition's lines (the first {MAX_CODE_LINES})")
    code_truncated: bool


class SymbolOutput(BaseModel):
    repo: str
    name: str
    total: int = Field(description=f"definitions found (at most {MAX_DEFINITIONS} are returned)")
    definitions: list[Definition]
    suggestions: list[str] = Field(description="similar names, when none matched")


class UseSite(BaseModel):
    location: str = Field(description="path:line:column")
    file_path: str
    line: int
    column: int
    text: str = Field(description="the line of the use")
    caller: str | None = Field(description="qualified name of the function the use is in")
    resolution: str = Field(
        description="how the use was attributed: qualified, self, typed, module, unique, "
        "import, same_file or same_package (resolved); name: a name match, a "
        "call of this name on a receiver of unknown type"
    )
    definition_id: str = Field(description="id of the definition used")


class ReferencesOutput(BaseModel):
    repo: str
    symbol: str
    definitions: list[Symbol] = Field(description=f"the definitions whose uses are listed (at most {MAX_DEFINITIONS})")
    total: int = Field(description="uses and name matches of these definitions")
    resolved: int = Field(description="resolved uses among them")
    name_matches: int = Field(description="name matches among them: same name, receiver of unknown type")
    uses: list[UseSite]
    suggestions: list[str]


class CodeOutput(BaseModel):
    repo: str
    path: str
    language: str
    start: int
    end: int
    total_lines: int
    lines: list[str]


class RepoSummary(BaseModel):
    name: str
    root: str
    files: int
    methods: int
    classes: int
    docs: int
    references: int
    languages: dict[str, int]
    indexed_at: float = Field(description="Unix time of the last index run")
    embedded_percent: int = Field(
        description="rows with their vector so far (below 100 while an index run "
        "embeds: those rows are found by their text meanwhile)"
    )


class ReposOutput(BaseModel):
    repos: list[RepoSummary]
    default: str | None = Field(description="the repo a tool uses when called without `repo`")


class IndexJob(BaseModel):
    id: int = Field(description="the job's id in this server")
    kind: str = Field(description="index or refresh: what the job was asked to do")
    phase: str = Field(
        description="queued (behind another repo's run here), waiting (for another process's run of this "
        "repo), walking, parsing, references, searchable, embedding, done, failed or cancelled"
    )
    percent: int = Field(description="how far the current run is, 0-100")
    activity: str = Field(description="the phase in words, with its counts")
    run: int = Field(description="the job's current (or last) run: a job runs again when files change during a run")
    done: int = Field(description="of the phase's total: files parsed, or rows embedded")
    total: int
    started_at: float = Field(description="Unix time the job started")
    finished_at: float | None = Field(description="Unix time it ended, if it has")
    added: int = Field(description="files added by its last finished run")
    changed: int
    deleted: int
    unchanged: int


class IndexStatusOutput(BaseModel):
    repo: str = Field(description="the repo's name: pass it as `repo` to the other tools")
    root: str = Field(description="the repository's folder")
    state: str = Field(
        description="not_indexed, indexing (a run is under way, here or in another process), ready, or "
        "failed (the last run here failed: see error; an earlier index may still be searchable)"
    )
    searchable: bool = Field(description="whether search_code and the other tools can answer about it now")
    embedded_percent: int = Field(
        description="rows with their vector (below 100 while a run embeds: the rest are found by their text)"
    )
    files: int
    rows: int = Field(description="searchable rows: definitions, docs sections, files and module-code chunks")
    references: int
    languages: dict[str, int] = Field(description="files per language")
    skipped: dict[str, int] = Field(description="paths left out, by reason (ignored, vendored, binary, ...)")
    syntax_errors: int = Field(description="files with syntax errors (indexed as far as they parse)")
    last_indexed: float | None = Field(description="Unix time the last run made it searchable")
    model: str = Field(description="the embedding model of its vectors")
    job: IndexJob | None = Field(description="this server's latest job on the repo, if any")
    indexing_elsewhere: str | None = Field(description="another process's run on it, in words, if one is under way")
    error: str | None = Field(description="why this server's last run failed, if it did")


class RemovedOutput(BaseModel):
    repo: str
    root: str = Field(description="the folder, left untouched")
    stopped_run: bool = Field(description="whether a run of this server on the repo was stopped first")
