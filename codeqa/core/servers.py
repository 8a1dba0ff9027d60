"""Local server processes: a free loopback port to start one on, waiting until it answers,
and the CPU priority of work that must not slow interactive searches.

The embedded LLM server, the test suite's Redis and web servers and the load benchmark all
start a process and poll it until it is ready; this is the one place that knows how.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path


def niced(command: Sequence[str], niceness: int) -> list[str]:
    """`command`, run `niceness` steps below normal CPU priority through POSIX `nice` where it
    exists: on a machine with few cores, the web app's searches then go first."""
    tool = shutil.which("nice") if niceness > 0 else None
    return [tool, "-n", str(niceness), *command] if tool else list(command)


def yield_cpu(niceness: int) -> None:
    """Lower this process's CPU priority by `niceness` (threads started later inherit it)."""
    if niceness > 0 and hasattr(os, "nice"):
        os.nice(niceness)


def yield_thread_cpu(niceness: int) -> None:
    """Lower the calling thread's CPU priority by `niceness`, and only its own: background work
    in a server (an MCP server's index job) lets the same process's searches go first. Linux
    gives each thread its own nice value; elsewhere this does nothing."""
    if niceness <= 0 or not sys.platform.startswith("linux"):
        return
    thread = threading.get_native_id()
    try:
        os.setpriority(os.PRIO_PROCESS, thread, os.getpriority(os.PRIO_PROCESS, thread) + niceness)
    except OSError:  # a sandbox that forbids it: the work just runs at the normal priority
        pass


def free_port() -> int:
    """A loopback TCP port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def answers(url: str, timeout: float = 2.0) -> bool:
    """True if a GET of `url` returns 200."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def wait_until_ready(
    proc: subprocess.Popen, ready: Callable[[], bool], timeout: float, interval: float = 0.1
) -> str | None:
    """Poll `ready()` until it holds: None then, else why not (the process exited, or time ran out).

    The caller decides what a failure means (stop the process, read its log, raise)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return f"exited with code {proc.returncode}"
        if ready():
            return None
        time.sleep(interval)
    return f"was not ready after {timeout:g} s"


def start_server(command: Sequence[str], env: Mapping[str, str], ready_url: str, timeout: float) -> subprocess.Popen:
    """Start `command` and wait until `ready_url` answers; on failure kill it and raise with the
    end of its stderr. Its stderr goes to a temporary file, so a chatty server never blocks."""
    stderr = tempfile.TemporaryFile()
    proc = subprocess.Popen(list(command), env=dict(env), stdout=subprocess.DEVNULL, stderr=stderr)
    problem = wait_until_ready(proc, lambda: answers(ready_url), timeout, interval=0.5)
    if problem is None:
        return proc
    proc.kill()
    proc.wait()
    stderr.seek(0)
    tail = stderr.read().decode("utf-8", "replace")[-3000:]
    raise RuntimeError(f"{' '.join(command[:2])} {problem}: {tail}")


# --- A started server's record, for the other processes of the same data directory -------------


def write_state(path: Path, state: dict) -> None:
    """Record a started server (its pid and address) atomically: readers see all of it or nothing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(state))
    os.replace(tmp, path)


def read_state(path: Path) -> dict | None:
    """The recorded state, if there is a readable one."""
    try:
        state = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None


def forget_state(path: Path, key: str, value: object) -> None:
    """Remove the record if it still describes this server (another process may have replaced it)."""
    state = read_state(path)
    if state is not None and state.get(key) == value:
        path.unlink(missing_ok=True)
