// Time-series charts for the Health view (LLM usage per day), drawn by the vendored uPlot
// on a canvas. Colours are read from the shell's CSS variables so the chart follows the
// light or dark theme; the chart is redrawn at the width of its box when the window
// changes size.
import uPlot from "../vendor/uplot/uPlot.esm.js";
import { h } from "./dom.js";

const DAY_S = 86400;

/** The days (UTC, "YYYY-MM-DD") of the last `days` days up to today, oldest first. */
export function dayKeys(days, now = new Date()) {
  const end = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  const out = [];
  for (let i = days - 1; i >= 0; i -= 1) out.push(new Date(end - i * DAY_S * 1000).toISOString().slice(0, 10));
  return out;
}

/**
 * Columns for uPlot from the `by_day` groups of /api/v1/llm/usage: every day of the window
 * is present (a day without calls is a zero, not a gap), x in unix seconds.
 */
export function usageColumns(byDay, days, now = new Date()) {
  const rows = new Map((byDay || []).map((g) => [g.key, g]));
  const keys = dayKeys(days, now);
  // Days before the window that the server still sent (a `since` query) are kept too.
  for (const key of rows.keys()) if (!keys.includes(key)) keys.push(key);
  keys.sort();
  const xs = keys.map((k) => Date.parse(`${k}T00:00:00Z`) / 1000);
  const pick = (field) => keys.map((k) => (rows.has(k) ? Number(rows.get(k)[field]) || 0 : 0));
  return {
    xs,
    cost: pick("cost_usd"),
    calls: pick("calls"),
    failures: pick("failures"),
    tokens: keys.map((k) => (rows.has(k) ? (rows.get(k).prompt_tokens || 0) + (rows.get(k).completion_tokens || 0) : 0)),
  };
}

function cssVar(name, fallback) {
  const value = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  return value || fallback;
}

/**
 * A line chart in `box`: series = [{label, values, color, scale, fmt}]. Returns
 * {el, destroy}. Two scales at most: the first series' on the left axis, another on the right.
 */
export function lineChart(title, xs, series, { height = 200 } = {}) {
  const box = h("figure", { class: "hc-chart" }, h("figcaption", {}, title));
  const plotBox = h("div", { class: "hc-plot" });
  box.append(plotBox);
  const text = cssVar("--fg", cssVar("--text", "#888"));
  const grid = cssVar("--border", "#8883");
  const scales = [...new Set(series.map((s) => s.scale))];
  const COUNT_INCRS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 1e6, 1e7];
  const axis = (scale, side) => ({
    scale,
    side,
    ...(series.find((s) => s.scale === scale)?.integer ? { incrs: COUNT_INCRS } : {}),
    stroke: text,
    grid: { stroke: grid, width: 1, show: side === 3 },
    ticks: { stroke: grid, width: 1 },
    values: (u, vals) => vals.map((v) => (series.find((s) => s.scale === scale)?.fmt || String)(v)),
    size: 72,
  });
  const opts = {
    width: 600,
    height,
    scales: { x: { time: true }, ...Object.fromEntries(scales.map((s) => [s, { range: (u, min, max) => [0, Math.max(max, s === "usd" ? 0.01 : 1)] }])) },
    legend: { show: true },
    cursor: { drag: { x: false, y: false } },
    axes: [{ stroke: text, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } }, axis(scales[0], 3), ...(scales[1] ? [axis(scales[1], 1)] : [])],
    series: [
      { label: "day", value: (u, v) => (v === null ? "–" : new Date(v * 1000).toISOString().slice(0, 10)) },
      ...series.map((s) => ({
        label: s.label,
        scale: s.scale,
        stroke: cssVar(s.color, s.fallback || "#3b82f6"),
        width: 2,
        points: { show: xs.length < 60 },
        value: (u, v) => (v === null || v === undefined ? "–" : (s.fmt || String)(v)),
      })),
    ],
  };
  const plot = new uPlot(opts, [xs, ...series.map((s) => s.values)], plotBox);
  const fit = () => {
    const width = Math.max(240, Math.floor(box.clientWidth || 600));
    if (width !== plot.width) plot.setSize({ width, height });
  };
  const observer = typeof ResizeObserver === "function" ? new ResizeObserver(() => requestAnimationFrame(fit)) : null;
  if (observer) observer.observe(box);
  requestAnimationFrame(fit);
  return {
    el: box,
    plot,
    destroy() {
      if (observer) observer.disconnect();
      plot.destroy();
    },
  };
}
