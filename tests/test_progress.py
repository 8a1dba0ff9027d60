"""What a user sees while a repository is indexed: a line per stage's tenth (and when done) when
stderr is not a terminal (a log, `make run`, a service), a bar when it is."""

from __future__ import annotations

import re

import pytest

from codeqa.indexing.indexer import Progress, index_repo
from conftest import SAMPLE_REPO, settings_for


@pytest.mark.unit
def test_off_a_terminal_a_stage_prints_a_line_per_tenth_and_when_done(capsys):
    progress = Progress("Parsing", 50, "file", None)
    for _ in range(50):
        progress.update(1)
    progress.close()
    lines = capsys.readouterr().err.splitlines()
    assert [int(re.search(r"\((\d+)%\)", line).group(1)) for line in lines[:-1]] == list(range(10, 100, 10))
    assert re.fullmatch(r"Parsing: 5/50 files \(10%\), [\d,.]+ files/s(, about \d+s left)?", lines[0]), lines[0]
    assert re.fullmatch(r"Parsing: 50/50 files done in \d+s", lines[-1]), lines[-1]


@pytest.mark.unit
def test_no_progress_when_switched_off_or_when_there_is_nothing_to_do(capsys):
    for progress in (Progress("Parsing", 50, "file", False), Progress("Embedding", 0, "row", None)):
        progress.update(50)
        progress.close()
    assert capsys.readouterr().err == ""


@pytest.mark.integration
@pytest.mark.parametrize("model", ["codeqa-static", "all-MiniLM-L6-v2"])
def test_an_index_run_piped_to_a_log_reports_files_parsed_and_rows_embedded(tmp_path, capsys, model):
    """A transformer embeds after parsing, with a line of its own; the static model embeds in the
    parse workers, so its run has no embedding stage to report."""
    index_repo(SAMPLE_REPO, settings_for(tmp_path / "data", embedding_model=model), name="sample", progress=None)
    err = capsys.readouterr().err
    assert "\r" not in err and "\x1b" not in err  # no bar redrawn over itself in a log
    parsing = [line for line in err.splitlines() if line.startswith("Parsing: ")]
    embedding = [line for line in err.splitlines() if line.startswith("Embedding: ")]
    assert len(parsing) >= 5 and parsing[-1].startswith("Parsing: 32/32 files done in ")
    if model == "codeqa-static":
        assert embedding == []
    else:
        assert embedding and re.match(r"Embedding: [\d,]+/[\d,]+ rows done in ", embedding[-1])
