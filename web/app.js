// The dashboard shell: navigation, the hash router, keyboard shortcuts, the shared event
// stream and the theme. Each view is a module in views/ (see ISSUE15_PLAN.md for the
// contract: `title`, `mount(root, params, ctx) -> unmount`). A view whose module is missing
// or fails shows a box in its place; the rest of the app keeps working.
import { api } from "./lib/api.js";
import { h, clear } from "./lib/dom.js";
import { errorBox, href } from "./lib/widgets.js";

/** Every view, in nav order; `key` is its `g <key>` shortcut, `nav: false` hides it. */
export const VIEWS = [
  { name: "search", label: "Search", key: "s" },
  { name: "timeline", label: "Timeline", key: "t" },
  { name: "live", label: "Live", key: "l" },
  { name: "graph", label: "Graph", key: "r" },
  { name: "episodes", label: "Episodes", key: "e" },
  { name: "patterns", label: "Patterns", key: "p" },
  { name: "insights", label: "Insights", key: "i" },
  { name: "health", label: "Health", key: "h" },
  { name: "settings", label: "Settings", key: "," },
  { name: "memory", label: "Memory", key: "m", nav: false },
];
const BY_NAME = new Map(VIEWS.map((v) => [v.name, v]));
const DEFAULT_VIEW = "search";

// ---- theme ---------------------------------------------------------------------------

const darkQuery = window.matchMedia("(prefers-color-scheme: dark)");
const themeListeners = new Set();
function currentTheme() {
  return darkQuery.matches ? "dark" : "light";
}
darkQuery.addEventListener("change", () => {
  document.documentElement.dataset.theme = currentTheme();
  for (const fn of themeListeners) fn(currentTheme());
});
document.documentElement.dataset.theme = currentTheme();

/** A CSS variable of the current theme (charts and canvases need colours as values). */
export function cssVar(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

// ---- the shared event stream -----------------------------------------------------------

/**
 * One WebSocket to /ws shared by every view that subscribes (the session cookie
 * authenticates it). Opened at the first subscriber, closed after the last; reconnects
 * with exponential backoff (0.5 s doubling to 15 s) while anyone listens.
 */
class SharedStream {
  constructor() {
    this.listeners = new Set();
    this.socket = null;
    this.retry = 0;
    this.timer = null;
    this.state = "closed";
  }

  subscribe(fn) {
    this.listeners.add(fn);
    if (!this.socket && !this.timer) this.open();
    return () => {
      this.listeners.delete(fn);
      if (!this.listeners.size) this.close();
    };
  }

  open() {
    this.timer = null;
    const scheme = window.location.protocol === "https:" ? "wss" : "ws";
    const socket = new WebSocket(`${scheme}://${window.location.host}/ws`);
    this.socket = socket;
    this.setState("connecting");
    socket.addEventListener("open", () => {
      this.retry = 0;
      this.setState("live");
    });
    socket.addEventListener("message", (msg) => {
      let event;
      try {
        event = JSON.parse(msg.data);
      } catch {
        return;
      }
      for (const fn of this.listeners) {
        try {
          fn(event);
        } catch (err) {
          console.warn("stream listener failed", err);
        }
      }
    });
    socket.addEventListener("close", () => {
      if (this.socket !== socket) return;
      this.socket = null;
      if (!this.listeners.size) return this.setState("closed");
      const delay = Math.min(15000, 500 * 2 ** this.retry);
      this.retry += 1;
      this.setState("reconnecting");
      this.timer = setTimeout(() => this.open(), delay);
    });
  }

  close() {
    clearTimeout(this.timer);
    this.timer = null;
    const socket = this.socket;
    this.socket = null;
    if (socket) socket.close();
    this.setState("closed");
  }

  setState(state) {
    this.state = state;
    const el = document.getElementById("conn");
    if (el) {
      el.textContent = state === "closed" ? "" : state === "live" ? "● live" : `○ ${state}`;
      el.dataset.state = state;
    }
  }
}
const stream = new SharedStream();

// ---- routing ---------------------------------------------------------------------------

/** {view, params} of a hash like "#/search?q=x" (unknown views fall back to search). */
export function parseHash(hash) {
  const text = (hash || "").replace(/^#\/?/, "");
  const [path, query = ""] = text.split(/\?(.*)/s, 2);
  const view = BY_NAME.has(path) ? path : DEFAULT_VIEW;
  return { view, params: new URLSearchParams(query), known: BY_NAME.has(path) || path === "" };
}

let mounted = null; // {view, hash, unmount, root}
let available = null; // {views: {name: {js, css}}} from /views/index.json

async function loadAvailable() {
  try {
    const response = await fetch("/views/index.json", { credentials: "same-origin" });
    available = response.ok ? await response.json() : { views: {} };
  } catch {
    available = { views: {} };
  }
}
// asked at once (index.html preloads it), not after the DOM is ready: it gates the view
const availableLoaded = loadAvailable();

function ensureViewCss(name) {
  const info = available && available.views[name];
  if (!info || !info.css) return;
  const id = `view-css-${name}`;
  if (document.getElementById(id)) return;
  document.head.append(h("link", { id, rel: "stylesheet", href: `/views/${name}.css` }));
}

function makeCtx(view) {
  return {
    api,
    navigate(name, params = {}) {
      window.location.hash = href(name, params).slice(1);
    },
    setParams(params, { push = false } = {}) {
      const target = href(view, params);
      if (mounted && mounted.view === view) mounted.hash = target;
      if (push) history.pushState(null, "", target);
      else history.replaceState(null, "", target);
    },
    ws: { subscribe: (fn) => stream.subscribe(fn), get state() { return stream.state; } },
    get theme() {
      return currentTheme();
    },
    onTheme(fn) {
      themeListeners.add(fn);
      return () => themeListeners.delete(fn);
    },
    cssVar,
  };
}

function unmountCurrent() {
  if (!mounted) return;
  const { unmount } = mounted;
  mounted = null;
  if (typeof unmount === "function") {
    try {
      unmount();
    } catch (err) {
      console.warn("unmount failed", err);
    }
  }
}

function markNav(view) {
  for (const link of document.querySelectorAll("#nav-list a")) {
    if (link.dataset.view === view) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
}

async function route() {
  const hash = window.location.hash || `#/${DEFAULT_VIEW}`;
  if (mounted && mounted.hash === hash) return; // setParams already wrote this state
  const { view, params } = parseHash(hash);
  unmountCurrent();
  const main = document.getElementById("main");
  clear(main);
  const root = h("section", { class: `view view-${view}`, dataset: { view } });
  main.append(root);
  const entry = BY_NAME.get(view);
  document.title = `${entry.label} · mnemonic`;
  markNav(view);
  const token = { view, hash, unmount: null, root };
  mounted = token;
  await availableLoaded;
  const info = available.views[view];
  if (!info || !info.js) {
    root.append(
      h("h1", {}, entry.label),
      h("div", { class: "info-box" }, `The ${entry.label} view is not built yet.`),
    );
    root.dataset.ready = "true";
    return;
  }
  ensureViewCss(view);
  let module;
  try {
    module = await import(`./views/${view}.js`);
  } catch (err) {
    if (mounted !== token) return;
    root.append(errorBox(err, { title: `The ${entry.label} view failed to load` }));
    root.dataset.ready = "error";
    return;
  }
  if (mounted !== token) return; // the user moved on while it loaded
  try {
    const unmount = module.mount(root, params, makeCtx(view));
    token.unmount = unmount;
    root.dataset.ready = "true";
  } catch (err) {
    console.warn(`view ${view} failed`, err);
    clear(root);
    root.append(errorBox(err, { title: `The ${entry.label} view failed` }));
    root.dataset.ready = "error";
  }
}

// ---- keyboard ----------------------------------------------------------------------------

const SHORTCUTS = [
  ["/", "Focus the search box"],
  ["g then a letter", "Go to a view (underlined in the menu)"],
  ["1 – 9", "Go to the n-th view"],
  ["?", "This help"],
  ["Esc", "Leave a text field / close this"],
];

function typing(target) {
  if (!target || !(target instanceof Element)) return false;
  return target.closest("input, textarea, select, [contenteditable=''], [contenteditable='true']") !== null;
}

let pendingG = 0;

function focusSearch() {
  const input = document.querySelector("#main [data-search-input], #main input[type=search]");
  if (input) {
    input.focus();
    input.select();
    return;
  }
  window.location.hash = "#/search";
  const wait = setInterval(() => {
    const found = document.querySelector("#main [data-search-input], #main input[type=search]");
    if (found) {
      clearInterval(wait);
      found.focus();
    }
  }, 30);
  setTimeout(() => clearInterval(wait), 3000);
}

function onKey(event) {
  if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
  if (event.key === "Escape" && typing(event.target)) {
    event.target.blur();
    return;
  }
  if (typing(event.target)) return;
  const nav = VIEWS.filter((v) => v.nav !== false);
  if (pendingG && Date.now() - pendingG < 1500) {
    pendingG = 0;
    const target = VIEWS.find((v) => v.key === event.key);
    if (target) {
      event.preventDefault();
      window.location.hash = `#/${target.name}`;
    }
    return;
  }
  if (event.key === "g") {
    pendingG = Date.now();
    return;
  }
  if (event.key === "/") {
    event.preventDefault();
    focusSearch();
  } else if (event.key === "?") {
    event.preventDefault();
    const dialog = document.getElementById("shortcuts");
    if (!dialog.open) dialog.showModal();
  } else if (/^[1-9]$/.test(event.key) && nav[Number(event.key) - 1]) {
    event.preventDefault();
    window.location.hash = `#/${nav[Number(event.key) - 1].name}`;
  }
}

// ---- start --------------------------------------------------------------------------------

function buildNav() {
  const list = document.getElementById("nav-list");
  const nav = VIEWS.filter((v) => v.nav !== false);
  nav.forEach((v, i) => {
    const at = v.label.toLowerCase().indexOf(v.key);
    const label =
      at >= 0
        ? [v.label.slice(0, at), h("span", { class: "key" }, v.label.slice(at, at + 1)), v.label.slice(at + 1)]
        : [v.label];
    list.append(
      h(
        "li",
        {},
        h(
          "a",
          { href: `#/${v.name}`, dataset: { view: v.name }, title: `${v.label} (g ${v.key}, ${i + 1})` },
          label,
        ),
      ),
    );
  });
  const toggle = document.querySelector(".nav-toggle");
  toggle.addEventListener("click", () => {
    const open = toggle.getAttribute("aria-expanded") !== "true";
    toggle.setAttribute("aria-expanded", String(open));
    document.getElementById("nav").classList.toggle("open", open);
  });
  list.addEventListener("click", () => {
    toggle.setAttribute("aria-expanded", "false");
    document.getElementById("nav").classList.remove("open");
  });
  const help = document.getElementById("shortcuts-list");
  for (const [keys, what] of SHORTCUTS) help.append(h("dt", {}, h("kbd", {}, keys)), h("dd", {}, what));
  document.getElementById("keys-help").addEventListener("click", () => {
    document.getElementById("shortcuts").showModal();
  });
}

async function checkSession() {
  try {
    await api.get("/api/v1/dashboard/session");
  } catch (err) {
    if (err.status === 401) {
      const notice = document.getElementById("notice");
      clear(notice);
      notice.append(
        "Not logged in: run ",
        h("code", {}, "mnemonic open"),
        " in a terminal to open the dashboard with a fresh session.",
      );
      notice.hidden = false;
    }
  }
}

function start() {
  buildNav();
  document.addEventListener("keydown", onKey);
  window.addEventListener("hashchange", route);
  window.addEventListener("popstate", route);
  route();
  checkSession();
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
else start();
