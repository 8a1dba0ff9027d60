"""LLM client tests against real servers: the embedded llama.cpp model and tiny stdlib HTTP servers."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler

import pytest

from codeqa.llm import client as llm
from codeqa.core.config import Settings
from conftest import http_server
from codeqa.llm.server import EMBEDDED_MODEL_NAME, LocalLLMServer
from codeqa.core.servers import free_port

PROMPT = [{"role": "user", "content": "Write a Python function that adds two numbers."}]
Handler = Callable[[BaseHTTPRequestHandler], None]


def remote_settings(base_url: str, **overrides: object) -> Settings:
    values: dict[str, object] = {"llm_base_url": base_url, "chat_model": "m", "llm_timeout": 5.0}
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


def reply_json(status: int, body: object) -> Handler:
    def handle(request: BaseHTTPRequestHandler) -> None:
        payload = json.dumps(body).encode()
        request.send_response(status)
        request.send_header("Content-Type", "application/json")
        request.send_header("Content-Length", str(len(payload)))
        request.end_headers()
        request.wfile.write(payload)

    return handle


# --- embedded model -----------------------------------------------------------------------


@pytest.mark.integration
def test_complete_returns_text(embedded_client: llm.LLMClient) -> None:
    answer = embedded_client.complete("chat", PROMPT, max_tokens=16)
    assert answer.strip()


@pytest.mark.integration
def test_stream_yields_several_deltas(embedded_client: llm.LLMClient) -> None:
    deltas = list(embedded_client.stream("hyde", PROMPT, max_tokens=16))
    assert len(deltas) > 1
    assert "".join(deltas).strip()


@pytest.mark.integration
def test_status_reports_running_embedded_model(
    embedded_client: llm.LLMClient, embedded_server: LocalLLMServer
) -> None:
    status = embedded_client.status()
    assert status.available and status.embedded
    assert status.base_url == embedded_server.base_url()
    assert status.models == {"hyde": EMBEDDED_MODEL_NAME, "chat": EMBEDDED_MODEL_NAME}


# --- failures from remote endpoints ---------------------------------------------------------


@pytest.mark.unit
def test_unreachable_endpoint_is_reported_after_retries() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    client = llm.LLMClient(remote_settings(url), retries=2, backoff=0.01)
    with pytest.raises(llm.LLMUnavailable) as caught:
        client.complete("chat", PROMPT, max_tokens=16)
    message = str(caught.value)
    assert "unreachable" in message and "after 3 attempts" in message and "\n" not in message
    # The setting is named, its value (an internal address, a port on the server) is not.
    assert message.startswith("the LLM endpoint (CODEQA_LLM_BASE_URL) is unreachable")
    assert "127.0.0.1" not in message and str(client.settings.llm_base_url) not in message


@pytest.mark.unit
def test_server_errors_are_retried_a_bounded_number_of_times() -> None:
    with http_server(reply_json(503, {"error": {"message": "overloaded"}})) as (url, seen):
        client = llm.LLMClient(remote_settings(url), retries=2, backoff=0.01)
        with pytest.raises(llm.LLMUnavailable, match="HTTP 503"):
            client.complete("chat", PROMPT, max_tokens=16)
    assert len(seen) == 3


@pytest.mark.unit
def test_client_errors_are_not_retried() -> None:
    with http_server(reply_json(401, {"error": {"message": "bad key"}})) as (url, seen):
        client = llm.LLMClient(remote_settings(url), retries=2, backoff=0.01)
        with pytest.raises(llm.LLMUnavailable, match="HTTP 401"):
            client.complete("chat", PROMPT, max_tokens=16)
    assert len(seen) == 1


@pytest.mark.unit
def test_silent_endpoint_times_out() -> None:
    release = threading.Event()
    with http_server(lambda request: release.wait(10)) as (url, seen):
        client = llm.LLMClient(remote_settings(url, llm_timeout=0.3), retries=2, backoff=0.01)
        try:
            with pytest.raises(llm.LLMUnavailable, match=r"did not answer within 0.3 s \(timeout\)"):
                client.complete("chat", PROMPT, max_tokens=16)
        finally:
            release.set()
    assert len(seen) == 1  # the timeout is the whole budget: no attempt after it (was one per retry)


def sse_then_drop(request: BaseHTTPRequestHandler) -> None:
    """Send one streamed delta in a chunked body, then close without the final chunk."""
    event = {
        "id": "1", "object": "chat.completion.chunk", "created": 0, "model": "m",
        "choices": [{"index": 0, "delta": {"content": "partial"}, "finish_reason": None}],
    }  # fmt: skip
    data = f"data: {json.dumps(event)}\n\n".encode()
    request.send_response(200)
    request.send_header("Content-Type", "text/event-stream")
    request.send_header("Transfer-Encoding", "chunked")
    request.end_headers()
    request.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
    request.wfile.flush()
    request.close_connection = True


@pytest.mark.unit
def test_stream_dropped_midway_keeps_partial_text_and_raises() -> None:
    with http_server(sse_then_drop) as (url, _):
        client = llm.LLMClient(remote_settings(url), retries=0)
        received: list[str] = []
        with pytest.raises(llm.LLMUnavailable, match="cut off"):
            for delta in client.stream("chat", PROMPT, max_tokens=16):
                received.append(delta)
    assert received == ["partial"]


@pytest.mark.unit
def test_no_llm_configured() -> None:
    client = llm.LLMClient(Settings(llm_base_url="", local_llm=False))
    with pytest.raises(llm.LLMUnavailable, match="CODEQA_LLM_BASE_URL"):
        client.complete("chat", PROMPT, max_tokens=16)
    status = client.status()
    assert not status.available and "CODEQA_LLM_BASE_URL" in status.reason


# --- model names -----------------------------------------------------------------------------


@pytest.mark.unit
def test_roles_fall_back_to_the_other_model() -> None:
    only_chat = llm.LLMClient(remote_settings("http://127.0.0.1:1/v1", chat_model="big"))
    only_hyde = llm.LLMClient(remote_settings("http://127.0.0.1:1/v1", chat_model="", hyde_model="small"))
    assert only_chat.model_for("hyde") == "big"
    assert only_hyde.model_for("chat") == "small"
    with pytest.raises(ValueError, match="unknown LLM role"):
        only_chat.model_for("summarise")


@pytest.mark.unit
def test_model_is_discovered_when_none_is_configured() -> None:
    listing = {"object": "list", "data": [{"id": "served-model", "object": "model", "created": 0, "owned_by": "x"}]}
    with http_server(reply_json(200, listing)) as (url, _):
        client = llm.LLMClient(remote_settings(url, chat_model=""))
        assert client.model_for("chat") == "served-model"
        status = client.status()
    assert status.available and not status.embedded
    assert status.models == {"hyde": "served-model", "chat": "served-model"}


@pytest.mark.unit
def test_decoding_sends_llama_cpp_fields_and_the_grammar_to_the_embedded_server_only() -> None:
    decoding = llm.Decoding(temperature=0.1, top_p=0.9, frequency_penalty=0.2, repeat_penalty=1.1,
                            grammar="root ::= [a-z]+", stop=("\n\nAgain",))
    fields, extra = decoding.request_fields(embedded=False)
    assert fields == {"temperature": 0.1, "top_p": 0.9, "frequency_penalty": 0.2} and extra == {}
    fields, extra = decoding.request_fields(embedded=True)
    assert extra == {"repeat_penalty": 1.1, "top_k": 40, "grammar": "root ::= [a-z]+", "stop": ["\n\nAgain"]}


@pytest.mark.integration
def test_a_stream_tells_why_it_ended_and_what_the_prompt_cost(embedded_client: llm.LLMClient) -> None:
    stream = embedded_client.stream("chat", PROMPT, max_tokens=3)
    assert "".join(stream) and stream.finish_reason == "length"
    assert stream.prompt_tokens is not None and stream.prompt_tokens > 10
    grammar = llm.Decoding(grammar='root ::= "yes" | "no"')
    answer = embedded_client.stream("chat", [{"role": "user", "content": "Is 2 > 1?"}], max_tokens=8, decoding=grammar)
    assert "".join(answer) in {"yes", "no"} and answer.finish_reason == "stop"
