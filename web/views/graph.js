// Graph (#/graph?id=…|project=…&depth=&limit=): the neighbourhood of a memory or the recent
// memories of a project, drawn with sigma.js (WebGL) so 2,000 nodes stay interactive.
// Nodes are coloured by memory type and sized by salience, edges coloured by relation and
// weighted by strength; the layout (lib/graph-layout.js) runs a bounded number of
// iterations before the first frame. Click a node to open its memory page.
import { h } from "../lib/dom.js";
import { Graph, Sigma } from "../lib/graph-vendor.js";
import { layout } from "../lib/graph-layout.js";
import { MEMORY_TYPES, RELATIONS, badge, errorBox, isAbort, memoryLink, replace, statusLine } from "../lib/memory-kit.js";

export const title = "Graph";
/** Above this many nodes, edges and labels are hidden while the camera moves. */
export const BIG_GRAPH = 500;

/** A big graph drops its edges and labels while the camera moves (a drag, a wheel zoom, an
 * animation) and sigma draws them again when it stops: panning then redraws only the nodes,
 * about twice the frames a second of drawing everything on software WebGL
 * (bench/dashboard.py --only graph measures it). */
export function movingSettings(order) {
  const big = order > BIG_GRAPH;
  return { hideEdgesOnMove: big, hideLabelsOnMove: big };
}

export const TYPE_COLORS = {
  decision: "#3b82f6",
  error: "#e53e3e",
  insight: "#805ad5",
  learning: "#38a169",
  general: "#8a94a6",
  handoff: "#dd6b20",
};
export const RELATION_COLORS = {
  similar: "#94a3b8",
  caused_by: "#e53e3e",
  part_of: "#3b82f6",
  contradicts: "#d69e2e",
  temporal: "#38b2ac",
  reinforces: "#38a169",
  supersedes: "#805ad5",
  related: "#ed64a6",
};

export function mount(root, params, ctx) {
  const state = {
    id: params.get("id") || "",
    project: params.get("project") || "",
    depth: params.get("depth") || "2",
    limit: params.get("limit") || "500",
  };
  let abort = null;
  let renderer = null;

  root.classList.add("view-graph");
  const status = statusLine();
  const stage = h("div", { class: "gr-stage", role: "img", "aria-label": "Memory graph" });
  stage.style.height = "70vh"; // sigma needs a height before the view's CSS arrives
  const hover = h("div", { class: "gr-hover", "aria-live": "polite" });
  const nodeList = h("details", { class: "gr-nodes" }, h("summary", {}, "Nodes as a list"));
  root.append(h("h2", {}, "Graph"), form(), status, h("div", { class: "gr-wrap" }, stage, hover), legend(), nodeList);

  function form() {
    const field = (name, label, attrs) => {
      const input = h("input", { name, "aria-label": label, ...attrs });
      input.value = state[name];
      return h("label", { class: "mk-field" }, h("span", {}, label), input);
    };
    const f = h(
      "form",
      { class: "gr-form" },
      field("id", "Memory id", { type: "text", maxlength: "64", placeholder: "centre on a memory" }),
      field("project", "or project", { type: "text", maxlength: "200", placeholder: "a project's recent memories" }),
      field("depth", "Depth", { type: "number", min: "1", max: "3" }),
      field("limit", "Nodes", { type: "number", min: "1", max: "2000" }),
      h("button", { type: "submit" }, "Draw"),
    );
    f.addEventListener("submit", (event) => {
      event.preventDefault();
      for (const key of Object.keys(state)) state[key] = f.elements[key].value.trim();
      const out = {};
      for (const [k, v] of Object.entries(state)) if (v) out[k] = v;
      ctx.setParams(out);
      load();
    });
    return f;
  }

  async function load() {
    if (abort) abort.abort();
    abort = new AbortController();
    status.set("Loading…");
    const query = { depth: state.depth, limit: state.limit };
    if (state.id) query.memory_id = state.id;
    else if (state.project) query.project = state.project;
    try {
      const data = await ctx.api.get("/api/v1/graph/neighbourhood", query, { signal: abort.signal });
      draw(data);
    } catch (err) {
      if (isAbort(err)) return;
      status.set("");
      stop();
      replace(stage, errorBox(err));
    }
  }

  function stop() {
    if (renderer) renderer.kill();
    renderer = null;
  }

  function draw(data) {
    stop();
    replace(stage);
    const t0 = performance.now();
    const index = new Map(data.nodes.map((n, i) => [n.id, i]));
    const edges = data.edges
      .filter((e) => index.has(e.source) && index.has(e.target))
      .map((e) => [index.get(e.source), index.get(e.target), e.strength]);
    const center = data.center && index.has(data.center) ? index.get(data.center) : -1;
    const pos = layout(data.nodes.length, edges, { center, iterations: data.nodes.length > 1000 ? 80 : 120 });
    const layoutMs = performance.now() - t0;

    const graph = new Graph({ multi: true, type: "undirected" });
    data.nodes.forEach((n, i) => {
      graph.addNode(n.id, {
        x: pos[2 * i],
        y: pos[2 * i + 1],
        size: (i === center ? 10 : 3) + n.salience * 6,
        color: TYPE_COLORS[n.type] || "#888888",
        label: truncate(n.summary || n.id, 60),
        memory: n,
      });
    });
    for (const e of data.edges) {
      if (!graph.hasNode(e.source) || !graph.hasNode(e.target)) continue;
      graph.addEdge(e.source, e.target, {
        size: 0.5 + e.strength * 2.5,
        color: RELATION_COLORS[e.relation] || "#999999",
        relation: e.relation,
        strength: e.strength,
      });
    }
    const dark = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
    renderer = new Sigma(graph, stage, {
      allowInvalidContainer: true,
      labelColor: { color: dark ? "#e2e8f0" : "#1a202c" },
      labelRenderedSizeThreshold: graph.order <= 150 ? 0 : 9, // labels for small graphs
      defaultEdgeColor: "#999999",
      zIndex: false,
      ...movingSettings(graph.order),
    });
    renderer.on("clickNode", ({ node }) => ctx.navigate("memory", { id: node }));
    renderer.on("enterNode", ({ node }) => {
      const m = graph.getNodeAttribute(node, "memory");
      replace(hover, badge(m.type, "type"), " ", m.project ? badge(m.project, "project") : null, " ", h("span", {}, m.summary || m.id));
      stage.classList.add("gr-pointer");
    });
    renderer.on("leaveNode", () => {
      replace(hover);
      stage.classList.remove("gr-pointer");
    });
    const totalMs = performance.now() - t0;
    // for tests and the benchmark: what was drawn and how long it took
    stage.graphView = { sigma: renderer, graph, layoutMs, totalMs };
    root.dataset.nodes = String(graph.order);
    root.dataset.edges = String(graph.size);
    root.dataset.layoutMs = String(Math.round(layoutMs));
    status.set(
      `${graph.order} nodes, ${graph.size} edges${data.truncated ? " (cut at the node limit)" : ""} · laid out in ${Math.round(layoutMs)} ms`,
    );
    fillNodeList(data.nodes);
  }

  function fillNodeList(nodes) {
    // a keyboard and screen-reader way in; filled when opened, so 2,000 links cost nothing
    replace(nodeList, h("summary", {}, `Nodes as a list (${nodes.length})`));
    const onToggle = () => {
      if (!nodeList.open || nodeList.dataset.filled === "1") return;
      nodeList.dataset.filled = "1";
      nodeList.append(h("ol", {}, nodes.map((n) => h("li", {}, badge(n.type, "type"), " ", memoryLink(n)))));
    };
    nodeList.dataset.filled = "0";
    nodeList.ontoggle = onToggle;
  }

  load();
  return () => {
    if (abort) abort.abort();
    stop();
  };
}

function truncate(text, n) {
  return text.length > n ? `${text.slice(0, n - 1)}…` : text;
}

function legend() {
  const item = (color, label) => {
    const swatch = h("span", { class: "gr-swatch" });
    swatch.style.background = color;
    return h("li", {}, swatch, label);
  };
  return h(
    "div",
    { class: "gr-legend" },
    h("ul", { "aria-label": "Memory types" }, MEMORY_TYPES.map((t) => item(TYPE_COLORS[t], t))),
    h("ul", { "aria-label": "Relations" }, RELATIONS.map((r) => item(RELATION_COLORS[r], r.replace("_", " ")))),
  );
}
