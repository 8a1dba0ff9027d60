"""The how-it-works miner: names resolve to the right files, masking hides them, drops say why."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest


from eval.howto.items import GoldFile, Item, split_problems
from eval.howto.mine import Plan, candidates
from eval.howto.passages import MASK, find_mentions, mask, resolve_mentions, split_passages
from eval.howto.resolve import Tree
from eval.howto.run import ndcg, score

pytestmark = pytest.mark.unit

TREE = Tree([
    "internal/bundler/bundler.go", "internal/bundler/linker.go", "internal/bundler/bundler_test.go",
    "internal/js_parser/js_parser.go", "internal/js_parser/js_lexer.go",
    "helix-core/src/lib.rs", "helix-core/src/selection.rs", "helix-core/src/transaction.rs",
    "helix-stdx/src/rope.rs", "src/features/mod.rs", "src/features/navigate.rs",
    "src/pip/_internal/cli/__init__.py", "src/pip/_internal/cli/main.py", "src/pip/_vendor/requests/__init__.py",
    "lib/PhpParser/Lexer.php", "lib/PhpParser/Lexer/Emulative.php", "lib/PhpParser/Node/Expr.php",
    "a/strings.go", "b/strings.go", "src/index.js", "test/index.js", "docs/design.md", "tools/", "tools/README.md",
])


@pytest.mark.parametrize(("name", "doc_dir", "files", "how"), [
    ("internal/bundler/bundler.go", "", ["internal/bundler/bundler.go"], "path"),
    ("../internal/bundler/bundler.go", "docs", ["internal/bundler/bundler.go"], "path"),
    ("bundler.go", "", ["internal/bundler/bundler.go"], "file name"),
    ("bundler.ScanBundle()", "", ["internal/bundler/bundler.go"], "stem"),
    ("internal/js_parser", "", ["internal/js_parser/js_parser.go"], "dir"),  # folder → {name}.go
    ("js_parser", "", ["internal/js_parser/js_parser.go"], "stem"),
    ("selection.Range", "", ["helix-core/src/selection.rs"], "stem"),  # a plain word heading a qualified name
    ("helix-core", "", ["helix-core/src/lib.rs"], "dir"),  # a crate → src/lib.rs
    ("helix_core::selection", "", ["helix-core/src/selection.rs"], "module"),
    ("src/features", "", ["src/features/mod.rs"], "dir"),
    ("features/", "", ["src/features/mod.rs"], "dir"),  # a plain word with a slash is a folder
    ("js_parser/", "", ["internal/js_parser/js_parser.go"], "dir"),  # … and never the file of that stem
    ("pip._internal.cli", "", ["src/pip/_internal/cli/__init__.py"], "module"),
    ("pip._internal.cli.main", "", ["src/pip/_internal/cli/main.py"], "module"),
    ("Lexer", "", ["lib/PhpParser/Lexer.php"], "stem"),
    ("Lexer\\Emulative", "", ["lib/PhpParser/Lexer/Emulative.php"], "module"),
])
def test_names_resolve_to_the_files_they_mean(name: str, doc_dir: str, files: list[str], how: str) -> None:
    assert TREE.resolve(name, doc_dir) == (files, how)


@pytest.mark.parametrize(("name", "why"), [
    ("strings.go", "ambiguous file name"),  # two files of that name: neither is gold
    ("Rope", "no such file"),  # case counts: a type named Rope is not rope.rs
    ("index.js", "generic name"),  # a bare generic file name could be any index.js
    ("Node.js", "no such file"),  # a file name that is not in the tree never falls back to a stem
    ("tools", "directory without entry file"),  # a folder with no entry file is not guessed
    ("internal/bundler/bundler_test.go", "not source"),
    ("src/pip/_vendor/requests/__init__.py", "not source"),  # vendored code is never gold
    ("org", "plain word"),
    ("selection", "plain word"),  # a plain lowercase word is prose, not `selection.rs`
    ("Org", "generic name"),  # too short to be read as a stem
])
def test_names_that_do_not_resolve_say_why(name: str, why: str) -> None:
    assert TREE.resolve(name) == ([], why)


def test_stems_can_be_switched_off_for_contributing_guides() -> None:
    assert TREE.resolve("js_parser", stems=False)[0] == []
    assert TREE.resolve("internal/js_parser", stems=False)[0] == ["internal/js_parser/js_parser.go"]


def test_passages_are_paragraphs_list_items_and_table_rows_without_code_blocks() -> None:
    text = ("# Parser\n\nThe parser is in `js_parser`.\nIt does two passes.\n\n```go\nx := 1\n```\n"
            "- `bundler.go`: scans\n  and links\n- other item\n\n| `linker.go` | links parts |\n|---|---|\n")
    passages = split_passages(text)
    assert [(p.start, p.end, p.heading) for p in passages] == [(3, 4, "Parser"), (9, 10, "Parser"),
                                                               (11, 11, "Parser"), (13, 13, "Parser")]
    assert "x := 1" not in " ".join(p.text for p in passages)


def test_rst_headings_and_literal_blocks() -> None:
    text = "Overview\n========\n\nThe :mod:`pip._internal.cli` package parses::\n\n    pip install x\n\nDone here.\n"
    passages = split_passages(text)
    assert [(p.text, p.heading) for p in passages] == [
        ("The :mod:`pip._internal.cli` package parses::", "Overview"), ("Done here.", "Overview")]


def test_masking_hides_paths_names_and_gold_identifiers_but_keeps_plain_words() -> None:
    text = ("The parser lives in [js_parser.go](../internal/js_parser/js_parser.go); `js_parser.Parse()` "
            "calls the lexer in `internal/js_parser/js_lexer.go`, and the `ScanBundle` step runs first.")
    mentions = find_mentions(text)
    resolve_mentions(mentions, TREE, "docs")
    gold = sorted({f for m in mentions for f in m.files})
    assert gold == ["internal/js_parser/js_lexer.go", "internal/js_parser/js_parser.go"]
    masked = mask(text, mentions, {i for i, m in enumerate(mentions) if m.files}, gold)
    assert masked == f"The parser lives in {MASK}; {MASK} calls the lexer in {MASK}, and the ScanBundle step runs first."


def test_a_stray_gold_identifier_in_the_prose_is_masked_too() -> None:
    text = "`Lexer` tokenizes the input; Lexer also tracks positions, and every lexer emits tokens."
    mentions = find_mentions(text)
    resolve_mentions(mentions, TREE, "")
    masked = mask(text, mentions, {0}, ["lib/PhpParser/Lexer.php"])
    assert masked == f"{MASK} tokenizes the input; {MASK} also tracks positions, and every lexer emits tokens."


def test_candidates_keep_described_parts_and_count_the_drops() -> None:
    text = ("# Layout\n\n"
            "The scan phase traverses the dependency graph in parallel and parses every file; see `bundler.go`.\n\n"
            "- `bundler.go`\n\n"  # nothing left once masked
            "This paragraph names no file at all, only ideas about speed and caches.\n\n"
            "Both `strings.go` files hold helpers for strings and paths used everywhere in the tool.\n")
    plan = Plan("o/r", "c" * 40, "test")
    kept, dropped, _ = candidates(text, "docs/architecture.md", "architecture", TREE, plan)
    assert [(i.query, i.gold_paths, i.kind, i.doc_lines) for i in kept] == [
        (f"The scan phase traverses the dependency graph in parallel and parses every file; see {MASK}.",
         ["internal/bundler/bundler.go"], "file", [3, 3])]
    assert dropped == {"masking leaves too little": 1, "no mention": 1, "a name matches several files": 1}


def test_a_folder_readme_only_counts_files_in_its_own_folder() -> None:
    text = "The `Emulative` lexer extends `Lexer` to parse newer syntax on older PHP versions.\n"
    plan = Plan("o/r", "c" * 40, "test")
    kept, _, _ = candidates(text, "lib/PhpParser/Lexer/README.md", "folder-readme", TREE, plan)
    assert [i.gold_paths for i in kept] == [["lib/PhpParser/Lexer/Emulative.php"]]


def test_split_problems_refuse_a_repository_on_both_sides() -> None:
    gold = [GoldFile("a.go", "a.go", "path")]
    items = [Item("1", "o/r", "go", "test", "architecture", "file", "c", "d.md", [1, 1], "q", gold),
             Item("2", "o/r", "go", "train", "architecture", "file", "c", "d.md", [2, 2], "q", gold)]
    assert split_problems(items) == ["o/r is in both splits"]


def test_ndcg_and_hit_over_files() -> None:
    assert ndcg(["a"], ["a", "b"]) == 1.0
    assert ndcg(["a"], ["b", "a"]) == pytest.approx(1 / 1.5849625, rel=1e-6)
    assert ndcg(["a", "b"], ["b", "x", "a"]) == pytest.approx((1 + 0.5) / (1 + 1 / 1.5849625), rel=1e-6)
    assert score(["a"], ["x"] * 5 + ["a"]) == {"ndcg@10": pytest.approx(1 / 2.807354922, rel=1e-6),
                                              "hit@5": 0.0, "mrr@10": pytest.approx(1 / 6), "first_gold_rank": 6}
