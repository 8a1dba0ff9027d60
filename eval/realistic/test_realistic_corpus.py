"""Where the eval's repositories come from: a clone that cannot happen says so (real git)."""

from __future__ import annotations

from pathlib import Path

import pytest

from eval.realistic.corpus import Corpus, CorpusError

pytestmark = pytest.mark.unit


def test_a_failed_clone_is_a_clear_corpus_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Send GitHub URLs to a directory that does not exist, so the clone fails here and anywhere.
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", f"url.{(tmp_path / 'nowhere').as_uri()}/.insteadOf")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "https://github.com/")
    with pytest.raises(CorpusError, match=r"owner/name: cloning from GitHub failed .*--mirror"):
        Corpus(tmp_path / "cache").fetch("owner/name", ["0" * 40])
