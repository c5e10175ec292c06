// The live run page. One EventSource per stream (the run's events, the chosen agent's
// transcript): the browser never polls. Everything shown is built from the event stream
// documented with `starter.py events`, applied in order; a reconnect resumes after the
// last event id seen (the browser sends Last-Event-ID; a stream that had to be reopened by
// hand says ?after=).
"use strict";

const $ = (id) => document.getElementById(id);
const SVG = "http://www.w3.org/2000/svg";
const NODE_W = 190, NODE_H = 46, COL = 250, ROW = 64, PAD = 16;

const page = { run: null, source: null, lastId: 0, agents: new Map(), requests: new Map(), selected: null, logSource: null, review: null, ended: false, banner: "", done: 0, filled: "" };

function el(tag, attrs = {}, text) {
  const node = tag.startsWith("svg:") ? document.createElementNS(SVG, tag.slice(4)) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;  // always text: names and notes are the agents' words
  return node;
}

// -- the runs ------------------------------------------------------------------------------

async function listRuns() {
  const list = $("runs");
  list.replaceChildren(el("li", {}, "loading…"));
  try {
    const rows = await (await fetch("/api/runs")).json();
    list.replaceChildren();
    if (rows.error) { list.append(el("li", {}, rows.error)); return; }
    if (!rows.length) list.append(el("li", {}, "no runs yet: start one with `starter.py run`"));
    for (const r of rows) {
      const li = el("li", { "data-run": r.id });
      li.append(el("div", { class: "id" }, r.id), el("div", { class: "st" }, `${r.state || r.status}${r.plan ? " · " + r.plan : ""}`));
      if (r.id === page.run) li.classList.add("open");
      li.onclick = () => { history.pushState({}, "", "/?run=" + encodeURIComponent(r.id)); openRun(r.id); };
      list.append(li);
    }
  } catch (e) { list.replaceChildren(el("li", {}, "the server did not answer: " + e)); }
}

// -- one run -------------------------------------------------------------------------------

function openRun(runId) {
  if (page.source) page.source.close();
  closeLog();
  Object.assign(page, { run: runId, lastId: 0, selected: null, ended: false, done: 0 });
  page.agents.clear(); page.requests.clear();
  $("answer-request").value = page.filled = "";  // (another run's request id is not this one's)
  $("run").hidden = false;
  $("title").textContent = runId;
  $("events").replaceChildren(); $("dag").replaceChildren(); drawRequests();
  $("agent-name").textContent = "— click one in the graph"; $("agent-facts").textContent = ""; $("agent-actions").hidden = true;
  for (const li of document.querySelectorAll("#runs li")) li.classList.toggle("open", li.dataset.run === runId);
  connect();
}

function connect() {
  const url = `/runs/${encodeURIComponent(page.run)}/events` + (page.lastId ? `?after=${page.lastId}` : "");
  const source = page.source = new EventSource(url);
  setConn("reconnecting", "connecting…");
  source.onopen = () => setConn("live", "live");
  source.onmessage = (m) => { const ev = JSON.parse(m.data); if (ev.id > page.lastId) apply(ev); };
  source.onerror = () => {
    if (source !== page.source) return;
    setConn("reconnecting", "reconnecting…");
    // The browser retries by itself (sending Last-Event-ID) unless the stream was refused:
    // then the server's sentence is shown, and the stream asked for again a while later.
    if (source.readyState === EventSource.CLOSED) refused(url, source);
  };
}

async function refused(url, source) {
  let wait = 1000;
  try {
    const ctrl = new AbortController();
    const res = await fetch(url, { signal: ctrl.signal });
    const isStream = (res.headers.get("content-type") || "").startsWith("text/event-stream");
    const said = isStream ? {} : await res.json();
    if (isStream) ctrl.abort();  // it streams again: the EventSource takes it from here
    if (said.error) { const n = $("notice"); n.className = "error"; n.textContent = said.error; wait = 5000; }
  } catch (e) { /* the server is away: the next try says more */ }
  setConn("reconnecting", "reconnecting…");
  setTimeout(() => { if (source === page.source) connect(); }, wait);
}

function setConn(state, text) { const c = $("conn"); c.dataset.state = state; c.textContent = text; }

function apply(ev) {
  page.lastId = ev.id;
  const d = ev.data;
  logEvent(ev);
  switch (ev.type) {
    case "plan":
      page.agents = new Map(d.agents.map((a) => [a.task, a]));
      page.done = d.agents.filter(isDone).length;
      drawGraph();
      setBanner(d.status === "running" ? d.state : d.status, `plan v${d.version}`, d.status !== "running");
      break;
    case "run.state": setBanner(d.state, "", false); break;
    case "run.ended": setBanner(d.status, d.summary || "", true); break;
    case "request.raised": page.requests.set(d.id, d); drawRequests(); break;
    case "request.answered": page.requests.delete(d.id); drawRequests(); break;
    case "budget": $("budget").textContent = d.summary; break;
    case "agent.step": {
      const a = page.agents.get(d.task);
      if (a) { Object.assign(a, { iterations: d.iterations, progress: d.progress, tokens: d.tokens }); drawNode(a); }
      break;
    }
    default:
      if (ev.type.startsWith("agent.")) {
        const was = page.agents.get(d.task);
        page.done += (isDone(d) ? 1 : 0) - (was && isDone(was) ? 1 : 0);
        page.agents.set(d.task, d);
        drawNode(d);
        showBanner();
      }
  }
  if (page.selected && d.task === page.selected) showAgent(page.selected);
}

function summary(ev) {
  const d = ev.data;
  switch (ev.type) {
    case "plan": return `v${d.version}: ${d.agents.length} agents${d.reason ? " — " + d.reason : ""}`;
    case "run.state": return `${d.was} → ${d.state}`;
    case "run.ended": return `${d.status}${d.summary ? ": " + d.summary : ""}`;
    case "request.raised": return `${d.id} (${d.kind}, ${d.taskId}): ${d.text}`;
    case "request.answered": return `${d.id} (${d.task})`;
    case "budget": return d.summary;
    case "coordinator.decision": return `${d.point}${d.taskId ? " " + d.taskId : ""}: ${d.verdict} — ${d.reason}`;
    case "agent.step": return `${d.task} step ${d.iterations}${d.progress ? ": " + d.progress : ""}`;
    case "watch.lost": return d.why;
    case "watch.back": return "watching again";
    default: return d.task ? `${d.task} ${d.shown}${d.note ? " — " + d.note : ""}` : "";
  }
}

function logEvent(ev) {
  const li = el("li", { value: String(ev.id), "data-type": ev.type }, `${ev.at.slice(11, 19)} ${ev.type} ${summary(ev)}`);
  if (ev.type === "watch.lost") li.classList.add("lost");
  const list = $("events");
  list.append(li);
  list.scrollTop = list.scrollHeight;
}

function setBanner(state, extra, ended) {
  const b = $("banner");
  b.dataset.state = state;
  const words = { paused: "PAUSED — resume to dispatch again", waiting: "WAITING for a person", reviewing: "WAITING for plan review" };
  page.banner = (words[state] || state.toUpperCase()) + (extra ? ` · ${extra}` : "");
  if (ended !== undefined) page.ended = ended;
  showBanner();
  setControls(state);
  markRow(state);
}

// A task that has reached the end it was meant for (the board's "completed", "completed
// (offline)", and a skipped one: its result was given).
function isDone(a) { return (a.status || "").startsWith("completed") || a.status === "skipped"; }

// While a run goes, the banner says how far it is (walk11: a 200-agent run said only
// "RUNNING · plan v1" until it ended); an ended run's banner is its summary.
function showBanner() {
  const tally = !page.ended && page.agents.size ? ` · ${page.done} of ${page.agents.size} done` : "";
  $("banner").textContent = page.banner + tally;
}

// The open run's line in the list of runs follows its state as the banner does (the list is
// read once: it said "running" beside a run the page showed COMPLETED).
function markRow(state) {
  if (!page.run) return;
  const row = document.querySelector(`#runs li[data-run="${CSS.escape(page.run)}"] .st`);
  if (!row) return;
  const plan = row.textContent.includes(" · ") ? row.textContent.slice(row.textContent.indexOf(" · ")) : "";
  row.textContent = `${state}${plan}`;
}

// What can be asked of the run as it stands: an ended run takes no steering (a fork of one of
// its agents goes on from it); a paused run is resumed, a running one paused. The boxes that
// feed the steering go grey with their buttons (walk11: the budget's stayed editable on an
// ended run, beside a greyed "Set budget").
const STEERING = ["pause", "resume", "cancel-run", "budget-limits", "set-budget", "review-comment", "approve-plan", "replan-text", "replan", "answer-request", "answer-text", "answer", "approve", "deny"];
function setControls(state) {
  const why = page.ended ? `the run has ended (${state}): retry or fork an agent to go on from it` : "";
  for (const id of STEERING) { const b = $(id); b.disabled = page.ended; b.title = why || b.dataset.title || ""; }
  if (!page.ended) {
    // a greyed button says why, as docs/steering.md promises ("hover it to see why")
    $("pause").disabled = state === "paused";
    $("pause").title = state === "paused" ? "the run is paused already: resume it" : ($("pause").dataset.title || "");
    $("resume").disabled = state !== "paused";
    $("resume").title = state !== "paused" ? "the run is not paused: there is nothing to resume" : ($("resume").dataset.title || "");
  }
  for (const b of document.querySelectorAll("#agent-actions button")) {
    // on an ended run, a retry is a follow-up run (as `starter.py retry` makes one) and a fork
    // goes on from the agent; a skip or a nudge has nothing left to act on
    b.disabled = page.ended && !["retry", "fork"].includes(b.dataset.act);
    b.title = b.disabled ? why : "";
  }
}

// -- the graph: layered by dependency level, edges drawn ------------------------------------

function levels() {
  const level = new Map();
  const visit = (task, seen) => {
    if (level.has(task)) return level.get(task);
    if (seen.has(task)) return 0;  // (a cycle cannot pass validation; drawn flat if it did)
    seen.add(task);
    const a = page.agents.get(task);
    const deps = a ? a.depends.filter((t) => page.agents.has(t)) : [];
    const l = deps.length ? 1 + Math.max(...deps.map((t) => visit(t, seen))) : 0;
    level.set(task, l);
    return l;
  };
  for (const task of page.agents.keys()) visit(task, new Set());
  return level;
}

function drawGraph() {
  const svg = $("dag");
  svg.replaceChildren();
  const defs = el("svg:defs");
  const marker = el("svg:marker", { id: "arrow", viewBox: "0 0 10 10", refX: "10", refY: "5", markerWidth: "7", markerHeight: "7", orient: "auto" });
  marker.append(el("svg:path", { d: "M0,0 L10,5 L0,10 z", fill: "#8a93a6" }));
  defs.append(marker);
  svg.append(defs);
  const level = levels(), rows = new Map(), pos = new Map();
  for (const [task, l] of level) {
    const row = rows.get(l) || 0;
    rows.set(l, row + 1);
    pos.set(task, { x: PAD + l * COL, y: PAD + row * ROW });
  }
  const width = PAD * 2 + (Math.max(0, ...level.values()) * COL) + NODE_W;
  const height = PAD * 2 + (Math.max(1, ...rows.values()) - 1) * ROW + NODE_H;
  svg.setAttribute("width", width); svg.setAttribute("height", height);
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  const edges = el("svg:g", { class: "edges" }), nodes = el("svg:g", { class: "nodes" });
  svg.append(edges, nodes);
  for (const a of page.agents.values()) {
    const to = pos.get(a.task);
    for (const dep of a.depends) {
      const from = pos.get(dep);
      if (!from) continue;
      edges.append(el("svg:path", { class: "edge", "data-from": dep, "data-to": a.task, d: edgePath(from, to), "marker-end": "url(#arrow)" }));
    }
    const g = el("svg:g", { class: "node", "data-task": a.task, transform: `translate(${to.x},${to.y})` });
    g.append(el("svg:rect", { width: NODE_W, height: NODE_H }), el("svg:text", { x: 8, y: 18, class: "head" }), el("svg:text", { x: 8, y: 36, class: "sub" }), el("svg:title"));
    g.onclick = () => selectAgent(a.task);
    nodes.append(g);
    drawNode(a);
  }
}

// An edge from one level to the next is a curve across the gap between their columns. One that
// skips a level runs along the gap between two rows, where no box stands, past the columns
// between (walk11: drawn straight across, it passed under the box of an agent it had nothing
// to do with — T-1 → T-3 looked like T-1 → T-2 → T-3).
function edgePath(from, to) {
  const x1 = from.x + NODE_W, y1 = from.y + NODE_H / 2, x2 = to.x, y2 = to.y + NODE_H / 2;
  const gap = COL - NODE_W, curve = (xa, ya, xb, yb) => { const mid = (xa + xb) / 2; return `C${mid},${ya} ${mid},${yb} ${xb},${yb}`; };
  if (x2 - x1 <= gap) return `M${x1},${y1} ${curve(x1, y1, x2, y2)}`;
  const row = (p) => (p.y - PAD) / ROW;
  const lane = PAD + (Math.floor((row(from) + row(to)) / 2) + 1) * ROW - (ROW - NODE_H) / 2;  // under the rows' middle
  return `M${x1},${y1} ${curve(x1, y1, x1 + gap, lane)} L${x2 - gap},${lane} ${curve(x2 - gap, lane, x2, y2)}`;
}

function drawNode(a) {
  const g = document.querySelector(`#dag .node[data-task="${CSS.escape(a.task)}"]`);
  if (!g) return;
  g.dataset.status = a.status;
  g.classList.toggle("selected", a.task === page.selected);
  const clip = (s, n) => (s.length > n ? s.slice(0, n - 1) + "…" : s);
  g.querySelector(".head").textContent = clip(`${a.task} · ${a.kind}`, 28);
  const step = a.status === "in_progress" && a.iterations ? ` · step ${a.iterations}` : "";
  g.querySelector(".sub").textContent = clip(a.shown + step, 30);
  g.querySelector("title").textContent = `${a.task} (${a.agent}) ${a.shown}\n${a.subject}${a.note ? "\n" + a.note : ""}`;
}

// -- one agent: facts, actions, live transcript ---------------------------------------------

function closeLog() { if (page.logSource) { page.logSource.close(); page.logSource = null; } }

function selectAgent(task) {
  page.selected = task;
  for (const g of document.querySelectorAll("#dag .node")) g.classList.toggle("selected", g.dataset.task === task);
  showAgent(task);
  $("agent-actions").hidden = false;
  closeLog();
  const pre = $("transcript");
  pre.textContent = "";
  const source = page.logSource = new EventSource(`/runs/${encodeURIComponent(page.run)}/agents/${encodeURIComponent(task)}/log`);
  source.onmessage = (m) => { const line = JSON.parse(m.data); pre.append(line.text + "\n"); pre.scrollTop = pre.scrollHeight; };
}

function showAgent(task) {
  const a = page.agents.get(task);
  if (!a) return;
  $("agent-name").textContent = `${a.task} · ${a.kind}`;
  $("agent-facts").textContent = `${a.shown}${a.attempt ? ` · attempt ${a.attempt}` : ""}${a.tokens ? ` · ${a.tokens} tokens` : ""}\n${a.subject}${a.note ? "\n" + a.note : ""}`;
}

// -- requests and interventions ------------------------------------------------------------

function drawReview() {
  // A plan under review is request R-<version>: the page approves the version it shows.
  const review = [...page.requests.values()].find((r) => r.kind === "review");
  page.review = review ? review.id.replace(/^R-/, "") : null;
  $("review").hidden = !review;
  $("review-text").textContent = review ? `plan v${page.review} waits for review:` : "";
  $("approve-plan").textContent = review ? `Approve v${page.review}` : "Approve plan";
}

function drawRequests() {
  drawReview();
  const list = $("requests");
  list.replaceChildren();
  if (!page.requests.size) list.append(el("li", {}, "nothing waits"));
  for (const r of page.requests.values()) {
    const li = el("li", { "data-request": r.id }, `${r.id} (${r.kind}, ${r.taskId}): ${r.text}`);
    li.onclick = () => { $("answer-request").value = r.id; $("answer-text").focus(); };
    list.append(li);
  }
  fillRequest();
}

// When exactly one request waits for an answer or a decision, the answer box holds its id
// (walk11: it had to be typed though there was nothing else it could be); when more wait, which
// one is meant is the person's to say. Only an id the page put there itself is replaced or
// taken away — what a person typed or clicked stays — and not while an answer is being written:
// a second request arriving then leaves it as it is, and the request it was written for gone
// (answered elsewhere, expired) empties the box — never another request's id beside it (review19:
// what was written for A-1, then gone, went to the A-2 that came next, with Approve).
function fillRequest() {
  const box = $("answer-request");
  if (box.value !== "" && box.value !== page.filled) return;
  const open = [...page.requests.values()].filter((r) => r.kind !== "review");  // (approved above)
  if ($("answer-text").value !== "") {
    if (!page.requests.has(box.value)) box.value = "";
  } else box.value = open.length === 1 ? open[0].id : "";
  page.filled = box.value;
}

async function act(body) {
  const notice = $("notice");
  notice.className = ""; notice.textContent = `${body.action}…`;
  try {
    const res = await fetch(`/api/runs/${encodeURIComponent(page.run)}/act`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
    const said = await res.json();
    if (!said.ok && said.confirm === "again" && !body.again) {
      // exactly once, or ask: the fork named what it would repeat; run them again only if told so
      if (confirm(`${said.error}\n\nRun them again?`)) return act({ ...body, again: true });
    }
    notice.className = said.ok ? "ok" : "error";
    notice.textContent = said.ok ? said.message : said.error;
    if (said.open) { listRuns(); }
    return said;
  } catch (e) { notice.className = "error"; notice.textContent = "the page's server did not answer: " + e; }
  return null;
}

// An answer or a decision taken: the form is emptied for the next request (it kept "Q-1" and
// its text while A-2 waited); a refused one keeps what was typed, to be mended.
async function answerWith(body) {
  const request = $("answer-request").value;
  const said = await act({ ...body, request, text: $("answer-text").value });
  if (said && said.ok) {
    // (the next request may have been filled in already, as its event came before this answer)
    if ($("answer-request").value === request) $("answer-request").value = "";
    $("answer-text").value = "";
    fillRequest();
  }
}

$("pause").onclick = () => act({ action: "pause" });
$("resume").onclick = () => act({ action: "resume" });
$("cancel-run").onclick = () => { if (confirm(`Cancel ${page.run}? Running agents stop and it ends Cancelled.`)) act({ action: "cancel" }); };
$("set-budget").onclick = () => act({ action: "budget", limits: $("budget-limits").value });
$("approve-plan").onclick = () => act({ action: "approve-plan", version: page.review || "", text: $("review-comment").value });
$("replan").onclick = () => act({ action: "replan", text: $("replan-text").value });
$("answer-form").onsubmit = (e) => { e.preventDefault(); answerWith({ action: "answer" }); };
$("approve").onclick = () => answerWith({ action: "approve", decision: "allow_once" });
$("deny").onclick = () => answerWith({ action: "approve", decision: "deny" });
for (const b of document.querySelectorAll("#agent-actions button")) b.onclick = () => act({ action: b.dataset.act, task: page.selected, text: $("agent-text").value });
$("refresh").onclick = listRuns;
window.onpopstate = () => { const r = new URLSearchParams(location.search).get("run"); if (r) openRun(r); };

for (const id of STEERING) $(id).dataset.title = $(id).title;
listRuns();
const first = new URLSearchParams(location.search).get("run");
if (first) openRun(first);
