// Patterns & abstractions: what the abstraction agent found recurring across memories
// (patterns), and what it built on them (principles, axioms). A list filtered by level,
// state and project; the selected one shows its description, its evidence (the memories it
// rests on) or its children, and a dismiss button ("this is not a theme": never re-created
// from the same cluster). All state lives in the URL: level, state, project, id.
import { h, clear } from "../lib/dom.js";
import { ago, chips, errorText, kv, memoryRef, meter, pill, statusLine, table } from "../lib/health-kit.js";

export const title = "Patterns";

const LEVELS = ["pattern", "principle", "axiom", "all"];
const STATES = ["active", "demoted", "archived", "dismissed", "merged", "all"];
const PAGE = 50;

function stateKind(state) {
  return { active: "ok", demoted: "warn", dismissed: "bad", merged: "info" }[state] || "muted";
}

/** The request for one page of the list the params describe. */
export function listRequest(params, cursor) {
  const level = params.level || "pattern";
  const state = params.state || "active";
  const query = { limit: PAGE, cursor };
  if (state !== "all") query.state = state;
  if (params.project) query.project = params.project;
  if (level === "pattern") {
    if (params.min_strength) query.min_strength = params.min_strength;
    return ["/api/v1/patterns", query];
  }
  if (level !== "all") query.level = level;
  return ["/api/v1/abstractions", query];
}

function dismissPath(abstraction) {
  const id = encodeURIComponent(abstraction.id);
  return abstraction.level === "pattern" ? `/api/v1/patterns/${id}/dismiss` : `/api/v1/abstractions/${id}/dismiss`;
}

export function mount(root, params, ctx) {
  const state = {
    level: LEVELS.includes(params.get("level")) ? params.get("level") : "pattern",
    state: STATES.includes(params.get("state")) ? params.get("state") : "active",
    project: params.get("project") || "",
    min_strength: params.get("min_strength") || "",
    id: params.get("id") || "",
  };
  let alive = true;
  let listAbort = null;
  let detailAbort = null;

  root.classList.add("view-patterns");
  const status = statusLine();
  const list = h("ol", { class: "pat-list", "aria-label": "Abstractions" });
  const more = h("button", { type: "button", class: "pat-more", hidden: true }, "Load more");
  const count = h("span", { class: "muted pat-count" });
  const detail = h("aside", { class: "pat-detail", "aria-live": "polite", tabindex: "-1" });

  function pushParams() {
    const out = {};
    if (state.level !== "pattern") out.level = state.level;
    if (state.state !== "active") out.state = state.state;
    if (state.project) out.project = state.project;
    if (state.min_strength && state.level === "pattern") out.min_strength = state.min_strength;
    if (state.id) out.id = state.id;
    ctx.setParams(out);
  }

  function hrefFor(id) {
    const q = new URLSearchParams();
    if (state.level !== "pattern") q.set("level", state.level);
    if (state.state !== "active") q.set("state", state.state);
    if (state.project) q.set("project", state.project);
    q.set("id", id);
    return `#/patterns?${q}`;
  }

  function select(id) {
    state.id = id;
    pushParams();
    for (const item of list.children) item.classList.toggle("selected", item.dataset.id === id);
    loadDetail().then(() => {
      // keyboard users land on what they opened; in a narrow window it is below the list
      if (!alive) return;
      const narrow = window.matchMedia("(max-width: 800px)").matches;
      detail.focus({ preventScroll: !narrow });
      if (narrow) detail.scrollIntoView({ block: "start" });
    });
  }

  function card(a) {
    const link = h(
      "a",
      {
        href: hrefFor(a.id),
        class: "pat-title",
        onclick: (event) => {
          if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) return;
          event.preventDefault();
          select(a.id);
        },
      },
      a.title || "(untitled)",
    );
    return h(
      "li",
      { class: `pat-card${a.id === state.id ? " selected" : ""}`, dataset: { id: a.id, state: a.state } },
      h("div", { class: "pat-card-head" }, link, pill(a.level, "info"), pill(a.state, stateKind(a.state))),
      h("p", { class: "pat-desc" }, a.description || ""),
      h(
        "div",
        { class: "pat-meta" },
        h("span", { class: "pat-strength" }, "strength ", meter(a.strength)),
        h("span", {}, `${a.evidence_count} ${a.level === "pattern" ? "memories" : "children"}`),
        a.project ? h("span", { class: "pat-project" }, a.project) : null,
        h("span", {}, "seen ", ago(a.last_seen_at)),
      ),
      chips(a.concepts),
    );
  }

  async function loadList(append = false, cursor = undefined) {
    if (listAbort) listAbort.abort();
    listAbort = new AbortController();
    if (!append) {
      clear(list);
      list.setAttribute("aria-busy", "true");
    }
    try {
      const [path, query] = listRequest(state, cursor);
      const page = await ctx.api.get(path, query, { signal: listAbort.signal });
      if (!alive) return;
      for (const a of page.items) list.append(card(a));
      if (!list.children.length) list.append(h("li", { class: "muted pat-empty" }, "No abstractions match. The abstraction agent runs on its schedule; Health has a run-now button."));
      more.hidden = !page.next_cursor;
      more.onclick = () => loadList(true, page.next_cursor);
      count.textContent = `${list.querySelectorAll(".pat-card").length}${page.next_cursor ? "+" : ""} shown`;
    } catch (err) {
      if (err.name !== "AbortError" && alive) status.error(err);
    } finally {
      list.removeAttribute("aria-busy");
    }
  }

  function evidenceTable(items) {
    return table(
      [
        { label: "Memory", cell: (e) => memoryRef(e.id, e.summary || e.id) },
        { label: "State", class: "nowrap", cell: (e) => pill(e.state, e.state === "active" ? "ok" : "muted") },
        { label: "Weight", cell: (e) => meter(e.weight) },
        { label: "When", class: "nowrap", cell: (e) => ago(e.timestamp) },
      ],
      items,
      { empty: "No evidence memories." },
    );
  }

  function childList(children) {
    if (!children.length) return null;
    return h(
      "ul",
      { class: "pat-children" },
      children.map((c) =>
        h(
          "li",
          {},
          h("a", { href: hrefFor(c.id), onclick: (e) => { e.preventDefault(); select(c.id); } }, c.title || c.id),
          " ",
          pill(c.level, "info"),
          " ",
          pill(c.state, stateKind(c.state)),
        ),
      ),
    );
  }

  function dismissControls(a) {
    if (a.state === "dismissed") return h("p", { class: "muted" }, "Dismissed: it will not be re-created from the same memories.");
    const box = h("div", { class: "pat-actions" });
    const ask = h("button", { type: "button", class: "danger pat-dismiss" }, "Dismiss…");
    ask.addEventListener("click", () => {
      clear(box);
      const yes = h("button", { type: "button", class: "danger pat-dismiss-confirm" }, "Dismiss: not a theme");
      const no = h("button", { type: "button", class: "pat-dismiss-cancel" }, "Cancel");
      yes.addEventListener("click", async () => {
        yes.disabled = true;
        try {
          await ctx.api.post(dismissPath(a));
          if (!alive) return;
          status.ok(`Dismissed "${a.title}".`);
          await Promise.all([loadDetail(), loadList()]);
        } catch (err) {
          yes.disabled = false;
          status.error(err);
        }
      });
      no.addEventListener("click", () => {
        clear(box);
        box.append(ask);
        ask.focus();
      });
      box.append(h("span", {}, "Never show this theme again? "), yes, " ", no);
      yes.focus();
    });
    box.append(ask);
    return box;
  }

  async function loadDetail() {
    if (detailAbort) detailAbort.abort();
    clear(detail);
    if (!state.id) {
      detail.append(h("p", { class: "muted" }, "Select one to see its evidence."));
      return;
    }
    detailAbort = new AbortController();
    detail.setAttribute("aria-busy", "true");
    try {
      const d = await ctx.api.get(`/api/v1/abstractions/${encodeURIComponent(state.id)}`, undefined, { signal: detailAbort.signal });
      if (!alive) return;
      const a = d.abstraction;
      clear(detail);
      detail.append(
        h("h2", { class: "pat-detail-title" }, a.title || "(untitled)"),
        h("div", { class: "pat-badges" }, pill(a.level, "info"), pill(a.state, stateKind(a.state)), pill(`described by ${a.described_by}`, "muted")),
        h("p", { class: "pat-detail-desc" }, a.description || ""),
        chips(a.concepts),
        kv([
          ["Strength", meter(a.strength)],
          ["Confidence", meter(a.confidence)],
          ["Grounding", meter(a.grounding, "share of its evidence still live")],
          ["Project", a.project || "all projects"],
          ["Created", ago(a.created_at)],
          ["Last evidence", ago(a.last_seen_at)],
          ["Merged into", a.merged_into ? h("a", { href: hrefFor(a.merged_into), onclick: (e) => { e.preventDefault(); select(a.merged_into); } }, a.merged_into) : null],
        ]),
        dismissControls(a),
      );
      if (a.level === "pattern" || d.evidence.length) {
        detail.append(h("h3", {}, `Evidence (${a.evidence_count})`), evidenceTable(d.evidence));
        if (d.truncated) detail.append(h("p", { class: "muted" }, `Showing the newest ${d.evidence.length}.`));
      }
      if (d.children.length) detail.append(h("h3", {}, `Built on (${d.children.length})`), childList(d.children));
    } catch (err) {
      if (err.name === "AbortError" || !alive) return;
      clear(detail);
      detail.append(h("p", { class: "kit-status kit-bad" }, err.status === 404 ? "No such abstraction." : errorText(err)));
    } finally {
      detail.removeAttribute("aria-busy");
    }
  }

  // ---- filters ---------------------------------------------------------------------------
  const levelSel = h("select", { name: "level", "aria-label": "Level" }, LEVELS.map((l) => h("option", { value: l, selected: l === state.level }, l === "all" ? "all levels" : `${l}s`)));
  const stateSel = h("select", { name: "state", "aria-label": "State" }, STATES.map((s) => h("option", { value: s, selected: s === state.state }, s === "all" ? "any state" : s)));
  const projectIn = h("input", { name: "project", type: "search", placeholder: "project", value: state.project, "aria-label": "Project" });
  const form = h(
    "form",
    {
      class: "kit-filters pat-filters",
      role: "search",
      onsubmit: (event) => {
        event.preventDefault();
        apply();
      },
    },
    levelSel,
    stateSel,
    projectIn,
    h("button", { type: "submit" }, "Filter"),
    count,
  );
  function apply() {
    state.level = levelSel.value;
    state.state = stateSel.value;
    state.project = projectIn.value.trim();
    pushParams();
    loadList();
  }
  levelSel.addEventListener("change", apply);
  stateSel.addEventListener("change", apply);

  root.append(
    h("header", { class: "view-head" }, h("h1", {}, "Patterns & abstractions"), form),
    status.el,
    h("div", { class: "pat-layout" }, h("div", { class: "pat-main" }, list, more), detail),
  );
  loadList();
  loadDetail();

  return () => {
    alive = false;
    if (listAbort) listAbort.abort();
    if (detailAbort) detailAbort.abort();
  };
}
