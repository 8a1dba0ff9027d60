"""CodeQA: @codebase search and chat for any repository, as a library.

    import codeqa

    settings = codeqa.Settings.from_env()          # CODEQA_* variables, or Settings(data_dir=...)
    report = codeqa.index_repo("path/to/repo", settings, name="repo")
    with codeqa.Services(settings) as services:
        result = services.retriever.search("repo", "where are carts totalled?", codeqa.SearchOptions(k=5))
        for hit in result.results:
            print(hit.file_path, hit.start_line, hit.qualified_name)

The package is layered the way data flows (`docs/architecture.md`): `core` → `parsing` → `store` →
`indexing` → `llm` → `search` → `chat` → `services` → the faces (`cli`, `preprocessing`,
`search_cli`, `app`/`web`, `mcp_server`). Names below are imported on first use, so
`import codeqa` stays instant.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.2.0"

# public name → the module that defines it
_PUBLIC = {
    "Settings": "codeqa.core.config",
    "CodeQAError": "codeqa.core.errors",
    "RepoInfo": "codeqa.core.records",
    "index_repo": "codeqa.indexing.indexer",
    "IndexReport": "codeqa.indexing.indexer",
    "SearchOptions": "codeqa.search.options",
    "SearchResult": "codeqa.search.results",
    "Hit": "codeqa.search.results",
    "Retriever": "codeqa.search.retrieval",
    "Services": "codeqa.services",
    "create_app": "codeqa.app",
    "main": "codeqa.cli",
}
__all__ = ["__version__", *_PUBLIC]

if TYPE_CHECKING:
    from codeqa.app import create_app
    from codeqa.cli import main
    from codeqa.core.config import Settings
    from codeqa.core.errors import CodeQAError
    from codeqa.core.records import RepoInfo
    from codeqa.indexing.indexer import IndexReport, index_repo
    from codeqa.search.options import SearchOptions
    from codeqa.search.results import Hit, SearchResult
    from codeqa.search.retrieval import Retriever
    from codeqa.services import Services


def __getattr__(name: str) -> Any:
    """Import a public name's module only when the name is first used (PEP 562)."""
    if name not in _PUBLIC:
        raise AttributeError(f"module 'codeqa' has no attribute {name!r}")
    value = getattr(importlib.import_module(_PUBLIC[name]), name)
    globals()[name] = value
    return value
