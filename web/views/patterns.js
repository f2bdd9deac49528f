// Patterns & abstractions: what the abstraction agent found recurring across memories
// (patterns), and what it built on them (principles, axioms). A list filtered by level,
// state and project; the selected one shows its description, its evidence (the memories it
// rests on) or its children, and a dismiss button ("this is not a theme": never re-created
// from the same cluster). All state lives in the URL: level, state, project, id.
import { h, clear } from "../lib/dom.js";
import { ago, chips, kv, memoryRef, meter, pill, statusLine, table } from "../lib/health-kit.js";
import { listDetail } from "../lib/listdetail.js";
import { href } from "../lib/widgets.js";

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
  const status = statusLine();
  const count = h("span", { class: "muted pat-count" });
  root.classList.add("view-patterns");

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
    const level = state.level !== "pattern" ? state.level : "";
    return href("patterns", { level, state: state.state !== "active" ? state.state : "", project: state.project, id });
  }

  const pane = listDetail(ctx, {
    prefix: "pat",
    label: "Abstractions",
    state,
    status,
    pushParams,
    hrefFor,
    fetchPage: (cursor, signal) => {
      const [path, query] = listRequest(state, cursor);
      return ctx.api.get(path, query, { signal });
    },
    card,
    empty: "No abstractions match. The abstraction agent runs on its schedule; Health has a run-now button.",
    onPage: (page) => {
      count.textContent = `${pane.list.querySelectorAll(".pat-card").length}${page.next_cursor ? "+" : ""} shown`;
    },
    detailPath: (id) => `/api/v1/abstractions/${encodeURIComponent(id)}`,
    renderDetail,
    noSelection: "Select one to see its evidence.",
    notFound: "No such abstraction.",
  });
  const { select } = pane;

  function card(a) {
    return h(
      "li",
      { class: `pat-card${a.id === state.id ? " selected" : ""}`, dataset: { id: a.id, state: a.state } },
      h("div", { class: "pat-card-head" }, pane.link(a.id, a.title || "(untitled)", "pat-title"), pill(a.level, "info"), pill(a.state, stateKind(a.state))),
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
          if (!pane.alive()) return;
          status.ok(`Dismissed "${a.title}".`);
          await Promise.all([pane.loadDetail(), pane.loadList()]);
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

  function renderDetail(d, detail) {
    const a = d.abstraction;
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
    pane.loadList();
  }
  levelSel.addEventListener("change", apply);
  stateSel.addEventListener("change", apply);

  root.append(h("header", { class: "view-head" }, h("h1", {}, "Patterns & abstractions"), form), status.el, pane.layout);
  pane.loadList();
  pane.loadDetail();
  return pane.stop;
}
