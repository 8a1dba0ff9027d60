// Autocomplete for @-commands in the message box: an ARIA combobox on the textarea.
// The server decides what is being completed (GET /api/complete, the same grammar that reads
// the commands), so this file only shows a list and inserts the chosen value. Keyboard:
// ArrowDown/ArrowUp move, Enter or Tab take the highlighted item, Escape closes the list.

const DELAY_MS = 60; // typing faster than this sends one request, not one per key
const SENT_CHARS = 300; // of the text before the caret: plenty for "@command argument"
const MAY_COMPLETE = /(?:^|[\s([{])@(?:[\w-]*|[A-Za-z][\w-]*[ \t]+\S*)$/;

/**
 * Wires autocomplete to `input` (a textarea). `list` is the listbox element, `status` a
 * polite live region, `repo()` the selected repository, `changed()` is called after a pick.
 */
export function attachAutocomplete({ input, list, status, repo, changed }) {
  const state = { items: [], active: -1, start: 0, end: 0, timer: null, seq: 0, controller: null };

  input.setAttribute("role", "combobox");
  input.setAttribute("aria-autocomplete", "list");
  input.setAttribute("aria-haspopup", "listbox");
  input.setAttribute("aria-controls", list.id);
  input.setAttribute("aria-expanded", "false");

  function close() {
    clearTimeout(state.timer);
    state.items = [];
    state.active = -1;
    state.seq++;
    state.controller?.abort();
    list.hidden = true;
    list.replaceChildren();
    input.setAttribute("aria-expanded", "false");
    input.removeAttribute("aria-activedescendant");
  }

  function isOpen() {
    return !list.hidden && state.items.length > 0;
  }

  function textBeforeCaret() {
    const caret = input.selectionStart;
    return input.value.slice(Math.max(0, caret - SENT_CHARS), caret);
  }

  function schedule() {
    clearTimeout(state.timer);
    const caret = input.selectionStart;
    if (caret !== input.selectionEnd || !repo()) return close();
    const before = textBeforeCaret();
    if (!MAY_COMPLETE.test(before)) return close();
    state.timer = setTimeout(() => fetchItems(before, caret), DELAY_MS);
  }

  async function fetchItems(text, caret) {
    const seq = ++state.seq;
    state.controller?.abort();
    state.controller = new AbortController();
    const query = new URLSearchParams({ repo: repo(), text });
    let body;
    try {
      const response = await fetch(`/api/complete?${query}`, { credentials: "same-origin", signal: state.controller.signal });
      if (!response.ok) return seq === state.seq && close();
      body = await response.json();
    } catch {
      return; // aborted by a newer request, or offline: leave the list as it is
    }
    if (seq !== state.seq || textBeforeCaret() !== text) return; // the box has moved on (sent, edited)
    if (!body.target || !body.items?.length) return close();
    state.start = caret - text.length + body.target.start;
    state.end = caret;
    show(body.items);
  }

  function show(items) {
    state.items = items;
    state.active = 0;
    list.replaceChildren(...items.map(option));
    list.hidden = false;
    input.setAttribute("aria-expanded", "true");
    highlight(0);
    status.textContent = `${items.length} suggestion${items.length === 1 ? "" : "s"}, use arrow keys and Enter`;
  }

  function option(item, index) {
    const node = document.createElement("li");
    node.id = `${list.id}-${index}`;
    node.className = "complete-option";
    node.setAttribute("role", "option");
    node.setAttribute("aria-selected", "false");
    node.dataset.testid = "complete-option";
    node.dataset.value = item.value;
    const label = document.createElement("span");
    label.className = "complete-label";
    label.textContent = item.label;
    const detail = document.createElement("span");
    detail.className = "complete-detail";
    detail.textContent = item.detail || "";
    node.append(label, detail);
    node.addEventListener("mousedown", (event) => {
      event.preventDefault(); // keep the focus (and the caret) in the textarea
      pick(index);
    });
    return node;
  }

  function highlight(index) {
    const options = list.querySelectorAll("[role=option]");
    options.forEach((node, i) => node.setAttribute("aria-selected", String(i === index)));
    state.active = index;
    const node = options[index];
    if (!node) return input.removeAttribute("aria-activedescendant");
    input.setAttribute("aria-activedescendant", node.id);
    node.scrollIntoView({ block: "nearest" });
  }

  function pick(index) {
    const item = state.items[index];
    if (!item) return;
    const after = input.value.slice(state.end);
    const spacer = item.value.endsWith(" ") || /^\s/.test(after) ? "" : " ";
    const inserted = item.value + spacer;
    input.value = input.value.slice(0, state.start) + inserted + after;
    const caret = state.start + inserted.length;
    input.setSelectionRange(caret, caret);
    close();
    status.textContent = `Inserted ${item.label}`;
    changed();
    schedule(); // "@definition " goes straight on to the names
  }

  function onKeyDown(event) {
    if (event.isComposing) return;
    if (!isOpen()) {
      // Enter with no list sends the message: suggestions still on their way are for text gone.
      if (event.key === "Enter" && !event.shiftKey) close();
      return;
    }
    const count = state.items.length;
    let handled = true;
    if (event.key === "ArrowDown") highlight((state.active + 1) % count);
    else if (event.key === "ArrowUp") highlight((state.active - 1 + count) % count);
    else if ((event.key === "Enter" && !event.shiftKey) || (event.key === "Tab" && !event.shiftKey)) pick(state.active);
    else if (event.key === "Escape") close();
    else handled = false;
    if (handled) {
      event.preventDefault();
      event.stopImmediatePropagation(); // Enter picks here; it must not also send the message
    }
  }

  input.addEventListener("keydown", onKeyDown);
  input.addEventListener("input", schedule);
  input.addEventListener("click", schedule);
  input.addEventListener("keyup", (event) => {
    if (["ArrowLeft", "ArrowRight", "Home", "End"].includes(event.key)) schedule();
  });
  input.addEventListener("blur", close);
  return { close };
}
