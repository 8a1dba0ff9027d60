"""The realistic retrieval eval: real issue reports and commit messages with known fixes.

See eval/README.md ("Realistic eval"). Modules: `gold` (a fix's diff → changed pre-fix lines →
gold symbols), `items` (the item file and its split), `mine` (builds items from public
sources), `corpus` (fetches the pinned repositories), `snapshots` (per-commit index snapshots),
`baseline` (whole-file BM25), `metrics` and `run`.
"""
