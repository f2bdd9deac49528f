// Small building blocks shared by the Patterns, Insights, Health and Settings views:
// tables, key/value lists, meters, chips and number formats. Everything goes through
// `h` (text nodes only); nothing here reads or writes HTML strings.
import { h } from "./dom.js";
import { badge, errorMessage, memoryLink, timeAgo } from "./widgets.js";

/** 1234567 -> "1.2 MB" (binary units, one decimal). */
export function fmtBytes(n) {
  if (typeof n !== "number" || !Number.isFinite(n)) return "–";
  const units = ["B", "KB", "MB", "GB", "TB"];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${unit === 0 ? value : value.toFixed(1)} ${units[unit]}`;
}

/** Integers with thousands separators; other numbers with at most `digits` decimals. */
export function fmtNum(n, digits = 2) {
  if (n === null || n === undefined) return "–";
  if (typeof n !== "number" || !Number.isFinite(n)) return String(n);
  if (Number.isInteger(n)) return n.toLocaleString("en-US");
  return n.toLocaleString("en-US", { maximumFractionDigits: digits });
}

export function fmtUsd(n) {
  if (typeof n !== "number") return "–";
  return `$${n < 1 ? n.toFixed(4) : n.toFixed(2)}`;
}

/** "2.5 s", "340 ms", "3 min", "2.1 h" */
export function fmtSeconds(s) {
  if (typeof s !== "number" || !Number.isFinite(s)) return "–";
  if (s < 1) return `${Math.round(s * 1000)} ms`;
  if (s < 120) return `${s.toFixed(1)} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  return `${(s / 3600).toFixed(1)} h`;
}

/** A local date and time for an ISO string, with the ISO text as the tooltip. */
export function when(iso) {
  if (!iso) return h("span", { class: "muted" }, "–");
  const d = new Date(iso);
  const text = Number.isNaN(d.getTime()) ? String(iso) : d.toLocaleString();
  return h("time", { datetime: String(iso), title: String(iso) }, text);
}

/**
 * A table: columns = [{label, cell: (row) => node|string, class?}], rows = array.
 * `empty` is shown in one cell when there are no rows.
 */
export function table(columns, rows, { empty = "Nothing yet.", rowAttrs } = {}) {
  const head = h("thead", {}, h("tr", {}, columns.map((c) => h("th", { scope: "col", class: c.class }, c.label))));
  const body = h("tbody");
  if (!rows.length) {
    body.append(h("tr", {}, h("td", { colspan: String(columns.length), class: "muted" }, empty)));
  }
  for (const row of rows) {
    const attrs = rowAttrs ? rowAttrs(row) : {};
    body.append(h("tr", attrs, columns.map((c) => h("td", { class: c.class }, c.cell(row)))));
  }
  return h("table", { class: "kit-table" }, head, body);
}

/** A definition list from [label, value] pairs (null values are skipped). */
export function kv(pairs) {
  const dl = h("dl", { class: "kit-kv" });
  for (const [label, value] of pairs) {
    if (value === null || value === undefined) continue;
    dl.append(h("dt", {}, label), h("dd", {}, value));
  }
  return dl;
}

/** A horizontal bar for a share in [0, 1] with its value as text. */
export function meter(value, label) {
  const share = Math.max(0, Math.min(1, Number(value) || 0));
  const fill = h("span", { class: "kit-meter-fill" });
  fill.style.width = `${(share * 100).toFixed(1)}%`;
  return h(
    "span",
    { class: "kit-meter", title: label || share.toFixed(2), role: "meter", "aria-valuemin": "0", "aria-valuemax": "1", "aria-valuenow": share.toFixed(3) },
    h("span", { class: "kit-meter-track" }, fill),
    h("span", { class: "kit-meter-value" }, share.toFixed(2)),
  );
}

/** Bars for a {name: count} map, longest first (filter drops by reason, ...). */
export function countBars(counts, { empty = "None." } = {}) {
  const entries = Object.entries(counts || {}).sort((a, b) => b[1] - a[1]);
  if (!entries.length) return h("p", { class: "muted" }, empty);
  const max = Math.max(1, ...entries.map(([, n]) => n));
  return h(
    "ul",
    { class: "kit-bars" },
    entries.map(([name, n]) => {
      const fill = h("span", { class: "kit-bar-fill" });
      fill.style.width = `${((n / max) * 100).toFixed(1)}%`;
      return h(
        "li",
        { dataset: { key: name } },
        h("span", { class: "kit-bar-label" }, name),
        h("span", { class: "kit-bar-track" }, fill),
        h("span", { class: "kit-bar-value" }, fmtNum(n)),
      );
    }),
  );
}

/** Concepts / terms as chips. */
export function chips(words, kind = "") {
  const list = (words || []).filter((w) => typeof w === "string" && w);
  if (!list.length) return null;
  return h("ul", { class: `kit-chips ${kind}`.trim() }, list.map((w) => h("li", { class: "kit-chip" }, w)));
}

/** A small state label (the shell's badge): kind is ok | warn | bad | info | muted. */
export function pill(text, kind = "muted") {
  return badge(text, kind === "muted" ? "" : kind);
}

/** A section with a heading, optional actions on the right, and content. */
export function panel(title, { id, actions } = {}, ...children) {
  return h(
    "section",
    { class: "kit-panel", id, "aria-labelledby": id ? `${id}-title` : undefined },
    h("header", { class: "kit-panel-head" }, h("h2", { id: id ? `${id}-title` : undefined }, title), actions || null),
    ...children,
  );
}

/** An error as text (never as markup): the server's message, or the exception's. */
export function errorText(err) {
  return err ? errorMessage(err) : "";
}

/** A polite live region for "saved", "dismissed", errors. */
export function statusLine() {
  const el = h("p", { class: "kit-status", role: "status", "aria-live": "polite" });
  return {
    el,
    ok(text) {
      el.className = "kit-status kit-ok";
      el.textContent = text;
    },
    error(err) {
      el.className = "kit-status kit-bad";
      el.textContent = typeof err === "string" ? err : errorText(err);
    },
    clear() {
      el.className = "kit-status";
      el.textContent = "";
    },
  };
}

/** "3 minutes ago" / "in 2 hours" (the shell's timeAgo). */
export const ago = (iso) => timeAgo(iso);

/** A link to a memory's page, labelled with its summary (text) or its id. */
export function memoryRef(id, label) {
  return memoryLink(id, label || id);
}
