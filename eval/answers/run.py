"""Answer eval: the Flask questions through the real chat pipeline with the embedded model.

    # one code tree (run from inside it: its codeqa/ and eval/ are imported), answers to JSON:
    .venv/bin/python -m eval.answers.run ask --label after --json eval/.cache/answers/after.json
    (cd /work/wt-answers-before && /work/main/.venv/bin/python -m eval.answers.run ask --label before \\
        --json /work/main/eval/.cache/answers/before.json)
    # the table (before and after side by side) to stdout and eval/answers/results.md:
    .venv/bin/python -m eval.answers.run report eval/.cache/answers/before.json eval/.cache/answers/after.json

Each question (eval/questions.jsonl: Flask 3.1.3's sdist, gold files known) is asked as
`@codebase <question>` in a conversation of its own, through `Services(settings).chat`, the
same pipeline the web app streams; the embedded llama.cpp server answers. Nothing is mocked.
The index is the Flask eval's (eval/run_eval.py builds it); each run works on a copy of it,
so two trees never share a chat store or an LLM server.

Metrics (over the questions asked):
    cites a source      the answer cites (`path:line`) a file of the context the model was given
    cites gold          it cites a gold file, over the answers whose context held one
    degenerate          it loops (a line of 20+ characters, or a run of 12 words, three times), was
                        cut at max_tokens (the server's log says how many tokens it generated), or
                        repeats 8 words in a row of the prompt's fixed instructions (an echo of
                        them, or of an example in them, instead of an answer)
    with a notice       of the looping or cut answers, those whose stream carried a notice saying so
    first token, total  seconds from sending the message to the first answer token / to `done`
    prompt tokens       the whole prompt, as the server's log counts it (cached prefix included)
    server RSS          the embedded server's peak resident memory during the run

This measures one code tree's answers as they are: run both trees on the same box, one after
the other, and say how loaded it was.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import threading
import time
from pathlib import Path

EVAL_DIR = Path(__file__).resolve().parents[1]
QUESTIONS = EVAL_DIR / "questions.jsonl"
RESULTS_MD = Path(__file__).resolve().parent / "results.md"
REPO_NAME = "eval-flask-3.1.3"
LOOP_LINE_CHARS, LOOP_WORDS, LOOP_REPEATS = 20, 12, 3
CITATION = re.compile(r"([A-Za-z0-9_.\-/]*[A-Za-z0-9_\-]\.[A-Za-z0-9]+):\d+")  # the UI's citation pattern
CONTEXT_FILE = re.compile(r"^### (\S+) \(", re.MULTILINE)


def load_questions(sample: int | None) -> list[dict]:
    """Every question, or `sample` of them taken in turn from each kind (how, where, bug, doc),
    in that order, so a shorter run, or one stopped early, still holds every kind."""
    rows = [json.loads(line) for line in QUESTIONS.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not sample or sample >= len(rows):
        return rows
    by_kind: dict[str, list[dict]] = {}
    for row in rows:
        by_kind.setdefault(row["kind"], []).append(row)
    picked: list[dict] = []
    while len(picked) < sample:
        for kind_rows in by_kind.values():
            if kind_rows and len(picked) < sample:
                picked.append(kind_rows.pop(0))
    return picked


# --- One run: ask every question through one code tree's chat pipeline ---------------------------


def copies(text: str, instructions: str, words: int = 8) -> bool:
    """Whether an answer repeats a run of `words` words of the prompt's fixed instructions (a small
    model echoing its instructions or an example in them instead of answering)."""
    said = instructions.split()
    runs = {tuple(said[i:i + words]) for i in range(len(said) - words + 1)}
    answer = text.split()
    return any(tuple(answer[i:i + words]) in runs for i in range(len(answer) - words + 1))


def loops(text: str) -> bool:
    """The eval's own loop test, the same for every code tree."""
    lines = [" ".join(line.split()) for line in text.splitlines()]
    counts: dict[str, int] = {}
    for line in lines:
        if len(line) >= LOOP_LINE_CHARS:
            counts[line] = counts.get(line, 0) + 1
    words = text.split()
    runs: dict[tuple[str, ...], int] = {}
    for i in range(len(words) - LOOP_WORDS + 1):
        run = tuple(words[i:i + LOOP_WORDS])
        runs[run] = runs.get(run, 0) + 1
    return max([*counts.values(), *runs.values(), 0]) >= LOOP_REPEATS


class ServerLog:
    """What the embedded llama.cpp server logged for each answer: prompt and generated tokens."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = path.stat().st_size if path.exists() else 0

    def since_last(self) -> dict:
        text = self.path.read_text(encoding="utf-8", errors="replace")[self.offset:] if self.path.exists() else ""
        self.offset += len(text)
        prefix = [int(m) for m in re.findall(r"(\d+) prefix-match hit", text)]
        evaluated = [(int(n), float(ms)) for ms, n in re.findall(r"prompt eval time =\s*([\d.]+) ms /\s*(\d+) tokens", text)]
        generated = [(int(n), float(ms)) for ms, n in re.findall(r"\beval time =\s*([\d.]+) ms /\s*(\d+) runs", text)]
        if not evaluated:
            return {}
        n_eval, eval_ms = evaluated[-1]
        n_gen, gen_ms = generated[-1] if generated else (0, 0.0)
        return {"prompt_tokens": n_eval + (prefix[-1] if len(prefix) == len(evaluated) else 0),
                "prompt_evaluated": n_eval, "prompt_tok_s": n_eval / eval_ms * 1000 if eval_ms else None,
                "generated": n_gen + 1, "gen_tok_s": n_gen / gen_ms * 1000 if gen_ms else None}


class PeakRss(threading.Thread):
    """The peak resident memory of the process `pid()` names, sampled twice a second."""

    def __init__(self, pid) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.peak = 0
        self.stop = threading.Event()

    def run(self) -> None:
        import psutil

        while not self.stop.wait(0.5):
            try:
                pid = self.pid()
                if pid:
                    self.peak = max(self.peak, psutil.Process(pid).memory_info().rss)
            except psutil.Error:
                continue


class Turns:
    """Runs of several code trees taking turns question by question, through a shared file that
    holds the number of the next turn: on a box that others share, before and after then meet
    the same load, which two runs one after the other would not."""

    def __init__(self, path: Path | None, me: int, of: int) -> None:
        self.path, self.me, self.of = path, me, of

    def wait(self, step: int) -> None:
        while self.path is not None and int(self.path.read_text() or 0) < step * self.of + self.me:
            time.sleep(0.2)

    def done(self, step: int) -> None:
        if self.path is not None:
            self.path.write_text(str(step * self.of + self.me + 1))


def prepare_data(index_data: Path, work: Path, model: Path | None) -> Path:
    """A private copy of the index's data dir (its chat store and LLM server state stay apart)."""
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(index_data / "lancedb", work / "lancedb")
    if model is not None:
        (work / "models").mkdir(parents=True)
        (work / "models" / model.name).symlink_to(model)
    return work


def ask_one(services, chat_turn, question: dict, log: ServerLog, limit_default: int, instructions: str) -> dict:
    """One question through the chat; what streamed back, timed, with what the server logged."""
    message = f"@codebase {question['query']}"
    repo = question["repo"]
    user = f"eval-{question['id']}"
    started = time.perf_counter()
    first = None
    tokens: list[str] = []
    notices: list[dict] = []
    done: dict = {}
    errors: list[str] = []
    for name, data in services.chat.run(chat_turn(user=user, repo=repo, message=message, hyde=False)):
        if name == "token":
            first = first or time.perf_counter()
            tokens.append(data["text"])
        elif name == "notice":
            notices.append(data)
        elif name == "error":
            errors.append(data.get("message", ""))
        elif name == "done":
            done = data
    total = time.perf_counter() - started
    stored = services.store.load_context(user, repo)
    context = stored.text if stored else ""
    answer = "".join(tokens)
    time.sleep(1.0)  # the server logs an answer's timings as it finishes it, a moment after the stream
    served = log.since_last()
    max_tokens = done.get("max_tokens") or limit_default
    context_files = set(CONTEXT_FILE.findall(context))
    cited = {m for m in CITATION.findall(answer) if m in context_files}
    gold = set(question["gold_files"])
    return {
        "id": question["id"], "kind": question["kind"], "repo": repo, "answer": answer, "notices": notices, "errors": errors,
        "context_files": sorted(context_files), "cited": sorted(cited),
        "gold_in_context": bool(gold & context_files), "cites_gold": bool(gold & cited),
        "loops": loops(answer), "copies_prompt": copies(answer, instructions), "cut": served.get("generated", 0) >= max_tokens, "max_tokens": max_tokens,
        "first_token_s": (first - started) if first else None, "total_s": total,
        "prompt_tokens": done.get("prompt_tokens") or served.get("prompt_tokens"), **{
            k: served.get(k) for k in ("prompt_evaluated", "prompt_tok_s", "generated", "gen_tok_s")},
    }


def load_realistic(cache: Path, repos: list[str], limit: int | None) -> list[dict]:
    """The realistic eval's test-split items of these repositories whose pre-fix snapshot is in
    `cache` (eval/realistic/snapshots.py's store): the issue report or commit message is the
    question, the files its fix changed are the gold, and the snapshot is the index it is asked of."""
    from eval.realistic.items import load_items  # noqa: PLC0415 - after the tree's codeqa is on the path
    from eval.realistic.snapshots import SnapshotStore  # noqa: PLC0415

    store = SnapshotStore(cache)
    picked = []
    for item in load_items():
        snapshot = store.load(item.repo, item.base_commit) if item.split == "test" and item.repo in repos else None
        if snapshot is not None:
            picked.append({"id": item.id, "kind": f"realistic {item.query_type}", "query": item.query,
                           "gold_files": item.gold_paths, "repo": snapshot.index_name,
                           "index_data": snapshot.directory, "checkout": (item.repo, item.base_commit)})
    return picked[:limit] if limit else picked


def realistic_checkout(args: argparse.Namespace, repo: str, commit: str) -> Path:
    """The repository's work tree at `commit`, one per run (eval/realistic/corpus.py checks it out
    from the mirror): the chat reads its sources from the files, which must be the indexed ones."""
    from eval.realistic.corpus import Corpus, default_mirror  # noqa: PLC0415

    return Corpus(args.work / args.label / "corpus", args.realistic_mirror or default_mirror()).checkout(repo, commit)


def point_at_checkout(data: Path, repo: str, root: Path) -> None:
    """Record `root` as the indexed repository's folder in the copied index's registry (a
    snapshot's registry names the realistic eval's own work tree, which has moved on since)."""
    import lancedb  # noqa: PLC0415

    table = lancedb.connect(str(data / "lancedb")).open_table("codeqa_repos")
    table.update(where=f"name = '{repo}'", values={"root": str(root)})


def ask(args: argparse.Namespace) -> int:
    tree = EVAL_DIR.parent  # the checkout this module, and so its codeqa/, was imported from
    os.environ.setdefault("LANCEDB_LOG", "error")
    from codeqa.chat.answer import ChatTurn  # noqa: PLC0415 - from the tree under test
    from codeqa.core.config import Settings  # noqa: PLC0415
    from codeqa.llm.prompts import CHAT_SYSTEM  # noqa: PLC0415
    from codeqa.services import Services  # noqa: PLC0415

    questions = interleave([{**q, "repo": REPO_NAME, "index_data": args.index_data} for q in load_questions(args.sample)],
                           load_realistic(args.realistic_cache, args.realistic_repos, args.realistic)
                           if args.realistic else [])
    left = {}  # questions still to ask of each index: its Services close after its last one
    for question in questions:
        left[question["index_data"]] = left.get(question["index_data"], 0) + 1
    opened: dict[Path, tuple] = {}
    rows: list[dict] = []
    peak_rss = 0
    turns = Turns(args.turns, *args.turn) if args.turns else Turns(None, 0, 1)
    step = 0
    for question in questions:
        index_data = question["index_data"]
        if index_data not in opened:  # one Services (chat store, LLM server) per index
            data = prepare_data(index_data, args.work / args.label / str(len(rows)), args.model)
            if "checkout" in question:  # the sources are read from the work tree, at the index's commit
                point_at_checkout(data, question["repo"], realistic_checkout(args, *question["checkout"]))
            settings = Settings.from_env(data_dir=data, lancedb_uri="", llm_base_url="", local_llm=True, redis_url="")
            services = Services(settings).__enter__()
            turns.wait(step)
            services.llm.complete("chat", [{"role": "user", "content": "Say OK."}], max_tokens=2)  # start, warm up
            turns.done(step)
            step += 1
            rss = PeakRss(lambda services=services: services.llm.server.pid if services.llm.server else None)
            rss.start()
            opened[index_data] = (services, settings, ServerLog(data / "logs" / "llama-server.log"), rss)
        services, settings, log, rss = opened[index_data]
        turns.wait(step)
        row = ask_one(services, ChatTurn, question, log, settings.answer_tokens, CHAT_SYSTEM)
        turns.done(step)
        step += 1
        row["load_1min"] = os.getloadavg()[0]
        rows.append(row)
        peak_rss = max(peak_rss, rss.peak)
        print(f"[{args.label}] {len(rows)}/{len(questions)} {question['id']} first {row['first_token_s'] or 0:.1f} s "
              f"total {row['total_s']:.1f} s cited {row['cited']} gold {row['cites_gold']} "
              f"loop {row['loops']} cut {row['cut']}", file=sys.stderr, flush=True)
        _write(args, tree, rows, peak_rss)  # after every answer: a long run's answers so far survive it
        left[index_data] -= 1
        if not left[index_data]:
            rss.stop.set()
            rss.join()
            peak_rss = max(peak_rss, rss.peak)
            services.__exit__(None, None, None)
            del opened[index_data]
    _write(args, tree, rows, peak_rss)
    return 0


def interleave(questions: list[dict], others: list[dict]) -> list[dict]:
    """`others` spread evenly among `questions`, so a run stopped early still holds both."""
    merged = list(questions)
    for place, other in enumerate(others, 1):
        merged.insert(round(place * len(merged) / (len(others) + 1)), other)
    return merged


def _write(args: argparse.Namespace, tree: Path, rows: list[dict], peak_rss: int) -> None:
    out = {"label": args.label, "tree": str(tree), "commit": _commit(tree), "load": os.getloadavg(),
           "server_peak_rss_mb": peak_rss / 2**20, "rows": rows}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(out, indent=1), encoding="utf-8")


def _commit(tree: Path) -> str:
    import subprocess  # noqa: PLC0415

    found = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(tree), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return found.stdout.strip() + (" (+ uncommitted changes)" if dirty else "")


# --- The report: runs side by side ------------------------------------------------------------


def percentile(values: list[float], q: float) -> float | None:
    values = sorted(v for v in values if v is not None)
    if not values:
        return None
    return values[min(len(values) - 1, round(q * (len(values) - 1)))]


def summarize(run: dict) -> dict[str, str]:
    rows = run["rows"]
    n = len(rows)
    with_gold = [r for r in rows if r["gold_in_context"]]
    degenerate = [r for r in rows if r["loops"] or r["cut"] or r.get("copies_prompt")]
    noticed = [r for r in rows if (r["loops"] or r["cut"]) and {x["code"] for x in r["notices"]} & {"cut", "loop"}]

    def seconds(values: list[float | None], q: float) -> str:
        found = percentile(values, q)
        return f"{found:.1f}" if found is not None else "–"

    def median(key: str) -> str:
        values = [r[key] for r in rows if r.get(key)]
        return f"{statistics.median(values):.0f}" if values else "–"

    return {
        "questions": str(n),
        "cites a source": f"{sum(bool(r['cited']) for r in rows) / n:.2f}",
        "cites gold (context held gold)": f"{sum(r['cites_gold'] for r in with_gold) / max(1, len(with_gold)):.2f} "
                                          f"(of {len(with_gold)})",
        "degenerate (loop, cut or copied prompt)": f"{len(degenerate) / n:.2f} ({len(degenerate)})",
        "… loops / cuts / copied prompt": f"{sum(r['loops'] for r in rows)} / {sum(r['cut'] for r in rows)} / "
                                          f"{sum(bool(r.get('copies_prompt')) for r in rows)}",
        "… loops and cuts with a notice": f"{len(noticed)} of {sum(bool(r['loops'] or r['cut']) for r in rows)}",
        "first token p50 / p95 (s)": f"{seconds([r['first_token_s'] for r in rows], 0.5)} / "
                                     f"{seconds([r['first_token_s'] for r in rows], 0.95)}",
        "whole answer p50 / p95 (s)": f"{seconds([r['total_s'] for r in rows], 0.5)} / "
                                      f"{seconds([r['total_s'] for r in rows], 0.95)}",
        "prompt tokens p50": median("prompt_tokens"),
        "generated tokens p50": median("generated"),
        "prompt eval tok/s p50": median("prompt_tok_s"),
        "generation tok/s p50": median("gen_tok_s"),
        "server peak RSS (MB)": f"{run['server_peak_rss_mb']:.0f}",
        "load average at the end": " / ".join(f"{x:.1f}" for x in run["load"]),
    }


def report(args: argparse.Namespace) -> int:
    runs = [json.loads(path.read_text(encoding="utf-8")) for path in args.runs]
    summaries = [summarize(run) for run in runs]
    lines = ["| metric | " + " | ".join(f"{r['label']} ({r['commit']})" for r in runs) + " |",
             "|---|" + "---|" * len(runs)]
    for key in summaries[0]:
        lines.append(f"| {key} | " + " | ".join(s[key] for s in summaries) + " |")
    table = "\n".join(lines)
    print(table)
    if args.out:
        args.out.write_text(table + "\n", encoding="utf-8")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    one = sub.add_parser("ask", help="answer the questions with one code tree")
    one.add_argument("--label", required=True)
    one.add_argument("--json", type=Path, required=True)
    one.add_argument("--index-data", type=Path, default=EVAL_DIR / ".cache" / "data",
                     help="the Flask eval's data dir (eval/run_eval.py builds it)")
    one.add_argument("--work", type=Path, default=EVAL_DIR / ".cache" / "answers")
    one.add_argument("--model", type=Path, help="the assembled GGUF, linked in instead of assembled again")
    one.add_argument("--sample", type=int, help="this many questions, every kind in turn (default: all 58)")
    one.add_argument("--turns", type=Path, help="a file shared with runs of other trees: take turns with them, "
                                                "one question each (write 0 to it first)")
    one.add_argument("--turn", type=int, nargs=2, default=(0, 1), metavar=("ME", "OF"),
                     help="this run's place among the runs taking turns, and how many there are")
    one.add_argument("--realistic", type=int, default=0,
                     help="also this many of the realistic eval's test-split items (default: none)")
    one.add_argument("--realistic-repos", nargs="+", default=["psf/requests"], metavar="OWNER/NAME")
    one.add_argument("--realistic-cache", type=Path, default=Path(os.environ.get("CODEQA_EVAL_CACHE", "~/.cache/codeqa-eval")).expanduser(),
                     help="the realistic eval's cache, whose snapshots are the indexes asked (eval/realistic/snapshots.py)")
    one.add_argument("--realistic-mirror", type=Path, help="git mirrors of the realistic repositories "
                     "(default: $CODEQA_EVAL_MIRROR; each item's commit is checked out from them)")
    both = sub.add_parser("report", help="the runs side by side")
    both.add_argument("runs", type=Path, nargs="+")
    both.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    return ask(args) if args.command == "ask" else report(args)


if __name__ == "__main__":
    raise SystemExit(main())
