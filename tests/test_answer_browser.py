"""An answer's citations and notices as a user sees them, in real Chromium against the production
server, with a scripted OpenAI-compatible endpoint writing the answer."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import SAMPLE_REPO, http_server, settings_for
from test_answer_stream import ScriptedLLM
from test_browser import (CHROMIUM, ask, browser_type_launch_args, expect, last_assistant, serve, shot,  # noqa: F401
                          stop, wait_answer_done)

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Chromium is not installed (make browser)")]


def test_a_cited_answer_cut_at_its_limit_links_its_sources_and_says_where_it_was_cut(page, tmp_path):
    from codeqa.indexing.indexer import index_repo

    data_dir = tmp_path / "data"
    index_repo(SAMPLE_REPO, settings_for(data_dir), name="sample", progress=False)
    llm = ScriptedLLM()
    llm.replies = [("`Parser.parse` splits the order text into rows [1]. Each row", "length")]
    with http_server(llm.handle) as (llm_url, _):
        proc, base = serve(data_dir, llm_url)
        try:
            page.goto(base)
            ask(page, "@codebase how is an order CSV parsed into products?")
            wait_answer_done(page)
            answer = last_assistant(page)
            citation = answer.get_by_test_id("citation").first
            expect(citation).to_be_visible()
            assert citation.get_attribute("data-file").endswith(".py")
            assert "[1]" not in answer.get_by_test_id("answer").inner_text()
            cut = answer.locator("[data-testid=notice][data-code=cut]")
            limit = llm.requests[-1]["max_tokens"]
            expect(cut).to_contain_text(f"Answer cut at {limit} tokens")
            shot(page, "answer-cited-and-cut")
            citation.click()
            expect(page.get_by_test_id("snippet-viewer")).to_contain_text(citation.get_attribute("data-file"))
            page.keyboard.press("Escape")
            page.reload()  # the answer as stored, read back: its citations are still links
            expect(last_assistant(page).get_by_test_id("citation").first).to_be_visible()
        finally:
            stop(proc)


def test_an_answer_citing_nothing_shows_that_it_cites_no_source(page, tmp_path):
    from codeqa.indexing.indexer import index_repo

    data_dir = tmp_path / "data"
    index_repo(SAMPLE_REPO, settings_for(data_dir), name="sample", progress=False)
    llm = ScriptedLLM()
    llm.replies = [("The parser turns the order into products.", "stop")]
    with http_server(llm.handle) as (llm_url, _):
        proc, base = serve(data_dir, llm_url)
        try:
            page.goto(base)
            ask(page, "@codebase how is an order CSV parsed into products?")
            wait_answer_done(page)
            answer = last_assistant(page)
            expect(answer.locator("[data-testid=notice][data-code=uncited]")).to_contain_text("cites no source")
            assert answer.get_by_test_id("citation").count() == 0
            shot(page, "answer-uncited")
        finally:
            stop(proc)


def test_what_the_index_says_about_a_structural_question_is_a_list_of_links_whatever_the_answer_says(
        page, tmp_path):
    from codeqa.indexing.indexer import index_repo

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "lib.py").write_text("def helper(x):\n    return x + 1\n", encoding="utf-8")
    weird = "we<b>ird.py"  # a file name is repository text: shown as text, never as markup
    (repo / weird).write_text("from lib import helper\n\n\ndef caller():\n    return helper(2)\n", encoding="utf-8")
    data_dir = tmp_path / "data"
    index_repo(repo, settings_for(data_dir), name="repo", progress=False)
    llm = ScriptedLLM()
    llm.replies = [("It is called once.", "stop")]  # names no caller: the list still does
    with http_server(llm.handle) as (llm_url, _):
        proc, base = serve(data_dir, llm_url)
        try:
            page.goto(base)
            ask(page, "@codebase what calls `helper`?")
            wait_answer_done(page)
            facts = last_assistant(page).get_by_test_id("facts")
            expect(facts).to_have_attribute("data-kind", "callers")
            item = facts.get_by_test_id("fact")
            expect(item).to_have_count(1)
            assert item.get_attribute("data-file") == weird and item.get_attribute("data-start") == "5"
            expect(item).to_contain_text(f"{weird}:5")
            assert facts.locator("b").count() == 0
            shot(page, "answer-facts-list")
            item.click()
            expect(page.get_by_test_id("snippet-viewer")).to_contain_text("return helper(2)")
            page.keyboard.press("Escape")
            page.reload()  # the list is stored with the answer and shown again
            expect(last_assistant(page).get_by_test_id("fact")).to_have_count(1)
        finally:
            stop(proc)
