"""Build the how-it-works items from maintainers' documents at pinned commits.

    python -m eval.howto.mine                       # rebuild items.jsonl and mining.md from PLANS
    python -m eval.howto.mine --survey owner/name   # candidates from the default document globs

Each plan names a repository, the commit its documents and code are read at, its split, and its
documents: architecture or internals documents (`architecture`) and folder READMEs
(`folder-readme`). Every passage of every document becomes a candidate (passages.py); a
candidate is kept when its mentions resolve (resolve.py) to 1–`MAX_GOLD` source files and its
masked text still says something (`MIN_WORDS` words). `mining.md` lists what was kept and why
the rest was dropped. Git objects come from local mirrors (`--mirror`, `$CODEQA_EVAL_MIRROR`)
or clones in the eval cache, as for the realistic eval (eval/realistic/corpus.py).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath

HERE = Path(__file__).resolve().parent


from codeqa.parsing import languages

from eval.howto.items import GoldFile, Item, save_items, split_problems
from eval.howto.passages import find_mentions, is_code_name, mask, resolve_mentions, split_passages, words
from eval.realistic.corpus import Corpus, CorpusError, default_cache, default_mirror, git
from eval.howto.resolve import Tree

MAX_GOLD = 4  # a passage naming more files is a list of everything, not a description of one part
MIN_WORDS = 6  # words (2+ letters) the masked passage must keep, its heading not counted
MAX_QUERY_CHARS = 2000
SHORT_WORDS = 12  # a shorter passage gets its heading as context
REPORT_FILE = HERE / "mining.md"
HELD_OUT = frozenset({"pytest-dev/pytest", "iamkun/dayjs", "tokio-rs/tokio", "FasterXML/jackson-core",
                      "grpc/grpc-go"})
DOC_SUFFIXES = (".md", ".markdown", ".rst", ".txt")
ARCHITECTURE_GLOBS = ("ARCHITECTURE.md", "*/ARCHITECTURE.md", "docs/architecture*", "docs/*/architecture*",
                      "docs/internals/*", "doc/internals/*", "docs/dev/*", "HACKING.md", "*/HACKING.md",
                      "docs/html/development/architecture/*", "developers.md", "docs/design*", "DOCS/tech-overview.txt",
                      "docs/project-layout.md", "CONTRIBUTING.md", ".github/contributing.md", ".github/CONTRIBUTING.md")
NOT_FOLDER_README = re.compile(r"(^|/)(tests?|testing|examples?|samples?|docs?|benchmarks?|bench|vendor|third_party|"
                               r"_?vendor(ed)?|cextern|extern|deps|node_modules|fixtures?|acceptance|e2e|integration|testsuite[\w-]*|website|\.github|npm|runtime|book)/", re.IGNORECASE)

CONTRIBUTING = re.compile(r"contributing", re.IGNORECASE)
# Documents that list names without describing parts: deprecation lists, changelogs, release notes.
NOT_DESCRIPTION = re.compile(r"deprecat|changelog|changes|release|history|migrat|news|upgrad", re.IGNORECASE)


@dataclass(frozen=True)
class Plan:
    repo: str
    commit: str
    split: str
    architecture: tuple[str, ...] = ARCHITECTURE_GLOBS  # globs of architecture/internals documents
    folder_readmes: bool = True  # also every README below the root in a source folder


# Commits: each mirror's newest commit when the set was built (2026-11-25).
PLANS: tuple[Plan, ...] = (
    # test
    Plan("cli/cli", "44ee17760709bedf1cad7e452e61751489b81a33", "test"),
    Plan("dandavison/delta", "f85c46ba8b913aa3208af0f3573db90286e56e18", "test"),
    Plan("nvim-telescope/telescope.nvim", "7d324792b7943e4aa16ad007212e6acc6f9fe335", "test"),
    Plan("markdown-it/markdown-it", "1e8ab89ca299351879169a79d2627fe3a356ce4a", "test"),
    Plan("postcss/postcss", "8f3784702ecb4c5fdbdccf82d9c033a450aa08d5", "test"),
    Plan("vitejs/vite", "a98c8d95d552c6fa98ab66fb810f5b39ad5abf49", "test"),
    Plan("reduxjs/redux-toolkit", "74200d87c27ca2b1c0915b2fbb4c44dd7494c2aa", "test"),
    Plan("nikic/PHP-Parser", "fbd47f7ebcbb450138d92642a0a53b72a5285dda", "test"),
    Plan("square/retrofit", "0b118105fe8436791436b8bc9c95b9aa2cfd3bdd", "test"),
    Plan("GoogleContainerTools/jib", "fb949e2676afbbd7dd7a1ef61e20251931325654", "test"),
    Plan("pypa/pip", "6d309205789d368b2749d93fd6193d584811efd5", "test"),
    Plan("simdjson/simdjson", "f807de973580fb22cc0db6b3b896716684b0266c", "test"),
    Plan("tigerbeetle/tigerbeetle", "52ad553f96355e63516ecfc8db25540c17c1c0c7", "test"),
    Plan("dart-lang/http", "a0d49cb2f80eae038c835394014aadcae8a95c8b", "test"),
    Plan("square/okhttp", "1682d9bac8c03dffde2969b0b74d47649d0dbb52", "test"),
    Plan("android/nowinandroid", "d6abd6d3e562ae0f017888f5d62042316a49a2d6", "test"),
    # train
    Plan("evanw/esbuild", "f6058f8364fe7ab91ca57a83e02577ed74c9cae4", "train"),
    Plan("helix-editor/helix", "079a789e8cb08ead67f19e1971a1b7438b37354b", "train"),
    Plan("starship/starship", "6f33dcec91b758ccbae4ed850eaa6feabff798f9", "train"),
    Plan("pydantic/pydantic", "2151025aa51263f3016502b00010b78e4481eaa1", "train"),
    Plan("mpv-player/mpv", "b955aa28f3dc93dc6b21485a0d5b7feb8e6dc10f", "train"),
    Plan("astropy/astropy", "1fdfae1fe1881234e08855ac662dae86e538ed7c", "train"),
    Plan("celery/celery", "5dc781f0bd5f36186bfcc74e0a4f9f654452c69b", "train"),
    Plan("vuejs/core", "e2bede96134f757aad5c5b33ac9be055022dbfc8", "train"),
    Plan("rollup/rollup", "89bda2cd8e9def2ea037e7dbffaf392ce9f1ddcb", "train"),
    Plan("eslint/eslint", "c27bc926e496985eb7911c09eb60914b2e4b5d0f", "train"),
    Plan("prettier/prettier", "4f84a934201322ca87750e2b9b25baf296da6560", "train"),
    Plan("colinhacks/zod", "e516c3baf22615e20934116abebfed6c000222c2", "train"),
    Plan("trpc/trpc", "340811ba5320637fbaf48fccf3dbfdd258bd34db", "train"),
    Plan("alibaba/fastjson2", "ae13900f650afcfe70c6656f0ffc2685fc63f9a2", "train"),
    Plan("apache/dubbo", "324c62550ab22ffa53bce15f219bbc1d67b8c4a3", "train"),
    Plan("netty/netty", "0bb88a3e061f77355627e7fd7fc170ffdada7578", "train"),
    Plan("opentripplanner/OpenTripPlanner", "fa993ddda8c8986209039062f15f8ff7454cb766", "train"),
)


def documents(paths: list[str], plan: Plan) -> list[tuple[str, str]]:
    """(document path, source kind) of a plan's documents at its commit."""
    docs = []
    for path in paths:
        if not path.lower().endswith(DOC_SUFFIXES) or NOT_DESCRIPTION.search(path):
            continue
        if any(fnmatchcase(path.lower(), glob.lower()) for glob in plan.architecture):
            docs.append((path, "architecture"))
        elif plan.folder_readmes and "/" in path and PurePosixPath(path).stem.lower() == "readme" \
                and not NOT_FOLDER_README.search(path):
            docs.append((path, "folder-readme"))
    return docs


def language_of(paths: list[str]) -> str:
    found = [languages.code_language(p) for p in paths]
    return Counter(found).most_common(1)[0][0] if found else "unknown"


def candidates(text: str, doc_path: str, source: str, tree: Tree, plan: Plan) -> tuple[list[Item], Counter, list]:
    """Items from one document, the reasons the other passages were dropped, and samples of drops."""
    kept: list[Item] = []
    dropped: Counter = Counter()
    samples: list[tuple[str, str]] = []
    parent = str(PurePosixPath(doc_path).parent)
    doc_dir = "" if parent == "." else parent
    for passage in split_passages(text):
        mentions = find_mentions(passage.text)
        resolve_mentions(mentions, tree, doc_dir, stems=not CONTRIBUTING.search(doc_path))
        gold: dict[str, GoldFile] = {}
        for mention in mentions:
            for path in mention.files:
                if source == "architecture" or path.startswith(doc_dir + "/") or not doc_dir:
                    gold.setdefault(path, GoldFile(path, mention.name, mention.how))
        reason = None
        if any(m.how.startswith("ambiguous") for m in mentions):
            reason = "a name matches several files"  # the passage's subject may be the one not resolved
        elif not gold:
            reason = "names no source file" if mentions else "no mention"
            if source == "folder-readme" and any(m.files for m in mentions):
                reason = "folder README names only files outside its folder"
        elif len(gold) > MAX_GOLD:
            reason = f"names more than {MAX_GOLD} source files"
        if reason:
            dropped[reason] += 1
            continue
        masked_ids = {i for i, m in enumerate(mentions) if is_code_name(m, tree, doc_dir)}
        query = mask(passage.text, mentions, masked_ids, list(gold))
        if words(query) < MIN_WORDS:
            dropped["masking leaves too little"] += 1
            samples.append(("masking leaves too little", query))
            continue
        if words(query) < SHORT_WORDS and passage.heading:
            heading_mentions = find_mentions(passage.heading)
            resolve_mentions(heading_mentions, tree, doc_dir)
            heading = mask(passage.heading, heading_mentions,
                           {i for i, m in enumerate(heading_mentions) if is_code_name(m, tree, doc_dir)}, list(gold))
            query = f"{heading}: {query}"
        if len(query) > MAX_QUERY_CHARS:
            dropped["passage too long"] += 1
            continue
        kind = "multi" if len(gold) > 1 else ("module" if next(iter(gold.values())).how in ("dir", "module")
                                               else "file")
        item_id = f"{plan.repo.replace('/', '+')}:{doc_path}:{passage.start}"
        kept.append(Item(item_id, plan.repo, language_of(list(gold)), plan.split, source, kind, plan.commit,
                         doc_path, [passage.start, passage.end], query, list(gold.values())))
    return kept, dropped, samples


def mine_plan(corpus: Corpus, plan: Plan) -> tuple[list[Item], dict]:
    if plan.repo in HELD_OUT:
        raise CorpusError(f"{plan.repo} is held out")
    corpus.fetch(plan.repo, [plan.commit])
    git_dir = corpus.git_dir(plan.repo)
    paths = [p for p in git(git_dir, "ls-tree", "-r", "-z", "--name-only", plan.commit).split("\0") if p]
    tree = Tree(paths)
    items: list[Item] = []
    stats: dict = {"docs": Counter(), "dropped": Counter(), "samples": []}
    seen_queries: set[str] = set()
    for doc_path, source in documents(paths, plan):
        raw = corpus.show(plan.repo, plan.commit, doc_path)
        if raw is None:
            continue
        found, dropped, samples = candidates(raw.decode("utf-8", "replace"), doc_path, source, tree, plan)
        stats["dropped"].update(dropped)
        stats["samples"] += samples[:2]
        for item in found:
            if item.query in seen_queries:
                stats["dropped"]["duplicate query"] += 1
                continue
            seen_queries.add(item.query)
            items.append(item)
            stats["docs"][(doc_path, source)] += 1
    return items, stats


def report(all_items: list[Item], stats: dict[str, dict]) -> str:
    lines = ["# How-it-works items: what the miner kept and dropped", "",
             "Written by `eval/howto/mine.py`. A candidate is one passage of a document.", "",
             "| repo | split | language(s) | kept | architecture | folder-readme | dropped (reasons) |",
             "|---|---|---|---|---|---|---|"]
    for repo, repo_stats in stats.items():
        mine = [i for i in all_items if i.repo == repo]
        langs = ", ".join(f"{k} {v}" for k, v in Counter(i.language for i in mine).most_common())
        reasons = "; ".join(f"{k}: {v}" for k, v in repo_stats["dropped"].most_common())
        split = mine[0].split if mine else "-"
        lines.append(f"| {repo} | {split} | {langs} | {len(mine)} | "
                     f"{sum(i.source == 'architecture' for i in mine)} | {sum(i.source == 'folder-readme' for i in mine)} "
                     f"| {reasons} |")
    lines += ["", "## Documents used", ""]
    for repo, repo_stats in stats.items():
        for (doc, source), n in sorted(repo_stats["docs"].items()):
            lines.append(f"- {repo}: `{doc}` ({source}): {n}")
    lines += ["", "## Totals", ""]
    for split in ("test", "train"):
        chosen = [i for i in all_items if i.split == split]
        lines.append(f"- {split}: {len(chosen)} items, {len({i.repo for i in chosen})} repositories; by language: "
                     + ", ".join(f"{k} {v}" for k, v in sorted(Counter(i.language for i in chosen).items()))
                     + "; by source: " + ", ".join(f"{k} {v}" for k, v in sorted(Counter(i.source for i in chosen).items()))
                     + "; by kind: " + ", ".join(f"{k} {v}" for k, v in sorted(Counter(i.kind for i in chosen).items())))
    lines += ["", "## Dropped for masking, samples", ""]
    for repo, repo_stats in stats.items():
        for reason, query in repo_stats["samples"][:3]:
            lines.append(f"- {repo}: {query[:160]!r}")
    return "\n".join(lines) + "\n"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=Path, help="local bare mirrors at DIR/<owner>+<name>/repo")
    parser.add_argument("--cache", type=Path)
    parser.add_argument("--survey", nargs="+", metavar="OWNER/NAME", help="print the candidates of these "
                        "repositories at their mirror's HEAD with the default globs; write nothing")
    parser.add_argument("--show", type=int, default=0, help="with --survey: print N kept queries per repository")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    corpus = Corpus(args.cache or default_cache(), args.mirror or default_mirror())
    if args.survey:
        for repo in args.survey:
            head = git(corpus.git_dir(repo), "rev-parse", "HEAD").strip()
            items, stats = mine_plan(corpus, Plan(repo, head, "test"))
            langs = Counter(i.language for i in items)
            print(f"{repo} {head[:12]}: {len(items)} kept {dict(langs)}; dropped {dict(stats['dropped'])}; "
                  f"docs {dict(Counter(d for d, _ in stats['docs']))}")
            for item in items[:args.show]:
                print(f"   [{item.source}/{item.kind}] {item.query[:220]!r} -> {item.gold_paths}")
        return 0
    all_items: list[Item] = []
    stats: dict[str, dict] = {}
    for plan in PLANS:
        items, stats[plan.repo] = mine_plan(corpus, plan)
        all_items += items
        print(f"{plan.repo}: {len(items)} items", file=sys.stderr)
    problems = split_problems(all_items)
    if problems:
        print("error: " + "; ".join(problems[:10]), file=sys.stderr)
        return 1
    save_items(all_items)
    REPORT_FILE.write_text(report(all_items, stats), encoding="utf-8")
    print(f"{len(all_items)} items from {len(stats)} repositories; report: {REPORT_FILE}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
