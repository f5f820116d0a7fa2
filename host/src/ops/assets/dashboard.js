// Herald's dashboard: polls api/dashboard, follows events/stream. Read-only,
// no framework, no build step. Everything from the daemon (plugin output
// included) reaches the page through textContent, never parsed as HTML.
//
// Connections are few: a browser opens at most six HTTP/1.1 connections to
// one host, and an open event stream holds one. So only a visible tab
// follows the stream and polls; a hidden one closes its stream and stops
// polling until it is shown again. What cannot be kept live says so: the
// feed badge turns "stale" when the stream cannot connect or falls silent
// (the daemon sends a heartbeat every few seconds), and the page is marked
// stale when a poll fails.
"use strict";

const POLL_MS = 2000;
const FEED_ROWS = 200;
// The stream's heartbeat comes every 5 s; this long without any message and
// the feed is stale.
const STREAM_SILENCE_MS = 12000;

const $ = (id) => document.getElementById(id);

// h("div", {class: "x", dataset: {plugin: "p"}}, "text", child, …)
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "dataset") Object.assign(el.dataset, value);
    else if (key === "open") el.open = Boolean(value);
    else el.setAttribute(key, value);
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

const badge = (text, tone) => h("span", { class: "badge " + (tone || "") }, text);

function clock(ms) {
  return new Date(ms).toLocaleTimeString([], { hour12: false });
}

function ago(iso) {
  if (!iso) return "";
  const seconds = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  if (seconds < 60) return Math.round(seconds) + " s ago";
  if (seconds < 3600) return Math.round(seconds / 60) + " min ago";
  if (seconds < 86400) return (seconds / 3600).toFixed(1) + " h ago";
  return (seconds / 86400).toFixed(1) + " d ago";
}

function duration(micros) {
  if (micros === null || micros === undefined || Number.isNaN(micros)) return "–";
  if (micros < 1000) return Math.round(micros) + " µs";
  if (micros < 1e6) return (micros / 1000).toFixed(micros < 1e4 ? 2 : 1) + " ms";
  return (micros / 1e6).toFixed(2) + " s";
}

function rate(perSecond) {
  if (perSecond === null || perSecond === undefined) return "–";
  if (perSecond === 0) return "0";
  return perSecond < 10 ? perSecond.toFixed(1) : Math.round(perSecond).toString();
}

// Sums of a plugin's counters over its subscriptions.
function totals(plugin) {
  const sum = { delivered: 0, failed: 0, skipped: 0, queueDepth: 0, callMicros: 0 };
  for (const sub of plugin.subscriptions) for (const key in sum) sum[key] += sub[key];
  return sum;
}

// Previous totals by plugin (and revision), for rates.
let previous = new Map();
const openLogs = new Set();

function pluginState(plugin, dispatching) {
  if (plugin.degraded) return ["degraded", "bad"];
  if (!plugin.dispatching) return [dispatching ? "starting" : "standing by", ""];
  if (plugin.caches && !plugin.caches.synced) return ["waiting for caches", "warn"];
  if (!plugin.synced) return ["initial list", "warn"];
  if (plugin.lastError && !plugin.lastError.skipped) return ["retrying", "warn"];
  return ["running", "ok"];
}

// One thing readiness waits for, as /readyz words it.
function holdLine(hold) {
  if (hold.kind === "informer") return `informer ${hold.name}: ${hold.why}`;
  if (hold.kind === "plugin") return `plugin ${hold.name}: ${hold.why}`;
  return hold.why;
}

function renderReplica(snapshot) {
  const r = snapshot.replica;
  const readiness = r.readiness || { holding: [], notHolding: [] };
  const refused = readiness.holding.some((hold) => hold.failure);
  $("version").textContent = "v" + snapshot.version;
  $("replica").replaceChildren(
    h("span", {}, "replica ", h("strong", {}, r.identity || "unknown")),
    r.dispatching ? badge("dispatching", "ok") : badge("standing by (follower)", "warn"),
    r.lease ? h("span", { class: "muted" }, "lease " + r.lease) : h("span", { class: "muted" }, "no leader election"),
    r.shuttingDown ? badge("shutting down", "bad") : r.ready ? badge("ready", "ok")
      : badge("not ready", refused ? "bad" : "warn"),
  );
  const list = $("readiness");
  list.replaceChildren(
    ...readiness.holding.map((hold) => h("li", { dataset: { hold: hold.kind + ":" + hold.name } }, holdLine(hold))),
    ...readiness.notHolding.map((hold) => h("li", { class: "spared", dataset: { hold: hold.kind + ":" + hold.name } },
      "not holding readiness: " + holdLine(hold))));
  list.hidden = list.children.length === 0;
}

function renderPlugins(snapshot) {
  const now = snapshot.nowMs;
  const next = new Map();
  const cards = snapshot.plugins.map((plugin) => {
    const sum = totals(plugin);
    const id = plugin.name + "@" + plugin.sha256;
    const before = previous.get(id);
    next.set(id, { at: now, ...sum });
    const seconds = before ? (now - before.at) / 1000 : 0;
    const per = (key) => (before && seconds > 0 ? Math.max(0, sum[key] - before[key]) / seconds : null);
    const calls = sum.delivered + sum.failed;
    const recentCalls = before ? calls - (before.delivered + before.failed) : 0;
    const recentLatency = recentCalls > 0 ? (sum.callMicros - before.callMicros) / recentCalls : null;
    const [state, tone] = pluginState(plugin, snapshot.replica.dispatching);
    const stat = (label, value, total, bad) =>
      h("div", { class: "stat" + (bad ? " bad" : "") },
        h("div", { class: "value" }, value), h("div", { class: "label" }, label),
        h("div", { class: "total" }, total));
    const logs = plugin.logs || [];
    const details = h("details", { open: openLogs.has(plugin.name), dataset: { logsOf: plugin.name } },
      h("summary", {}, `recent log lines (${logs.length})`),
      h("div", { class: "logs" },
        logs.length === 0 ? h("div", { class: "empty" }, "nothing logged yet")
          : logs.slice().reverse().map((line) => h("div", { class: line.level },
            `${clock(line.atMs)} ${line.level.toUpperCase().padEnd(5)} ${line.message}`))));
    details.addEventListener("toggle", () => {
      if (details.open) openLogs.add(plugin.name); else openLogs.delete(plugin.name);
    });
    const error = plugin.lastError;
    return h("article", { class: "card", dataset: { plugin: plugin.name } },
      h("h3", {}, plugin.name, h("span", { class: "muted" }, plugin.version), badge(state, tone),
        plugin.mode === "dry-run" && badge("dry-run", "warn")),
      h("div", { class: "meta" },
        `revision ${plugin.sha256.slice(0, 12)} · loaded ${ago(plugin.since)} · owner `,
        h("strong", {}, snapshot.replica.identity || "this replica"),
        plugin.dispatching ? " (dispatching)" : " (standing by)"),
      plugin.caches && !plugin.caches.synced && h("div", { class: "meta", dataset: { waiting: "caches" } },
        "no delivery until these caches have their initial list: ",
        h("code", {}, plugin.caches.waitingFor.join(", ")),
        ` (waiting ${duration(plugin.caches.waitedMs * 1000)})`),
      h("div", { class: "stats" },
        stat("delivered/s", rate(per("delivered")), sum.delivered + " total"),
        stat("failed/s", rate(per("failed")), sum.failed + " total", sum.failed > 0),
        stat("skipped/s", rate(per("skipped")), sum.skipped + " total", sum.skipped > 0),
        stat("latency", duration(recentLatency), "mean " + duration(calls ? sum.callMicros / calls : null)),
      ),
      h("div", { class: "meta", dataset: { reads: plugin.name } }, "reads ",
        (plugin.reads || []).map((read, i) => [i > 0 && " · ", h("code", {}, read.kind),
          read.namespace ? " in " + read.namespace : " (all namespaces)",
          read.allowed === "granted" ? " granted" : read.allowed === "by-default" ? " by default" : " NOT ALLOWED"])),
      h("ul", { class: "subs" }, plugin.subscriptions.map((sub) =>
        h("li", {}, h("code", {}, sub.informer), " · queue ", h("strong", {}, sub.queueDepth),
          sub.synced ? "" : " · initial list", sub.degraded ? " · degraded: " + sub.degraded : ""))),
      plugin.scan && scanReport(plugin.scan),
      error && h("div", { class: "error" },
        h("strong", {}, error.skipped ? "last error (skipped): " : "last error (retried): "),
        `${error.message} — ${error.notification}, ${ago(error.at)}`),
      details);
  });
  previous = next;
  $("plugin-count").textContent = "(" + snapshot.plugins.length + ")";
  $("plugins").replaceChildren(...(cards.length ? cards
    : [h("p", { class: "empty" }, "No plugin running: drop a .wasm file into the plugin directory.")]));
  $("files").replaceChildren(...snapshot.files.map((file) =>
    h("div", { class: "error", dataset: { file: file.file } },
      h("strong", {}, `${file.file}: ${file.state}`),
      file.plugin ? ` (the running version of ${file.plugin} stays)` : "",
      file.lastError ? " — " + file.lastError : "")));
}

// What a plugin's validate found among the objects that already exist.
const SCAN_SHOWN = 10;
function scanReport(scan) {
  const judged = `${scan.passed + scan.failed + scan.undecided} judged` +
    (scan.undecided ? `, ${scan.undecided} undecided` : "");
  if (scan.failing === 0) {
    return h("div", { class: "meta", dataset: { scan: "pass" } }, "existing objects: none fails (" + judged + ")");
  }
  const shown = scan.violations.slice(0, SCAN_SHOWN);
  const more = scan.failing - shown.length;
  return h("div", { class: "error", dataset: { scan: "fail" } },
    h("strong", {}, `existing objects failing its validation: ${scan.failing}`), ` (${judged})`,
    h("ul", { class: "violations" }, shown.map((v) =>
      h("li", {}, h("code", {}, `${v.kind} ${v.namespace ? v.namespace + "/" : ""}${v.name}`), ": " + v.message)),
      more > 0 && h("li", { class: "muted" }, `and ${more} more (see /plugins)`)));
}

function renderInformers(snapshot) {
  $("informers").replaceChildren(...snapshot.informers.map((informer) =>
    h("tr", { dataset: { informer: informer.key } },
      h("td", {}, h("code", {}, informer.key)),
      h("td", { dataset: { cluster: informer.cluster } }, informer.cluster),
      h("td", { class: "num" }, informer.objects),
      h("td", { title: informer.failure ? informer.failure.message : "" },
        informer.synced ? badge("synced", "ok")
          : informer.failure && informer.failure.code === 403 ? badge(`forbidden: ${informer.failure.verb}`, "bad")
            : informer.failure ? badge("failing", "bad") : badge("syncing", "warn")),
      informer.protobufFallback
        ? h("td", { title: `this Herald cannot read the server's protobuf for this kind (${informer.protobufFallback}); read as JSON since` },
          badge("json: protobuf fallback", "warn"))
        : h("td", { title: informer.encoding === "protobuf" ? "read in protobuf, handed to plugins as JSON" : "" },
          informer.encoding),
      h("td", { class: "num" }, informer.watchRestarts),
      h("td", { class: "num" }, informer.relists),
      h("td", { class: "num" }, informer.errors),
      h("td", { class: "num" }, informer.events),
      h("td", { class: "num" }, informer.listeners))));
}

const ACTION_TONE = { loaded: "ok", swapped: "ok", refused: "bad", disabled: "warn", unloaded: "" };

function renderReloads(snapshot) {
  const rows = snapshot.reloads.map((record) =>
    h("tr", {},
      h("td", { title: record.at }, ago(record.at)),
      h("td", {}, badge(record.action, ACTION_TONE[record.action])),
      h("td", {}, record.plugin || "–"),
      h("td", { class: "mono" }, record.from ? `${record.from} → ${record.revision}` : record.revision || ""),
      h("td", { class: "mono", title: record.file }, record.file.split("/").pop()),
      h("td", {}, record.detail || "")));
  $("reloads").replaceChildren(...(rows.length ? rows
    : [h("tr", {}, h("td", { colspan: 6, class: "empty" }, "nothing loaded yet"))]));
}

let feedMeta = { published: 0, at: 0 };
let lastFeed = null;

function renderFeedMeta(feed, nowMs) {
  lastFeed = feed;
  if (feedMeta.at && nowMs > feedMeta.at) {
    const perSecond = (feed.published - feedMeta.published) / ((nowMs - feedMeta.at) / 1000);
    $("feed-rate").textContent = `(${rate(Math.max(0, perSecond))}/s)`;
  }
  feedMeta = { published: feed.published, at: nowMs };
  // A snapshot taken before this page's own stream was counted still knows
  // this page watches once its stream is open.
  const watchers = Math.max(feed.watchers, streamOpen() ? 1 : 0);
  $("feed-dropped").textContent =
    `${watchers}/${feed.maxWatchers} watching · ${feed.dropped} dropped for slow watchers`;
}

let pollTimer = null;
let polling = false;
// The cluster of a delivery that names none (the default one's name).
let defaultCluster = "";

async function poll() {
  if (polling) return;
  polling = true;
  clearTimeout(pollTimer);
  pollTimer = null;
  try {
    const response = await fetch("api/dashboard", { cache: "no-store" });
    if (!response.ok) throw new Error(response.status + " " + response.statusText);
    const snapshot = await response.json();
    renderReplica(snapshot);
    renderPlugins(snapshot);
    defaultCluster = snapshot.defaultCluster;
    renderInformers(snapshot);
    renderReloads(snapshot);
    renderFeedMeta(snapshot.feed, snapshot.nowMs);
    $("updated").textContent = "updated " + clock(snapshot.nowMs);
    document.body.dataset.polled = "yes";
    document.body.dataset.stale = "no";
  } catch (error) {
    $("updated").textContent = "stale: cannot reach the daemon (" + error.message + ")";
    document.body.dataset.stale = "yes";
  } finally {
    polling = false;
    // A hidden tab stops polling; showing it polls at once.
    if (!document.hidden) pollTimer = setTimeout(poll, POLL_MS);
  }
}

// The live feed: rows are added once per animation frame, newest on top.
let pending = [];
let received = 0;
let lostByThisPage = 0;

function feedRow(event) {
  const tone = event.outcome === "delivered" ? (event.attempts > 1 ? "warn" : "ok")
    : event.outcome === "retrying" ? "warn" : "bad";
  const outcome = event.outcome === "delivered" && event.attempts > 1
    ? `delivered after ${event.attempts} attempts`
    : event.outcome === "retrying" ? `retrying (attempt ${event.attempts} failed)` : event.outcome;
  return h("tr", { class: "fresh", dataset: { feedPlugin: event.plugin }, title: event.error || "" },
    h("td", {}, clock(event.atMs)),
    h("td", {}, event.plugin),
    h("td", {}, event.cluster || defaultCluster),
    h("td", {}, event.event + (event.initial ? " (initial)" : "")),
    h("td", { class: "mono" }, event.resource + " " + event.key),
    h("td", {}, badge(outcome, tone)),
    h("td", { class: "num" }, duration(event.micros)));
}

function flush() {
  const body = $("feed");
  if (pending.length && !$("feed-pause").checked) {
    const rows = pending.slice(-FEED_ROWS).reverse().map(feedRow);
    body.prepend(...rows);
    while (body.rows.length > FEED_ROWS) body.deleteRow(-1);
    pending = [];
  }
  requestAnimationFrame(flush);
}

// The stream: open while the tab is visible, closed while it is hidden.
let source = null;
let lastMessageAt = 0;

function streamOpen() {
  return source !== null && source.readyState === EventSource.OPEN;
}

function setStreamState(state, text, tone) {
  document.body.dataset.stream = state;
  const badgeEl = $("stream-state");
  badgeEl.textContent = text;
  badgeEl.className = "badge " + tone;
}

function follow() {
  if (source !== null) return;
  source = new EventSource("events/stream");
  lastMessageAt = Date.now();
  setStreamState("connecting", "feed: connecting", "");
  const heard = () => {
    lastMessageAt = Date.now();
    if (document.body.dataset.stream !== "live") {
      setStreamState("live", lostByThisPage ? `feed: live (this page fell behind, ${lostByThisPage} lost)` : "feed: live", "ok");
    }
  };
  source.onopen = () => {
    heard();
    // Count this page among the watchers at once, without waiting for a poll.
    if (lastFeed) renderFeedMeta(lastFeed, feedMeta.at);
  };
  source.onerror = () => {
    // The browser retries by itself (the daemon asks for 2 s); until then,
    // and whenever it cannot connect (the daemon is down, or has all the
    // streams it takes), what the feed shows is stale.
    setStreamState("stale", source.readyState === EventSource.CLOSED
      ? "feed: stale (not connected; the page still polls)" : "feed: stale (reconnecting)", "stale");
    if (source.readyState === EventSource.CLOSED) {
      source = null;
      setTimeout(() => { if (!document.hidden) follow(); }, POLL_MS * 5);
    }
  };
  source.addEventListener("heartbeat", heard);
  source.addEventListener("delivery", (message) => {
    heard();
    pending.push(JSON.parse(message.data));
    document.body.dataset.received = String(++received);
    if (pending.length > FEED_ROWS) pending = pending.slice(-FEED_ROWS);
  });
  source.addEventListener("dropped", (message) => {
    lostByThisPage += JSON.parse(message.data).dropped;
    heard();
    $("stream-state").textContent = `feed: live (this page fell behind, ${lostByThisPage} lost)`;
  });
}

function unfollow() {
  if (source === null) return;
  source.close();
  source = null;
  setStreamState("paused", "feed: paused (tab hidden)", "");
}

// A stream that says nothing, not even its heartbeat, is stale.
setInterval(() => {
  if (streamOpen() && Date.now() - lastMessageAt > STREAM_SILENCE_MS) {
    setStreamState("stale", "feed: stale (no word from the daemon for " +
      Math.round((Date.now() - lastMessageAt) / 1000) + " s)", "stale");
  }
}, 1000);

document.addEventListener("visibilitychange", () => {
  if (document.hidden) {
    unfollow();
    clearTimeout(pollTimer);
    pollTimer = null;
  } else {
    follow();
    poll();
  }
});

if (!document.hidden) follow();
poll();
requestAnimationFrame(flush);
