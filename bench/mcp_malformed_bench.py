"""Malformed lines to the MCP server: how long a client waits for each one's answer.

    python -m bench.mcp_malformed_bench [--wait 10] [--data-dir DIR]

Starts `codeqa mcp` (on `--data-dir`, default an empty one: these lines never reach a tool),
initializes it in raw JSON-RPC as a client would, then writes each malformed line to its
stdin and times the reply: a line that is not JSON, lone surrogates in a tool's `query` and
`path`, bytes that are not UTF-8, JSON nested past the SDK parser's limit, JSON that is no
message, and a 100,000-character name to find_symbol. A line with no reply within `--wait`
seconds is reported as such. The issue's bar: every reply within 1 s. Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def call(name: str, arguments: dict | str) -> bytes:
    """A tools/call line; `arguments` as JSON text when a str (to hold what json.dumps won't write)."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return f'{{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {{"name": "{name}", "arguments": {text}}}}}'.encode()


LINES = {
    "not JSON": b"not json",
    "lone surrogate in query": call("search_code", '{"query": "cart \\ud800"}'),
    "lone surrogate in path": call("read_code", '{"path": "shop/\\udfff.py"}'),
    "not UTF-8": b"\xff\xfe\x00 not UTF-8",
    "nested 300 deep": b'{"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {"n": ' + b"[" * 300 + b"]" * 300 + b"}}",
    "JSON, no message": b"[1, 2]",
    "100,000-character name": call("find_symbol", {"name": "x" * 100_000}),
}


class Server:
    def __init__(self, data_dir: Path) -> None:
        env = {**os.environ, "CODEQA_DATA_DIR": str(data_dir), "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen([sys.executable, "-m", "codeqa", "mcp"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=data_dir)

    def send(self, line: bytes, wait: float) -> tuple[float | None, bytes]:
        """Seconds until the server wrote a line back (None: not within `wait`), and that line."""
        started = time.perf_counter()
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], wait)
        if not ready:
            return None, b""
        reply = self.proc.stdout.readline()
        return time.perf_counter() - started, reply


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wait", type=float, default=10.0, help="seconds to wait for each reply")
    parser.add_argument("--data-dir", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="codeqa-mcp-bench-") as scratch:
        server = Server(args.data_dir or Path(scratch))
        try:
            init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}
            seconds, _ = server.send(json.dumps(init).encode(), 120)
            assert seconds is not None, "the server did not initialize"
            server.proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
            print(f"cores {os.cpu_count()}, load average {os.getloadavg()[0]:.2f}; initialized in {seconds:.2f} s")
            worst = 0.0
            for name, line in LINES.items():
                seconds, reply = server.send(line, args.wait)
                if seconds is None:
                    print(f"  {name:26} no reply within {args.wait:g} s")
                    worst = float("inf")
                    continue
                worst = max(worst, seconds)
                error = json.loads(reply).get("error") or json.loads(reply)["result"]
                print(f"  {name:26} {seconds * 1000:7.1f} ms  {json.dumps(error)[:110]}")
            print(f"slowest reply {worst:.3f} s (bar: 1 s)")
        finally:
            server.proc.stdin.close()
            server.proc.wait(30)


if __name__ == "__main__":
    main()
