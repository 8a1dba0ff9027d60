"""The fact eval's data, scorer, label checker and runner's pure parts
(run: .venv/bin/python -m pytest eval/answers/test_facts.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from eval.answers import check_facts, facts, facts_run
from eval.answers.facts import parse_item

pytestmark = pytest.mark.unit

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "facts_repo"
MODELS, CHECKOUT, LEDGER = "shop/models.py", "shop/checkout.py", "shop/ledger.rb"


def make(kind: str = "how", fact_list: list[dict] | None = None, **extra) -> facts.Item:
    raw = {"id": "t-1", "repo": "o/shop", "language": "python", "kind": kind, "question": "q?", "source": "test",
           "facts": fact_list or [{"kind": "name", "name": "Cart.total", "path": MODELS, "lines": [15, 17]}], **extra}
    return parse_item(raw)


def name(value: str, tail: bool = False, **more) -> dict:
    return {"kind": "name", "name": value, "path": MODELS, "lines": [1, 22], "tail": tail, **more}


def found(item: facts.Item, answer: str) -> list[bool]:
    return facts.answer_facts(item, answer)


# --- The data set --------------------------------------------------------------------------------


def test_the_set_has_80_questions_over_8_repositories_and_12_of_each_kind():
    items = facts.load_items()
    repos = facts.load_repos()
    assert len(items) >= 80
    assert len({i.repo for i in items}) >= 8
    assert len({i.language for i in items}) >= 6
    kinds = Counter(i.kind for i in items)
    assert set(kinds) == set(facts.KINDS) and min(kinds.values()) >= 12, kinds
    assert {i.repo for i in items} <= set(repos)
    assert all(len(r.commit) == 40 for r in repos.values())
    assert all(i.language == repos[i.repo].language for i in items)


def test_every_callers_item_says_where_its_callers_were_searched_and_every_item_has_a_source():
    for item in facts.load_items():
        assert item.source.strip()
        if item.kind in facts.STRUCTURAL:
            assert item.target is not None and item.complete is not None
        if item.kind == "callers":
            assert item.scope


def test_a_callers_item_without_a_target_or_scope_is_refused():
    with pytest.raises(ValueError, match="target"):
        make("callers")
    with pytest.raises(ValueError, match="scope"):
        make("callers", target={"name": "Cart.add", "path": MODELS, "lines": [10, 13]}, complete=True)


def test_bad_line_ranges_and_unknown_fields_are_refused():
    with pytest.raises(ValueError, match="lines"):
        make(fact_list=[{"kind": "path_line", "path": MODELS, "lines": [9, 3]}])
    with pytest.raises(ValueError, match="unknown"):
        make(fact_list=[{"kind": "path", "path": MODELS, "line": 3}])
    with pytest.raises(ValueError, match="needs"):
        make(fact_list=[{"kind": "value", "value": "0.2"}])


# --- Matching names ------------------------------------------------------------------------------


def test_a_name_counts_as_a_whole_word_with_backticks_and_qualifiers_around_it():
    item = make(fact_list=[name("total")])
    assert found(item, "It is `total`.") == [True]
    assert found(item, "see self.total() and Cart.total") == [True]
    assert found(item, "the subtotal and totals") == [False]
    assert found(item, "Total") == [False]  # case matters


def test_a_qualified_name_needs_its_qualifier_unless_the_tail_suffices():
    strict, tail = make(fact_list=[name("Cart.total")]), make(fact_list=[name("Cart.total", tail=True)])
    assert found(strict, "`Cart.total` sums the lines") == [True]
    assert found(strict, "`total` sums the lines") == [False]
    assert found(tail, "`total` sums the lines") == [True]
    assert found(strict, "MyCart.total") == [False]


def test_qualifier_separators_read_alike():
    assert found(make(fact_list=[name("Version.Get")]), "calls `Version::Get`") == [True]
    assert found(make(fact_list=[name("Ky.#calculateDelay")]), "in Ky.#calculateDelay") == [True]
    assert found(make(fact_list=[name("Ky.#calculateDelay", tail=True)]), "`#calculateDelay()`") == [True]
    assert found(make(fact_list=[name("Request.perform")]), "Request#perform") == [True]
    assert found(make(fact_list=[name("Mux.Mount")]), "(*Mux).Mount") == [True]


def test_a_ruby_predicate_may_lose_its_question_mark():
    item = make(fact_list=[name("ssl_implied?")])
    assert found(item, "it calls ssl_implied? first") == [True]
    assert found(item, "it calls `ssl_implied` first") == [True]
    assert found(item, "ssl_implied_by") == [False]


def test_a_cited_file_name_is_not_an_identifier_or_a_value():
    item = make(fact_list=[name("timeout"), {"kind": "value", "value": "9", "path": MODELS, "lines": [1, 2]}])
    assert found(item, "See source/utils/timeout.ts:9-32 [2].") == [False, False]
    assert found(item, "timeout fires after 9 s") == [True, True]


# --- Matching citations and paths -----------------------------------------------------------------


def test_a_citation_counts_inside_or_overlapping_the_gold_range_only():
    item = make(fact_list=[{"kind": "path_line", "path": "src/shop/models.py", "lines": [15, 17]}])
    assert found(item, "It is computed in src/shop/models.py:16.") == [True]
    assert found(item, "[src/shop/models.py:10-15]") == [True]
    assert found(item, "(src/shop/models.py:17-40)") == [True]
    assert found(item, "src/shop/models.py:14") == [False]
    assert found(item, "src/shop/models.py:18-20") == [False]
    assert found(item, "src/shop/checkout.py:16") == [False]


def test_a_citation_may_drop_or_add_leading_folders_at_a_slash():
    item = make(fact_list=[{"kind": "path_line", "path": "src/shop/models.py", "lines": [15, 17]}])
    assert found(item, "shop/models.py:16") == [True]
    assert found(item, "repo/src/shop/models.py:16") == [True]
    assert found(item, "hop/models.py:16") == [False]


def test_a_path_fact_counts_down_to_the_file_name():
    item = make(fact_list=[{"kind": "path", "path": "src/click/utils.py"}])
    assert found(item, "It lives in `utils.py`.") == [True]
    assert found(item, "see click/utils.py:600") == [True]
    assert found(item, "see _utils.py or utils.pyc") == [False]


# --- Matching values ------------------------------------------------------------------------------


def test_a_value_matches_normalised_with_number_boundaries():
    item = make(fact_list=[{"kind": "value", "value": "15", "path": MODELS, "lines": [1, 2]}])
    assert found(item, "every 15 seconds") == [True]
    assert found(item, "`15`.") == [True]
    assert found(item, "150 or 15.5 or 2015") == [False]


def test_a_value_is_case_and_quote_insensitive_and_alternatives_count():
    item = make(fact_list=[{"kind": "value", "value": "X-Forwarded-Proto", "path": MODELS, "lines": [1, 2]},
                           {"kind": "value", "value": "16 KB", "alts": ["16384"], "path": MODELS, "lines": [1, 2]}])
    assert found(item, "the 'x-forwarded-proto' header, over 16384 bytes") == [True, True]
    assert found(item, "the `X-Forwarded-Protocol` header, 16 kb") == [False, True]


# --- Per item ------------------------------------------------------------------------------------


def test_facts_about_one_caller_count_once_and_complete_lists_need_every_caller():
    item = make("callers", [
        {"kind": "name", "name": "checkout", "path": CHECKOUT, "lines": [4, 9], "about": "checkout"},
        {"kind": "path_line", "path": CHECKOUT, "lines": [4, 9], "about": "checkout"},
        {"kind": "name", "name": "restock", "path": MODELS, "lines": [20, 22], "about": "restock"}],
        target={"name": "Cart.add", "path": MODELS, "lines": [10, 13]}, complete=True, scope="^shop/")
    one = facts.score(item, found(item, "checkout calls it at shop/checkout.py:7"))
    assert (one.has_fact, one.entities_found, one.entities_total, one.has_all) == (True, 1, 2, False)
    both = facts.score(item, found(item, "`checkout` and `restock`"))
    assert both.has_all and both.entity_share == 1.0
    none = facts.score(item, found(item, "Nothing calls it."))
    assert not none.has_fact and none.entities_found == 0


# --- The context ---------------------------------------------------------------------------------

CONTEXT = """Notes:
- Cart.add is called at shop/checkout.py:7
### shop/models.py (definition)
[1] shop/models.py:6-17  Cart
6|class Cart:
...
15|    def total(self):
16|        net = sum(price * qty for _, price, qty in self.lines)
...
"""


def test_the_context_holds_a_range_only_where_a_line_of_it_was_shown():
    item = make(fact_list=[{"kind": "path_line", "path": MODELS, "lines": [15, 17]},
                           {"kind": "path_line", "path": MODELS, "lines": [10, 13]},
                           {"kind": "path_line", "path": CHECKOUT, "lines": [4, 9]},
                           {"kind": "path", "path": MODELS}, {"kind": "path", "path": CHECKOUT}])
    assert facts.context_facts(item, CONTEXT) == [True, False, True, True, False]


def test_the_context_matches_names_and_values_in_its_code_not_its_headers():
    item = make(fact_list=[name("Cart"), name("lines"), name("restock"),
                           {"kind": "value", "value": "17", "path": MODELS, "lines": [1, 2]}])
    assert facts.context_facts(item, CONTEXT) == [True, True, False, False]


def test_a_context_without_numbered_lines_falls_back_on_its_headers():
    item = make(fact_list=[{"kind": "path_line", "path": MODELS, "lines": [15, 17]}])
    assert facts.context_facts(item, "[1] shop/models.py:6-17  Cart\nclass Cart: ...") == [True]
    assert facts.context_facts(item, "[1] shop/models.py:1-5  TAX_RATE\nTAX_RATE = 0.2") == [False]


# --- Tables --------------------------------------------------------------------------------------


def row(kind: str, answer: bool, context: bool, repo: str = "o/a", complete: bool | None = None, first: float = 1.0) -> dict:
    return {"kind": kind, "repo": repo, "language": "python", "answer_has_fact": answer, "context_has_fact": context,
            "answer_entities": [int(answer), 1], "answer_has_all": answer if complete else None,
            "context_facts": ["x"] if context else [], "context_has_lines": context if kind == "how" else None,
            "first_token_s": first, "total_s": first * 2, "id": f"{kind}-{answer}"}


def test_the_summary_rates_answers_over_all_items_and_over_those_whose_context_held_a_fact():
    rows = [row("how", True, True), row("how", False, True), row("how", False, False), row("callers", True, True, complete=True)]
    values = facts.summary(rows)
    assert values["answer has a fact"] == "0.50 (2/4)"
    assert values["context has a fact"] == "0.75 (3/4)"
    assert values["answer given context"] == "0.67 (2/3)"
    assert values["context shows gold lines"] == "0.67 (2/3)"  # over the three items with a gold range
    assert values["all (complete lists)"] == "1.00 (1/1)"
    assert values["first token p50 s"] == "1.0"


def test_the_kind_table_has_a_line_per_kind_then_the_structural_kinds_then_all():
    rows = [row("why", True, True), row("callers", False, True), row("callees", True, False)]
    lines = facts.table(rows, "kind").splitlines()
    labels = [line.split("|")[1].strip() for line in lines[2:]]
    assert labels == ["callers", "callees", "why", "structural (callers + callees)", "all"]
    assert "0.50 (1/2)" in lines[5]  # structural: one of two answers holds a fact
    assert all(line.count("|") == len(facts.TABLE_COLUMNS) + 2 for line in lines)  # no stray column


# --- The runner's pure parts -------------------------------------------------------------------------


def items_of(spec: list[tuple[str, str]]) -> list[facts.Item]:
    out = []
    for n, (repo, kind) in enumerate(spec):
        extra = {"target": {"name": "f", "path": "a.py", "lines": [1, 2]}, "complete": False, "scope": "."} \
            if kind in facts.STRUCTURAL else {}
        out.append(parse_item({"id": f"i{n}", "repo": repo, "language": "python", "kind": kind, "question": "q",
                               "source": "s", "facts": [{"kind": "path", "path": "a.py"}], **extra}))
    return out


def test_a_per_repo_slice_takes_each_kind_in_turn_and_keeps_file_order():
    items = items_of([("o/a", "why"), ("o/a", "why"), ("o/a", "how"), ("o/a", "callers"), ("o/b", "why")])
    picked = facts_run.select(items, per_repo=3)
    assert [i.id for i in picked] == ["i0", "i2", "i3", "i4"]
    assert [i.id for i in facts_run.select(items, repos=["o/a"], kinds=["why"])] == ["i0", "i1"]


def test_an_answer_row_times_the_first_token_and_scores_answer_and_context():
    item = make(fact_list=[name("total"), {"kind": "path_line", "path": MODELS, "lines": [15, 17]}])
    events = [("sources", {"results": [{"file_path": MODELS, "start_line": 15, "end_line": 17, "qualified_name": "Cart.total",
                                        "vector": [0.1]}]}, 10.5),
              ("token", {"text": "It is "}, 11.0), ("token", {"text": "`total` [shop/models.py:15-17]."}, 12.0),
              ("done", {"prompt_tokens": 900}, 12.5)]
    result = facts_run.answer_row(item, events, CONTEXT, started=10.0)
    assert result["first_token_s"] == 1.0 and result["total_s"] == 2.5
    assert result["answer"] == "It is `total` [shop/models.py:15-17]."
    assert result["sources"] == [{"file_path": MODELS, "start_line": 15, "end_line": 17, "qualified_name": "Cart.total"}]
    assert result["answer_has_fact"] and result["answer_facts"] == ["total", f"{MODELS}:15-17"]
    assert result["context_facts"] == ["total", f"{MODELS}:15-17"] and result["context_has_lines"] is True


def test_an_answer_that_never_streamed_has_no_first_token():
    result = facts_run.answer_row(make(), [("error", {"message": "boom"}, 10.2), ("done", {}, 10.3)], "", started=10.0)
    assert result["first_token_s"] is None and result["errors"] == ["boom"] and not result["answer_has_fact"]


def test_the_report_lists_the_models_misses():
    run = {"label": "base", "commit": "abc", "llm": "embedded", "load": [1.0, 1.0, 1.0],
           "rows": [row("how", False, True), row("why", True, True)]}
    assert facts_run.misses(run) == ["- how-False (how): context had x"]
    text = facts_run.report_tables(run)
    assert text.startswith("### base (abc, embedded): 2 questions")
    assert "| repo |" in text and "| language |" in text


# --- The label checker, on the committed fixture ------------------------------------------------------


@pytest.fixture(scope="module")
def snap() -> check_facts.Snapshot:
    return check_facts.Snapshot(FIXTURE, None)


def problems(snap: check_facts.Snapshot, item: facts.Item) -> list[str]:
    return check_facts.check_item(snap, item).problems


def test_true_facts_pass(snap):
    item = make("location", [
        {"kind": "name", "name": "Cart.total", "path": MODELS, "lines": [15, 17], "definition": True},
        {"kind": "path_line", "path": MODELS, "lines": [15, 17], "symbol": "Cart.total"},
        {"kind": "value", "value": "0.2", "path": MODELS, "lines": [3, 3]},
        {"kind": "name", "name": "TAX_RATE", "path": MODELS, "lines": [17, 17]}, {"kind": "path", "path": CHECKOUT}])
    assert problems(snap, item) == []


def test_wrong_facts_are_caught(snap):
    item = make("location", [
        {"kind": "name", "name": "Cart.total", "path": MODELS, "lines": [15, 18], "definition": True},
        {"kind": "path_line", "path": MODELS, "lines": [10, 13], "symbol": "Cart.total"},
        {"kind": "value", "value": "0.3", "path": MODELS, "lines": [3, 3]},
        {"kind": "name", "name": "TAX_RATE", "path": MODELS, "lines": [15, 16]},
        {"kind": "path_line", "path": MODELS, "lines": [20, 99]}, {"kind": "path", "path": "shop/missing.py"}])
    found_problems = problems(snap, item)
    assert len(found_problems) == 6, found_problems
    assert "no definition Cart.total" in found_problems[0] and "found: Cart.total 15-17" in found_problems[0]
    assert "past the file's end" in found_problems[4]


def callers_item(callers: list[tuple[str, str, list[int]]], complete: bool = True, **extra) -> facts.Item:
    fact_list = [{"kind": "name", "name": n, "path": p, "lines": lines, "about": n} for n, p, lines in callers]
    return make("callers", fact_list, target={"name": "Cart.add", "path": MODELS, "lines": [10, 13]},
                complete=complete, scope="^shop/.*\\.py$", **extra)


def test_a_complete_list_of_callers_passes_and_comments_are_not_calls(snap):
    item = callers_item([("checkout", CHECKOUT, [4, 9]), ("restock", MODELS, [20, 22])])
    assert problems(snap, item) == []
    sites = check_facts.call_sites(snap, item)
    assert sorted((s.path, s.line, s.caller) for s in sites) == [
        (CHECKOUT, 7, "checkout"), (MODELS, 21, "restock"), (MODELS, 22, "restock")]


def test_a_caller_left_out_of_a_complete_list_or_one_that_does_not_call_is_caught(snap):
    missing = problems(snap, callers_item([("checkout", CHECKOUT, [4, 9])]))
    assert len(missing) == 1 and "restock" in missing[0]
    assert problems(snap, callers_item([("checkout", CHECKOUT, [4, 9])], complete=False)) == []
    wrong = problems(snap, callers_item([("checkout", CHECKOUT, [4, 9]), ("restock", MODELS, [20, 22]),
                                         ("Cart.total", MODELS, [15, 17])]))
    assert len(wrong) == 1 and "no call of add" in wrong[0]
    assert problems(snap, callers_item([("checkout", CHECKOUT, [4, 9])], ignore=["restock"])) == []


def test_ruby_calls_without_parentheses_are_found_as_words(snap):
    item = make("callers", [{"kind": "name", "name": "Ledger.record", "path": LEDGER, "lines": [2, 5], "about": "r"}],
                target={"name": "Ledger.validate", "path": LEDGER, "lines": [7, 9]}, complete=True,
                scope="\\.rb$", call="word")
    assert problems(snap, item) == []
    paren = make("callers", [{"kind": "name", "name": "Ledger.record", "path": LEDGER, "lines": [2, 5], "about": "r"}],
                 target={"name": "Ledger.validate", "path": LEDGER, "lines": [7, 9]}, complete=True, scope="\\.rb$")
    assert any("no call of validate" in p for p in problems(snap, paren))


def test_callees_must_be_called_inside_the_target_and_a_complete_list_names_every_call(snap):
    def callees(names: list[tuple[str, list[int]]], complete: bool) -> facts.Item:
        return make("callees", [{"kind": "name", "name": n, "path": CHECKOUT, "lines": lines} for n, lines in names],
                    target={"name": "checkout", "path": CHECKOUT, "lines": [4, 9]}, complete=complete)

    assert problems(snap, callees([("Cart", [5, 5]), ("add", [7, 7]), ("total", [9, 9])], True)) == []
    assert any("body also calls: total" in p for p in problems(snap, callees([("Cart", [5, 5]), ("add", [7, 7])], True)))
    assert any("no call of it" in p for p in problems(snap, callees([("add", [5, 5])], False)))
    assert any("not inside" in p for p in problems(snap, callees([("add", [1, 1])], False)))


def test_the_command_checks_a_bare_mirror_at_a_pinned_commit(tmp_path, capsys):
    work = tmp_path / "work"
    shutil.copytree(FIXTURE, work)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q", str(work)], check=True)
    subprocess.run([*git, "-C", str(work), "add", "."], check=True)
    subprocess.run([*git, "-C", str(work), "commit", "-qm", "fixture"], check=True)
    commit = subprocess.run(["git", "-C", str(work), "rev-parse", "HEAD"], capture_output=True, text=True,
                            check=True).stdout.strip()
    (work / MODELS).write_text("# changed after the pinned commit\n")  # the work tree must not be read
    mirror = tmp_path / "mirror"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(mirror / "o+shop" / "repo")], check=True)
    (tmp_path / "repos.json").write_text(json.dumps({"o/shop": {"commit": commit, "language": "python",
                                                                "url": "x", "source_files": 3}}))
    good = {"id": "ok-1", "repo": "o/shop", "language": "python", "kind": "callers", "question": "What calls add?",
            "source": "t", "target": {"name": "Cart.add", "path": MODELS, "lines": [10, 13]}, "complete": True,
            "scope": "^shop/", "facts": [{"kind": "name", "name": "checkout", "path": CHECKOUT, "lines": [4, 9], "about": "c"},
                                         {"kind": "name", "name": "restock", "path": MODELS, "lines": [20, 22], "about": "r"}]}
    bad = {**good, "id": "bad-1", "facts": good["facts"][:1]}
    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps(good) + "\n")
    args = ["--mirror", str(tmp_path / "mirror"), "--items", str(items), "--repos", str(tmp_path / "repos.json")]
    assert check_facts.main(args) == 0
    assert "1 of 1 items pass" in capsys.readouterr().out
    items.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    assert check_facts.main(args) == 1
    out = capsys.readouterr().out
    assert "FAIL bad-1" in out and "restock" in out


def test_a_fact_about_a_checkout_made_of_the_mirror(tmp_path):
    """The runner's checkout is the commit's files (`git archive`), whatever the mirror's HEAD."""
    work = tmp_path / "w"
    shutil.copytree(FIXTURE, work)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q", str(work)], check=True)
    subprocess.run([*git, "-C", str(work), "add", "."], check=True)
    subprocess.run([*git, "-C", str(work), "commit", "-qm", "one"], check=True)
    first = subprocess.run(["git", "-C", str(work), "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    (work / MODELS).write_text("# two\n")
    subprocess.run([*git, "-C", str(work), "commit", "-qam", "two"], check=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(tmp_path / "m" / "o+shop" / "repo")], check=True)
    repo = facts.Repo("o/shop", first, "python", "x", 3)
    root = facts_run.checkout(repo, tmp_path / "m", tmp_path / "cache")
    assert (root / MODELS).read_text().startswith('"""A tiny shop')
    assert facts_run.checkout(repo, tmp_path / "m", tmp_path / "cache") == root  # made once


def test_a_stored_run_is_scored_again_with_the_current_gold():
    item = make(fact_list=[name("total")])
    run = {"rows": [{"id": "t-1", "answer": "`total` does it", "context": "", "answer_has_fact": False},
                    {"id": "gone", "answer": "", "context": ""}]}
    facts_run.rescore(run, {"t-1": item})
    assert len(run["rows"]) == 1 and run["rows"][0]["answer_has_fact"] is True
