// Health: is the daemon well, and what is it doing? Background agents (state, last and
// next run, last summary, run now), queues and drops, perception filter counts by reason,
// LLM usage and cost per day (uPlot charts), database size and counts, the cognition and
// recall index sections of /api/v1/health, metacognition's observations and the reactor's
// rules. Refreshed every 10 s while visible; a panel redraws only when its data changed,
// so focus and a running "Run now" survive the refresh. State in the URL: days.
import { h, clear } from "../lib/dom.js";
import {
  ago,
  countBars,
  errorText,
  fmtBytes,
  fmtNum,
  fmtSeconds,
  fmtUsd,
  kv,
  panel,
  pill,
  statusLine,
  table,
} from "../lib/health-kit.js";
import { lineChart, usageColumns } from "../lib/health-chart.js";

export const title = "Health";

const DAYS = [7, 30, 90];
const REFRESH_MS = 10000;

function severityKind(s) {
  return { ok: "ok", warning: "warn", alert: "bad" }[s] || "muted";
}

/** The non-zero, non-empty entries of a run summary as "key: value" text. */
export function summaryText(summary) {
  const parts = [];
  for (const [key, value] of Object.entries(summary || {})) {
    if (key === "trigger" || key === "took_ms") continue; // shown in their own columns
    if (value === 0 || value === false || value === null || value === "" || (Array.isArray(value) && !value.length)) continue;
    if (typeof value === "object") {
      const inner = JSON.stringify(value);
      parts.push(`${key}: ${inner.length > 80 ? `${inner.slice(0, 77)}…` : inner}`);
    } else {
      parts.push(`${key}: ${typeof value === "number" ? fmtNum(value) : value}`);
    }
  }
  return parts.length ? parts.join(", ") : "nothing to do";
}

function schedule(s) {
  if (!s) return "–";
  if (s.cron) return `cron ${s.cron}`;
  if (s.interval_s) return `every ${fmtSeconds(s.interval_s)}`;
  return "on demand";
}

export function mount(root, params, ctx) {
  const days = DAYS.includes(Number(params.get("days"))) ? Number(params.get("days")) : 30;
  let alive = true;
  let timer = null;
  const charts = [];
  const running = new Set(); // agents whose "Run now" is under way from this page
  const last = new Map(); // panel -> JSON of what it shows
  const status = statusLine();

  root.classList.add("view-health");

  const bodies = {};
  const slot = (name) => (bodies[name] = h("div", { class: "hl-body", dataset: { panel: name } }));
  const daysSel = h(
    "select",
    { "aria-label": "Usage window", class: "hl-days" },
    DAYS.map((d) => h("option", { value: String(d), selected: d === days }, `last ${d} days`)),
  );
  daysSel.addEventListener("change", () => {
    ctx.setParams({ days: daysSel.value });
    usageDays = Number(daysSel.value);
    last.delete("llm");
    refresh();
  });
  let usageDays = days;
  const refreshBtn = h("button", { type: "button", class: "hl-refresh", onclick: () => refresh() }, "Refresh");

  root.append(
    h("header", { class: "view-head" }, h("h1", {}, "Health"), h("div", { class: "hl-head-actions" }, refreshBtn)),
    status.el,
    h(
      "div",
      { class: "hl-grid" },
      panel("Daemon", { id: "hl-overview" }, slot("overview")),
      panel("Agents", { id: "hl-agents" }, slot("agents")),
      panel("LLM usage and cost", { id: "hl-llm", actions: daysSel }, slot("llm")),
      panel("Queues and drops", { id: "hl-queues" }, slot("queues")),
      panel("Perception filter", { id: "hl-filter" }, slot("filter")),
      panel("Database", { id: "hl-db" }, slot("db")),
      panel("Cognition", { id: "hl-cognition" }, slot("cognition")),
      panel("Recall index", { id: "hl-recall" }, slot("recall")),
      panel("Metacognition", { id: "hl-meta" }, slot("meta")),
      panel("Reactor rules", { id: "hl-reactor" }, slot("reactor")),
      panel("Supervised tasks", { id: "hl-tasks" }, slot("tasks")),
    ),
  );

  /** Redraw one panel when its data changed since the last draw. */
  function draw(name, data, render) {
    const key = JSON.stringify(data);
    if (last.get(name) === key) return;
    last.set(name, key);
    const body = bodies[name];
    clear(body);
    try {
      body.append(...[].concat(render(data)).filter(Boolean));
    } catch (err) {
      body.append(h("p", { class: "kit-bad" }, `Could not show this: ${err.message}`));
    }
  }

  function failed(name, err) {
    last.delete(name);
    clear(bodies[name]);
    bodies[name].append(h("p", { class: "kit-status kit-bad" }, errorText(err)));
  }

  // ---- panels ----------------------------------------------------------------------------

  function overview(health) {
    return [
      h("p", { class: "hl-status" }, pill(health.status, health.status === "ok" ? "ok" : "warn"), " ", `version ${health.version}, schema ${health.schema_version}, up ${fmtSeconds(health.uptime_s)}`),
      health.reasons.length ? h("ul", { class: "hl-reasons" }, health.reasons.map((r) => h("li", { class: "kit-warn" }, r))) : null,
      kv([
        ["Embedding", `${health.embedding.model} (${health.embedding.dim} dims)`],
        ["Encoding backlog", fmtNum(health.embedding.backlog)],
        ["Re-embedding", health.embedding.reembedding.running ? `${health.embedding.reembedding.done}/${health.embedding.reembedding.total}` : null],
        ["LLM", health.llm && health.llm.configured ? `${health.llm.provider} ${health.llm.model}` : "none (heuristics)"],
        ["Process", `pid ${health.pid}`],
      ]),
    ];
  }

  function runButton(agent) {
    const busy = agent.running || running.has(agent.name);
    const btn = h("button", { type: "button", class: "hl-run", dataset: { agent: agent.name }, disabled: busy }, busy ? "Running…" : "Run now");
    btn.addEventListener("click", () => runNow(agent.name, btn));
    return btn;
  }

  function agents(list) {
    return table(
      [
        { label: "Agent", class: "nowrap", cell: (a) => h("strong", {}, a.name) },
        { label: "State", class: "nowrap", cell: (a) => (a.running ? pill("running", "info") : a.last_run && a.last_run.ok === false ? pill("failed", "bad") : pill("idle", "ok")) },
        { label: "Schedule", class: "nowrap", cell: (a) => schedule(a.schedule) },
        { label: "Last run", cell: (a) => (a.last_run ? h("span", { class: "hl-last-run" }, ago(a.last_run.started_at), a.last_run.took_ms !== null ? ` · ${fmtSeconds(a.last_run.took_ms / 1000)}` : "", ` · ${a.last_run.trigger}`) : h("span", { class: "muted hl-last-run" }, "never")) },
        { label: "Last summary", cell: (a) => (a.last_run ? (a.last_run.error ? h("span", { class: "kit-bad" }, a.last_run.error) : h("span", { class: "hl-summary" }, summaryText(a.last_run.summary))) : "–") },
        { label: "Next run", class: "nowrap", cell: (a) => ago(a.next_run_at) },
        { label: "Runs", class: "num nowrap", cell: (a) => `${fmtNum(a.runs)}${a.failures ? ` (${a.failures} failed)` : ""}` },
        { label: "", cell: (a) => runButton(a) },
      ],
      list.items,
      { empty: "No scheduled agents.", rowAttrs: (a) => ({ dataset: { agent: a.name } }) },
    );
  }

  async function runNow(name, btn) {
    running.add(name);
    btn.disabled = true;
    btn.textContent = "Running…";
    status.ok(`Running ${name}…`);
    try {
      const answer = await ctx.api.post(`/api/v1/agents/${encodeURIComponent(name)}/run?wait=true`);
      if (!alive) return;
      const run = answer.run;
      if (run.ok === false) status.error(`${name} failed: ${run.error || "see the log"}`);
      else status.ok(`${name} ran in ${fmtSeconds((run.took_ms || 0) / 1000)}: ${summaryText(run.summary)}`);
    } catch (err) {
      if (!alive) return;
      status.error(err.status === 409 ? `${name} is already running; try again when it ends.` : err);
    } finally {
      running.delete(name);
      if (alive) {
        last.delete("agents");
        refresh();
      }
    }
  }

  function queues(stats) {
    const bus = stats.bus;
    return [
      kv([
        ...Object.entries(stats.queues).map(([k, v]) => [`Queue ${k}`, fmtNum(v)]),
        ["Events published", fmtNum(bus.published)],
        ["Events dropped", bus.dropped ? h("span", { class: "kit-warn" }, fmtNum(bus.dropped)) : "0"],
        ["WebSocket clients", fmtNum(stats.websocket.clients)],
        ["Memories written by perception", fmtNum(stats.perception.remembered)],
        ["Perception write errors", fmtNum(stats.perception.write_errors)],
      ]),
      table(
        [
          { label: "Subscriber", cell: (s) => s.name },
          { label: "Depth", class: "num", cell: (s) => `${fmtNum(s.depth)} / ${fmtNum(s.capacity)}` },
          { label: "Delivered", class: "num", cell: (s) => fmtNum(s.delivered) },
          { label: "Dropped", class: "num", cell: (s) => (s.dropped ? h("span", { class: "kit-warn" }, fmtNum(s.dropped)) : "0") },
          { label: "Failed", class: "num", cell: (s) => fmtNum(s.failed) },
        ],
        bus.subscribers,
        { empty: "No subscribers." },
      ),
      h("h3", {}, "Drops by the watchers themselves"),
      countBars(stats.perception.watcher_drops, { empty: "None." }),
    ];
  }

  function filter(stats) {
    const f = stats.perception.filter;
    return [
      kv([
        ["Events seen", fmtNum(f.seen)],
        ["Accepted", fmtNum(f.accepted)],
        ["Auto-excluded paths", fmtNum(f.auto_excluded)],
        ["Exclusions in force", fmtNum(f.exclusions)],
        ["LLM errors", fmtNum(f.llm_errors)],
      ]),
      h("h3", {}, "Dropped, by reason"),
      countBars(f.dropped),
    ];
  }

  function llm(data) {
    const { usage, status: st } = data;
    const cols = usageColumns(usage.by_day, usageDays);
    for (const c of charts.splice(0)) c.destroy();
    const cost = lineChart("Cost per day (estimated)", cols.xs, [{ label: "cost", values: cols.cost, color: "--accent", scale: "usd", fmt: (v) => fmtUsd(v) }]);
    const calls = lineChart("Calls per day", cols.xs, [
      { label: "calls", values: cols.calls, color: "--accent", scale: "n", integer: true, fmt: (v) => fmtNum(v, 0) },
      { label: "failures", values: cols.failures, color: "--bad", fallback: "#dc2626", scale: "n", integer: true, fmt: (v) => fmtNum(v, 0) },
    ]);
    charts.push(cost, calls);
    const t = usage.totals;
    const groupTable = (rows, label) =>
      table(
        [
          { label, cell: (g) => g.key },
          { label: "Calls", class: "num", cell: (g) => fmtNum(g.calls) },
          { label: "Failed", class: "num", cell: (g) => fmtNum(g.failures) },
          { label: "Tokens in/out", class: "num", cell: (g) => `${fmtNum(g.prompt_tokens)} / ${fmtNum(g.completion_tokens)}` },
          { label: "Cost", class: "num", cell: (g) => fmtUsd(g.cost_usd) },
          { label: "Latency", class: "num", cell: (g) => fmtSeconds(g.latency_ms_avg / 1000) },
        ],
        rows,
        { empty: "No calls in this window." },
      );
    return [
      kv([
        ["Mode", st.mode === "llm" ? pill("llm", "ok") : pill("heuristic", "muted")],
        ["Provider", st.configured ? `${st.provider} · ${st.model}` : "none configured"],
        ["Breaker", st.breaker ? pill(st.breaker.state, st.breaker.state === "closed" ? "ok" : "warn") : null],
        ["Reason", st.reason],
        ["Last error", st.last_error],
        [`Last ${usageDays} days`, `${fmtNum(t.calls)} calls, ${fmtNum(t.failures)} failed, ${fmtNum(t.prompt_tokens + t.completion_tokens)} tokens, ${fmtUsd(t.cost_usd)}`],
      ]),
      h("div", { class: "hl-charts" }, cost.el, calls.el),
      h("details", { class: "hl-groups" }, h("summary", {}, "By operation and model"), groupTable(usage.by_operation, "Operation"), groupTable(usage.by_model, "Model")),
    ];
  }

  function database({ health, stats }) {
    const cog = health.cognition;
    const m = stats.memories;
    return [
      kv([
        ["Database on disk", cog ? fmtBytes(cog.database_bytes) : "–"],
        ["Vectors", `${fmtNum(health.vector_index.vectors)} (${fmtBytes(health.vector_index.bytes)}, ${health.vector_index.storage})`],
        ["Memories", fmtNum(m.total)],
        ["Associations", fmtNum(m.associations)],
        ["Raw failed", m && stats.raw.failed ? h("span", { class: "kit-warn" }, fmtNum(stats.raw.failed)) : "0"],
      ]),
      h(
        "div",
        { class: "hl-columns" },
        h("div", {}, h("h3", {}, "By state"), countBars(m.by_state)),
        h("div", {}, h("h3", {}, "By type"), countBars(m.by_type)),
        h("div", {}, h("h3", {}, "By source"), countBars(m.by_source)),
      ),
    ];
  }

  function cognition(cog) {
    if (!cog) return h("p", { class: "muted" }, "The orchestrator has not reported yet.");
    const st = cog.self_test;
    return [
      kv([
        ["LLM", `${cog.llm.mode}${cog.llm.breaker ? `, breaker ${cog.llm.breaker}` : ""}`],
        ["Recall self-test", st ? h("span", {}, pill(st.severity || "ok", severityKind(st.severity)), ` hit rate ${fmtNum(st.hit_rate)} over ${fmtNum(st.probes)} probes, `, ago(st.at)) : "not run yet"],
        ["Next self-test", ago(cog.self_test_next_at)],
        ["Last tick", h("span", {}, ago(cog.last_tick_at), ` (${fmtNum(cog.ticks)} ticks)`)],
      ]),
      table(
        [
          { label: "Agent", cell: (a) => a.name },
          { label: "State", cell: (a) => pill(a.state, a.state === "failed" ? "bad" : a.state === "running" ? "info" : "ok") },
          { label: "Last run", cell: (a) => ago(a.last_run_at) },
          { label: "Next run", cell: (a) => ago(a.next_run_at) },
          { label: "Runs", class: "num", cell: (a) => `${fmtNum(a.runs)}${a.failures ? ` (${a.failures} failed)` : ""}` },
        ],
        cog.agents,
        { empty: "No thinking agents." },
      ),
    ];
  }

  function recall(ri) {
    return [
      kv([
        ["State", pill(ri.state, ri.state === "ready" ? "ok" : "warn")],
        ["Builds", `${fmtNum(ri.builds)}${ri.build_seconds !== null ? `, last ${fmtSeconds(ri.build_seconds)}` : ""}${ri.built_from ? ` from ${ri.built_from}` : ""}`],
        ["Supersessions known", fmtNum(ri.supersessions)],
        ["Active patterns", fmtNum(ri.patterns)],
        ["Last error", ri.last_error],
      ]),
      table(
        [
          { label: "Entry point", cell: (e) => e[0] },
          { label: "Kind", cell: (e) => String(e[1].kind || "–") },
          {
            label: "Detail",
            cell: (e) =>
              Object.entries(e[1])
                .filter(([k]) => k !== "kind")
                .map(([k, v]) => `${k}: ${typeof v === "number" ? fmtNum(v) : JSON.stringify(v)}`)
                .join(", ") || "–",
          },
        ],
        Object.entries(ri.entry_points || {}),
      ),
    ];
  }

  function meta(answer) {
    const latest = Object.values(answer.latest).sort((a, b) => a.kind.localeCompare(b.kind));
    const cols = [
      { label: "Audit", cell: (o) => o.kind },
      { label: "Severity", cell: (o) => pill(o.severity, severityKind(o.severity)) },
      { label: "Value", class: "num", cell: (o) => (o.value === null ? "–" : fmtNum(o.value, 3)) },
      { label: "Threshold", class: "num", cell: (o) => (o.threshold === null ? "–" : fmtNum(o.threshold, 3)) },
      { label: "Action", cell: (o) => o.action || "–" },
      { label: "When", cell: (o) => ago(o.at) },
    ];
    return [
      table(cols, latest, { empty: "Metacognition has not run yet.", rowAttrs: (o) => ({ dataset: { kind: o.kind } }) }),
      answer.history.length ? h("details", {}, h("summary", {}, `History (${answer.history.length})`), table(cols, answer.history)) : null,
    ];
  }

  function reactor(rules) {
    return [
      h("p", {}, rules.enabled ? pill("reactor on", "ok") : pill("reactor off", "muted")),
      table(
        [
          { label: "Rule", cell: (r) => h("span", {}, r.name, r.builtin ? h("span", { class: "muted" }, " (built-in)") : null) },
          { label: "On", cell: (r) => r.on },
          { label: "When", cell: (r) => (Object.keys(r.when).length ? JSON.stringify(r.when) : "always") },
          { label: "Do", cell: (r) => Object.entries(r.do).map(([k, v]) => `${k}: ${v}`).join(", ") },
          { label: "Cooldown", cell: (r) => `${fmtSeconds(r.cooldown_s)}${r.cooldown_remaining_s > 0 ? ` (${fmtSeconds(r.cooldown_remaining_s)} left)` : ""}` },
          { label: "State", cell: (r) => (!r.enabled ? pill("off", "muted") : !r.agent_available ? pill("agent missing", "warn") : pill("on", "ok")) },
          { label: "Fires", class: "num", cell: (r) => `${fmtNum(r.fires)}${r.held ? ` (${r.held} held)` : ""}` },
          { label: "Last fire", cell: (r) => (r.last_fire ? h("span", {}, ago(r.last_fire.at), ` ${r.last_fire.outcome}`, r.last_fire.error ? h("span", { class: "kit-bad" }, ` ${r.last_fire.error}`) : null) : "never") },
        ],
        rules.rules,
        { empty: "No rules." },
      ),
    ];
  }

  function tasks(list) {
    return table(
      [
        { label: "Task", cell: (a) => a.name },
        { label: "State", cell: (a) => pill(a.state, a.state === "running" || a.state === "finished" ? "ok" : "warn") },
        { label: "Restarts", class: "num", cell: (a) => fmtNum(a.restarts) },
        { label: "Last error", cell: (a) => (a.last_error ? h("span", { class: "kit-bad" }, a.last_error, " ", ago(a.last_error_at)) : "–") },
      ],
      list,
    );
  }

  // ---- loading ---------------------------------------------------------------------------

  const get = (path, query) => ctx.api.get(path, query);

  async function refresh() {
    if (!alive) return;
    clearTimeout(timer);
    const [health, agentList, stats, usage, llmStatus, metaAnswer, rules] = await Promise.allSettled([
      get("/api/v1/health"),
      get("/api/v1/agents"),
      get("/api/v1/stats"),
      get("/api/v1/llm/usage", { days: usageDays }),
      get("/api/v1/llm/status"),
      get("/api/v1/meta", { limit: 30 }),
      get("/api/v1/reactor/rules"),
    ]);
    if (!alive) return;
    const ok = (r) => r.status === "fulfilled";
    if (ok(health)) {
      const hv = health.value;
      draw("overview", { ...hv, uptime_s: Math.round(hv.uptime_s / 60) }, () => overview(hv));
      draw("cognition", hv.cognition, cognition);
      draw("recall", hv.recall_index, recall);
      draw("tasks", hv.agents.map(({ detail, ...rest }) => rest), () => tasks(hv.agents));
    } else ["overview", "cognition", "recall", "tasks"].forEach((n) => failed(n, health.reason));
    if (ok(agentList)) draw("agents", { ...agentList.value, running: [...running] }, () => agents(agentList.value));
    else failed("agents", agentList.reason);
    if (ok(stats)) {
      const sv = stats.value;
      draw("queues", { queues: sv.queues, bus: sv.bus, ws: sv.websocket.clients, p: sv.perception }, () => queues(sv));
      draw("filter", sv.perception.filter, () => filter(sv));
      if (ok(health)) draw("db", { m: sv.memories, raw: sv.raw, c: health.value.cognition?.database_bytes, v: health.value.vector_index }, () => database({ health: health.value, stats: sv }));
    } else ["queues", "filter", "db"].forEach((n) => failed(n, stats.reason));
    if (ok(usage) && ok(llmStatus)) draw("llm", { usage: usage.value, status: llmStatus.value, days: usageDays }, llm);
    else failed("llm", ok(usage) ? llmStatus.reason : usage.reason);
    if (ok(metaAnswer)) draw("meta", metaAnswer.value, meta);
    else failed("meta", metaAnswer.reason);
    if (ok(rules)) draw("reactor", rules.value, reactor);
    else failed("reactor", rules.reason);
    root.dataset.loaded = "true";
    clearTimeout(timer); // a run-now refresh may have overlapped a timed one
    timer = setTimeout(tick, REFRESH_MS);
  }

  function tick() {
    if (document.visibilityState === "hidden") timer = setTimeout(tick, REFRESH_MS);
    else refresh();
  }

  refresh();

  return () => {
    alive = false;
    clearTimeout(timer);
    for (const c of charts.splice(0)) c.destroy();
  };
}
