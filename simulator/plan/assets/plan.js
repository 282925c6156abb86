(function () {
  "use strict";
  var d = JSON.parse(document.getElementById("plan-data").textContent);
  function css(n) { return getComputedStyle(document.documentElement).getPropertyValue(n).trim(); }
  function axis(label, extra) {
    var g = css("--grid");
    return Object.assign({ label: label, stroke: css("--fg"), grid: { stroke: g, width: 1 }, ticks: { stroke: g, width: 1 } }, extra || {});
  }
  function line(label, color, extra) { return Object.assign({ label: label, stroke: color, width: 2 }, extra || {}); }
  function mmss(s) { s = Math.round(s); var m = Math.floor(s / 60); return m ? m + "m" + ("0" + (s % 60)).slice(-2) + "s" : s + "s"; }
  function timeAxis() { return axis("since opening", { values: function (u, v) { return v.map(mmss); } }); }
  function plot(id, o, data) {
    var el = document.getElementById(id);
    o.width = Math.max(el.clientWidth, 280); o.height = 300;
    var u = new uPlot(o, data, el);
    window.addEventListener("resize", function () { u.setSize({ width: Math.max(el.clientWidth, 280), height: 300 }); });
  }
  var s = d.series, lim = s.t.map(function () { return d.limit; });
  plot("queue", { scales: { x: { time: false } }, axes: [timeAxis(), axis("people", { size: 70 })],
    series: [{ label: "t", value: function (u, v) { return v == null ? "" : mmss(v); } },
      line("waiting", css("--c1"), { fill: css("--c1") + "22" }), line("active", css("--c3"))] },
    [s.t, s.waiting, s.active]);
  plot("flow", { scales: { x: { time: false } }, axes: [timeAxis(), axis("per second", { size: 70 })],
    series: [{ label: "t", value: function (u, v) { return v == null ? "" : mmss(v); } },
      line("joins/s", css("--c2")), line("admissions/s", css("--c1")), line("orders/s", css("--c3")),
      line("limit", css("--c4"), { dash: [6, 4], width: 1 })] },
    [s.t, s.joins, s.admits, s.orders, lim]);
  plot("waits", { scales: { x: { time: false } },
    axes: [axis("share of admitted", { values: function (u, v) { return v.map(function (x) { return Math.round(x * 100) + "%"; }); } }),
      axis("wait", { size: 70, values: function (u, v) { return v.map(mmss); } })],
    series: [{ label: "share" }, line("wait", css("--c1"), { value: function (u, v) { return v == null ? "" : mmss(v); } })] },
    [d.waits.q, d.waits.s]);
  var idx = d.sweep.p95.map(function (_, i) { return i + 1; });
  plot("sweep", { scales: { x: { time: false }, o: {} },
    axes: [axis("setting (best first)"), axis("p95 wait", { size: 70, values: function (u, v) { return v.map(mmss); } }),
      axis("orders/s", { scale: "o", side: 1, grid: { show: false } })],
    series: [{ label: "#" }, line("p95 wait", css("--c1"), { paths: function () { return null; }, points: { show: true, size: 6 } }),
      line("peak orders/s", css("--c3"), { scale: "o", paths: function () { return null; }, points: { show: true, size: 6 } }),
      line("limit", css("--c4"), { scale: "o", dash: [6, 4], width: 1 })] },
    [idx, d.sweep.p95, d.sweep.orders, idx.map(function () { return d.limit; })]);
})();
