"""The embedded llama.cpp server: one per data dir, adopted by others, stopped by its owner."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import psutil
import pytest

from codeqa.llm import client as llm
from codeqa.core.config import Settings
from codeqa.llm.server import LocalLLMServer
from codeqa.llm.weights import MODEL_FILE_NAME

pytestmark = pytest.mark.integration

PROMPT = [{"role": "user", "content": "Write a Python function that adds two numbers."}]


def test_second_server_adopts_running_one_and_leaves_it_running(
    embedded_settings: Settings, embedded_server: LocalLLMServer
) -> None:
    other = LocalLLMServer(embedded_settings)
    assert other.base_url() == embedded_server.base_url()
    assert other.pid == embedded_server.pid and not other.owned
    other.close()
    assert embedded_server.pid is not None and psutil.pid_exists(embedded_server.pid)
    assert embedded_server.running_url() == embedded_server.base_url()


def test_the_server_and_its_threads_run_below_the_apps_priority(
    embedded_settings: Settings, embedded_server: LocalLLMServer
) -> None:
    server = psutil.Process(embedded_server.pid)
    assert "llama_cpp.server" in server.cmdline()  # `nice` ran it in its own place
    expected = min(19, os.getpriority(os.PRIO_PROCESS, 0) + embedded_settings.background_niceness)
    assert embedded_settings.background_niceness == 10
    assert {os.getpriority(os.PRIO_PROCESS, thread.id) for thread in server.threads()} == {expected}


def llama_servers_under(data_dir: Path) -> list[psutil.Process]:
    """Our children that run llama_cpp.server on a model inside `data_dir` (an earlier test's
    child that has exited but is not reaped yet, a zombie, has no command line to read)."""
    found = []
    for child in psutil.Process().children():
        try:
            command = child.cmdline()
        except (psutil.ZombieProcess, psutil.NoSuchProcess):
            continue
        if "llama_cpp.server" in command and any(str(data_dir) in a for a in command):
            found.append(child)
    return found


def test_concurrent_first_calls_start_one_server_and_close_stops_it(
    tmp_path: Path, llm_data_dir: Path
) -> None:
    (tmp_path / "models").mkdir()
    name = MODEL_FILE_NAME
    os.link(llm_data_dir / "models" / name, tmp_path / "models" / name)  # no 491 MB copy
    settings = Settings(data_dir=tmp_path, llm_base_url="", local_llm=True)
    client = llm.LLMClient(settings)
    assert client.server is not None
    urls: list[str] = []
    threads = [threading.Thread(target=lambda: urls.append(client.server.base_url())) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(urls) == 4 and len(set(urls)) == 1
    assert [p.pid for p in llama_servers_under(tmp_path)] == [client.server.pid]
    assert client.complete("chat", PROMPT, max_tokens=4)
    pid = client.server.pid
    assert pid is not None and client.server.owned
    assert (tmp_path / "run" / "llm-server.json").is_file()
    client.close()
    assert not psutil.pid_exists(pid)
    assert not (tmp_path / "run" / "llm-server.json").exists()
    assert (tmp_path / "logs" / "llama-server.log").stat().st_size > 0


def test_the_server_keeps_only_the_last_logits_and_sizes_its_context_to_the_budgets(
    embedded_settings: Settings, embedded_server: LocalLLMServer
) -> None:
    command = psutil.Process(embedded_server.pid).cmdline()
    flag = command.index("--logits_all")
    assert command[flag + 1] == "False"
    n_ctx = int(command[command.index("--n_ctx") + 1])
    s = embedded_settings
    assert s.context_tokens + s.history_tokens + s.answer_tokens < n_ctx <= 4096


def test_the_prompt_is_read_on_every_usable_core_and_the_answer_written_on_one(
    embedded_settings: Settings, embedded_server: LocalLLMServer
) -> None:
    command = psutil.Process(embedded_server.pid).cmdline()
    assert command[command.index("--n_threads") + 1] == "1"
    assert command[command.index("--n_threads_batch") + 1] == str(len(os.sched_getaffinity(0)))


def test_prompt_tokens_are_counted_by_the_servers_tokenizer(embedded_server: LocalLLMServer) -> None:
    short = embedded_server.count_prompt_tokens([{"role": "user", "content": "hi"}])
    longer = embedded_server.count_prompt_tokens([{"role": "system", "content": "def add(a, b):\n    return a + b"},
                                                  {"role": "user", "content": "hi"}])
    assert short is not None and longer is not None and 5 <= short < longer


def test_a_gguf_of_your_own_runs_in_the_embedded_server(tmp_path: Path, llm_data_dir: Path) -> None:
    own = tmp_path / "elsewhere" / "my-model.gguf"
    own.parent.mkdir()
    os.link(llm_data_dir / "models" / MODEL_FILE_NAME, own)  # any GGUF file; this one is at hand
    settings = Settings(data_dir=tmp_path / "data", llm_base_url="", local_llm=True, local_llm_model=str(own))
    client = llm.LLMClient(settings)
    try:
        assert client.status().available
        assert client.complete("chat", PROMPT, max_tokens=4)
        assert str(own) in psutil.Process(client.server.pid).cmdline()
        assert not (tmp_path / "data" / "models").exists()  # the bundled model was never put together
        assert client.server.count_prompt_tokens(PROMPT) is None  # its chat template is not known
    finally:
        client.close()
    missing = llm.LLMClient(Settings(data_dir=tmp_path / "data", local_llm_model=str(tmp_path / "nope.gguf")))
    assert not missing.status().available and "CODEQA_LOCAL_LLM_MODEL" in missing.status().reason
    with pytest.raises(llm.LLMUnavailable, match="CODEQA_LOCAL_LLM_MODEL names no file"):
        missing.complete("chat", PROMPT, max_tokens=4)
