"""Exact names first and scores that read in rank order, on real indexes, through every face
that shows them: the Python search API, the web API, the CLI's JSON and MCP.

The exact-names fixture is shaped like click: `colordemo` is a function of an example, while
a library module and a docs page mention the word far more often."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT, settings_for
from mcp_client import mcp_session
from codeqa.search.retrieval import Retriever
from codeqa.search.options import SearchOptions

pytestmark = pytest.mark.integration

FIXTURE = ROOT / "tests" / "fixtures" / "exact_names"
QUERIES = ["colordemo", "view", "view.js", "how are colors styled in the terminal", "route a path to its view",
           "render", "style", "where is the page reviewed before it is shown"]
SAMPLE_QUERIES = ["cart total", "make_demo_cart", "how are prices formatted?", "Cart.add", "store inventory items",
                  "checkout", "shop/models.py", "why does the discount not apply to an empty cart"]


@pytest.fixture(scope="module")
def exact_index(tmp_path_factory):
    from codeqa.indexing.indexer import index_repo

    settings = settings_for(tmp_path_factory.mktemp("exact") / "data", local_llm=False)
    index_repo(FIXTURE, settings, name="clicklike", progress=False)
    return settings


def search(settings, repo: str, query: str, k: int = 10):
    return Retriever(settings).search(repo, query, SearchOptions(k=k, hyde=False, rerank=False))


def non_increasing(scores: list[float]) -> bool:
    return all(a >= b for a, b in zip(scores, scores[1:]))


# --- exact names first ---------------------------------------------------------------------------

def test_other_files_mention_colordemo_more_than_its_definition(exact_index):
    """The fixture is a fair test: by text alone, the definition is not the best match (a
    question that only contains the name is ranked as before)."""
    texts = {path: (FIXTURE / path).read_text().count("colordemo") for path in
             ("examples/colors/colors.py", "src/click/termui.py", "docs/colors.md")}
    assert texts["examples/colors/colors.py"] < min(texts["src/click/termui.py"], texts["docs/colors.md"])
    ranked = search(exact_index, "clicklike", "colordemo?").results
    assert ranked[0].file_path != "examples/colors/colors.py"


@pytest.mark.parametrize("query, qualified_name, path", [
    ("colordemo", "colordemo", "examples/colors/colors.py"),
    ("`colordemo`", "colordemo", "examples/colors/colors.py"),
    ("view", "web/view.js", "web/view.js"),  # a file's stem names the file
    ("view.js", "web/view.js", "web/view.js"),
    ("web/view.js", "web/view.js", "web/view.js"),
    ("review", "review", "web/review.js"),
])
def test_a_query_that_is_exactly_a_name_puts_it_first(exact_index, query, qualified_name, path):
    result = search(exact_index, "clicklike", query)
    top = result.results[0]
    assert (top.qualified_name, top.file_path, top.exact, top.relevance) == (qualified_name, path, True, 1.0)
    assert result.files[0].path == path
    assert top.to_json()["exact_match"] is True and top.to_json()["score"] == 1.0


@pytest.mark.parametrize("mention, named", [
    ("/home/me/.venv/lib/python3.11/site-packages/click/termui.py", True),  # an installed copy
    ("https://github.com/pallets/click/blob/8.1.7/src/click/termui.py#L7", True),  # a link
    ("/home/me/.venv/lib/python3.11/site-packages/rich/termui.py", False),  # the name alone is not enough
])
def test_a_long_path_names_the_repositorys_file_by_its_tail(exact_index, mention, named):
    result = search(exact_index, "clicklike", f"the output is not colored\n\n  at {mention}, while printing")
    exact = {hit.file_path for hit in result.results if hit.exact}
    assert ("src/click/termui.py" in exact) is named, exact


def test_a_name_inside_a_question_is_weighed_not_forced_first(exact_index):
    result = search(exact_index, "clicklike", "which colors does the terminal styling support")
    assert not any(hit.relevance == 1.0 for hit in result.results)


# --- scores in rank order, in every face ---------------------------------------------------------

def test_search_scores_never_rise_down_the_list(exact_index, indexed_sample):
    sample, _ = indexed_sample
    for settings, repo, queries in ((exact_index, "clicklike", QUERIES), (sample, "sample", SAMPLE_QUERIES)):
        for query in queries:
            result = search(settings, repo, query)
            data = result.to_json()
            scores = [hit["score"] for hit in data["results"]]
            assert scores and non_increasing(scores) and all(0.0 <= s <= 1.0 for s in scores), (query, scores)
            files = [file["score"] for file in data["files"]]
            assert non_increasing(files) and all(0.0 <= s <= 1.0 for s in files), (query, files)
            assert scores[0] > 0.0, query  # the best result has a score worth reading


def test_web_api_scores_never_rise_down_the_list(indexed_sample):
    from codeqa.app import close_app, create_app

    sample, _ = indexed_sample
    app = create_app({"TESTING": True, "CODEQA_SETTINGS": settings_for(sample.data_dir, local_llm=False)})
    try:
        client = app.test_client()
        for query in SAMPLE_QUERIES:
            response = client.post("/api/search", json={"repo": "sample", "query": query, "k": 10})
            assert response.status_code == 200, response.get_data(as_text=True)
            scores = [hit["score"] for hit in response.get_json()["results"]]
            assert scores and non_increasing(scores), (query, scores)
    finally:
        close_app(app)


def test_cli_json_scores_never_rise_down_the_list(indexed_sample, tmp_path):
    sample, _ = indexed_sample
    batch = tmp_path / "q.jsonl"
    batch.write_text("".join(json.dumps({"id": str(i), "query": q}) + "\n" for i, q in enumerate(SAMPLE_QUERIES)))
    env = {**os.environ, "CODEQA_DATA_DIR": str(sample.data_dir), "CODEQA_LOCAL_LLM": "0"}
    done = subprocess.run([sys.executable, "-m", "codeqa", "search", "--repo", "sample", "--json", "--no-hyde",
                           "--batch", str(batch)], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(lines) == len(SAMPLE_QUERIES)
    for line in lines:
        scores = [hit["score"] for hit in line["results"]]
        assert scores and non_increasing(scores), (line["query"], scores)
    human = subprocess.run([sys.executable, "-m", "codeqa", "search", "--repo", "sample", "--no-hyde",
                            "make_demo_cart"], env=env, capture_output=True, text=True, timeout=300)
    assert human.returncode == 0 and "function make_demo_cart  score 1.00 (exact)" in human.stdout


def test_mcp_scores_never_rise_down_the_list(exact_index, tmp_path):
    with mcp_session(exact_index.data_dir, tmp_path) as session:
        for query in QUERIES:
            found = session.data("search_code", query=query, k=10)
            scores = [hit["score"] for hit in found["results"]]
            assert scores and non_increasing(scores), (query, scores)
            assert non_increasing([file["score"] for file in found["files"]]), query
        top = session.data("search_code", query="colordemo", k=5)["results"][0]
        assert (top["qualified_name"], top["exact_match"], top["score"]) == ("colordemo", True, 1.0)
        assert "1. examples/colors/colors.py:11-13  function colordemo  score 1.00  (named in the query)" in \
            session.text("search_code", query="colordemo", k=5)
