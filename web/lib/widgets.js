// Building blocks every view shares: links to memories, relative times, badges, the explain
// bars, error boxes and the filter form. Text always goes in as text nodes (dom.js `h`).
import { h } from "./dom.js";

/** "#/view?k=v" for a view and a params object (empty values left out). */
export function href(view, params = {}) {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params || {})) {
    if (value === undefined || value === null || value === "") continue;
    if (Array.isArray(value)) value.forEach((v) => query.append(key, String(v)));
    else query.set(key, String(value));
  }
  const text = query.toString();
  return `#/${view}${text ? `?${text}` : ""}`;
}

/** The first line of a memory (summary, else content), cut to `max` characters. */
export function memoryTitle(memory, max = 120) {
  const text = String((memory && (memory.summary || memory.content)) || "(empty)").trim();
  const line = text.split("\n", 1)[0];
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** A link to a memory's page; `text` defaults to its title. */
export function memoryLink(memory, text) {
  const id = typeof memory === "string" ? memory : memory && memory.id;
  const label = text !== undefined ? text : typeof memory === "string" ? memory : memoryTitle(memory);
  return h("a", { class: "memory-link", href: href("memory", { id }), dataset: { memoryId: id || "" } }, label);
}

const UNITS = [
  ["year", 365 * 24 * 3600],
  ["month", 30 * 24 * 3600],
  ["week", 7 * 24 * 3600],
  ["day", 24 * 3600],
  ["hour", 3600],
  ["minute", 60],
  ["second", 1],
];
const relative = new Intl.RelativeTimeFormat("en", { numeric: "auto" });

/** "3 minutes ago" as a <time> with the exact local time as its tooltip. */
export function timeAgo(iso, now = Date.now()) {
  if (!iso) return h("span", { class: "muted" }, "–");
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return h("span", {}, String(iso));
  const seconds = (date.getTime() - now) / 1000;
  let text = "just now";
  for (const [unit, size] of UNITS) {
    if (Math.abs(seconds) >= size || unit === "second") {
      if (Math.abs(seconds) < 5) break;
      text = relative.format(Math.round(seconds / size), unit);
      break;
    }
  }
  return h("time", { datetime: String(iso), title: date.toLocaleString() }, text);
}

/** A small label; kind picks the colour (type, source, state, ok, warn, bad, info). */
export function badge(text, kind = "") {
  const safeKind = String(kind).replace(/[^a-z0-9_-]/gi, "");
  return h("span", { class: `badge${safeKind ? ` badge-${safeKind}` : ""}` }, String(text));
}

/** Human names of the ranking signals (`explain.contributions` keys). */
export const SIGNAL_LABELS = {
  direct: "direct match",
  spread: "spreading activation",
  fts: "full text",
  vector: "vector",
  recency: "recency",
  salience: "salience",
  significance: "significance",
  utility: "utility",
  pattern: "pattern lift",
};

/**
 * One bar per signal of a result's explain breakdown, largest first. `contributions` is
 * {signal: value}; negative values draw to the left in the "negative" colour.
 */
export function bars(contributions, { extra = {} } = {}) {
  const entries = Object.entries({ ...(contributions || {}), ...extra }).filter(
    ([, v]) => typeof v === "number" && Number.isFinite(v),
  );
  if (!entries.length) return h("p", { class: "muted" }, "No breakdown.");
  entries.sort((a, b) => Math.abs(b[1]) - Math.abs(a[1]));
  const max = Math.max(1e-9, ...entries.map(([, v]) => Math.abs(v)));
  return h(
    "ul",
    { class: "bars", "aria-label": "Score breakdown" },
    entries.map(([name, value]) => {
      const fill = h("span", { class: `bar-fill${value < 0 ? " bar-negative" : ""}` });
      fill.style.width = `${((Math.abs(value) / max) * 100).toFixed(1)}%`;
      return h(
        "li",
        { class: "bar", dataset: { signal: name } },
        h("span", { class: "bar-label", title: name }, SIGNAL_LABELS[name] || name),
        h("span", { class: "bar-track" }, fill),
        h("span", { class: "bar-value" }, value.toFixed(3)),
      );
    }),
  );
}

/** The message of an API error or exception, as text. */
export function errorMessage(err) {
  if (!err) return "Unknown error";
  const body = err.body;
  if (body && Array.isArray(body.details) && body.details.length) {
    return body.details.map((d) => `${d.field}: ${d.message}`).join("; ");
  }
  if (body && typeof body.error === "string") return body.error;
  return err.message || String(err);
}

/** A visible error box; a 401 says how to log in again. */
export function errorBox(err, { title = "Something went wrong" } = {}) {
  if (err && err.status === 401) {
    return h(
      "div",
      { class: "error-box", role: "alert" },
      h("strong", {}, "Not logged in"),
      h("p", {}, "This browser has no session (or the token was rotated). Run ", h("code", {}, "mnemonic open"), " to get a new login link."),
    );
  }
  return h(
    "div",
    { class: "error-box", role: "alert" },
    h("strong", {}, title),
    h("p", {}, errorMessage(err)),
  );
}

function toLocalInput(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return "";
  const pad = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

function fromLocalInput(value) {
  if (!value) return "";
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? "" : d.toISOString();
}

/**
 * A filter form. fields: [{name, label, type: "text"|"search"|"select"|"datetime"|"number",
 * options?: [value | [value, label]], placeholder?, multiple?}]. `params` is a
 * URLSearchParams (or object) with the current values; `onChange(values)` gets an object
 * of the non-empty values (datetimes as ISO strings) on submit and when a select changes.
 */
export function filtersForm(fields, params, onChange, { submitLabel = "Apply" } = {}) {
  const get = (name) => (params instanceof URLSearchParams ? params.get(name) : params && params[name]) || "";
  const controls = {};
  const form = h("form", { class: "filters", role: "search" });
  for (const field of fields) {
    const id = `f-${field.name}-${Math.random().toString(36).slice(2, 7)}`;
    let control;
    if (field.type === "select") {
      control = h(
        "select",
        { id, name: field.name },
        h("option", { value: "" }, field.any || "any"),
        (field.options || []).map((opt) => {
          const [value, label] = Array.isArray(opt) ? opt : [opt, opt];
          return h("option", { value: String(value) }, String(label));
        }),
      );
      control.value = get(field.name);
      control.addEventListener("change", () => submit());
    } else if (field.type === "datetime") {
      control = h("input", { id, name: field.name, type: "datetime-local" });
      control.value = toLocalInput(get(field.name));
    } else {
      control = h("input", {
        id,
        name: field.name,
        type: field.type || "text",
        placeholder: field.placeholder || "",
        autocomplete: "off",
        spellcheck: field.type === "search" ? "false" : undefined,
        dataset: field.type === "search" ? { searchInput: "" } : undefined,
      });
      control.value = get(field.name);
    }
    controls[field.name] = { control, field };
    form.append(
      h("label", { class: `field field-${field.type || "text"}`, for: id }, h("span", { class: "field-label" }, field.label || field.name), control),
    );
  }
  form.append(h("button", { type: "submit", class: "primary" }, submitLabel));
  function values() {
    const out = {};
    for (const [name, { control, field }] of Object.entries(controls)) {
      const value = field.type === "datetime" ? fromLocalInput(control.value) : control.value.trim();
      if (value) out[name] = value;
    }
    return out;
  }
  function submit() {
    onChange(values());
  }
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    submit();
  });
  form.values = values;
  return form;
}

/** A button that runs `action` once at a time and shows it is busy. */
export function actionButton(label, action, attrs = {}) {
  const button = h("button", { type: "button", ...attrs }, label);
  button.addEventListener("click", async () => {
    if (button.disabled) return;
    button.disabled = true;
    button.setAttribute("aria-busy", "true");
    try {
      await action(button);
    } finally {
      button.disabled = false;
      button.removeAttribute("aria-busy");
    }
  });
  return button;
}
