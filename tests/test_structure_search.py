"""The module that implements a part ranks above the files whose names echo the question, on a
real index (issue 32): the fixture is the issue's Rust web framework in small. `router/mod.rs`
holds the routing table and says little in words; `map_request.rs` and `form.rs` repeat
"match", "path", "handler" in every name and comment. The structure model
(`CODEQA_FILE_MODEL=structure`) weighs that; the default model does not."""

from __future__ import annotations

import pytest

from conftest import ROOT, index_fixture
import dataclasses

from codeqa.search.retrieval import Retriever, SearchOptions

pytestmark = pytest.mark.integration

FIXTURE = ROOT / "tests" / "fixtures" / "module_hub"
QUESTION = "how does the router match a path to its handler"


@pytest.fixture(scope="module")
def hub_index(tmp_path_factory):
    return index_fixture(tmp_path_factory, FIXTURE, "tinyweb")


def ranked_files(settings, file_model: str) -> list[str]:
    settings = dataclasses.replace(settings, file_model=file_model)
    result = Retriever(settings).search("tinyweb", QUESTION, SearchOptions(k=5, hyde=False, rerank=False))
    return [file.path for file in result.files]


def test_the_module_entry_ranks_above_the_files_that_echo_the_question(hub_index):
    assert ranked_files(hub_index, "structure")[0] == "src/router/mod.rs"


def test_the_fixture_is_fair_without_the_structure_the_echoes_win(hub_index):
    assert ranked_files(hub_index, "default")[0] != "src/router/mod.rs"
