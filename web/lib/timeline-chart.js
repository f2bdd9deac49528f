// The timeline's chart: one column per server-side bucket (stacked by memory type) and a
// lane of episode spans under it. Plain DOM (a few hundred elements whatever the number of
// memories, since the server counts), so every bar and episode is a focusable button.
// Drag across the bars to zoom into a range; click (or Enter on) a bar to zoom into it.
import { h } from "./dom.js";
import { MEMORY_TYPES } from "./memory-kit.js";

const MAX_LANES = 4;
const MIN_WIDTH = 0.04; // of the chart's width: room for a click and a few letters

/** Greedy lanes for spans [{start, end}]: each goes in the first lane free at its start. */
export function assignLanes(spans, maxLanes = MAX_LANES) {
  const ends = [];
  return spans.map((s) => {
    let lane = ends.findIndex((end) => end <= s.start);
    if (lane === -1 && ends.length < maxLanes) lane = ends.length;
    if (lane === -1) return -1; // no room: left out of the lane (still in the list below)
    ends[lane] = Math.max(s.end, s.start);
    return lane;
  });
}

/** Position (0..1) of time `t` (ms) in [since, until]. */
export function fraction(t, since, until) {
  if (until <= since) return 0;
  return Math.min(1, Math.max(0, (t - since) / (until - since)));
}

export function timelineChart(data, { onZoom, onEpisode }) {
  const since = new Date(data.since).getTime();
  const until = new Date(data.until).getTime();
  const width = data.bucket_seconds * 1000;
  const max = Math.max(1, ...data.buckets.map((b) => b.total));

  const bars = h("div", { class: "tl-bars", role: "group", "aria-label": "Memories over time" });
  data.buckets.forEach((b, i) => {
    const start = since + i * width;
    const label = `${new Date(start).toLocaleString()}: ${b.total} memories`;
    const bar = h("button", {
      type: "button",
      class: `tl-bar${b.total ? "" : " tl-empty"}`,
      title: label,
      "aria-label": label,
      dataset: { index: String(i), total: String(b.total) },
    });
    const stack = h("span", { class: "tl-stack" });
    stack.style.height = `${(b.total / max) * 100}%`;
    for (const type of MEMORY_TYPES) {
      const n = b.counts[type] || 0;
      if (!n) continue;
      const seg = h("span", { class: `tl-seg tl-seg-${type}` });
      seg.style.height = `${(n / b.total) * 100}%`;
      stack.append(seg);
    }
    bar.append(stack);
    bar.addEventListener("click", (event) => {
      if (bars.dataset.dragged === "1") return;
      event.preventDefault();
      onZoom(new Date(start), new Date(Math.min(start + width, until)));
    });
    bars.append(bar);
  });

  // drag to select a range
  const band = h("div", { class: "tl-band", hidden: true });
  let downX = null;
  const plot = h("div", { class: "tl-plot" }, bars, band);
  const xToTime = (x) => {
    const rect = bars.getBoundingClientRect();
    return since + fraction(x - rect.left, 0, rect.width) * (until - since);
  };
  plot.addEventListener("pointerdown", (event) => {
    if (event.button !== 0) return;
    downX = event.clientX;
    bars.dataset.dragged = "0";
  });
  plot.addEventListener("pointermove", (event) => {
    if (downX === null || Math.abs(event.clientX - downX) < 6) return;
    bars.dataset.dragged = "1";
    const rect = plot.getBoundingClientRect();
    band.hidden = false;
    band.style.left = `${Math.min(downX, event.clientX) - rect.left}px`;
    band.style.width = `${Math.abs(event.clientX - downX)}px`;
  });
  const finish = (event) => {
    if (downX === null) return;
    const dragged = bars.dataset.dragged === "1";
    const a = xToTime(downX);
    const b = xToTime(event.clientX);
    downX = null;
    band.hidden = true;
    if (dragged && Math.abs(b - a) >= 1000) onZoom(new Date(Math.min(a, b)), new Date(Math.max(a, b)));
    setTimeout(() => {
      bars.dataset.dragged = "0";
    }, 0);
  };
  plot.addEventListener("pointerup", finish);
  plot.addEventListener("pointerleave", () => {
    downX = null;
    band.hidden = true;
  });

  // the episode lane
  // spans as fractions of the width, each at least MIN_WIDTH wide (a burst of work is one
  // instant at a coarse zoom) and kept inside the chart; lanes are assigned on what is drawn
  const spans = data.episodes.map((e) => {
    const left = fraction(new Date(e.started_at).getTime(), since, until);
    const right = fraction(new Date(e.ended_at).getTime(), since, until);
    const width = Math.max(right - left, MIN_WIDTH);
    const start = Math.min(left, 1 - width);
    return { start, end: start + width };
  });
  const lanes = assignLanes(spans);
  const laneCount = Math.max(0, ...lanes) + 1;
  const lane = h("div", { class: "tl-episodes", role: "group", "aria-label": "Episodes" });
  lane.style.height = `${laneCount * 1.6}em`;
  data.episodes.forEach((e, i) => {
    if (lanes[i] < 0) return;
    const label = `${e.title || "(untitled episode)"} (${e.memory_count} memories)`;
    const item = h(
      "button",
      { type: "button", class: "tl-episode", title: label, "aria-label": `Episode: ${label}`, dataset: { episodeId: e.id } },
      e.title || "episode",
    );
    item.style.left = `${spans[i].start * 100}%`;
    item.style.width = `${(spans[i].end - spans[i].start) * 100}%`;
    item.style.top = `${lanes[i] * 1.6}em`;
    item.addEventListener("click", () => onEpisode(e.id));
    lane.append(item);
  });

  const axis = h(
    "div",
    { class: "tl-axis" },
    h("span", {}, new Date(since).toLocaleString()),
    h("span", {}, new Date(until).toLocaleString()),
  );
  const legend = h(
    "ul",
    { class: "tl-legend", "aria-label": "Types" },
    MEMORY_TYPES.map((t) => h("li", {}, h("span", { class: `tl-swatch tl-seg-${t}` }), t)),
  );
  return h("div", { class: "tl-chart" }, plot, axis, laneCount ? lane : null, legend);
}
