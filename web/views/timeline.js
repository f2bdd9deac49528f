// Timeline (#/timeline?since=&until=&project=&source=&type=): memories and episodes over
// time. The server counts memories per bucket (GET /api/v1/timeline), so the chart is one
// small answer at 100k memories; the memories of the shown range come a page at a time
// (GET /api/v1/memories with the same filters). Zoom by dragging across the bars, clicking
// a bar, or the buttons; every state change goes into the URL.
import { h } from "../lib/dom.js";
import {
  MEMORY_TYPES,
  SOURCES,
  badge,
  episodeLink,
  errorBox,
  isAbort,
  memoryLink,
  projectOptions,
  replace,
  select,
  statusLine,
  when,
} from "../lib/memory-kit.js";
import { timelineChart } from "../lib/timeline-chart.js";

export const title = "Timeline";

const PAGE = 50;
const BUCKETS = 120;
const STATES = "active,fading"; // what the chart counts, so the list below matches it

export function mount(root, params, ctx) {
  const state = {};
  for (const key of ["since", "until", "project", "source", "type"]) state[key] = params.get(key) || "";
  let abort = null;
  let listAbort = null;
  let cursor = null;
  let shown = null; // the range the server answered with

  root.classList.add("view-timeline");
  const status = statusLine();
  const filters = h("div", { class: "tl-filters" });
  const range = h("div", { class: "tl-range" });
  const chart = h("div", { class: "tl-chart-wrap", "aria-busy": "true" });
  const episodes = h("ul", { class: "tl-episode-list" });
  const memories = h("ol", { class: "tl-memories", "aria-label": "Memories in range" });
  const more = h("button", { type: "button", class: "tl-more", hidden: true }, "Load more");
  root.append(
    h("h2", {}, "Timeline"),
    filters,
    range,
    status,
    chart,
    h(
      "div",
      { class: "tl-lists" },
      h("section", { "aria-label": "Memories" }, h("h3", {}, "Memories"), memories, more),
      h("section", { "aria-label": "Episodes" }, h("h3", {}, "Episodes"), episodes),
    ),
  );

  function pushParams() {
    const out = {};
    for (const [k, v] of Object.entries(state)) if (v) out[k] = v;
    ctx.setParams(out);
  }

  function setFilter(key) {
    return (value) => {
      state[key] = value;
      pushParams();
      load();
    };
  }

  function zoom(since, until) {
    state.since = since.toISOString();
    state.until = until.toISOString();
    pushParams();
    load();
  }

  function zoomOut() {
    if (!shown) return;
    const a = new Date(shown.since).getTime();
    const b = new Date(shown.until).getTime();
    const pad = Math.max((b - a) / 2, 60_000);
    zoom(new Date(a - pad), new Date(b + pad));
  }

  function pan(direction) {
    if (!shown) return;
    const a = new Date(shown.since).getTime();
    const b = new Date(shown.until).getTime();
    const step = ((b - a) / 2) * direction;
    zoom(new Date(a + step), new Date(b + step));
  }

  function renderFilters(projects) {
    replace(
      filters,
      select("project", "Project", projects, state.project, setFilter("project")),
      select("source", "Source", SOURCES, state.source, setFilter("source")),
      select("type", "Type", MEMORY_TYPES, state.type, setFilter("type")),
    );
  }

  function renderRange(data) {
    const button = (label, fn, cls) => h("button", { type: "button", class: cls, onclick: fn }, label);
    replace(
      range,
      h("span", { class: "tl-range-text" }, when(data.since), " – ", when(data.until), ` · ${data.total} memories`),
      button("◀ Earlier", () => pan(-1), "tl-earlier"),
      button("Later ▶", () => pan(1), "tl-later"),
      button("Zoom out", zoomOut, "tl-zoom-out"),
      state.since || state.until
        ? button("Whole range", () => {
            state.since = "";
            state.until = "";
            pushParams();
            load();
          }, "tl-reset")
        : null,
    );
  }

  function query() {
    return {
      project: state.project,
      source: state.source,
      type: state.type,
    };
  }

  async function load() {
    if (abort) abort.abort();
    abort = new AbortController();
    chart.setAttribute("aria-busy", "true");
    status.set("Loading…");
    try {
      const data = await ctx.api.get(
        "/api/v1/timeline",
        { ...query(), since: state.since, until: state.until, buckets: BUCKETS, state: STATES },
        { signal: abort.signal },
      );
      shown = data;
      status.set(data.total ? "" : "No memories in this range.");
      renderRange(data);
      replace(
        chart,
        timelineChart(data, {
          onZoom: zoom,
          onEpisode: (id) => ctx.navigate("episodes", { id }),
        }),
      );
      chart.setAttribute("aria-busy", "false");
      replace(
        episodes,
        data.episodes.length
          ? data.episodes.map((e) =>
              h("li", {}, episodeLink(e), " ", e.project ? badge(e.project, "project") : null, " ", h("span", { class: "muted" }, `${e.memory_count} memories, `, when(e.started_at))),
            )
          : h("li", { class: "muted" }, "No episodes in this range."),
        data.episodes_truncated ? h("li", { class: "muted" }, "More episodes: zoom in to see them.") : null,
      );
      loadMemories(false);
    } catch (err) {
      if (isAbort(err)) return;
      status.set("");
      replace(chart, errorBox(err));
    }
  }

  async function loadMemories(append) {
    if (listAbort) listAbort.abort();
    listAbort = new AbortController();
    if (!append) cursor = null;
    try {
      const page = await ctx.api.get(
        "/api/v1/memories",
        {
          ...query(),
          since: shown.since,
          until: shown.until,
          state: STATES,
          limit: PAGE,
          cursor: append ? cursor : undefined,
        },
        { signal: listAbort.signal },
      );
      if (!append) replace(memories);
      for (const m of page.items) {
        memories.append(
          h("li", {}, when(m.timestamp), " ", badge(m.type, "type"), " ", m.project ? badge(m.project, "project") : null, " ", memoryLink(m)),
        );
      }
      if (!memories.children.length) memories.append(h("li", { class: "muted" }, "No memories in this range."));
      cursor = page.next_cursor;
      more.hidden = !cursor;
    } catch (err) {
      if (isAbort(err)) return;
      replace(memories, h("li", {}, errorBox(err)));
    }
  }

  more.addEventListener("click", () => loadMemories(true));
  projectOptions(ctx.api)
    .then(renderFilters)
    .catch(() => renderFilters([]));
  load();
  return () => {
    if (abort) abort.abort();
    if (listAbort) listAbort.abort();
  };
}
