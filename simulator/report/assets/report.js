(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var charts = [];

  function cssVar(name) {
    return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  }
  function colors() {
    var c = [];
    for (var i = 1; i <= 8; i++) c.push(cssVar("--c" + i));
    return c;
  }
  function axis(label, extra) {
    var fg = cssVar("--fg"), grid = cssVar("--grid");
    return Object.assign({
      label: label,
      stroke: fg,
      grid: { stroke: grid, width: 1 },
      ticks: { stroke: grid, width: 1 }
    }, extra || {});
  }
  function line(label, color, extra) {
    return Object.assign({ label: label, stroke: color, width: 2 }, extra || {});
  }
  function size(el) {
    return { width: Math.max(el.clientWidth, 280), height: 300 };
  }
  // Whole seconds on time axes.
  var secondIncrs = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 43200, 86400];

  function opts(el, o) {
    return Object.assign(size(el), { legend: { live: true } }, o);
  }

  var build = {
    arrivals: function (el) {
      var tl = data.timeline, c = colors();
      return new uPlot(opts(el, {
        scales: { x: { time: false } },
        axes: [axis("seconds since the opening", { incrs: secondIncrs }), axis("per second")],
        series: [{ label: "second" }, line("arrivals", c[0]), line("joins", c[1]),
          line("promotions seen", c[2]), line("orders", c[3]),
          Object.assign(line("planned arrivals", c[0]), { dash: [6, 4] })]
      }), [tl.t, tl.arrivals, tl.joins, tl.promotions, tl.orders, tl.planned], el);
    },
    queue: function (el) {
      var tl = data.timeline, c = colors();
      return new uPlot(opts(el, {
        scales: { x: { time: false } },
        axes: [axis("seconds since the opening", { incrs: secondIncrs }), axis("tokens")],
        series: [{ label: "second" }, line("waiting", c[0], { spanGaps: true }),
          line("active", c[2], { spanGaps: true })]
      }), [tl.t, tl.waiting, tl.active], el);
    },
    latency: function (el) {
      var cv = data.curve, c = colors();
      var xs = cv.labels.map(function (_, i) { return i; });
      var series = [{ label: "percentile", value: function (u, v) { return v == null ? "" : cv.labels[v]; } }];
      var rows = [xs];
      cv.series.forEach(function (s, i) {
        series.push(line(s.name, c[i % c.length], {
          dash: s.name === "promotion" ? [6, 4] : undefined,
          value: function (u, v) { return v == null ? "" : v.toFixed(2) + " ms"; }
        }));
        // A log scale can't show 0: draw it at 1 µs.
        rows.push(s.ms.map(function (v) { return Math.max(v, 0.001); }));
      });
      return new uPlot(opts(el, {
        scales: { x: { time: false }, y: { distr: 3 } },
        axes: [
          axis("percentile", {
            splits: function () { return xs; },
            values: function (u, splits) { return splits.map(function (i) { return cv.labels[i] || ""; }); }
          }),
          axis("latency (ms, log scale)")
        ],
        series: series
      }), rows, el);
    },
    wait: function (el) {
      var w = data.wait, c = colors();
      var last = w.from_s.length ? w.from_s[w.from_s.length - 1] + w.width_s : 1;
      return new uPlot(opts(el, {
        scales: { x: { time: false, range: [0, last] } },
        axes: [axis("time in line (s)"), axis("bots")],
        series: [{ label: "from (s)" }, {
          label: "bots", stroke: c[0], fill: c[0], width: 1,
          paths: uPlot.paths.bars({ size: [0.9, Infinity], align: 1 }),
          points: { show: false }
        }]
      }), [w.from_s, w.count], el);
    }
  };

  function draw() {
    charts.forEach(function (u) { u.destroy(); });
    charts = [];
    document.querySelectorAll("[data-chart]").forEach(function (el) {
      el.textContent = "";
      if (el.dataset.empty === "true") {
        el.textContent = "No data for this chart.";
        el.classList.add("note");
        return;
      }
      charts.push({ el: el, u: build[el.dataset.chart](el) });
    });
    charts = charts.map(function (c) { c.u.__el = c.el; return c.u; });
  }

  draw();
  var timer;
  window.addEventListener("resize", function () {
    clearTimeout(timer);
    timer = setTimeout(function () {
      charts.forEach(function (u) { u.setSize(size(u.__el)); });
    }, 100);
  });
  if (window.matchMedia) {
    var mq = window.matchMedia("(prefers-color-scheme: dark)");
    if (mq.addEventListener) mq.addEventListener("change", draw);
  }
})();
