"""The reranker's shape, and its weights read back from a shipped int8 ONNX file.

Only torch, transformers, numpy and onnx: the GPU machine has those and none of this package's
other dependencies, so this module (and `train_reranker_listwise.py`) must not import them.

The shape is all-MiniLM-L6-v2's (its config, written out so that no model files are needed)
with fewer layers where a student keeps fewer, and a one-logit head. The int8 file is what the
product ships and the only copy of a trained reranker this repository keeps, so training further
starts from it: each int8 matrix times its per-channel scale.
"""

from __future__ import annotations

from pathlib import Path

MATMULS_PER_LAYER = ("attention.self.query", "attention.self.key", "attention.self.value",
                     "attention.output.dense", "intermediate.dense", "output.dense")
MINILM = {"vocab_size": 30522, "hidden_size": 384, "num_attention_heads": 12, "intermediate_size": 1536,
          "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
          "max_position_embeddings": 512, "type_vocab_size": 2, "layer_norm_eps": 1e-12, "pad_token_id": 0}


def skeleton(layers: int):
    """An untrained `BertForSequenceClassification` of MiniLM's shape, `layers` deep, one logit."""
    from transformers import BertConfig, BertForSequenceClassification

    return BertForSequenceClassification(BertConfig(num_hidden_layers=layers, num_labels=1, **MINILM)).float()


def keep_layers(model, keep: list[int]):
    """The model with only these encoder layers, in this order."""
    import torch

    model.bert.encoder.layer = torch.nn.ModuleList([model.bert.encoder.layer[i] for i in keep])
    model.config.num_hidden_layers = len(keep)
    return model


def _dequantized(initializers: dict, name: str):
    import numpy as np
    from onnx import numpy_helper

    def array(suffix: str):
        return numpy_helper.to_array(initializers[name + suffix]).astype(np.float32)

    return (array("_quantized") - array("_zero_point")) * array("_scale")


def from_onnx(model_file: Path):
    """The int8 cross-encoder as a torch model (fp32, dequantised), as deep as the file.

    `quantize_dynamic` keeps the biases and LayerNorms under their torch names and renames each
    encoder MatMul's weight `onnx::MatMul_<n>`, numbered in the order the export traced them:
    per layer query, key, value, attention output, intermediate, output."""
    import onnx
    import torch
    from onnx import numpy_helper

    initializers = {tensor.name: tensor for tensor in onnx.load(str(model_file)).graph.initializer}
    matmuls = sorted({name.removesuffix("_quantized") for name in initializers
                      if name.startswith("onnx::MatMul_") and name.endswith("_quantized")},
                     key=lambda name: int(name.rsplit("_", 1)[1]))
    layers, rest = divmod(len(matmuls), len(MATMULS_PER_LAYER))
    if rest or not layers:
        raise SystemExit(f"{model_file} has {len(matmuls)} quantised MatMuls: not a BERT cross-encoder's")
    model = skeleton(layers)
    state = model.state_dict()
    weights = {name: torch.tensor(numpy_helper.to_array(tensor).astype("float32"))
               for name, tensor in initializers.items() if name in state}
    for table in ("word_embeddings", "token_type_embeddings", "position_embeddings"):
        name = f"bert.embeddings.{table}.weight"
        weights[name] = torch.tensor(_dequantized(initializers, name))
    for number, name in enumerate(matmuls):
        layer, part = divmod(number, len(MATMULS_PER_LAYER))
        weights[f"bert.encoder.layer.{layer}.{MATMULS_PER_LAYER[part]}.weight"] = torch.tensor(
            _dequantized(initializers, name).T.copy())
    for head in ("bert.pooler.dense", "classifier"):
        weights[f"{head}.weight"] = torch.tensor(_dequantized(initializers, f"{head}.weight_Transposed").T.copy())
    if missing := sorted(set(state) - set(weights) - {"bert.embeddings.position_ids"}):
        raise SystemExit(f"{model_file} lacks {missing[:3]}")
    model.load_state_dict(weights, strict=False)
    return model
