"""Embedded llama.cpp server settings, measured: prompt-eval and generation tokens/s, and RSS.

    .venv/bin/python -m eval.answers.server_bench --model FILE [--runs 3] [--config NAME ...]

Each configuration starts `llama_cpp.server` with its flags (as `codeqa/llm/server.py` would,
niced the same), streams the same answers from it and samples the server's RSS ten times a
second. A run sends three prompts of about 1,000 tokens that share their first ~300 (the
instructions, as every chat answer does), so the second and third show what reusing the cached
prefix saves (`nologits-1t-no-prefix-reuse` opens every prompt differently: nothing reused). Prompt tokens are counted by the server's own tokenizer (`/extras/tokenize/count`).

    prompt tok/s      prompt tokens evaluated (not reused) / time to the first token
    gen tok/s         (streamed tokens - 1) / (time after the first token)
    peak RSS          the most resident memory the server held during the configuration's runs

Numbers depend on the load on the box: run the configurations you compare in one go.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[2]

from codeqa.chat.answer import answer_grammar
from codeqa.core.servers import answers, free_port, niced, wait_until_ready

BASE_FLAGS = ["--n_ctx", "3584", "--interrupt_requests", "False"]  # codeqa/llm/server.py's n_ctx
NO_LOGITS = ["--logits_all", "False"]
GRAMMAR = {"grammar": answer_grammar(1)}  # what the chat sends the embedded server
FRESH_PREFIX = "fresh_prefix"  # not a request field: the bench starts each prompt with a unique line
# name → (server flags, extra request fields)
ONE = ["--n_threads", "1", "--n_threads_batch", "1"]
CONFIGS: dict[str, tuple[list[str], dict]] = {
    # What codeqa/llm/server.py ran before issue 33: llama_cpp.server's defaults otherwise.
    "before-1t": (ONE, {}),
    "nologits-1t": ([*ONE, *NO_LOGITS], {}),
    "nologits-1t-batch2t": (["--n_threads", "1", "--n_threads_batch", "2", *NO_LOGITS], {}),
    "nologits-2t": (["--n_threads", "2", "--n_threads_batch", "2", *NO_LOGITS], {}),
    "nologits-2t-b128": (["--n_threads", "2", "--n_threads_batch", "2", *NO_LOGITS, "--n_batch", "128",
                          "--n_ubatch", "128"], {}),
    "nologits-1t-b256": ([*ONE, *NO_LOGITS, "--n_batch", "256", "--n_ubatch", "256"], {}),
    "nologits-1t-fa": ([*ONE, *NO_LOGITS, "--flash_attn", "True"], {}),
    "nologits-1t-ctx2048": ([*ONE, *NO_LOGITS, "--n_ctx", "2048"], {}),
    "nologits-1t-ctx8192": ([*ONE, *NO_LOGITS, "--n_ctx", "8192"], {}),
    # Every prompt opens differently, so nothing of the last one's KV cache is reused: what the
    # reuse of the instructions' prefix saves (llama-cpp-python always reuses a common prefix).
    "nologits-1t-no-prefix-reuse": ([*ONE, *NO_LOGITS], {FRESH_PREFIX: True}),
    "nologits-1t-grammar": ([*ONE, *NO_LOGITS], GRAMMAR),
    "nologits-1t-prefix-grammar": ([*ONE, *NO_LOGITS], {"grammar": 'root ::= "According to [1], " [^\\x00]*\n'}),
}

INSTRUCTIONS = (
    "You are CodeQA. Answer the question from the numbered sources below only. End every sentence "
    "that uses a source with its number in brackets, like this: `open_session` loads the cookie [2]. "
    "If the sources do not hold the answer, say so. Be brief.\n\n"
) * 3  # ~300 tokens of fixed prefix, the size of the chat's instructions and example


def sources(corpus: Path, variant: int, count: int = 70) -> str:
    """`count` lines of real Flask code (70: about 700 tokens), different for each prompt."""
    files = ["src/flask/sessions.py", "src/flask/app.py", "src/flask/helpers.py"]
    lines = (corpus / files[variant % len(files)]).read_text(encoding="utf-8").splitlines()
    start = 200 + 37 * variant
    body = "\n".join(f"{n}|{lines[n - 1]}" for n in range(start, start + count))
    return f"[1] {files[variant % len(files)]}:{start}-{start + count - 1}\n```python\n{body}\n```"


def post(url: str, body: dict) -> dict:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=600) as response:
        return json.loads(response.read())


def stream_answer(base: str, messages: list[dict], max_tokens: int, extra: dict) -> tuple[float, float, int]:
    """(seconds to the first token, seconds in all, tokens streamed)."""
    body = {"model": "m", "messages": messages, "max_tokens": max_tokens, "temperature": 0.0, "stream": True,
            **{k: v for k, v in extra.items() if k != FRESH_PREFIX}}
    request = urllib.request.Request(base + "/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    started = time.perf_counter()
    first = None
    tokens = 0
    with urllib.request.urlopen(request, timeout=600) as response:
        for raw in response:
            line = raw.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            delta = json.loads(line[6:])["choices"][0]["delta"].get("content")
            if delta:
                tokens += 1
                first = first or time.perf_counter()
    return (first or time.perf_counter()) - started, time.perf_counter() - started, tokens


class RssSampler(threading.Thread):
    """The peak resident memory of a process, sampled every 0.1 s until stopped."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.process = psutil.Process(pid)
        self.peak = 0
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(0.1):
            try:
                self.peak = max(self.peak, self.process.memory_info().rss)
            except psutil.Error:
                return


def measure(model: Path, name: str, flags: list[str], extra: dict, corpus: Path, runs: int, niceness: int,
            lines: int = 70, max_tokens: int = 64) -> dict:
    port = free_port()
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1",
               "--port", str(port), *BASE_FLAGS, *flags]
    proc = subprocess.Popen(niced(command, niceness), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        problem = wait_until_ready(proc, lambda: answers(base + "/models", timeout=1.0), 120)
        if problem:
            return {"config": name, "error": problem}
        sampler = RssSampler(proc.pid)
        sampler.start()
        prefix = post(f"http://127.0.0.1:{port}/extras/tokenize/count", {"input": INSTRUCTIONS})["count"]
        rows = []
        for run in range(runs):
            for variant in range(3):
                fresh = extra.get(FRESH_PREFIX, False)
                system = (f"Request {run}-{variant}.\n" if fresh else "") + INSTRUCTIONS + sources(corpus, variant + 3 * run, lines)
                messages = [{"role": "system", "content": system},
                            {"role": "user", "content": "What does this code do? Cite the source."}]
                count = post(f"http://127.0.0.1:{port}/extras/tokenize/count",
                             {"input": system + messages[1]["content"]})["count"]
                ttft, total, tokens = stream_answer(base, messages, max_tokens, extra)
                # the instructions' prefix is in the KV cache from the last answer (not before the first)
                reused = not fresh and (run, variant) != (0, 0)
                rows.append({"prompt": count, "evaluated": count - (prefix if reused else 0), "reused": reused,
                             "ttft": ttft, "total": total, "tokens": tokens})
        sampler.stopped.set()
        sampler.join()
        cold = [r for r in rows if not r["reused"]]
        warm = [r for r in rows if r["reused"]]
        return {
            "config": name,
            "prompt_tok_s": statistics.median(r["evaluated"] / r["ttft"] for r in rows),
            "ttft_cold_s": statistics.median(r["ttft"] for r in cold),
            "ttft_prefix_reused_s": statistics.median(r["ttft"] for r in warm) if warm else float("nan"),
            "gen_tok_s": statistics.median((r["tokens"] - 1) / (r["total"] - r["ttft"]) for r in rows
                                           if r["tokens"] > 1),
            "prompt_tokens": statistics.median(r["prompt"] for r in rows),
            "peak_rss_mb": sampler.peak / 2**20,
        }
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, required=True, help="the GGUF file")
    parser.add_argument("--corpus", type=Path, default=ROOT / "eval" / ".cache" / "src" / "flask-3.1.3",
                        help="Flask's unpacked sdist (eval/run_eval.py fetches it)")
    parser.add_argument("--config", action="append", choices=sorted(CONFIGS), help="default: all")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--lines", type=int, default=70, help="lines of code in each prompt (70: ~1,100 tokens "
                        "in all; fewer for a quick look at memory)")
    parser.add_argument("--max-tokens", type=int, default=64, help="tokens generated per answer")
    parser.add_argument("--niceness", type=int, default=0, help="as CODEQA_BACKGROUND_NICENESS (0: a fair share "
                        "of a loaded box)")
    args = parser.parse_args(argv)
    print("| config | prompt tok/s | first token (cold) | first token (prefix cached) | gen tok/s | "
          "prompt tokens | peak RSS MB |\n|---|---|---|---|---|---|---|", flush=True)
    for name in args.config or list(CONFIGS):
        flags, extra = CONFIGS[name]
        row = measure(args.model, name, flags, extra, args.corpus, args.runs, args.niceness, args.lines, args.max_tokens)
        if "error" in row:
            print(f"| {name} | failed: {row['error']} |||||", flush=True)
            continue
        print(f"| {name} | {row['prompt_tok_s']:.0f} | {row['ttft_cold_s']:.1f} s | {row['ttft_prefix_reused_s']:.1f} s "
              f"| {row['gen_tok_s']:.1f} | {row['prompt_tokens']:.0f} | {row['peak_rss_mb']:.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
