"""training/rerank_groups.py, search_lists.py and train_reranker_listwise.py: groups read from a
real git history, search's lists split into one list a changed definition, pairs tokenised as
search tokenises them, a padded batch scoring as search's unpadded pairs, and a run that resumes
and merges back into a checkpoint `export_onnx.py` reads."""

from __future__ import annotations

import gzip
import json
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("torch")  # the train extra (make setup-dev installs it)

import numpy as np

from codeqa.search.rerank import RERANKER_NAME, CrossEncoderReranker, reranker_model
from training import distil_reranker, train_reranker
from training.rerank_groups import record_groups, tokenize
from training.search_lists import tokenize_lists
from training.train_embedder import FileTexts
from training.train_reranker_listwise import FROZEN, PairLists, grouped_logits
from training.train_reranker_listwise import main as listwise_main

pytestmark = pytest.mark.integration

QUESTION = "Cart total ignores the discount code"
PRICES = "where are prices parsed?"
DEFINITIONS = [
    "shop/cart.py\nmethod Cart.total\ndef total(self):\n    return sum(item.price for item in self.items)\n",
    "shop/csv_parser.py\nfunction parse_price\ndef parse_price(text):\n    return Decimal(text.strip('$'))\n",
    "shop/models.py\nclass Location\nclass Location:\n    name: str\n    city: str\n" + "    # note\n" * 200,
]
SOURCE = '''def total(items):
    return sum(items)


def discount(total, code):
    return total * 0.9


def tax(total):
    return total * 1.2


def shipping(weight):
    return weight * 2
'''


def git_commit(mirror: Path) -> str:
    repo = mirror / "shop+cart" / "repo"
    repo.mkdir(parents=True)
    (repo / "cart.py").write_text(SOURCE)
    for command in (["init", "-q"], ["add", "cart.py"],
                    ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "cart"]):
        subprocess.run(["git", "-C", str(repo), *command], check=True)
    return subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()


def test_a_group_is_one_changed_definition_with_its_files_other_ones(tmp_path: Path):
    commit = git_commit(tmp_path)
    record = {"id": "shop__cart-1", "repo": "shop/cart", "base_commit": commit, "query": QUESTION,
              "files": [{"path": "cart.py", "language": "python",
                         "positives": [["total", "function", 1, 2], ["discount", "function", 5, 6]],
                         "negatives": [["tax", "function", 9, 10], ["shipping", "function", 13, 14],
                                       ["gone", "function", 40, 41]]}]}
    groups = record_groups(FileTexts(tmp_path), record)
    assert [g["positive"].splitlines()[1] for g in groups] == ["function total", "function discount"]
    for group in groups:  # the other changed definition is no negative; a definition not found is dropped
        assert sorted(n.splitlines()[1] for n in group["negatives"]) == ["function shipping", "function tax"]
    record["files"][0]["negatives"] = []
    assert record_groups(FileTexts(tmp_path), record) == []  # nothing to rank against


def test_tokenised_lists_read_back_as_search_encodes_them(tmp_path: Path):
    tokenize([(QUESTION, DEFINITIONS, [True, False, False]), (PRICES, DEFINITIONS[:2], [False, True])],
             tmp_path / "lists.npz")
    lists = PairLists(tmp_path / "lists.npz")
    assert len(lists) == 2 and list(lists.pairs(1)) == [3, 4]
    assert lists.labels.tolist() == [True, False, False, False, True]
    expected = CrossEncoderReranker(RERANKER_NAME).encode(QUESTION, DEFINITIONS)
    inputs, spans, offsets = lists.batch([0], "cpu")
    assert spans == [range(0, 3)]
    assert offsets.tolist() == [0.0, 0.0, 0.0]  # groups carry no definition scores
    for row, encoding in enumerate(expected):
        length = len(encoding.ids)
        assert inputs["input_ids"][row, :length].tolist() == encoding.ids
        assert inputs["token_type_ids"][row, :length].tolist() == encoding.type_ids
        assert inputs["attention_mask"][row].sum().item() == length
    assert len(expected[2].ids) == 256  # the long definition was cut where search cuts it


def test_search_lists_become_one_list_a_changed_definition_held_back_by_repository(tmp_path: Path):
    def listed(repo: str, changed: list[bool]) -> dict:
        return {"id": f"{repo}-1", "repo": repo, "question": QUESTION, "file": "shop/cart.py",
                "definitions": [{"name": f"d{i}", "line": i, "score": float(10 - i), "text": text, "changed": flag}
                                for i, (text, flag) in enumerate(zip(DEFINITIONS, changed, strict=True))]}

    with gzip.open(tmp_path / "shop+cart.jsonl.gz", "wt", encoding="utf-8") as out:
        out.write(json.dumps(listed("shop/cart", [False, True, True])) + "\n")
    with gzip.open(tmp_path / "rack+rack.jsonl.gz", "wt", encoding="utf-8") as out:  # a validation_repos() one
        out.write(json.dumps(listed("rack/rack", [True, False, False])) + "\n")
    tokenize_lists(tmp_path)
    lists, held_back = PairLists(tmp_path / "lists.npz"), PairLists(tmp_path / "held_back.npz")
    # each changed definition first, before the unchanged ones only (the other changed one is no negative)
    assert len(lists) == 2 and lists.labels.tolist() == [True, False, True, False]
    assert lists.offsets.tolist() == [9.0, 10.0, 8.0, 10.0]
    assert len(held_back) == 1 and held_back.offsets.tolist() == [10.0, 9.0, 8.0]


def test_a_padded_batch_scores_as_search_orders_each_pair_alone(tmp_path: Path):
    """The logits of a padded batch are search's, plus the definition scores a list carries
    (`search_lists.py`): the order search makes."""
    import torch

    from training.cross_encoder import from_onnx

    scores = [[1.5, -2.0, 0.25], [0.0, 3.0]]
    tokenize([(QUESTION, DEFINITIONS, [True, False, False]), (PRICES, DEFINITIONS[:2], [False, True])],
             tmp_path / "lists.npz", scores)
    model = from_onnx(reranker_model(RERANKER_NAME).checked_path()).eval()
    with torch.no_grad():
        logits = grouped_logits(model, PairLists(tmp_path / "lists.npz"), [0, 1], "cpu")
    served = CrossEncoderReranker(RERANKER_NAME)
    shipped = [logit + score for logit, score in zip(
        served.score(QUESTION, DEFINITIONS) + served.score(PRICES, DEFINITIONS[:2]), scores[0] + scores[1], strict=True)]
    rebuilt = logits[0].tolist() + logits[1, :2].tolist()
    assert logits[1, 2].item() == float("-inf")  # past the second list's end
    assert np.std(shipped) > 0.3
    assert max(abs(a - b) for a, b in zip(shipped, rebuilt, strict=True)) < distil_reranker.MAX_TEACHER_GAP


def test_a_run_resumes_and_merges_into_a_checkpoint_for_export(tmp_path: Path, capsys):
    import torch

    lists = tmp_path / "lists.npz"
    tokenize([(f"report {n}", DEFINITIONS[:2 + n % 2], [True] + [False] * (1 + n % 2)) for n in range(4)], lists)
    init = reranker_model(RERANKER_NAME).checked_path()
    run = tmp_path / "run"
    common = ["--init", str(init), "--groups", str(lists), "--validation", str(lists), "--batch-lists", "2",
              "--out", str(run), "--keep", "0", "2"]
    assert listwise_main([*common, "--epochs", "1"]) == 0
    assert sorted(p.name for p in run.iterdir()) == ["epoch-1.pt", "state.pt"]
    assert listwise_main([*common, "--epochs", "2"]) == 0
    assert "resumed after epoch 1" in capsys.readouterr().err
    saved = torch.load(run / "epoch-2.pt", weights_only=False)
    assert saved["epoch"] == 2 and set(saved["validation"]) == {"hit@1", "mrr", "items"}
    assert not set(FROZEN) & set(saved["weights"])  # the frozen table is not sent back
    merged = tmp_path / "merged.pt"
    assert listwise_main(["--init", str(init), "--merge", str(run / "epoch-2.pt"), "--out", str(merged)]) == 0
    _, model = train_reranker.load_model(checkpoint=merged)  # what export_onnx.py --reranker loads
    assert model.config.num_hidden_layers == 2
    state = model.state_dict()
    for name, tensor in saved["weights"].items():
        assert torch.equal(state[name], tensor.float())
