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
  const controller = { aborted: false, inflight: null };
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
    run(new URLSearchParams(values)); // first: the request leaves before the history entry
    ctx.setParams(values, { push: true });
  }, { submitLabel: "Search" });
  root.append(h("h1", { class: "visually-hidden" }, "Search"), form, status, list);
  // /projects counts every memory (close to a second at 100k) and shares the database and
  // the cores with recall: the list loads when the select is first used, or once searching
  // pauses (a moment after the latest results), never under a search
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
  let projectTimer = 0;
  const loadProjectsLater = () => {
    clearTimeout(projectTimer);
    if (!projectsLoaded) projectTimer = setTimeout(loadProjects, 1500);
  };

  async function run(current) {
    const body = queryBody(current);
    if (controller.inflight) controller.inflight.abort();
    controller.inflight = null;
    if (!body.query.trim()) {
      clear(list);
      status.textContent = "Type a query and press Enter.";
      loadProjectsLater();
      return;
    }
    const abort = new AbortController();
    controller.inflight = abort;
    clearTimeout(projectTimer);
    const started = performance.now();
    // the request goes out first; the old results are cleared while it is answered
    const request = ctx.api.post("/api/v1/query", body, { signal: abort.signal });
    clear(list);
    status.textContent = "Searching…";
    root.dataset.state = "searching";
    let answer;
    try {
      answer = await request;
    } catch (err) {
      if (abort.signal.aborted || controller.aborted) return;
      status.textContent = "";
      list.append(h("li", {}, errorBox(err, { title: "Search failed" })));
      root.dataset.state = "error";
      loadProjectsLater();
      return;
    }
    if (controller.aborted || controller.inflight !== abort) return;
    const roundTrip = performance.now() - started;
    render(answer, roundTrip, body);
  }

  function render(answer, roundTrip, body) {
    const results = answer.results || [];
    // the query's evidence: the best candidate's score, 0 when nothing real matched
    status.textContent = `${results.length} result${results.length === 1 ? "" : "s"} · evidence ${answer.evidence.toFixed(3)} · ${answer.took_ms.toFixed(1)} ms in the daemon, ${roundTrip.toFixed(0)} ms round trip`;
    root.dataset.roundtripMs = roundTrip.toFixed(1);
    root.dataset.queryId = answer.query_id;
    if (!results.length) list.append(h("li", { class: "muted" }, "Nothing matched."));
    const byId = new Map(results.map((r) => [r.memory.id, r]));
    const cards = document.createDocumentFragment();
    for (const [index, result] of results.entries()) {
      cards.append(resultCard(result, index, answer.query_id, byId, ctx, body.query));
    }
    list.append(cards);
    root.dataset.state = "done";
    loadProjectsLater();
  }

  run(params);
  return () => {
    controller.aborted = true;
    clearTimeout(projectTimer);
    if (controller.inflight) controller.inflight.abort();
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
  const spread = (explain.contributions || {}).spread || 0;
  const feedback = feedbackButtons(queryId, memory.id, ctx);
  // the first three explanations are open; the others are built when first opened (they
  // are most of a card's nodes, and the round trip to drawn results is measured)
  const details = h("details", { class: "explain", open: index < 3 ? true : undefined }, h("summary", {}, "Why this result"));
  if (index < 3) details.append(...explainBody(result, byId));
  else details.addEventListener("toggle", () => details.append(...explainBody(result, byId)), { once: true });
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
    details,
    feedback,
  );
}

/** What "Why this result" holds: the contribution bars, the raw signals, a pattern's lift,
 * supersession and the activation path. */
function explainBody(result, byId) {
  const explain = result.explain || {};
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
  return [
    bars({ ...(explain.contributions || {}) }),
    h(
      "p",
      { class: "explain-signals muted" },
      `direct ${fmt(explain.direct)} · spread ${fmt(explain.spread)} · full-text rank ${explain.fts_rank ?? "–"} · vector rank ${explain.vector_rank ?? "–"} · clause rank ${explain.clause_rank ?? "–"} · cosine ${fmt(explain.cosine)} · × ${fmt(explain.multiplier)}`,
    ),
    pattern,
    ...supersession,
    explain.via ? activationPath(result, byId) : null,
  ].filter(Boolean);
}

function fmt(value) {
  return typeof value === "number" ? value.toFixed(3) : "–";
}

/**
 * The path spreading activation took to this result, from `explain.via` (the link recall
 * crossed, with no request): followed back through the other results while each step is an
 * earlier hop, to an entry point (hop 1: a full-text or vector hit) or to a source that is
 * not a result (named by its id and first line). Each hop is drawn "source —relation→ next".
 */
export function activationPath(result, byId) {
  const steps = [];
  let here = result;
  let via = result.explain.via;
  while (via) {
    const from = byId.get(via.from);
    steps.unshift({ via, from, to: here });
    const next = from && from.explain ? from.explain.via : null;
    // a strictly earlier hop only: seeds also reach each other, and that loops
    if (via.hop <= 1 || !next || next.hop >= via.hop) break;
    here = from;
    via = next;
  }
  const name = (step) => {
    if (step.from) return memoryLink(step.from.memory, memoryTitle(step.from.memory, 60));
    return memoryLink({ id: step.via.from, summary: step.via.from_summary }, memoryTitle({ summary: step.via.from_summary }, 60));
  };
  const first = steps[0];
  const origin = first.from;
  const entry = first.via.hop <= 1
    ? origin && origin.explain && origin.explain.direct > 0
      ? ` (direct ${origin.explain.direct.toFixed(2)})`
      : " (entry point)"
    : origin ? "" : " (not among the results)";
  return h(
    "div",
    { class: "path" },
    h("p", { class: "path-title" }, "Spreading activation reached it through:"),
    h(
      "ol",
      { class: "path-hops" },
      steps.map((step, i) =>
        h(
          "li",
          { class: "hop", dataset: { from: step.via.from, hop: String(step.via.hop) } },
          name(step),
          i === 0 ? h("span", { class: "muted" }, entry) : null,
          h("span", { class: "hop-edge" }, ` —${step.via.relation} ${Number(step.via.strength).toFixed(2)}→ `),
          step.to === result ? h("span", { class: "muted" }, "this") : memoryLink(step.to.memory, memoryTitle(step.to.memory, 60)),
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
