"""Answers as a user sees them: the web app with the embedded model, in real Chromium.

    .venv/bin/python -m eval.answers.screenshots --model GGUF --out eval/.cache/answers/shots \\
        "where does Flask open the session of a request?" "..."

Serves `app.py` (the production server, the embedded llama.cpp model answering) on a copy of
the Flask eval's index, asks each question as `@codebase <question>` in a conversation of its
own, waits for the answer to finish, and saves a full-page screenshot of it beside a JSON of
what the page shows: the answer's text, its citations (file and line, as the links carry them)
and its notices. Nothing is scripted: the answers are the model's.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

from codeqa.core.servers import free_port

CHROMIUM = os.environ.get("CODEQA_CHROMIUM", "/usr/bin/chromium")
REPO_NAME = "eval-flask-3.1.3"


def start_app(data: Path, tree: Path = ROOT) -> tuple[subprocess.Popen, str]:
    """`tree`'s app.py on a free port with the embedded model (no endpoint configured)."""
    import time
    import urllib.request

    port = free_port()
    env = {**os.environ, "CODEQA_DATA_DIR": str(data), "HF_HUB_OFFLINE": "1", "LANCEDB_LOG": "error"}
    for name in ("CODEQA_LLM_BASE_URL", "REDIS_URL", "CODEQA_LANCEDB_URI"):
        env.pop(name, None)
    base = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([sys.executable, str(tree / "app.py"), "--port", str(port)], env=env, cwd=tree,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(base + "/api/repos", timeout=2):
                return proc, base
        except OSError:
            if proc.poll() is not None:
                raise SystemExit(f"app.py exited with {proc.returncode}")
            time.sleep(1)
    proc.terminate()
    raise SystemExit("app.py did not answer within 180 s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("questions", nargs="+")
    parser.add_argument("--model", type=Path, required=True, help="the assembled GGUF, linked in")
    parser.add_argument("--index-data", type=Path, default=ROOT / "eval" / ".cache" / "data",
                        help="a data dir holding the Flask eval's index (lancedb/)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--tree", type=Path, default=ROOT, help="the checkout whose app.py serves (its index "
                        "format must be the index's)")
    args = parser.parse_args(argv)

    from playwright.sync_api import expect, sync_playwright  # noqa: PLC0415

    args.out.mkdir(parents=True, exist_ok=True)
    data = args.out / "data"
    shutil.rmtree(data, ignore_errors=True)
    shutil.copytree(args.index_data / "lancedb", data / "lancedb")
    (data / "models").mkdir()
    (data / "models" / args.model.name).symlink_to(args.model.resolve())
    proc, base = start_app(data, args.tree.resolve())
    shown = []
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
            for number, question in enumerate(args.questions, 1):
                context = browser.new_context(viewport={"width": 1280, "height": 900})  # a conversation of its own
                page = context.new_page()
                page.goto(base)
                expect(page.get_by_test_id("repo-select")).to_have_value(REPO_NAME, timeout=60_000)  # its only repo
                box = page.get_by_test_id("message-input")
                box.fill(f"@codebase {question}")
                expect(page.get_by_test_id("send-button")).to_be_enabled(timeout=60_000)
                box.press("Enter")
                answer = page.locator("[data-testid=message][data-role=assistant]").last
                try:
                    expect(answer).to_be_visible(timeout=60_000)
                    expect(answer.get_by_test_id("status-line")).to_have_attribute(
                        "data-state", re.compile("done|failed"), timeout=900_000)
                finally:
                    page.screenshot(path=str(args.out / f"answer-{number}.png"), full_page=True)
                citations = answer.get_by_test_id("citation")
                shown.append({
                    "question": question,
                    "answer": answer.get_by_test_id("answer").inner_text(),
                    "citations": [{"file": citations.nth(i).get_attribute("data-file"),
                                   "start": citations.nth(i).get_attribute("data-start"),
                                   "end": citations.nth(i).get_attribute("data-end"),
                                   "text": citations.nth(i).inner_text()} for i in range(citations.count())],
                    "notices": answer.get_by_test_id("notice").all_inner_texts(),
                    "status": answer.get_by_test_id("status-line").inner_text(),
                    "screenshot": f"answer-{number}.png",
                })
                context.close()
                print(json.dumps(shown[-1], indent=1), flush=True)
            browser.close()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
    (args.out / "answers.json").write_text(json.dumps(shown, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
