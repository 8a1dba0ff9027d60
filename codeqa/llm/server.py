"""The embedded LLM server: `llama_cpp.server` running the bundled model on a loopback port.

Started lazily by the first caller that needs it and shared by every `LLMClient` of the
process; a server another process started on the same data dir is adopted. It speaks the
OpenAI API, so the client treats it like any other endpoint.
"""

from __future__ import annotations

import atexit
import importlib.util
import json
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path

import psutil

from codeqa.core.config import Settings
from codeqa.core.errors import LLMUnavailable, one_line
from codeqa.core.servers import answers, forget_state, free_port, niced, read_state, wait_until_ready, write_state
from codeqa.llm.prompts import CHAT_OVERHEAD_TOKENS
from codeqa.llm.weights import DEFAULT_MODEL, ShippedModel, ensure_model_file, model_path, shipped_model

EMBEDDED_MODEL_NAME = DEFAULT_MODEL.alias  # the model alias the server answers to (the default model)
# llama_cpp.server settings, measured on 2 cores (eval/answers/server_bench.py, docs/answers.md).
# Its default `logits_all=True` keeps the logits of every prompt token: a 151,936-word vocabulary
# times n_ctx floats (2.4 GB at 4k), and the output layer run for each prompt token. No caller
# asks for prompt logprobs, so only the last token's are kept.
SERVER_FLAGS = ("--logits_all", "False")
CONTEXT_STEP = 256  # n_ctx is rounded up to this


def context_window(settings: Settings) -> int:
    """n_ctx for the answer budgets: the instructions, the context, the history and the answer
    (the budgets' token estimates are pessimistic, so real prompts fit with room to spare)."""
    context = max(settings.context_tokens, settings.local_context_tokens)
    need = CHAT_OVERHEAD_TOKENS + context + settings.history_tokens + settings.answer_tokens
    return -(-need // CONTEXT_STEP) * CONTEXT_STEP


def embedded_model(settings: Settings) -> ShippedModel | None:
    """The shipped model the embedded server runs: CODEQA_LOCAL_LLM_MODEL's, the default when it
    is empty, None when it names a GGUF file of the user's own."""
    own = settings.local_llm_model
    return shipped_model(own) if own else DEFAULT_MODEL


def embedded_model_name(settings: Settings) -> str:
    """The model name the embedded server answers to."""
    shipped = embedded_model(settings)
    return shipped.alias if shipped else EMBEDDED_MODEL_NAME


def chatml(messages: Sequence[Mapping[str, str]]) -> str:
    """A conversation as Qwen2.5's chat template writes it for the model (ChatML)."""
    turns = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
    return turns + "<|im_start|>assistant\n"


def _tail(path: Path, start: int, limit: int = 1500) -> str:
    """The end of what the server logged since `start`, on one line."""
    try:
        with path.open("rb") as handle:
            handle.seek(max(start, path.stat().st_size - limit))
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return " | ".join(line.strip() for line in text.splitlines() if line.strip())


class LocalLLMServer:
    """Lazily started `llama_cpp.server` subprocess on a free loopback port.

    The first caller starts it (thread-safe); later callers reuse it. A server started by
    another process on the same data dir is adopted through `<data_dir>/run/llm-server.json`
    when it still answers; only the process that started a server ever stops it.
    """

    def __init__(self, settings: Settings, startup_timeout: float = 120.0) -> None:
        self.settings = settings
        self.startup_timeout = startup_timeout
        self.log_path = settings.data_dir / "logs" / "llama-server.log"
        self.state_path = settings.data_dir / "run" / "llm-server.json"
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._adopted_pid: int | None = None
        self._port: int | None = None

    @property
    def pid(self) -> int | None:
        """Process id of the server in use (started here or adopted), if any."""
        return self._proc.pid if self._proc is not None else self._adopted_pid

    @property
    def owned(self) -> bool:
        """True if this object started the server and will stop it."""
        return self._proc is not None

    def running_url(self) -> str | None:
        """Base URL of a live server (own, adopted or adoptable), without starting one."""
        with self._lock:
            if self._alive():
                return self._url()
            return self._url() if self._adopt() else None

    def base_url(self) -> str:
        """Base URL of a live server, starting one if needed."""
        with self._lock:
            if not self._alive() and not self._adopt():
                self._start()
            return self._url()

    def count_prompt_tokens(self, messages: Sequence[Mapping[str, str]]) -> int | None:
        """How many tokens a chat prompt is, by the running server's tokenizer (streamed answers
        carry no usage); None if no server runs, or it runs a model of the user's own, whose chat
        template may not be ChatML (the shipped Qwen models' is)."""
        url = self.running_url()
        if url is None or embedded_model(self.settings) is None:
            return None
        request = urllib.request.Request(
            url.removesuffix("/v1") + "/extras/tokenize/count",
            data=json.dumps({"input": chatml(messages)}).encode(),
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=10.0) as response:
                return int(json.loads(response.read())["count"])
        except (OSError, KeyError, TypeError, ValueError):  # URLError is an OSError
            return None

    def close(self) -> None:
        """Stop the server if this object started it: terminate, then kill after a grace period."""
        with self._lock:
            self._stop()

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        self._adopted_pid = None
        self._port = None
        if proc is None:
            return
        atexit.unregister(self.close)
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        forget_state(self.state_path, "pid", proc.pid)

    def _url(self) -> str:
        return f"http://127.0.0.1:{self._port}/v1"

    def _alive(self) -> bool:
        if self._proc is not None:
            return self._proc.poll() is None
        return self._adopted_pid is not None and psutil.pid_exists(self._adopted_pid)

    def _adopt(self) -> bool:
        """Reuse a server another process recorded, if it still runs our model and answers."""
        self._adopted_pid = None
        state = read_state(self.state_path) or {}
        try:
            pid, port, model = int(state["pid"]), int(state["port"]), str(state["model"])
        except (KeyError, TypeError, ValueError):
            return False
        expected_model = str(self._model_file())
        if model != expected_model or not psutil.pid_exists(pid):
            return False
        if not answers(f"http://127.0.0.1:{port}/v1/models"):
            return False
        self._adopted_pid, self._port = pid, port
        return True

    def _start(self) -> None:
        if importlib.util.find_spec("llama_cpp") is None:
            raise LLMUnavailable(
                "The embedded LLM needs llama-cpp-python: pip install 'llama-cpp-python[server]==0.3.36'"
            )
        try:
            model = self._model_file(assemble=True)
            proc, port, log_start = self._spawn(model)
        except OSError as exc:
            raise LLMUnavailable(f"Could not start the embedded LLM: {one_line(exc)}") from exc
        self._proc, self._port = proc, port
        atexit.register(self.close)
        self._wait_ready(proc, log_start)
        write_state(self.state_path, {"pid": proc.pid, "port": port, "model": str(model)})

    def _model_file(self, assemble: bool = False) -> Path:
        """The GGUF file the server runs: a shipped model (the default, or the one
        CODEQA_LOCAL_LLM_MODEL names; put together from its wheels first when `assemble`), else
        the file CODEQA_LOCAL_LLM_MODEL names."""
        shipped = embedded_model(self.settings)
        if shipped is None:
            own = Path(self.settings.local_llm_model).expanduser()
            if not own.is_file():
                raise LLMUnavailable(f"CODEQA_LOCAL_LLM_MODEL names no file: {own}")
            return own
        data_dir = self.settings.data_dir
        return ensure_model_file(data_dir, shipped) if assemble else model_path(data_dir, shipped)

    def _spawn(self, model: Path) -> tuple[subprocess.Popen[bytes], int, int]:
        """Launch the server process; returns it, its port and where its log output starts."""
        port = free_port()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log_start = self.log_path.stat().st_size if self.log_path.exists() else 0
        command = [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(model),
            "--model_alias", embedded_model_name(self.settings),
            "--host", "127.0.0.1",
            "--port", str(port),
            "--n_ctx", str(context_window(self.settings)),
            "--n_threads", str(self.settings.local_llm_threads),
            "--n_threads_batch", str(self.settings.local_llm_prompt_threads),
            "--interrupt_requests", "False",
            *SERVER_FLAGS,
        ]  # fmt: skip
        with self.log_path.open("ab") as log:
            # Below the app's priority: a chat being answered must not hold up searches.
            proc = subprocess.Popen(
                niced(command, self.settings.background_niceness),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        return proc, port, log_start

    def _wait_ready(self, proc: subprocess.Popen[bytes], log_start: int) -> None:
        problem = wait_until_ready(proc, lambda: answers(self._url() + "/models", timeout=1.0), self.startup_timeout)
        if problem is None:
            return
        if proc.poll() is None:
            self._stop()
        else:
            self._proc = None
            atexit.unregister(self.close)
        raise LLMUnavailable(f"The embedded LLM server {problem}: {_tail(self.log_path, log_start)}")
