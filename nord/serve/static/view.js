// Helpers shared by the view's pages. Every string from a journal reaches the page through
// textContent (never innerHTML), and into Plotly through plain(), so it shows as text.
"use strict";
const nord = {};

nord.el = function (tag, attributes, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes || {})) {
    if (value === undefined || value === null) continue;
    if (key === "text") node.textContent = String(value);
    else if (key === "className") node.className = value;
    else node.setAttribute(key, String(value));
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
};

// Plotly reads a few HTML-like tags in its texts: entities make any journal string plain text.
nord.plain = (text) => String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

nord.getJSON = async function (url) {
  const response = await fetch(url, { cache: "no-store" });
  const data = await response.json();
  if (!response.ok) throw new Error(data.error || response.statusText);
  return data;
};

nord.pct = (value) => (value === null || value === undefined ? "-" : (100 * value).toFixed(2) + " %");
nord.fixed = (value, digits) => (value === null || value === undefined ? "-" : Number(value).toFixed(digits));
nord.duration = function (seconds) {
  if (seconds === null || seconds === undefined || !isFinite(seconds)) return "-";
  seconds = Math.max(0, seconds);
  if (seconds < 90) return seconds.toFixed(1) + " s";
  if (seconds < 5400) return (seconds / 60).toFixed(1) + " min";
  if (seconds < 172800) return (seconds / 3600).toFixed(1) + " h";
  return (seconds / 86400).toFixed(1) + " d";
};
nord.date = (seconds) => (seconds ? new Date(seconds * 1000).toISOString().slice(0, 16).replace("T", " ") : "-");

nord.stamp = function (error) {
  const node = document.getElementById("updated");
  if (!node) return;
  node.textContent = error ? "not updated: " + error.message : "updated " + new Date().toLocaleTimeString();
};

// Call step() now and then every `every` ms after each call ends (a slow answer never piles up).
nord.poll = function (step, every) {
  const again = async () => {
    try { await step(); nord.stamp(null); } catch (error) { nord.stamp(error); }
    setTimeout(again, every);
  };
  again();
};

nord.stateCell = function (run) {
  const text = run.state === "killed" ? "killed (crashed: its writer stopped)" : run.state;
  return nord.el("td", { className: "state-" + run.state, "data-field": "state", title: run.error || (run.search && run.search.progress) || run.status_detail || "" }, text);
};

// A table whose header sorts by a column on click; rows are arrays of {text, value, className}.
nord.Table = class {
  constructor(table, columns, limit) {
    this.table = table; this.columns = columns; this.rows = []; this.limit = limit || Infinity;
    this.shown = this.limit; this.filter = ""; this.sortBy = null; this.descending = false;
    const header = nord.el("tr");
    columns.forEach((column, index) => {
      const th = nord.el("th", { text: column });
      th.addEventListener("click", () => this.sort(index));
      header.append(th);
    });
    table.tHead.replaceChildren(header);
  }
  sort(index) {
    this.descending = this.sortBy === index ? !this.descending : false;
    this.sortBy = index;
    [...this.table.tHead.rows[0].cells].forEach((th, i) => {
      th.className = i === index ? (this.descending ? "desc" : "asc") : "";
    });
    this.render();
  }
  add(rows) { this.rows.push(...rows); }
  render() {
    let rows = this.rows;
    if (this.filter) {
      const needle = this.filter.toLowerCase();
      rows = rows.filter((row) => row.some((cell) => String(cell.text).toLowerCase().includes(needle)));
    }
    if (this.sortBy !== null) {
      const i = this.sortBy, sign = this.descending ? -1 : 1;
      rows = rows.slice().sort((a, b) => {
        const x = a[i].value, y = b[i].value;
        if (x === y) return 0;
        if (x === null || x === undefined) return 1;   // missing values last, either way
        if (y === null || y === undefined) return -1;
        return (x < y ? -1 : 1) * sign;
      });
    }
    this.matching = rows.length;
    const body = nord.el("tbody");
    for (const row of rows.slice(0, this.shown)) {
      const tr = nord.el("tr");
      for (const cell of row) {
        const td = nord.el("td", { className: cell.className });
        if (cell.href) td.append(nord.el("a", { href: cell.href, text: cell.text }));
        else td.textContent = cell.text;
        tr.append(td);
      }
      body.append(tr);
    }
    this.table.tBodies[0].replaceWith(body);
  }
};

nord.cell = (text, value, className, href) => ({ text: text === null || text === undefined ? "-" : text, value: value === undefined ? text : value, className, href });

// Titles sit at the left and the mode bar keeps four buttons at the right, so that neither
// covers the other; axes make room for their labels (automargin) and the legend sits at the
// bottom of the plot's box, below them. `extra` is merged into the defaults one level deep
// (an axis given keeps its title and automargin unless it says otherwise).
nord.layout = function (title, xtitle, ytitle, extra) {
  const layout = {
    title: { text: nord.plain(title), font: { size: 14 }, x: 0, xref: "container", xanchor: "left", pad: { l: 8 } },
    margin: { l: 56, r: 16, t: 40, b: 44 },
    xaxis: { title: { text: xtitle }, automargin: true }, yaxis: { title: { text: ytitle }, automargin: true },
    legend: { orientation: "h", x: 0, xref: "container", y: 0, yref: "container", yanchor: "bottom" }, hovermode: "closest",
  };
  for (const [key, value] of Object.entries(extra || {})) {
    const held = layout[key];
    layout[key] = held && value && typeof value === "object" && !Array.isArray(value) ? Object.assign({}, held, value) : value;
  }
  return layout;
};
nord.config = {
  displaylogo: false, responsive: true,
  modeBarButtonsToRemove: ["select2d", "lasso2d", "zoomIn2d", "zoomOut2d", "autoScale2d", "toggleSpikelines", "hoverClosestCartesian", "hoverCompareCartesian"],
};

// Draw a plot, or hide it while no trace has a point: an empty plot says nothing.
nord.hasPoints = (trace) => (trace.z ? trace.z.some((row) => (Array.isArray(row) ? row : [row]).some((v) => v !== null && v !== undefined))
  : (trace.y || []).some((v) => v !== null && v !== undefined));
nord.draw = function (plot, traces, layout) {
  const div = typeof plot === "string" ? document.getElementById(plot) : plot;
  div.hidden = !traces.some(nord.hasPoints);
  if (div.hidden) { Plotly.purge(div); return Promise.resolve(div); }
  return Plotly.react(div, traces, layout, nord.config);
};

// plotly's own colours, named so that a band can take its line's colour
nord.colours = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
nord.translucent = (hex, alpha) => `rgba(${[1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16)).join(", ")}, ${alpha})`;

// An axis of whole numbers (evaluations, epochs, generations, steps): ticks on integers
// only, at a step of 1, 2 or 5 times a power of ten that leaves at most about eight ticks.
nord.wholeAxis = function (values, title) {
  let low = Infinity, high = -Infinity;
  for (const v of values) { if (Number.isFinite(v)) { low = Math.min(low, v); high = Math.max(high, v); } }
  const rough = Number.isFinite(low) ? (high - low) / 8 : 0;
  let dtick = 1;
  if (rough > 1) {
    const power = Math.pow(10, Math.floor(Math.log10(rough)));
    dtick = [1, 2, 5, 10].map((m) => m * power).find((step) => step >= rough);
  }
  return { title: { text: title }, automargin: true, tickmode: "linear", tick0: 0, dtick, tickformat: "d" };
};

// The incumbent (best so far) of ok accuracies, as a step line: x of each improvement.
nord.incumbent = function (xs, accuracies, statuses) {
  const x = [], y = [];
  let best = -Infinity;
  for (let i = 0; i < accuracies.length; i++) {
    const a = accuracies[i];
    if (statuses[i] !== "ok" || a === null || a <= best) continue;
    best = a; x.push(xs[i]); y.push(100 * a);
  }
  if (x.length) { x.push(xs[xs.length - 1]); y.push(y[y.length - 1]); }
  return { x, y };
};

// plotly.min.js (4.8 MB) loaded after the page's numbers and tables are drawn, so that
// they show before the browser has parsed it.
let plotly = null;
nord.plotly = function () {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  if (!plotly) {
    plotly = new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = "/static/plotly.min.js";
      script.onload = () => resolve(window.Plotly);
      script.onerror = () => reject(new Error("plotly.min.js did not load"));
      document.head.append(script);
    });
  }
  return plotly;
};

window.nord = nord;
