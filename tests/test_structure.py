"""The repository's structure as file-ranking evidence, and platform twins grouped (no index, no model)."""

from __future__ import annotations

import pytest

from codeqa.core.config import Settings
from codeqa.core.errors import ConfigError
from codeqa.search.ranking import FileHit, file_features
from codeqa.search.structure import RepoLayout, centrality, module_folder, module_name
from codeqa.search.twins import group_twins, twin_key
from test_query import hit

pytestmark = pytest.mark.unit

REPO = ["src/lib.rs", "src/router/mod.rs", "src/router/map_request.rs", "src/router/form.rs",
        "src/handler.rs", "src/handler/boxed.rs", "pkg/pool/pool.go", "pkg/pool/conn.go",
        "lib/middleware/index.js", "lib/middleware/cors.js", "lib/middleware/logger.js", "lib/view.js", "lib/app.js",
        "gson/Gson.java", "gson/JsonParser.java", "pkgs/http/lib/http.dart", "pkgs/http/lib/src/client.dart",
        "docs/routing.md", "tests/test_router.py"]


def layout(paths: list[str] = REPO) -> RepoLayout:
    return RepoLayout.of({path: ("docs" if path.startswith("docs/") else "source", "rust") for path in paths})


@pytest.mark.parametrize("path, module", [
    ("src/router/mod.rs", "src/router"),  # the language's entry name
    ("src/lib.rs", "src"),
    ("lib/middleware/index.js", "lib/middleware"),
    ("pkg/pool/pool.go", "pkg/pool"),  # named like its folder
    ("gson/Gson.java", "gson"),  # the facade class of its package
    ("src/handler.rs", "src/handler"),  # named like the folder beside it
    ("pkgs/http/lib/http.dart", "pkgs/http"),  # named like the package, above its layout folder
    ("pkgs/http/lib/src/client.dart", None),
    ("src/router/map_request.rs", None),
    ("lib/view.js", None),
])
def test_entry_files_and_the_module_they_open(path, module):
    assert module_folder(path, layout().folders) == module


def test_an_entry_file_is_named_by_its_module_not_by_a_layout_folder():
    assert module_name("src/router/mod.rs", "src/router") == "router"
    assert module_name("src/lib.rs", "src") == "lib"  # nothing but layout folders: its own stem
    assert module_name("lib/view.js", None) == "view"


def test_the_evidence_inside_a_module_makes_its_entry_a_hub():
    hubs = layout().hubs(["src/router/map_request.rs", "src/router/form.rs", "lib/view.js"])
    assert hubs["src/router/mod.rs"] == pytest.approx(1 + 1 / 2)
    assert "src/lib.rs" not in hubs  # the crate root would be every question's hub
    assert "lib/view.js" not in hubs
    # Layout folders are no level: Dart's package is two of them above its code.
    assert layout().hubs(["pkgs/http/lib/src/client.dart"]) == {"pkgs/http/lib/http.dart": 1.0}


def test_a_hub_joins_the_candidates_and_names_asked_count():
    hits = [hit("src/router/map_request.rs", 0.9, "map_request"), hit("src/router/form.rs", 0.8, "form")]
    files = file_features([], hits, about_tests=False, terms=["how", "does", "the", "router", "match", "requests"],
                          layout=layout())
    entry = files["src/router/mod.rs"]
    assert entry.features["entry"] == 1.0 and entry.features["hub"] > 0 and entry.features["name_asked"] == 1.0
    assert files["src/router/map_request.rs"].features["entry"] == 0.0
    assert entry.features["root_entry"] == 0.0
    assert files["src/router/map_request.rs"].features["name_asked"] == 0.0  # not an entry: its name is matched elsewhere
    assert files["src/router/form.rs"].features["folder_asked"] == 1.0  # under router/


def test_the_programs_own_entry_is_weighed_apart_from_a_modules():
    files = file_features([], [hit("src/lib.rs", 0.9, "run"), hit("src/router/mod.rs", 0.5, "route")],
                          about_tests=False, layout=layout())
    assert (files["src/lib.rs"].features["entry"], files["src/lib.rs"].features["root_entry"]) == (0.0, 1.0)
    assert (files["src/router/mod.rs"].features["entry"], files["src/router/mod.rs"].features["root_entry"]) == (1.0, 0.0)


def test_a_module_named_by_the_question_is_asked_for_through_its_entry():
    files = file_features([], [hit("lib/app.js", 0.9, "render"), hit("lib/middleware/cors.js", 0.5, "cors"),
                               hit("lib/middleware/logger.js", 0.4, "log")],
                          about_tests=False, terms=["where", "are", "middlewares", "registered"], layout=layout())
    assert files["lib/middleware/index.js"].features["name_asked"] == 1.0  # `middlewares` meets `middleware`
    assert files["lib/middleware/cors.js"].features["folder_asked"] == 1.0
    assert files["lib/app.js"].features["name_asked"] == 0.0


def test_docs_rank_as_code_only_when_the_question_asks_for_them():
    hits = [hit("docs/routing.md", 0.9, "Routing", role="docs")]
    asked = file_features([], hits, about_tests=False, about_prose=True)["docs/routing.md"].features
    plain = file_features([], hits, about_tests=False)["docs/routing.md"].features
    assert (asked["non_source"], asked["prose_asked"]) == (1.0, 1.0)
    assert (plain["non_source"], plain["prose_asked"]) == (1.0, 0.0)


def test_centrality_flows_to_what_the_first_hits_use_and_are_used_from():
    used = hit("src/core.rs", 0.2, "core")
    used.references = [{"file_path": "src/first.rs", "caller": "first"}]
    ranks = centrality(["src/first.rs", "src/core.rs", "src/alone.rs"], [hit("src/first.rs", 0.9), used],
                       {"src/first.rs": 1.0})
    assert ranks["src/core.rs"] > ranks.get("src/alone.rs", 0.0)
    assert ranks["src/first.rs"] == 1.0


# --- platform twins ------------------------------------------------------------------------------

def file(path: str) -> FileHit:
    return FileHit(path, 0.0, "source", "c", [])


@pytest.mark.parametrize("a, b", [("src/unix/fs.c", "src/win/fs.c"), ("os/file_unix.go", "os/file_windows.go"),
                                  ("std/sys/unix.rs", "std/sys/windows.rs"), ("lib/posix/path.py", "lib/nt/path.py")])
def test_platform_twins_share_a_key(a, b):
    assert twin_key(a)[0] == twin_key(b)[0] and twin_key(a)[1] != twin_key(b)[1]


def test_twins_are_listed_together_the_configured_platform_first():
    ranked = [file("src/win/fs.c"), file("src/uv-common.c"), file("src/threadpool.c"), file("src/unix/fs.c")]
    linux = group_twins(ranked, "linux")
    assert [f.path for f in linux] == ["src/unix/fs.c", "src/win/fs.c", "src/uv-common.c", "src/threadpool.c"]
    assert linux[0].twins == ["src/win/fs.c"] and linux[1].twins == ["src/unix/fs.c"]
    windows = group_twins(ranked, "windows")
    assert [f.path for f in windows][:2] == ["src/win/fs.c", "src/unix/fs.c"]
    assert linux[2].twins == []


def test_a_file_without_a_twin_keeps_its_place():
    ranked = [file("src/unix/pipe.c"), file("src/core.c"), file("src/win/fs.c")]
    assert [f.path for f in group_twins(ranked, "linux")] == ["src/unix/pipe.c", "src/core.c", "src/win/fs.c"]


def test_an_unknown_platform_is_a_clear_configuration_error(monkeypatch):
    monkeypatch.setenv("CODEQA_PLATFORM", "beos")
    with pytest.raises(ConfigError, match="CODEQA_PLATFORM must be one of linux"):
        Settings.from_env()
    monkeypatch.setenv("CODEQA_PLATFORM", "Windows")
    assert Settings.from_env().platform == "windows"


def test_a_package_holding_most_of_the_code_is_the_program_not_a_part():
    paths = ["src/flask/__init__.py", "src/flask/app.py", "src/flask/views.py", "src/flask/json/__init__.py",
             "src/flask/json/provider.py", "src/flask/sessions.py", "examples/tutorial/flaskr/__init__.py"]
    flask = RepoLayout.of({path: ("example" if path.startswith("examples/") else "source", "python")
                           for path in paths})
    assert "src/flask" in flask.wide and "src/flask" not in flask.parts and "src/flask/json" in flask.parts
    assert "src/flask/__init__.py" not in flask.hubs(["src/flask/app.py", "src/flask/views.py"])
    hits = [hit("src/flask/views.py", 0.9, "View"), hit("src/flask/__init__.py", 0.5, "__getattr__")]
    files = file_features([], hits, about_tests=False, terms=["how", "does", "flask", "dispatch", "views"],
                          layout=flask)
    top = files["src/flask/__init__.py"].features
    assert (top["entry"], top["root_entry"], top["name_asked"]) == (0.0, 1.0, 0.0)  # "Flask" says nothing
    assert files["src/flask/views.py"].features["folder_asked"] == 0.0


def test_the_file_model_is_a_name_or_a_model_file(monkeypatch, tmp_path):
    monkeypatch.setenv("CODEQA_FILE_MODEL", "Structure")
    assert Settings.from_env().file_model == "structure"
    monkeypatch.setenv("CODEQA_FILE_MODEL", str(tmp_path / "missing.json"))
    with pytest.raises(ConfigError, match="CODEQA_FILE_MODEL must be auto or reports or structure, or the path"):
        Settings.from_env()
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    monkeypatch.setenv("CODEQA_FILE_MODEL", str(broken))
    from codeqa.search.ranking import file_ranker_for
    with pytest.raises(ConfigError, match="broken.json is not a file model"):
        file_ranker_for(Settings.from_env().file_model)


def test_auto_ranks_each_kind_of_question_with_its_model(monkeypatch):
    from codeqa.search.ranking import file_model_name, file_ranker_for
    monkeypatch.delenv("CODEQA_FILE_MODEL", raising=False)
    assert Settings.from_env().file_model == "auto"
    assert file_model_name("auto", "how") == "structure" and file_model_name("auto", "report") == "reports"
    assert file_ranker_for("auto", "how") is file_ranker_for("structure", "report")
    assert file_ranker_for("auto", "report") is file_ranker_for("reports", "how")
    assert file_ranker_for("auto", "how").weights != file_ranker_for("auto", "report").weights
