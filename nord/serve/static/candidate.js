// A candidate's page: result, drawing (the report's layered layout), curves, per-layer
// signals, legs and checkpoints; read again every second while the candidate trains.
"use strict";
(function () {
  const el = nord.el;
  const parts = location.pathname.split("/");
  const run = parts[2], number = parts[4];
  const SVG = "http://www.w3.org/2000/svg";
  let drawn = false;
  window.nordCandidate = { view: null };

  function svg(tag, attributes, text) {
    const node = document.createElementNS(SVG, tag);
    for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, String(value));
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // The layout is in inches with y upwards; 72 px an inch, y flipped.
  function draw(drawing) {
    const box = document.getElementById("drawing");
    if (drawing.error) { box.replaceChildren(el("p", { className: "muted", text: drawing.error })); return; }
    const [x0, x1, y0, y1] = drawing.bounds, pad = 0.3, s = 72;
    const X = (x) => (x - x0 + pad) * s, Y = (y) => (y1 - y + pad) * s;
    const root = svg("svg", { viewBox: `0 0 ${(x1 - x0 + 2 * pad) * s} ${(y1 - y0 + 2 * pad) * s}`, width: (x1 - x0 + 2 * pad) * s });
    const defs = svg("defs", {});
    const marker = svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 6, markerHeight: 6, orient: "auto-start-reverse" });
    marker.append(svg("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#555" }));
    defs.append(marker); root.append(defs);
    for (const edge of drawing.edges) {
      root.append(svg("polyline", { points: edge.route.map(([x, y]) => `${X(x)},${Y(y)}`).join(" "), fill: "none", stroke: "#555", "stroke-width": 1.2, "marker-end": "url(#arrow)" }));
    }
    for (const node of drawing.nodes) {
      const g = svg("g", { "data-layer": node.name });
      g.append(svg(node.kind === "layer" ? "rect" : "ellipse", node.kind === "layer"
        ? { x: X(node.x - node.width / 2), y: Y(node.y + node.height / 2), width: node.width * s, height: node.height * s, rx: 4, fill: node.colour, stroke: "#333" }
        : { cx: X(node.x), cy: Y(node.y), rx: node.width * s / 2, ry: node.height * s / 2, fill: "#fff", stroke: "#333" }));
      const top = Y(node.y) - (node.lines.length - 1) * 0.15 * s / 2;
      node.lines.forEach((line, i) => g.append(svg("text", { x: X(node.x), y: top + i * 0.15 * s, "text-anchor": "middle", "dominant-baseline": "middle", "font-size": 10, "font-weight": i === 0 ? "bold" : "normal" }, line)));
      root.append(g);
    }
    box.replaceChildren(root);
  }

  function heatmap(target, title, names, steps, values, xtitle) {
    const div = el("div", { className: "plot" });
    target.append(div);
    // layers are names, even those that read as numbers ("0", "1"): a category axis
    nord.draw(div, [{ z: values, x: steps, y: names.map(nord.plain), type: "heatmap", colorscale: "Viridis" }],
      nord.layout(title, xtitle, "layer", { xaxis: nord.wholeAxis(steps, xtitle), yaxis: { type: "category" } }));
  }

  function signals(epochs) {
    const families = new Map();   // family -> layer -> epoch -> value
    for (const e of epochs) {
      for (const [key, value] of Object.entries(e.metrics || {})) {
        const cut = key.indexOf("/");
        if (cut < 0 || typeof value !== "number") continue;
        const family = key.slice(0, cut), layer = key.slice(cut + 1);
        if (!families.has(family)) families.set(family, new Map());
        if (!families.get(family).has(layer)) families.get(family).set(layer, new Map());
        families.get(family).get(layer).set(e.epoch, value);
      }
    }
    const box = document.getElementById("signals");
    box.replaceChildren();
    if (!families.size) { box.append(el("p", { className: "muted", text: "no per-layer signals recorded (nord run --callbacks grad_norm,weight_norm,dead_relu records them)" })); return; }
    const steps = epochs.map((e) => e.epoch);
    for (const [family, layers] of families) {
      const names = [...layers.keys()];
      heatmap(box, family + " per layer and epoch", names, steps, names.map((n) => steps.map((s) => layers.get(n).get(s) ?? null)), "epoch");
    }
  }

  function facts(view) {
    const e = view.evaluation || {};
    const items = [["generation", view.generation], ["status", e.status ?? (view.run_state === "running" ? "training" : "not evaluated")],
      ["accuracy", nord.pct(e.accuracy)], ["reported accuracy", nord.pct(e.reported_accuracy)],
      ["parameters", e.n_params ?? "-"], ["epochs", e.epochs ?? view.epochs.length],
      ["train time", nord.duration(e.train_time)], ["cached from", e.cached_from ?? "-"]];
    const dl = document.getElementById("summary");
    dl.replaceChildren(...items.flatMap(([k, v]) => [el("dt", { text: k }), el("dd", { "data-field": k, text: v })]));
    document.getElementById("errors").replaceChildren(...view.errors.map((text) => el("li", { text })));
  }

  async function step() {
    const view = await nord.getJSON(`/api/run/${run}/candidate/${number}`);
    window.nordCandidate.view = view;
    if (view.error) { document.getElementById("errors").replaceChildren(el("li", { text: view.error })); return; }
    facts(view);
    if (!drawn) {
      if (view.drawing) draw(view.drawing);
      else document.getElementById("drawing").replaceChildren(el("p", { className: "muted", text: "no descriptor recorded (a benchmark cell is named by its genome)" }));
      document.getElementById("descriptor").textContent = JSON.stringify(view.descriptor, null, 1);
      document.getElementById("genome").textContent = JSON.stringify(view.genome);
      drawn = true;
    }
    const epochs = view.epochs;
    const pick = (k, scale) => epochs.map((e) => (e[k] === null ? null : e[k] * scale));
    nord.draw("curves", [
      { x: epochs.map((e) => e.epoch), y: pick("valid_accuracy", 100), name: "validation accuracy (%)", type: "scatter", mode: "lines+markers" },
      { x: epochs.map((e) => e.epoch), y: pick("train_loss", 1), name: "training loss", yaxis: "y2", type: "scatter", mode: "lines+markers" },
      { x: epochs.map((e) => e.epoch), y: pick("valid_loss", 1), name: "validation loss", yaxis: "y2", type: "scatter", mode: "lines+markers" },
    ], nord.layout("Learning curves", "epoch", "accuracy (%)", { margin: { l: 56, r: 56, t: 40, b: 44 }, xaxis: nord.wholeAxis(epochs.map((e) => e.epoch), "epoch"), yaxis2: { overlaying: "y", side: "right", title: { text: "loss" }, automargin: true } }));
    signals(epochs);
    {
      const box = document.getElementById("series");
      box.replaceChildren();
      if (view.series.names.length) heatmap(box, "per-step series", view.series.names, view.series.steps, view.series.values, "step");
      else box.append(el("p", { className: "muted", text: "none recorded for this candidate" }));
    }
    const legs = new nord.Table(document.getElementById("legs"), ["leg", "epochs", "decision", "accuracy", "status", "detail"]);
    legs.add(view.legs.map((leg) => [nord.cell(leg.leg), nord.cell(`${leg.start_epochs} → ${leg.target_epochs}`), nord.cell(leg.ended_event === null ? "training" : leg.decision || "-"), nord.cell(nord.pct(leg.accuracy)), nord.cell(leg.status || "-"), nord.cell([leg.error, leg.detail].filter(Boolean).join("; "), null, "wrap")]));
    legs.render();
    document.getElementById("checkpoints").replaceChildren(...(view.checkpoints.length ? view.checkpoints.map((c) => el("li", { text: `checkpoint ${c.name} (${c.bytes} bytes)` })) : [el("li", { text: "no checkpoint kept" })]));
    document.getElementById("back").href = `/run/${run}`;
    document.title = `nord: candidate ${number}`;
    document.getElementById("title").textContent = `candidate ${number}`;
  }

  document.addEventListener("DOMContentLoaded", () => nord.poll(step, 1000));
})();
