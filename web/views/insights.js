// Insights: what dreaming noticed across episodes (terms that keep coming up together),
// newest first, optionally one project's. The selected insight shows its full text and
// the memories it came from. State in the URL: project, id.
import { h } from "../lib/dom.js";
import { ago, chips, kv, memoryRef, meter, pill, statusLine, table } from "../lib/health-kit.js";
import { listDetail } from "../lib/listdetail.js";
import { href } from "../lib/widgets.js";

export const title = "Insights";

const PAGE = 50;

export function mount(root, params, ctx) {
  const state = { project: params.get("project") || "", id: params.get("id") || "" };
  const status = statusLine();
  const pushParams = () => ctx.setParams({ project: state.project, id: state.id });
  root.classList.add("view-insights");

  const pane = listDetail(ctx, {
    prefix: "ins",
    label: "Insights",
    state,
    status,
    pushParams,
    hrefFor: (id) => href("insights", { project: state.project, id }),
    fetchPage: (cursor, signal) => ctx.api.get("/api/v1/insights", { project: state.project, limit: PAGE, cursor }, { signal }),
    card,
    empty: "No insights yet. Dreaming writes them when terms recur across episodes.",
    detailPath: (id) => `/api/v1/insights/${encodeURIComponent(id)}`,
    renderDetail,
    noSelection: "Select an insight to see the memories it came from.",
    notFound: "No such insight.",
  });

  function card(i) {
    return h(
      "li",
      { class: `ins-card${i.id === state.id ? " selected" : ""}`, dataset: { id: i.id } },
      h("div", { class: "ins-card-head" }, pane.link(i.id, i.summary || i.content || i.id, "ins-title"), i.state !== "active" ? pill(i.state, "muted") : null),
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

  function renderDetail(d, detail) {
    const i = d.insight;
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
        pane.loadList();
      },
    },
    projectIn,
    h("button", { type: "submit" }, "Filter"),
  );

  root.append(h("header", { class: "view-head" }, h("h1", {}, "Insights"), form), status.el, pane.layout);
  pane.loadList();
  pane.loadDetail();
  return pane.stop;
}
