"""Which source should the embedded model's answer open from? Measured without the model.

The embedded model's answer is held to a grammar that opens it with `According to [n], `, and
the app picks `n` (chat/answer.py, `opening_source`), so whether that opening citation lands on
the code that answers the question is decided before the model writes a word. This builds the
context of every fact-eval question (the chat's own ContextBuilder: search, structural lookup,
packing; no LLM) and scores each way of picking `n`: does source n's range overlap a gold
`path_line` fact?

    python -m eval.answers.openings --data eval/.cache/facts/after/data [--json out.json]

(the data dir of a fact-eval run, its repositories indexed; run from the tree under test). Ways:

    first        [1]: the best-ranked code (the packer numbers code before prose)
    named        the source whose header (path and definition names) shares the most words with
                 the question, [1] on a tie
    structural   the source holding a structural question's first listed item, else [1] (today)
    any          any source holds gold: the ceiling, "context shows gold lines"
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

from eval.answers.facts import Item, load_items
from eval.answers.facts_run import repo_index_name

STOP = frozenset(
    "how does did do is are was the a an what why when where which who my our your to of in on for from with and "
    "or not no it its this that there their be been being can could would should will get got use used using "
    "into by at as than then when whether instead even though only some any every each".split()
)


def words(text: str) -> set[str]:
    """Lower-case word stems (first 4 letters) of a text's words and identifier parts."""
    from codeqa.parsing.tokens import code_tokens

    return {w[:4] for w in code_tokens(text).split() if len(w) >= 3 and w not in STOP and not w.isdigit()}


def gold_ranges(item: Item) -> list[tuple[str, int, int]]:
    return [(f.path, *f.lines) for f in item.facts if f.kind == "path_line" and f.path and f.lines]


def hits(source, gold: list[tuple[str, int, int]]) -> bool:
    from eval.answers.facts import same_path

    return any(same_path(source.path, path) and source.start <= high and source.end >= low for path, low, high in gold)


def named(sources: dict, question: str) -> int:
    """The source whose header shares most words with the question; the lowest number on a tie."""
    asked = words(question)
    return max(sorted(sources), key=lambda n: (len(asked & words(f"{sources[n].path} {sources[n].name}")), -n))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--budget", type=int, default=None, help="context tokens (default: the embedded model's)")
    args = parser.parse_args(argv)
    os.environ.setdefault("LANCEDB_LOG", "error")
    import codeqa
    from codeqa.chat.answer import SMALL_MODEL_SOURCES, opening_source
    from codeqa.chat.packing import numbered_sources

    settings = codeqa.Settings.from_env(data_dir=args.data, lancedb_uri="", redis_url="", llm_base_url="")
    budget = args.budget or settings.local_context_tokens
    options = codeqa.SearchOptions(k=SMALL_MODEL_SOURCES, hyde=False, rerank=settings.rerank_chat)
    rows = []
    with codeqa.Services(settings) as services:
        for item in load_items():
            gold = gold_ranges(item)
            if not gold:
                continue
            built = services.context.build(repo_index_name(item.repo), f"@codebase {item.question}", options, budget)
            sources = numbered_sources(built.text)
            if not sources:
                continue
            picks = {"first": 1, "named": named(sources, item.question),
                     "structural": opening_source(sources, built.facts)}
            row = {"id": item.id, "kind": item.kind, "sources": len(sources),
                   **{way: hits(sources[n], gold) for way, n in picks.items()},
                   "any": any(hits(s, gold) for s in sources.values())}
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    ways = ("first", "named", "structural", "any")
    kinds = sorted({r["kind"] for r in rows}) + ["all"]
    print("| kind | n | " + " | ".join(ways) + " |\n|---|---|" + "---|" * len(ways))
    for kind in kinds:
        group = [r for r in rows if kind in ("all", r["kind"])]
        print(f"| {kind} | {len(group)} | " + " | ".join(f"{sum(r[w] for r in group) / len(group):.2f}" for w in ways)
              + " |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
