// The table health page: the list of tables, then their health in groups (GROUP tables per request, CONCURRENCY
// requests at a time), each table drawn as SVG charts as its group arrives.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const COLORS = {
  healthy: "#2e7d32", small: "#f59e0b", fragment: "#dc2626", deletes: "#7c3aed", rows: "#1d4ed8",
  removed: "#9ca3af", added: "#2e7d32", grid: "#e5e7eb",
};
const RULE_COLORS = { glue: "#f59e0b", amoro_fragments: "#dc2626", amoro_deletes: "#7c3aed" };
const RULE_LABELS = { glue: "Glue", amoro_fragments: "Amoro fragments", amoro_deletes: "Amoro deletes" };
const CONCURRENCY = 3;
const GROUP = 8;

function el(name, attrs = {}, text) {
  const node = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  if (text !== undefined) node.textContent = text;
  return node;
}

function html(name, attrs = {}, text) {
  const node = document.createElement(name);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  if (text !== undefined) node.textContent = text;
  return node;
}

function bytes(value) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) { value /= 1024; unit += 1; }
  return `${value >= 10 || unit === 0 ? Math.round(value) : value.toFixed(1)} ${units[unit]}`;
}

function figure(caption, chart, kind) {
  const node = html("figure", { "data-chart": kind });
  node.append(html("figcaption", {}, caption), chart);
  return node;
}

function svg(width, height, kind) {
  return el("svg", { width, height, viewBox: `0 0 ${width} ${height}`, class: `chart chart-${kind}`, role: "img" });
}

function withTitle(node, text) {
  node.append(el("title", {}, text));
  return node;
}

// Data files per size bin, each bar colored by the size class of its bin.
function histogramChart(health) {
  const bins = health.size_histogram;
  const totals = health.totals;
  const chart = svg(330, 150, "histogram");
  if (!bins.length) { chart.append(el("text", { x: 10, y: 20 }, "no data files")); return chart; }
  const max = Math.max(...bins.map((b) => b.files));
  const width = 310 / bins.length;
  bins.forEach((bin, i) => {
    const height = max ? (bin.files / max) * 110 : 0;
    let color = COLORS.healthy;
    if (bin.to <= totals.fragment_file_bytes) color = COLORS.fragment;
    else if (bin.to <= totals.small_file_bytes) color = COLORS.small;
    const bar = el("rect", {
      x: 10 + i * width + 1, y: 125 - height, width: Math.max(1, width - 2), height, fill: color,
      class: "bar", "data-files": bin.files, "data-from": bin.from,
    });
    chart.append(withTitle(bar, `${bin.files} files of ${bytes(bin.from)} to ${bytes(bin.to)}`));
    if (i % Math.ceil(bins.length / 5) === 0) chart.append(el("text", { x: 10 + i * width, y: 140 }, bytes(bin.from)));
  });
  chart.append(el("line", { x1: 10, x2: 320, y1: 125, y2: 125, stroke: "#9ca3af" }));
  return chart;
}

// Small files, fragments and delete files of the partitions that need compaction first, and the rules reached.
function partitionsChart(health) {
  const partitions = health.partitions.slice(0, 12);
  const chart = svg(330, 22 + partitions.length * 20, "partitions");
  const max = Math.max(1, ...partitions.map((p) => Math.max(p.small_files + p.delete_files, p.data_files)));
  partitions.forEach((p, i) => {
    const y = 10 + i * 20;
    const label = p.partition.length > 22 ? `${p.partition.slice(0, 21)}…` : p.partition;
    chart.append(withTitle(el("text", { x: 0, y: y + 11 }, label), p.partition));
    const scale = 170 / max;
    let x = 130;
    for (const [count, color, kind] of [
      [p.fragment_files, COLORS.fragment, "fragments"],
      [p.small_files - p.fragment_files, COLORS.small, "small"],
      [p.data_files - p.small_files, COLORS.healthy, "healthy"],
      [p.delete_files, COLORS.deletes, "deletes"],
    ]) {
      if (count <= 0) continue;
      const bar = el("rect", { x, y: y + 2, width: count * scale, height: 12, fill: color, class: `bar-${kind}` });
      chart.append(withTitle(bar, `${p.partition}: ${count} ${kind}`));
      x += count * scale;
    }
    p.rules.forEach((rule, r) => {
      const badge = el("rect", {
        x: 306 + r * 8, y: y + 2, width: 6, height: 12, fill: RULE_COLORS[rule], class: "rule", "data-rule": rule,
      });
      chart.append(withTitle(badge, `${p.partition} reaches ${health.rules[rule]}`));
    });
  });
  return chart;
}

// Every listed partition as a tile, colored by the first rule it reaches (green: none).
function ruleMap(health) {
  const tiles = health.partitions;
  const perRow = 20;
  const chart = svg(330, 28 + Math.ceil(tiles.length / perRow) * 16, "rules");
  tiles.forEach((p, i) => {
    const color = p.rules.length ? RULE_COLORS[p.rules[0]] : COLORS.healthy;
    const tile = el("rect", {
      x: (i % perRow) * 16, y: Math.floor(i / perRow) * 16, width: 14, height: 14, fill: color, class: "tile",
      "data-rules": p.rules.join(" "),
    });
    const reached = p.rules.map((rule) => health.rules[rule]).join("; ") || "no rule reached";
    chart.append(withTitle(tile, `${p.partition}: ${reached}`));
  });
  const y = 16 + Math.ceil(tiles.length / perRow) * 16;
  let x = 0;
  for (const [rule, count] of Object.entries(health.partitions_reaching)) {
    const text = `${RULE_LABELS[rule]}: ${count}`;
    chart.append(el("rect", { x, y: y - 8, width: 8, height: 8, fill: RULE_COLORS[rule] }));
    chart.append(el("text", { x: x + 11, y, class: "rule-count", "data-rule": rule }, text));
    x += text.length * 6 + 24;
  }
  return chart;
}

// The deleted-row ratio against Amoro's threshold.
function deletedRatioChart(health) {
  const ratio = health.totals.deleted_row_ratio;
  const chart = svg(330, 40, "deleted-ratio");
  chart.append(el("rect", { x: 0, y: 8, width: 300, height: 14, fill: COLORS.grid }));
  const bar = el("rect", { x: 0, y: 8, width: Math.min(1, ratio) * 300, height: 14, fill: COLORS.deletes, class: "ratio" });
  chart.append(withTitle(bar, `deleted-row ratio ${ratio.toFixed(3)}`));
  chart.append(el("line", { x1: 30, x2: 30, y1: 4, y2: 26, stroke: "#111827", "stroke-dasharray": "2 2" }));
  chart.append(el("text", { x: 0, y: 36 }, `${(ratio * 100).toFixed(1)} % of the rows are deleted (Amoro: 10 %)`));
  return chart;
}

// Rows (line) and data files (dots) over the snapshots, by commit time.
function historyChart(health) {
  const history = health.history.filter((h) => h.records !== null);
  const chart = svg(330, 150, "history");
  if (!history.length) { chart.append(el("text", { x: 10, y: 20 }, "no snapshot summaries")); return chart; }
  const t0 = history[0].timestamp_ms;
  const span = Math.max(1, history[history.length - 1].timestamp_ms - t0);
  const maxRows = Math.max(1, ...history.map((h) => h.records));
  const maxFiles = Math.max(1, ...history.map((h) => h.data_files || 0));
  const x = (h) => 10 + ((h.timestamp_ms - t0) / span) * 300;
  const points = history.map((h) => `${x(h)},${125 - (h.records / maxRows) * 110}`).join(" ");
  chart.append(el("polyline", { points, fill: "none", stroke: COLORS.rows, "stroke-width": 2, class: "rows" }));
  history.forEach((h) => {
    const dot = el("circle", {
      cx: x(h), cy: 125 - ((h.data_files || 0) / maxFiles) * 110, r: 3, class: "snapshot",
      fill: h.operation === "replace" ? COLORS.healthy : COLORS.small,
    });
    chart.append(withTitle(dot, `${new Date(h.timestamp_ms).toISOString()} ${h.operation}: ${h.records} rows, ${h.data_files} data files`));
  });
  chart.append(el("text", { x: 10, y: 142 }, `${history.length} snapshots, ${maxRows} rows at most`));
  return chart;
}

// The last compactions: data files removed (grey, down) and added (green, up).
function compactionsChart(health) {
  const compactions = [...health.compactions].reverse();
  const chart = svg(330, 130, "compactions");
  if (!compactions.length) { chart.append(el("text", { x: 10, y: 20, class: "none" }, "no compaction yet")); return chart; }
  const max = Math.max(1, ...compactions.map((c) => Math.max(c.data_files_removed, c.data_files_added)));
  const width = Math.min(40, 300 / compactions.length);
  compactions.forEach((c, i) => {
    const x = 10 + i * width;
    const removed = (c.data_files_removed / max) * 50;
    const added = (c.data_files_added / max) * 50;
    const when = new Date(c.timestamp_ms).toISOString().slice(0, 16).replace("T", " ");
    chart.append(withTitle(el("rect", { x, y: 60, width: width - 4, height: removed, fill: COLORS.removed, class: "removed" }),
      `${when}: ${c.data_files_removed} data files (${bytes(c.bytes_removed)}) and ${c.delete_files_removed} delete files removed`));
    chart.append(withTitle(el("rect", { x, y: 60 - added, width: width - 4, height: added, fill: COLORS.added, class: "added" }),
      `${when}: ${c.data_files_added} data files (${bytes(c.bytes_added)}) written`));
  });
  chart.append(el("line", { x1: 10, x2: 320, y1: 60, y2: 60, stroke: "#9ca3af" }));
  chart.append(el("text", { x: 10, y: 126 }, `last ${compactions.length} compaction(s): files written above, removed below`));
  return chart;
}

function drawTable(card, health) {
  const t = health.totals;
  card.dataset.snapshot = String(health.snapshot_id);
  card.querySelector(".dags").textContent +=
    ` · ${t.data_files} data files, ${t.delete_files} delete files, ${bytes(t.data_bytes)}`;
  const charts = html("div", { class: "charts" });
  charts.append(
    figure("Data file sizes", histogramChart(health), "histogram"),
    figure("Partitions: small files and delete files (compaction first)", partitionsChart(health), "partitions"),
    figure("Compaction rules reached per partition", ruleMap(health), "rules"),
    figure("Deleted-row ratio", deletedRatioChart(health), "deleted-ratio"),
    figure("Rows and data files over the snapshots", historyChart(health), "history"),
    figure("Last compactions", compactionsChart(health), "compactions"),
  );
  card.append(charts);
  card.dataset.state = "drawn";
}

function fail(card, message) {
  card.append(html("p", { class: "error" }, message));
  card.dataset.state = "failed";
}

async function loadGroup(group) {
  const wanted = group.map(([, entry]) => [entry.catalog, entry.namespace, entry.name]);
  try {
    const answer = await fetch(`api/health?tables=${encodeURIComponent(JSON.stringify(wanted))}`, {
      headers: { Accept: "application/json" }, credentials: "same-origin",
    });
    if (!answer.ok) {
      const body = await answer.json().catch(() => ({}));
      throw new Error(body.detail || `${answer.status} ${answer.statusText}`);
    }
    const { tables } = await answer.json();
    group.forEach(([card], index) => {
      const health = tables[index];
      if (health && health.status === 200) drawTable(card, health);
      else fail(card, (health && health.detail) || "no answer for this table");
    });
  } catch (error) {
    for (const [card] of group) fail(card, String(error.message || error));
  }
}

async function main() {
  const status = document.getElementById("status");
  const list = document.getElementById("tables");
  const started = performance.now();
  const answer = await fetch("api/tables", { headers: { Accept: "application/json" }, credentials: "same-origin" });
  if (!answer.ok) { status.textContent = `The tables could not be listed: ${answer.status}`; return; }
  const { tables } = await answer.json();
  if (!tables.length) status.textContent = "No DAG names an Iceberg table yet.";
  const cards = tables.map((entry) => {
    const card = html("section", { class: "table", "data-table": `${entry.catalog}.${entry.table}` });
    card.append(html("h2", {}, `${entry.table}`), html("p", { class: "dags" }, `catalog ${entry.catalog} · DAGs: ${entry.dags.join(", ") || "none"}`));
    list.append(card);
    return [card, entry];
  });
  performance.mark("iceberg-tables-listed");
  const groups = [];
  for (let start = 0; start < cards.length; start += GROUP) groups.push(cards.slice(start, start + GROUP));
  let next = 0;
  async function worker() {
    while (next < groups.length) await loadGroup(groups[next++]);
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const seconds = ((performance.now() - started) / 1000).toFixed(2);
  if (tables.length) status.textContent = `${tables.length} tables in ${seconds} s`;
  performance.mark("iceberg-tables-drawn");
  document.body.dataset.loaded = String(tables.length);
  document.body.dataset.seconds = seconds;
}

main();
