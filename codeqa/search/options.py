"""What a search may be asked for (`SearchOptions`), and the one check every face runs on it."""

from __future__ import annotations

from dataclasses import dataclass

from codeqa.core.errors import is_valid_unicode, repo_path_prefix
from codeqa.parsing.languages import DOC_LANGUAGES, LANGUAGES, OTHER_LANGUAGE, ROLES, TEXT_FORMATS
from codeqa.search.query import QueryError
from codeqa.store.reader import Scope

MAX_K = 50  # results one search may return (the CLI, the API and the chat alike)
MAX_PATH_PREFIX = 1_000

# every language a row can carry: code, docs, text formats (yaml, sql, ...) and `other` text
SEARCH_LANGUAGES = (*sorted(LANGUAGES), *sorted(DOC_LANGUAGES), *sorted(TEXT_FORMATS), OTHER_LANGUAGE)


def check_options(options: SearchOptions) -> None:
    """Refuse options no search can honour, with the same one-line message for every face."""
    k = options.k
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_K:
        raise QueryError(f"k must be a whole number from 1 to {MAX_K}.")
    if options.pool is not None and (
        not isinstance(options.pool, int) or isinstance(options.pool, bool) or not 1 <= options.pool <= 20 * MAX_K
    ):
        raise QueryError(f"pool must be a whole number from 1 to {20 * MAX_K}.")
    language = options.language
    if language is not None and (not isinstance(language, str) or language.lower() not in SEARCH_LANGUAGES):
        raise QueryError(f"lang must be one of {', '.join(SEARCH_LANGUAGES)}.")
    prefix = options.path_prefix
    if prefix is not None and (
        not isinstance(prefix, str) or len(prefix) > MAX_PATH_PREFIX or "\x00" in prefix or not is_valid_unicode(prefix)
    ):
        raise QueryError(f"path must be a folder or file path of the repo, at most {MAX_PATH_PREFIX:,} characters.")
    repo_path_prefix(prefix)  # nothing outside the repo (`../`, `/etc`): it would search everything
    if options.mode not in {"hybrid", "vector", "bm25"}:
        raise QueryError(f"Unknown search mode {options.mode!r}.")
    if options.role is not None and (not isinstance(options.role, str) or options.role.lower() not in ROLES):
        raise QueryError(f"Unknown role {options.role!r} (roles: {', '.join(ROLES)}).")


@dataclass
class SearchOptions:
    k: int = 10
    hyde: bool = False  # off by default: on the realistic eval it cost 31 s a search for no file gain
    rerank: bool | None = None  # None: the CODEQA_RERANK setting
    language: str | None = None
    path_prefix: str | None = None
    role: str | None = None  # only files of this role (languages.ROLES)
    mode: str = "hybrid"  # hybrid | vector | bm25
    pool: int | None = None  # candidates per table before rerank; default 3 × k
    # Also search by the vectors of a report's code blocks and error lines. Off: on the eval's
    # train split it lowered file hit@5 on issue reports (0.80 → 0.70) and doubled search time.
    pieces: bool = False
    # Weigh every definition of the best files (ranking.rank_definitions), not only the pool's.
    definitions: bool = True

    def pool_size(self) -> int:
        return max(self.pool or 3 * self.k, 2 * self.k)

    def scope(self) -> Scope:
        """What the index is narrowed to: the language, path prefix and role asked for."""
        return Scope(self.language, self.path_prefix, self.role)
