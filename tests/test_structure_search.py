"""The module that implements a part ranks above the files whose names echo the question, on a
real index (issue 32): the fixture is the issue's Rust web framework in small. `router/mod.rs`
holds the routing table and says little in words; `map_request.rs` and `form.rs` repeat
"match", "path", "handler" in every name and comment. The structure model (what
`CODEQA_FILE_MODEL=auto`, the default, ranks a how question with) weighs that; the model for
reports does not."""

from __future__ import annotations

import pytest

from conftest import ROOT, index_fixture
import dataclasses

from codeqa.search.retrieval import Retriever
from codeqa.search.options import SearchOptions

pytestmark = pytest.mark.integration

FIXTURE = ROOT / "tests" / "fixtures" / "module_hub"
QUESTION = "how does the router match a path to its handler"


@pytest.fixture(scope="module")
def hub_index(tmp_path_factory):
    return index_fixture(tmp_path_factory, FIXTURE, "tinyweb")


def search(settings, file_model: str, question: str = QUESTION):
    settings = dataclasses.replace(settings, file_model=file_model)
    return Retriever(settings).search("tinyweb", question, SearchOptions(k=5, hyde=False, rerank=False))


def ranked_files(settings, file_model: str) -> list[str]:
    return [file.path for file in search(settings, file_model).files]


def test_the_module_entry_ranks_above_the_files_that_echo_the_question(hub_index):
    assert ranked_files(hub_index, "structure")[0] == "src/router/mod.rs"


def test_the_fixture_is_fair_without_the_structure_the_echoes_win(hub_index):
    assert ranked_files(hub_index, "reports")[0] != "src/router/mod.rs"


def test_by_default_a_how_question_is_ranked_by_the_structure_model(hub_index):
    result = search(hub_index, "auto")
    assert (result.question_kind, result.file_model) == ("how", "structure")
    assert result.files[0].path == "src/router/mod.rs"
    assert result.to_json()["file_model"] == "structure"


def test_by_default_a_report_is_ranked_by_the_model_for_reports(hub_index):
    result = search(hub_index, "auto", "Fix: matching a path with a trailing slash fails to find its handler")
    assert (result.question_kind, result.file_model) == ("report", "reports")
