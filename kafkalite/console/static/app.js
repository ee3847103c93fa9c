// kafkalite console: one page, hash routes, JSON from /api/. Every piece of broker data (topic names, keys,
// values, headers, group and member ids) goes into the page as text (textContent / attribute values set
// through the DOM), never as markup; the Content-Security-Policy forbids inline script besides.
"use strict";

const TOKEN = document.querySelector('meta[name="kafkalite-token"]').content;
const main = document.getElementById("main");
const dialog = document.getElementById("dialog");
let timer = null;        // the current page's live refresh
let generation = 0;      // bumps on every navigation: stale answers are dropped

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "text") node.textContent = String(v);
    else if (k === "onclick" || k === "onsubmit" || k === "onchange") node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

function enc(s) { return encodeURIComponent(s); }
function num(n) { return n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US"); }
function bytes(n) {
  if (n === null || n === undefined) return "–";
  const u = ["B", "KiB", "MiB", "GiB", "TiB"]; let i = 0; let v = n;
  while (v >= 1024 && i < u.length - 1) { v /= 1024; i++; }
  return (i ? v.toFixed(1) : v) + " " + u[i];
}
function when(ms) { return ms < 0 ? "–" : new Date(ms).toISOString().replace("T", " ").replace("Z", " UTC"); }

async function api(path, body) {
  const init = body === undefined ? {} : {
    method: "POST", body: JSON.stringify(body),
    headers: { "Content-Type": "application/json", "X-Kafkalite-Token": TOKEN },
  };
  const resp = await fetch("/api/" + path, init);
  let data;
  try { data = await resp.json(); } catch (e) { data = { error: "HTTP " + resp.status }; }
  if (!resp.ok) throw new Error(data.error || ("HTTP " + resp.status));
  return data;
}

function table(headers, rows, id) {
  return el("table", { id: id },
    el("thead", {}, el("tr", {}, headers.map((h) => el("th", { text: h })))),
    el("tbody", {}, rows));
}
function td(v, cls) { return el("td", { class: cls, text: v }); }
function nd(v) { return td(num(v), "num"); }
// identifiers that are numbers (ports, node ids) are shown as they are written: 9092, never 9,092
function ident(v) { return td(v === null || v === undefined ? "–" : String(v), "num"); }
function ids(list) { return list && list.length ? list.join(",") : "–"; }

function showError(where, err) { where.replaceChildren(el("p", { class: "error", text: String(err.message || err) })); }

function live(fn, ms) {
  stopLive();
  const mine = generation;
  const tick = async () => {
    if (mine !== generation) return;
    try { await fn(); document.getElementById("live").className = "live"; }
    catch (e) { document.getElementById("live").className = "live stale"; }
    if (mine === generation) timer = setTimeout(tick, ms);
  };
  timer = setTimeout(tick, ms);
}
// Live updates are pushed by the broker (Server-Sent Events, /api/events): each event holds what the view's
// JSON endpoint answers. When the broker refuses a stream (all its stream slots taken) or the browser has no
// EventSource, the page polls that endpoint instead. window.__kafkaliteLive says which ("sse" or "poll").
let source = null;
function liveEvents(query, onData, endpoint, ms) {
  stopLive();
  const mine = generation;
  const mark = (ok) => { const l = document.getElementById("live"); if (l) l.className = ok ? "live" : "live stale"; };
  const poll = () => { window.__kafkaliteLive = "poll"; live(async () => onData(await api(endpoint)), ms); };
  if (typeof EventSource === "undefined") return poll();
  const es = new EventSource("/api/events?" + query);
  source = es;
  window.__kafkaliteLive = "sse";
  es.onmessage = async (e) => {
    if (mine !== generation) return;
    try { await onData(JSON.parse(e.data)); mark(true); } catch (err) { mark(false); }
  };
  es.addEventListener("error", (e) => {
    if (mine !== generation) return;
    mark(false);
    if (es.readyState === EventSource.CLOSED) { es.close(); if (source === es) source = null; poll(); }
  });
}
function stopLive() {
  if (timer) clearTimeout(timer);
  timer = null;
  if (source) { source.close(); source = null; }
}

// -- dialog (the confirmation step) -------------------------------------------------------------------
function openDialog(...children) {
  dialog.replaceChildren(el("div", { class: "box", role: "dialog" }, children));
  dialog.hidden = false;
}
function closeDialog() { dialog.hidden = true; dialog.replaceChildren(); }

// -- pages --------------------------------------------------------------------------------------------
async function pageBrokers() {
  const o = await api("overview");
  const filter = el("input", { id: "config-filter", placeholder: "filter configs" });
  const body = el("tbody");
  const fill = () => {
    const f = filter.value.toLowerCase();
    body.replaceChildren(...o.configs.filter((c) => c.name.includes(f)).map((c) =>
      el("tr", {}, td(c.name), td(c.value === null ? "null" : c.value), td(c.read_only ? "read-only" : "dynamic"))));
  };
  filter.addEventListener("input", fill);
  fill();
  main.replaceChildren(
    el("h1", { text: "Broker " + o.node_id }),
    table(["cluster id", "node id", "log dir", "topics", "connections"], [el("tr", {},
      td(o.cluster_id), nd(o.node_id), td(o.log_dir), nd(o.topics), el("td", { class: "num", id: "connections", text: num(o.connections) }))], "broker"),
    el("h2", { text: "Listeners" }),
    table(["name", "host", "port", "advertised"], o.listeners.map((l, i) => el("tr", {},
      td(l.name), td(l.host), ident(l.port), td(o.advertised[i] ? o.advertised[i].host + ":" + o.advertised[i].port : ""))), "listeners"),
    el("h2", { text: "Brokers" }),
    table(["node id", "host", "port", "status"], (o.brokers || []).map((b) => el("tr", { "data-node": b.node_id },
      ident(b.node_id), td(b.host), ident(b.port), td(b.up ? "running" : "stopped"))), "brokers"),
    el("h2", { text: "Configs" }), filter,
    el("table", { id: "configs" }, el("thead", {}, el("tr", {}, ["name", "value", "kind"].map((h) => el("th", { text: h })))), body));
  liveEvents("view=overview", (n) => {
    document.getElementById("connections").textContent = num(n.connections);
  }, "overview", 2000);
}

async function pageTopics() {
  const last = {};   // name -> [end_offsets, time_ms]
  const body = el("tbody");
  const render = (d) => {
    body.replaceChildren(...d.topics.map((t) => {
      const prev = last[t.name];
      const rate = prev && d.time_ms > prev[1] ? (t.end_offsets - prev[0]) * 1000 / (d.time_ms - prev[1]) : null;
      last[t.name] = [t.end_offsets, d.time_ms];
      return el("tr", { "data-topic": t.name },
        el("td", {}, el("a", { href: "#/topic/" + enc(t.name), text: t.name }), t.internal ? el("span", { class: "muted", text: " internal" }) : null),
        nd(t.partitions), el("td", { class: "num end", text: num(t.end_offsets) }), nd(t.messages), td(bytes(t.size) + (t.loaded < t.partitions ? " (" + t.loaded + "/" + t.partitions + " partitions loaded)" : ""), "num"),
        el("td", { class: "num rate", text: rate === null ? "–" : rate.toFixed(1) + "/s" }));
    }));
  };
  render(await api("topics"));
  const name = el("input", { id: "new-topic-name", placeholder: "name", required: true });
  const parts = el("input", { id: "new-topic-partitions", type: "number", min: 1, value: 1 });
  const configs = el("textarea", { id: "new-topic-configs", rows: 1, placeholder: "key=value per line" });
  const msg = el("div", { id: "topics-message" });
  const form = el("form", { id: "create-topic", onsubmit: (ev) => {
    ev.preventDefault();
    const cfg = {};
    for (const line of configs.value.split("\n")) {
      const i = line.indexOf("=");
      if (i > 0) cfg[line.slice(0, i).trim()] = line.slice(i + 1).trim();
    }
    const req = { name: name.value, partitions: Number(parts.value), configs: cfg };
    openDialog(el("p", {}, "Create topic ", el("b", { text: req.name }), " with " + req.partitions + " partition(s)?"),
      el("button", { id: "confirm-create", onclick: async () => {
        closeDialog();
        try { await api("topics", req); msg.replaceChildren(el("p", { class: "ok", text: "created " + req.name })); render(await api("topics")); }
        catch (e) { showError(msg, e); }
      }, text: "Create" }), " ", el("button", { onclick: closeDialog, text: "Cancel" }));
  } },
  el("label", {}, "Topic", name), el("label", {}, "Partitions", parts), el("label", {}, "Configs", configs),
  el("button", { type: "submit", text: "Create topic…" }));
  main.replaceChildren(el("h1", { text: "Topics" }),
    el("table", { id: "topics" }, el("thead", {}, el("tr", {}, ["topic", "partitions", "end offsets", "messages", "size", "produce rate"].map((h) => el("th", { text: h })))), body),
    el("h2", { text: "Create a topic" }), form, msg);
  liveEvents("view=topics", render, "topics", 1000);
}

async function pageTopic(name) {
  const partsBody = el("tbody");
  const segsBody = el("tbody");
  const last = {};
  const render = (t) => {
    partsBody.replaceChildren(...t.partitions.map((p) => {
      const prev = last[p.partition];
      const rate = prev && t.time_ms > prev[1] ? (p.high_watermark - prev[0]) * 1000 / (t.time_ms - prev[1]) : null;
      last[p.partition] = [p.high_watermark, t.time_ms];
      return el("tr", { "data-partition": p.partition },
        nd(p.partition), el("td", { class: "num leader", text: p.leader < 0 ? "none" : String(p.leader) }),
        td(ids(p.replicas), "replicas"), td(ids(p.isr), "isr"),
        el("td", { class: "num start", text: num(p.log_start_offset) }),
        el("td", { class: "num hw", text: num(p.high_watermark) }), nd(p.last_stable_offset), td(bytes(p.size), "num"),
        nd(p.segment_count), el("td", { class: "num rate", text: rate === null ? "–" : rate.toFixed(1) + "/s" }),
        el("td", {}, el("a", { href: "#/messages/" + enc(name) + "/" + p.partition, text: "messages" })));
    }));
    segsBody.replaceChildren(...t.partitions.flatMap((p) => p.segments.map((s) =>
      el("tr", {}, nd(p.partition), td(s.file), nd(s.base_offset), nd(s.next_offset), td(bytes(s.size), "num"), td(when(s.max_timestamp))))));
  };
  const t = await api("topics/" + enc(name));
  render(t);
  const msg = el("div", { id: "topic-message" });
  const del = el("button", { class: "danger", id: "delete-topic", text: "Delete topic…", onclick: () => {
    const typed = el("input", { id: "confirm-name", placeholder: name });
    openDialog(el("p", {}, "Delete topic ", el("b", { text: name }), " and all its records? Type its name to confirm."),
      typed, " ", el("button", { class: "danger", id: "confirm-delete", text: "Delete", onclick: async () => {
        closeDialog();
        try { await api("topics/" + enc(name) + "/delete", { confirm: typed.value }); location.hash = "#/topics"; }
        catch (e) { showError(msg, e); }
      } }), " ", el("button", { onclick: closeDialog, text: "Cancel" }));
  } });
  main.replaceChildren(el("h1", {}, "Topic ", el("span", { id: "topic-name", text: name })),
    el("p", { class: "muted", text: "id " + t.topic_id + (t.internal ? " · internal" : "") }),
    t.internal ? null : del, msg,
    el("h2", { text: "Partitions" }),
    el("table", { id: "partitions" }, el("thead", {}, el("tr", {}, ["partition", "leader", "replicas", "in sync", "log start", "high watermark", "last stable", "size", "segments", "produce rate", ""].map((h) => el("th", { text: h })))), partsBody),
    el("h2", { text: "Segment files" }),
    el("table", { id: "segments" }, el("thead", {}, el("tr", {}, ["partition", "file", "base offset", "next offset", "size", "max timestamp"].map((h) => el("th", { text: h })))), segsBody),
    el("h2", { text: "Configs" }),
    table(["name", "value", "source"], t.configs.map((c) => el("tr", { class: c.default ? "muted" : null },
      td(c.name), td(c.value === null ? "null" : c.value), td(c.default ? "default" : "override"))), "topic-configs"));
  liveEvents("view=topic&id=" + enc(name), render, "topics/" + enc(name), 1000);
}

function showBytes(v) {
  if (v === null) return el("span", { class: "null", text: "null" });
  return el("div", {}, el("span", { class: "fmt", text: v.format + (v.truncated ? " · first part of " + bytes(v.size) : "") }),
    el("pre", { class: "v-" + v.format, text: v.text }));
}

async function pageMessages(name, partition) {
  const from = el("select", { id: "from" }, ["end", "beginning", "offset", "timestamp"].map((m) => el("option", { value: m, text: m })));
  const offset = el("input", { id: "offset", type: "number", min: 0, placeholder: "offset" });
  const stamp = el("input", { id: "timestamp", type: "datetime-local", step: 1 });
  const limit = el("input", { id: "limit", type: "number", min: 1, max: 200, value: 50 });
  const q = el("input", { id: "search", placeholder: "search text (bounded window)" });
  const field = el("select", { id: "search-in" }, ["any", "key", "value"].map((m) => el("option", { value: m, text: m })));
  const status = el("p", { id: "messages-status", class: "muted" });
  const body = el("tbody");
  const next = el("button", { type: "button", id: "next", text: "Next ›", disabled: true, onclick: () => {
    from.value = "offset"; offset.value = next.dataset.offset; load();
  } });
  const load = async () => {
    const params = new URLSearchParams({ from: from.value, limit: limit.value || "50", q: q.value, in: field.value });
    if (from.value === "offset") params.set("offset", offset.value);
    if (from.value === "timestamp") params.set("timestamp", stamp.value ? new Date(stamp.value + "Z").toISOString() : "");
    try {
      const d = await api("topics/" + enc(name) + "/partitions/" + partition + "/messages?" + params);
      next.disabled = d.next_offset >= d.high_watermark;
      next.dataset.offset = d.next_offset;
      status.textContent = d.records.length + " record(s) from offset " + d.from_offset + "; log " + d.log_start_offset +
        "…" + d.high_watermark + "; scanned " + d.scanned + ", stopped at " + d.next_offset + " (" + d.stopped + ")";
      status.className = "muted";
      body.replaceChildren(...d.records.map((r) => el("tr", { "data-offset": r.offset },
        nd(r.offset), td(when(r.timestamp)), el("td", { class: "key" }, showBytes(r.key)), el("td", { class: "value" }, showBytes(r.value)),
        el("td", { class: "headers" }, r.headers.map((h) => el("div", {}, el("b", { text: h.key + ": " }), h.value === null ? "null" : h.value.text))))));
    } catch (e) { status.textContent = String(e.message); status.className = "error"; }
  };
  main.replaceChildren(
    el("h1", {}, "Messages of ", el("a", { href: "#/topic/" + enc(name), text: name }), " partition " + partition),
    el("form", { class: "controls", id: "browse", onsubmit: (ev) => { ev.preventDefault(); load(); } },
      el("label", {}, "From", from), el("label", {}, "Offset", offset), el("label", {}, "Time (UTC)", stamp),
      el("label", {}, "Max records", limit), el("label", {}, "Search", q), el("label", {}, "In", field),
      el("button", { type: "submit", id: "load", text: "Load" }), next),
    status, el("table", { id: "messages" }, el("thead", {}, el("tr", {}, ["offset", "timestamp", "key", "value", "headers"].map((h) => el("th", { text: h })))), body));
  await load();
}

async function pageGroups() {
  const body = el("tbody");
  const render = (d) => body.replaceChildren(...d.groups.map((g) => el("tr", { "data-group": g.group_id },
    el("td", {}, el("a", { href: "#/group/" + enc(g.group_id), text: g.group_id })), td(g.type, "type"), td(g.state, "state"),
    nd(g.members), nd(g.partitions), el("td", { class: "num lag", text: g.lag === null ? "–" : num(g.lag) }))));
  render(await api("groups"));
  main.replaceChildren(el("h1", { text: "Consumer groups" }),
    el("table", { id: "groups" }, el("thead", {}, el("tr", {}, ["group", "type", "state", "members", "partitions", "lag"].map((h) => el("th", { text: h })))), body),
    el("p", { class: "muted", text: "Every group this broker coordinates: classic, consumer (KIP-848), streams (KIP-1071) and share (KIP-932); lag = high watermark − committed offset (share groups commit none)." }));
  liveEvents("view=groups", render, "groups", 1000);
}

async function pageGroup(gid) {
  const membersBody = el("tbody");
  const offsetsBody = el("tbody");
  const sharesBody = el("tbody");
  const head = el("p", { id: "group-state" });
  const render = (g) => {
    head.textContent = (g.type || "classic") + " group · state " + g.state + (g.generation === null ? "" : " · generation " + g.generation) + " · protocol " + (g.protocol || g.protocol_type || "–") + " · " + g.members.length + " member(s)";
    membersBody.replaceChildren(...g.members.map((m) => el("tr", {}, td(m.member_id), td(m.client_id), td(m.client_host),
      td(m.assignment.map((a) => a.topic + ": " + a.partitions.join(",")).join("; ") +
        (m.tasks ? " (tasks: " + ["active", "standby", "warmup"].filter((k) => m.tasks[k].length)
          .map((k) => k + " " + m.tasks[k].join(",")).join("; ") + ")" : "")))));
    offsetsBody.replaceChildren(...g.offsets.map((o) => el("tr", { "data-tp": o.topic + "-" + o.partition },
      td(o.topic), nd(o.partition), el("td", { class: "num committed", text: num(o.committed) }),
      nd(o.high_watermark), el("td", { class: "num lag", text: num(o.lag) }), td(o.member || ""))));
    sharesBody.replaceChildren(...(g.share_partitions || []).map((s) => el("tr", { "data-tp": s.topic + "-" + s.partition },
      td(s.topic), nd(s.partition), el("td", { class: "num start", text: num(s.start_offset) }),
      el("td", { class: "num inflight", text: num(s.in_flight) }))));
    return g;
  };
  const g = render(await api("groups/" + enc(gid)));
  const topics = [...new Set(g.offsets.map((o) => o.topic))];
  const topic = el("select", { id: "reset-topic" }, topics.map((t) => el("option", { value: t, text: t })));
  const to = el("select", { id: "reset-to" }, ["earliest", "latest", "offset", "shift", "timestamp"].map((m) => el("option", { value: m, text: m })));
  const value = el("input", { id: "reset-value", placeholder: "offset / shift / ISO time" });
  const msg = el("div", { id: "reset-message" });
  const form = el("form", { id: "reset", onsubmit: async (ev) => {
    ev.preventDefault();
    msg.replaceChildren();
    const req = { topic: topic.value, to: to.value };
    if (["offset", "shift", "timestamp"].includes(to.value)) req.value = value.value;
    let plan;
    try { plan = await api("groups/" + enc(gid) + "/reset-offsets", req); }
    catch (e) { showError(msg, e); return; }
    openDialog(el("p", {}, "Reset the offsets of group ", el("b", { text: gid }), " on ", el("b", { text: req.topic }), "?"),
      table(["partition", "current", "new"], plan.plan.map((r) => el("tr", {}, nd(r.partition), nd(r.current), nd(r.new))), "reset-plan"),
      el("button", { class: "danger", id: "confirm-reset", text: "Execute", onclick: async () => {
        closeDialog();
        try { await api("groups/" + enc(gid) + "/reset-offsets", { ...req, execute: true });
              msg.replaceChildren(el("p", { class: "ok", text: "offsets reset" })); render(await api("groups/" + enc(gid))); }
        catch (e) { showError(msg, e); }
      } }), " ", el("button", { onclick: closeDialog, text: "Cancel" }));
  } }, el("label", {}, "Topic", topic), el("label", {}, "To", to), el("label", {}, "Value", value),
  el("button", { type: "submit", id: "reset-preview", text: "Reset offsets…" }));
  main.replaceChildren(el("h1", {}, "Group ", el("span", { id: "group-id", text: gid })), head,
    el("h2", { text: "Members" }),
    el("table", { id: "members" }, el("thead", {}, el("tr", {}, ["member", "client id", "host", "assignment"].map((h) => el("th", { text: h })))), membersBody),
    el("h2", { text: "Offsets and lag" }),
    el("table", { id: "offsets" }, el("thead", {}, el("tr", {}, ["topic", "partition", "committed", "high watermark", "lag", "member"].map((h) => el("th", { text: h })))), offsetsBody),
    ...(g.type === "share" ? [el("h2", { text: "Share partitions" }),
      el("table", { id: "share-partitions" }, el("thead", {}, el("tr", {}, ["topic", "partition", "start offset", "in flight"].map((h) => el("th", { text: h })))), sharesBody)] : []),
    el("h2", { text: "Reset offsets" }),
    el("p", { class: "muted", text: "Only for a group without members (as kafka-consumer-groups). You see the plan before it runs." }),
    form, msg);
  liveEvents("view=group&id=" + enc(gid), render, "groups/" + enc(gid), 1000);
}

// -- schema registry ------------------------------------------------------------------------------------
async function pageSchemas() {
  const d = await api("schemas");
  if (!d.enabled) {
    main.replaceChildren(el("h1", { text: "Schemas" }),
      el("p", { class: "muted", id: "schemas-off", text: "The built-in schema registry is off: start the broker with --schema-registry." }));
    return;
  }
  const body = el("tbody", {}, d.subjects.map((s) => el("tr", { "data-subject": s.subject, class: s.deleted ? "deleted" : "" },
    el("td", {}, el("a", { href: "#/schema/" + enc(s.subject), text: s.subject })), td(s.type, "type"), nd(s.versions),
    nd(s.latest), ident(s.id), td(s.compatibility, "compatibility"), td(s.mode, "mode"))));
  main.replaceChildren(el("h1", { text: "Schemas" }),
    el("p", { class: "muted", id: "schemas-url", text: "Schema Registry at " + (d.url || "–") + " · " + num(d.count) + " subject(s)" + (d.count > d.subjects.length ? " (first " + num(d.subjects.length) + " shown)" : "") }),
    el("table", { id: "schemas" }, el("thead", {}, el("tr", {}, ["subject", "type", "versions", "latest", "id", "compatibility", "mode"].map((h) => el("th", { text: h })))), body),
    el("p", { class: "muted", text: "Subjects of the _schemas topic; soft-deleted subjects are greyed out. The same registry answers Confluent's REST API and `kafkalite schemas`." }));
}

async function pageSchema(subject) {
  const d = await api("schemas/" + enc(subject));
  const versions = d.versions.map((v) => el("section", { class: "schema-version" + (v.deleted ? " deleted" : ""), "data-version": String(v.version) },
    el("h2", { text: "version " + v.version + " · id " + v.id + " · " + v.type + (v.deleted ? " · soft-deleted" : "") }),
    v.references.length ? el("p", { class: "muted", text: "references: " + v.references.map((r) => r.name + " → " + r.subject + " v" + r.version).join(", ") }) : "",
    el("pre", { class: "schema", text: prettySchema(v) })));
  main.replaceChildren(el("h1", { text: "Subject " + d.subject }),
    el("p", { id: "schema-config", text: "compatibility " + d.compatibility + " · mode " + d.mode + " · " + d.versions.length + " version(s)" }),
    ...versions.reverse());
}

function prettySchema(v) {
  if (v.type === "PROTOBUF") return v.schema;
  try { return JSON.stringify(JSON.parse(v.schema), null, 2); } catch (e) { return v.schema; }
}

// -- router -------------------------------------------------------------------------------------------
async function route() {
  generation++;
  stopLive();
  closeDialog();
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  for (const a of document.querySelectorAll("header nav a")) a.classList.remove("active");
  const nav = { brokers: "nav-brokers", topics: "nav-topics", topic: "nav-topics", messages: "nav-topics", groups: "nav-groups", group: "nav-groups", schemas: "nav-schemas", schema: "nav-schemas" }[parts[0]];
  if (nav) document.getElementById(nav).classList.add("active");
  main.setAttribute("data-page", parts[0] || "topics");
  main.removeAttribute("data-ready");
  try {
    if (parts[0] === "brokers") await pageBrokers();
    else if (parts[0] === "topic" && parts[1]) await pageTopic(parts[1]);
    else if (parts[0] === "messages" && parts[1] && parts[2] !== undefined) await pageMessages(parts[1], Number(parts[2]));
    else if (parts[0] === "groups") await pageGroups();
    else if (parts[0] === "group" && parts[1]) await pageGroup(parts.slice(1).join("/"));
    else if (parts[0] === "schemas") await pageSchemas();
    else if (parts[0] === "schema" && parts[1]) await pageSchema(parts.slice(1).join("/"));
    else { main.setAttribute("data-page", "topics"); await pageTopics(); }
  } catch (e) { showError(main, e); }
  main.setAttribute("data-ready", String(generation));
}

window.addEventListener("hashchange", route);
route();
