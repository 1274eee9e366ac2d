// What every view of the page uses: element helpers, the API call with its error states, the token header.
// Every text from the server is set with textContent (never as HTML).
"use strict";
const $ = id => document.getElementById(id);
// the token lives in this tab only (sessionStorage): closing the tab or "Sign out" forgets it
const TOKEN_KEY = "hoprag-token";
const OFFLINE = {error: "the server cannot be reached", fix: "check that hoprag serve is still running, then try again"};

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v; else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
}

function headers(json) {
  const h = {};
  const token = $("token").value.trim();
  if (token) h["Authorization"] = "Bearer " + token;
  if (json) h["Content-Type"] = "application/json";
  return h;
}

function showError(body) {
  const box = $("error");
  if (!body) { box.classList.add("hidden"); return; }
  box.textContent = body.error + (body.fix ? " — " + body.fix : "");
  box.classList.remove("hidden");
}

async function api(path, options) {
  let resp;
  try { resp = await fetch(path, options || {headers: headers(false)}); }
  catch (e) { showError(OFFLINE); $("whoami").textContent = "offline"; throw new Error(OFFLINE.error); }
  if ($("whoami").textContent === "offline" && typeof refreshWho === "function") refreshWho();  // back again
  let body = null;
  try { body = await resp.json(); } catch (e) { body = {error: "HTTP " + resp.status, fix: ""}; }
  if (!resp.ok) { showError(body); throw new Error(body.error); }
  return body;
}

function viewState(id, text) {
  // a view's loading, empty or error line
  const box = $(id);
  box.textContent = text || "";
  box.classList.toggle("hidden", !text);
}

function fmtMs(ms) {
  return ms < 10 ? ms.toFixed(1) + " ms" : ms < 10000 ? Math.round(ms) + " ms" : (ms / 1000).toFixed(1) + " s";
}
