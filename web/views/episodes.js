// Episodes (#/episodes?project=&state=&id=): stretches of work per project, newest first,
// with a cursor for more; the selected episode shows its summary, files, commands and its
// memories in time order, each a link to its memory page. State lives in the URL.
import { h } from "../lib/dom.js";
import {
  badge,
  errorBox,
  isAbort,
  memoryLink,
  projectOptions,
  replace,
  select,
  statusLine,
  when,
} from "../lib/memory-kit.js";

export const title = "Episodes";

const PAGE = 50;

export function mount(root, params, ctx) {
  const state = {
    project: params.get("project") || "",
    state: params.get("state") || "",
    id: params.get("id") || "",
  };
  let listAbort = null;
  let detailAbort = null;
  let cursor = null;

  root.classList.add("view-episodes");
  const status = statusLine();
  const filters = h("div", { class: "ep-filters" });
  const list = h("ol", { class: "ep-list", "aria-label": "Episodes" });
  const more = h("button", { type: "button", class: "ep-more", hidden: true }, "Load more");
  const detail = h("article", { class: "ep-detail", "aria-live": "polite", tabindex: "-1" });
  root.append(
    h("h2", {}, "Episodes"),
    filters,
    status,
    h("div", { class: "ep-layout" }, h("div", { class: "ep-list-wrap" }, list, more), detail),
  );

  function pushParams() {
    const out = {};
    for (const key of ["project", "state", "id"]) if (state[key]) out[key] = state[key];
    ctx.setParams(out);
  }

  function renderFilters(projects) {
    replace(
      filters,
      select("project", "Project", projects, state.project, (v) => {
        state.project = v;
        pushParams();
        loadList(false);
      }),
      select("state", "State", ["open", "closed"], state.state, (v) => {
        state.state = v;
        pushParams();
        loadList(false);
      }),
    );
  }

  function card(e) {
    const item = h(
      "li",
      { class: `ep-card${e.id === state.id ? " selected" : ""}`, dataset: { id: e.id } },
      h(
        "a",
        {
          href: `#/episodes?${new URLSearchParams({ ...(state.project ? { project: state.project } : {}), id: e.id })}`,
          class: "ep-open",
          onclick: (event) => {
            event.preventDefault();
            selectEpisode(e.id);
          },
        },
        e.title || "(untitled episode)",
      ),
      h(
        "div",
        { class: "ep-card-meta" },
        e.project ? badge(e.project, "project") : null,
        badge(e.state, e.state === "open" ? "ok" : ""),
        h("span", {}, `${e.memory_count} memories`),
        when(e.started_at),
      ),
    );
    return item;
  }

  async function loadList(append) {
    if (listAbort) listAbort.abort();
    listAbort = new AbortController();
    if (!append) cursor = null;
    const query = { limit: PAGE, project: state.project, state: state.state, cursor: append ? cursor : undefined };
    status.set("Loading…");
    try {
      const page = await ctx.api.get("/api/v1/episodes", query, { signal: listAbort.signal });
      if (!append) replace(list);
      for (const e of page.items) list.append(card(e));
      cursor = page.next_cursor;
      more.hidden = !cursor;
      status.set(list.children.length ? "" : "No episodes match.");
    } catch (err) {
      if (isAbort(err)) return;
      status.set("");
      replace(list, h("li", {}, errorBox(err)));
    }
  }

  function selectEpisode(id) {
    state.id = id;
    pushParams();
    for (const item of list.children) item.classList.toggle("selected", item.dataset.id === id);
    loadDetail();
  }

  async function loadDetail() {
    if (detailAbort) detailAbort.abort();
    if (!state.id) {
      replace(detail, h("p", { class: "muted" }, "Select an episode to see its memories."));
      return;
    }
    detailAbort = new AbortController();
    try {
      const body = await ctx.api.get(`/api/v1/episodes/${encodeURIComponent(state.id)}`, {}, { signal: detailAbort.signal });
      renderDetail(body);
    } catch (err) {
      if (isAbort(err)) return;
      replace(detail, errorBox(err));
    }
  }

  function renderDetail({ episode: e, memories, truncated }) {
    const chips = (items, cls) =>
      items.length ? h("ul", { class: `ep-chips ${cls}` }, items.map((x) => h("li", {}, h("code", {}, x)))) : null;
    replace(
      detail,
      h("h3", { class: "ep-title" }, e.title || "(untitled episode)"),
      h(
        "div",
        { class: "ep-card-meta" },
        e.project ? badge(e.project, "project") : null,
        badge(e.state, e.state === "open" ? "ok" : ""),
        h("span", {}, "described by ", e.described_by),
        when(e.started_at),
        " – ",
        when(e.ended_at),
      ),
      e.summary ? h("p", { class: "ep-summary" }, e.summary) : null,
      e.concepts.length ? h("p", { class: "ep-concepts" }, "Concepts: ", e.concepts.join(", ")) : null,
      chips(e.files, "ep-files"),
      chips(e.commands, "ep-commands"),
      h("h4", {}, `Memories (${e.memory_count})`),
      h(
        "ol",
        { class: "ep-memories" },
        memories.map((m) =>
          h("li", {}, when(m.timestamp), " ", badge(m.type, "type"), " ", memoryLink(m), m.state !== "active" ? [" ", badge(m.state, "warn")] : null),
        ),
      ),
      truncated ? h("p", { class: "muted" }, `Showing the first ${memories.length}.`) : null,
      h("a", { href: `#/timeline?${new URLSearchParams(timelineRange(e))}` }, "Show on the timeline"),
    );
  }

  more.addEventListener("click", () => loadList(true));

  projectOptions(ctx.api)
    .then(renderFilters)
    .catch(() => renderFilters([]));
  loadList(false);
  loadDetail();
  return () => {
    if (listAbort) listAbort.abort();
    if (detailAbort) detailAbort.abort();
  };
}

function timelineRange(e) {
  const start = new Date(e.started_at).getTime();
  const end = new Date(e.ended_at).getTime();
  const pad = Math.max((end - start) * 0.25, 60_000);
  const out = { since: new Date(start - pad).toISOString(), until: new Date(end + pad).toISOString() };
  if (e.project) out.project = e.project;
  return out;
}
