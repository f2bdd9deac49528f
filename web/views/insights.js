// Insights: what dreaming noticed across episodes (terms that keep coming up together),
// newest first, optionally one project's. The selected insight shows its full text and
// the memories it came from. State in the URL: project, id.
import { h, clear } from "../lib/dom.js";
import { ago, chips, errorText, kv, memoryRef, meter, pill, statusLine, table } from "../lib/health-kit.js";

export const title = "Insights";

const PAGE = 50;

export function mount(root, params, ctx) {
  const state = { project: params.get("project") || "", id: params.get("id") || "" };
  let alive = true;
  let listAbort = null;
  let detailAbort = null;

  root.classList.add("view-insights");
  const status = statusLine();
  const list = h("ol", { class: "ins-list", "aria-label": "Insights" });
  const more = h("button", { type: "button", class: "ins-more", hidden: true }, "Load more");
  const detail = h("aside", { class: "ins-detail", "aria-live": "polite", tabindex: "-1" });

  function pushParams() {
    const out = {};
    if (state.project) out.project = state.project;
    if (state.id) out.id = state.id;
    ctx.setParams(out);
  }

  function hrefFor(id) {
    const q = new URLSearchParams();
    if (state.project) q.set("project", state.project);
    q.set("id", id);
    return `#/insights?${q}`;
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

  function card(i) {
    return h(
      "li",
      { class: `ins-card${i.id === state.id ? " selected" : ""}`, dataset: { id: i.id } },
      h(
        "div",
        { class: "ins-card-head" },
        h(
          "a",
          {
            href: hrefFor(i.id),
            class: "ins-title",
            onclick: (event) => {
              if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) return;
              event.preventDefault();
              select(i.id);
            },
          },
          i.summary || i.content || i.id,
        ),
        i.state !== "active" ? pill(i.state, "muted") : null,
      ),
      chips(i.terms, "ins-terms"),
      h(
        "div",
        { class: "ins-meta" },
        h("span", {}, `${i.episodes} episodes`),
        h("span", {}, `${i.source_count} sources`),
        i.project ? h("span", { class: "ins-project" }, i.project) : h("span", {}, "across projects"),
        ago(i.timestamp),
      ),
    );
  }

  async function loadList(append = false, cursor = undefined) {
    if (listAbort) listAbort.abort();
    listAbort = new AbortController();
    if (!append) clear(list);
    list.setAttribute("aria-busy", "true");
    try {
      const page = await ctx.api.get("/api/v1/insights", { project: state.project, limit: PAGE, cursor }, { signal: listAbort.signal });
      if (!alive) return;
      for (const i of page.items) list.append(card(i));
      if (!list.children.length) list.append(h("li", { class: "muted ins-empty" }, "No insights yet. Dreaming writes them when terms recur across episodes."));
      more.hidden = !page.next_cursor;
      more.onclick = () => loadList(true, page.next_cursor);
    } catch (err) {
      if (err.name !== "AbortError" && alive) status.error(err);
    } finally {
      list.removeAttribute("aria-busy");
    }
  }

  async function loadDetail() {
    if (detailAbort) detailAbort.abort();
    clear(detail);
    if (!state.id) {
      detail.append(h("p", { class: "muted" }, "Select an insight to see the memories it came from."));
      return;
    }
    detailAbort = new AbortController();
    detail.setAttribute("aria-busy", "true");
    try {
      const d = await ctx.api.get(`/api/v1/insights/${encodeURIComponent(state.id)}`, undefined, { signal: detailAbort.signal });
      if (!alive) return;
      const i = d.insight;
      clear(detail);
      detail.append(
        h("h2", { class: "ins-detail-title" }, i.summary || i.id),
        h("p", { class: "ins-content" }, i.content),
        chips(i.terms, "ins-terms"),
        kv([
          ["Concepts", chips(i.concepts) || "–"],
          ["Episodes", String(i.episodes)],
          ["Salience", meter(i.salience)],
          ["Described by", i.described_by],
          ["Project", i.project || "across projects"],
          ["Written", ago(i.timestamp)],
          ["Memory", memoryRef(i.id, "open as a memory")],
        ]),
        h("h3", {}, `Sources (${d.sources.length})`),
        table(
          [
            { label: "Memory", cell: (s) => memoryRef(s.id, s.summary || s.id) },
            { label: "Type", class: "nowrap", cell: (s) => s.type },
            { label: "Project", cell: (s) => s.project || "–" },
            { label: "State", class: "nowrap", cell: (s) => pill(s.state, s.state === "active" ? "ok" : "muted") },
            { label: "When", class: "nowrap", cell: (s) => ago(s.timestamp) },
          ],
          d.sources,
          { empty: "Its sources are gone (forgotten or purged)." },
        ),
      );
    } catch (err) {
      if (err.name === "AbortError" || !alive) return;
      clear(detail);
      detail.append(h("p", { class: "kit-status kit-bad" }, err.status === 404 ? "No such insight." : errorText(err)));
    } finally {
      detail.removeAttribute("aria-busy");
    }
  }

  const projectIn = h("input", { name: "project", type: "search", placeholder: "project", value: state.project, "aria-label": "Project" });
  const form = h(
    "form",
    {
      class: "kit-filters",
      role: "search",
      onsubmit: (event) => {
        event.preventDefault();
        state.project = projectIn.value.trim();
        pushParams();
        loadList();
      },
    },
    projectIn,
    h("button", { type: "submit" }, "Filter"),
  );

  root.append(
    h("header", { class: "view-head" }, h("h1", {}, "Insights"), form),
    status.el,
    h("div", { class: "ins-layout" }, h("div", { class: "ins-main" }, list, more), detail),
  );
  loadList();
  loadDetail();

  return () => {
    alive = false;
    if (listAbort) listAbort.abort();
    if (detailAbort) detailAbort.abort();
  };
}
