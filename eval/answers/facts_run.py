"""The fact eval through the real chat pipeline: index each repository at its pinned commit, ask
every question, score the answer and the context it was given.

    # from the root of the code tree under test (its codeqa/ answers):
    python -m eval.answers.facts_run ask --label base --mirror /work/.mirror
    python -m eval.answers.facts_run ask --label base --mirror /work/.mirror \\
        --repos pallets/click --kinds callers why --per-repo 3          # a slice
    python -m eval.answers.facts_run ask --label endpoint --llm configured  # CODEQA_LLM_* from the env
    # tables (per kind, per repository, per language), runs side by side:
    python -m eval.answers.facts_run report eval/.cache/facts/base.json [other.json ...] \\
        --out eval/answers/facts_results.md

    # a tree without this eval (an older commit) answering, this tree scoring:
    PYTHONSAFEPATH=1 PYTHONPATH=/path/to/old-tree:/path/to/this-tree \\
        python -m eval.answers.facts_run ask --label before ...

`ask` checks each repository out of its mirror (`git archive` of the pinned commit into
`<work>/checkouts/`, once), indexes it with `codeqa.index_repo` into `<work>/<label>/data`
(incremental: a second run finds it indexed), then opens one `codeqa.Services` over that data
dir and asks each item as `@codebase <question>` in a conversation of its own through
`services.chat`, the pipeline the web app streams. By default the embedded model answers
(`--llm embedded`); `--llm configured` keeps the environment's `CODEQA_LLM_BASE_URL` and model.
Nothing is mocked. Each answered item is written to the JSON at once (a stopped run keeps its
answers): the answer, the sources it was shown, the context text, which gold facts the answer
holds and which the context holds (`facts.py` says how they are matched), first-token and total
seconds. The machine is not idle during the run unless you make it so: say how loaded it was.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from eval.answers.facts import KINDS, Item, Repo, load_items, load_repos, score_row, table
from eval.answers.run import PeakRss, Turns, percentile

EVAL_DIR = Path(__file__).resolve().parents[1]
DEFAULT_WORK = EVAL_DIR / ".cache" / "facts"
MIRROR_ENV = "CODEQA_EVAL_MIRROR"
GROUPINGS = ("kind", "repo", "language")
SOURCE_KEYS = ("file_path", "start_line", "end_line", "qualified_name", "kind", "source")  # of each sources-panel entry


# --- Pure parts (tested) -------------------------------------------------------------------------


def select(items: list[Item], repos: list[str] | None = None, kinds: list[str] | None = None,
           ids: list[str] | None = None, per_repo: int | None = None) -> list[Item]:
    """The items to ask, in file order; `per_repo` takes that many of each repository, one of each
    kind in turn, so a small slice still holds every kind."""
    picked = [i for i in items if (not repos or i.repo in repos) and (not kinds or i.kind in kinds)
              and (not ids or i.id in ids)]
    if not per_repo:
        return picked
    out: list[Item] = []
    for repo in dict.fromkeys(i.repo for i in picked):
        queues = {kind: [i for i in picked if i.repo == repo and i.kind == kind] for kind in KINDS}
        taken: list[Item] = []
        while len(taken) < per_repo and any(queues.values()):
            for kind in KINDS:
                if queues[kind] and len(taken) < per_repo:
                    taken.append(queues[kind].pop(0))
        out.extend(sorted(taken, key=picked.index))
    return out


def repo_index_name(repo: str) -> str:
    """The name each repository is indexed under (`owner+name`: a valid CodeQA repo name)."""
    return repo.replace("/", "+")


def answer_row(item: Item, events: list[tuple[str, dict, float]], context: str, started: float) -> dict:
    """One answered item from the chat's events (name, data, time.perf_counter() when it came)
    and the stored context text: what was said and shown, timed, with its fact scores."""
    tokens: list[str] = []
    first = None
    sources: list[dict] = []
    notices: list[dict] = []
    errors: list[str] = []
    done: dict = {}
    listed: dict | None = None  # the `facts` event: a structural question's exact lookup
    ended = started
    for name, data, at in events:
        ended = at
        if name == "token":
            first = first if first is not None else at
            tokens.append(data.get("text", ""))
        elif name == "sources":
            sources = [{k: s[k] for k in SOURCE_KEYS if k in s} for s in data.get("results", []) if isinstance(s, dict)]
        elif name == "notice":
            notices.append(data)
        elif name == "facts":
            listed = data
        elif name == "error":
            errors.append(data.get("message", ""))
        elif name == "done":
            done = data
    answer = "".join(tokens)
    return {
        "id": item.id, "repo": item.repo, "language": item.language, "kind": item.kind, "question": item.question,
        "answer": answer, "sources": sources, "context": context, "notices": notices, "errors": errors,
        "first_token_s": (first - started) if first is not None else None, "total_s": ended - started,
        "prompt_tokens": done.get("prompt_tokens"), **score_row(item, answer, context),
        "facts_list": listed, "facts_list_has_fact": score_row(item, facts_text(listed), "")["answer_has_fact"]
        if listed else None,
    }


def facts_text(listed: dict | None) -> str:
    """The `facts` event's list as text the scorer reads: each item's name and `path:line` (its
    call or import line, and its range), as the page shows them."""
    if not listed:
        return ""
    return "\n".join(f"`{i['name']}` {i['file_path']}:{i['line']} {i['file_path']}:{i['start_line']}-{i['end_line']}"
                     for i in listed.get("items", []))


def rescore(run: dict, items: dict[str, Item]) -> None:
    """Score a stored run's answers and contexts again with the current gold (after a label fix);
    rows of items no longer in the set are dropped."""
    run["rows"] = [{**row, **score_row(items[row["id"]], row["answer"], row["context"])}
                   for row in run["rows"] if row["id"] in items]


def timings_line(run: dict) -> str:
    """First-token and whole-answer p50 / p95, the embedded server's peak RSS, and the box's load
    over the run (the 1-minute load average after each answer: its median and its maximum)."""
    def seconds(key: str) -> str:
        values = [r[key] for r in run["rows"] if r.get(key) is not None]
        p50, p95 = percentile(values, 0.5), percentile(values, 0.95)
        return f"{p50:.1f} / {p95:.1f} s" if p50 is not None and p95 is not None else "–"

    loads = [r["load_1min"] for r in run["rows"] if r.get("load_1min") is not None]
    rss = run.get("server_peak_rss_mb")
    listed = [r for r in run["rows"] if r.get("facts_list")]
    return (f"first token p50 / p95 {seconds('first_token_s')}; whole answer p50 / p95 {seconds('total_s')}; "
            f"server peak RSS {f'{rss:.0f} MB' if rss else '–'}; "
            f"1-minute load median {f'{percentile(loads, 0.5):.1f}, max {max(loads):.1f}' if loads else '–'}; "
            f"an index lookup's list shown for {len(listed)} questions, holding a gold fact in "
            f"{sum(bool(r['facts_list_has_fact']) for r in listed)}")


def report_tables(run: dict, groupings: tuple[str, ...] = GROUPINGS) -> str:
    """One run's tables, one per grouping, under a heading that says what answered."""
    head = (f"### {run['label']} ({run.get('commit', '?')}, {run.get('llm', '?')}): "
            f"{len(run['rows'])} questions, load {' / '.join(f'{x:.1f}' for x in run.get('load', []))}")
    return "\n\n".join([head, timings_line(run), *(table(run["rows"], by) for by in groupings)])


def misses(run: dict) -> list[str]:
    """The items whose context held a gold fact but whose answer held none: the model's misses."""
    return [f"- {r['id']} ({r['kind']}): context had {', '.join(r['context_facts'])}"
            for r in run["rows"] if r["context_has_fact"] and not r["answer_has_fact"]]


# --- Checkouts and indexes -----------------------------------------------------------------------


def checkout(repo: Repo, mirror: Path, work: Path) -> Path:
    """The repository's files at its pinned commit (a `git archive` of the mirror, made once)."""
    target = work / "checkouts" / f"{repo.slug}-{repo.commit[:12]}"
    marker = target / ".facts-checkout-complete"
    if marker.exists():
        return target
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    git_dir = mirror / repo.slug / "repo"
    archive = subprocess.Popen(["git", "--git-dir", str(git_dir), "archive", "--format=tar", repo.commit],
                               stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", str(target)], stdin=archive.stdout, check=True)
    if archive.wait() != 0:
        raise SystemExit(f"git archive of {repo.name}@{repo.commit} from {git_dir} failed")
    marker.write_text(repo.commit + "\n", encoding="utf-8")
    return target


def _tree_commit() -> str:
    """The commit of the code tree whose `codeqa` package answers."""
    import codeqa

    root = Path(codeqa.__file__).resolve().parents[1]
    found = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False)
    dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True, check=False).stdout.strip()
    return f"{found.stdout.strip() or '?'}{' (+ uncommitted changes)' if dirty else ''} at {root}"


def _settings(data: Path, llm: str):
    import codeqa

    overrides: dict = {"data_dir": data, "lancedb_uri": "", "redis_url": ""}
    if llm == "embedded":
        overrides.update(llm_base_url="", local_llm=True)
    return codeqa.Settings.from_env(**overrides)


def _events(services, item: Item, user: str) -> Iterator[tuple[str, dict, float]]:
    from codeqa.chat.answer import ChatTurn

    turn = ChatTurn(user=user, repo=repo_index_name(item.repo), message=f"@codebase {item.question}", hyde=False)
    for name, data in services.chat.run(turn):
        yield name, data, time.perf_counter()


def ask(args: argparse.Namespace) -> int:
    os.environ.setdefault("LANCEDB_LOG", "error")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import codeqa

    if args.mirror is None:
        raise SystemExit(f"no mirror: pass --mirror or set ${MIRROR_ENV}")
    repos = load_repos()
    items = select(load_items(), args.repos, args.kinds, args.ids, args.per_repo)
    if not items:
        raise SystemExit("no items selected")
    data = args.work / args.label / "data"
    if args.model is not None:  # an assembled model, linked in instead of assembled again
        link = data / "models" / args.model.name
        link.parent.mkdir(parents=True, exist_ok=True)
        if not link.exists():
            link.symlink_to(args.model.resolve())
    settings = _settings(data, args.llm)
    indexed = {}
    for name in dict.fromkeys(i.repo for i in items):
        root = checkout(repos[name], args.mirror, args.work)
        started = time.perf_counter()
        report = codeqa.index_repo(root, settings, name=repo_index_name(name), progress=False)
        indexed[name] = {"seconds": round(time.perf_counter() - started, 1), "summary": str(report)[:300]}
        print(f"[{args.label}] indexed {name} in {indexed[name]['seconds']} s", file=sys.stderr, flush=True)
    run = {"label": args.label, "commit": _tree_commit(), "llm": args.llm, "indexed": indexed, "rows": []}
    turns = Turns(args.turns, *args.turn) if args.turns else Turns(None, 0, 1)
    with codeqa.Services(settings) as services:
        if args.llm == "embedded":  # start the embedded server before the first question is timed
            services.llm.complete("chat", [{"role": "user", "content": "Say OK."}], max_tokens=2)
        rss = PeakRss(lambda: services.llm.server.pid if services.llm.server else None)
        rss.start()
        for number, item in enumerate(items, 1):
            user = f"facts-{args.label}-{item.id}"
            turns.wait(number - 1)
            started = time.perf_counter()
            events = list(_events(services, item, user))
            turns.done(number - 1)
            stored = services.store.load_context(user, repo_index_name(item.repo))
            row = answer_row(item, events, stored.text if stored else "", started)
            row["load_1min"] = os.getloadavg()[0]
            run["rows"].append(row)
            run["load"] = os.getloadavg()
            run["server_peak_rss_mb"] = rss.peak / 2**20
            _write(args.json, run)
            print(f"[{args.label}] {number}/{len(items)} {item.id} first {row['first_token_s'] or 0:.1f} s "
                  f"total {row['total_s']:.1f} s answer {row['answer_facts']} context {row['context_facts']}",
                  file=sys.stderr, flush=True)
    _write(args.json, run)
    print(report_tables(run))
    return 0


def _write(path: Path, run: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(run, indent=1), encoding="utf-8")


def report(args: argparse.Namespace) -> int:
    runs = [json.loads(path.read_text(encoding="utf-8")) for path in args.runs]
    if args.rescore:
        items = {item.id: item for item in load_items()}
        for run in runs:
            rescore(run, items)
    parts = []
    for run in runs:
        parts.append(report_tables(run, tuple(args.by)))
        missed = misses(run)
        if missed:
            parts.append("Context held a fact, the answer none:\n" + "\n".join(missed))
    text = "\n\n".join(parts)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    one = sub.add_parser("ask", help="answer the questions with this code tree")
    one.add_argument("--label", required=True)
    one.add_argument("--json", type=Path, help="where the run goes (default: <work>/<label>.json)")
    one.add_argument("--mirror", type=Path, default=os.environ.get(MIRROR_ENV),
                     help=f"bare mirrors at <owner>+<name>/repo (default: ${MIRROR_ENV})")
    one.add_argument("--work", type=Path, default=DEFAULT_WORK, help="checkouts and data dirs (default: eval/.cache/facts)")
    one.add_argument("--llm", choices=("embedded", "configured"), default="embedded",
                     help="embedded: the bundled model; configured: CODEQA_LLM_BASE_URL and friends from the environment")
    one.add_argument("--model", type=Path, help="the assembled GGUF of the embedded model, linked into the data dir "
                                                "instead of assembled there (it is checked against its pinned size)")
    one.add_argument("--repos", nargs="+", metavar="OWNER/NAME")
    one.add_argument("--kinds", nargs="+", choices=KINDS)
    one.add_argument("--ids", nargs="+")
    one.add_argument("--per-repo", type=int, help="this many items of each repository, every kind in turn")
    one.add_argument("--turns", type=Path, help="a file shared with runs of other trees: take turns with them, "
                                                "one question each (write 0 to it first), so both meet the same load")
    one.add_argument("--turn", type=int, nargs=2, default=(0, 1), metavar=("ME", "OF"),
                     help="this run's place among the runs taking turns, and how many there are")
    both = sub.add_parser("report", help="tables of one or more runs")
    both.add_argument("runs", type=Path, nargs="+")
    both.add_argument("--by", nargs="+", choices=GROUPINGS, default=list(GROUPINGS))
    both.add_argument("--out", type=Path)
    both.add_argument("--rescore", action="store_true", help="score the stored answers again with the current facts.jsonl")
    args = parser.parse_args(argv)
    if args.command == "ask":
        args.json = args.json or args.work / f"{args.label}.json"
        return ask(args)
    return report(args)


if __name__ == "__main__":
    sys.exit(main())
