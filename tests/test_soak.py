"""A short soak (bench/soak_bench.py): two index runs over and over (one of them `--rebuild`) and
20 clients searching a live `python app.py` at the same time. Nothing may duplicate, fail with
a 500 or go unanswered."""

from __future__ import annotations

import pytest

from bench.soak_bench import soak

pytestmark = pytest.mark.integration


def test_two_indexers_and_twenty_clients_against_a_live_server(tmp_path):
    summary = soak(seconds=25, clients=20, work=tmp_path).summary()
    assert summary["searches"] > 20 and summary["answered"] == summary["searches"], summary
    assert summary["http_500s"] == 0 and set(summary["statuses"]) == {200}, summary
    assert not any(summary["duplicate_ids"].values()), summary
    completed = {name: codes.get(0, 0) for name, codes in summary["index_runs"].items()}
    assert completed["A"] >= 1 and completed["B"] >= 1, summary  # an incremental run and a rebuild finished
