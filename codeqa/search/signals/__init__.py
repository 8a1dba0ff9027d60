"""Evidence that costs nothing at query time: each idea one small module, read from a file's
path against the question's words.

Each module computes one feature of the file model (ranking.py), so the model weighs it with
the rest of the evidence and the ablation (eval/realistic/ablate.py) can refit without it; an
idea stays here only while that measurement keeps it (docs/retrieval.md says what each gained,
and which ideas were measured and removed).
"""
