// The evidence trail as a trace view: a row per phase and per hop on one time axis (a waterfall of
// planning, each hop's retrieval, graph walk and judge, then ranking and synthesis), and under each hop
// what it searched: the sub-query with its conditioning terms apart, the hits, each passage marked
// "kept" once (by the step that first held it).
"use strict";
const SVG = "http://www.w3.org/2000/svg";
const PHASE_LABELS = {planning: "planning", retrieval: "retrieval", graph: "graph walk", judge: "judge",
                      ranking: "ranking", synthesis: "synthesis"};

function traceRows(a) {
  // [{label, start, segments: [[phase, ms]], hop}] from the answer's timings (older traces: from the steps)
  const t = a.timings || {};
  const rows = [];
  if (t.planning_ms) rows.push({label: "Plan", start: 0, segments: [["planning", t.planning_ms]]});
  const hops = [...new Set(a.steps.map(s => s.hop))];
  for (const hop of hops) {
    const steps = a.steps.filter(s => s.hop === hop);
    const key = p => t[`hop${hop}.${p}`];
    let start, segments;
    if (key("start_ms") !== undefined) {
      start = key("start_ms");
      segments = ["retrieval", "graph", "judge"].filter(p => key(p + "_ms")).map(p => [p, key(p + "_ms")]);
    } else {  // no per-hop timings recorded: the steps' own windows
      start = Math.min(...steps.map(s => (s.cumulative_ms || 0) - (s.latency_ms || 0)));
      const end = Math.max(...steps.map(s => s.cumulative_ms || 0));
      segments = [["retrieval", Math.max(0, end - start)]];
    }
    rows.push({label: `Hop ${hop}`, start, segments, hop, steps});
  }
  if (t.synthesis_ms !== undefined) {
    const start = (t.planning_ms || 0) + (t.retrieval_ms || 0);
    rows.push({label: "Answer", start, segments: [["ranking", t.ranking_ms || 0], ["synthesis", t.synthesis_ms]]});
  }
  return rows;
}

function waterfall(row, total) {
  // one bar track: each phase a rect placed on the trace's time axis
  const svg = document.createElementNS(SVG, "svg");
  for (const [k, v] of Object.entries({viewBox: "0 0 1000 16", preserveAspectRatio: "none", class: "wf",
                                       role: "img", "aria-label": row.label + " timing"})) svg.setAttribute(k, v);
  let x = row.start;
  for (const [phase, ms] of row.segments) {
    const rect = document.createElementNS(SVG, "rect");
    const attrs = {x: (x / total * 1000).toFixed(2), y: 2, height: 12, class: "wf-" + phase,
                   width: Math.max(2, ms / total * 1000).toFixed(2)};
    for (const [k, v] of Object.entries(attrs)) rect.setAttribute(k, v);
    const title = document.createElementNS(SVG, "title");
    title.textContent = `${PHASE_LABELS[phase]}: ${fmtMs(ms)}`;
    rect.append(title);
    svg.append(rect);
    x += ms;
  }
  return svg;
}

function rowHead(row, total) {
  const ms = row.segments.reduce((sum, [, v]) => sum + v, 0);
  const parts = row.segments.map(([p, v]) => `${PHASE_LABELS[p]} ${fmtMs(v)}`).join(" · ");
  return [el("span", {class: "tr-label"}, row.label), el("span", {class: "tr-bar"}, waterfall(row, total)),
          el("span", {class: "tr-ms", title: parts}, fmtMs(ms))];
}

function hitItem(s, h) {
  const cls = s.kept.includes(h.chunk_id) ? "kept" : s.duplicates.includes(h.chunk_id) ? "dup" : "";
  return el("li", {class: cls, "data-chunk": h.chunk_id}, `${h.title || h.doc_id}  (${h.score})`);
}

function stepLine(s, question) {
  // a search of the question itself (conditioned on a bridge) says so rather than repeat it
  const query = s.query === question && s.conditioning.length ? el("span", {class: "q-question"}, "the question")
    : el("span", {class: "q"}, s.query);
  const head = el("div", {class: "step-head"}, el("span", {class: "step-kind " + s.kind}, s.kind === "graph" ? "graph" : s.step_id),
                  query);
  if (s.conditioning.length) {
    head.append(el("span", {class: "cond-label"}, s.kind === "graph" ? "seeds" : "conditioned on"),
                ...s.conditioning.map(c => el("span", {class: "chip"}, c)));
    if (s.bridge && s.bridge.kind) head.append(el("span", {class: "muted"}, `(${s.bridge.kind})`));
  }
  const step = el("div", {class: "step"}, head);
  const top = el("ol");
  const more = el("ol", {start: "4"});
  s.hits.slice(0, 10).forEach((h, i) => (i < 3 ? top : more).append(hitItem(s, h)));
  step.append(top);
  if (more.childNodes.length) step.append(el("details", {}, el("summary", {}, `${more.childNodes.length} more hits`), more));
  if (s.issued_query && s.issued_query !== s.query) step.title = "issued: " + s.issued_query;
  return step;
}

function hopBody(row, question) {
  // the steps that kept a passage first; those that kept none folded away
  const body = el("div", {class: "hop-steps"});
  const keeping = row.steps.filter(s => s.kept.length);
  const idle = row.steps.filter(s => !s.kept.length);
  for (const s of keeping) body.append(stepLine(s, question));
  if (idle.length) {
    const fold = el("details", {class: "idle"}, el("summary", {}, `${idle.length} more search${idle.length === 1 ? "" : "es"} kept nothing new`));
    for (const s of idle) fold.append(stepLine(s, question));
    body.append(fold);
  }
  return body;
}

function renderTrail(a) {
  const body = $("trail-body");
  body.textContent = "";
  const rows = traceRows(a);
  const total = Math.max(a.latency_ms || 0, ...rows.map(r => r.start + r.segments.reduce((s, [, v]) => s + v, 0)), 0.001);
  const legend = el("div", {class: "wf-legend muted"});
  for (const p of ["planning", "retrieval", "graph", "judge", "ranking", "synthesis"]) {
    legend.append(el("span", {class: "key key-" + p}), PHASE_LABELS[p] + " ");
  }
  body.append(legend, el("div", {class: "tr-row tr-axis muted"}, el("span", {class: "tr-label"}, ""),
                         el("span", {class: "tr-bar axis"}, el("span", {}, "0"), el("span", {}, fmtMs(total))),
                         el("span", {class: "tr-ms"}, "")));
  for (const row of rows) {
    if (!row.steps) { body.append(el("div", {class: "tr-row"}, ...rowHead(row, total))); continue; }
    const kept = row.steps.reduce((n, s) => n + s.kept.length, 0);
    const summary = el("summary", {class: "tr-row"}, ...rowHead(row, total));
    const note = el("div", {class: "hop-note muted"},
                    `${row.steps.length} search${row.steps.length === 1 ? "" : "es"} · ${kept} passage${kept === 1 ? "" : "s"} kept`);
    body.append(el("details", {class: "hop", open: ""}, summary, note, hopBody(row, a.question)));
  }
  $("trail").classList.toggle("hidden", !a.steps.length);
}
