// A weight-sharing search on its run's page: a small panel per edge with each operation's
// probability after each epoch, the derived cell's table accuracy (or, off the table, the
// epoch's mean losses), and the derived cell per epoch, the last one highlighted. It gains
// the epochs the server sends after the page's cursor (the answer's `search`).
"use strict";
nord.Search = class {
  constructor() {
    this.edges = []; this.ops = []; this.epochs = new Map();
    this.section = document.getElementById("search");
    this.table = new nord.Table(document.getElementById("search-cells"), ["epoch", "derived cell", "seconds"]);
  }

  // The epochs of one answer; true where there were any. Rows come in the answer's order of
  // edges and operations and are kept by name, so that answers may differ in it.
  add(search) {
    if (!search || !(search.epochs || []).length) return false;
    for (const edge of search.edges) if (!this.edges.includes(edge)) this.edges.push(edge);
    for (const op of search.ops) if (!this.ops.includes(op)) this.ops.push(op);
    for (const row of search.epochs) {
      const weights = {};
      search.edges.forEach((edge, i) => {
        weights[edge] = {};
        search.ops.forEach((op, j) => { weights[edge][op] = row.weights[i][j]; });
      });
      this.epochs.set(row.epoch, { ...row, weights });
    }
    return true;
  }

  rows() { return [...this.epochs.values()].sort((a, b) => a.epoch - b.epoch); }

  // the table and the legend, drawn before plotly is loaded; `state`: the run's ('running':
  // the last cell is the latest, not yet the final one; a search that stopped before its
  // end, interrupted, killed or crashed, has no final cell, only its last)
  render(state) {
    this.section.hidden = this.epochs.size === 0;
    if (!this.epochs.size || (this.drawn === this.epochs.size && this.state === state)) return;
    this.drawn = this.epochs.size; this.state = state;
    const rows = this.rows(), last = rows[rows.length - 1].epoch;
    this.table.rows = rows.map((row) => {
      const mark = row.epoch === last ? " final" : "";
      return [nord.cell(String(row.epoch), row.epoch, "num" + mark),
        nord.cell(row.cell, row.cell, "cell" + mark),
        nord.cell(nord.fixed(row.seconds, 1), row.seconds, "num" + mark)];
    });
    // a long search's table scrolls: it follows the newest row unless the reader scrolled up
    const box = this.table.table.parentNode;
    const following = box.scrollTop + box.clientHeight >= box.scrollHeight - 4;
    this.table.render();
    if (following) box.scrollTop = box.scrollHeight;
    const cell = this.epochs.get(last).cell;
    document.getElementById("search-final").textContent = state === "running"
      ? `The latest cell, derived after epoch ${last} (highlighted; the search runs): ${cell}`
      : state === "finished"
        ? `The final cell, derived after epoch ${last} (highlighted): ${cell}`
        : `The last cell derived, after epoch ${last} (highlighted; the search stopped there, ${state}): ${cell}`;
    const legend = document.getElementById("search-legend");
    legend.replaceChildren(...this.ops.map((op, i) => nord.el("li", { "data-op": op },
      nord.el("span", { className: "swatch", style: `background: ${nord.colours[i % nord.colours.length]}` }), op)));
  }

  plot() {
    if (!this.epochs.size) return;
    const rows = this.rows(), epochs = rows.map((row) => row.epoch);
    const mode = rows.length < 30 ? "lines+markers" : "lines";
    const holder = document.getElementById("search-edges");
    const ids = this.edges.map((edge) => "search-" + edge.replace(/[^A-Za-z0-9_-]/g, "-"));
    if (holder.children.length !== ids.length || [...holder.children].some((div, i) => div.id !== ids[i])) {
      holder.replaceChildren(...ids.map((id) => nord.el("div", { id, className: "panel" })));
    }
    // one scale for every panel, from zero to a tenth above the highest probability: a
    // search that has barely left the uniform distribution is not drawn as flat lines at
    // the foot of a 0-1 axis, nor are small differences blown up
    let highest = 0;
    for (const row of rows) for (const edge of this.edges) for (const p of Object.values(row.weights[edge] || {})) if (p > highest) highest = p;
    const top = Math.min(1, Math.ceil(highest * 10 + 0.5) / 10);
    this.edges.forEach((edge, e) => {
      const name = /^edge_[0-9]+_[0-9]+$/.test(edge) ? edge.replace("edge_", "edge ").replace("_", " → ") : edge;
      const traces = this.ops.map((op, i) => ({
        x: epochs, y: rows.map((row) => (row.weights[edge] || {})[op] ?? null), type: "scatter", mode,
        name: nord.plain(op), line: { color: nord.colours[i % nord.colours.length], width: 1.5 }, marker: { size: 4 },
      }));
      nord.draw(ids[e], traces, nord.layout(name, "epoch", "probability", {
        margin: { l: 52, r: 12, t: 36, b: 40 }, showlegend: false,
        xaxis: nord.wholeAxis(epochs, "epoch"), yaxis: { range: [0, top] } }));
    });
    const looked = rows.filter((row) => row.lookup_accuracy !== null && row.lookup_accuracy !== undefined);
    const caption = document.getElementById("search-caption");
    if (looked.length) {
      nord.draw("search-accuracy", [{ x: looked.map((row) => row.epoch), y: looked.map((row) => 100 * row.lookup_accuracy), type: "scatter", mode, name: "derived cell" }],
        nord.layout("Derived cell's accuracy in the NAS-Bench-201 table", "epoch", "200-epoch test accuracy (%)", { showlegend: false, xaxis: nord.wholeAxis(epochs, "epoch") }));
      caption.textContent = "Each epoch's derived cell looked up in the NAS-Bench-201 table: its test accuracy after 200 epochs of training on this data set. The search never sees it.";
    } else {
      const names = [...new Set(rows.flatMap((row) => Object.keys(row.metrics || {})))].filter((name) => name.endsWith("loss")).sort();
      nord.draw("search-accuracy", names.map((name) => ({
        x: epochs, y: rows.map((row) => (row.metrics || {})[name] ?? null), type: "scatter", mode, name: nord.plain(name.replace(/_/g, " ")),
      })), nord.layout("Mean losses per epoch", "epoch", "loss", { showlegend: true, xaxis: nord.wholeAxis(epochs, "epoch") }));   // named even where there is one (ENAS, RSPS)
      caption.textContent = "The run's data set is not in the NAS-Bench-201 table, so the derived cells have no table accuracy: the epoch's mean losses instead.";
    }
  }
};
