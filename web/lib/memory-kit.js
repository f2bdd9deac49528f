// Small building blocks shared by the Memory, Timeline, Graph and Episodes views: links to
// a memory or an episode, times, badges, error boxes, an inline "are you sure?" and the
// filter selects. Everything goes through `h` (text nodes only): memory text, project
// names and concepts are hostile input and never become HTML.
import { h, clear } from "./dom.js";

export const MEMORY_TYPES = ["decision", "error", "insight", "learning", "general", "handoff"];
export const SOURCES = ["api", "mcp", "cli", "user", "terminal", "filesystem", "clipboard", "git", "ingest", "dreaming"];
export const RELATIONS = ["similar", "caused_by", "part_of", "contradicts", "temporal", "reinforces", "supersedes", "related"];

export function memoryHref(id) {
  return `#/memory?${new URLSearchParams({ id })}`;
}

export function episodeHref(id) {
  return `#/episodes?${new URLSearchParams({ id })}`;
}

/** A link to a memory labelled with its summary (or id), as text. */
export function memoryLink(memory, label) {
  const text = label || memory.summary || memory.id;
  return h("a", { href: memoryHref(memory.id), class: "mk-memory-link", dataset: { memoryId: memory.id } }, text);
}

export function episodeLink(episode) {
  return h(
    "a",
    { href: episodeHref(episode.id), class: "mk-episode-link", dataset: { episodeId: episode.id } },
    episode.title || episode.id,
  );
}

/** A local date and time with the ISO text as the tooltip. */
export function when(iso) {
  if (!iso) return h("span", { class: "muted" }, "–");
  const d = new Date(iso);
  const text = Number.isNaN(d.getTime()) ? String(iso) : d.toLocaleString();
  return h("time", { datetime: String(iso), title: String(iso) }, text);
}

export function badge(text, kind = "") {
  return h("span", { class: `mk-badge${kind ? ` mk-badge-${kind}` : ""}` }, String(text));
}

/** The message of an API error: the server's `error` and each field it names. */
export function errorText(err) {
  if (!err) return "";
  const body = err.body || {};
  const parts = [body.error || body.detail || err.message || String(err)];
  for (const d of body.details || []) parts.push(`${d.field}: ${d.message}`);
  if (err.status) parts.unshift(`HTTP ${err.status}`);
  return parts.join(" — ");
}

export function errorBox(err) {
  return h("div", { class: "mk-error", role: "alert" }, errorText(err));
}

/** A status line views put messages in ("Saved.", errors); `set(text, kind)`. */
export function statusLine() {
  const el = h("p", { class: "mk-status", role: "status", "aria-live": "polite" });
  el.set = (text, kind = "") => {
    el.className = `mk-status${kind ? ` mk-status-${kind}` : ""}`;
    el.textContent = text || "";
  };
  return el;
}

/**
 * A button that asks before acting: the first click shows "<question> Confirm / Cancel"
 * beside it; Confirm runs `action` (async) and shows its error, if any, in `status`.
 */
export function confirmButton(label, question, action, status, { danger = false } = {}) {
  const wrap = h("span", { class: "mk-confirm" });
  const button = h("button", { type: "button", class: danger ? "mk-danger" : "" }, label);
  const ask = h("span", { class: "mk-confirm-ask", hidden: true });
  const yes = h("button", { type: "button", class: danger ? "mk-danger" : "" }, "Confirm");
  const no = h("button", { type: "button" }, "Cancel");
  append3(ask, h("span", {}, question), yes, no);
  button.addEventListener("click", () => {
    ask.hidden = false;
    button.hidden = true;
    yes.focus();
  });
  no.addEventListener("click", () => {
    ask.hidden = true;
    button.hidden = false;
    button.focus();
  });
  yes.addEventListener("click", async () => {
    yes.disabled = true;
    try {
      await action();
    } catch (err) {
      status.set(errorText(err), "error");
    } finally {
      yes.disabled = false;
      ask.hidden = true;
      button.hidden = false;
    }
  });
  wrap.append(button, ask);
  return wrap;
}

function append3(el, ...children) {
  for (const c of children) el.append(c);
}

/** A labelled <select>; `options` are values or [value, label] pairs; "" means any. */
export function select(name, label, options, value, onChange) {
  const el = h(
    "select",
    { name, "aria-label": label },
    h("option", { value: "" }, `${label}: any`),
    options.map((o) => {
      const [v, text] = Array.isArray(o) ? o : [o, o];
      return h("option", { value: v }, text);
    }),
  );
  el.value = value || "";
  if (el.value !== (value || "")) {
    // a value not in the list (a project from a shared URL): keep it selectable
    el.append(h("option", { value }, value));
    el.value = value;
  }
  el.addEventListener("change", () => onChange(el.value));
  return h("label", { class: "mk-field" }, h("span", {}, label), el);
}

/** The project names for a filter select ("" project shows as "(none)"). */
export async function projectOptions(api, signal) {
  const body = await api.get("/api/v1/projects", {}, { signal });
  return (body.items || []).filter((p) => p.name).map((p) => p.name);
}

/** Replace the children of `el` with `children`. */
export function replace(el, ...children) {
  clear(el);
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) el.append(c);
  return el;
}

export function isAbort(err) {
  return err && err.name === "AbortError";
}
