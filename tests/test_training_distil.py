"""training/distil_reranker.py and cross_encoder.py: the teacher read back from the shipped file scores as it does; a
student run resumes, caches the teacher's scores and exports with its own number of layers."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

pytest.importorskip("torch")  # the train extra (make setup-dev installs it)

import numpy as np  # noqa: E402

from codeqa.search.rerank import RERANKER_NAME, CrossEncoderReranker, reranker_model  # noqa: E402
from training import cross_encoder, distil_reranker, train_embedder, train_reranker  # noqa: E402

pytestmark = pytest.mark.integration

QUESTIONS = ["Cart total ignores the discount code", "where are prices parsed?"]
DEFINITIONS = [
    "shop/cart.py\nmethod Cart.total\ndef total(self):\n    return sum(item.price for item in self.items)\n",
    "shop/csv_parser.py\nfunction parse_price\ndef parse_price(text):\n    return Decimal(text.strip('$'))\n",
    "shop/models.py\nclass Location\nclass Location:\n    name: str\n    city: str\n",
]


def test_the_teacher_rebuilt_from_the_shipped_file_scores_as_it_does():
    import torch

    model = cross_encoder.from_onnx(reranker_model(RERANKER_NAME).checked_path())
    model.eval()
    assert model.config.num_hidden_layers == len(model.bert.encoder.layer) == 3  # the shipped student
    tokenizer = train_reranker.load_model()[0]
    served = CrossEncoderReranker(RERANKER_NAME)
    shipped, rebuilt = [], []
    for question in QUESTIONS:
        shipped += served.score(question, DEFINITIONS)
        pairs = train_reranker.encode_pairs(tokenizer, [train_reranker.cap_query(tokenizer, question)] * 3, DEFINITIONS)
        with torch.no_grad():
            rebuilt += model(**pairs).logits.view(-1).tolist()
    assert np.std(shipped) > 0.3  # the pairs differ: a wrongly rebuilt model could not follow them
    assert max(abs(a - b) for a, b in zip(shipped, rebuilt, strict=True)) < distil_reranker.MAX_TEACHER_GAP


def test_a_student_run_resumes_and_exports_with_its_own_layers(tmp_path: Path, monkeypatch):
    triples = tmp_path / "triples.jsonl.gz"
    with gzip.open(triples, "wt", encoding="utf-8") as handle:
        for number in range(4):
            triple = {"id": f"q{number}", "repo": "sympy/sympy", "query": f"report {number}",
                      "positive": DEFINITIONS[number % 3], "negative": "def other():\n    pass\n"}
            handle.write(json.dumps(triple) + "\n")
    monkeypatch.setattr(train_embedder, "validation_repos", lambda: set())
    checkpoints, logits = tmp_path / "checkpoints", tmp_path / "teacher.jsonl"
    common = ["--triples", str(triples), "--checkpoints", str(checkpoints), "--teacher-logits", str(logits),
              "--keep", "0", "2", "--batch-size", "2", "--save-every", "1", "--threads", "1"]
    assert distil_reranker.main([*common, "--steps", "1"]) == 0
    assert sorted(p.name for p in checkpoints.iterdir()) == ["step-1.pt"]
    assert len(logits.read_text().splitlines()) == 4  # each triple scored once, by search's reranker
    assert distil_reranker.main([*common, "--steps", "3"]) == 0
    assert sorted(p.name for p in checkpoints.iterdir()) == ["step-2.pt", "step-3.pt"]
    assert len(logits.read_text().splitlines()) == 4  # the rerun read them back
    _, student = train_reranker.load_model(checkpoint=checkpoints / "step-3.pt")
    assert student.config.num_hidden_layers == len(student.bert.encoder.layer) == 2
