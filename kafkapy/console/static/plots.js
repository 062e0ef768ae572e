// The console's time-series plots: uPlot (vendored) fed by the console's JSON endpoints.
// Each <div class="plot" data-url=... data-kind="lag|rates"> gets a plot, refreshed every
// data-refresh-ms (default 5000). Data are numbers only; names go in as uPlot series labels
// (set as text, not markup).
(function () {
  "use strict";

  function lagSeries(data) {
    var names = Object.keys(data.partitions).sort();
    var series = [{}, { label: "total lag", stroke: "#23395d", width: 2 }];
    var columns = [data.times, data.total];
    var palette = ["#d9822b", "#0f9960", "#a82a2a", "#7157d9", "#29a634", "#c274c2", "#2b95d6"];
    names.forEach(function (name, i) {
      series.push({ label: name, stroke: palette[i % palette.length], width: 1 });
      columns.push(data.partitions[name]);
    });
    return { series: series, columns: columns };
  }

  function rateSeries(data) {
    return {
      series: [
        {},
        { label: "bytes in/s", stroke: "#0f9960", width: 2 },
        { label: "bytes out/s", stroke: "#d9822b", width: 2 },
      ],
      columns: [data.times, data.bytes_in, data.bytes_out],
    };
  }

  function setup(el) {
    var kind = el.getAttribute("data-kind");
    var url = el.getAttribute("data-url");
    var refresh = parseInt(el.getAttribute("data-refresh-ms") || "5000", 10);
    var plot = null;
    var shape = null;

    function draw(data) {
      var s = kind === "lag" ? lagSeries(data) : rateSeries(data);
      var key = s.series.map(function (x) { return x.label || ""; }).join("\u0000");
      el.setAttribute("data-points", String(data.times.length));
      if (plot && key === shape) {
        plot.setData(s.columns);
        return;
      }
      if (plot) plot.destroy();
      shape = key;
      plot = new uPlot(
        {
          width: Math.max(400, Math.min(1100, el.clientWidth || 900)),
          height: 300,
          series: s.series,
          axes: [{}, { size: 70 }],
        },
        s.columns,
        el
      );
      el.setAttribute("data-drawn", "yes");
    }

    function load() {
      fetch(url, { credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.json() : null; })
        .then(function (data) { if (data) draw(data); })
        .catch(function () {})
        .finally(function () { setTimeout(load, refresh); });
    }
    load();
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("div.plot[data-url]").forEach(setup);
  });
})();
