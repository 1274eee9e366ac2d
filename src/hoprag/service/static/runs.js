// The run browser: the list of runs, and a run's page, which opens on the seven stages as tiles
// coloured by their gate verdict (block, warn, pass; grey: metrics only or none), each metric with its
// sparkline over the runs of the same index artifact; the full table of metrics one click below.
"use strict";
const STAGES = ["ingest", "chunk", "embed", "index", "retrieve", "generate", "feedback"];
const RANK = {block: 4, warn: 3, pass: 2, skip: 1, info: 0};
const TILE_METRICS = 4;

function stageVerdict(rows) {
  // the worst verdict of a stage's metrics; "none" when it recorded nothing
  if (!rows || !rows.length) return "none";
  return rows.reduce((worst, m) => (RANK[m.status] || 0) > (RANK[worst] || 0) ? m.status : worst, "info");
}

function verdictText(verdict, rows) {
  const count = s => rows.filter(m => m.status === s).length;
  if (verdict === "block") return `blocked · ${count("block")} failing`;
  if (verdict === "warn") return `warning · ${count("warn")}`;
  if (verdict === "pass") return `pass · ${count("pass")} checked`;
  if (verdict === "none") return "no metrics";
  return "metrics only";
}

function formatValue(v) {
  return v === null || v === undefined ? "–" : Math.abs(v) >= 1000 ? String(Math.round(v)) : (+v).toPrecision(3);
}

function tile(stage, rows, series, current) {
  const verdict = stageVerdict(rows);
  const box = el("div", {class: "tile " + verdict, role: "group", "aria-label": `${stage}: ${verdictText(verdict, rows || [])}`},
                 el("div", {class: "tile-head"}, el("h3", {}, stage), el("span", {class: "tile-verdict"}, verdictText(verdict, rows || []))));
  const ordered = [...(rows || [])].sort((a, b) => (RANK[b.status] || 0) - (RANK[a.status] || 0));
  const list = el("ul", {class: "tile-metrics"});
  for (const m of ordered.slice(0, TILE_METRICS)) {
    const values = ((series || {})[m.metric]) || [];
    list.append(el("li", {class: m.status}, el("span", {class: "tm-name", title: m.reason || m.metric}, m.metric),
                   window.hopragCharts.sparkline(values, current, m.metric),
                   el("span", {class: "tm-value"}, formatValue(m.value))));
  }
  box.append(list);
  if (ordered.length > TILE_METRICS) box.append(el("div", {class: "muted"}, `+ ${ordered.length - TILE_METRICS} more in the table`));
  return box;
}

function metricsTable(stages) {
  const wrap = el("div");
  for (const [stage, metrics] of Object.entries(stages)) {
    const table = el("table", {class: "table"}, el("tr", {}, el("th", {}, "metric"), el("th", {}, "value"),
                     el("th", {}, "status"), el("th", {}, "threshold"), el("th", {}, "reason")));
    for (const m of metrics) {
      table.append(el("tr", {}, el("td", {}, m.metric), el("td", {}, formatValue(m.value)),
                      el("td", {}, el("span", {class: "badge " + m.status}, m.status)), el("td", {}, m.threshold || ""), el("td", {}, m.reason || "")));
    }
    wrap.append(el("div", {class: "stage-block"}, el("h3", {}, stage), el("div", {class: "table-wrap"}, table)));
  }
  return wrap;
}

async function showRunList(open) {
  const tbody = $("runs-table").querySelector("tbody");
  tbody.textContent = "";
  $("runs-list").open = open;
  viewState("runs-state", "Loading runs…");
  let rows;
  try { rows = await api("/api/runs"); }
  catch (e) { viewState("runs-state", "Runs cannot be shown: " + e.message + "."); return false; }
  viewState("runs-state", rows.length ? "" : "No runs in the store yet.");
  for (const r of rows) {
    const go = () => { location.hash = "#/runs/" + encodeURIComponent(r.run_id); };
    tbody.append(el("tr", {class: "link", tabindex: "0", onclick: go, onkeydown: ev => { if (ev.key === "Enter") go(); }},
                    el("td", {}, r.run_id), el("td", {}, r.kind), el("td", {}, el("span", {class: "badge status-" + (r.status || "unknown")}, r.status || "–")),
                    el("td", {}, r.created_at.slice(0, 19).replace("T", " ")), el("td", {}, r.artifact_id || "–")));
  }
  return true;
}

async function showRuns(runId) {
  $("run-detail").classList.add("hidden");
  if (!await showRunList(!runId) || !runId) return;
  let d, series = null;
  try { d = await api("/api/runs/" + encodeURIComponent(runId)); }
  catch (e) { viewState("runs-state", "This run cannot be shown: " + e.message + "."); return; }
  try { series = await api(`/api/runs/${encodeURIComponent(runId)}/series`); } catch (e) { showError(null); }
  $("run-title").textContent = `Run ${d.run.run_id}`;
  const meta = $("run-meta");
  meta.textContent = "";
  meta.append(el("span", {class: "badge status-" + (d.run.status || "unknown")}, d.run.status || "unknown"), d.run.kind,
              el("span", {class: "run-time"}, d.run.created_at.slice(0, 19).replace("T", " ")),
              d.run.artifact_id ? el("span", {class: "run-artifact"}, `index ${d.run.artifact_id}`) : "");
  const gate = $("run-gate");
  gate.textContent = "";
  if (d.gate) {
    gate.append(el("span", {class: "badge " + (d.gate.blocked ? "block" : "pass")}, d.gate.blocked ? "BLOCKED" : "passed"),
                `${d.gate.blocking_failures} blocking failure(s), ${d.gate.warnings} warning(s)`);
  } else gate.append(el("span", {class: "muted"}, d.thresholds_loaded ? "no metrics recorded for this run" : "no thresholds loaded: metrics only"));
  if (d.has_report) gate.append(" · ", el("a", {href: `/api/runs/${encodeURIComponent(runId)}/report`, target: "_blank"}, "evaluation report"));
  const current = series ? series.runs.findIndex(r => r.run_id === d.run.run_id) : -1;
  if (series && series.runs.length > 1) $("run-series-note").textContent = `sparklines: the last ${series.runs.length} runs of this index`;
  else $("run-series-note").textContent = "";
  const tiles = $("run-tiles");
  tiles.textContent = "";
  for (const stage of [...STAGES, ...Object.keys(d.stages).filter(s => !STAGES.includes(s))]) {
    tiles.append(tile(stage, d.stages[stage], series && series.stages[stage], current));
  }
  const count = Object.values(d.stages).reduce((n, rows) => n + rows.length, 0);
  $("run-table-summary").textContent = `All ${count} metrics with thresholds and reasons`;
  $("run-table").classList.toggle("hidden", !count);
  $("run-stages").replaceChildren(metricsTable(d.stages));
  $("run-detail").classList.remove("hidden");
}
