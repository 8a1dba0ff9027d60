"""Structural questions answered from the index ("what calls X?"): which questions are recognised,
what the exact lookup finds on the sample repo, what the model and the user are given."""

from __future__ import annotations

import json
import re

import pytest

from codeqa.chat.answer import answer_grammar, opening_source
from codeqa.chat.packing import FileText, Source, Span, estimate_tokens, numbered_sources, pack
from codeqa.chat.structural import Ask, FactItem, IndexFacts, look_up, recognise
from conftest import ROOT, index_fixture
from test_answer_stream import answer_text, ask, scripted, services  # noqa: F401

FACTS = ROOT / "eval" / "answers" / "facts.jsonl"
FLASK_QUESTIONS = ROOT / "eval" / "questions.jsonl"


def lines_of(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# --- Recognising them ------------------------------------------------------------------------------


@pytest.mark.unit
def test_every_structural_question_of_the_fact_eval_is_recognised_and_no_other_of_its_questions():
    for item in lines_of(FACTS):
        found = recognise(item["question"])
        if item["kind"] in ("callers", "callees"):
            assert found is not None and found.kind == item["kind"], item["question"]
            target = item["target"]["name"].replace("::", ".")
            written = found.name.replace("::", ".").removeprefix("app.")
            assert target.endswith(written) or written.endswith(target.rsplit(".", 1)[-1]), (found, target)
        else:
            assert found is None, item["question"]


@pytest.mark.unit
def test_the_flask_questions_stay_searches_but_where_is_a_named_function_implemented():
    fired = {q["id"]: recognise(q["query"]) for q in lines_of(FLASK_QUESTIONS)}
    assert {qid: ask for qid, ask in fired.items() if ask} == {
        "q32": Ask("definition", "send_from_directory", ())
    }


@pytest.mark.unit
@pytest.mark.parametrize(
    ("question", "kind", "name"),
    [
        ("What calls `Cart.add`?", "callers", "Cart.add"),
        ("who calls make_demo_cart", "callers", "make_demo_cart"),
        ("Which functions call Parser.parse?", "callers", "Parser.parse"),
        ("Where is `checkout` called?", "callers", "checkout"),
        ("Show me the callers of Cart::add", "callers", "Cart::add"),
        ("Where is Product.from_row used?", "uses", "Product.from_row"),
        ("What uses `Cart`?", "uses", "Cart"),
        ("What does `checkout` call?", "callees", "checkout"),
        ("What does chi's `Mux.Mount` call?", "callees", "Mux.Mount"),
        ("What does `log_impl` in the log crate's private API call?", "callees", "log_impl"),
        ("Which functions are called by Cart.total?", "callees", "Cart.total"),
        ("Where is Cart.add defined?", "definition", "Cart.add"),
        ("Where is `total`?", "definition", "total"),
        ("Which files import shop.models?", "imports", "shop.models"),
        ("What imports `./lib/utils.js`?", "imports", "./lib/utils.js"),
        ("Where is csv_parser imported?", "imports", "csv_parser"),
    ],
)
def test_questions_of_each_kind_are_recognised_with_the_name_they_ask_about(question, kind, name):
    found = recognise(question)
    assert found is not None and (found.kind, found.name) == (kind, name)


@pytest.mark.unit
@pytest.mark.parametrize(
    "question",
    [
        "What calls it?",  # a follow-up: no name
        "Where is the session cookie written to the response?",
        "Where is it decided how long browsers may cache static files?",
        "Where is total?",  # a plain word, not written as code
        "What does stream_with_context do?",
        "Why is Cart.add called twice?",
        "How does checkout call the parser?",
        "What is the call order of the request hooks?",
    ],
)
def test_other_questions_are_not_structural(question):
    assert recognise(question) is None


# --- What the model reads and where the answer opens -------------------------------------------------


def callers_of_add() -> IndexFacts:
    facts = IndexFacts(Ask("callers", "Cart.add"), "what calls Cart.add", target="`Cart.add` (shop/models.py:39-45)")
    facts.items = [
        FactItem("checkout", "shop/checkout.py", 14, 8, 15, "cart.add(product)"),
        FactItem("make_demo_cart", "shop/models.py", 62, 59, 64, "cart.add(...)", "name match"),
    ]
    facts.total = 2
    return facts


@pytest.mark.unit
def test_the_models_list_is_numbered_and_writes_each_item_as_path_and_line():
    block = callers_of_add().prompt_block()
    assert block.splitlines() == [
        "From the index (exact). What calls `Cart.add` (shop/models.py:39-45): 2 callers:",
        "1. `checkout` at shop/checkout.py:14",
        "2. `make_demo_cart` at shop/models.py:62 (name match)",
    ]
    assert numbered_sources(block) == {}  # never read back as a source header


@pytest.mark.unit
def test_a_long_list_is_cut_for_the_model_but_not_for_the_user():
    facts = callers_of_add()
    facts.items = [FactItem(f"f{n}", "a.py", n, n, n) for n in range(1, 16)]
    facts.total = 31
    block = facts.prompt_block()
    assert "10. `f10` at a.py:10" in block and "f11" not in block and "... and 21 more." in block
    event = facts.to_event()
    assert len(event["items"]) == 15 and event["total"] == 31


@pytest.mark.unit
def test_the_answer_opens_from_the_source_that_holds_the_first_item_else_from_the_first():
    sources = {
        1: Source(1, "shop/models.py", 39, 45, "Cart.add"),
        2: Source(2, "shop/checkout.py", 8, 15, "checkout"),
    }
    assert opening_source(sources, callers_of_add()) == 2
    assert opening_source(sources, None) == 1
    assert opening_source({}, callers_of_add()) is None
    elsewhere = callers_of_add()
    elsewhere.items = [FactItem("other", "other.py", 3, 1, 9)]
    assert opening_source(sources, elsewhere) == 1  # the list's code was not packed: the best code
    assert '"According to [2], "' in answer_grammar(2)
    assert "According" not in answer_grammar(None)
    facts = callers_of_add()
    facts.target_name = "Cart.add"
    assert facts.lead() == "`Cart.add` is called by "
    assert 'root ::= "According to [2], `Cart.add` is called by " text' in answer_grammar(2, facts.lead())
    assert 'root ::= "According to [1], say \\"hi\\" " text' in answer_grammar(1, 'say "hi" ')


@pytest.mark.unit
@pytest.mark.parametrize("budget", [60, 120, 400])
def test_the_list_goes_last_next_to_the_question_and_the_budget_holds(budget):
    code = [f"def f{n}(x):" if n % 5 == 1 else f"    x = x + {n}" for n in range(1, 60)]
    files = {"a.py": FileText("a.py", "python", code)}
    block = callers_of_add().prompt_block()
    packed = pack([Span("a.py", 1, 59, "@codebase", 0, frozenset({1}))], files, budget, ["a note"], block)
    assert packed.tokens <= budget
    if estimate_tokens(block) <= budget:
        assert packed.text.endswith(block)
    else:
        assert block not in packed.text


# --- The lookup on the sample repo, through the chat -------------------------------------------------


def facts_event(events) -> dict | None:
    return next((data for name, data in events if name == "facts"), None)


@pytest.mark.integration
def test_what_calls_a_method_lists_each_caller_from_the_index_for_the_model_and_the_user(services, scripted):
    _, llm = scripted
    llm.replies = [("It is called when an order is checked out.", "stop")]
    events = ask(services, "@codebase What calls `Cart.add`?")
    names = [name for name, _ in events]
    assert names.index("sources") < names.index("facts") < names.index("token")
    listed = facts_event(events)
    assert listed["kind"] == "callers" and listed["total"] == 2
    assert [(i["name"], i["file_path"], i["line"], i["start_line"], i["end_line"]) for i in listed["items"]] == [
        ("checkout", "shop/checkout.py", 14, 8, 15),
        ("make_demo_cart", "shop/models.py", 62, 59, 64),
    ]
    system = llm.requests[-1]["messages"][0]["content"]
    assert "1. `checkout` at shop/checkout.py:14\n2. `make_demo_cart` at shop/models.py:62" in system
    assert system.index("2. `make_demo_cart`") > system.index("[1] ")  # after the sources, next to the question
    sources = next(data for name, data in events if name == "sources")["results"]
    assert {(s["file_path"], s["start_line"]) for s in sources if s["source"] == "what calls Cart.add"} == {
        ("shop/checkout.py", 14),
        ("shop/models.py", 62),
    }
    stored = services.store.history("u1", "sample")[-1]
    assert stored["facts"] == listed  # shown again when the history is read


@pytest.mark.integration
def test_what_a_function_calls_comes_from_the_references_in_its_own_lines(services, scripted):
    events = ask(services, "@codebase What does `checkout` call?")
    listed = facts_event(events)
    assert listed["kind"] == "callees"
    called = {i["name"]: i for i in listed["items"]}
    assert {"Parser.parse", "Cart.add", "Cart.total"} <= set(called)
    assert called["Cart.add"]["note"] == "called at line 14"
    assert (called["Cart.add"]["file_path"], called["Cart.add"]["start_line"]) == ("shop/models.py", 39)
    assert [i["name"] for i in listed["items"]].index("Parser.parse") < [i["name"] for i in listed["items"]].index(
        "Cart.total"
    )  # in the order they are called


@pytest.mark.integration
def test_where_a_name_is_defined_and_which_files_import_a_module(services, scripted):
    defined = facts_event(ask(services, "@codebase Where is `Cart.total` defined?"))
    assert {(i["name"], i["file_path"], i["start_line"], i["end_line"]) for i in defined["items"]} == {
        ("Cart.total", "shop/models.py", 47, 52),
        ("Cart.total", "web/js/cart.js", 31, 33),
    }
    imported = facts_event(ask(services, "@codebase Which files import shop.models?"))
    assert imported["kind"] == "imports"
    assert ("shop/checkout.py", 4) in {(i["file_path"], i["line"]) for i in imported["items"]}
    assert all(re.search(r"\bimport\b", i["text"]) for i in imported["items"])


@pytest.mark.integration
def test_a_question_that_is_not_structural_or_names_nothing_indexed_gets_no_list(services, scripted):
    _, llm = scripted
    assert facts_event(ask(services, "@codebase how is an order CSV parsed into products?")) is None
    assert facts_event(ask(services, "@codebase What calls `no_such_function_anywhere`?")) is None
    assert "From the index" not in llm.requests[-1]["messages"][0]["content"]
    assert facts_event(ask(services, "What calls `Cart.add`?")) is None  # no @codebase: the context is reused


@pytest.mark.integration
def test_the_embedded_models_answer_to_what_calls_opens_from_the_callers_code(
    indexed_sample, redis_server, embedded_settings, embedded_server
):
    from codeqa.chat.answer import ChatBudget, ChatService, ChatTurn
    from codeqa.llm.client import LLMClient
    from codeqa.services import Services

    settings, _ = indexed_sample
    chat_settings = settings.__class__(data_dir=settings.data_dir, redis_url=redis_server.url, llm_timeout=300.0)
    llm = LLMClient(embedded_settings, server=embedded_server)
    with Services(chat_settings) as found:
        chat = ChatService(found.context, found.store, llm, ChatBudget(context_tokens=700, answer_tokens=120, k=3))
        events = list(chat.run(ChatTurn(user="u2", repo="sample", message="@codebase what calls Cart.add?")))
        stored = found.store.load_context("u2", "sample")
    first = facts_event(events)["items"][0]
    holding = [
        s
        for s in numbered_sources(stored.text).values()
        if s.path == first["file_path"] and s.start <= first["line"] <= s.end
    ]
    assert holding and answer_text(events).startswith(f"According to [{holding[0].citation}], `Cart.add` is called by ")


@pytest.mark.integration
def test_what_a_function_calls_lists_the_names_it_cannot_resolve_too(services, scripted):
    _, llm = scripted
    listed = facts_event(ask(services, "@codebase What does `Cart.cheapest` call?"))
    assert listed["kind"] == "callees" and listed["items"] == []
    assert {"list", "min", "values"} <= set(listed["external"])
    assert "Also called (not resolved to one definition here): " in llm.requests[-1]["messages"][0]["content"]


@pytest.mark.integration
def test_a_value_read_is_neither_a_call_of_the_value_nor_a_callee(tmp_path_factory):
    """Value reads are references too (`read`): "what calls" and "what does X call" leave them out."""
    from codeqa.services import Services

    repo = tmp_path_factory.mktemp("reads") / "repo"
    (repo / "app").mkdir(parents=True)
    (repo / "app" / "rates.py").write_text(
        "TAX_RATE = 0.2\n\n\ndef rounded(value):\n    return round(value, 2)\n\n\n"
        "def with_tax(amount):\n    return rounded(amount * (1 + TAX_RATE))\n"
    )
    settings = index_fixture(tmp_path_factory, repo, "reads")
    with Services(settings) as found:
        lookup = found.commands.lookup(found.repo("reads"))
        callees = look_up(lookup, Ask("callees", "with_tax"), 0.0)
        callers = look_up(lookup, Ask("callers", "TAX_RATE"), 0.0)
        uses = look_up(lookup, Ask("uses", "TAX_RATE"), 0.0)
    assert [item.name for item in callees.items] == ["rounded"]
    assert "TAX_RATE" not in callees.external
    assert callers.items == []
    assert [(item.name, item.line) for item in uses.items] == [("with_tax", 9)]
