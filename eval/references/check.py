"""Precision and recall of reference resolution on a labelled sample of real call sites.

    python -m eval.references.check                      # every labelled repository
    python -m eval.references.check --labels eval/references/subset.jsonl --trees tests/fixtures/references_subset
    python -m eval.references.check --sample 70 --repo pallets/flask ...   # draw sites to label

Each label (labels.jsonl, one JSON object a line) names a call site in a repository at a
commit (`path`, `line`, `callee`: the called name) and the definition it really targets,
`target` = "path::qualified_name" (several joined by "|" when they are the same function under
other build tags), or "external" when it calls nothing the index defines (a library, a builtin,
a function value, a method made at run time such as Express's `app[method]`); `text` is the
line, for a reader. A target is the definition that runs for the receiver's static type (an
inherited method: the base class's). Labels were decided by reading each call site. The script checks out each commit from a local mirror
(`--mirror`, default $CODEQA_EVAL_MIRROR or /work/.mirror: <owner>+<name>/repo), parses it
with the indexer's own code (`file_rows`, the rows and parse results an index run stores) and
resolves references with `codeqa.parsing.references`. It imports `codeqa` from the tree it is
run with (`PYTHONPATH=<older checkout>` measures an older tree; there every attributed use
counts, as it did before name matches existed).

Precision: of the (site, definition) pairs a tree resolves on labelled sites, the share that
are the true target. Recall: of the labelled sites whose target is in the repo, the share whose
target is among the resolved ones. Name matches are reported apart and count for neither.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
LABELS = HERE / "labels.jsonl"


def checkout(mirror: Path, repo: str, commit: str, cache: Path) -> Path:
    """The repository's tree at `commit`, extracted once into `cache`."""
    root = cache / f"{repo.replace('/', '+')}-{commit[:12]}"
    if not root.exists():
        git_dir = mirror / repo.replace("/", "+") / "repo"
        tmp = Path(tempfile.mkdtemp(dir=cache))
        archive = subprocess.run(["git", "--git-dir", str(git_dir), "archive", commit], check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive, check=True)
        tmp.rename(root)
    return root


def resolve(root: Path) -> dict[tuple[str, int, str], list[tuple[str, str]]]:
    """(path, line, called name) -> [(target "path::qualified_name", resolution)] for calls."""
    from codeqa.indexing.file_rows import file_rows
    from codeqa.parsing.repo_files import walk_repo
    from codeqa.parsing.languages import LANGUAGES

    walked = walk_repo(root)
    files = []
    for found in walked.files:
        source = walked.read(found)
        if source is None or source.language not in LANGUAGES:
            continue
        files.append(file_rows("refs", source, 0).manifest.parse)
    return resolve_parsed(files)


def resolve_parsed(files: list) -> dict[tuple[str, int, str], list[tuple[str, str]]]:
    from codeqa.parsing.references import resolve_references

    symbols = [s for f in files for s in f.symbols]
    where = {s.id: f"{s.file_path}::{s.qualified_name}" for s in symbols}
    sites: dict[tuple[str, int, str], list[tuple[str, str]]] = defaultdict(list)
    names = {(f.file_path, r.line, r.column): r.name for f in files for r in f.references}
    called = {s.id: s.name for s in symbols}
    for symbol_id, uses in resolve_references(symbols, files).items():
        for use in uses:
            name = names.get((use.file_path, use.line, use.column), "")
            if use.kind == "type" or called[symbol_id] != name:
                continue  # `Foo::new()` also uses `Foo`; the label is about what `new` calls
            sites[(use.file_path, use.line, name)].append((where[symbol_id], use.resolution))
    return sites


def is_resolved(resolution: str) -> bool:
    return resolution != "name"  # older trees have no name matches: all their uses count


def score(labels: list[dict], mirror: Path, cache: Path, trees: Path | None = None) -> dict[str, dict[str, float]]:
    """Per language: sites, resolved (site, target) pairs, correct ones, precision, recall. With
    `trees`, each repository is the folder `trees/<owner>+<name>` (a committed subset) instead
    of a checkout of its commit."""
    by_tree: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for label in labels:
        by_tree[(label["repo"], label["commit"])].append(label)
    rows: dict[str, dict[str, float]] = {}
    for (repo, commit), group in sorted(by_tree.items()):
        root = trees / repo.replace("/", "+") if trees else checkout(mirror, repo, commit, cache)
        sites = resolve(root)
        for label in group:
            lang = label["language"]
            row = rows.setdefault(lang, defaultdict(float))
            found = sites.get((label["path"], label["line"], label["callee"]), [])
            resolved = {target for target, how in found if is_resolved(how)}
            named = {target for target, how in found if not is_resolved(how)}
            row["sites"] += 1
            accepted = set(label["target"].split("|"))  # a few sites have equivalent targets (Go build tags)
            row["resolved pairs"] += len(resolved)
            row["correct pairs"] += len(resolved & accepted)
            row["name matches"] += len(named)
            if label["target"] != "external":
                row["in repo"] += 1
                row["found"] += bool(resolved & accepted)
    for row in rows.values():
        row["precision"] = row["correct pairs"] / row["resolved pairs"] if row["resolved pairs"] else 1.0
        row["recall"] = row["found"] / row["in repo"] if row["in repo"] else 1.0
    return rows


def table(rows: dict[str, dict[str, float]]) -> str:
    total = defaultdict(float)
    for row in rows.values():
        for key in ("sites", "in repo", "resolved pairs", "correct pairs", "found", "name matches"):
            total[key] += row[key]
    total["precision"] = total["correct pairs"] / total["resolved pairs"] if total["resolved pairs"] else 1.0
    total["recall"] = total["found"] / total["in repo"] if total["in repo"] else 1.0
    lines = ["| language | sites | target in repo | resolved (site, target) | precision | recall | name matches |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for lang, row in sorted(rows.items()) + [("**all**", total)]:
        lines.append(f"| {lang} | {row['sites']:.0f} | {row['in repo']:.0f} | {row['resolved pairs']:.0f} | "
                     f"{row['precision']:.3f} | {row['recall']:.3f} | {row['name matches']:.0f} |")
    return "\n".join(lines)


def sample(repo: str, commit: str, language: str, count: int, mirror: Path, cache: Path, seed: int) -> list[dict]:
    """Draw call sites to label: calls whose name some definition in the repo has (the others
    are plainly external and decide nothing), source files only, at most 2 per file."""
    from codeqa.parsing.languages import file_role

    root = checkout(mirror, repo, commit, cache)
    from codeqa.indexing.file_rows import file_rows
    from codeqa.parsing.repo_files import walk_repo

    walked = walk_repo(root)
    files = []
    for found in walked.files:
        source = walked.read(found)
        if source is not None and source.language == language:
            files.append(file_rows("refs", source, 0).manifest.parse)
    defined = {s.name for f in files for s in f.symbols}
    pool = [(f.file_path, r) for f in files for r in f.references
            if r.kind == "call" and r.name in defined and file_role(f.file_path) in ("source", "test")]
    rng = random.Random(seed)
    rng.shuffle(pool)
    per_file: dict[str, int] = defaultdict(int)
    picked = []
    for path, ref in pool:
        if per_file[path] >= 2 or any(p["path"] == path and p["line"] == ref.line for p in picked):
            continue
        per_file[path] += 1
        picked.append({"repo": repo, "commit": commit, "language": language, "path": path, "line": ref.line,
                       "callee": ref.name, "qualifier": ref.qualifier, "text": ref.text, "enclosing": ref.enclosing})
        if len(picked) == count:
            break
    return picked


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", type=Path, default=LABELS)
    parser.add_argument("--mirror", type=Path, default=Path(os.environ.get("CODEQA_EVAL_MIRROR", "/work/.mirror")))
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "codeqa-refs-eval")
    parser.add_argument("--trees", type=Path, help="repositories as folders <owner>+<name> here (a subset)")
    parser.add_argument("--sample", type=int, help="draw N sites of --repo at --commit to label instead")
    parser.add_argument("--repo")
    parser.add_argument("--commit")
    parser.add_argument("--language")
    parser.add_argument("--seed", type=int, default=34)
    parser.add_argument("--json", type=Path, help="write the per-language numbers here")
    args = parser.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)
    if args.sample:
        for site in sample(args.repo, args.commit, args.language, args.sample, args.mirror, args.cache, args.seed):
            print(json.dumps(site))
        return 0
    labels = [json.loads(line) for line in args.labels.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = score(labels, args.mirror, args.cache, args.trees)
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
