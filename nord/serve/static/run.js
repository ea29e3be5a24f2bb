// A run's page: its numbers, plots and tables, kept up to date by asking every second for
// what the journal gained since the last cursor.
"use strict";
(function () {
  const el = nord.el;
  const id = location.pathname.split("/")[2];
  const F = ["sequence", "candidate", "generation", "accuracy", "reported_accuracy", "n_params",
    "epochs", "status", "error", "train_time", "started", "ended", "cached_from", "worker_rank"];
  const col = Object.fromEntries(F.map((name, i) => [name, i]));
  const state = {
    cursor: null, rows: [], legs: new Map(), curves: new Map(), inFlight: [], run: null,
    scored: false,
  };
  window.nordRun = state;   // for the browser tests and the curious
  let candidates, legs, failures, search;
  // asked for before plotly.min.js is parsed (this script runs first): the two overlap
  let early = nord.getJSON(`/api/run/${id}`);
  early.catch(() => {});

  function facts(run) {
    const dl = document.getElementById("summary");
    const items = [
      ["journal", run.path], ["state", null], ["algorithm", run.algorithm],
      ["evaluations", run.evaluations === null || run.evaluations === undefined ? null : `${run.evaluations} of ${run.budget ?? "?"}`],
      ["failed", run.failed], ["best", nord.pct(run.best)],
      ["elapsed", nord.duration(run.elapsed)], ["time left", nord.duration(run.time_left)],
      ["mode", run.mode], ["data", run.dataset],
    ];
    dl.replaceChildren();
    for (const [name, value] of items) {
      const dd = el("dd", { "data-field": name });
      if (name === "state") {
        const cell = nord.stateCell(run);
        dd.className = cell.className; dd.textContent = cell.textContent;
      } else dd.textContent = value ?? "-";
      dl.append(el("dt", { text: name }), dd);
    }
    document.getElementById("title").textContent = `${run.algorithm || "run"}: ${run.path}`;
    document.getElementById("detail").textContent = run.error || run.status_detail || "";
  }

  function candidateRow(row) {
    const ok = row[col.status] === "ok";
    return [
      nord.cell(String(row[col.candidate]), row[col.candidate], "num", `/run/${id}/candidate/${row[col.candidate]}`),
      nord.cell(String(row[col.generation]), row[col.generation], "num"),
      nord.cell(row[col.status] + (row[col.cached_from] !== null ? " (cached)" : ""), row[col.status]),
      nord.cell(nord.pct(row[col.accuracy]), ok ? row[col.accuracy] : null, "num"),
      nord.cell(nord.pct(row[col.reported_accuracy]), row[col.reported_accuracy], "num"),
      nord.cell(row[col.n_params] === null ? "-" : row[col.n_params].toLocaleString("en"), row[col.n_params], "num"),
      nord.cell(row[col.epochs] ?? "-", row[col.epochs], "num"),
      nord.cell(nord.duration(row[col.train_time]), row[col.train_time], "num"),
      nord.cell(row[col.worker_rank] ?? "-", row[col.worker_rank], "num"),
    ];
  }

  // the log-scale axis range plotly gives these parameter counts, for the density overlay
  function logRange(points) {
    let low = Infinity, high = -Infinity;
    for (const p of points) { if (p[0] > 0) { low = Math.min(low, p[0]); high = Math.max(high, p[0]); } }
    if (!isFinite(low)) return undefined;
    const pad = (Math.log10(high) - Math.log10(low)) * 0.05 || 0.5;
    return [Math.log10(low) - pad, Math.log10(high) + pad];
  }

  function plotAll() {
    const rows = state.rows;
    const t0 = rows.length ? Math.min(...rows.map((r) => r[col.started] ?? r[col.ended] ?? Infinity)) : 0;
    const statuses = rows.map((r) => r[col.status]);
    const accuracies = rows.map((r) => r[col.accuracy]);
    const count = rows.map((_, i) => i + 1);
    const wall = rows.map((r) => (r[col.ended] ?? t0) - t0);
    const label = state.scored ? "proxy score (%)" : "search accuracy (%)";
    const big = rows.length > 2000;
    const okIndex = [];
    rows.forEach((r, i) => { if (r[col.status] === "ok" && r[col.accuracy] !== null) okIndex.push(i + 1); });
    const ok = okIndex.map((i) => rows[i - 1]);
    const inc = nord.incumbent(count, accuracies, statuses);
    nord.draw("incumbent", [
      { x: okIndex, y: ok.map((r) => 100 * r[col.accuracy]), type: "scatter", mode: "markers", name: "evaluations", marker: { size: 4, opacity: 0.35 } },
      { x: inc.x, y: inc.y, type: "scatter", mode: "lines", line: { shape: "hv", width: 2 }, name: "best so far" },
    ].slice(big ? 1 : 0), nord.layout("Best so far against evaluations", "evaluations", label, { xaxis: nord.wholeAxis([0, rows.length], "evaluations") }));
    const incT = nord.incumbent(wall, accuracies, statuses);
    nord.draw("incumbent-time", [{ x: incT.x, y: incT.y, type: "scatter", mode: "lines", line: { shape: "hv", width: 2 }, name: "best so far" }],
      nord.layout("Best so far against wall time", "seconds since the first evaluation", label));
    const byGeneration = new Map();
    for (const r of ok) {
      const g = r[col.generation];
      if (!byGeneration.has(g)) byGeneration.set(g, []);
      byGeneration.get(g).push(100 * r[col.accuracy]);
    }
    const gens = [...byGeneration.keys()].sort((a, b) => a - b);
    const stats = gens.map((g) => { const v = byGeneration.get(g).sort((a, b) => a - b); return [v[0], v[Math.floor(v.length / 2)], v[v.length - 1]]; });
    nord.draw("generations", [
      { x: gens, y: stats.map((s) => s[2]), type: "scatter", mode: "lines+markers", name: "best" },
      { x: gens, y: stats.map((s) => s[1]), type: "scatter", mode: "lines+markers", name: "median" },
      { x: gens, y: stats.map((s) => s[0]), type: "scatter", mode: "lines+markers", name: "worst" },
    ], nord.layout("Accuracy per generation", "generation", label, { xaxis: nord.wholeAxis(gens, "generation") }));
    const points = ok.filter((r) => r[col.n_params] !== null).map((r) => [r[col.n_params], 100 * r[col.accuracy], r[col.candidate]]);
    const front = points.slice().sort((a, b) => a[0] - b[0] || b[1] - a[1]).filter(((best) => (p) => (p[1] > best ? ((best = p[1]), true) : false))(-Infinity));
    nord.draw("params", [
      // thousands of points: their density, drawn as one image (no WebGL, which a browser
      // without a GPU emulates slowly)
      big ? { x: points.map((p) => Math.log10(p[0])), y: points.map((p) => p[1]), type: "histogram2d", nbinsx: 60, nbinsy: 60, colorscale: [[0, "rgba(255,255,255,0)"], [0.001, "#e3e8f4"], [1, "#1f3b73"]], showscale: false, name: "ok evaluations", xaxis: "x2" }
        : { x: points.map((p) => p[0]), y: points.map((p) => p[1]), text: points.map((p) => "candidate " + p[2]), type: "scatter", mode: "markers", name: "ok evaluations", marker: { size: 5, opacity: 0.4 } },
      { x: front.map((p) => p[0]), y: front.map((p) => p[1]), type: "scatter", mode: "lines+markers", line: { shape: "hv" }, name: "Pareto front" },
    ], nord.layout("Accuracy against parameters", "trainable parameters", label, {
      xaxis: { type: "log", title: { text: "trainable parameters" }, range: logRange(points) },
      xaxis2: { overlaying: "x", visible: false, range: logRange(points) } }));
  }

  function plotCurves() {
    const list = document.getElementById("training");
    list.replaceChildren();
    const traces = [];
    for (const candidate of state.inFlight) {
      const curve = state.curves.get(candidate) || [];
      const last = curve[curve.length - 1];
      list.append(el("li", { "data-candidate": candidate, "data-points": curve.length },
        el("a", { href: `/run/${id}/candidate/${candidate}`, text: `candidate ${candidate}` }),
        curve.length ? `: ${curve.length} epoch${curve.length > 1 ? "s" : ""}, validation accuracy ${nord.pct(last[2])}` : ": no epoch yet"));
      traces.push({ x: curve.map((e) => e[1]), y: curve.map((e) => (e[2] === null ? null : 100 * e[2])), type: "scatter", mode: "lines+markers", name: "candidate " + candidate });
    }
    if (!state.inFlight.length) list.append(el("li", { text: state.run && state.run.state === "running" ? "no candidate is training" : "the run is not running" }));
    const epochs = traces.flatMap((trace) => trace.x);
    nord.draw("curves", traces, nord.layout("Learning curves of the candidates training now", "epoch", "validation accuracy (%)", { xaxis: nord.wholeAxis(epochs, "epoch") }));
  }

  function legRow(leg) {
    return [
      nord.cell(String(leg.leg), leg.leg, "num"),
      nord.cell(String(leg.candidate), leg.candidate, "num", `/run/${id}/candidate/${leg.candidate}`),
      nord.cell(`${leg.start_epochs} → ${leg.target_epochs}`, leg.target_epochs),
      nord.cell(leg.ended === null ? "training" : (leg.decision || "-"), leg.decision),
      nord.cell(nord.pct(leg.accuracy), leg.accuracy, "num"),
      nord.cell(leg.status || "-", leg.status),
      nord.cell([leg.error, leg.detail].filter(Boolean).join("; ") || "", null, "wrap"),
    ];
  }

  function plotEverything() { plotAll(); plotCurves(); search.plot(); }

  const afterPaint = (then) => requestAnimationFrame(() => requestAnimationFrame(() => then(performance.now())));

  // A candidate that trained on after it was told (a promotion) counts at its furthest
  // leg, as in nord list and the report.
  function furthest() {
    const best = new Map();
    for (const leg of state.legs.values()) {
      if (leg.ended === null || leg.accuracy === null) continue;
      const held = best.get(leg.candidate);
      if (!held || leg.target_epochs >= held.target_epochs) best.set(leg.candidate, leg);
    }
    let changed = false;
    for (const row of state.rows) {
      const source = row[col.cached_from] !== null ? row[col.cached_from] : row[col.candidate];
      const leg = best.get(source);
      if (!leg || leg.target_epochs <= (row[col.epochs] || 0)) continue;
      row[col.accuracy] = leg.accuracy; row[col.reported_accuracy] = leg.reported_accuracy;
      row[col.epochs] = leg.target_epochs; row[col.status] = leg.status; changed = true;
    }
    return changed;
  }

  async function step() {
    // every 0.4 s; after the first answer, the server answers 'unchanged' at the cost of two stat calls
    // until the journal's files change
    const query = state.cursor ? "?" + new URLSearchParams({ ...state.cursor, seen: state.version }) : "";
    const pending = early;
    early = null;
    const data = await (pending || nord.getJSON(`/api/run/${id}${query}`));
    state.run = data.run;
    facts(data.run);
    if (data.run.kind === "comparison") return comparison();
    if (data.unchanged) {
      search.render(data.run.state);   // a writer that died changes no file
      if (state.stale && window.Plotly && performance.now() - state.plotAt >= 1000) {
        plotEverything(); state.stale = false; state.plotAt = performance.now();
      }
      return null;
    }
    state.version = data.version;
    if (data.metadata) state.scored = (data.metadata.evaluator || {}).proxy !== undefined;
    const fresh = data.evaluations || [];
    state.rows.push(...fresh);
    candidates.add(fresh.map(candidateRow));
    const failed = fresh.filter((r) => r[col.status] !== "ok");
    failures.add(failed.map((r) => [
      nord.cell(String(r[col.candidate]), r[col.candidate], "num", `/run/${id}/candidate/${r[col.candidate]}`),
      nord.cell(String(r[col.generation]), r[col.generation], "num"),
      nord.cell(r[col.status]), nord.cell(r[col.error] || "", null, "wrap")]));
    for (const leg of data.legs || []) state.legs.set(leg.leg, leg);
    const promoted = (data.legs || []).length > 0 && furthest();
    if ((data.legs || []).length) { legs.rows = [...state.legs.values()].map(legRow); legs.render(); }
    if (promoted) { candidates.rows = state.rows.map(candidateRow); }
    state.curves = new Map();   // the whole curves of the candidates in flight
    for (const e of data.epochs || []) {
      if (!state.curves.has(e[0])) state.curves.set(e[0], []);
      state.curves.get(e[0]).push(e);
    }
    const searched = search.add(data.search);
    const changed = fresh.length || promoted || searched || state.cursor === null || (data.epochs || []).length || state.inFlight.length !== (data.in_flight || []).length;
    state.inFlight = data.in_flight || [];
    state.cursor = data.cursor;
    if (changed) {
      candidates.render(); failures.render();
      document.getElementById("shown").textContent = `${Math.min(candidates.matching, candidates.shown)} of ${candidates.matching} shown`;
      document.getElementById("more").hidden = candidates.matching <= candidates.shown;
    }
    search.render(data.run.state);
    // first paint of the numbers and tables, then of the plots, in ms since navigation
    // (what bench/serve_speed.py reports)
    if (state.paintedAt === undefined) afterPaint((at) => { state.paintedAt = at; });
    await nord.plotly();
    if (state.plotlyAt === undefined) state.plotlyAt = performance.now();
    if (changed) state.stale = true;
    // the plots are drawn again at most once a second: a run that writes many results a
    // second should not cost the browser (often the same machine) a core
    if (state.stale && !(performance.now() - (state.plotAt || -Infinity) < 1000)) {
      plotEverything(); state.stale = false; state.plotAt = performance.now();
    }
    if (state.plottedAt === undefined) afterPaint((at) => { state.plottedAt = at; });
  }

  async function comparison() {
    document.getElementById("run-body").hidden = true;
    document.getElementById("comparison-body").hidden = false;
    const data = await nord.getJSON(`/api/comparison/${id}`);
    if (data.error) { document.getElementById("detail").textContent = data.error; return "done"; }
    const table = new nord.Table(document.getElementById("algorithms"), ["algorithm", "seeds", "test accuracy (%)", "search signal (%)", "description"]);
    const traces = [];
    let drawn = 0;
    for (const [name, algorithm] of Object.entries(data.algorithms)) {
      const s = algorithm.summary || {};
      const stat = (x) => (x && x.mean !== undefined ? `${nord.fixed(x.mean, 2)} ± ${nord.fixed(x.std, 2)}` : "-");
      table.add([[nord.cell(name), nord.cell(s.returned ?? s.seeds ?? "-"), nord.cell(stat(s.test)), nord.cell(stat(s.search)), nord.cell(algorithm.description || "", null, "wrap")]]);
      const c = algorithm.curve;
      if (c && c.time) {   // each band in its line's colour, lighter
        const colour = nord.colours[drawn++ % nord.colours.length], group = "algorithm " + drawn;
        const band = { type: "scatter", mode: "lines", line: { width: 0, color: colour }, legendgroup: group, hoverinfo: "skip" };
        traces.push({ ...band, x: c.time, y: c.high, showlegend: false });
        traces.push({ ...band, x: c.time, y: c.low, fill: "tonexty", fillcolor: nord.translucent(colour, 0.2), name: nord.plain(name) + " ± 1 std" });
        traces.push({ x: c.time, y: c.mean, type: "scatter", mode: "lines", line: { color: colour }, legendgroup: group, name: nord.plain(name) });
      }
    }
    table.render();
    document.getElementById("title").textContent = `comparison: ${data.path}`;
    await nord.plotly();
    nord.draw("anytime", traces, nord.layout("Anytime test accuracy of the incumbent (mean and band over seeds)", "simulated seconds", "test accuracy (%)"));
    return "done";
  }

  const start = () => {
    candidates = new nord.Table(document.getElementById("candidates"),
      ["candidate", "generation", "status", "accuracy", "reported", "parameters", "epochs", "train time", "rank"], 300);
    legs = new nord.Table(document.getElementById("legs"), ["leg", "candidate", "epochs", "decision", "accuracy", "status", "detail"]);
    search = new nord.Search();
    state.search = search;
    failures = new nord.Table(document.getElementById("failures"), ["candidate", "generation", "status", "reason"]);
    document.getElementById("filter").addEventListener("input", (event) => { candidates.filter = event.target.value; candidates.shown = 300; candidates.render(); document.getElementById("shown").textContent = `${Math.min(candidates.matching, candidates.shown)} of ${candidates.matching} shown`; });
    document.getElementById("more").addEventListener("click", () => { candidates.shown += 1000; candidates.render(); document.getElementById("more").hidden = candidates.matching <= candidates.shown; });
    const again = async () => {
      let done = null, failed = false;
      try { done = await step(); nord.stamp(null); } catch (error) { nord.stamp(error); failed = true; }
      if (done !== "done") setTimeout(again, failed ? 2000 : 400);
    };
    again();
  };
  start();   // a deferred script: the document is parsed already
})();
