// Small inline-SVG charts: a line over time (values 0..1) and horizontal bars. No dependencies.
"use strict";
const SVG_NS = "http://www.w3.org/2000/svg";

function svgEl(name, attrs, text) {
  const el = document.createElementNS(SVG_NS, name);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

function lineChart(points, opts) {
  // points: [{t: ISO string, v: number|null}], v in [0, 1]
  const W = 420, H = 190, L = 38, R = 12, T = 10, B = 34;
  // colours come from the stylesheet (tone-*: the theme's --block, --ok, ...), so dark mode redraws them
  const svg = svgEl("svg", {viewBox: `0 0 ${W} ${H}`, width: "100%", role: "img", "aria-label": opts.label,
                            class: "chart tone-" + (opts.tone || "accent")});
  const pts = points.filter(p => p.v !== null && p.v !== undefined);
  for (const y of [0, 0.5, 1]) {
    const py = T + (1 - y) * (H - T - B);
    svg.appendChild(svgEl("line", {x1: L, x2: W - R, y1: py, y2: py, class: "chart-grid"}));
    svg.appendChild(svgEl("text", {x: L - 6, y: py + 4, "text-anchor": "end"}, (y * 100).toFixed(0) + "%"));
  }
  if (!pts.length) {
    svg.appendChild(svgEl("text", {x: W / 2, y: H / 2, "text-anchor": "middle"}, "no data yet"));
    return svg;
  }
  const times = pts.map(p => Date.parse(p.t));
  const t0 = Math.min(...times), t1 = Math.max(...times);
  const x = t => pts.length === 1 ? (L + W - R) / 2 : L + (t - t0) / (t1 - t0) * (W - L - R);
  const y = v => T + (1 - Math.max(0, Math.min(1, v))) * (H - T - B);
  const d = pts.map((p, i) => `${i ? "L" : "M"}${x(times[i]).toFixed(1)},${y(p.v).toFixed(1)}`).join(" ");
  svg.appendChild(svgEl("path", {d, class: "chart-line"}));
  pts.forEach((p, i) => {
    const dot = svgEl("circle", {cx: x(times[i]), cy: y(p.v), r: 3.5, class: "chart-dot"});
    dot.appendChild(svgEl("title", {}, `${p.t}: ${(p.v * 100).toFixed(1)}%${p.n !== undefined ? " (n=" + p.n + ")" : ""}`));
    svg.appendChild(dot);
  });
  const fmt = t => new Date(t).toISOString().slice(5, 16).replace("T", " ");
  svg.appendChild(svgEl("text", {x: L, y: H - 12, "text-anchor": "start"}, fmt(t0)));
  if (t1 !== t0) svg.appendChild(svgEl("text", {x: W - R, y: H - 12, "text-anchor": "end"}, fmt(t1)));
  return svg;
}

function barChart(items, opts) {
  // items: [{label, value}]
  const W = 420, row = 26, L = 110, R = 40, H = Math.max(60, items.length * row + 16);
  const svg = svgEl("svg", {viewBox: `0 0 ${W} ${H}`, width: "100%", role: "img", "aria-label": opts.label,
                            class: "chart tone-" + (opts.tone || "accent")});
  const top = Math.max(1, ...items.map(i => i.value));
  items.forEach((item, i) => {
    const y = 8 + i * row;
    const w = (W - L - R) * item.value / top;
    svg.appendChild(svgEl("text", {x: L - 8, y: y + 15, "text-anchor": "end"}, item.label));
    svg.appendChild(svgEl("rect", {x: L, y: y + 3, width: Math.max(w, 1), height: 16, rx: 3, class: "chart-bar"}));
    svg.appendChild(svgEl("text", {x: L + w + 6, y: y + 15}, String(item.value)));
  });
  return svg;
}

function sparkline(values, current, label) {
  // values: one per run (null where the run lacks the metric), scaled to their own min..max; the
  // current run's point is marked
  const W = 72, H = 22, P = 3;
  const svg = svgEl("svg", {viewBox: `0 0 ${W} ${H}`, width: W, height: H, class: "spark", role: "img",
                            "aria-label": `${label} over ${values.length} run(s)`});
  const known = values.map((v, i) => [i, v]).filter(([, v]) => v !== null && v !== undefined);
  if (!known.length) return svg;
  const lo = Math.min(...known.map(([, v]) => v)), hi = Math.max(...known.map(([, v]) => v));
  const x = i => values.length === 1 ? W / 2 : P + i / (values.length - 1) * (W - 2 * P);
  const y = v => hi === lo ? H / 2 : H - P - (v - lo) / (hi - lo) * (H - 2 * P);
  if (known.length > 1) {
    const d = known.map(([i, v], n) => `${n ? "L" : "M"}${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(" ");
    svg.appendChild(svgEl("path", {d, class: "spark-line"}));
  }
  const at = known.find(([i]) => i === current) || known[known.length - 1];
  const dot = svgEl("circle", {cx: x(at[0]), cy: y(at[1]), r: 2.5, class: "spark-dot"});
  dot.appendChild(svgEl("title", {}, `this run: ${at[1]} (range ${lo}–${hi})`));
  svg.appendChild(dot);
  return svg;
}

window.hopragCharts = {lineChart, barChart, sparkline};
