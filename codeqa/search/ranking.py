"""Files as results: the evidence for each file, as features, and the learned models that rank
them and their definitions.

A search gathers two kinds of evidence about files: whole-file BM25 over their file rows
(`file_text`: a file whose ten functions each match a little, or whose bug lives in
module-level code, ranks there) and the symbol pool (rows of the three row tables, best
first). `file_features` turns them, with the file's role, whether the question names the file
or one of its symbols or uses the words of its name, whether it is a compatibility shim
(signals/), and the reference graph between the pool's strongest rows, into a handful of
numbers per file; a `LinearRanker` scores them with a logistic regression trained on
the realistic eval's train split (`training/train_ranker.py` writes
`models/file_ranker.json`: its features, weights and what it was trained on). The features are
the whole interface, so the model can be retrained or replaced without touching search.

A listed file then shows the definitions the question is most about. The pool holds only the
rows that ranked well across the whole repository, so for the best `DEFINITION_FILES` files
every definition is weighed (`definition_features`: its pool rank, its vector's and its text's
match to the question, within its file and overall, whether the question uses its name, its
size, how much of it is its own rather than nested definitions', whether it is module code,
whether it calls the pool's strongest rows) by a second model, `models/symbol_ranker.json`,
trained the same way.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

import numpy as np

from codeqa.core.errors import ConfigError, one_line
from codeqa.parsing.languages import CLASS_KINDS, DOC_LANGUAGES, FILE_KIND, MODULE_KIND, current_role
from codeqa.parsing.tokens import code_tokens
from codeqa.search.question_kind import QuestionKind
from codeqa.search.results import Definition, FileHit, Hit
from codeqa.search.signals.path_match import stem_asked
from codeqa.search.signals.shims import is_shim
from codeqa.search.structure import RepoLayout, asked_words, structure_features

RANKER_FILE = Path(__file__).resolve().parent / "models" / "file_ranker.json"
STRUCTURE_RANKER_FILE = Path(__file__).resolve().parent / "models" / "file_ranker_structure.json"
SYMBOL_RANKER_FILE = Path(__file__).resolve().parent / "models" / "symbol_ranker.json"
SYMBOLS_PER_FILE = 3  # of a listed file: the rows that made it rank
DEFINITION_FILES = 4  # the best files, whose every definition the symbol ranker weighs
DOCS_IN_PLACE: dict[QuestionKind, int] = {"how": 1, "report": 0}  # docs sections keeping their pool places
STRONG_HITS = 10  # the pool's best rows, whose references make the graph features
NON_SOURCE_ROLES = ("example", "benchmark", "docs", "generated", "vendored")

FEATURES = (
    "bm25_rr",  # 1 / rank in whole-file BM25 (0: not in its pool)
    "bm25_rel",  # BM25 score / the best file's
    "sym_rr",  # 1 / rank of the file's best row among the files of the symbol pool
    "sym_rel",  # that row's score / the pool's best
    "sym_rows",  # log(1 + rows of the file in the pool)
    "file_row",  # the file's own file or module row is in the pool
    "exact",  # the question names one of its symbols, or the file, exactly
    "test",  # role test, and the question is not about tests
    "test_asked",  # role test, and the question is about tests
    "non_source",  # role example, benchmark, docs, generated or vendored
    "prose_asked",  # one of those roles, and the question asks for docs or an example (an offset to the above)
    "uses_strong",  # log(1 + strong rows this file uses): it calls what matched
    "used_by_strong",  # log(1 + strong rows' files that use this file's rows)
    "entry",  # a part's entry file (structure.py)
    "root_entry",  # the whole program's entry: the root's, `src/main.rs`, a package holding most of the code
    "hub",  # log(1 + the evidence inside the part it is the entry of)
    "name_asked",  # an entry file: share of its part's name that the question uses
    "folder_asked",  # the question uses the name of a folder on its path
    "central",  # personalised PageRank in the candidates' reference graph, / the best's
    "stem_asked",  # share of the file name's words that the question uses (signals/path_match.py)
    "shim",  # a compatibility shim: compat.py, polyfills, legacy/ (signals/shims.py)
)
DEFINITION_FEATURES = (
    "pool_rr",  # 1 / the row's rank in the symbol pool (0: not in it)
    "cos",  # cosine of its vector to the question's (0 while it has none)
    "cos_gap",  # that cosine minus the best one in its file
    "cos_rr",  # 1 / its rank by cosine within its file
    "bm25_rel",  # BM25 of its text for the question's terms / the best in its file
    "bm25_rr",  # 1 / its rank by that BM25 within its file
    "name_terms",  # share of its name's terms that the question uses
    "named",  # the question names it exactly
    "lines",  # log(1 + its length in lines)
    "container",  # class-like (its methods are rows of their own)
    "used",  # log(1 + the places that use it)
    "strong",  # one of the pool's STRONG_HITS best rows
    "calls_strong",  # log(1 + those strong rows it uses): it calls what matched best
    "own_share",  # share of its lines that none of the file's definitions inside it holds
    "container_own",  # class-like × own_share: fields and a header, or mostly methods
    "module",  # a module-code row: top-level code, not a definition
)
BM25_K1, BM25_B = 1.5, 0.75


class Tokens(NamedTuple):
    """A definition's search text as BM25 reads it: how often each token occurs, and how many
    there are. Counted once when its row is read (search keeps rows for later questions), so a
    question looks up only its own terms (2.5 → 0.9 ms a search of Django's sdist)."""

    counts: Counter[str]
    length: int

    @classmethod
    def of(cls, tokens: Sequence[str]) -> Tokens:
        return cls(Counter(tokens), len(tokens))


@dataclass(frozen=True)
class LinearRanker:
    """A linear model over named features (a logistic regression's weights): score = bias + w · x."""

    weights: dict[str, float]
    bias: float = 0.0

    def score(self, features: dict[str, float]) -> float:
        return self.bias + sum(self.weights.get(name, 0.0) * value for name, value in features.items())

    def weighs(self, names: Iterable[str]) -> bool:
        """Whether any of `names` has a weight here (a feature without one need not be computed)."""
        return any(self.weights.get(name, 0.0) for name in names)

    def score_rows(self, rows: np.ndarray, names: Sequence[str]) -> np.ndarray:
        """`score` of each row of a matrix whose columns are `names`: one product for a search's
        few hundred definitions, where a dict per row cost ~8 ms."""
        return rows @ np.array([self.weights.get(name, 0.0) for name in names]) + self.bias

    @classmethod
    def load(cls, path: Path = RANKER_FILE, features: Sequence[str] = FEATURES) -> LinearRanker:
        data = json.loads(path.read_text(encoding="utf-8"))
        unknown = set(data["weights"]) - set(features)
        if unknown:
            raise ValueError(f"{path.name} weighs features search does not compute: {', '.join(sorted(unknown))}")
        return cls(weights=data["weights"], bias=data.get("bias", 0.0))


def file_probability(score: float) -> float:
    """The file model's score as the probability it models: that the file is one the answer
    needs (a file the fix changed, on the eval it was trained on). It is a logistic regression,
    so this is its own calibration, on its training items: a rough 0-1, comparable within and
    between searches, not a promise."""
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, score))))


# The shipped file models, and what "auto" ranks each kind of question with (question_kind.py
# says why they differ).
SHIPPED_FILE_MODELS = {"reports": RANKER_FILE, "structure": STRUCTURE_RANKER_FILE}
AUTO_FILE_MODELS: dict[QuestionKind, str] = {"report": "reports", "how": "structure"}


def _chosen(choice: str, kind: QuestionKind) -> str:
    """`CODEQA_FILE_MODEL=choice` for a `kind` question: "reports", "structure" or a file's path."""
    return AUTO_FILE_MODELS[kind] if choice == "auto" else choice


def file_model_name(choice: str, kind: QuestionKind) -> str:
    """The file model a search of a `kind` question uses under `CODEQA_FILE_MODEL=choice`:
    "reports", "structure", or the model file's name."""
    chosen = _chosen(choice, kind)
    return chosen if chosen in SHIPPED_FILE_MODELS else Path(chosen).name


def file_ranker_for(choice: str, kind: QuestionKind = "report") -> LinearRanker:
    """The file model `CODEQA_FILE_MODEL` names for a `kind` question: "auto" (by the kind),
    "reports" (`models/file_ranker.json`), "structure" (weighs the repository's structure,
    `models/file_ranker_structure.json`), or a model file's path."""
    return _file_model(_chosen(choice, kind))


@lru_cache(maxsize=4)
def _file_model(choice: str) -> LinearRanker:
    try:
        return LinearRanker.load(SHIPPED_FILE_MODELS.get(choice, Path(choice)))
    except (OSError, ValueError, KeyError, TypeError) as exc:  # JSONDecodeError is a ValueError
        raise ConfigError(f"CODEQA_FILE_MODEL: {Path(choice).name} is not a file model: {one_line(exc)}") from exc


@lru_cache(maxsize=1)
def default_symbol_ranker() -> LinearRanker:
    """The shipped definition model (`models/symbol_ranker.json`)."""
    return LinearRanker.load(SYMBOL_RANKER_FILE, DEFINITION_FEATURES)


def file_features(
    bm25_files: list[dict],
    hits: list[Hit],
    about_tests: bool,
    about_prose: bool = False,
    terms: Sequence[str] = (),
    layout: RepoLayout | None = None,
) -> dict[str, FileHit]:
    """Every file with evidence, unscored: `bm25_files` are file rows best first (with `_score`),
    `hits` the symbol pool best first, `terms` the question's tokens. With the repository's
    `layout`, the structure features are set too, and the entry files of the modules the
    evidence points into join the candidates (structure.py)."""
    by_file: dict[str, list[Hit]] = {}
    for hit in hits:
        by_file.setdefault(hit.file_path, []).append(hit)
    top_hit = max((h.score for h in hits), default=0.0) or 1.0
    files: dict[str, FileHit] = {}
    for rank, (path, rows) in enumerate(by_file.items(), 1):
        files[path] = FileHit(
            path,
            0.0,
            rows[0].role,
            rows[0].language,
            [h for h in rows if h.kind != FILE_KIND][:SYMBOLS_PER_FILE],
            {
                "sym_rr": 1.0 / rank,
                "sym_rel": max(rows[0].score, 0.0) / top_hit,
                "sym_rows": math.log1p(len(rows)),
                "file_row": float(any(h.table == "modules" for h in rows)),
                "exact": float(any(h.exact for h in rows)),
            },
        )
    top_bm25 = max((row["_score"] for row in bm25_files), default=0.0) or 1.0
    for rank, row in enumerate(bm25_files, 1):
        file = files.setdefault(row["file_path"], FileHit(row["file_path"], 0.0, row["role"], row["language"], []))
        file.features.update(bm25_rr=1.0 / rank, bm25_rel=row["_score"] / top_bm25)
    asked = asked_words(terms)
    if layout is not None:
        prior = sorted(
            files, key=lambda p: -(files[p].features.get("sym_rr", 0.0) + files[p].features.get("bm25_rr", 0.0))
        )
        hubs = layout.hubs(prior)
        for path in hubs:
            if path not in files and path in layout.files:
                role, language = layout.files[path]
                files[path] = FileHit(path, 0.0, role, language, [])
        structure_features(files, hits, asked, layout, hubs)
    _graph_features(files, hits)
    for path, file in files.items():
        role = current_role(file.role, path)
        test, prose = role == "test", role in NON_SOURCE_ROLES
        file.features.update(
            test=float(test and not about_tests),
            test_asked=float(test and about_tests),
            non_source=float(prose),
            prose_asked=float(prose and about_prose),
            stem_asked=stem_asked(path, asked),
            shim=float(is_shim(path)),
        )
    return files


def _graph_features(files: dict[str, FileHit], hits: list[Hit]) -> None:
    """From the references of the pool's strongest rows: which files use them (callers of what
    matched), and which files hold rows used from the strong rows' files."""
    strong = _strong_rows(hits)
    strong_files = {h.file_path for h in strong}
    uses: dict[str, int] = {}
    for hit in strong:
        for path in {ref["file_path"] for ref in hit.references} - {hit.file_path}:
            uses[path] = uses.get(path, 0) + 1
    used_by: dict[str, int] = {}
    for hit in hits:
        callers = {ref["file_path"] for ref in hit.references} & strong_files - {hit.file_path}
        if callers:
            used_by[hit.file_path] = max(used_by.get(hit.file_path, 0), len(callers))
    for path, file in files.items():
        file.features.update(uses_strong=math.log1p(uses.get(path, 0)), used_by_strong=math.log1p(used_by.get(path, 0)))


def _strong_rows(hits: list[Hit]) -> list[Hit]:
    """The pool's best definitions (no file or module rows): where the graph features start."""
    return [h for h in hits if h.kind != FILE_KIND and h.table != "modules"][:STRONG_HITS]


def rank_files(
    bm25_files: list[dict],
    hits: list[Hit],
    about_tests: bool,
    ranker: LinearRanker,
    about_prose: bool = False,
    terms: Sequence[str] = (),
    layout: RepoLayout | None = None,
) -> list[FileHit]:
    """Every file with evidence, scored by `ranker` (`file_ranker_for` gives search's), best first."""
    files = list(file_features(bm25_files, hits, about_tests, about_prose, terms, layout).values())
    for file in files:
        file.features = {name: file.features.get(name, 0.0) for name in FEATURES}
        file.score = ranker.score(file.features)
    return sorted(files, key=lambda f: (-f.score, f.path))


def definition_features(
    definitions: list[Hit],
    vectors: Sequence[np.ndarray | None],
    texts: Sequence[Tokens],
    pool: list[Hit],
    question_vector: Sequence[float] | None,
    question_terms: list[str],
    named: set[str],
) -> list[dict[str, float]]:
    """The features of each definition (`vectors` and `texts`, its tokens, beside it); the
    within-file ones compare it with the other definitions of its file in the list, `pool` is
    the search's candidate pool best first, `named` the ids of rows the question names."""
    pool_rank = {hit.id: rank for rank, hit in reversed(list(enumerate(pool, 1)))}
    strong = _strong_rows(pool)
    strong_ids = {hit.id for hit in strong}
    # References are the places that use a row, each naming the definition it sits in.
    calls = Counter(place for hit in strong for place in {(ref["file_path"], ref["caller"]) for ref in hit.references})
    cosines = np.zeros(len(definitions))
    embedded = [i for i, vector in enumerate(vectors) if vector is not None]
    if question_vector is not None and embedded:
        query = np.asarray(question_vector, dtype=np.float32)
        matrix = np.asarray([vectors[i] for i in embedded], dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1) * (np.linalg.norm(query) or 1.0)
        cosines[embedded] = matrix @ query / np.where(norms > 0, norms, 1.0)
    bm25 = _bm25(texts, question_terms)
    asked = set(question_terms)
    by_file: dict[str, list[int]] = {}
    for i, hit in enumerate(definitions):
        by_file.setdefault(hit.file_path, []).append(i)
    own = _own_share(definitions, by_file.values())
    features: list[dict[str, float]] = [{} for _ in definitions]
    for rows in by_file.values():
        best_cos = max(cosines[i] for i in rows)
        best_bm25 = max(bm25[i] for i in rows) or 1.0
        cos_rank = {i: rank for rank, i in enumerate(sorted(rows, key=lambda i: -cosines[i]), 1)}
        bm25_rank = {i: rank for rank, i in enumerate(sorted(rows, key=lambda i: -bm25[i]), 1)}
        for i in rows:
            hit = definitions[i]
            name_terms = set(code_tokens(hit.name).split())
            features[i] = {
                "pool_rr": 1.0 / pool_rank[hit.id] if hit.id in pool_rank else 0.0,
                "cos": float(cosines[i]),
                "cos_gap": float(cosines[i] - best_cos),
                "cos_rr": 1.0 / cos_rank[i],
                "bm25_rel": float(bm25[i]) / best_bm25,
                "bm25_rr": 1.0 / bm25_rank[i] if bm25[i] > 0 else 0.0,
                "name_terms": len(name_terms & asked) / len(name_terms) if name_terms else 0.0,
                "named": float(hit.id in named or hit.exact),
                "lines": math.log1p(max(0, hit.end_line - hit.start_line + 1)),
                "container": float(hit.kind in CLASS_KINDS),
                "used": math.log1p(hit.reference_count),
                "strong": float(hit.id in strong_ids),
                "calls_strong": math.log1p(calls[(hit.file_path, hit.qualified_name)]),
                "own_share": own[i],
                "container_own": own[i] * (hit.kind in CLASS_KINDS),
                "module": float(hit.kind == MODULE_KIND),
            }
    return features


def _own_share(definitions: list[Hit], files: Iterable[list[int]]) -> list[float]:
    """Per definition, the share of its lines that no definition nested in it holds.

    A fix's gold symbol is the innermost definition holding a changed line, so a class made
    of methods is rarely it while a struct of fields often is: the eval's Rust and Java gold
    classes were why `container` alone weighed +1.23 and put Python classes above their
    methods. Rows nest or are disjoint; one pass over each file's rows in order of their
    start subtracts every row from the row that directly holds it."""
    size = [max(1, h.end_line - h.start_line + 1) for h in definitions]
    own = list(size)
    for rows in files:
        holders: list[int] = []  # the rows open at this line, innermost last
        for i in sorted(rows, key=lambda i: (definitions[i].start_line, -definitions[i].end_line, i)):
            while holders and definitions[holders[-1]].end_line < definitions[i].start_line:
                holders.pop()
            if holders and definitions[holders[-1]].end_line >= definitions[i].end_line:
                own[holders[-1]] -= size[i]
            holders.append(i)
    return [max(0, n) / s for n, s in zip(own, size, strict=False)]


def _bm25(texts: Sequence[Tokens], terms: Sequence[str]) -> np.ndarray:
    """Okapi BM25 (Lucene's idf) of each text for the distinct terms, the texts being the whole
    collection. A few hundred short texts: looking up only the question's terms takes well
    under 1 ms, where building a general index (bm25s) took ~10 ms a search."""
    asked = list(dict.fromkeys(terms))  # the question's order, the same for every text
    counts = [{term: text.counts[term] for term in asked if term in text.counts} for text in texts]
    if not texts or not any(counts):
        return np.zeros(len(texts))
    lengths = np.array([text.length for text in texts], dtype=np.float64)
    average = float(lengths.mean()) or 1.0
    documents = Counter(term for count in counts for term in count)
    idf = {term: math.log(1.0 + (len(texts) - n + 0.5) / (n + 0.5)) for term, n in documents.items()}
    return np.array(
        [
            sum(
                idf[term] * tf / (tf + BM25_K1 * (1 - BM25_B + BM25_B * length / average)) for term, tf in count.items()
            )
            for count, length in zip(counts, lengths, strict=False)
        ]
    )


def rank_definitions(
    files: list[FileHit], definitions: list[Hit], features: list[dict[str, float]], ranker: LinearRanker
) -> None:
    """Score the definitions by `ranker` (`default_symbol_ranker()` in search) and give each of
    `files` its own, best first, and as its symbols the best of them: as many as the pool gave
    it (at least one), so the symbol list still covers as many files; a file with none keeps
    the symbols the pool gave it.

    Showing SYMBOLS_PER_FILE of every file instead lowered function recall@10 on the train
    split (0.391 → 0.377): the top files' extra rows push other files' out of the top 10."""
    rows = np.array(
        [[values.get(name, 0.0) for name in DEFINITION_FEATURES] for values in features], dtype=np.float64
    ).reshape(len(features), len(DEFINITION_FEATURES))
    by_file: dict[str, list[Definition]] = {}
    for hit, row, score in zip(
        definitions, rows.tolist(), ranker.score_rows(rows, DEFINITION_FEATURES).tolist(), strict=False
    ):
        by_file.setdefault(hit.file_path, []).append(
            Definition(hit, dict(zip(DEFINITION_FEATURES, row, strict=False)), score)
        )
    for file in files:
        file.definitions = sorted(by_file.get(file.path, []), key=lambda d: (-d.score, d.hit.start_line))
        if file.definitions:
            file.symbols = [d.hit for d in file.definitions[: max(1, len(file.symbols))]]


def hits_in_file_order(hits: list[Hit], files: list[FileHit], kind: QuestionKind) -> list[Hit]:
    """The symbol list in the order of the file ranking: code rows of listed files that the
    question names exactly first (as it named them), then each listed file's best code rows,
    file by file, then the other code rows. The best docs section keeps its place in the pool;
    the other docs sections follow the listed files' rows.

    The file ranking weighs more evidence than any single row's score: on the eval's train
    split this order raised function recall@10 from 0.35 to 0.40 and hit@10 from 0.61 to 0.66.
    Docs: a bug report matches the docs that describe the feature and the issue template it was
    written in (ripgrep's ISSUE_TEMPLATE.md sections took 2 to 4 of the top 10), and the file
    model, which learned that the fix is code, seldom lists those files. Moving every section
    of an unlisted file down took the Flask eval's docs questions from 0.875 to 0.375 symbol
    recall@10; keeping the best one in its place keeps 0.75 of them while the train split's
    function recall@10 rose 0.385 → 0.419 and the Flask eval's code questions gained. The
    sections of a docs file the file ranking lists used to keep their places too: express's
    History.md, listed 4th, put five release notes in the top 10 of a routing fix, fd's README,
    listed 9th, six sections. Without that, train function recall@10 0.429 → 0.440
    (JavaScript and Rust gained, no language lost), the Flask eval unchanged.
    Named rows: reports paste logs and version dumps full of identifiers (xarray's template asks
    for `xr.show_versions()`), so a name alone put `show_versions` first. A named row leads only
    when the file ranking, which weighs the mention with the rest of the evidence, lists its
    file: train function recall@10 0.419 → 0.442, hit@10 0.616 → 0.637, no language lower.
    Named rows of several listed files come in the files' order: a trace's `add` in the file
    it names before another file's `add` that the vectors happened to like better (the
    realistic eval and the Flask questions: unchanged).
    For a report (`kind`), no docs section keeps its place: a report's function is code, and
    the docs that describe its feature took one of the first places of its ten (train split
    function hit@10 0.653 → 0.661, recall@10 0.465 → 0.479: Go, JavaScript and Python gained,
    no language lost; test split unchanged)."""
    listed = {file.path for file in files}
    docs = [hit for hit in hits if hit.language in DOC_LANGUAGES]
    in_place = {hit.id for hit in docs[: DOCS_IN_PLACE[kind]]}
    code = [hit for hit in hits if hit.language not in DOC_LANGUAGES]
    file_rank = {file.path: rank for rank, file in enumerate(files)}
    ordered = sorted(
        (hit for hit in code if hit.exact and hit.file_path in listed), key=lambda h: file_rank[h.file_path]
    )
    seen = {hit.id for hit in ordered}
    ordered += [
        hit for file in files for hit in file.symbols if hit.id not in seen and hit.language not in DOC_LANGUAGES
    ]
    ordered += [hit for hit in docs if hit.id not in in_place]
    seen = {hit.id for hit in ordered}
    ordered += [hit for hit in code if hit.id not in seen]
    for place, hit in enumerate(hits):
        if hit.id in in_place:
            ordered.insert(place, hit)
    return ordered
