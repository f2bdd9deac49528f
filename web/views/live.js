// Live: the daemon's event stream (/ws) as it happens, filtered by type and project on the
// server, with pause, reconnect with backoff, and the count of events the daemon dropped
// because this page fell behind. The list keeps the newest MAX_ROWS rows, and a paused
// page keeps at most MAX_PAUSED events, so a tab left open all day stays small.
import { h, clear } from "../lib/dom.js";
import { badge, errorBox, filtersForm, memoryLink, timeAgo } from "../lib/widgets.js";

export const title = "Live";

export const EVENT_TYPES = [
  "raw_memory_created",
  "memory_encoded",
  "memory_reinforced",
  "memory_encoding_failed",
  "memory_amended",
  "memory_state_changed",
  "memory_purged",
  "association_created",
  "episode_closed",
  "consolidation_completed",
  "dream_completed",
  "pattern_discovered",
  "abstraction_created",
  "meta_observation",
  "query_executed",
  "feedback_received",
  "watcher_event",
  "watcher_event_dropped",
  "agent_error",
];
export const MAX_ROWS = 300;
export const MAX_PAUSED = 1000;
const KIND = {
  agent_error: "bad",
  memory_encoding_failed: "bad",
  watcher_event_dropped: "warn",
  memory_purged: "warn",
  raw_memory_created: "info",
  memory_encoded: "ok",
};

/** Backoff before reconnect attempt n (0-based): 0.5 s doubling, at most 15 s. */
export function backoffMs(attempt) {
  return Math.min(15000, 500 * 2 ** Math.max(0, attempt));
}

/** One line of text for an event's payload: the content or summary when it has one. */
export function describe(event) {
  const p = event.payload || {};
  const text = p.content || p.summary || p.title || p.description || p.error || p.message || p.query || "";
  if (text) return String(text);
  const parts = [];
  for (const [key, value] of Object.entries(p)) {
    if (key.endsWith("_id") || key === "project" || value === null || typeof value === "object") continue;
    parts.push(`${key}: ${value}`);
    if (parts.length >= 5) break;
  }
  return parts.join(" · ");
}

export function mount(root, params, ctx) {
  const types = (params.get("types") || "").split(",").filter((t) => EVENT_TYPES.includes(t));
  const project = params.get("project") || "";
  let paused = params.get("paused") === "1";
  let socket = null;
  let attempt = 0;
  let timer = null;
  let closed = false;
  let dropped = 0;
  let received = 0;
  const held = [];
  let heldLost = 0;

  const state = h("span", { class: "live-state", role: "status", "aria-live": "polite" });
  const counters = h("span", { class: "live-counters muted" });
  const pauseButton = h("button", { type: "button", class: "live-pause", "aria-pressed": String(paused) }, paused ? "Resume" : "Pause");
  const clearButton = h("button", { type: "button", class: "live-clear" }, "Clear");
  const typeBoxes = EVENT_TYPES.map((t) =>
    h("label", { class: "live-type" }, h("input", { type: "checkbox", value: t, checked: types.includes(t) || undefined }), t.replaceAll("_", " ")),
  );
  const typePicker = h(
    "details",
    { class: "live-types" },
    h("summary", {}, types.length ? `Types: ${types.length} chosen` : "Types: all"),
    h("div", { class: "live-type-grid" }, typeBoxes),
    h("button", { type: "button", class: "primary live-apply" }, "Apply types"),
  );
  const form = filtersForm([{ name: "project", label: "Project", type: "text", placeholder: "any" }], params, (values) => {
    apply({ project: values.project || "" });
  });
  const list = h("ol", { class: "events", "aria-label": "Events, newest first" });
  const empty = h("p", { class: "events-empty muted" }, "Waiting for events… (write a memory, run a query, or let a watcher see something)");
  root.append(
    h("header", { class: "live-head" }, h("h1", {}, "Live"), state, counters, pauseButton, clearButton),
    h("div", { class: "live-filters" }, form, typePicker),
    empty,
    list,
  );

  function apply(change) {
    const next = {
      types: change.types !== undefined ? change.types.join(",") : types.join(","),
      project: change.project !== undefined ? change.project : project,
      paused: paused ? "1" : "",
    };
    // a new filter means a new socket: navigate so the view mounts afresh
    ctx.navigate("live", next);
  }
  typePicker.querySelector(".live-apply").addEventListener("click", () => {
    apply({ types: typeBoxes.map((l) => l.querySelector("input")).filter((i) => i.checked).map((i) => i.value) });
  });

  function showCounters() {
    const parts = [`${received} received`, `${dropped} dropped by the daemon`];
    if (paused) parts.push(`${held.length} held while paused`);
    if (heldLost) parts.push(`${heldLost} discarded while paused`);
    counters.textContent = parts.join(" · ");
    root.dataset.dropped = String(dropped);
    root.dataset.received = String(received);
  }

  function setState(text, kind) {
    state.textContent = text;
    state.dataset.kind = kind;
    root.dataset.socket = kind;
  }

  function row(event) {
    const p = event.payload || {};
    const memoryId = p.memory_id || (typeof p.memory === "string" ? p.memory : null);
    return h(
      "li",
      { class: "event", dataset: { type: event.type } },
      h("span", { class: "event-time" }, timeAgo(event.at)),
      badge(event.type.replaceAll("_", " "), KIND[event.type] || ""),
      h("span", { class: "event-project", title: p.project || "" }, p.project || ""),
      h("span", { class: "event-text" }, describe(event)),
      memoryId ? memoryLink(memoryId, "open") : h("span"),
    );
  }

  function show(event) {
    empty.hidden = true;
    list.prepend(row(event));
    while (list.childElementCount > MAX_ROWS) list.lastElementChild.remove();
  }

  function onMessage(msg) {
    let event;
    try {
      event = JSON.parse(msg.data);
    } catch {
      return;
    }
    if (event.type === "ping") return;
    if (event.type === "dropped") {
      dropped += Number(event.count) || 0;
      showCounters();
      return;
    }
    if (event.type === "error") {
      setState(`refused: ${event.error}`, "error");
      // a bad filter would only be refused again; "too many clients" may clear up
      if (/unknown/.test(String(event.error))) closed = true;
      return;
    }
    received += 1;
    if (paused) {
      held.push(event);
      if (held.length > MAX_PAUSED) {
        held.shift();
        heldLost += 1;
      }
    } else {
      show(event);
    }
    showCounters();
  }

  function connect() {
    timer = null;
    if (closed) return;
    const query = new URLSearchParams();
    if (types.length) query.set("types", types.join(","));
    if (project) query.set("project", project);
    const qs = query.toString();
    const ws = new WebSocket(`ws://${window.location.host}/ws${qs ? `?${qs}` : ""}`);
    socket = ws;
    setState(attempt ? `reconnecting (attempt ${attempt + 1})…` : "connecting…", "connecting");
    ws.addEventListener("open", () => {
      attempt = 0;
      setState(paused ? "paused" : "live", paused ? "paused" : "live");
    });
    ws.addEventListener("message", onMessage);
    ws.addEventListener("close", async () => {
      if (socket !== ws || closed) return;
      socket = null;
      const delay = backoffMs(attempt);
      attempt += 1;
      setState(`disconnected; retrying in ${(delay / 1000).toFixed(1)} s`, "reconnecting");
      if (attempt === 3) checkSession();
      timer = setTimeout(connect, delay);
    });
  }

  async function checkSession() {
    try {
      await ctx.api.get("/api/v1/dashboard/session");
    } catch (err) {
      if (err.status === 401 && !closed) {
        closed = true;
        clearTimeout(timer);
        setState("not logged in", "error");
        root.insertBefore(errorBox(err), list);
      }
    }
  }

  pauseButton.addEventListener("click", () => {
    paused = !paused;
    pauseButton.textContent = paused ? "Resume" : "Pause";
    pauseButton.setAttribute("aria-pressed", String(paused));
    if (!paused) {
      for (const event of held.splice(0)) show(event);
      heldLost = 0;
    }
    if (socket && socket.readyState === WebSocket.OPEN) setState(paused ? "paused" : "live", paused ? "paused" : "live");
    ctx.setParams({ types: types.join(","), project, paused: paused ? "1" : "" });
    showCounters();
  });
  clearButton.addEventListener("click", () => {
    clear(list);
    held.length = 0;
    empty.hidden = false;
  });

  showCounters();
  connect();
  return () => {
    closed = true;
    clearTimeout(timer);
    if (socket) socket.close();
    socket = null;
  };
}
