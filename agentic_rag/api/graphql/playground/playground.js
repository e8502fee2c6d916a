// The playground: typeahead, a run of the agent streamed over graphql-sse (fetch + ReadableStream), its answer,
// entities and evidence graph, clarification buttons, and the stored trajectory. No library, no build step.
// Everything the server sends is written with textContent and DOM calls, never parsed as HTML: the answer
// comes from a model.
"use strict";

const $ = (id) => document.getElementById(id);
// The page is served beside the endpoint, at <endpoint>/playground/ (under uvicorn, /graphql/playground/; behind
// Serve's route prefix /graphql, the same): the endpoint is the page's path up to /playground/.
const ENDPOINT = new URL(new URLSearchParams(location.search).get("endpoint")
  || (location.pathname.replace(/\/playground\/.*$/, "") || "/graphql"), location.href).href;
const SVG = "http://www.w3.org/2000/svg";

const CARD = `fragment Card on Entity {
  id name entityType popularity
  ... on Anime { format year endYear episodeCount status genres studios(limit: 3) { name } source: sourceManga(limit: 1) { title } }
  ... on Manga { year endYear volumes status magazine genres authors(limit: 3) { name } }
  ... on Character { nameNative aliases description anime(limit: 3) { title } }
  ... on Person { nativeName anime(limit: 3) { title } }
  ... on Studio { founded anime(limit: 3) { title } }
  ... on Franchise { description }
  ... on Episode { title number season aired series: anime { title } }
}`;
const RESULT = `fragment Result on SearchAiResult {
  trajectoryId requestId status mode answer confidence citations warnings turns runMs: latencyMs conversationId turn
  timings { stage ms }
  resultEntities { ...Card }
  evidence { rewrittenQuery terminationReason facts paths { rels nodes { entityType id entity { name } } } }
  clarification { question choices { label ref { entityType id } } }
}`;
const EVENT = "trajectoryId seq stage type payload latencyMs createdAt";
const SEARCH = `query Search($q: String!) { search(q: $q, limit: 8) { name matched match popularity ref { entityType id } } }`;
const ENTITY = `query Entity($t: EntityType!, $id: ID!) { entity(entityType: $t, id: $id) { ...Card } } ${CARD}`;
const UPDATE = `__typename ... on RunEvent { ${EVENT} } ... on SearchAiResult { ...Result }`;
const CLARIFY = `subscription Clarify($t: ID!, $i: Int!) { clarifyRun(trajectoryId: $t, index: $i) { ${UPDATE} } } ${RESULT} ${CARD}`;
const RUN = `subscription Run($q: String!, $mode: Mode!, $image: String, $c: ID) {
  searchAiRun(question: $q, mode: $mode, image: $image, conversationId: $c) { ${UPDATE} } } ${RESULT} ${CARD}`;
const TRAJECTORY = `query Trajectory($id: ID!) { trajectory(id: $id) {
  id requestId query mode status createdAt finishedAt timings { stage ms } finalResponse events { ${EVENT} } } }`;

// -- transport ---------------------------------------------------------------------------------------------

class GraphQLErrors extends Error {
  constructor(errors) {
    super(errors.map((e) => e.message).join("; "));
    this.errors = errors;
  }
}

function headers(accept) {
  const h = { "Content-Type": "application/json", Accept: accept };
  const key = $("api-key").value.trim();
  const tenant = $("tenant").value.trim();
  if (key) h.Authorization = `Bearer ${key}`;
  if (tenant) h["X-Tenant"] = tenant;
  return h;
}

async function failure(resp) {
  let body = null;
  try { body = await resp.json(); } catch (_) { /* not JSON: the status says it */ }
  const errors = body && Array.isArray(body.errors) && body.errors.length ? body.errors
    : [{ message: `HTTP ${resp.status} ${resp.statusText}`.trim(), extensions: { code: "http_error" } }];
  return new GraphQLErrors(errors);
}

async function gql(query, variables, signal) {
  const resp = await fetch(ENDPOINT, { method: "POST", headers: headers("application/json"), signal,
                                       body: JSON.stringify({ query, variables }) });
  if (!(resp.headers.get("content-type") || "").includes("json")) throw await failure(resp);
  const body = await resp.json();
  if (body.errors && body.errors.length) throw new GraphQLErrors(body.errors);
  if (!resp.ok) throw new GraphQLErrors([{ message: `HTTP ${resp.status}` }]);
  return body.data;
}

// A subscription over graphql-sse (distinct connections): one POST, the server's events read as they arrive.
async function* subscribe(query, variables, signal) {
  const resp = await fetch(ENDPOINT, { method: "POST", headers: headers("text/event-stream"), signal,
                                       body: JSON.stringify({ query, variables }) });
  if (!resp.ok || !(resp.headers.get("content-type") || "").startsWith("text/event-stream")) throw await failure(resp);
  const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value.replace(/\r\n?/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let event = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (!line || line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const text = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "event") event = text;
        else if (field === "data") data.push(text);
      }
      if (event === "complete") return;
      if (event === "next" && data.length) {
        const payload = JSON.parse(data.join("\n"));
        if (payload.errors && payload.errors.length) throw new GraphQLErrors(payload.errors);
        yield payload.data;
      }
    }
  }
}

// -- small DOM helpers -------------------------------------------------------------------------------------

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v;
    else if (k === "dataset") Object.assign(node.dataset, v);
    else node.setAttribute(k, v);
  }
  for (const child of children) {
    if (child === null || child === undefined || child === "") continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

function svg(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

const lower = (s) => String(s || "").toLowerCase();
const words = (key) => key.replace(/([A-Z])/g, " $1").toLowerCase();
const clip = (s, n) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);
const ms = (v) => (v === null || v === undefined ? "" : v >= 1000 ? `${(v / 1000).toFixed(2)} s`
  : v >= 10 ? `${Math.round(v)} ms` : `${v.toFixed(1)} ms`);

function showErrors(error) {
  const box = $("errors");
  box.replaceChildren();
  if (!error) return;
  const errors = error instanceof GraphQLErrors ? error.errors
    : [{ message: error.name === "TypeError" ? `the server did not answer (${error.message})` : String(error.message || error) }];
  const list = el("ul", { class: "error-list" });
  for (const e of errors) {
    const code = e.extensions && e.extensions.code;
    list.append(el("li", { class: "error" }, code ? el("code", {}, code) : null, " ", e.message));
  }
  box.append(list);
}

// -- entity cards ------------------------------------------------------------------------------------------

function fieldText(value) {
  if (value === null || value === undefined || value === "") return "";
  if (Array.isArray(value)) return value.map(fieldText).filter(Boolean).join(", ");
  if (typeof value === "object") return String(value.title || value.name || "");
  return String(value);
}

const LABELS = { source: "source manga", series: "anime" };  // the fragment's aliases

function card(entity) {
  const box = el("article", { class: "card", dataset: { id: entity.id, type: lower(entity.entityType) } },
    el("h4", {}, entity.name, " ", el("span", { class: `badge type-${lower(entity.entityType)}` }, lower(entity.entityType))));
  const fields = el("dl");
  for (const [key, value] of Object.entries(entity)) {
    if (["__typename", "id", "name", "entityType"].includes(key)) continue;
    const text = fieldText(value);
    if (!text) continue;
    fields.append(el("dt", {}, LABELS[key] || words(key)),
                  el("dd", {}, ["description", "synopsis"].includes(key) ? clip(text, 220) : text));
  }
  box.append(fields);
  return box;
}

// -- typeahead ---------------------------------------------------------------------------------------------

const typeahead = { timer: 0, controller: null, hits: [], active: -1 };

function renderSuggestions(hits, q) {
  const list = $("suggestions");
  list.dataset.q = q;  // what the list answers
  typeahead.hits = hits;
  typeahead.active = -1;
  list.replaceChildren(...hits.map((hit, i) => {
    const item = el("li", { role: "option", id: `suggestion-${i}`, class: "suggestion",
                            dataset: { id: hit.ref.id, type: lower(hit.ref.entityType) } },
      el("span", { class: "name" }, hit.name),
      hit.matched && hit.matched !== hit.name ? el("span", { class: "muted" }, ` (${hit.matched})`) : null,
      el("span", { class: `badge type-${lower(hit.ref.entityType)}` }, lower(hit.ref.entityType)),
      el("span", { class: `badge tier tier-${lower(hit.match)}` }, lower(hit.match)));
    item.addEventListener("mousedown", (e) => { e.preventDefault(); pick(hit); });
    return item;
  }));
  if (!hits.length && $("search").value.trim()) list.append(el("li", { class: "muted empty" }, "no match"));
  list.hidden = !list.children.length;
  $("search").setAttribute("aria-expanded", String(!list.hidden));
}

async function suggest(q) {
  if (typeahead.controller) typeahead.controller.abort();
  if (!q) { renderSuggestions([], q); return; }
  const controller = new AbortController();
  typeahead.controller = controller;
  try {
    const data = await gql(SEARCH, { q }, controller.signal);
    if (controller === typeahead.controller) { showErrors(null); renderSuggestions(data.search, q); }
  } catch (e) {
    if (e.name !== "AbortError") showErrors(e);
  }
}

async function pick(hit) {
  $("suggestions").hidden = true;
  $("search").value = hit.name;
  try {
    const data = await gql(ENTITY, { t: hit.ref.entityType, id: hit.ref.id });
    $("picked").replaceChildren(...(data.entity ? [card(data.entity)] : []));
  } catch (e) { showErrors(e); }
}

function moveActive(step) {
  const items = [...$("suggestions").querySelectorAll(".suggestion")];
  if (!items.length) return;
  typeahead.active = (typeahead.active + step + items.length) % items.length;
  items.forEach((item, i) => item.classList.toggle("active", i === typeahead.active));
  $("search").setAttribute("aria-activedescendant", items[typeahead.active].id);
}

// -- a run -------------------------------------------------------------------------------------------------

const run = { controller: null, events: [], started: 0, trajectoryId: null };

function describe(ev) {
  const p = ev.payload || {};
  const n = (v) => (Array.isArray(v) ? v.length : 0);
  switch (ev.stage) {
    case "guard_input": case "guard_output": case "budget":
      return [p.rule, p.action, p.detail || (p.ms ? `${p.ms} ms` : p.turns ? `${p.turns} turns` : "")].filter(Boolean).join(" · ");
    case "link":
      if (p.error) return `lookup failed: ${p.error}`;
      return (p.mentions || []).map((m) => `"${m.text}" → ${m.candidates && m.candidates[0] ? m.candidates[0] : "nothing"}`).join("; ") || "no names found";
    case "rewrite":
      return p.rewrite ? `"${p.rewrite.rewritten_query}" · ${p.rewrite.retrieval_mode}` : "";
    case "select":
      if (p.action) return `${p.action}${p.rationale ? `: ${p.rationale}` : ""}`;
      if (p.finish) return `finish ${p.finish}${n(p.missing) ? ` (missing: ${p.missing.join(", ")})` : ""}`;
      if (p.loop_detected) return `repeated step: ${p.loop_detected.join(", ")}`;
      break;
    case "retrieve":
      if (ev.type === "action") return `${p.source}${p.intent && p.intent.query ? `: "${p.intent.query}"` : ""}`;
      if (ev.type === "error") return `${p.source} failed: ${p.error}`;
      return `${p.source}: ${p.count} result${p.count === 1 ? "" : "s"}`;
    case "observe":
      return `${p.status}: ${(p.cards || []).reduce((sum, c) => sum + (c.count || 0), 0)} results in ${n(p.cards)} card${n(p.cards) === 1 ? "" : "s"}`;
    case "grade":
      return p.items !== undefined ? `${n(p.relevant)} of ${p.items} relevant` : String(p.rewrite || "");
    case "draft":
      return `confidence ${Number(p.confidence).toFixed(2)} · ${n(p.result_entities)} result${n(p.result_entities) === 1 ? "" : "s"} · ${p.answer_chars} chars`;
    case "validate":
      if (p.fast_path) return "fast path: one name found by vector search, no validator call";
      return `${p.sufficient ? "sufficient" : "not sufficient"}${p.rationale ? `: ${p.rationale}` : ""}${n(p.missing) ? ` (missing: ${p.missing.join(", ")})` : ""}`;
    case "clarify":
      if (p.clarification) return `asks: ${p.clarification.question}`;
      if (p.chosen) return `chosen: ${p.chosen.label || (p.chosen.entity && p.chosen.entity.id) || ""}`;
      break;
    case "final":
      return `${p.status} · ${p.termination} · ${p.turns} turn${p.turns === 1 ? "" : "s"}${p.timings ? ` · ${ms(p.timings.total_ms)}` : ""}`;
    default:
  }
  if (p.error) return String(p.error);
  return clip(JSON.stringify(p), 160);
}

// ``at``: milliseconds since the run began (when the page asked, or the trajectory's first event)
function eventItem(ev, at) {
  const kind = lower(ev.stage).replace(/[^a-z_]/g, "");
  return el("li", { class: `event ${lower(ev.type)}`, dataset: { seq: ev.seq, stage: kind } },
    el("div", { class: "event-head" },
      el("span", { class: "seq" }, `#${ev.seq}`),
      el("span", { class: `badge stage stage-${kind}` }, ev.stage),
      el("span", { class: "type" }, ev.type),
      el("span", { class: "summary" }, describe(ev)),
      el("span", { class: "timing" }, [Number.isFinite(at) ? `+${ms(Math.max(at, 0))}` : "", ev.latencyMs !== null ? ms(ev.latencyMs) : ""].filter(Boolean).join(" · "))),
    el("details", {}, el("summary", {}, "payload"), el("pre", {}, JSON.stringify(ev.payload, null, 2))));
}

function addEvent(ev) {
  if (run.events.some((e) => e.seq === ev.seq && e.trajectoryId === ev.trajectoryId)) return;
  run.events.push(ev);
  $("stages").append(eventItem(ev, Date.now() - run.started));
}

function setState(text, kind) {
  $("run-state").textContent = text;
  $("run-state").className = `badge state-${kind}`;
}

function verdictText() {
  const checks = run.events.filter((e) => e.stage === "validate");
  if (!checks.length) return "Validator: not consulted in this run";
  const p = checks[checks.length - 1].payload || {};
  if (p.fast_path) return "Validator: skipped (fast path: one name found by vector search)";
  return `Validator: ${p.sufficient ? "sufficient" : "not sufficient"}${p.rationale ? ` — ${p.rationale}` : ""}`;
}

function drawGraph(paths) {
  const box = $("graph");
  box.replaceChildren();
  if (!paths.length) { box.append(el("p", { class: "muted" }, "no relationship paths")); return; }
  const W = 150, H = 42, GAP_X = 80, GAP_Y = 26, PAD = 12;
  const nodes = new Map();
  const rows = [];
  const edges = new Map();
  for (const path of paths) {
    path.nodes.forEach((n, col) => {
      if (!nodes.has(n.id)) {
        rows[col] = (rows[col] || 0) + 1;
        nodes.set(n.id, { ...n, x: PAD + col * (W + GAP_X), y: PAD + (rows[col] - 1) * (H + GAP_Y) });
      }
    });
    path.rels.forEach((rel, i) => {
      const a = path.nodes[i], b = path.nodes[i + 1];
      if (a && b) edges.set(`${a.id}|${rel}|${b.id}`, { a: a.id, b: b.id, rel });
    });
  }
  const width = Math.max(...[...nodes.values()].map((n) => n.x)) + W + PAD;
  const height = Math.max(...[...nodes.values()].map((n) => n.y)) + H + PAD;
  const root = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "evidence paths" });
  const marker = svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" });
  marker.append(svg("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "arrowhead" }));
  const defs = svg("defs");
  defs.append(marker);
  root.append(defs);
  // an edge runs between the two boxes' borders, along the line joining their centres
  const border = (n, dx, dy) => {
    const t = Math.min(dx ? W / 2 / Math.abs(dx) : Infinity, dy ? H / 2 / Math.abs(dy) : Infinity);
    return [n.x + W / 2 + dx * t, n.y + H / 2 + dy * t];
  };
  for (const { a, b, rel } of edges.values()) {
    const p = nodes.get(a), q = nodes.get(b);
    const dx = q.x - p.x, dy = q.y - p.y;
    if (!dx && !dy) continue;
    const [x1, y1] = border(p, dx, dy);
    const [x2, y2] = border(q, -dx, -dy);
    const g = svg("g", { class: "edge" });
    g.append(svg("line", { x1, y1, x2, y2, "marker-end": "url(#arrow)" }),
             svg("text", { x: (x1 + x2) / 2, y: (y1 + y2) / 2 - 5, "text-anchor": "middle" }, rel));
    root.append(g);
  }
  for (const n of nodes.values()) {
    const name = n.entity ? n.entity.name : n.id.slice(0, 8);
    const g = svg("g", { class: `node type-${lower(n.entityType)}`, "data-id": n.id });
    g.append(svg("title", {}, `${name} (${lower(n.entityType)})`),
             svg("rect", { x: n.x, y: n.y, width: W, height: H, rx: 8 }),
             svg("text", { x: n.x + W / 2, y: n.y + 18, "text-anchor": "middle", class: "node-name" }, clip(name, 20)),
             svg("text", { x: n.x + W / 2, y: n.y + 33, "text-anchor": "middle", class: "node-type" }, lower(n.entityType)));
    root.append(g);
  }
  box.append(root);
}

// -- the conversation: every answer continues it; the thread shows its turns, each with its run ----------------

const conversation = { id: null, asked: null };

function addTurn(r) {
  if (!r.conversationId) return;  // the server could not keep the turn: the answer stands alone
  conversation.id = r.conversationId;
  $("conversation-id").textContent = r.conversationId;
  const link = el("a", { href: `#trajectory=${encodeURIComponent(r.trajectoryId)}` }, "run");
  const item = el("li", { class: "turn", dataset: { turn: r.turn, status: lower(r.status) } },
    el("p", { class: "asked" }, conversation.asked || ""),
    el("p", { class: "answered" }, r.answer, " ", link));
  const turns = $("turns");
  const same = turns.querySelector(`li[data-turn="${r.turn}"]`);
  if (same) same.replaceWith(item); else turns.append(item);
  $("thread").hidden = false;
}

function newConversation() {
  conversation.id = null;
  conversation.asked = null;
  $("turns").replaceChildren();
  $("conversation-id").textContent = "";
  $("thread").hidden = true;
}

function renderResult(r) {
  run.trajectoryId = r.trajectoryId;
  addTurn(r);
  const status = lower(r.status);
  setState(status.replace(/_/g, " "), status);
  const clarifying = r.status === "NEEDS_CLARIFICATION" && r.clarification;
  $("clarification").hidden = !clarifying;
  $("result").classList.toggle("clarifying", Boolean(clarifying));
  if (clarifying) {
    $("clarification-question").textContent = r.clarification.question;
    $("choices").replaceChildren(...r.clarification.choices.map((c, i) => {
      const button = el("button", { type: "button", class: "choice", dataset: { index: i, id: c.ref.id } },
        c.label, " ", el("span", { class: `badge type-${lower(c.ref.entityType)}` }, lower(c.ref.entityType)));
      button.addEventListener("click", () => clarify(r.trajectoryId, i));
      return button;
    }));
  }
  $("result").hidden = false;
  $("verdict").textContent = verdictText();
  $("status-line").textContent = [`${status.replace(/_/g, " ")}`, `${lower(r.mode)}`, `confidence ${r.confidence.toFixed(2)}`,
    `${r.turns} turn${r.turns === 1 ? "" : "s"}`, ms(r.runMs), r.evidence.terminationReason].filter(Boolean).join(" · ");
  $("answer").textContent = r.answer;
  $("warnings").replaceChildren(...r.warnings.map((w) => el("li", {}, w)));
  $("cards").replaceChildren(...(r.resultEntities.length ? r.resultEntities.map(card) : [el("p", { class: "muted" }, "no result entities")]));
  drawGraph(r.evidence.paths);
  $("facts").replaceChildren(...r.evidence.facts.map((f) => el("li", {}, f)));
  $("timings").tBodies[0].replaceChildren(...r.timings.filter((t) => t.ms > 0).map((t) =>
    el("tr", {}, el("th", {}, t.stage.replace(/_ms$/, "")), el("td", {}, ms(t.ms)))));
  const link = $("trajectory-link");
  link.href = `#trajectory=${encodeURIComponent(r.trajectoryId)}`;
  link.textContent = `Trajectory ${r.trajectoryId}`;
}

function resetRun() {
  if (run.controller) run.controller.abort();
  run.controller = new AbortController();
  run.events = [];
  run.started = Date.now();
  run.trajectoryId = null;
  $("stages").replaceChildren();
  $("clarification").hidden = true;
  $("result").hidden = true;
  $("run").hidden = false;
  showErrors(null);
  return run.controller;
}

// Streams a run's updates into the page: its events as they come, then its result.
async function follow(query, variables, controller) {
  $("ask").disabled = true;
  try {
    for await (const data of subscribe(query, variables, controller.signal)) {
      const update = data.searchAiRun || data.clarifyRun;
      if (update.__typename === "RunEvent") addEvent(update);
      else renderResult(update);
    }
    if ($("run-state").textContent === "running" || $("run-state").textContent === "continuing") {
      setState("ended without a result", "error");
    }
  } catch (e) {
    if (e.name === "AbortError") return;
    setState("failed", "error");
    showErrors(e);
  } finally {
    if (controller === run.controller) $("ask").disabled = false;
  }
}

function ask(question, mode, image) {
  const controller = resetRun();
  setState("running", "running");
  conversation.asked = question;
  return follow(RUN, { q: question, mode, image, c: conversation.id }, controller);
}

// The picture a question is about ("what anime is this from?"), as the base64 data URL the API takes; the server
// checks it (its size, that it is an image, that image search is configured) and says what is wrong.
function readImage(input) {
  const file = input.files && input.files[0];
  if (!file) return Promise.resolve(null);
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result);
    reader.onerror = () => reject(new Error(`could not read ${file.name}`));
    reader.readAsDataURL(file);
  });
}

// A choice resumes the run: its remaining events stream in below the ones already shown.
async function clarify(trajectoryId, index) {
  const picked = $("choices").querySelectorAll("button")[index];
  conversation.asked = picked ? `(chose) ${picked.textContent}` : conversation.asked;
  for (const b of $("choices").querySelectorAll("button")) b.disabled = true;
  if (run.controller) run.controller.abort();
  run.controller = new AbortController();
  showErrors(null);
  run.started = Date.now();  // the resumed run's events are timed from the choice
  setState("continuing", "running");
  await follow(CLARIFY, { t: trajectoryId, i: index }, run.controller);
  if ($("run-state").textContent === "failed") {
    for (const b of $("choices").querySelectorAll("button")) b.disabled = false;
  }
}

// -- the stored trajectory ---------------------------------------------------------------------------------

async function showTrajectory(id) {
  const panel = $("trajectory");
  panel.hidden = false;
  $("trajectory-id").textContent = id;
  $("trajectory-summary").textContent = "loading…";
  $("trajectory-events").replaceChildren();
  $("trajectory-json").textContent = "";
  try {
    const data = await gql(TRAJECTORY, { id });
    const t = data.trajectory;
    if (!t) { $("trajectory-summary").textContent = "No such trajectory for this tenant."; return; }
    $("trajectory-summary").textContent = `"${t.query}" · ${lower(t.mode)} · ${t.status} · ${t.events.length} events · started ${t.createdAt}`;
    const t0 = t.events.length ? Date.parse(t.events[0].createdAt) : 0;
    $("trajectory-events").replaceChildren(...t.events.map((e) => eventItem(e, Date.parse(e.createdAt) - t0)));
    $("trajectory-json").textContent = JSON.stringify(t, null, 2);
    panel.scrollIntoView({ block: "start" });
  } catch (e) {
    $("trajectory-summary").textContent = "";
    showErrors(e);
  }
}

function route() {
  const m = /^#trajectory=([0-9a-fA-F-]{36})$/.exec(location.hash);
  if (m) showTrajectory(m[1]);
  else $("trajectory").hidden = true;
}

// -- wiring ------------------------------------------------------------------------------------------------

function init() {
  $("endpoint").textContent = ENDPOINT;
  $("api-key").value = sessionStorage.getItem("rag.apiKey") || "";
  $("tenant").value = localStorage.getItem("rag.tenant") || "";
  $("api-key").addEventListener("change", () => sessionStorage.setItem("rag.apiKey", $("api-key").value.trim()));
  $("tenant").addEventListener("change", () => localStorage.setItem("rag.tenant", $("tenant").value.trim()));

  const search = $("search");
  search.addEventListener("input", () => {
    clearTimeout(typeahead.timer);
    typeahead.timer = setTimeout(() => suggest(search.value.trim()), 150);
  });
  search.addEventListener("keydown", (e) => {
    if (e.key === "ArrowDown" || e.key === "ArrowUp") { e.preventDefault(); moveActive(e.key === "ArrowDown" ? 1 : -1); }
    else if (e.key === "Enter" && typeahead.active >= 0) { e.preventDefault(); pick(typeahead.hits[typeahead.active]); }
    else if (e.key === "Escape") $("suggestions").hidden = true;
  });
  search.addEventListener("blur", () => { $("suggestions").hidden = true; });
  search.addEventListener("focus", () => { if (typeahead.hits.length) $("suggestions").hidden = false; });

  $("new-conversation").addEventListener("click", newConversation);
  $("ask-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const question = $("question").value.trim();
    if (!question) return;
    let image = null;
    try {
      image = await readImage($("image"));
    } catch (err) {
      showErrors(err);
      return;
    }
    ask(question, $("mode").value, image);
  });
  $("image-clear").addEventListener("click", () => { $("image").value = ""; });
  window.addEventListener("hashchange", route);
  route();
}

init();
