// CodeQA web chat: talks to the Flask API, renders answers as sanitised markdown,
// shows the retrieved sources and opens file snippets. No framework, no inline code (strict CSP).
import { marked } from "./vendor/marked/marked.esm.js";
import DOMPurify from "./vendor/dompurify/purify.es.js";
import hljs from "./vendor/highlight.js/highlight.min.js";
import { attachAutocomplete } from "./complete.js";

const STAGES = [
  ["hyde", "HyDE"],
  ["search", "Search"],
  ["rerank", "Rerank"],
  ["answer", "Answer"],
];
const REFERENCES_SHOWN = 3;
const COUNTER_FROM = 0.8; // show the length counter from this share of the limit on
const CITATION = /([A-Za-z0-9_.\-/]*[A-Za-z0-9_\-]\.[A-Za-z0-9]+):(\d+)(?:\s?[-–]\s?(\d+))?/g;
const WHOLE_CITATION = new RegExp(`^${CITATION.source}$`);
// `[a.py:1-2, b.py:3]`: the brackets an answer writes around its citations (the server writes
// the model's `[1]` out so); the citations' links stand in for them.
const CITATION_GROUP = new RegExp(`\\[\\s*((?:${CITATION.source})(?:\\s*[,;]\\s*(?:${CITATION.source}))*)\\s*\\]`, "g");
const SANITIZE = {
  RETURN_DOM_FRAGMENT: true,
  ALLOW_DATA_ATTR: false,
  // No <a> or <img> at all: the renderer writes links and images as text (see `unlinked`).
  FORBID_TAGS: ["style", "a", "img", "form", "input", "button", "textarea", "select", "iframe", "svg", "math"],
  FORBID_ATTR: ["style", "id", "tabindex"],
};
const STORE_KEY = "codeqa.prefs";

const $ = (id) => document.getElementById(id);
const el = {
  repo: $("repo-select"),
  repoEmbedding: $("repo-embedding"),
  hyde: $("hyde-toggle"),
  rerank: $("rerank-toggle"),
  rerankHelp: $("rerank-help"),
  clear: $("clear-button"),
  notices: $("system-notices"),
  messages: $("messages"),
  welcome: $("welcome"),
  welcomeRepo: $("welcome-repo"),
  welcomeStats: $("welcome-stats"),
  noRepos: $("no-repos"),
  composer: $("composer"),
  input: $("message-input"),
  completeList: $("complete-list"),
  completeStatus: $("complete-status"),
  counter: $("char-counter"),
  send: $("send-button"),
  stop: $("stop-button"),
  panel: $("sources-panel"),
  sources: $("sources"),
  sourcesMeta: $("sources-meta"),
  sourcesEmpty: $("sources-empty"),
  sourcesCount: $("sources-count"),
  sourcesToggle: $("sources-toggle"),
  sourcesToggleCount: $("sources-toggle-count"),
  viewer: $("snippet-viewer"),
  viewerTitle: $("snippet-title"),
  viewerStatus: $("snippet-status"),
  viewerBody: $("snippet-body"),
  viewerClose: $("snippet-close"),
};

const state = {
  config: readConfig(),
  streaming: null, // AbortController of the answer being streamed
  historySeq: 0, // guards against a slow history response for a repo no longer selected
  viewerReturnFocus: null,
  viewerSeq: 0,
  embeddingPoll: null, // timer re-reading /api/repos while a repo is being embedded
};
const messageSources = new WeakMap(); // assistant message element -> {hits, reused, context}
// Control and bidi formatting characters: the server's errors.UNSAFE_PATTERN, sent with the page.
const UNSAFE_TEXT = new RegExp(state.config.unsafe_text || "[]", "gu");

// ---------------------------------------------------------------- config and preferences

function readConfig() {
  const fallback = { repos: [], status: {}, limits: { message_chars: 8000 } };
  try {
    return { ...fallback, ...JSON.parse($("codeqa-config").textContent) };
  } catch {
    return fallback;
  }
}

function loadPrefs() {
  try {
    return JSON.parse(localStorage.getItem(STORE_KEY)) || {};
  } catch {
    return {};
  }
}

function savePrefs() {
  const prefs = { repo: el.repo.value, hyde: el.hyde.checked, rerank: el.rerank.checked };
  try {
    localStorage.setItem(STORE_KEY, JSON.stringify(prefs));
  } catch {
    // Storage can be disabled; preferences are a convenience only.
  }
}

/** A name the repository chose (a path, a symbol), with control and bidi formatting characters
 * shown as escapes (`\\u202e`), as the CLI and MCP print them: a right-to-left override can't
 * make `evil\\u202etxt.py` look like `evilyp.txt`. */
function shown(name) {
  return String(name ?? "").replace(UNSAFE_TEXT, (c) => {
    const code = c.codePointAt(0);
    return code < 0x100 ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
  });
}

function messageLimit() {
  return Number(state.config.limits?.message_chars) || 8000;
}

// ---------------------------------------------------------------- small DOM helpers

function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  node.append(...children.filter((c) => c !== null && c !== undefined));
  return node;
}

function formatMs(ms) {
  if (ms === null || ms === undefined) return "";
  return ms >= 1000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms)} ms`;
}

/** A search result's place in its list, best first: its relevance score (the file model's 0-1
 * estimate, docs/retrieval.md) is no measure a reader can compare (the code that answers can
 * score 0.08 beside a 0.99), so the page shows the order the search chose instead. */
function rankBadge(hit, rank, count) {
  if (typeof hit.score !== "number") return null; // a command's own results have no order of merit
  return h("span", {
    class: "rank",
    "data-testid": "source-rank",
    title: `Search result ${rank} of ${count}, best first`,
    text: `#${rank}`,
  });
}

function lineRange(start, end) {
  return end && end !== start ? `${start}-${end}` : `${start}`;
}

function isNearBottom(node) {
  return node.scrollHeight - node.scrollTop - node.clientHeight < 80;
}

function scrollContainer() {
  // The message list scrolls by itself on wide screens, the page scrolls on narrow ones.
  return el.messages.scrollHeight > el.messages.clientHeight ? el.messages : document.scrollingElement;
}

function keepScrolledDown(wasNearBottom) {
  if (!wasNearBottom) return;
  const box = scrollContainer();
  box.scrollTop = box.scrollHeight;
}

// ---------------------------------------------------------------- API

async function apiJson(url, options = {}) {
  const response = await fetch(url, { credentials: "same-origin", ...options });
  const body = await response.json().catch(() => null);
  if (!response.ok) throw new Error(body?.error || `Request failed (${response.status} ${response.statusText})`);
  return body;
}

function repoParam() {
  return encodeURIComponent(el.repo.value);
}

/** Yields {event, data} for each SSE frame of a fetch() response body. */
async function* readSse(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    buffer += decoder.decode(value || new Uint8Array(), { stream: !done });
    buffer = buffer.replace(/\r\n?/g, "\n");
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const frame = parseFrame(buffer.slice(0, cut));
      buffer = buffer.slice(cut + 2);
      if (frame) yield frame;
    }
    if (done) break;
  }
  const last = parseFrame(buffer);
  if (last) yield last;
}

function parseFrame(text) {
  let event = "message";
  const data = [];
  for (const line of text.split("\n")) {
    if (!line || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "event") event = value;
    else if (field === "data") data.push(value);
  }
  if (!data.length) return null;
  try {
    return { event, data: JSON.parse(data.join("\n")) };
  } catch {
    return null;
  }
}

// ---------------------------------------------------------------- markdown rendering

function escapeHtml(text) {
  const map = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
  return text.replace(/[&<>"']/g, (c) => map[c]);
}

/** A link or image of an answer as text, its address shown beside it: repository text can make
 * the model write a link whose URL carries data out (a click from leaking it) or an image that
 * would fetch one. The answer's own links are its citations, made buttons after sanitising. */
function unlinked(labelHtml, href, labelText) {
  const address = href && href !== labelText ? ` <span class="link-url">(${escapeHtml(href)})</span>` : "";
  return `<span class="link-text">${labelHtml}${address}</span>`;
}

marked.use({
  renderer: {
    // Raw HTML in an answer is shown as text: in a code chat `<div>` is something being talked about.
    html: ({ text }) => escapeHtml(text),
    link({ href, text, tokens }) {
      return unlinked(this.parser.parseInline(tokens), href, text);
    },
    image: ({ href, text }) => unlinked(escapeHtml(`[image: ${text || "no description"}]`), href, ""),
  },
});

/** Renders LLM markdown into `target`: parse, sanitise, then decorate the sanitised DOM. */
function renderMarkdown(target, text, hits, final) {
  const html = marked.parse(text, { gfm: true, async: false });
  const fragment = DOMPurify.sanitize(html, SANITIZE);
  decorateCodeBlocks(fragment, final);
  linkCitations(fragment, hits);
  target.replaceChildren(fragment);
}

function codeLanguage(code) {
  const name = [...code.classList].find((c) => c.startsWith("language-"))?.slice(9);
  return name && hljs.getLanguage(name) ? name : null;
}

function decorateCodeBlocks(root, final) {
  for (const code of root.querySelectorAll("pre > code")) {
    // Auto-detecting the language is costly: do it once, when the answer is complete.
    if (codeLanguage(code) || final) hljs.highlightElement(code);
    const language = codeLanguage(code);
    const label = language ? hljs.getLanguage(language).name || language : "";
    const pre = code.parentElement;
    const bar = h("div", { class: "code-bar" }, h("span", { class: "code-language", text: label }), copyButton(code));
    const wrap = h("div", { class: "code-block" });
    pre.replaceWith(wrap);
    wrap.append(bar, pre);
  }
}

function copyButton(code) {
  const button = h("button", {
    type: "button",
    class: "copy-button",
    "data-testid": "copy-button",
    "aria-label": "Copy code",
    text: "Copy",
  });
  button.addEventListener("click", () => copyText(code.textContent, button));
  return button;
}

async function copyText(text, button) {
  let ok = false;
  try {
    await navigator.clipboard.writeText(text);
    ok = true;
  } catch {
    ok = copyWithSelection(text);
  }
  button.textContent = ok ? "Copied" : "Copy failed";
  button.classList.toggle("is-done", ok);
  setTimeout(() => {
    button.textContent = "Copy";
    button.classList.remove("is-done");
  }, 1600);
}

function copyWithSelection(text) {
  // Clipboard API needs a secure context; plain-http deployments fall back to a selection copy.
  const area = h("textarea", { class: "offscreen", readonly: true });
  area.value = text;
  document.body.append(area);
  area.select();
  const ok = document.execCommand("copy");
  area.remove();
  return ok;
}

// ---------------------------------------------------------------- citations

function knownFiles(hits) {
  const files = new Set();
  for (const hit of hits || []) {
    files.add(hit.file_path);
    for (const ref of hit.references || []) files.add(ref.file_path);
  }
  return [...files];
}

function resolveFile(cited, files) {
  const clean = cited.replace(/^\.?\//, "");
  return files.find((f) => f === clean || f.endsWith(`/${clean}`) || clean.endsWith(`/${f}`)) || null;
}

/** Turns `path/file.py:10-20` in text and inline code into buttons opening that snippet. */
function linkCitations(root, hits) {
  const files = knownFiles(hits);
  if (!files.length) return;
  for (const code of [...root.querySelectorAll("code")]) {
    if (code.closest("pre")) continue;
    const match = wholeCitation(code.textContent, files);
    if (match) code.replaceWith(citationButton(match, code.cloneNode(true)));
  }
  for (const node of textNodes(root)) replaceCitationsInText(node, files);
}

function wholeCitation(text, files) {
  const m = WHOLE_CITATION.exec(text.trim());
  if (!m) return null;
  const file = resolveFile(m[1], files);
  return file ? { file, start: Number(m[2]), end: Number(m[3] || m[2]) } : null;
}

function textNodes(root) {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
    acceptNode: (n) => (n.parentElement?.closest("pre, code, a, button") ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT),
  });
  const nodes = [];
  while (walker.nextNode()) nodes.push(walker.currentNode);
  return nodes;
}

function replaceCitationsInText(node, files) {
  const text = node.textContent.replace(CITATION_GROUP, (group, inner) =>
    [...inner.matchAll(CITATION)].every((m) => resolveFile(m[1], files)) ? inner : group,
  );
  const parts = [];
  let last = 0;
  for (const m of text.matchAll(CITATION)) {
    const file = resolveFile(m[1], files);
    if (!file) continue;
    parts.push(text.slice(last, m.index));
    const target = { file, start: Number(m[2]), end: Number(m[3] || m[2]) };
    parts.push(citationButton(target, document.createTextNode(m[0])));
    last = m.index + m[0].length;
  }
  if (!parts.length) return;
  parts.push(text.slice(last));
  node.replaceWith(...parts);
}

function citationButton(target, label) {
  return h(
    "button",
    {
      type: "button",
      class: "citation",
      "data-testid": "citation",
      "data-file": target.file,
      "data-start": target.start,
      "data-end": target.end,
      title: `Open ${target.file}:${lineRange(target.start, target.end)}`,
    },
    label,
  );
}

// ---------------------------------------------------------------- messages

function updateWelcome() {
  const hasRepos = state.config.repos.length > 0;
  el.noRepos.hidden = hasRepos;
  el.welcome.hidden = !hasRepos || el.messages.childElementCount > 0;
  const repo = currentRepo();
  if (!repo) return;
  el.welcomeRepo.textContent = shown(repo.name);
  el.welcomeStats.textContent = repoStats(repo);
}

function repoStats(repo) {
  const parts = [
    `${repo.files ?? 0} files`,
    `${repo.methods ?? 0} methods`,
    `${repo.classes ?? 0} classes`,
  ];
  const languages = Object.entries(repo.languages || {})
    .sort((a, b) => b[1] - a[1])
    .map(([name]) => name);
  if (languages.length) parts.push(languages.slice(0, 4).join(", "));
  const indexed = indexedDate(repo.indexed_at);
  if (indexed) parts.push(`indexed ${indexed.toLocaleString()}`);
  if (isEmbedding(repo)) parts.push(embeddingText(repo));
  return parts.join(" · ");
}

// ---------------------------------------------------------------- embedding progress

const EMBEDDING_POLL_MS = 5000;

function isEmbedding(repo) {
  return typeof repo?.embedded_percent === "number" && repo.embedded_percent < 100;
}

function embeddingText(repo) {
  return `indexing: ${repo.embedded_percent}% embedded`;
}

/** Shows how far the selected repo's vectors are, and re-reads /api/repos until every repo
 * has all of them (rows without a vector are searchable by text meanwhile). */
function showEmbedding() {
  const repo = currentRepo();
  el.repoEmbedding.hidden = !isEmbedding(repo);
  el.repoEmbedding.textContent = isEmbedding(repo) ? embeddingText(repo) : "";
  el.repoEmbedding.title = isEmbedding(repo) ? "Searchable now; answers improve as the rest are embedded" : "";
  if (state.config.repos.some(isEmbedding) && !state.embeddingPoll) {
    state.embeddingPoll = setTimeout(refreshRepos, EMBEDDING_POLL_MS);
  }
}

async function refreshRepos() {
  state.embeddingPoll = null;
  try {
    const { repos } = await apiJson("/api/repos");
    const known = new Map(repos.map((repo) => [repo.name, repo]));
    // Only the numbers change here: the repo list itself is the page's (reload for new repos).
    state.config.repos = state.config.repos.map((repo) => known.get(repo.name) || repo);
  } catch {
    // The server may be restarting; try again at the next tick.
  }
  showEmbedding();
  updateWelcome();
}

function indexedDate(value) {
  if (value === null || value === undefined || value === "") return null;
  // Accepts an ISO string or a Unix time in seconds or milliseconds.
  const date = typeof value === "number" ? new Date(value < 1e12 ? value * 1000 : value) : new Date(value);
  return Number.isNaN(date.getTime()) ? null : date;
}

function addUserMessage(text) {
  const body = h("div", { class: "message-body user-text", text });
  const node = h(
    "article",
    { class: "message message-user", "data-testid": "message", "data-role": "user", "aria-label": "You" },
    body,
  );
  el.messages.append(node);
  updateWelcome();
  return node;
}

function addAssistantMessage({ live }) {
  const node = h("article", {
    class: "message message-assistant",
    "data-testid": "message",
    "data-role": "assistant",
    "aria-label": "CodeQA",
  });
  const parts = {
    node,
    status: live ? statusLine() : null,
    notices: h("div", { class: "message-notices" }),
    facts: h("div", { class: "message-facts" }),
    answer: h("div", { class: "answer markdown", "data-testid": "answer" }),
    footer: h("div", { class: "message-footer" }),
    text: "",
  };
  node.append(...[parts.status, parts.notices, parts.facts, parts.answer, parts.footer].filter(Boolean));
  el.messages.append(node);
  updateWelcome();
  return parts;
}

/** A note on the answer; `code` says which ("cut", "loop", "uncited", ...), for styling and tests. */
function addNotice(parts, message, code = "") {
  parts.notices.append(h("div", { class: "notice", "data-testid": "notice", "data-code": code, role: "note", text: message }));
}

/**
 * What the index says for a structural question ("what calls X?"): the exact list, each item a
 * link to its lines, shown whatever the answer says. Every string goes in as text.
 */
function showFacts(parts, facts) {
  const items = (facts.items || []).map((item) => h("li", {}, factButton(item)));
  const more = (facts.total || 0) - items.length;
  parts.facts.replaceChildren(
    h(
      "section",
      { class: "facts", "data-testid": "facts", "data-kind": String(facts.kind || "") },
      h("p", { class: "facts-title", text: `From the index: ${shown(facts.title)}` }),
      h("ol", { class: "facts-items" }, ...items),
      more > 0 ? h("p", { class: "facts-more", text: `+ ${more} more` }) : null,
      facts.external?.length
        ? h("p", { class: "facts-more", text: `Also called: ${facts.external.map(shown).join(", ")}` })
        : null,
    ),
  );
}

/** A caller opens at its call, a definition or callee with its whole range highlighted. */
function factButton(item) {
  const start = Number(item.line) || 1;
  const end = start === Number(item.start_line) ? Number(item.end_line) || start : start;
  return h(
    "button",
    {
      type: "button",
      class: "fact",
      "data-testid": "fact",
      "data-file": item.file_path,
      "data-start": start,
      "data-end": end,
      title: `Open ${shown(item.file_path)}:${lineRange(start, end)}`,
    },
    h("code", { class: "fact-name", text: shown(item.name) }),
    h("span", { class: "fact-path", text: `${shown(item.file_path)}:${lineRange(start, end)}` }),
    item.note ? h("span", { class: "fact-note", text: shown(item.note) }) : null,
  );
}

function addError(parts, message) {
  parts.notices.append(h("div", { class: "error", "data-testid": "error", role: "alert", text: message }));
}

function setMessageSources(parts, sources) {
  messageSources.set(parts.node, sources);
  const count = sources.hits.length;
  const label = `${count} ${count === 1 ? "source" : "sources"}${sources.reused ? " (reused)" : ""}`;
  const button = h("button", { type: "button", class: "sources-link", text: label });
  button.addEventListener("click", () => {
    showSources(sources);
    openSourcesPanel();
  });
  parts.footer.replaceChildren(button);
}

function renderHistory(messages) {
  // A question sent while the history was loading stays, after the earlier turns.
  const live = [...el.messages.children];
  el.messages.replaceChildren();
  let lastSources = null;
  for (const message of messages) {
    if (message.role === "user") {
      addUserMessage(message.content);
      continue;
    }
    const parts = addAssistantMessage({ live: false });
    const hits = message.sources || [];
    if (hits.length) {
      lastSources = { hits, reused: false, context: null, label: "For the latest answer" };
      setMessageSources(parts, lastSources);
    }
    if (message.facts) showFacts(parts, message.facts);
    renderMarkdown(parts.answer, message.content || "", hits, true);
  }
  el.messages.append(...live);
  if (!live.length) showSources(lastSources);
  updateWelcome();
  const box = scrollContainer();
  box.scrollTop = box.scrollHeight;
}

async function loadHistory() {
  const seq = ++state.historySeq;
  el.messages.dataset.state = "loading";
  el.messages.replaceChildren();
  showSources(null);
  updateWelcome();
  if (!el.repo.value) {
    el.messages.dataset.state = "ready";
    return;
  }
  try {
    const body = await apiJson(`/api/history?repo=${repoParam()}`);
    if (seq === state.historySeq) renderHistory(body.messages || []);
  } catch (err) {
    if (seq === state.historySeq) systemNotice(`Could not load the conversation: ${err.message}`, "error");
  } finally {
    if (seq === state.historySeq) el.messages.dataset.state = "ready";
  }
}

// ---------------------------------------------------------------- pipeline status line

function statusLine() {
  const line = h("div", {
    class: "status-line",
    "data-testid": "status-line",
    role: "status",
    "aria-live": "polite",
  });
  for (const [stage, label] of STAGES) {
    line.append(
      h(
        "span",
        { class: "stage", "data-stage": stage, "data-state": "pending" },
        h("span", { class: "stage-icon", "aria-hidden": "true" }),
        h("span", { class: "stage-label", text: label }),
        h("span", { class: "stage-detail" }),
      ),
    );
  }
  line.append(h("span", { class: "stage-total" }));
  return line;
}

function updateStage(line, { stage, state: stageState, ms, detail }) {
  const chip = line.querySelector(`[data-stage="${CSS.escape(stage)}"]`);
  if (!chip) return;
  chip.dataset.state = stageState;
  const words = { start: "running", done: formatMs(ms), skipped: "skipped" };
  const extra = stageState === "skipped" && detail ? `skipped: ${detail}` : words[stageState] || "";
  chip.querySelector(".stage-detail").textContent = extra;
  if (detail) chip.title = detail;
}

function finishStatus(line, timings, outcome) {
  if (!line) return;
  for (const chip of line.querySelectorAll('.stage[data-state="start"]')) {
    chip.dataset.state = outcome; // a stage still running when the answer ended ended with it
    chip.querySelector(".stage-detail").textContent = outcome;
  }
  for (const chip of line.querySelectorAll('.stage[data-state="pending"]')) chip.classList.add("is-unused");
  const total = timings?.total ?? timings?.total_ms;
  const texts = { done: total ? `Done in ${formatMs(total)}` : "Done", failed: "Failed", stopped: "Stopped" };
  line.querySelector(".stage-total").textContent = texts[outcome];
  line.dataset.state = outcome;
}

// ---------------------------------------------------------------- chat

async function sendMessage(text) {
  const parts = startExchange(text);
  const controller = new AbortController();
  setStreaming(controller);
  const outcome = await streamAnswer(text, parts, controller.signal).catch((err) => {
    if (controller.signal.aborted) {
      addNotice(parts, "Stopped.");
      return "stopped";
    }
    addError(parts, `The answer failed: ${err.message}`);
    return "failed";
  });
  if (outcome !== "done") finishStatus(parts.status, null, outcome);
  renderAnswer(parts, true);
  setStreaming(null);
}

function startExchange(text) {
  addUserMessage(text);
  const parts = addAssistantMessage({ live: true });
  parts.answer.classList.add("is-waiting");
  keepScrolledDown(true);
  return parts;
}

async function streamAnswer(text, parts, signal) {
  const response = await fetch("/api/chat", {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
    body: JSON.stringify({ repo: el.repo.value, message: text, hyde: el.hyde.checked, rerank: el.rerank.checked }),
    signal,
  });
  if (!response.ok) {
    const body = await response.json().catch(() => null);
    addError(parts, body?.error || `Request failed (${response.status} ${response.statusText})`);
    return "failed";
  }
  for await (const { event, data } of readSse(response)) {
    const outcome = handleEvent(parts, event, data);
    if (outcome) return outcome;
  }
  addError(parts, "The connection closed before the answer was complete.");
  return "failed";
}

/** Applies one SSE event to the message; returns the final outcome on `done` or `error`. */
function handleEvent(parts, event, data) {
  const wasNearBottom = isNearBottom(scrollContainer());
  let outcome = null;
  if (event === "status") updateStage(parts.status, data);
  else if (event === "sources") receiveSources(parts, data);
  else if (event === "notice") addNotice(parts, data.message, data.code);
  else if (event === "facts") showFacts(parts, data);
  else if (event === "token") appendToken(parts, data.text || "");
  else if (event === "error") {
    addError(parts, data.message || "The answer failed.");
    finishStatus(parts.status, null, "failed");
    outcome = "failed";
  } else if (event === "done") {
    finishStatus(parts.status, data.timings_ms, "done");
    outcome = "done";
  }
  keepScrolledDown(wasNearBottom);
  return outcome;
}

function receiveSources(parts, data) {
  const sources = {
    hits: data.results || [],
    commands: data.commands || [],
    reused: Boolean(data.reused),
    context: data.context || null,
    label: data.reused ? "From your last question with code" : "For the latest answer",
  };
  setMessageSources(parts, sources);
  showSources(sources);
}

function appendToken(parts, text) {
  parts.text += text;
  if (parts.frame) return;
  parts.frame = requestAnimationFrame(() => {
    parts.frame = null;
    renderAnswer(parts, false);
  });
}

function renderAnswer(parts, final) {
  if (parts.frame) cancelAnimationFrame(parts.frame);
  parts.frame = null;
  parts.answer.classList.toggle("is-waiting", !parts.text && !final);
  parts.answer.classList.toggle("is-streaming", !final);
  const hits = messageSources.get(parts.node)?.hits || [];
  renderMarkdown(parts.answer, parts.text, hits, final);
}

function setStreaming(controller) {
  state.streaming = controller;
  el.stop.hidden = !controller;
  el.repo.disabled = Boolean(controller) || !state.config.repos.length;
  el.clear.disabled = Boolean(controller) || !state.config.repos.length;
  updateComposer();
}

// ---------------------------------------------------------------- composer

function messageLength() {
  return [...el.input.value].length; // code points, as the server counts them
}

function updateComposer() {
  const length = messageLength();
  const limit = messageLimit();
  const over = length > limit;
  el.counter.hidden = length < limit * COUNTER_FROM;
  el.counter.textContent = over
    ? `${(length - limit).toLocaleString()} characters over the ${limit.toLocaleString()} limit`
    : `${length.toLocaleString()} / ${limit.toLocaleString()}`;
  el.counter.classList.toggle("is-over", over);
  el.input.setAttribute("aria-invalid", over ? "true" : "false");
  const blocked = Boolean(state.streaming) || !el.repo.value;
  el.send.disabled = blocked || over || !el.input.value.trim();
  el.input.disabled = !el.repo.value;
}

function submitComposer(event) {
  event?.preventDefault();
  if (el.send.disabled) return;
  const text = el.input.value.trim();
  el.input.value = "";
  updateComposer();
  sendMessage(text);
}

function onComposerKey(event) {
  if (event.key !== "Enter" || event.shiftKey || event.isComposing) return;
  event.preventDefault();
  submitComposer();
}

// ---------------------------------------------------------------- sources panel

const CODEBASE_LABEL = "@codebase";

/** The sources grouped by the command that brought them, in the order the commands were written. */
function sourceGroups(sources) {
  const groups = new Map();
  for (const command of sources?.commands || []) groups.set(command.label, { command, hits: [] });
  for (const hit of sources?.hits || []) {
    const label = hit.source || CODEBASE_LABEL; // answers stored before commands existed
    if (!groups.has(label)) groups.set(label, { command: null, hits: [] });
    groups.get(label).hits.push(hit);
  }
  return [...groups].map(([label, group]) => ({ label, ...group }));
}

function sourceGroup({ label, command, hits }) {
  const count = hits.length ? `${hits.length} ${hits.length === 1 ? "item" : "items"}` : "nothing found";
  const heading = h(
    "h3",
    { class: "source-group-heading" },
    h("span", { text: shown(label) }),
    h("span", { class: "source-group-count", text: count }),
  );
  const message = command?.message ? h("p", { class: "source-group-message", text: command.message }) : null;
  const items = h("ol", { class: "source-group-items" }, ...hits.map((hit, i) => sourceItem(hit, i + 1, hits.length)));
  return h("section", { class: "source-group", "data-testid": "source-group", "data-label": label }, heading, message, items);
}

function showSources(sources) {
  const hits = sources?.hits || [];
  const groups = sourceGroups(sources);
  el.sources.replaceChildren(...groups.map(sourceGroup));
  el.sourcesEmpty.hidden = groups.length > 0;
  el.sourcesMeta.replaceChildren(...sourcesMeta(sources));
  el.sourcesMeta.hidden = !sources;
  const count = hits.length ? String(hits.length) : "";
  el.sourcesCount.textContent = count;
  el.sourcesToggleCount.textContent = count;
}

function sourcesMeta(sources) {
  if (!sources) return [];
  const nodes = [h("span", { class: sources.reused ? "badge badge-reused" : "meta-label", text: sources.label })];
  const ctx = sources.context;
  if (typeof ctx?.included === "number") {
    // A reused context sends no counts of its own: saying "0 in context" would be wrong.
    // A trimmed source is in the context too (its best lines and signatures), so it counts there.
    const trimmed = ctx.trimmed ?? 0;
    const words = [`${(ctx.included ?? 0) + trimmed} in context` + (trimmed ? ` (${trimmed} in part)` : "")];
    if (ctx.omitted) words.push(`${ctx.omitted} left out`);
    if (ctx.budget) words.push(`${(ctx.tokens ?? 0).toLocaleString("en")} of ${ctx.budget.toLocaleString("en")} tokens`);
    nodes.push(h("span", { class: "meta-context", text: words.join(" · ") }));
  }
  return nodes;
}

function sourceItem(hit, rank, count) {
  const range = `${shown(hit.file_path)}:${lineRange(hit.start_line, hit.end_line)}`;
  const open = h(
    "button",
    {
      type: "button",
      class: "source-item",
      "data-testid": "source-item",
      "data-source": hit.source || CODEBASE_LABEL,
      "data-file": hit.file_path,
      "data-start": hit.start_line,
      "data-end": hit.end_line,
    },
    h(
      "span",
      { class: "source-top" },
      h("span", { class: `kind kind-${String(hit.kind || "").replace(/\W/g, "")}`, text: hit.kind || "code" }),
      hit.exact_match ? h("span", { class: "badge badge-exact", text: "exact name" }) : null,
      rankBadge(hit, rank, count),
    ),
    h("span", { class: "source-name", text: shown(hit.qualified_name || hit.name) }),
    h("span", { class: "source-path", text: range }),
    hit.text ? h("code", { class: "source-text", text: hit.text.trim() }) : null,
  );
  const refs = hit.kind === "use" || hit.kind === "file" ? null : referencesBlock(hit);
  return h("li", { class: "source" }, open, refs);
}

function referencesBlock(hit) {
  const count = hit.reference_count || 0;
  if (!count) return h("p", { class: "refs-none", text: "No references found" });
  const refs = (hit.references || []).slice(0, REFERENCES_SHOWN);
  const list = h("ul", { class: "refs" }, ...refs.map(referenceItem));
  const more = count > refs.length ? h("p", { class: "refs-more", text: `+ ${count - refs.length} more` }) : null;
  const label = `Used in ${count} ${count === 1 ? "place" : "places"}`;
  return h("div", { class: "refs-block" }, h("p", { class: "refs-title", text: label }), list, more);
}

function referenceItem(ref) {
  const button = h(
    "button",
    { type: "button", class: "ref", "data-testid": "reference", "data-file": ref.file_path, "data-start": ref.line },
    h("span", { class: "ref-path", text: `${shown(ref.file_path)}:${ref.line}` }),
    h("code", { class: "ref-text", text: (ref.text || "").trim() }),
  );
  return h("li", {}, button);
}

function openSourcesPanel() {
  setPanelExpanded(true);
  el.panel.scrollIntoView({ block: "nearest", behavior: "smooth" });
}

function setPanelExpanded(expanded) {
  el.panel.classList.toggle("is-collapsed", !expanded);
  el.sourcesToggle.setAttribute("aria-expanded", String(expanded));
}

// ---------------------------------------------------------------- snippet viewer

function snippetTarget(button) {
  const start = Number(button.dataset.start) || 1;
  return { file: button.dataset.file, start, end: Number(button.dataset.end) || start };
}

async function openSnippet(target, opener) {
  const seq = ++state.viewerSeq;
  state.viewerReturnFocus = opener || document.activeElement;
  el.viewerTitle.textContent = `${shown(target.file)}:${lineRange(target.start, target.end)}`;
  el.viewerStatus.textContent = "Loading…";
  el.viewerBody.replaceChildren();
  if (!el.viewer.open) el.viewer.showModal();
  el.viewerClose.focus();
  const query = new URLSearchParams({ repo: el.repo.value, path: target.file, start: target.start, end: target.end });
  try {
    const body = await apiJson(`/api/file?${query}`);
    if (seq !== state.viewerSeq) return;
    renderSnippet(body, target);
  } catch (err) {
    if (seq === state.viewerSeq) el.viewerStatus.textContent = err.message;
  }
}

function renderSnippet(body, target) {
  const start = body.start ?? target.start;
  const end = body.end ?? target.end;
  const first = body.first_line ?? 1;
  const lines = body.lines || [];
  const rows = lines.map((text, i) => snippetLine(first + i, text, start, end));
  el.viewerBody.replaceChildren(...rows);
  el.viewerBody.setAttribute("aria-label", `${body.path || target.file}, lines ${first} to ${first + lines.length - 1}`);
  el.viewerStatus.textContent = lines.length
    ? `${body.language ? `${body.language} · ` : ""}lines ${lineRange(start, end)} highlighted`
    : "No lines to show.";
  el.viewerBody.querySelector(".highlighted")?.scrollIntoView({ block: "center" });
}

function snippetLine(number, text, start, end) {
  const hot = number >= start && number <= end;
  return h(
    "div",
    { class: hot ? "snippet-line highlighted" : "snippet-line", "data-testid": "snippet-line", "data-line": number },
    h("span", { class: "line-number", "aria-hidden": "true", text: String(number) }),
    h("code", { class: "line-text", text: text || "\u200b" }),
  );
}

function onViewerClosed() {
  state.viewerSeq++;
  const back = state.viewerReturnFocus;
  state.viewerReturnFocus = null;
  if (back && back.isConnected) back.focus();
  else el.input.focus();
}

function onViewerClick(event) {
  if (event.target === el.viewer) el.viewer.close(); // a click on the backdrop
}

// ---------------------------------------------------------------- header controls and notices

function currentRepo() {
  return state.config.repos.find((r) => r.name === el.repo.value) || null;
}

function fillRepos(prefs) {
  const repos = state.config.repos;
  if (!repos.length) {
    el.repo.append(h("option", { value: "", text: "No repositories indexed" }));
    return;
  }
  for (const repo of repos) el.repo.append(h("option", { value: repo.name, text: shown(repo.name) }));
  if (repos.some((r) => r.name === prefs.repo)) el.repo.value = prefs.repo;
}

function applyStatus(prefs) {
  const status = state.config.status || {};
  el.hyde.checked = Boolean(prefs.hyde);
  const rerank = status.rerank || {};
  const canRerank = rerank.available !== false;
  el.rerank.disabled = !canRerank;
  // Until the user picks, the server's CODEQA_RERANK decides (as for the CLI and the API).
  el.rerank.checked = canRerank && Boolean(prefs.rerank ?? state.config.defaults?.rerank);
  const reason = canRerank ? "" : `Unavailable: ${rerank.reason || "no reranking model"}`;
  el.rerankHelp.textContent = reason;
  el.rerankHelp.title = reason;
  el.rerank.title = reason;
  el.rerank.parentElement.title = reason;
  el.rerank.parentElement.classList.toggle("is-disabled", !canRerank);
  if (status.llm && status.llm.available === false) {
    const reason = status.llm.reason ? ` (${status.llm.reason})` : "";
    systemNotice(`No LLM reachable: answers will show sources only${reason}.`, "warning");
  }
  if (status.redis && status.redis.ok === false) {
    systemNotice(`Redis is unavailable: ${status.redis.reason || "conversations are not kept"}`, "warning");
  }
}

function systemNotice(message, tone) {
  const close = h("button", { type: "button", class: "notice-close", "aria-label": "Dismiss", text: "×" });
  const node = h(
    "div",
    { class: `system-notice system-notice-${tone}`, "data-testid": "system-notice", role: tone === "error" ? "alert" : "status" },
    h("span", { text: message }),
    close,
  );
  close.addEventListener("click", () => node.remove());
  el.notices.append(node);
}

async function clearChat() {
  if (!el.repo.value) return;
  try {
    await apiJson(`/api/history?repo=${repoParam()}`, { method: "DELETE" });
    el.messages.replaceChildren();
    showSources(null);
    updateWelcome();
    el.input.focus();
  } catch (err) {
    systemNotice(`Could not clear the conversation: ${err.message}`, "error");
  }
}

// ---------------------------------------------------------------- wiring

function onDocumentClick(event) {
  const opener = event.target.closest("button.source-item, button.citation, button.ref, button.fact");
  if (opener) openSnippet(snippetTarget(opener), opener);
  const example = event.target.closest(".example");
  if (example) {
    el.input.value = example.textContent;
    updateComposer();
    el.input.focus();
  }
}

function wire() {
  document.addEventListener("click", onDocumentClick);
  el.composer.addEventListener("submit", submitComposer);
  el.input.addEventListener("keydown", onComposerKey);
  el.input.addEventListener("input", updateComposer);
  el.stop.addEventListener("click", () => state.streaming?.abort());
  el.clear.addEventListener("click", clearChat);
  el.repo.addEventListener("change", () => {
    savePrefs();
    showEmbedding();
    loadHistory();
  });
  el.hyde.addEventListener("change", savePrefs);
  el.rerank.addEventListener("change", savePrefs);
  el.sourcesToggle.addEventListener("click", () => setPanelExpanded(el.panel.classList.contains("is-collapsed")));
  el.viewerClose.addEventListener("click", () => el.viewer.close());
  el.viewer.addEventListener("close", onViewerClosed);
  el.viewer.addEventListener("click", onViewerClick);
}

function init() {
  const prefs = loadPrefs();
  fillRepos(prefs);
  showEmbedding();
  applyStatus(prefs);
  // Before wire(): the list's Enter must be handled before the composer's Enter sends.
  attachAutocomplete({
    input: el.input,
    list: el.completeList,
    status: el.completeStatus,
    repo: () => el.repo.value,
    changed: updateComposer,
  });
  wire();
  setStreaming(null);
  if (el.repo.value) el.input.focus();
  loadHistory().finally(() => {
    document.documentElement.dataset.ready = "true";
  });
}

init();
