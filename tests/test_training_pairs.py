"""The training-data miner's guard against eval repositories, and its own item rules (no git needed)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from training.mine_pairs import MAX_POSITIVES, hard_negatives, item_problem, names_symbol
from training.sources import (EXCLUDED, ExcludedRepository, check_allowed, eval_test_repos, excluded_repos,
                              load_sources, repos_named_in)

pytestmark = pytest.mark.unit

import sys

from eval.realistic.items import GoldFile, GoldSymbol, Item


def _item(query: str, symbols: int) -> Item:
    gold = [GoldFile("src/a.py", "python", [[3, 4]], [],
                     [GoldSymbol(f"Parser.parse_{n}", "method", 10 * n + 1, 10 * n + 5) for n in range(symbols)])]
    return Item(id="x", repo="o/r", language="python", split="train", query_type="commit", source="git-history",
                base_commit="0" * 40, base_date="2024-01-01T00:00:00+00:00", fix_ref="1" * 40, query=query,
                query_truncated=False, gold=gold)


@pytest.mark.parametrize("repo", sorted(EXCLUDED["held out"]))
def test_every_held_out_repository_is_refused_in_any_case(repo: str) -> None:
    for spelling in (repo, repo.lower(), repo.upper()):
        with pytest.raises(ExcludedRepository, match="held out"):
            check_allowed(["pallets/click", spelling], extra_files=())


def test_realistic_eval_test_split_is_refused_and_its_train_split_is_not() -> None:
    test_repos = eval_test_repos()
    assert "pallets/flask" in test_repos and "pydata/xarray" not in test_repos
    assert {"sinatra/sinatra", "cli/cli"} <= test_repos  # the new-language and how-it-works evals' too
    with pytest.raises(ExcludedRepository, match="pallets/flask"):
        check_allowed(["pallets/flask"], extra_files=())
    check_allowed(["pydata/xarray"], extra_files=())


def test_notes_files_exclude_all_but_their_train_lines(tmp_path: Path) -> None:
    notes = tmp_path / "99-repos.txt"
    notes.write_text("# header naming nobody/else-test as test-only\n"
                     "test  go  some/test-repo\n"
                     "train go  some/train-repo\n", encoding="utf-8")
    assert repos_named_in(notes) == {"nobody/else-test", "some/test-repo"}
    with pytest.raises(ExcludedRepository, match="Some/Test-Repo"):
        check_allowed(["Some/Test-Repo"], extra_files=(notes,))
    check_allowed(["some/train-repo"], extra_files=(notes,))


def test_the_pinned_repository_list_has_no_excluded_repository() -> None:
    sources = load_sources()
    assert len({s.repo for s in sources}) == len(sources) >= 100
    assert all(len(s.anchor) == 40 for s in sources)
    check_allowed([s.repo for s in sources])


def test_item_rules_beyond_the_eval() -> None:
    excluded = excluded_repos(extra_files=())
    assert item_problem(_item("Fix a crash in the parser", 2), set(), excluded) is None
    assert item_problem(_item("Fix a crash in the parser", 2), {"Fix a crash in the parser"}, excluded) \
        == "duplicate query"
    assert item_problem(_item("Port the fix from pytest-dev/pytest", 1), set(), excluded) \
        == "names an excluded repository"
    assert item_problem(_item("Fix everything", MAX_POSITIVES + 1), set(), excluded) \
        == f"more than {MAX_POSITIVES} changed definitions"
    assert item_problem(_item("Fix the module constant", 0), set(), excluded) \
        == "no changed definition (module-level change only)"


def test_names_symbol_flags_queries_that_spell_a_changed_name() -> None:
    assert names_symbol(_item("parse_0 crashes on empty input", 1))
    assert not names_symbol(_item("the parser crashes on empty input", 1))


def test_hard_negatives_leave_out_what_holds_or_sits_inside_a_positive() -> None:
    definitions = [("Parser", "class", 1, 100), ("Parser.parse", "method", 10, 30),
                   ("Parser.parse.inner", "function", 12, 15), ("Parser.close", "method", 40, 50),
                   ("helper", "function", 110, 120)]
    positives = [("Parser.parse", "method", 10, 30)]
    negatives = hard_negatives(definitions, positives, random.Random("x"))
    assert [n[0] for n in negatives] == ["Parser.close", "helper"]
    assert hard_negatives(definitions, positives, random.Random("x"), limit=1) \
        == hard_negatives(definitions, positives, random.Random("x"), limit=1)
    assert len(hard_negatives(definitions, positives, random.Random("x"), limit=1)) == 1


def test_batches_never_hold_two_positives_of_one_query_and_lose_none() -> None:
    from training.train_embedder import batches

    triples = [{"id": f"q{n % 7}", "n": n} for n in range(40)]
    result = batches(triples, size=5, seed=1)
    assert sorted(t["n"] for batch in result for t in batch) == list(range(40))
    assert all(len({t["id"] for t in batch}) == len(batch) <= 5 for batch in result)


def test_definition_texts_are_what_the_index_embeds_for_each_definition() -> None:
    """The matcher trains on the rows' own embedding text (path, kind and name, signature,
    code), keyed by qualified name and start line as the pairs name them."""
    from codeqa.store.rows import embedding_text
    from codeqa.indexing.file_rows import file_rows
    from codeqa.parsing.repo_files import SourceFile
    from training.train_embedder import definition_texts

    source = "import os\n\ndef parse(x):\n    return x\n\nclass Cart:\n    def total(self):\n        return 0\n"
    texts = definition_texts(source, "python", "src/a.py")
    assert set(texts) == {("parse", 3), ("Cart", 6), ("Cart.total", 7)}
    assert texts[("parse", 3)].startswith("src/a.py\nfunction parse\n")
    assert "return x" in texts[("parse", 3)] and "Cart" not in texts[("parse", 3)]
    file = SourceFile(path="src/a.py", abs_path="src/a.py", language="python", size=len(source), mtime_ns=0,
                      text=source, sha256="0", decoded_with_replacement=False)
    rows = file_rows("r", file, 0).rows
    indexed = {(r["qualified_name"], r["start_line"]): embedding_text(r) for table in rows.values() for r in table}
    assert all(indexed[key] == text for key, text in texts.items())


def test_validation_holds_back_one_repository_in_seven_of_every_language() -> None:
    from training.sources import Source, validation_repos

    sources = [Source("go", f"o/go{n}", "a", 1) for n in range(8)] + [Source("zig", "o/zig", "a", 1)]
    held = validation_repos(sources)
    assert len([r for r in held if r.startswith("o/go")]) == 2 and "o/zig" in held
    assert validation_repos(sources) == held  # stable: an order of names, not a random draw


