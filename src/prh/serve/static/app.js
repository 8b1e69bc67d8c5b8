// prh serve page: upload or generate an image, show its caption and nearest captions.
// Plain JavaScript, no libraries, same-origin requests only.
"use strict";

const $ = (id) => document.getElementById(id);
const MAX_BYTES = 10 * 1024 * 1024;
let busy = false;
let previewUrl = null;

function showError(message) {
  const el = $("error");
  el.textContent = message;
  el.hidden = !message;
}

function setBusy(on) {
  busy = on;
  $("random").disabled = on;
  $("file").disabled = on;
  if (on) {
    $("caption").textContent = "Captioning\u2026";
    $("caption").className = "caption busy";
  }
}

function showPreview(blob) {
  if (previewUrl) URL.revokeObjectURL(previewUrl);
  previewUrl = URL.createObjectURL(blob);
  $("preview").src = previewUrl;
  $("preview").hidden = false;
  $("drop-hint").hidden = true;
}

function fmt(x, digits) {
  return x === null || x === undefined || Number.isNaN(x) ? "\u2014" : Number(x).toFixed(digits);
}

function showResult(r) {
  $("caption").textContent = r.caption;
  $("caption").className = "caption";
  $("meta").textContent = `${fmt(r.seconds * 1000, 0)} ms in the model` +
    (r.size ? ` \u00b7 image ${r.size[0]}\u00d7${r.size[1]} px` : "");
  const list = $("nearest");
  list.replaceChildren();
  const top = Math.max(...r.nearest.map((n) => Math.abs(n.score ?? 0)), 1e-9);
  for (const n of r.nearest) {
    const li = document.createElement("li");
    const text = document.createElement("span");
    text.className = "near-caption";
    text.textContent = n.caption;
    const score = document.createElement("span");
    score.className = "score";
    score.textContent = fmt(n.score, 3);
    const bar = document.createElement("span");
    bar.className = "bar";
    const fill = document.createElement("span");
    fill.style.width = `${Math.max(0, Math.min(1, (n.score ?? 0) / top)) * 100}%`;
    bar.append(fill);
    li.append(text, score, bar);
    list.append(li);
  }
}

async function caption(blob, name) {
  if (busy) return;
  showError("");
  if (blob.size > MAX_BYTES) {
    showError(`That file is ${(blob.size / 1048576).toFixed(1)} MB; the limit is 10 MB.`);
    return;
  }
  showPreview(blob);
  setBusy(true);
  try {
    const form = new FormData();
    form.append("image", blob, name || "image");
    const res = await fetch("/api/caption", { method: "POST", body: form });
    const body = await res.json().catch(() => ({ error: `HTTP ${res.status}` }));
    if (!res.ok) throw new Error(body.error || `HTTP ${res.status}`);
    showResult(body);
  } catch (e) {
    $("caption").textContent = "No caption.";
    $("caption").className = "caption muted";
    $("nearest").replaceChildren();
    showError(String(e.message || e));
  } finally {
    setBusy(false);
  }
}

async function randomScene() {
  if (busy) return;
  const seed = Math.floor(Math.random() * 2147483647);
  showError("");
  $("reference").hidden = true;
  try {
    const res = await fetch(`/api/scene?seed=${seed}`);
    if (!res.ok) {
      const body = await res.json().catch(() => ({}));
      throw new Error(body.error || `HTTP ${res.status}`);
    }
    const blob = await res.blob();
    fetch(`/api/scene/info?seed=${seed}`).then((r) => (r.ok ? r.json() : null)).then((info) => {
      if (info && info.captions && info.captions.length) {
        $("reference").textContent = `Scene ${info.scene}, described by the world as: \u201c${info.captions[0]}\u201d`;
        $("reference").hidden = false;
      }
    }).catch(() => {});
    await caption(blob, `scene-${seed}.png`);
  } catch (e) {
    showError(String(e.message || e));
  }
}

function renderAlignment(alignment) {
  const body = $("alignment").tBodies[0];
  if (!alignment || !Object.keys(alignment).length) return;
  body.replaceChildren();
  for (const [name, value] of Object.entries(alignment)) {
    const tr = document.createElement("tr");
    const k = document.createElement("td");
    k.textContent = name;
    const v = document.createElement("td");
    v.className = "num";
    let score = value;
    let extra = "";
    if (value && typeof value === "object") {
      score = value.score ?? value.mean ?? null;
      if (Array.isArray(value.ci) && value.ci.length === 2) extra = ` [${fmt(value.ci[0], 3)}, ${fmt(value.ci[1], 3)}]`;
    }
    v.textContent = typeof score === "number" ? fmt(score, 3) + extra : JSON.stringify(value);
    tr.append(k, v);
    body.append(tr);
  }
}

async function loadRun() {
  try {
    const run = await (await fetch("/api/run")).json();
    if (run.run) $("run-name").textContent = `(${run.run})`;
    renderAlignment(run.alignment);
    if (run.plots && run.plots.length) {
      const name = run.plots[0];
      $("plot").src = `/api/plots/${encodeURIComponent(name)}`;
      $("plot-caption").textContent = name;
      $("plot-figure").hidden = false;
    }
  } catch (e) { /* the page still captions without run numbers */ }
  try {
    const h = await (await fetch("/api/health")).json();
    $("health").textContent = `Captioner: ${h.captioner}.`;
  } catch (e) { /* ignore */ }
}

function setup() {
  const drop = $("drop");
  $("file").addEventListener("change", (ev) => {
    const f = ev.target.files[0];
    if (f) caption(f, f.name);
    ev.target.value = "";
  });
  $("random").addEventListener("click", randomScene);
  drop.addEventListener("click", () => $("file").click());
  drop.addEventListener("keydown", (ev) => { if (ev.key === "Enter" || ev.key === " ") $("file").click(); });
  for (const t of ["dragenter", "dragover"]) {
    drop.addEventListener(t, (ev) => { ev.preventDefault(); drop.classList.add("over"); });
  }
  for (const t of ["dragleave", "drop"]) {
    drop.addEventListener(t, () => drop.classList.remove("over"));
  }
  drop.addEventListener("drop", (ev) => {
    ev.preventDefault();
    const f = ev.dataTransfer.files[0];
    if (f) caption(f, f.name);
  });
  loadRun();
}

document.addEventListener("DOMContentLoaded", setup);
