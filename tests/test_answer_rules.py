"""The rules an answer is held to, as pure functions: citations written out, loops caught,
follow-ups told from new questions, max_tokens sized to the question, sources numbered."""

from __future__ import annotations

import pytest

from codeqa.chat.answer import (ANSWER_TOKENS, SHORT_ANSWER_TOKENS, Citations, LoopGuard, answer_token_limit,
                                cited_files, refers_back)
from codeqa.chat.chat_commands import parse_message
from codeqa.chat.packing import Definition, FileText, Source, Span, numbered_sources, pack

pytestmark = pytest.mark.unit

SOURCES = {1: Source(1, "shop/csv_parser.py", 9, 25, "Parser"), 2: Source(2, "shop/models.py", 23, 23, "Product.from_row")}


def stream_through(deltas: list[str], sources: dict[int, Source] = SOURCES) -> tuple[str, Citations]:
    citations = Citations(sources)
    shown = "".join(citations.feed(delta) for delta in deltas) + citations.flush()
    return shown, citations


@pytest.mark.parametrize("deltas", [
    ["`Parser.parse` splits each line [1]. Each row becomes a `Product` [2]."],
    ["`Parser.parse` splits each line ", "[", "1", "]", ". Each row becomes a `Product` [", "2].", ""],
    list("`Parser.parse` splits each line [1]. Each row becomes a `Product` [2]."),  # a character at a time
])
def test_markers_are_written_out_as_the_sources_path_and_lines_however_the_stream_splits_them(deltas):
    shown, citations = stream_through(deltas)
    assert shown == ("`Parser.parse` splits each line [shop/csv_parser.py:9-25]. Each row becomes a `Product` "
                     "[shop/models.py:23].")
    assert citations.dropped == 0
    assert cited_files(shown, SOURCES) == {"shop/csv_parser.py", "shop/models.py"}


def test_a_marker_naming_no_given_source_is_dropped_with_its_space_never_guessed():
    shown, citations = stream_through(["It parses rows [7]. It builds products [2][9]. Both [1, 8]."])
    assert shown == "It parses rows. It builds products [shop/models.py:23]. Both [shop/csv_parser.py:9-25]."
    assert citations.dropped == 3


def test_brackets_in_code_are_code_not_citations():
    text = "Use `rows[1]` or:\n```python\nfirst = rows[1]\nsecond = [2]\n```\nthen items[1] and f()[0] [1]."
    shown, citations = stream_through([text[i:i + 5] for i in range(0, len(text), 5)])
    assert shown == text.replace("f()[0] [1].", "f()[0] [shop/csv_parser.py:9-25].")
    assert citations.dropped == 0


def test_an_answer_without_markers_streams_unchanged_and_cites_nothing():
    text = "The parser reads each line and returns products. [see above]"
    shown, _ = stream_through([text])
    assert shown == text and cited_files(shown, SOURCES) == set()


def test_a_path_the_model_wrote_itself_counts_as_a_citation_only_for_a_given_file():
    assert cited_files("See shop/models.py:23 and shop/other.py:4.", SOURCES) == {"shop/models.py"}
    assert cited_files("See myshop/models.py:23.", SOURCES) == set()


def test_the_loop_guard_stops_a_repeated_paragraph_but_not_honest_code():
    guard = LoopGuard()
    paragraph = "The `invoke` method calls the callback with the context's parameters.\n\n"
    assert not guard.feed(paragraph) and not guard.feed(paragraph)
    assert guard.feed(paragraph)
    code = LoopGuard()
    honest = "```python\nif a:\n    return None\nif b:\n    return None\nif c:\n    return None\n```\n"
    assert not code.feed(honest)


def test_the_loop_guard_catches_a_loop_without_line_breaks_and_a_stuck_character():
    words = LoopGuard()
    loop = "and then it calls the handler which calls the view which returns the response "
    assert any(words.feed(word + " ") for word in (loop * 3).split())
    stuck = LoopGuard()
    assert stuck.feed("The answer is " + "!" * 80)
    assert not LoopGuard().feed("A normal sentence about `Flask.make_response` and its return value. " * 1)


FIRST = [{"role": "user", "content": "@codebase how is an order CSV parsed into products?"},
         {"role": "assistant", "content": "`Parser.parse` splits each line [shop/csv_parser.py:9-25]. "
                                          "`Product.from_row` builds each product [shop/models.py:23]."}]


@pytest.mark.parametrize("message", [
    "and what does it return?", "why?", "What does it do with an empty line?", "can you show an example?",
    "explain that in more detail", "what about quoted fields?", "Is from_row called for each row?",
    "And where is this function tested?", "so the delimiter is fixed?",
])
def test_follow_ups_get_the_earlier_turns(message):
    assert refers_back(parse_message(message), FIRST)


@pytest.mark.parametrize("message", [
    "How is the cart total computed?",  # a new question, no pointer back
    "Why would a required option with a default still error?",  # "why", but a whole question of its own
    "What does make_demo_cart build?",  # a symbol the conversation never named
    "and what does Cart.add do?",  # a continuation, but about a new symbol
    "@definition Cart.add what does it return?",  # brings its own code
    "@codebase and where is it tested?",  # a new search
    "What is the function that formats prices in the web code?",  # "that" as a relative pronoun
])
def test_new_questions_stand_alone(message):
    assert not refers_back(parse_message(message), FIRST)


def test_a_first_message_has_nothing_to_refer_to():
    assert not refers_back(parse_message("why?"), [])
    assert not refers_back(parse_message("why?"), [{"role": "user", "content": "hi"}])


@pytest.mark.parametrize(("question", "limit"), [
    ("Where is the session cookie signed?", SHORT_ANSWER_TOKENS),
    ("Which function registers blueprints?", SHORT_ANSWER_TOKENS),
    ("How does Flask pick an error handler?", ANSWER_TOKENS),
    ("Why would a required option with a default still error?", ANSWER_TOKENS),
    ("summarise this file", 512),
    ("Walk me through how a request is dispatched, step by step", 512),
    ("Write a test for Cart.add", 512),
])
def test_max_tokens_is_sized_to_the_question_within_the_cap(question, limit):
    assert answer_token_limit(question, 512) == limit
    assert answer_token_limit(question, 24) == 24


def _module() -> FileText:
    lines = ["import csv", "", "class Parser:", "    sep = ','", "", "    def parse(self, text):", "        rows = []",
             "        return rows", "", "    def close(self):", "        pass", "", "def helper():", "    return 1"]
    definitions = [Definition(3, 11, 3, 3, "Parser"), Definition(6, 8, 6, 6, "Parser.parse"),
                   Definition(10, 11, 10, 10, "Parser.close"), Definition(13, 14, 13, 13, "helper")]
    return FileText("pkg/parse.py", "python", lines, definitions)


def test_sources_are_numbered_with_their_lines_and_names_and_read_back_from_the_text():
    module = _module()
    spans = [Span(module.path, 6, 8, "@codebase", 0, frozenset({6})),  # Parser.parse, with its class header
             Span(module.path, 3, 3, "@codebase", 0, frozenset({3})),
             Span(module.path, 13, 14, "@codebase", 1, frozenset({13}))]
    packed = pack(spans, {module.path: module}, 1000)
    assert packed.sources == [Source(1, module.path, 6, 8, "Parser.parse"), Source(2, module.path, 13, 14, "helper")]
    assert numbered_sources(packed.text) == {1: packed.sources[0], 2: packed.sources[1]}
    first = packed.text.splitlines()[1:7]
    assert first == ["[1] pkg/parse.py:6-8  Parser.parse", "```python", "3|class Parser:", "...",
                     "6|    def parse(self, text):", "7|        rows = []"]
    assert packed.text.count("### pkg/parse.py (@codebase)") == 1


def test_a_class_header_alone_is_a_source_of_its_own_and_numbers_stay_within_budget():
    module = _module()
    header_only = pack([Span(module.path, 3, 3, "@definition Parser", 0, frozenset({3}))], {module.path: module}, 1000)
    assert header_only.sources == [Source(1, module.path, 3, 3, "")]
    many = {f"pkg/m{i}.py": FileText(f"pkg/m{i}.py", "python", _module().lines, _module().definitions)
            for i in range(12)}
    spans = [Span(path, 13, 14, "@codebase", i) for i, path in enumerate(many)]
    for budget in range(0, 700, 11):
        packed = pack(spans, many, budget)
        assert packed.tokens <= budget
        assert [s.number for s in packed.sources] == list(range(1, len(packed.sources) + 1))
    assert len(packed.sources) == 12 and "[12] pkg/m11.py:13-14  helper" in packed.text


def test_the_embedded_model_reads_fewer_sources_in_a_smaller_context_than_a_configured_one():
    from codeqa.chat.answer import SMALL_MODEL_SOURCES, ChatBudget
    from codeqa.core.config import Settings

    embedded = ChatBudget.from_settings(Settings(local_context_tokens=900, context_tokens=5000))
    assert (embedded.k, embedded.context_tokens) == (SMALL_MODEL_SOURCES, 900)
    remote = ChatBudget.from_settings(Settings(llm_base_url="http://llm/v1", local_context_tokens=900,
                                               context_tokens=5000))
    assert (remote.k, remote.context_tokens) == (8, 5000)
    assert ChatBudget.from_settings(Settings(), context_tokens=600).context_tokens == 600
