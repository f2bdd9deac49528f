// A force layout that settles in a bounded time: nodes start on rings by hop distance from
// the centre (or on a sunflower spiral when there is none), then a fixed number of
// iterations of spring attraction along edges and repulsion between nodes that share or
// neighbour a grid cell (so an iteration is about O(nodes + edges), not O(nodes²)), with
// a cooling step size. Deterministic: the same graph gives the same picture.

/**
 * nodes: n; edges: [[i, j, weight]]; center: index or -1.
 * Returns Float64Array [x0, y0, x1, y1, …].
 */
export function layout(n, edges, { center = -1, iterations = 120 } = {}) {
  const pos = new Float64Array(2 * n);
  if (n === 0) return pos;
  const adj = Array.from({ length: n }, () => []);
  for (const [a, b] of edges) {
    if (a === b) continue;
    adj[a].push(b);
    adj[b].push(a);
  }
  seed(pos, n, adj, center);
  const ideal = 1;
  const cell = ideal * 2;
  let step = 0.5;
  const disp = new Float64Array(2 * n);
  for (let it = 0; it < iterations; it++) {
    disp.fill(0);
    repulse(pos, disp, n, cell, ideal);
    for (const [a, b, w] of edges) {
      if (a === b) continue;
      const dx = pos[2 * b] - pos[2 * a];
      const dy = pos[2 * b + 1] - pos[2 * a + 1];
      const d = Math.hypot(dx, dy) || 1e-9;
      const f = ((d * d) / ideal) * (0.5 + (w || 0.5)) * 0.5;
      const fx = (dx / d) * f;
      const fy = (dy / d) * f;
      disp[2 * a] += fx;
      disp[2 * a + 1] += fy;
      disp[2 * b] -= fx;
      disp[2 * b + 1] -= fy;
    }
    for (let i = 0; i < n; i++) {
      // weak gravity keeps unconnected pieces near the middle
      disp[2 * i] -= pos[2 * i] * 0.01;
      disp[2 * i + 1] -= pos[2 * i + 1] * 0.01;
      const d = Math.hypot(disp[2 * i], disp[2 * i + 1]);
      if (d > 0) {
        const move = Math.min(d, step);
        pos[2 * i] += (disp[2 * i] / d) * move;
        pos[2 * i + 1] += (disp[2 * i + 1] / d) * move;
      }
    }
    if (center >= 0) {
      pos[2 * center] = 0;
      pos[2 * center + 1] = 0;
    }
    step *= 0.97;
  }
  return pos;
}

function seed(pos, n, adj, center) {
  if (center < 0) {
    const golden = Math.PI * (3 - Math.sqrt(5));
    for (let i = 0; i < n; i++) {
      const r = Math.sqrt(i + 0.5) * 1.2;
      pos[2 * i] = r * Math.cos(i * golden);
      pos[2 * i + 1] = r * Math.sin(i * golden);
    }
    return;
  }
  // breadth-first rings; unreachable nodes go on an outer ring
  const depth = new Int32Array(n).fill(-1);
  depth[center] = 0;
  const order = [center];
  for (let k = 0; k < order.length; k++) {
    for (const o of adj[order[k]]) {
      if (depth[o] === -1) {
        depth[o] = depth[order[k]] + 1;
        order.push(o);
      }
    }
  }
  const maxDepth = Math.max(0, ...depth);
  const rings = new Map();
  for (let i = 0; i < n; i++) {
    const d = depth[i] === -1 ? maxDepth + 1 : depth[i];
    if (!rings.has(d)) rings.set(d, []);
    rings.get(d).push(i);
  }
  for (const [d, members] of rings) {
    const r = d === 0 ? 0 : Math.max(d * 3, Math.sqrt(members.length) * 1.5);
    members.forEach((i, k) => {
      const a = (2 * Math.PI * k) / members.length + d * 0.5;
      pos[2 * i] = r * Math.cos(a);
      pos[2 * i + 1] = r * Math.sin(a);
    });
  }
}

function repulse(pos, disp, n, cell, ideal) {
  const grid = new Map();
  const key = (cx, cy) => cx * 73856093 + cy * 19349663;
  for (let i = 0; i < n; i++) {
    const k = key(Math.floor(pos[2 * i] / cell), Math.floor(pos[2 * i + 1] / cell));
    let bucket = grid.get(k);
    if (!bucket) grid.set(k, (bucket = []));
    bucket.push(i);
  }
  const k2 = ideal * ideal;
  for (let i = 0; i < n; i++) {
    const cx = Math.floor(pos[2 * i] / cell);
    const cy = Math.floor(pos[2 * i + 1] / cell);
    for (let gx = cx - 1; gx <= cx + 1; gx++) {
      for (let gy = cy - 1; gy <= cy + 1; gy++) {
        const bucket = grid.get(key(gx, gy));
        if (!bucket) continue;
        for (const j of bucket) {
          if (j <= i) continue;
          let dx = pos[2 * i] - pos[2 * j];
          let dy = pos[2 * i + 1] - pos[2 * j + 1];
          let d2 = dx * dx + dy * dy;
          if (d2 < 1e-9) {
            // coincident: nudge apart deterministically
            dx = ((i % 7) - 3) * 1e-3 + 1e-3;
            dy = ((j % 5) - 2) * 1e-3 + 1e-3;
            d2 = dx * dx + dy * dy;
          }
          if (d2 > 4 * cell * cell) continue;
          const f = k2 / d2;
          disp[2 * i] += dx * f;
          disp[2 * i + 1] += dy * f;
          disp[2 * j] -= dx * f;
          disp[2 * j + 1] -= dy * f;
        }
      }
    }
  }
}
