"""End to end in real Chromium (Debian's, driven by Playwright) against the production server."""

from __future__ import annotations

import json
import re
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, SAMPLE_REPO, http_server, settings_for
from codeqa.core.servers import free_port, start_server

playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect

CHROMIUM = os.environ.get("CODEQA_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = ROOT / "test-artifacts"
XSS_CODE = '''def render_banner(name):
    """Shows <img src=x onerror="window.__xss=1"> and <script>window.__xss=2</script>."""
    return "<script>window.__xss=3</script>" + name
'''
XSS_ANSWER = ('Here: <img src=x onerror="window.__xss=4"> <script>window.__xss=5</script> '
              '[click](javascript:window.__xss=6) see `web/banner.py:1`.')

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Chromium is not installed (make browser)")]


@pytest.fixture(scope="session")
def browser_type_launch_args():
    return {"executable_path": CHROMIUM, "args": [
        "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]}


def serve(data_dir: Path, llm_url: str, **settings: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {**os.environ, "CODEQA_DATA_DIR": str(data_dir), "CODEQA_LLM_BASE_URL": llm_url,
           "CODEQA_CHAT_MODEL": "local", "CODEQA_ANSWER_TOKENS": "40", "CODEQA_CONTEXT_TOKENS": "700",
           "HF_HUB_OFFLINE": "1", "LANCEDB_LOG": "error", **settings}
    env.pop("REDIS_URL", None)
    base = f"http://127.0.0.1:{port}"
    proc = start_server([sys.executable, str(ROOT / "app.py"), "--port", str(port)], env, base + "/api/repos",
                        timeout=120)
    return proc, base


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="module")
def app_url(tmp_path_factory, embedded_server):
    from codeqa.indexing.indexer import index_repo

    data_dir = tmp_path_factory.mktemp("browser") / "data"
    index_repo(SAMPLE_REPO, settings_for(data_dir), name="sample", progress=False)
    proc, base = serve(data_dir, embedded_server.base_url())
    yield base
    stop(proc)


def scripted_llm(answer: str):
    """An OpenAI-compatible endpoint that streams a fixed answer (to test rendering of hostile output)."""
    def handle(request):
        if request.path.endswith("/models"):
            body = json.dumps({"object": "list", "data": [{"id": "scripted", "object": "model"}]}).encode()
            request.send_response(200)
            request.send_header("Content-Type", "application/json")
            request.end_headers()
            request.wfile.write(body)
            return
        request.rfile.read(int(request.headers.get("Content-Length") or 0))
        request.send_response(200)
        request.send_header("Content-Type", "text/event-stream")
        request.end_headers()
        for index in range(0, len(answer), 12):
            chunk = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "scripted",
                     "choices": [{"index": 0, "delta": {"content": answer[index:index + 12]}, "finish_reason": None}]}
            request.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        last = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "scripted",
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}  # as the API ends an answer
        request.wfile.write(f"data: {json.dumps(last)}\n\ndata: [DONE]\n\n".encode())
    return http_server(handle)


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def ask(page, text: str) -> None:
    box = page.get_by_test_id("message-input")
    box.fill(text)
    box.press("Enter")


def last_assistant(page):
    return page.locator("[data-testid=message][data-role=assistant]").last


def wait_answer_done(page) -> None:
    """The last answer's status line reports it finished (the Send button stays disabled while empty)."""
    expect(last_assistant(page).get_by_test_id("status-line")).to_have_attribute("data-state", "done",
                                                                                timeout=240_000)


def test_codebase_question_sources_snippet_follow_up_and_clear(page, app_url):
    page.goto(app_url)
    expect(page.get_by_test_id("repo-select")).to_have_value("sample")
    ask(page, "@codebase how is an order CSV parsed into products?")
    expect(page.get_by_test_id("source-item").first).to_be_visible(timeout=120_000)
    wait_answer_done(page)
    answer = last_assistant(page).get_by_test_id("answer")
    expect(answer).not_to_be_empty()
    files = page.get_by_test_id("source-item").evaluate_all("els => els.map(e => e.dataset.file)")
    assert "shop/csv_parser.py" in files
    expect(page.get_by_test_id("sources")).to_contain_text("shop/csv_parser.py:")
    # A trimmed source is in the context too: never "0 in context" when sources were packed.
    expect(page.locator("#sources-meta")).to_contain_text(re.compile(r"[1-9]\d* in context.* of [\d,]+ tokens"))
    status = last_assistant(page).get_by_test_id("status-line")
    expect(status.locator(".stage[data-stage=search]")).to_have_attribute("data-state", "done")
    expect(status.locator(".stage[data-stage=answer]")).to_have_attribute("data-state", "done")
    expect(status).to_contain_text(" ms")
    shot(page, "01-answer-with-sources")

    item = page.locator("[data-testid=source-item][data-file='shop/csv_parser.py']").first
    start = int(item.get_attribute("data-start"))
    item.click()
    viewer = page.get_by_test_id("snippet-viewer")
    expect(viewer).to_be_visible()
    highlighted = viewer.locator("[data-testid=snippet-line].highlighted")
    expect(highlighted.first).to_have_attribute("data-line", str(start))
    shot(page, "02-snippet-viewer")
    page.keyboard.press("Escape")
    expect(viewer).to_be_hidden()

    ask(page, "and what does it return?")
    wait_answer_done(page)
    expect(page.locator("[data-testid=message][data-role=user]")).to_have_count(2)
    expect(last_assistant(page).get_by_test_id("answer")).not_to_be_empty()
    shot(page, "03-follow-up")

    page.reload()
    expect(page.locator("[data-testid=message]")).to_have_count(4, timeout=30_000)
    page.get_by_test_id("clear-button").click()
    expect(page.locator("[data-testid=message]")).to_have_count(0)
    page.reload()
    expect(page.get_by_test_id("repo-select")).to_have_value("sample")
    page.wait_for_timeout(500)
    expect(page.locator("[data-testid=message]")).to_have_count(0)


def test_a_question_sent_before_the_history_loads_stays_on_the_page(browser, app_url):
    context = browser.new_context()  # a user of their own: an empty history
    try:
        page = context.new_page()
        held = []
        page.route("**/api/history?**", lambda route: held.append(route))  # answered only when released
        page.goto(app_url)
        ask(page, "@codebase where is the cart total computed?")
        expect(page.locator("[data-testid=message][data-role=user]")).to_have_count(1)
        while not held:
            page.wait_for_timeout(50)
        held[0].continue_()
        expect(page.locator("#messages")).to_have_attribute("data-state", "ready")
        wait_answer_done(page)
        expect(page.locator("[data-testid=message][data-role=user]")).to_have_count(1)
        expect(last_assistant(page).get_by_test_id("answer")).not_to_be_empty()
    finally:
        context.close()


def test_two_users_never_see_each_other(browser, app_url):
    alice = browser.new_context()
    bob = browser.new_context()
    try:
        a, b = alice.new_page(), bob.new_page()
        a.goto(app_url)
        ask(a, "@codebase where is the cart total computed? alice-secret-42")
        wait_answer_done(a)
        b.goto(app_url)
        b.wait_for_timeout(1000)
        expect(b.locator("[data-testid=message]")).to_have_count(0)
        assert "alice-secret-42" not in b.content()
        a.reload()
        expect(a.locator("[data-testid=message][data-role=user]")).to_contain_text("alice-secret-42")
        shot(b, "04-second-user-empty")
    finally:
        alice.close()
        bob.close()


def test_hostile_repo_text_and_llm_output_render_as_text(page, tmp_path):
    from codeqa.indexing.indexer import index_repo

    repo = tmp_path / "hostile"
    shutil.copytree(SAMPLE_REPO / "shop", repo / "shop")
    (repo / "web").mkdir()
    (repo / "web" / "banner.py").write_text(XSS_CODE)
    data_dir = tmp_path / "data"
    index_repo(repo, settings_for(data_dir), name="hostile", progress=False)
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    with scripted_llm(XSS_ANSWER) as (llm_url, _):
        proc, base = serve(data_dir, llm_url)
        try:
            page.goto(base)
            ask(page, "@codebase render_banner <img src=x onerror=\"window.__xss=7\">")
            wait_answer_done(page)
            answer = last_assistant(page).get_by_test_id("answer")
            expect(answer).to_contain_text("Here:")
            assert answer.locator("img[onerror], script, a[href^='javascript']").count() == 0
            user = page.locator("[data-testid=message][data-role=user]").last
            expect(user).to_contain_text('<img src=x onerror="window.__xss=7">')
            item = page.locator("[data-testid=source-item][data-file='web/banner.py']").first
            item.click()
            viewer = page.get_by_test_id("snippet-viewer")
            expect(viewer).to_contain_text("<script>window.__xss=3</script>")
            assert viewer.locator("script, img").count() == 0
            shot(page, "05-hostile-text")
            assert page.evaluate("window.__xss") is None
            assert dialogs == []
        finally:
            stop(proc)


def test_narrow_screen_keeps_every_control_reachable(browser, app_url):
    context = browser.new_context(viewport={"width": 375, "height": 740})
    try:
        page = context.new_page()
        page.goto(app_url)
        for test_id in ("message-input", "send-button", "repo-select", "clear-button"):
            box = page.get_by_test_id(test_id).bounding_box()
            assert box and box["x"] >= 0 and box["x"] + box["width"] <= 375, test_id
        assert page.evaluate("document.documentElement.scrollWidth") <= 375
        page.get_by_test_id("message-input").focus()
        page.keyboard.press("Shift+Tab")
        assert page.evaluate("document.activeElement.tagName") in {"BUTTON", "INPUT", "SELECT"}
        shot(page, "06-narrow-screen")
    finally:
        context.close()


def test_autocomplete_by_keyboard_then_a_combined_command_question(page, app_url):
    page.goto(app_url)
    expect(page.get_by_test_id("repo-select")).to_have_value("sample")
    box = page.get_by_test_id("message-input")
    options = page.get_by_test_id("complete-option")
    box.focus()
    box.press_sequentially("@")
    expect(options).to_have_count(5)
    expect(box).to_have_attribute("aria-expanded", "true")
    expect(options.first).to_have_attribute("aria-selected", "true")
    box.press("ArrowDown")
    expect(options.nth(1)).to_have_attribute("aria-selected", "true")
    expect(box).to_have_attribute("aria-activedescendant", options.nth(1).get_attribute("id"))
    box.press("Enter")  # picks, does not send
    expect(box).to_have_value("@definition ")
    expect(page.locator("[data-testid=message]")).to_have_count(0)

    box.press_sequentially("Cart.a")
    expect(options.first).to_contain_text("Cart.add")
    expect(options.first).to_contain_text("shop/models.py:39")
    shot(page, "07-autocomplete-symbols")
    box.press("Tab")
    expect(box).to_have_value("@definition Cart.add ")

    box.press_sequentially("@refe")
    expect(options).to_have_count(1)
    box.press("Escape")
    expect(page.get_by_test_id("complete-list")).to_be_hidden()
    expect(box).to_have_attribute("aria-expanded", "false")
    expect(box).to_have_value("@definition Cart.add @refe")
    box.press_sequentially("rences Cart.add how do they interact?")
    expect(page.get_by_test_id("complete-list")).to_be_hidden()
    box.press("Enter")

    wait_answer_done(page)
    groups = page.get_by_test_id("source-group")
    expect(groups).to_have_count(2)
    definition = page.locator("[data-testid=source-group][data-label='@definition Cart.add']")
    references = page.locator("[data-testid=source-group][data-label='@references Cart.add']")
    expect(definition.locator("h3")).to_contain_text("@definition Cart.add")
    expect(definition.get_by_test_id("source-item").first).to_contain_text("shop/models.py:39-45")
    expect(references.get_by_test_id("source-item").first).to_contain_text("shop/checkout.py:14")
    expect(references.get_by_test_id("source-item").first).to_contain_text("cart.add(product)")
    expect(last_assistant(page).get_by_test_id("answer")).not_to_be_empty()
    shot(page, "08-command-sources")


def test_autocomplete_suggests_indexed_paths_after_file(page, app_url):
    page.goto(app_url)
    box = page.get_by_test_id("message-input")
    box.focus()
    box.press_sequentially("@file csv_p")
    options = page.get_by_test_id("complete-option")
    expect(options.first).to_have_attribute("data-value", "shop/csv_parser.py")
    box.press("Enter")
    expect(box).to_have_value("@file shop/csv_parser.py ")
    expect(page.get_by_test_id("complete-list")).to_be_hidden()


MINILM = "all-MiniLM-L6-v2"


class _StopsEmbedding:
    """The real local model, until the index run has embedded its first batch: then it fails, as
    an embedding endpoint going down mid-run does, leaving the rest of the rows without vectors."""

    def __init__(self) -> None:
        from codeqa.indexing.embeddings import EmbeddingError, LocalEmbedder

        self.inner, self.error, self.calls = LocalEmbedder(), EmbeddingError, 0
        self.model_id = self.inner.model_id
        self.inline = False  # rows written first, embedded after: the stage this test watches

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed(self, texts):
        self.calls += 1
        if self.calls > 1:
            raise self.error("embedding endpoint went away")
        return self.inner.embed(texts)


def test_a_repo_being_embedded_shows_its_progress_until_done(page, tmp_path, embedded_server):
    from codeqa.indexing.embeddings import EmbeddingError
    from codeqa.indexing.indexer import index_repo

    data_dir = tmp_path / "data"
    settings = settings_for(data_dir, embedding_model=MINILM)  # a transformer embeds after the rows are written
    with pytest.raises(EmbeddingError):
        index_repo(SAMPLE_REPO, settings, name="sample", progress=False, embedder=_StopsEmbedding())
    proc, base = serve(data_dir, embedded_server.base_url(), CODEQA_EMBEDDING_MODEL=MINILM)
    try:
        page.goto(base)
        badge = page.get_by_test_id("repo-embedding")
        expect(badge).to_have_text(re.compile(r"^indexing: \d{1,2}% embedded$"))
        expect(page.locator("#welcome-stats")).to_contain_text("% embedded")
        index_repo(SAMPLE_REPO, settings, name="sample", progress=False)  # finishes the vectors
        expect(badge).to_be_hidden(timeout=20_000)  # the page re-reads /api/repos while embedding
        expect(page.locator("#welcome-stats")).not_to_contain_text("embedded")
    finally:
        stop(proc)


# --- The front door: pages on other origins, and DNS rebinding -------------------------------------

NO_LLM = "http://127.0.0.1:9/v1"  # nothing listens there: these pages never get as far as an answer
STEAL = """async (target) => {
  const out = {};
  const body = JSON.stringify({repo: "sample", message: "@codebase where is the secret?"});
  try { out.read = (await (await fetch(target + "/api/repos", {credentials: "include"})).text()); }
  catch { out.read = "blocked"; }
  try {
    await fetch(target + "/api/chat", {method: "POST", credentials: "include", body,
                                       headers: {"Content-Type": "application/json"}});
    out.json = "sent";
  } catch { out.json = "blocked"; }
  await fetch(target + "/api/chat", {method: "POST", mode: "no-cors", credentials: "include", body,
                                     headers: {"Content-Type": "text/plain"}});
  return out;
}"""
FORM_POST = """(target) => {
  const form = document.createElement("form");
  form.method = "POST"; form.action = target + "/api/chat"; form.enctype = "text/plain";
  const field = document.createElement("input");
  field.name = '{"repo": "sample", "message": "@codebase x", "pad": "'; field.value = '"}';
  form.append(field); document.body.append(form); form.submit();
}"""


def foreign_page(request) -> None:
    """Any page of another site (another port is another origin)."""
    body = b"<!doctype html><title>Totally unrelated site</title><p>hello</p>"
    request.send_response(200)
    request.send_header("Content-Type", "text/html")
    request.send_header("Content-Length", str(len(body)))
    request.end_headers()
    request.wfile.write(body)


@pytest.fixture(scope="module")
def bare_app(tmp_path_factory):
    """The production server on the sample repo, with no LLM."""
    from codeqa.indexing.indexer import index_repo

    data_dir = tmp_path_factory.mktemp("front-door") / "data"
    index_repo(SAMPLE_REPO, settings_for(data_dir), name="sample", progress=False)
    proc, base = serve(data_dir, NO_LLM)
    yield base
    stop(proc)


def test_a_page_on_another_origin_can_neither_read_nor_chat(browser, bare_app):
    context = browser.new_context()
    try:
        page = context.new_page()
        assert page.goto(bare_app).status == 200  # the user has the app open: the session cookie is set
        posts = []
        page.on("response", lambda r: posts.append(r.status) if r.request.method == "POST" else None)
        with http_server(foreign_page) as (foreign, _):
            page.goto(foreign.removesuffix("/v1") + "/innocent.html")
            out = page.evaluate(STEAL, bare_app)
            assert out == {"read": "blocked", "json": "blocked"}  # no CORS: unreadable, and no preflight passes
            page.wait_for_timeout(500)
            assert posts == [403]  # the "simple" text/plain POST reached the app, which refused it
            with page.expect_navigation() as navigation:
                page.evaluate(FORM_POST, bare_app)
            assert navigation.value.status == 403
        history = context.request.get(f"{bare_app}/api/history?repo=sample").json()
        assert history == {"messages": []}  # nothing was asked on the user's behalf
    finally:
        context.close()


def test_dns_rebinding_gets_nothing_from_the_app(playwright, browser_type_launch_args, bare_app):
    """evil.example resolves to 127.0.0.1, as an attacker's DNS answers once the page is loaded."""
    port = bare_app.rsplit(":", 1)[1]
    rules = "--host-resolver-rules=MAP evil.example 127.0.0.1"
    browser = playwright.chromium.launch(**{**browser_type_launch_args,
                                            "args": [*browser_type_launch_args["args"], rules]})
    try:
        page = browser.new_page()
        evil = f"http://evil.example:{port}"
        direct = page.goto(evil + "/")
        assert direct.status == 421 and "sample" not in direct.text()
        # A script of the attacker's page runs in the origin evil.example:PORT, and its requests
        # reach the app: same-origin as far as the browser knows.
        got = page.evaluate("""async () => {
          const read = async (url, init) => { const r = await fetch(url, init); return [r.status, await r.text()]; };
          return {
            repos: await read("/api/repos"),
            file: await read("/api/file?repo=sample&path=shop/models.py&start=1&end=5"),
            search: await read("/api/search", {method: "POST", headers: {"Content-Type": "application/json"},
                                               body: JSON.stringify({repo: "sample", query: "cart total"})}),
          };
        }""")
        for status, text in got.values():
            assert status == 421 and "sample" not in text and "class Cart" not in text
    finally:
        browser.close()


def test_names_the_repo_chose_are_shown_escaped(page, tmp_path):
    """A right-to-left override in a file name would show `evil\\u202etxt.py` as `evilyp.txt`."""
    from codeqa.core.errors import printable
    from codeqa.indexing.indexer import index_repo

    spoofed, retitle = "evil\u202etxt.py", "bad\x1b]0;x\x07.py"
    repo = tmp_path / "spoof"
    repo.mkdir()
    (repo / spoofed).write_text("def spoof_name():\n    return 'spoofed'\n")
    (repo / retitle).write_text("def retitle_name():\n    return 1\n")
    data_dir = tmp_path / "data"
    index_repo(repo, settings_for(data_dir), name="spoof", progress=False)
    with scripted_llm("It returns a string.") as (llm_url, _):
        proc, base = serve(data_dir, llm_url)
        try:
            page.goto(base)
            ask(page, '@file "evil\u202etxt.py" @definition retitle_name what do they return?')
            wait_answer_done(page)
            paths = page.locator("[data-testid=source-item] .source-path").all_text_contents()
            assert sorted(paths) == sorted([f"{printable(spoofed)}:1-2", f"{printable(retitle)}:1-2"])
            page.locator(f"[data-testid=source-item][data-file='{spoofed}']").click()
            expect(page.get_by_test_id("snippet-viewer")).to_contain_text("return 'spoofed'")  # the file opens
            expect(page.locator("#snippet-title")).to_have_text(f"{printable(spoofed)}:1-2")
        finally:
            stop(proc)
