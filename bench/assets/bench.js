(function () {
  "use strict";
  var d = JSON.parse(document.getElementById("bench-data").textContent);
  function css(n) { return getComputedStyle(document.documentElement).getPropertyValue(n).trim(); }
  function axis(label, extra) {
    var g = css("--grid");
    return Object.assign({ label: label, stroke: css("--fg"), grid: { stroke: g, width: 1 }, ticks: { stroke: g, width: 1 } }, extra || {});
  }
  function size(n) { return n >= 1e6 ? n / 1e6 + "M" : n >= 1e3 ? n / 1e3 + "k" : String(n); }
  function line(label, color, extra) {
    return Object.assign({ label: label, stroke: color, width: 2, points: { show: true, size: 7 } }, extra || {});
  }
  function plot(id, ylabel, series, data) {
    var el = document.getElementById(id);
    var o = {
      width: Math.max(el.clientWidth, 280), height: 260,
      // A log axis ticked at the measured sizes only; y from 0, so a gap between
      // two lines is not exaggerated.
      scales: { x: { time: false, distr: 3 }, y: { range: function (u, min, max) { return [0, max * 1.1]; } } },
      axes: [axis("waiting", { splits: function () { return d.sizes; }, values: function (u, v) { return v.map(size); } }),
        axis(ylabel, { size: 60 })],
      series: [{ label: "waiting", value: function (u, v) { return v == null ? "" : size(v); } }].concat(series)
    };
    var u = new uPlot(o, [d.sizes].concat(data), el);
    window.addEventListener("resize", function () { u.setSize({ width: Math.max(el.clientWidth, 280), height: 260 }); });
  }
  var dash = { dash: [6, 4] };
  if (d.join.naive) {
    plot("join", "joins/s", [line("naive", css("--c2")), line("rushline", css("--c1")), line("floor", css("--muted"), dash)],
      [d.join.naive, d.join.rushline, d.join.floor]);
    plot("status", "reads/s", [line("naive", css("--c2")), line("rushline", css("--c1")), line("floor", css("--muted"), dash)],
      [d.status.naive, d.status.rushline, d.status.floor]);
    plot("p99", "ms", [line("join naive", css("--c2")), line("join rushline", css("--c1")),
      line("status naive", css("--c2"), dash), line("status rushline", css("--c1"), dash)],
      [d.join.naive_p99, d.join.rushline_p99, d.status.naive_p99, d.status.rushline_p99]);
    plot("cpu", "µs per join", [line("naive server", css("--c2")), line("rushline server", css("--c1")),
      line("Redis under naive", css("--c2"), dash), line("Redis under rushline", css("--c1"), dash)],
      [d.cpu.naive_server, d.cpu.rushline_server, d.cpu.naive_redis, d.cpu.rushline_redis]);
  }
  if (d.line_floor) {
    plot("linefloor", "µs per user", [line("join.lua", css("--c1")), line("sorted-set floor", css("--muted"), dash)],
      [d.line_floor.join, d.line_floor.floor]);
  }
  if (d.rounds) {
    var el = document.getElementById("rounds");
    var u = new uPlot({ width: Math.max(el.clientWidth, 280), height: 260,
      scales: { x: { time: false }, y: { range: function (u, min, max) { return [0, max * 1.1]; } } },
      axes: [axis("round", { splits: function () { return d.rounds.round; } }), axis("µs per join", { size: 60 })],
      series: [{ label: "round" }, line("floor", css("--muted")), line("rushline", css("--c1")),
        line("floor, pinned", css("--muted"), dash), line("rushline, pinned", css("--c1"), dash)] },
      [d.rounds.round, d.rounds.floor, d.rounds.rushline, d.rounds.floor_pinned, d.rounds.rushline_pinned], el);
    window.addEventListener("resize", function () { u.setSize({ width: Math.max(el.clientWidth, 280), height: 260 }); });
  }
  function timePlot(id, scales, axes, series, data) {
    var el = document.getElementById(id);
    var o = { width: Math.max(el.clientWidth, 280), height: 260, scales: Object.assign({ x: { time: false } }, scales),
      axes: [axis("s from the opening")].concat(axes), series: [{ label: "s" }].concat(series) };
    var u = new uPlot(o, data, el);
    window.addEventListener("resize", function () { u.setSize({ width: Math.max(el.clientWidth, 280), height: 260 }); });
  }
  if (d.drop) {
    var from0 = { range: function (u, min, max) { return [0, Math.max(max, 1) * 1.1]; } };
    timePlot("drop-progress", { crowd: from0, sold: from0 },
      [axis("crowd joined", { scale: "crowd", size: 70 }), axis("sold", { scale: "sold", side: 1, size: 60, grid: { show: false } })],
      [line("crowd joined", css("--c1"), { scale: "crowd", points: { show: false } }),
        line("sold", css("--c3"), { scale: "sold", points: { show: false } })],
      [d.drop.t, d.drop.crowd_joined, d.drop.sold]);
    timePlot("drop-latency", { y: from0 }, [axis("ms", { size: 60 })],
      [line("pushed", css("--c5"), { width: 0, points: { show: true, size: 5 } }),
        line("admitted before the stream", css("--c2"), { width: 0, points: { show: true, size: 5 } })],
      [d.drop.promotion_t, d.drop.promotion_ms, d.drop.before_stream_ms]);
  }
})();
