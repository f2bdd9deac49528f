// Search: a query with filters, each result with its score, the explain breakdown as bars,
// the spreading-activation path that reached it, and feedback buttons. The whole state
// (query and filters) lives in the URL, so a search can be shared or bookmarked.
import { h, clear } from "../lib/dom.js";
import { badge, bars, errorBox, filtersForm, memoryLink, memoryTitle, timeAgo, href } from "../lib/widgets.js";

export const title = "Search";

const TYPES = ["decision", "error", "insight", "learning", "general", "handoff"];
const SOURCES = ["api", "mcp", "terminal", "filesystem", "clipboard", "git", "user", "ingest", "cli", "dreaming"];
const STATES = ["active", "fading", "archived", "merged"];
const FILTERS = ["project", "source", "type", "state", "since", "until", "as_of"];
const QUALITIES = [
  ["helpful", "Helpful"],
  ["partial", "Partly"],
  ["irrelevant", "Irrelevant"],
];
const LIMIT = 20;

/** The /query body for the URL's params (empty ones left out). */
export function queryBody(params) {
  const body = { query: params.get("q") || "", limit: LIMIT, explain: true };
  for (const name of FILTERS) {
    const value = params.get(name);
    if (!value) continue;
    body[name] = ["source", "type", "state"].includes(name) ? value.split(",") : value;
  }
  return body;
}

export function mount(root, params, ctx) {
  const controller = { aborted: false, inflight: null, paths: null };
  const status = h("p", { class: "search-status muted", role: "status", "aria-live": "polite" });
  const list = h("ol", { class: "results", "aria-label": "Results" });
  const fields = [
    { name: "q", label: "Query", type: "search", placeholder: "What do you want to recall?  ( / )" },
    { name: "project", label: "Project", type: "select", options: [] },
    { name: "source", label: "Source", type: "select", options: SOURCES },
    { name: "type", label: "Type", type: "select", options: TYPES },
    { name: "state", label: "State", type: "select", options: STATES },
    { name: "since", label: "Since", type: "datetime" },
    { name: "until", label: "Until", type: "datetime" },
    { name: "as_of", label: "As of", type: "datetime" },
  ];
  const form = filtersForm(fields, params, (values) => {
    ctx.setParams(values, { push: true });
    run(new URLSearchParams(values));
  }, { submitLabel: "Search" });
  root.append(h("h1", { class: "visually-hidden" }, "Search"), form, status, list);
  // /projects counts every memory (close to a second at 100k) and shares the database with
  // recall: the list loads when the select is first used, or a moment after the results
  const projectSelect = form.querySelector("select[name=project]");
  const current = params.get("project");
  if (current) {
    projectSelect.append(h("option", { value: current }, current));
    projectSelect.value = current;
  }
  let projectsLoaded = false;
  const loadProjects = () => {
    if (projectsLoaded || controller.aborted) return;
    projectsLoaded = true;
    fillProjects(projectSelect, ctx);
  };
  projectSelect.addEventListener("focus", loadProjects);
  projectSelect.addEventListener("pointerdown", loadProjects);
  const projectTimer = setTimeout(loadProjects, 1500);

  async function run(current) {
    clear(list);
    const body = queryBody(current);
    if (!body.query.trim()) {
      status.textContent = "Type a query and press Enter.";
      return;
    }
    if (controller.inflight) controller.inflight.abort();
    if (controller.paths) controller.paths.abort();
    const abort = new AbortController();
    controller.inflight = abort;
    status.textContent = "Searching…";
    root.dataset.state = "searching";
    const started = performance.now();
    let answer;
    try {
      answer = await ctx.api.post("/api/v1/query", body, { signal: abort.signal });
    } catch (err) {
      if (abort.signal.aborted || controller.aborted) return;
      status.textContent = "";
      list.append(h("li", {}, errorBox(err, { title: "Search failed" })));
      root.dataset.state = "error";
      return;
    }
    if (controller.aborted || controller.inflight !== abort) return;
    const roundTrip = performance.now() - started;
    render(answer, roundTrip, body);
  }

  function render(answer, roundTrip, body) {
    const results = answer.results || [];
    status.textContent = `${results.length} result${results.length === 1 ? "" : "s"} · ${answer.took_ms.toFixed(1)} ms in the daemon, ${roundTrip.toFixed(0)} ms round trip`;
    root.dataset.roundtripMs = roundTrip.toFixed(1);
    root.dataset.queryId = answer.query_id;
    if (!results.length) list.append(h("li", { class: "muted" }, "Nothing matched."));
    const byId = new Map(results.map((r) => [r.memory.id, r]));
    for (const [index, result] of results.entries()) {
      list.append(resultCard(result, index, answer.query_id, byId, ctx, body.query));
    }
    root.dataset.state = "done";
    // a path costs one request: traced after the results are shown, for the open
    // explanations (the first three) and for the others when they are opened
    const paths = new AbortController();
    controller.paths = paths;
    for (const li of list.querySelectorAll("li[data-spread='true']")) {
      const details = li.querySelector("details.explain");
      const trace = () => loadPath(li, byId, ctx, paths.signal);
      if (details.open) trace();
      else details.addEventListener("toggle", trace, { once: true });
    }
  }

  run(params);
  return () => {
    controller.aborted = true;
    clearTimeout(projectTimer);
    if (controller.inflight) controller.inflight.abort();
    if (controller.paths) controller.paths.abort();
  };
}

async function fillProjects(select, ctx) {
  try {
    const answer = await ctx.api.get("/api/v1/projects");
    const chosen = select.value;
    const have = new Map([...select.options].map((o) => [o.value, o]));
    for (const row of answer.items || []) {
      if (!row.name) continue;
      const label = `${row.name} (${row.memories})`;
      if (have.has(row.name)) have.get(row.name).textContent = label;
      else select.append(h("option", { value: row.name }, label));
    }
    select.value = chosen;
  } catch {
    // the filter still works by URL; the list is a convenience
  }
}

function resultCard(result, index, queryId, byId, ctx, query) {
  const memory = result.memory;
  const explain = result.explain || {};
  const contributions = { ...(explain.contributions || {}) };
  const spread = contributions.spread || 0;
  const feedback = feedbackButtons(queryId, memory.id, ctx);
  const pattern = explain.pattern
    ? h(
        "p",
        { class: "pattern-lift" },
        "Lifted by pattern ",
        h("a", { href: href("patterns", { id: explain.pattern.id }) }, explain.pattern.title || explain.pattern.id),
        ` (+${Number(explain.pattern.lift || 0).toFixed(3)})`,
      )
    : null;
  const supersession = [];
  if ((explain.superseded_by || []).length) {
    supersession.push(h("p", { class: "supersession" }, "Superseded by ", explain.superseded_by.map((id) => memoryLink(byId.get(id) ? byId.get(id).memory : id))));
  }
  if ((explain.supersedes || []).length) {
    supersession.push(h("p", { class: "supersession" }, "Supersedes ", explain.supersedes.map((id) => memoryLink(byId.get(id) ? byId.get(id).memory : id))));
  }
  return h(
    "li",
    { class: "result card", dataset: { memoryId: memory.id, spread: String(spread > 0) } },
    h(
      "header",
      { class: "result-head" },
      h("span", { class: "result-rank" }, `${index + 1}.`),
      h("h2", { class: "result-title" }, memoryLink(memory, memoryTitle(memory))),
      h("span", { class: "result-score", title: "Calibrated score (0–1)" }, result.score.toFixed(3)),
    ),
    h(
      "p",
      { class: "result-meta" },
      badge(memory.type, "type"),
      " ",
      badge(memory.source, "source"),
      " ",
      memory.project ? h("a", { class: "badge badge-project", href: href("search", { q: query, project: memory.project }), title: memory.project }, memory.project) : null,
      " ",
      memory.state !== "active" ? badge(memory.state, "warn") : null,
      explain.archived_fallback ? badge("archived fallback", "warn") : null,
      " ",
      timeAgo(memory.timestamp),
    ),
    h("p", { class: "result-content" }, memory.content),
    memory.concepts && memory.concepts.length
      ? h("ul", { class: "concepts", "aria-label": "Concepts" }, memory.concepts.map((c) => h("li", {}, c)))
      : null,
    h(
      "details",
      { class: "explain", open: index < 3 ? true : undefined },
      h("summary", {}, "Why this result"),
      bars(contributions),
      h(
        "p",
        { class: "explain-signals muted" },
        `direct ${fmt(explain.direct)} · spread ${fmt(explain.spread)} · full-text rank ${explain.fts_rank ?? "–"} · vector rank ${explain.vector_rank ?? "–"} · cosine ${fmt(explain.cosine)} · × ${fmt(explain.multiplier)}`,
      ),
      pattern,
      supersession,
      spread > 0 ? h("div", { class: "path", "aria-live": "polite" }, h("span", { class: "muted" }, "Tracing the activation path…")) : null,
    ),
    feedback,
  );
}

function fmt(value) {
  return typeof value === "number" ? value.toFixed(3) : "–";
}

/** Which links brought activation here: edges to results found directly (the seeds). */
async function loadPath(li, byId, ctx, signal) {
  const id = li.dataset.memoryId;
  const box = li.querySelector(".path");
  if (!box || signal.aborted) return;
  let answer;
  try {
    answer = await ctx.api.get("/api/v1/associations", { memory_id: id, limit: 100 }, { signal });
  } catch (err) {
    if (!signal.aborted) box.replaceChildren(errorBox(err, { title: "Path unavailable" }));
    return;
  }
  if (signal.aborted) return;
  const hops = [];
  for (const edge of answer.items || []) {
    const other = edge.source === id ? edge.target : edge.source;
    const seed = byId.get(other);
    const direct = seed && seed.explain ? seed.explain.direct || 0 : 0;
    hops.push({ edge, other, seed, direct });
  }
  hops.sort((a, b) => b.direct * b.edge.strength - a.direct * a.edge.strength || b.edge.strength - a.edge.strength);
  const shown = hops.filter((hop) => hop.direct > 0).slice(0, 3);
  if (!shown.length) shown.push(...hops.slice(0, 3));
  if (!shown.length) {
    box.replaceChildren(h("p", { class: "muted" }, "Reached by spreading activation (no stored link left to show)."));
    return;
  }
  box.replaceChildren(
    h("p", { class: "path-title" }, "Spreading activation reached it through:"),
    h(
      "ol",
      { class: "path-hops" },
      shown.map(({ edge, other, seed, direct }) =>
        h(
          "li",
          { class: "hop", dataset: { from: other } },
          seed ? memoryLink(seed.memory, memoryTitle(seed.memory, 60)) : memoryLink(other),
          direct > 0 ? h("span", { class: "muted" }, ` (direct ${direct.toFixed(2)})`) : null,
          h("span", { class: "hop-edge" }, ` —${edge.relation} ${edge.strength.toFixed(2)}→ `),
          h("span", { class: "muted" }, "this"),
        ),
      ),
    ),
  );
}

function feedbackButtons(queryId, memoryId, ctx) {
  const note = h("span", { class: "feedback-note muted", role: "status", "aria-live": "polite" });
  const group = h("div", { class: "feedback", role: "group", "aria-label": "Was this result useful?" });
  const buttons = QUALITIES.map(([quality, label]) => {
    const button = h("button", { type: "button", class: `fb fb-${quality}`, dataset: { quality }, "aria-pressed": "false" }, label);
    button.addEventListener("click", async () => {
      for (const b of buttons) b.disabled = true;
      note.textContent = "Sending…";
      try {
        await ctx.api.post("/api/v1/feedback", { query_id: queryId, quality, memory_ids: [memoryId] });
        for (const b of buttons) b.setAttribute("aria-pressed", String(b === button));
        note.textContent = "Thanks: recall learns from this.";
        group.dataset.sent = quality;
      } catch (err) {
        note.textContent = err.status === 404 ? "This search is too old to rate; search again." : `Not sent: ${err.message}`;
      } finally {
        for (const b of buttons) b.disabled = false;
      }
    });
    return button;
  });
  group.append(...buttons, note);
  return group;
}
