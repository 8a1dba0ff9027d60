"""training/train_reranker.py: the pairs search scores are the pairs it trained on; a run resumes."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

pytest.importorskip("torch")  # the train extra (make setup-dev installs it)

from codeqa.search.rerank import RERANKER_NAME, CrossEncoderReranker  # noqa: E402
from training import train_embedder, train_reranker  # noqa: E402

pytestmark = pytest.mark.integration

DEFINITION = ("shop/cart.py\nmethod Cart.total\ndef total(self):\n"
              "def total(self):\n    return sum(item.price for item in self.items)\n")
REPORT = ("Cart total is wrong with a discount\n\nSteps: add two items, apply code SAVE10, open the cart. "
          + "The total shown still includes the full price of every item in the cart. " * 12)


@pytest.fixture(scope="module")
def tokenizer():
    return train_reranker.load_model()[0]


@pytest.mark.parametrize("question", ["cart total", REPORT], ids=["short", "long"])
def test_search_encodes_a_pair_as_training_did(tokenizer, question):
    trained = train_reranker.encode_pairs(tokenizer, [train_reranker.cap_query(tokenizer, question)], [DEFINITION])
    reranker = CrossEncoderReranker(RERANKER_NAME)
    _, pair_tokenizer = reranker._load()
    question_part = reranker.cap_question(question)
    served = pair_tokenizer.encode_batch([(question_part, DEFINITION)])[0]
    assert served.ids == trained["input_ids"][0].tolist()
    assert served.type_ids == trained["token_type_ids"][0].tolist()


def test_a_run_resumes_from_its_newest_checkpoint(tmp_path: Path, monkeypatch):
    triples = tmp_path / "triples.jsonl.gz"
    with gzip.open(triples, "wt", encoding="utf-8") as handle:
        for number in range(4):
            handle.write(json.dumps({"id": f"q{number}", "repo": "sympy/sympy", "query": f"report {number}",
                                     "positive": DEFINITION, "negative": "def other():\n    pass\n"}) + "\n")
    monkeypatch.setattr(train_embedder, "validation_repos", lambda: set())
    checkpoints = tmp_path / "checkpoints"
    common = ["--triples", str(triples), "--checkpoints", str(checkpoints), "--batch-size", "2",
              "--save-every", "1", "--threads", "1"]
    assert train_reranker.main([*common, "--steps", "1"]) == 0
    assert sorted(p.name for p in checkpoints.iterdir()) == ["step-1.pt"]
    assert train_reranker.main([*common, "--steps", "3"]) == 0
    assert sorted(p.name for p in checkpoints.iterdir()) == ["step-2.pt", "step-3.pt"]
