// The hoprag page: ask with live hop progress and a streamed answer, open citations, give feedback,
// the feedback dashboard, and the routes between the views. Helpers: core.js; the evidence trail:
// trail.js; the run browser: runs.js; charts: charts.js. Every text from the server is set with textContent.
"use strict";
const TAGS = {
  wrong_document: ["Wrong document retrieved", "retrieve"],
  right_document_wrong_answer: ["Right document, wrong answer", "generate"],
  missing_citation: ["Missing citation", "generate"],
  stale_content: ["Stale content", "ingest"],
  unnecessary_refusal: ["Unnecessary refusal", "generate"],
};
let me = null;          // GET /api/whoami
let current = null;     // the final answer of the last question
let thumbs = null;
const hopLines = new Map();  // hop number -> its progress line's counters

async function refreshWho() {
  me = null;
  const token = $("token").value.trim();
  let resp = null;
  try { resp = await fetch("/api/whoami", {headers: headers(false)}); } catch (e) { /* offline: below */ }
  const signedIn = resp && resp.ok;
  if (signedIn) me = await resp.json();
  if (!resp) $("whoami").textContent = "offline";
  else if (signedIn) $("whoami").textContent = `${me.name} · ${me.clearance}` + (me.can_write ? "" : " · read-only");
  else $("whoami").textContent = token ? "token refused" : "sign in with a token";
  const tokens = !signedIn || me.tokens_required;
  $("token").classList.toggle("hidden", !tokens || (signedIn && !!token));
  $("sign-out").classList.toggle("hidden", !(signedIn && token));
  if (!resp) showError(OFFLINE);
  else if (!signedIn) showError(await resp.json().catch(() => ({error: "HTTP " + resp.status, fix: ""})));
}

function signOut() {
  sessionStorage.removeItem(TOKEN_KEY);
  $("token").value = "";
  refreshWho().then(route);
}

// ---- ask ---------------------------------------------------------------------------------------

function progress(text, cls) {
  const list = $("progress");
  for (const li of list.querySelectorAll("li.running")) li.classList.remove("running");
  const li = el("li", {class: (cls || "") + " running"}, text);
  list.append(li);
  return li;
}

function onEvent(name, data) {
  if (name === "planning") progress("Planning the hops…");
  else if (name === "plan") {
    const subs = data.sub_queries.map(s => s.query).join(" | ");
    progress(`Plan (${data.planner || "planner"}): ${data.sub_queries.length} sub-quer${data.sub_queries.length === 1 ? "y" : "ies"} — ${subs}`, "ev-plan");
  } else if (name === "hop") {
    const li = progress(`Hop ${data.hop} · searching: ${data.queries.length > 140 ? data.queries.slice(0, 140) + "…" : data.queries}`, "ev-hop");
    const detail = el("span", {class: "ev-hits"});
    li.append(detail);
    hopLines.set(data.hop, {queries: 0, hits: 0, top: [], detail});
  }
  else if (name === "hits") {
    // hits fold into their hop's line: how many queries and hits so far, and the best titles
    const line = hopLines.get(data.hop);
    if (line) {
      line.queries += 1; line.hits += data.total;
      for (const h of data.hits.slice(0, 2)) if (line.top.length < 3 && !line.top.includes(h.title || h.doc_id)) line.top.push(h.title || h.doc_id);
      line.detail.textContent = ` — ${line.queries} quer${line.queries === 1 ? "y" : "ies"}, ${line.hits} hits` + (line.top.length ? `; top: ${line.top.join("; ")}` : "");
    }
  } else if (name === "judge") progress(`Judge: ${data.sufficient ? "evidence suffices" : "not yet sufficient"} (${data.held} passages held)`, "ev-judge");
  else if (name === "synthesising") {
    progress("Synthesising the answer…", "ev-synth");
    $("answer").classList.remove("hidden");
  } else if (name === "token") {
    $("answer").classList.remove("hidden");
    $("answer-text").textContent += data.text;
  } else if (name === "answer") {
    for (const li of $("progress").querySelectorAll("li.running")) li.classList.remove("running");
    renderAnswer(data);
  } else if (name === "error") { showError(data); progress("Stopped: " + data.error, "ev-error"); }
}

function resetFeedback() {
  // each answer starts with a clean form: no thumb, tag or comment carries over from the last one
  thumbs = null;
  for (const id of ["thumbs-up", "thumbs-down"]) { $(id).classList.remove("chosen"); $(id).setAttribute("aria-pressed", "false"); }
  for (const box of document.querySelectorAll("#tags input")) box.checked = false;
  $("comment").value = "";
  $("feedback-status").textContent = "";
  $("send-feedback").disabled = false;
}

async function ask(question) {
  showError(null);
  current = null;
  resetFeedback();
  $("progress").textContent = "";
  hopLines.clear();
  $("answer-text").textContent = "";
  $("claims").textContent = "";
  $("answer-meta").textContent = "";
  $("feedback-status").textContent = "";
  $("answer").classList.add("hidden");
  $("trail").classList.add("hidden");
  $("doc").classList.add("hidden");
  const store = me ? me.can_write : false;
  $("ask-button").disabled = true;
  try {
    // POST: a GET never stores; the server takes a write from its own page (same origin) or a token
    const resp = await fetch("/api/ask/stream", {method: "POST", headers: headers(true),
                                                 body: JSON.stringify({question, store})});
    if (!resp.ok) { showError(await resp.json()); return; }
    const reader = resp.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const {value, done} = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, {stream: true});
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const raw = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        let name = "message", data = "";
        for (const line of raw.split("\n")) {
          if (line.startsWith("event:")) name = line.slice(6).trim();
          else if (line.startsWith("data:")) data += line.slice(5).trim();
        }
        if (data) onEvent(name, JSON.parse(data));
      }
    }
  } catch (e) {
    showError(OFFLINE);
    progress("Stopped: the server cannot be reached", "ev-error");
  } finally {
    $("ask-button").disabled = false;
  }
}

function citeButton(c) {
  return el("button", {type: "button", class: "cite", "data-chunk": c.chunk_id, title: `${c.title || c.doc_id} (hop ${c.hop})`,
                       onclick: () => openCitation(c)}, String(c.marker));
}

function renderAnswer(a) {
  current = a;
  $("answer").classList.remove("hidden");
  const meta = $("answer-meta");
  meta.textContent = "";
  if (a.abstained) meta.append(el("span", {class: "badge abstained"}, "abstained"));
  if (a.partial) meta.append(el("span", {class: "badge partial"}, "partial chain"));
  meta.append(el("span", {class: "badge"}, `confidence ${a.confidence.toFixed(2)}`),
              el("span", {class: "badge"}, `stop: ${a.stop_reason}`),
              el("span", {class: "badge"}, `${a.latency_ms.toFixed(0)} ms`));
  const text = $("answer-text");
  text.textContent = a.abstained ? "No answer: the documents you may see do not support one." : a.answer;
  for (const c of a.citations) text.append(citeButton(c));
  const claims = $("claims");
  claims.textContent = "";
  for (const claim of a.claims) claims.append(el("li", {}, claim.text, ...claim.citations.map(citeButton)));
  $("feedback").classList.toggle("hidden", !a.stored);
  renderTrail(a);
}

async function openCitation(c) {
  for (const b of document.querySelectorAll(".cite.active")) b.classList.remove("active");
  for (const b of document.querySelectorAll(`.cite[data-chunk="${CSS.escape(c.chunk_id)}"]`)) b.classList.add("active");
  // the claim's own sentence when it is a span of the passage, else the whole passage
  const [a0, b0] = c.sentence_start !== null && c.sentence_start !== undefined ? [c.sentence_start, c.sentence_end] : [c.start, c.end];
  const span = a0 !== null && b0 !== null ? `?span=${a0}:${b0}` : "";
  let doc;
  try { doc = await api(`/api/documents/${encodeURIComponent(c.doc_id)}${span}`); } catch (e) { return; }
  $("doc-title").textContent = doc.title || doc.id;
  $("doc-meta").textContent = [doc.id, doc.doc_type, doc.acl, doc.version].filter(Boolean).join(" · ");
  const text = $("doc-text");
  text.textContent = "";
  if (doc.span) {
    const [a, b] = doc.span;
    text.append(doc.text.slice(0, a), el("mark", {id: "cited-span"}, doc.text.slice(a, b)), doc.text.slice(b));
  } else text.append(doc.text);
  const panel = $("doc");
  panel.classList.remove("hidden");
  $("doc-close").focus({preventScroll: true});
  const mark = $("cited-span");
  // scroll the panel (not the page) to the span; bring the panel into view if it is off screen
  if (mark) panel.scrollTop = Math.max(0, mark.offsetTop - panel.offsetTop - panel.clientHeight / 3);
  if (panel.getBoundingClientRect().top > window.innerHeight || panel.getBoundingClientRect().bottom < 0) panel.scrollIntoView({block: "start"});
  if (current && current.stored) {
    fetch("/api/click", {method: "POST", headers: headers(true),
                         body: JSON.stringify({trace_id: current.trace_id, citation: c.chunk_id})}).catch(() => {});
  }
}

async function sendFeedback() {
  if (!current) return;
  if (!thumbs && !document.querySelector("#tags input:checked") && !$("comment").value.trim()) {
    $("feedback-status").textContent = "Choose Yes or No, a tag, or write a comment first.";
    return;
  }
  const tags = [...document.querySelectorAll("#tags input:checked")].map(i => i.value);
  const comment = $("comment").value.trim();
  const body = {trace_id: current.trace_id, tags};
  if (thumbs) body.thumbs = thumbs;
  if (comment) body.comment = comment;
  try {
    const r = await api("/api/feedback", {method: "POST", headers: headers(true), body: JSON.stringify(body)});
    $("feedback-status").textContent = `Thanks — recorded under run ${r.run_id}` + (r.stages.length ? ` (routed to: ${r.stages.join(", ")})` : "");
    $("send-feedback").disabled = true;  // one feedback per answer: the next answer opens a fresh form
  } catch (e) { $("feedback-status").textContent = "Not sent: " + e.message + "."; }
}

function setupFeedback() {
  const box = $("tags");
  for (const [tag, [label, stage]] of Object.entries(TAGS)) {
    box.append(el("label", {}, el("input", {type: "checkbox", value: tag, name: "tag"}), ` ${label} `,
                  el("span", {class: "stage"}, `→ ${stage}`)));
  }
  for (const [id, value] of [["thumbs-up", "up"], ["thumbs-down", "down"]]) {
    $(id).addEventListener("click", () => {
      thumbs = value;
      for (const [other, v] of [["thumbs-up", "up"], ["thumbs-down", "down"]]) {
        $(other).classList.toggle("chosen", value === v);
        $(other).setAttribute("aria-pressed", String(value === v));
      }
    });
  }
  $("send-feedback").addEventListener("click", sendFeedback);
}

// ---- dashboard and routes ----------------------------------------------------------------------

async function showDashboard() {
  const run = me ? me.feedback_run : "";
  let s;
  viewState("dash-state", "Loading feedback…");
  try { s = await api("/api/feedback/summary" + (run ? "?run_id=" + encodeURIComponent(run) : "")); }
  catch (e) { viewState("dash-state", "The dashboard cannot be shown: " + e.message + "."); $("dash-empty").classList.add("hidden"); return; }
  viewState("dash-state", "");
  $("dash-run").textContent = `run ${s.run_id} · ${s.events} events`;
  const {lineChart, barChart} = window.hopragCharts;
  $("chart-down").replaceChildren(lineChart(s.series.map(p => ({t: p.t, v: p.thumbs_down_rate, n: p.thumbs})),
                                            {label: "thumbs-down rate", tone: "block"}));
  $("chart-tags").replaceChildren(barChart(Object.entries(s.tags_by_stage).map(([label, value]) => ({label, value})),
                                           {label: "tags by stage"}));
  $("chart-ctr").replaceChildren(lineChart(s.series.map(p => ({t: p.t, v: p.citation_ctr, n: p.citations_shown})),
                                           {label: "citation CTR", tone: "ok"}));
  $("dash-empty").classList.toggle("hidden", s.events > 0);
}

function route() {
  showError(null);
  const hash = location.hash || "#/";
  const [, view, arg] = hash.split("/");
  const name = view === "runs" ? "runs" : view === "feedback" ? "feedback" : "ask";
  for (const v of ["ask", "runs", "feedback"]) {
    $("view-" + v).classList.toggle("hidden", v !== name);
    $("nav-" + v).classList.toggle("active", v === name);
  }
  if (name === "runs") showRuns(arg ? decodeURIComponent(arg) : null).catch(() => {});
  if (name === "feedback") showDashboard().catch(() => {});
}

document.addEventListener("DOMContentLoaded", () => {
  localStorage.removeItem(TOKEN_KEY);  // an older page kept it for every tab: forget it
  $("token").value = sessionStorage.getItem(TOKEN_KEY) || "";
  $("token").addEventListener("change", () => { sessionStorage.setItem(TOKEN_KEY, $("token").value.trim()); refreshWho().then(route); });
  $("sign-out").addEventListener("click", signOut);
  $("ask-form").addEventListener("submit", ev => {
    ev.preventDefault();
    const q = $("question").value.trim();
    if (q) ask(q);
    else { showError({error: "the question is empty", fix: "type a question, then press Ask"}); $("question").focus(); }
  });
  const closeDoc = () => {
    $("doc").classList.add("hidden");
    const active = document.querySelector(".cite.active");
    if (active) active.focus({preventScroll: true});
  };
  $("doc-close").addEventListener("click", closeDoc);
  document.addEventListener("keydown", ev => { if (ev.key === "Escape" && !$("doc").classList.contains("hidden")) closeDoc(); });
  window.addEventListener("offline", () => showError(OFFLINE));
  window.addEventListener("online", () => { showError(null); refreshWho(); });
  setupFeedback();
  window.addEventListener("hashchange", route);
  refreshWho().then(route);
});
