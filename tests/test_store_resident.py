"""A repo held in memory (store/resident.py) answers as LanceDB does, on real indexes."""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import pytest

from conftest import settings_for
from codeqa.indexing.embeddings import get_embedder
from codeqa.indexing.indexer import index_repo
from codeqa.search.retrieval import DEFINITION_COLUMNS, FTS_BOOSTS, SELECT, Retriever
from codeqa.search.options import SearchOptions
from codeqa.store import registry
from codeqa.store.connection import connect
from codeqa.store.create_tables import RepoTables
from codeqa.store.index import Index
from codeqa.store.reader import RepoReader, Scope
from codeqa.store.resident import Analyzer, Postings, ResidentReader, ResidentTable, best
from codeqa.store.schema import ROW_TABLES

# Stop words, inflections (parsed/parses/parsing), identifiers, paths, a word of 64 bytes
QUERIES = [
    "where are the prices parsed during checkout",
    "parse parsing parses parser",
    "Cart total computed with discounts",
    "checkout order Product from_row",
    "src/lib.rs impl Item trait Priced",
    "the of and to a in is it",
    "area helper function that doubles " + "x" * 64,
    "Shape circle rectangle perimeter",
    "config loading settings environment",
]
SCOPES = [Scope(), Scope(role="test"), Scope(language="python"), Scope(path_prefix="./src")]


@pytest.fixture(scope="module")
def edited_sample(tmp_path_factory) -> tuple[RepoReader, ResidentReader, dict[str, ResidentTable], dict]:
    """A copy of the sample repo indexed and held in memory, then edited and indexed again, its
    copies brought up to date: (LanceDB's reader, the reader holding them, the copies before
    the edit, the copies made after it).

    LanceDB's full-text indexes are then built again: once new rows were folded into them,
    their BM25 scores are not quite those of indexes built anew over the same rows, which a
    copy in memory gives (docs/retrieval.md, "Searching from memory")."""
    import shutil

    from conftest import SAMPLE_REPO

    repo = tmp_path_factory.mktemp("edited") / "sample_repo"
    shutil.copytree(SAMPLE_REPO, repo, symlinks=True)
    settings = settings_for(repo.parent / "data")
    index_repo(repo, settings, name="edited", progress=False)
    db = connect(settings)
    resident = ResidentReader(db, registry.get_repo(db, "edited"))
    resident.load(ROW_TABLES)
    before = dict(resident._resident)

    models = repo / "shop" / "models.py"  # every definition below the new line moves
    imports = "from shop.util import log_calls\n"
    models.write_text(models.read_text().replace(imports, imports + "\nTAX = 2\n"))
    (repo / "shop" / "json_parser.py").unlink()
    (repo / "shop" / "refunds.py").write_text(
        '"""Refunds parsed from a ledger."""\n\nfrom shop.models import Cart\n\n\n'
        "def refund_total(cart: Cart) -> int:\n"
        '    """Money back for a returned cart."""\n'
        "    return cart.total()\n"
    )
    index_repo(repo, settings, name="edited", progress=False)
    info = registry.get_repo(db, "edited")
    resident.renew(info)
    resident.load(ROW_TABLES)
    after = dict(resident._resident)

    tables = RepoTables(db, info)
    for table in tables.row_tables:
        for index in table.list_indices():
            if index.index_type == "FTS":
                table.drop_index(index.name)
    tables.finish()
    resident.renew(info)
    resident.load(ROW_TABLES)
    return RepoReader(db, info), resident, before, after


@pytest.fixture(scope="module", params=["read whole", "brought up to date"])
def readers(request, indexed_sample) -> tuple[RepoReader, ResidentReader]:
    """LanceDB's reader and one holding the same repo: its copies read whole, or made from
    an earlier version's after an edit (`edited_sample`)."""
    if request.param == "brought up to date":
        plain, resident, _, _ = request.getfixturevalue("edited_sample")
        return plain, resident
    settings, _ = indexed_sample
    db = connect(settings)
    info = registry.get_repo(db, "sample")
    resident = ResidentReader(db, info)
    resident.load(ROW_TABLES)
    return RepoReader(db, info), resident


def ranked(rows: list[dict], score: str) -> list[tuple[str, float]]:
    return [(row.get("id") or row["file_path"], round(row[score], 4)) for row in rows]


def tie_groups(rows: list[dict]) -> list[tuple[float, set[str]]]:
    """Files best first, those of equal score as one set: LanceDB orders a single column's ties
    (identical files) in no order we could find, so they may come in another one here."""
    groups: list[tuple[float, set[str]]] = []
    for row in rows:
        score = round(row["_score"], 4)
        if groups and groups[-1][0] == score:
            groups[-1][1].add(row["file_path"])
        else:
            groups.append((score, {row["file_path"]}))
    return groups


def without_score(rows: list[dict]) -> list[dict]:
    return [{key: value for key, value in row.items() if key != "_score"} for row in rows]


@pytest.mark.integration
@pytest.mark.parametrize("query", QUERIES)
def test_bm25_from_memory_is_lancedbs_rows_scores_and_order(readers, query):
    plain, resident = readers
    for scope in SCOPES:
        for kind in ROW_TABLES:
            for only in (False, True):
                expected = plain.text_search(kind, query, scope, SELECT, 30, FTS_BOOSTS, only)
                found = resident.text_search(kind, query, scope, SELECT, 30, FTS_BOOSTS, only)
                assert ranked(found, "_score") == ranked(expected, "_score"), (kind, scope, only)
                assert without_score(found) == without_score(expected)  # every column, `_no_vector` included
        terms = query.lower().split()
        assert tie_groups(resident.file_text_search(terms, scope, 50)) == tie_groups(
            plain.file_text_search(terms, scope, 50)
        )


@pytest.mark.integration
def test_the_stemmed_column_drops_stop_words_after_stemming_as_lancedb_does(readers):
    """"during" stems to "dure" and stays; "doing" stems to "do" and goes (NLTK's list)."""
    plain, resident = readers
    analyzer = Analyzer(stemmed=True)
    assert analyzer.terms("During doing the Parsing") == ["dure", "pars"]
    for word in ("during", "doing", "very", "would", "again", "parsing"):
        expected = plain.text_search("methods", word, Scope(), ["id"], 50, [1.0, 0.0, 0.0])
        assert ranked(resident.text_search("methods", word, Scope(), ["id"], 50, [1.0, 0.0, 0.0]), "_score") == ranked(
            expected, "_score"
        ), word


@pytest.mark.integration
def test_vectors_from_memory_are_lancedbs_nearest_rows(indexed_sample, readers):
    """The sample's tables are below the HNSW threshold: LanceDB's search is exact, as ours."""
    settings, _ = indexed_sample
    plain, resident = readers
    embedder = get_embedder(settings, threads=1)
    for query in QUERIES:
        vector = embedder.embed([query])[0]
        for scope in SCOPES:
            for kind in ROW_TABLES:
                expected = plain.vector_search(kind, vector, scope, SELECT, 20, 100, True)
                found = resident.vector_search(kind, vector, scope, SELECT, 20, 100, True)
                assert [row["id"] for row in found] == [row["id"] for row in expected], (kind, scope)
                assert np.allclose([r["_distance"] for r in found], [r["_distance"] for r in expected], atol=1e-5)


@pytest.mark.integration
def test_rows_by_file_and_by_id_from_memory_are_lancedbs(readers):
    plain, resident = readers
    paths = sorted({row["file_path"] for row in plain.file_rows(["file_path"])})
    for kind in ROW_TABLES:
        expected = plain.rows_in_files(kind, paths[:7], DEFINITION_COLUMNS, 1000)
        found = resident.rows_in_files(kind, paths[:7], DEFINITION_COLUMNS, 1000)
        assert found.to_pylist() == expected.to_pylist()
        ids = [row["id"] for row in expected.to_pylist()][::2]
        assert resident.rows_by_ids(kind, ids, SELECT) == plain.rows_by_ids(kind, ids, SELECT)
    assert resident.rows_in_files("methods", ["no/such/file.py"], DEFINITION_COLUMNS, 10).num_rows == 0


@pytest.mark.integration
def test_rows_by_name_from_memory_are_lancedbs(readers):
    plain, resident = readers
    for kind in ROW_TABLES:
        names = [row["qualified_name"] for row in plain.text_search(kind, "parse cart total", Scope(), ["qualified_name"], 8, FTS_BOOSTS)]
        tails = [name.rsplit(".", 1)[-1] for name in names] + ["parse", "__init__"]
        for scope in SCOPES:
            for limit in (3, 50):
                assert resident.rows_named(kind, names, tails, scope, SELECT, limit) == plain.rows_named(
                    kind, names, tails, scope, SELECT, limit
                ), (kind, scope, limit)
                assert resident.implementations_of(kind, names, scope, SELECT, limit) == plain.implementations_of(
                    kind, names, scope, SELECT, limit
                )
    paths = [row["file_path"] for row in plain.file_rows(["file_path"])]
    asked = [paths[0], paths[1].rsplit("/", 1)[-1], "no/such.py"]
    stem = paths[2].rsplit("/", 1)[-1].split(".")[0]
    for scope in SCOPES:
        assert resident.file_rows_named(asked, stem, scope, SELECT, 50) == plain.file_rows_named(asked, stem, scope, SELECT, 50)
    assert resident.file_rows_named([], None, Scope(), SELECT, 50) == []


@pytest.mark.integration
def test_an_edit_brings_the_copies_up_to_date_reading_only_the_rows_it_changed(edited_sample):
    """After an edit, each copy is made from the one before, reading only the rows the run
    wrote, and holds what a copy read whole holds: the rows in the table's order, the postings'
    statistics, the lookups."""
    plain, resident, before, after = edited_sample
    for kind in ROW_TABLES:
        held = after[kind]
        assert held.version[0] == before[kind].version[0] and held.version[1] > before[kind].version[1]
        assert 0 < held.rows_read < held.rows.num_rows / 2, kind
        table = plain.table(kind)
        table.checkout(held.version[1])
        whole = ResidentTable.read(table, held.version)
        table.checkout_latest()
        assert whole.rows_read == whole.rows.num_rows
        assert held.rows.equals(whole.rows) and held.keys.equals(whole.keys), kind
        assert (held.by_id, held.by_name) == (whole.by_id, whole.by_name)
        assert held.by_qualified_name == whole.by_qualified_name
        assert {path: rows.tolist() for path, rows in held.by_file.items()} == {
            path: rows.tolist() for path, rows in whole.by_file.items()
        }
        for column, postings in whole.postings.items():
            assert held.postings[column].documents == postings.documents
            assert np.array_equal(held.postings[column].lengths, postings.lengths)
            for query in [*QUERIES, "refund_total returned cart money back", "TAX"]:
                scores = [np.zeros(held.rows.num_rows, dtype=np.float32) for _ in range(2)]
                held.postings[column].add_scores(query, 1.0, scores[0])
                postings.add_scores(query, 1.0, scores[1])
                assert np.array_equal(*scores), (kind, column, query)
    assert all(resident._resident[kind].rows_read == 0 for kind in ROW_TABLES)  # only the indexes changed
    assert resident.rows_named("methods", ["refund_total"], [], Scope(), SELECT, 5)[0]["file_path"] == "shop/refunds.py"
    assert not resident.rows_in_files("methods", ["shop/json_parser.py"], DEFINITION_COLUMNS, 10).num_rows


@pytest.mark.unit
@pytest.mark.parametrize("shuffled", [False, True])
def test_postings_made_from_an_earlier_versions_score_as_postings_built_anew(shuffled):
    """Rows gone, rows new, terms no row holds any more, and (should a table ever reorder its
    rows) rows kept in another order."""
    import random

    import pyarrow as pa

    rng = random.Random(7)
    words = ["parse", "parsing", "cart", "total", "the", "price", "Refund", "ledger", "x" * 70, "during"]
    old = [" ".join(rng.choices(words, k=rng.randrange(0, 9))) for _ in range(40)] + ["unique_term here"]
    kept = [i for i in range(len(old)) if i % 3 and i != len(old) - 1]  # the unique term goes
    new_texts = [" ".join(rng.choices(words + ["fresh_term"], k=rng.randrange(1, 9))) for _ in range(6)]
    layout = [("old", i) for i in kept] + [("new", j) for j in range(len(new_texts))]  # as a table's writes leave them
    if shuffled:
        rng.shuffle(layout)
    texts = [old[i] if side == "old" else new_texts[i] for side, i in layout]
    moved = np.full(len(old), -1, dtype=np.int64)
    for position, (side, i) in enumerate(layout):
        if side == "old":
            moved[i] = position
    positions = np.array([p for p, (side, _) in enumerate(layout) if side == "new"], dtype=np.int64)
    for stemmed in (False, True):
        earlier = Postings.of(pa.array(old), Analyzer(stemmed))
        added = pa.array([new_texts[i] for side, i in layout if side == "new"])
        updated = earlier.updated(moved, added, positions)
        anew = Postings.of(pa.array(texts), Analyzer(stemmed))
        assert updated.documents == anew.documents and np.array_equal(updated.lengths, anew.lengths)
        for query in ["parse cart", "fresh_term price", "unique_term", "the during", "ledger refund total"]:
            scores = [np.zeros(len(texts), dtype=np.float32) for _ in range(2)]
            updated.add_scores(query, 1.0, scores[0])
            anew.add_scores(query, 1.0, scores[1])
            assert np.array_equal(*scores), (stemmed, query)


@pytest.mark.unit
def test_ties_keep_the_tables_row_order_and_ineligible_rows_never_come():
    scores = np.array([1.0, 3.0, 3.0, 0.5, 3.0, 2.0], dtype=np.float32)
    eligible = np.array([True, True, True, True, False, True])
    assert best(scores, eligible, 3).tolist() == [1, 2, 5]
    assert best(scores, eligible, 10).tolist() == [1, 2, 5, 0, 3]
    assert best(scores, np.zeros(6, dtype=bool), 3).tolist() == []


def wait_held(reader: ResidentReader, kind: str) -> None:
    deadline = time.monotonic() + 60
    while reader._current(kind) is None:  # the first call starts the build in the background
        assert time.monotonic() < deadline, f"{kind} never came into memory"
        time.sleep(0.05)


@pytest.mark.integration
def test_an_index_run_is_searched_at_once_and_its_new_version_comes_into_memory(sample_copy, tmp_path):
    settings = settings_for(tmp_path / "data")
    index_repo(sample_copy, settings, name="live", progress=False)
    retriever = Retriever(settings, threads=1)
    options = SearchOptions(k=5, hyde=False, rerank=False)
    assert retriever.search("live", "how are prices parsed?", options).results
    reader = retriever.index.reader(retriever.index.repo("live"))
    assert isinstance(reader, ResidentReader)
    wait_held(reader, "methods")
    held = reader._current("methods")

    (sample_copy / "zebra_tools.py").write_text("def quantum_zebra_counter(stripes):\n    return stripes * 2\n")
    index_repo(sample_copy, settings, name="live", progress=False)
    found = retriever.search("live", "quantum_zebra_counter", options)  # before its copy is built: LanceDB's
    assert found.results[0].name == "quantum_zebra_counter"
    wait_held(reader, "methods")
    assert reader._current("methods") is not held
    again = retriever.search("live", "quantum zebra counter stripes", options)
    assert again.results[0].name == "quantum_zebra_counter"


@pytest.mark.integration
def test_a_repo_above_the_limit_or_a_limit_of_zero_is_searched_in_lancedb(indexed_sample):
    settings, report = indexed_sample
    db = connect(settings)
    info = registry.get_repo(db, "sample")
    assert isinstance(Index(db, resident_rows=info.stats.rows).reader(info), ResidentReader)
    assert not isinstance(Index(db, resident_rows=info.stats.rows - 1).reader(info), ResidentReader)
    assert not isinstance(Index(db, resident_rows=0).reader(info), ResidentReader)
    index = Index(db, resident_rows=info.stats.rows)
    assert isinstance(index.reader(info), ResidentReader)
    grown = replace(info, stats=replace(info.stats, rows=info.stats.rows + 1))
    assert not isinstance(index.reader(grown), ResidentReader)  # outgrew the limit: let go


@pytest.mark.integration
def test_searches_from_many_threads_while_the_copy_is_built_all_find_the_same(indexed_sample):
    """A server's threads search while the first search's copy is being read into memory: each
    gets LanceDB's answer or the copy's, and they are the same."""
    from concurrent.futures import ThreadPoolExecutor

    settings, _ = indexed_sample
    options = SearchOptions(k=8, hyde=False, rerank=False)
    expected = {
        query: [hit.id for hit in Retriever(replace(settings, resident_rows=0)).search("sample", query, options).results]
        for query in QUERIES
    }
    retriever = Retriever(settings, threads=1)
    with ThreadPoolExecutor(max_workers=8) as pool:
        found = list(pool.map(lambda query: (query, retriever.search("sample", query, options)), QUERIES * 4))
    assert all([hit.id for hit in result.results] == expected[query] for query, result in found)
    reader = retriever.index.reader(retriever.index.repo("sample"))
    for kind in ROW_TABLES:
        wait_held(reader, kind)
    assert reader.in_memory()
    assert all([hit.id for hit in retriever.search("sample", q, options).results] == expected[q] for q in QUERIES)
