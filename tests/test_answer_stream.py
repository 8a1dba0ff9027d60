"""Answers through the real chat pipeline (real index, real Redis): what is sent to the model,
what streams back and what is stored. A scripted OpenAI-compatible endpoint makes the streams
deterministic (citations, a cut at max_tokens, a loop); the last test asks the embedded model."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from codeqa.chat.answer import ChatBudget, ChatService, ChatTurn
from codeqa.llm.client import LLMClient
from codeqa.chat.packing import numbered_sources
from codeqa.services import Services
from conftest import http_server

pytestmark = pytest.mark.integration

LOOPING = object()  # a reply that repeats one paragraph until the client hangs up


class ScriptedLLM:
    """An OpenAI-compatible endpoint that streams the replies it is given, in order, and keeps
    every request body it received."""

    def __init__(self) -> None:
        self.replies: list[tuple[object, str]] = []  # (text or LOOPING, finish_reason)
        self.requests: list[dict] = []

    def handle(self, request) -> None:
        if request.path.endswith("/models"):
            self._send_json(request, {"object": "list", "data": [{"id": "scripted", "object": "model"}]})
            return
        self.requests.append(json.loads(request.rfile.read(int(request.headers.get("Content-Length") or 0))))
        text, finish = self.replies.pop(0) if self.replies else ("OK [1].", "stop")
        request.send_response(200)
        request.send_header("Content-Type", "text/event-stream")
        request.end_headers()
        try:
            for piece in self._pieces(text):
                request.wfile.write(self._chunk({"content": piece}, None))
                request.wfile.flush()
            request.wfile.write(self._chunk({}, finish) + b"data: [DONE]\n\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client stopped reading: what a stopped loop looks like from here

    @staticmethod
    def _pieces(text: object) -> Iterator[str]:
        if text is LOOPING:
            paragraph = "The parser reads the CSV text line by line and builds products from rows.\n\n"
            for _ in range(400):
                yield from (paragraph[i:i + 9] for i in range(0, len(paragraph), 9))
            return
        yield from (str(text)[i:i + 7] for i in range(0, len(str(text)), 7))

    @staticmethod
    def _chunk(delta: dict, finish: str | None) -> bytes:
        body = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "scripted",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
        return f"data: {json.dumps(body)}\n\n".encode()

    @staticmethod
    def _send_json(request, body: dict) -> None:
        payload = json.dumps(body).encode()
        request.send_response(200)
        request.send_header("Content-Type", "application/json")
        request.send_header("Content-Length", str(len(payload)))
        request.end_headers()
        request.wfile.write(payload)


@pytest.fixture
def scripted():
    llm = ScriptedLLM()
    with http_server(llm.handle) as (url, _):
        yield url, llm


@pytest.fixture
def services(indexed_sample, scripted, redis_server) -> Iterator[Services]:
    settings, _ = indexed_sample
    url, _ = scripted
    chat_settings = settings.__class__(data_dir=settings.data_dir, llm_base_url=url, chat_model="scripted",
                                       hyde_model="scripted", redis_url=redis_server.url, llm_timeout=30.0)
    with Services(chat_settings, ChatBudget(context_tokens=900, history_tokens=400, answer_tokens=300, k=4)) as found:
        yield found


def ask(services: Services, message: str, user: str = "u1") -> list[tuple[str, dict]]:
    return list(services.chat.run(ChatTurn(user=user, repo="sample", message=message)))


def answer_text(events) -> str:
    return "".join(data["text"] for name, data in events if name == "token")


def notices(events) -> dict[str, str]:
    return {data["code"]: data["message"] for name, data in events if name == "notice"}


QUESTION = "@codebase how is an order CSV parsed into products?"


def test_markers_stream_as_the_sources_path_and_lines_and_unknown_ones_are_dropped(services, scripted):
    _, llm = scripted
    llm.replies = [("`Parser.parse` splits the text into rows [1]. Each row becomes a product [2][9].", "stop")]
    events = ask(services, QUESTION)
    system = llm.requests[-1]["messages"][0]["content"]
    sources = numbered_sources(system)
    assert len(sources) >= 2 and f"[1] {sources[1].path}:{sources[1].start}-{sources[1].end}" in system
    text = answer_text(events)
    assert text == (f"`Parser.parse` splits the text into rows [{sources[1].citation}]. Each row becomes a "
                    f"product [{sources[2].citation}].")
    assert "uncited" not in notices(events) and "[9]" not in text
    done = events[-1]
    assert done[0] == "done" and done[1]["max_tokens"] == llm.requests[-1]["max_tokens"] <= 300
    stored = services.store.history("u1", "sample")[-1]
    assert stored["content"] == text and "notices" not in stored


def test_an_answer_citing_nothing_gets_a_notice_and_is_not_patched(services, scripted):
    _, llm = scripted
    llm.replies = [("The parser reads the file and makes products.", "stop")]
    events = ask(services, QUESTION)
    assert answer_text(events) == "The parser reads the file and makes products."
    assert "cites no source" in notices(events)["uncited"]
    assert services.store.history("u1", "sample")[-1]["notices"][0]["code"] == "uncited"


def test_a_cut_at_max_tokens_gets_a_notice_naming_the_limit(services, scripted):
    _, llm = scripted
    llm.replies = [("`Parser.parse` splits the text into rows [1] and then", "length")]
    events = ask(services, QUESTION)
    limit = llm.requests[-1]["max_tokens"]
    assert f"Answer cut at {limit} tokens" in notices(events)["cut"]
    assert events[-1][0] == "done"
    follow = ask(services, "and then what?")
    assert [m["role"] for m in llm.requests[-1]["messages"]] == ["system", "user", "assistant", "user"]
    assert follow[-1][0] == "done"


def test_a_looping_answer_is_stopped_with_a_notice_and_never_fed_back(services, scripted):
    _, llm = scripted
    llm.replies = [(LOOPING, "stop")]
    events = ask(services, QUESTION)
    text = answer_text(events)
    assert "loop" in notices(events) and events[-1][0] == "done"
    assert text.count("builds products from rows") < 10  # stopped long before the 400 repeats
    stored = services.store.history("u1", "sample")[-1]
    assert stored["truncated"] is True and stored["notices"][0]["code"] == "loop"
    ask(services, "why?")
    assert [m["role"] for m in llm.requests[-1]["messages"]] == ["system", "user", "user"]


def test_only_follow_ups_carry_the_conversation(services, scripted):
    _, llm = scripted
    first = "`Parser.parse` splits the text into rows [1]. `Product.from_row` builds each product [2]."
    turns = [
        (QUESTION, False),
        ("and what does it do with an empty line?", True),  # continues, points back
        ("How is the cart total computed?", False),  # a new question: alone, on the same code
        ("why?", True),  # too short to stand alone
        ("Is Product.from_row called once per row?", True),  # a symbol the conversation named
        ("What does make_demo_cart build?", False),  # a symbol it never named
        ("@definition Cart.add what does it return?", False),  # brings its own code
    ]
    llm.replies = [(first, "stop")] + [("It depends on the source [1].", "stop")] * (len(turns) - 1)
    for number, (message, follow_up) in enumerate(turns, 1):
        ask(services, message)
        sent = llm.requests[-1]["messages"]
        assert sent[0]["role"] == "system" and sent[-1] == {"role": "user", "content": message}
        assert (len(sent) > 2) is follow_up, message
        stored = services.store.history("u1", "sample")
        earlier = [{"role": m["role"], "content": m["content"]} for m in stored[:-2]]
        assert all(m in earlier for m in sent[1:-1])  # earlier turns, as they were stored
        assert len(stored) == 2 * number  # every turn is kept, sent to the model or not


def test_the_embedded_model_answers_from_numbered_sources(indexed_sample, redis_server, embedded_settings,
                                                          embedded_server):
    settings, _ = indexed_sample
    chat_settings = settings.__class__(data_dir=settings.data_dir, redis_url=redis_server.url, llm_timeout=300.0)
    llm = LLMClient(embedded_settings, server=embedded_server)
    with Services(chat_settings) as services:
        chat = ChatService(services.context, services.store, llm,
                           ChatBudget(context_tokens=700, history_tokens=200, answer_tokens=160, k=3))
        events = list(chat.run(ChatTurn(user="u1", repo="sample", message=QUESTION)))
        stored = services.store.load_context("u1", "sample")
    names = [name for name, _ in events]
    assert "error" not in names and names[-1] == "done"
    done = events[-1][1]
    assert done["prompt_tokens"] > 100 and done["max_tokens"] <= 160
    sources = numbered_sources(stored.text)
    given = {s.path for s in sources.values()}
    text = answer_text(events)
    cited = {part.rsplit(":", 1)[0] for part in _bracketed(text)}
    assert cited <= given, "a citation the model was not given"
    # The grammar opens the answer from the best-ranked source, written out as its path:lines.
    assert text.startswith(f"According to [{sources[1].citation}], ")
    assert "uncited" not in notices(events)


def _bracketed(text: str) -> list[str]:
    """`[path:lines, path:lines]` citations of an answer, one entry per path:lines."""
    import re

    return [item.strip() for group in re.findall(r"\[([^\[\]]+:\d[^\[\]]*)\]", text) for item in group.split(",")]
