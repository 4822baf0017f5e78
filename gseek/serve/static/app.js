// The gseek serve page: a BLAST form, then per query an overview of its HSPs, a sortable hit table
// and the pairwise alignment of the chosen HSP. No external assets; talks to /api/v1 only.
"use strict";

const $ = (id) => document.getElementById(id);
const SVG = "http://www.w3.org/2000/svg";
const COLUMNS = [  // [field, heading, numeric]
  ["saccver", "Subject", false], ["pident", "% identity", true], ["length", "Length", true],
  ["mismatch", "Mismatches", true], ["gapopen", "Gap opens", true], ["qstart", "Q. start", true],
  ["qend", "Q. end", true], ["sstart", "S. start", true], ["send", "S. end", true],
  ["evalue", "E-value", true], ["bitscore", "Bit score", true],
];
let lastRequest = null;

function token() { return $("token").value.trim(); }

function headers() {
  const h = { "Content-Type": "application/json" };
  if (token()) h.Authorization = "Bearer " + token();
  return h;
}

async function call(path, body) {
  const resp = await fetch(path, body ? { method: "POST", headers: headers(), body: JSON.stringify(body) }
                                      : { headers: headers() });
  if (!resp.ok) {
    let message = resp.status + " " + resp.statusText;
    try { message = (await resp.json()).error; } catch (e) { /* not JSON */ }
    throw new Error(message);
  }
  return resp;
}

function status(text, error) {
  const s = $("status");
  s.textContent = text;
  s.className = error ? "error" : "";
}

async function loadDatabases() {
  try {
    const data = await (await call("api/v1/databases")).json();
    const select = $("database");
    select.replaceChildren();
    for (const db of data.databases) {
      const o = document.createElement("option");
      o.value = db.name;
      o.textContent = `${db.name} (${db.sequences.toLocaleString()} sequences, ${db.bases.toLocaleString()} bp)`;
      select.append(o);
    }
    status("");
  } catch (e) {
    status("Databases: " + e.message + (token() ? "" : " (a token may be needed)"), true);
  }
}

function options() {
  const o = { evalue: Number($("evalue").value), max_target_seqs: Number($("max_target_seqs").value),
              strand: $("strand").value };
  if ($("word_size").value) o.word_size = Number($("word_size").value);
  if (!$("dust").checked) o.dust = null;
  return o;
}

function request(format) {
  return { database: $("database").value, task: $("task").value, format: format,
           queries: [{ name: "queries", text: $("queries").value }], options: options(),
           command: "gseek serve (web page)" };
}

async function search(event) {
  event.preventDefault();
  const button = $("submit");
  button.disabled = true;
  status("Searching…");
  const started = performance.now();
  try {
    lastRequest = request("json");
    const data = await (await call("api/v1/search", lastRequest)).json();
    render(data);
    const hsps = data.queries.reduce((n, q) => n + q.hits.length, 0);
    status(`${data.queries.length} queries, ${hsps} HSPs in ${((performance.now() - started) / 1000).toFixed(2)} s`);
    $("downloads").hidden = false;
  } catch (e) {
    status(e.message, true);
  } finally {
    button.disabled = false;
  }
}

function render(data) {
  const results = $("results");
  results.replaceChildren();
  data.queries.forEach((q, i) => results.append(querySection(q, i)));
}

function querySection(q, index) {
  const section = document.createElement("section");
  section.className = "query";
  section.dataset.query = q.name;
  const h = document.createElement("h2");
  h.textContent = q.name + " ";
  const small = document.createElement("small");
  small.textContent = `${q.length.toLocaleString()} bp, ${q.hits.length} HSPs`;
  h.append(small);
  section.append(h);
  if (!q.hits.length) {
    const p = document.createElement("p");
    p.className = "nohits";
    p.textContent = "No hits found.";
    section.append(p);
    return section;
  }
  const pre = document.createElement("pre");
  pre.className = "alignment";
  pre.hidden = true;
  const table = hitTable(q, pre);
  section.append(overview(q, table), table, pre);
  return section;
}

function overview(q, table) {
  const width = 900, left = 10, right = 10, row = 9, shown = q.hits.slice(0, 40);
  const height = 26 + shown.length * row;
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("class", "overview");
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", `HSPs along ${q.name}`);
  const scale = (x) => left + (x / q.length) * (width - left - right);
  const axis = document.createElementNS(SVG, "rect");
  Object.entries({ x: left, y: 8, width: width - left - right, height: 6, fill: "#12263f" })
    .forEach(([k, v]) => axis.setAttribute(k, v));
  svg.append(axis);
  for (const [pos, anchor] of [[0, "start"], [q.length, "end"]]) {
    const t = document.createElementNS(SVG, "text");
    t.setAttribute("x", scale(pos));
    t.setAttribute("y", 24);
    t.setAttribute("text-anchor", anchor);
    t.textContent = pos === 0 ? "1" : String(q.length);
    svg.append(t);
  }
  const best = Math.max(...q.hits.map((h) => h.bitscore));
  shown.forEach((hit, i) => {
    const r = document.createElementNS(SVG, "rect");
    const a = Math.min(hit.qstart, hit.qend) - 1, b = Math.max(hit.qstart, hit.qend);
    const shade = 0.35 + 0.65 * (hit.bitscore / best);
    Object.entries({ class: "hsp", x: scale(a), y: 30 + i * row, width: Math.max(1, scale(b) - scale(a)),
                     height: row - 3, fill: `rgba(46,125,50,${shade.toFixed(2)})` })
      .forEach(([k, v]) => r.setAttribute(k, v));
    const title = document.createElementNS(SVG, "title");
    title.textContent = `${hit.saccver} ${hit.qstart}-${hit.qend}, ${hit.pident}% identity, E=${hit.evalue}`;
    r.append(title);
    r.addEventListener("click", () => table.tBodies[0].querySelector(`tr[data-hit="${i}"]`).click());
    svg.append(r);
  });
  return svg;
}

function hitTable(q, pre) {
  const table = document.createElement("table");
  table.className = "hits";
  const head = table.createTHead().insertRow();
  for (const [field, heading] of COLUMNS) {
    const th = document.createElement("th");
    th.textContent = heading;
    th.dataset.key = field;
    th.scope = "col";
    th.addEventListener("click", () => sortBy(table, q, field, pre));
    head.append(th);
  }
  const body = table.createTBody();
  q.hits.forEach((hit, i) => {
    const tr = body.insertRow();
    tr.dataset.hit = i;
    for (const [field, , numeric] of COLUMNS) {
      const td = tr.insertCell();
      td.textContent = numeric && field === "evalue" ? formatEvalue(hit.evalue) : String(hit[field]);
    }
    tr.addEventListener("click", () => {
      table.querySelectorAll("tr.selected").forEach((x) => x.classList.remove("selected"));
      tr.classList.add("selected");
      pre.hidden = false;
      pre.textContent = alignment(hit);
    });
  });
  return table;
}

function formatEvalue(e) { return e === 0 ? "0.0" : e < 1e-3 ? e.toExponential(1) : String(e); }

function sortBy(table, q, field, pre) {
  const th = table.querySelector(`th[data-key="${field}"]`);
  const ascending = th.getAttribute("aria-sort") !== "ascending";
  table.querySelectorAll("th").forEach((x) => x.removeAttribute("aria-sort"));
  th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
  const rows = Array.from(table.tBodies[0].rows);
  const value = (tr) => q.hits[Number(tr.dataset.hit)][field];
  rows.sort((a, b) => {
    const x = value(a), y = value(b);
    const c = typeof x === "number" ? x - y : String(x).localeCompare(String(y));
    return (ascending ? c : -c) || Number(a.dataset.hit) - Number(b.dataset.hit);
  });
  table.tBodies[0].append(...rows);
}

function alignment(hit) {
  const q = hit.qseq, s = hit.sseq, width = 60;
  const minus = hit.sstart > hit.send;
  let qpos = hit.qstart, spos = hit.sstart;
  const lines = [`${hit.qaccver} vs ${hit.saccver}`,
                 `Score ${hit.bitscore} bits (${hit.score}), E-value ${formatEvalue(hit.evalue)}`,
                 `Identities ${hit.length - hit.mismatch - gapColumns(q, s)}/${hit.length} (${hit.pident}%), ` +
                 `Gaps ${gapColumns(q, s)}/${hit.length}, Strand Plus/${minus ? "Minus" : "Plus"}`, ""];
  const pad = String(Math.max(hit.qend, hit.sstart, hit.send)).length;
  for (let i = 0; i < q.length; i += width) {
    const qa = q.slice(i, i + width), sa = s.slice(i, i + width);
    const qn = qa.replace(/-/g, "").length, sn = sa.replace(/-/g, "").length;
    const mid = Array.from(qa, (c, k) => (c === sa[k] && c !== "-" ? "|" : " ")).join("");
    const qto = qpos + qn - 1, sto = minus ? spos - sn + 1 : spos + sn - 1;
    lines.push(`Query  ${String(qpos).padStart(pad)}  ${qa}  ${qto}`);
    lines.push(`       ${" ".repeat(pad)}  ${mid}`);
    lines.push(`Sbjct  ${String(spos).padStart(pad)}  ${sa}  ${sto}`, "");
    qpos = qto + 1;
    spos = minus ? sto - 1 : sto + 1;
  }
  return lines.join("\n");
}

function gapColumns(q, s) {
  let n = 0;
  for (let i = 0; i < q.length; i++) if (q[i] === "-" || s[i] === "-") n++;
  return n;
}

async function download(format) {
  if (!lastRequest) return;
  try {
    const body = { ...lastRequest, format: format };
    const blob = await (await call("api/v1/search", body)).blob();
    const a = document.createElement("a");
    a.href = URL.createObjectURL(blob);
    a.download = "gseek-results." + (format === "6" ? "tsv" : format);
    document.body.append(a);
    a.click();
    setTimeout(() => { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
  } catch (e) {
    status(e.message, true);
  }
}

$("file").addEventListener("change", async (event) => {
  const file = event.target.files[0];
  if (file) $("queries").value = await file.text();
});
$("form").addEventListener("submit", search);
$("token").addEventListener("change", loadDatabases);
$("downloads").querySelectorAll("button").forEach((b) => b.addEventListener("click", () => download(b.dataset.format)));
loadDatabases();
