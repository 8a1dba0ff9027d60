"""The package's layers: data flows one way, and no module imports itself back in a cycle.

    core → parsing → store → indexing → llm → search → chat → services → faces

A module may import its own layer and the layers below it, never one above (imports inside
functions count too: a lazy import is still a dependency). No imports form a cycle, lazy and
type-only ones (`if TYPE_CHECKING:`) included: a cycle held together by type hints is still two
modules that cannot be understood apart. `docs/architecture.md` draws the same picture.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

PACKAGE = ROOT / "codeqa"
LAYERS = ["core", "parsing", "store", "indexing", "llm", "search", "chat", "services", "faces"]


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(module: str) -> str:
    """`codeqa.search.ranking` → search; `codeqa.services` → services; other top modules are faces."""
    parts = module.split(".")
    if len(parts) > 2 or parts[1:] == ["services"]:
        return parts[1]
    return "faces"


def imports(path: Path, type_only: bool = False) -> tuple[set[str], set[str]]:
    """(module-level, all) `codeqa` modules a file imports; `if TYPE_CHECKING:` blocks count only
    with `type_only` (they are no dependency at run time, but one to a reader)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    for_types = {id(node) for block in ast.walk(tree) if isinstance(block, ast.If)
                 and getattr(block.test, "id", None) == "TYPE_CHECKING" for node in ast.walk(block)}
    top_level = {id(node) for node in tree.body}
    every, at_top = set(), set()
    for node in ast.walk(tree):
        if id(node) in for_types and not type_only:
            continue
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from codeqa.indexing import create_tables` imports a module, not a name
            names = [f"{node.module}.{alias.name}" if (PACKAGE.parent / f"{node.module}.{alias.name}".replace(
                ".", "/")).with_suffix(".py").exists() else node.module for alias in node.names]
        found = {name for name in names if name == "codeqa" or name.startswith("codeqa.")}
        every |= found
        if id(node) in top_level:
            at_top |= found
    return at_top, every


MODULES = {module_name(path): path for path in PACKAGE.rglob("*.py")}


@pytest.mark.unit
@pytest.mark.parametrize("module", sorted(MODULES))
def test_a_module_imports_only_its_own_layer_and_those_below(module):
    if module in ("codeqa", "codeqa.__main__"):
        return  # the public API and `python -m codeqa` sit above every layer
    own = LAYERS.index(layer_of(module))
    _, every = imports(MODULES[module])
    above = sorted(name for name in every if name in MODULES and LAYERS.index(layer_of(name)) > own)
    assert not above, f"{module} ({LAYERS[own]}) imports from a higher layer: {above}"


@pytest.mark.unit
def test_no_import_cycles_type_only_and_lazy_imports_included():
    graph = {module: {name for name in imports(path, type_only=True)[1] if name in MODULES and name != "codeqa"}
             for module, path in MODULES.items() if module not in ("codeqa", "codeqa.__main__")}
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for dependency in sorted(graph[module]):
            if state.get(dependency) == 1:
                cycle = path[path.index(dependency):] + [dependency]
                pytest.fail("import cycle: " + " → ".join(cycle))
            if dependency not in state:
                visit(dependency, [*path, dependency])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])


@pytest.mark.unit
def test_the_checker_sees_a_cycle_and_a_layer_breach(tmp_path):
    """The two checks above can fail: a made-up pair of modules trips both."""
    low = tmp_path / "low.py"
    low.write_text("from codeqa.services import Services\n")
    at_top, every = imports(low)
    assert at_top == every == {"codeqa.services"}
    assert LAYERS.index(layer_of("codeqa.services")) > LAYERS.index(layer_of("codeqa.core.config"))
    lazy = tmp_path / "lazy.py"
    lazy.write_text("def f():\n    from codeqa.chat import answer\n")
    assert imports(lazy) == (set(), {"codeqa.chat.answer"})
    hinted = tmp_path / "hinted.py"
    hinted.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from codeqa.search.retrieval import Hit\n")
    assert imports(hinted) == (set(), set())
    assert imports(hinted, type_only=True)[1] == {"codeqa.search.retrieval"}


def lancedb_imports(path: Path) -> list[int]:
    """Lines of a file that import `lancedb` at run time (type-only imports don't count)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    type_only = {id(node) for block in ast.walk(tree) if isinstance(block, ast.If)
                 and getattr(block.test, "id", None) == "TYPE_CHECKING" for node in ast.walk(block)}
    found = []
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "lancedb" for a in node.names):
            found.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "lancedb":
            found.append(node.lineno)
    return found


@pytest.mark.unit
def test_lancedb_is_imported_only_the_quick_way():
    """Every module reaches LanceDB through store/lancedb_import.py, so no command pays for the
    REST client a plain `import lancedb` builds (bench/startup_bench.py)."""
    plain = {module: lines for module, path in MODULES.items()
             if module != "codeqa.store.lancedb_import" and (lines := lancedb_imports(path))}
    assert not plain, f"import lancedb through codeqa.store.lancedb_import.lancedb_module(): {plain}"


@pytest.mark.unit
def test_the_quick_import_defers_the_rest_client_and_leaves_overrides_alone():
    code = ("import sys\nfrom codeqa.store.lancedb_import import lancedb_module\nm = lancedb_module()\n"
            "assert m.connect and m.query.MultiMatchQuery and m.index.FTS\n"
            "assert 'lance_namespace_urllib3_client.api' not in sys.modules\n"
            "assert sys.modules.get('overrides') is None or sys.modules['overrides'].__file__\n"
            "import lance_namespace_urllib3_client as client\n"
            "assert client.ApiClient and 'lance_namespace_urllib3_client.api' in sys.modules\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ})
    assert done.returncode == 0, done.stderr
