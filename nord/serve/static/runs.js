// The list of runs, read again every second; ticked runs are overlaid, each fetched by its
// cursor so that only new evaluations travel.
"use strict";
(function () {
  const el = nord.el;
  const ticked = new Map();   // run id -> {cursor, x, accuracies, statuses, wall, t0, path}
  window.nordRuns = { lines: [], ticked };

  function row(run) {
    const box = el("input", { type: "checkbox", "aria-label": "overlay" });
    box.checked = ticked.has(run.id);
    // a weight-sharing search has one evaluation, its final cell's: nothing to overlay
    box.disabled = run.kind !== "journal" || run.state === "unreadable" || Boolean(run.search);
    if (run.search) box.title = "a weight-sharing search: its page draws its epochs";
    box.addEventListener("change", () => {
      if (box.checked) ticked.set(run.id, { cursor: null, accuracies: [], statuses: [], ended: [], path: run.path });
      else ticked.delete(run.id);
      overlay();
    });
    const link = run.state === "unreadable" ? el("span", { text: run.path }) : el("a", { href: `/run/${run.id}`, text: run.path });
    const num = (field, text) => el("td", { className: "num", "data-field": field, text });
    return el("tr", { "data-run": run.id },
      el("td", {}, box), el("td", { "data-field": "path" }, link),
      el("td", { "data-field": "algorithm", text: run.algorithm ?? (run.kind === "comparison" ? "comparison" : "-") }),
      nord.stateCell(run),
      num("evaluations", run.search ? `${run.search.epochs}/${run.search.of ?? "?"} epochs`
        : run.evaluations === undefined ? "-" : `${run.evaluations}/${run.budget ?? "?"}`),
      num("failed", run.failed ?? "-"), num("best", run.best === undefined ? "-" : nord.pct(run.best)),
      num("elapsed", nord.duration(run.elapsed)), num("time_left", nord.duration(run.time_left)),
      el("td", { text: nord.date(run.created) }));
  }

  async function step() {
    const data = await nord.getJSON("/api/runs");
    window.nordRuns.lines = data.runs;
    const body = el("tbody");
    data.runs.forEach((run) => body.append(row(run)));
    document.querySelector("#runs tbody").replaceWith(body);
    const bad = data.runs.filter((run) => run.state === "unreadable");
    const box = document.getElementById("unreadable");
    box.replaceChildren(...bad.map((run) => el("p", { className: "muted", text: `unreadable: ${run.error}` })));
    await overlay();
  }

  // nothing ticked: no overlay at all (two empty plots say nothing)
  async function overlay() {
    const box = document.getElementById("overlays");
    if (!ticked.size) {
      box.hidden = true;
      return;
    }
    box.hidden = false;
    const traces = [], timeTraces = [];
    for (const [id, run] of ticked) {
      const query = run.cursor ? "?" + new URLSearchParams(run.cursor) : "";
      const data = await nord.getJSON(`/api/run/${id}${query}`);
      for (const r of data.evaluations || []) { run.accuracies.push(r[3]); run.statuses.push(r[7]); run.ended.push(r[11]); }
      run.cursor = data.cursor;
      const count = run.accuracies.map((_, i) => i + 1);
      const t0 = Math.min(...run.ended.filter((t) => t !== null));
      const inc = nord.incumbent(count, run.accuracies, run.statuses);
      const incT = nord.incumbent(run.ended.map((t) => (t ?? t0) - t0), run.accuracies, run.statuses);
      traces.push({ x: inc.x, y: inc.y, type: "scatter", mode: "lines", line: { shape: "hv" }, name: nord.plain(run.path) });
      timeTraces.push({ x: incT.x, y: incT.y, type: "scatter", mode: "lines", line: { shape: "hv" }, name: nord.plain(run.path) });
    }
    const counts = [...ticked.values()].map((run) => run.accuracies.length);
    nord.draw("overlay", traces, nord.layout("Best so far against evaluations (ticked runs)", "evaluations", "accuracy (%)", { xaxis: nord.wholeAxis([0, ...counts], "evaluations") }));
    nord.draw("overlay-time", timeTraces, nord.layout("Best so far against wall time (ticked runs)", "seconds since the first result", "accuracy (%)"));
  }

  document.addEventListener("DOMContentLoaded", () => nord.poll(step, 1000));
})();
