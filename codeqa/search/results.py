"""What a search returns: rows as `Hit`s, files as `FileHit`s, the whole as a `SearchResult`.

A leaf module: the ranking stages (ranking, rerank, structure, twins) and the pipeline import
these types from here, downward.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from codeqa.parsing.references import is_resolved
from codeqa.search.overloads import Signed
from codeqa.search.question_kind import QuestionKind


@dataclass
class Hit:
    """One retrieved row: a definition, a docs section, a file or a chunk of module-level code."""

    id: str
    table: str
    kind: str
    name: str
    qualified_name: str
    file_path: str
    start_line: int
    end_line: int
    language: str
    signature: str
    doc: str
    code: str
    parent: str | None
    references: list[dict]
    reference_count: int
    score: float
    exact: bool = False
    role: str = "source"  # of its file (languages.ROLES), as stored with the row
    relevance: float = 0.0  # what a reader is shown as its score: see `_show_relevance`
    declaration: bool = False  # a signature only, with no implementation in the repository (overloads.py)
    signatures: list[str] = field(default_factory=list)  # of an overload set, in source order

    @classmethod
    def from_row(cls, row: dict, table: str) -> Hit:
        """A row of table `table`, as read (`SELECT` columns and `_score_value`)."""
        return cls(
            id=row["id"],
            table=table,
            kind=row["kind"],
            name=row["name"],
            qualified_name=row["qualified_name"],
            file_path=row["file_path"],
            start_line=row["start_line"],
            end_line=row["end_line"],
            language=row["language"],
            role=row["role"],
            signature=row["signature"] or "",
            doc=row["doc"] or "",
            code=row["code"] or "",
            # Name matches (`x.m()` with `x` of unknown type) are kept for @references, not
            # shown as uses nor fed to ranking: `reference_count` counts resolved uses only.
            parent=row["parent"],
            references=[r for r in row["references"] or [] if is_resolved(r.get("resolution") or "")],
            reference_count=row["reference_count"] or 0,
            score=row["_score_value"],
            declaration=bool(row.get("declaration")),
            signatures=list(row.get("signatures") or []),
        )

    def embedded_fields(self) -> dict[str, str]:
        """The fields `store.rows.embedding_text` reads: the reranker reads what the index embeds."""
        return {
            "file_path": self.file_path,
            "kind": self.kind,
            "qualified_name": self.qualified_name,
            "signature": self.signature,
            "doc": self.doc,
            "code": self.code,
        }

    def signed(self) -> Signed:
        return Signed(self.language, self.qualified_name, self.declaration, self.signature, self.signatures)

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "kind": self.kind,
            "name": self.name,
            "qualified_name": self.qualified_name,
            "signature": self.signature,
            "file_path": self.file_path,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "language": self.language,
            "role": self.role,
            "score": round(self.relevance, 4),
            "exact_match": self.exact,
            "declaration": self.declaration,
            "signatures": self.signatures,
            "reference_count": self.reference_count,
            "references": [{k: r[k] for k in ("file_path", "line", "column", "text")} for r in self.references],
        }


@dataclass
class FileHit:
    """One file of the answer: its score, its evidence and the rows of it that ranked best."""

    path: str
    score: float
    role: str
    language: str
    symbols: list[Hit]
    features: dict[str, float] = field(default_factory=dict)
    definitions: list[Definition] = field(default_factory=list)  # weighed, best first (the best files only)
    relevance: float = 0.0  # what a reader is shown as its score (retrieval._show_relevance)
    twins: list[str] = field(default_factory=list)  # the same file for other platforms, listed beside it (twins.py)

    def to_json(self) -> dict:
        return {
            "path": self.path,
            "score": round(self.relevance, 4),
            "role": self.role,
            "language": self.language,
            "twins": self.twins,
            "symbols": [
                {
                    "id": h.id,
                    "kind": h.kind,
                    "qualified_name": h.qualified_name,
                    "start_line": h.start_line,
                    "end_line": h.end_line,
                }
                for h in self.symbols
            ],
        }


@dataclass
class Definition:
    """A definition of one of the best files, as the symbol ranker saw it."""

    hit: Hit
    features: dict[str, float]
    score: float = 0.0


@dataclass
class SearchResult:
    id: str
    query: str
    expanded_query: str
    results: list[Hit]
    timings_ms: dict[str, float]
    rerank: dict
    hyde: dict
    notices: list[str] = field(default_factory=list)
    files: list[FileHit] = field(default_factory=list)  # the best k files
    file_candidates: list[FileHit] = field(default_factory=list)  # every file with evidence, best first
    question_kind: QuestionKind = "report"  # (question_kind.py)
    file_model: str = "reports"  # the file model that ranked `files` for that kind (ranking.file_model_name)

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "query": self.query,
            "expanded_query": self.expanded_query,
            "timings_ms": {k: round(v, 1) for k, v in self.timings_ms.items()},
            "rerank": self.rerank,
            "hyde": self.hyde,
            "notices": self.notices,
            "question_kind": self.question_kind,
            "file_model": self.file_model,
            "results": [hit.to_json() for hit in self.results],
            "files": [file.to_json() for file in self.files],
        }
