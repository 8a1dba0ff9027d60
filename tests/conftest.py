"""Shared fixtures: isolated data directories and an index of the sample repo built once."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from config import Settings  # noqa: E402

SAMPLE_REPO = ROOT / "tests" / "fixtures" / "sample_repo"


def settings_for(data_dir: Path, **overrides) -> Settings:
    """Settings that touch nothing outside `data_dir` and ignore the developer's `.env`."""
    return Settings(data_dir=data_dir, **overrides)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return settings_for(tmp_path / "data")


@pytest.fixture
def sample_copy(tmp_path: Path) -> Path:
    """A private, writable copy of the sample repo."""
    target = tmp_path / "sample_repo"
    shutil.copytree(SAMPLE_REPO, target, symlinks=True)
    return target


@pytest.fixture(scope="session")
def indexed_sample(tmp_path_factory):
    """(settings, report) for the sample repo indexed once per session; treat as read-only."""
    from preprocessing import index_repo

    data_dir = tmp_path_factory.mktemp("indexed") / "data"
    settings = settings_for(data_dir)
    report = index_repo(SAMPLE_REPO, settings, name="sample", progress=False)
    return settings, report
