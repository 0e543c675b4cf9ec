// SPDX-License-Identifier: MIT
// A small SVG line chart: series of [time ms, value] over a fixed time window, each scaled to
// the chart's height by the largest value shown, with its name and latest value as a legend.
const NS = "http://www.w3.org/2000/svg";
const W = 600;
const H = 140;
const PAD = 4;

function svgEl(tag, attrs) {
  const e = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  return e;
}

// series: [{name, unit, cls, points: [[t, v], ...]}]; windowMs: the span shown up to now.
export function drawChart(container, series, windowMs, now = Date.now()) {
  const svg = svgEl("svg", { viewBox: `0 0 ${W} ${H}`, class: "chart", role: "img" });
  const labels = [];
  for (const s of series) {
    const pts = s.points.filter(([t]) => t >= now - windowMs);
    const max = Math.max(1e-9, ...pts.map(([, v]) => v));
    const xy = pts.map(([t, v]) => {
      const x = PAD + ((t - (now - windowMs)) / windowMs) * (W - 2 * PAD);
      const y = H - PAD - (v / max) * (H - 2 * PAD);
      return `${x.toFixed(1)},${y.toFixed(1)}`;
    });
    if (xy.length > 1) svg.append(svgEl("polyline", { points: xy.join(" "), class: s.cls }));
    const last = pts.length ? pts[pts.length - 1][1] : null;
    labels.push({ s, last, max: pts.length ? max : null });
  }
  svg.append(svgEl("line", { x1: 0, y1: H - PAD, x2: W, y2: H - PAD, class: "axis" }));
  const legend = document.createElement("ul");
  legend.className = "legend";
  for (const { s, last, max } of labels) {
    const li = document.createElement("li");
    li.className = s.cls;
    const fmt = (v) => (v === null ? "—" : `${v < 10 ? v.toFixed(2) : v.toFixed(0)} ${s.unit}`);
    li.textContent = `${s.name}: ${fmt(last)} (max ${fmt(max)})`;
    legend.append(li);
  }
  svg.setAttribute("aria-label", labels.map(({ s }) => s.name).join(", "));
  container.replaceChildren(svg, legend);
}
