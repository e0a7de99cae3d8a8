// The Buzz HTML report: reads the page's JSON (htmlreport.Page) and draws
// it as SVG. Hand-written on purpose (see htmlreport.go): line charts over
// the report windows with the ramp steps behind them.
(function () {
  "use strict";
  var SVG = "http://www.w3.org/2000/svg";
  var D = JSON.parse(document.getElementById("data").textContent);
  var app = document.getElementById("app");
  var runs = [], multi = false;
  var KINDS = ["human", "desktop", "agent", "hot_author"];
  var COL = { p50: "#1f77b4", p95: "#ff7f0e", p99: "#d62728", due: "#8c564b", lag: "#e377c2",
    tput: "#2ca02c", err: "#d62728", thr: "#9467bd", cpu: "#17becf",
    human: "#1f77b4", desktop: "#ff7f0e", agent: "#2ca02c", hot_author: "#9467bd" };
  var plots = [];
  var xMax = 1;

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function sv(tag, attrs, text) {
    var e = document.createElementNS(SVG, tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  // Op names come from the run (a relay's or a script's): "__proto__",
  // "constructor" and "toString" are names like any other, so maps are
  // prototype-free and lookups ask for own properties only.
  function own(o, k) { return o && Object.prototype.hasOwnProperty.call(o, k) ? o[k] : undefined; }
  function set() { return Object.create(null); }
  function num(v, d) { return typeof v === "number" && isFinite(v) ? v : (d === undefined ? 0 : d); }
  function fmt(v) {
    if (v === null) return "–"; // a statistic the source did not keep
    v = num(v);
    if (v === 0) return "0";
    var a = Math.abs(v);
    if (a >= 1e6) return (v / 1e6).toFixed(1) + "M";
    if (a >= 1e4) return (v / 1e3).toFixed(0) + "k";
    if (a >= 100) return v.toFixed(0);
    if (a >= 10) return v.toFixed(1);
    return v.toFixed(2);
  }
  function niceMax(m) {
    if (!(m > 0)) return 1;
    var p = Math.pow(10, Math.floor(Math.log10(m)));
    var steps = [1, 2, 2.5, 5, 10];
    for (var i = 0; i < steps.length; i++) if (steps[i] * p >= m) return steps[i] * p;
    return 10 * p;
  }
  // niceStep is the round step (1, 2, 5, 10, 15, 30 s, 1, 2, 5, 10, 15,
  // 30 min, 1 h ...) at or above s.
  function niceStep(s) {
    var steps = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400];
    for (var i = 0; i < steps.length; i++) if (steps[i] >= s) return steps[i];
    return 86400 * Math.ceil(s / 86400);
  }
  // dur labels a time tick: 45s, 2m, 1m30s, 1h, 1h30m.
  function dur(v) {
    v = Math.round(v);
    if (v < 60) return v + "s";
    if (v < 3600) return Math.floor(v / 60) + "m" + (v % 60 ? (v % 60) + "s" : "");
    return Math.floor(v / 3600) + "h" + (v % 3600 ? Math.round((v % 3600) / 60) + "m" : "");
  }
  function rep(r) { return r.report || null; }
  // The periods of the run's metrics (the web dashboard's windows).
  function periods(r) { return (r.metrics && r.metrics.windows) || []; }
  // The Buzz windows: the report's, else (live, before the report) the
  // dashboard periods that saw Buzz operations.
  function windows(r) {
    var p = rep(r), a = (p && p.windows) || [];
    var b = periods(r).filter(function (w) { return w.ops; });
    // The finer of the two (the report's are exact per op, with due
    // times; the dashboard's periods may be shorter than its windows).
    return a.length >= b.length ? a : b;
  }
  function steps(r) { var p = rep(r); return (p && p.steps) || []; }
  // liveSteps are the ramp steps as the periods' Buzz operations show them
  // (their step tags), before the report gives their verdicts: each from
  // the first period it appears in to the last.
  function liveSteps(r) {
    var by = Object.create(null);
    periods(r).forEach(function (w) {
      (w.steps || []).forEach(function (label) {
        if (!/^[0-9]+$/.test(label)) return;
        var s = by[label] || (by[label] = { index: Number(label), start_s: num(w.start_s), end_s: num(w.end_s), reached: true, live: true });
        s.start_s = Math.min(s.start_s, num(w.start_s));
        s.end_s = Math.max(s.end_s, num(w.end_s));
      });
    });
    var list = Object.keys(by).map(function (k) { return by[k]; }).sort(function (a, b) { return a.index - b.index; });
    // A period holding the end of one step and the start of the next
    // belongs to the next: the bands do not overlap.
    for (var i = 0; i + 1 < list.length; i++) list[i].end_s = Math.min(list[i].end_s, list[i + 1].start_s);
    return list;
  }
  function verdict(s) {
    if (s.live) return "running";
    if (!s.reached) return "unreached";
    if (s.aborted_at_s) return "cut";
    return s.abort_reason ? "failed" : "ok";
  }
  function dashOf(i) { return i === 0 ? "" : "6 4"; }
  function prefix(r) { return multi ? r.label + " " : ""; }


  // chart draws one line chart: series [{name, color, dash, pts: [[x, y]]}]
  // over [0, xMax], with the first run's steps as bands (verdict-coloured).
  function chart(parent, id, title, unit, series, opts) {
    opts = opts || {};
    var W = 760, H = 230, L = 56, R = 12, T = 30, B = 34;
    var fig = el("figure", { id: "plot-" + id, "class": "plot", "data-plot": id });
    fig.appendChild(el("figcaption", {}, title));
    var svg = sv("svg", { viewBox: "0 0 " + W + " " + H, width: W, height: H, role: "img" });
    svg.appendChild(sv("rect", { x: 0, y: 0, width: W, height: H, fill: "#ffffff" }));
    var ymax = 0;
    series.forEach(function (s) { s.pts.forEach(function (p) { ymax = Math.max(ymax, num(p[1])); }); });
    ymax = niceMax(ymax * 1.05);
    var xm = opts.xMax || xMax;
    var X = function (x) { return L + (W - L - R) * num(x) / xm; };
    var Y = function (y) { return T + (H - T - B) * (1 - num(y) / ymax); };
    var st = opts.steps === false ? [] : (runs.length ? (steps(runs[0]).length ? steps(runs[0]) : liveSteps(runs[0])) : []);
    st.forEach(function (s) {
      var v = verdict(s);
      svg.appendChild(sv("rect", { x: X(s.start_s), y: T, width: Math.max(0, X(s.end_s) - X(s.start_s)), height: H - T - B,
        "class": "band band-" + v }));
      svg.appendChild(sv("line", { x1: X(s.start_s), x2: X(s.start_s), y1: T, y2: H - B, "class": "stepline" }));
      svg.appendChild(sv("text", { x: X(s.start_s) + 3, y: T + 10, "class": "steplabel" }, "step " + s.index + (v === "ok" ? " ✓" : v === "failed" ? " ✗" : v === "cut" ? " cut" : "") + (s.generator && s.generator.saturated ? " ⚠ generator saturated" : "")));
    });
    // Drills and disruptions (issue 42): a band from the first close to the
    // last, labelled, on every plot over the run's time.
    if (opts.steps !== false && runs.length && rep(runs[0])) {
      (rep(runs[0]).drills || []).forEach(function (d) {
        var a = num(d.at_ms) / 1000, b = Math.max(num(d.end_ms) / 1000, a + xm / 200);
        svg.appendChild(sv("rect", { x: X(a), y: T, width: Math.max(2, X(b) - X(a)), height: H - T - B, "class": "band drill" }));
        svg.appendChild(sv("text", { x: X(a) + 2, y: H - B - 4, "class": "drilllabel" }, (d.declared ? String(d.kind) : "disruption") + " ⚡"));
      });
    }
    for (var i = 0; i <= 4; i++) {
      var yv = ymax * i / 4, yy = Y(yv);
      svg.appendChild(sv("line", { x1: L, x2: W - R, y1: yy, y2: yy, "class": "grid" }));
      svg.appendChild(sv("text", { x: L - 4, y: yy + 4, "class": "tick", "text-anchor": "end" }, fmt(yv)));
    }
    // x ticks at a round step (issue 29: 11.3 s, 22.6 s ... were uneven to
    // read), the last label kept inside the plot.
    var xs = opts.xTicks || niceStep(xm / 5);
    for (var xv = 0; xv <= xm + 1e-9; xv += xs) {
      var xx = X(xv), anchor = xx > W - R - 20 ? "end" : "middle";
      svg.appendChild(sv("text", { x: Math.min(xx, W - R), y: H - B + 14, "class": "tick", "text-anchor": anchor }, opts.xLabel ? opts.xLabel(xv) : dur(xv)));
    }
    svg.appendChild(sv("text", { x: 4, y: T - 8, "class": "unit" }, unit));
    svg.appendChild(sv("line", { x1: L, x2: W - R, y1: H - B, y2: H - B, "class": "axis" }));
    svg.appendChild(sv("line", { x1: L, x2: L, y1: T, y2: H - B, "class": "axis" }));
    var lx = L + 40;
    series.forEach(function (s) {
      if (!s.pts.length) return;
      var pts = s.pts.map(function (p) { return X(p[0]).toFixed(1) + "," + Y(p[1]).toFixed(1); }).join(" ");
      var a = { points: pts, fill: "none", stroke: s.color, "stroke-width": 2 };
      if (s.dash) a["stroke-dasharray"] = s.dash;
      svg.appendChild(sv("polyline", a));
      if (s.pts.length === 1) svg.appendChild(sv("circle", { cx: X(s.pts[0][0]), cy: Y(s.pts[0][1]), r: 3, fill: s.color }));
      svg.appendChild(sv("line", { x1: lx, x2: lx + 16, y1: T - 12, y2: T - 12, stroke: s.color, "stroke-width": 3, "stroke-dasharray": s.dash || "" }));
      var t = sv("text", { x: lx + 20, y: T - 8, "class": "legend" }, s.name);
      svg.appendChild(t);
      lx += 28 + 7 * s.name.length;
    });
    if (!series.some(function (s) { return s.pts.length; })) {
      svg.appendChild(sv("text", { x: W / 2, y: H / 2, "text-anchor": "middle", "class": "empty" }, "nothing recorded"));
    }
    fig.appendChild(svg);
    parent.appendChild(fig);
    plots.push(id);
    return fig;
  }

  function section(title, cls) {
    var s = el("section", { "class": cls || "" });
    s.appendChild(el("h2", {}, title));
    app.appendChild(s);
    return s;
  }
  function table(parent, head, rows) {
    var t = el("table"), tr = el("tr");
    head.forEach(function (h) { tr.appendChild(el("th", {}, h)); });
    t.appendChild(tr);
    rows.forEach(function (r) {
      var row = el("tr");
      r.forEach(function (c) {
        var td = el("td", typeof c === "object" && c ? { "class": c.cls } : {}, typeof c === "object" && c ? c.text : String(c));
        row.appendChild(td);
      });
      t.appendChild(row);
    });
    parent.appendChild(t);
  }

  // The relay's own numbers (issue 45): its Buzz series read during the
  // run, their deltas beside the clients' counts, and the families'
  // rates over the run's time beside the clients' acknowledged publishes.
  function relaySection() {
    var withRM = runs.filter(function (r) { return rep(r) && rep(r).relay_metrics; });
    if (!withRM.length) return;
    var rs = section("The relay's own numbers");
    withRM.forEach(function (r, ri) {
      var m = rep(r).relay_metrics, run = m.run || {};
      if (multi) rs.appendChild(el("h3", {}, r.label));
      (m.sources || []).forEach(function (s) {
        rs.appendChild(el("div", { "class": "run" }, "read from " + String(s.source) + ": " + num(s.scrapes) + " readings" +
          (s.failed_scrapes ? ", " + num(s.failed_scrapes) + " failed (" + String(s.error || "") + ")" : "") + (s.note ? "; " + String(s.note) : "")));
      });
      rs.appendChild(el("div", { "class": "run" }, "the clients saw " + num(run.acknowledged) + " events acknowledged, " + num(run.refused) + " refusals, " + num(run.connections) + " connections up"));
      var rows = (m.series || []).filter(function (x) { return num(x.delta) !== 0 || x.type === "gauge"; }).slice(0, 60).map(function (x) {
        var labels = Object.keys(x.labels || {}).sort().map(function (k) { return k + "=" + String(x.labels[k]); }).join(", ");
        return [String(x.name), labels, String(x.type), fmt(x.start), fmt(x.end), fmt(x.delta)];
      });
      table(rs, ["series", "labels", "type", "start", "end", "delta"], rows);
      var t0 = num(m.timeline_start_unix_ms), fams = ["buzz_events_stored_total", "buzz_events_received_total", "buzz_events_rejected_total", "buzz_admission_rejections_total"];
      var cols = ["#2ca02c", "#1f77b4", "#d62728", "#9467bd"], bySrc = set();
      (m.samples || []).forEach(function (x) { (bySrc[x.source] = bySrc[x.source] || []).push(x); });
      var ser = [], conns = [];
      Object.keys(bySrc).forEach(function (src, si) {
        var xs = bySrc[src], tag = Object.keys(bySrc).length > 1 ? " " + src : "";
        fams.forEach(function (f, fi) {
          var pts = [];
          for (var i = 1; i < xs.length; i++) {
            var dt = (num(xs[i].t) - num(xs[i - 1].t)) / 1000, a = own(xs[i - 1].values, f), b = own(xs[i].values, f);
            if (dt > 0 && b !== undefined && num(xs[i].t) >= t0) pts.push([(num(xs[i].t) - t0) / 1000, Math.max(0, num(b) - num(a)) / dt]);
          }
          if (pts.length) ser.push({ name: f.replace(/^buzz_|_total$/g, "") + "/s" + tag, color: cols[fi], dash: dashOf(si), pts: pts });
        });
        var cp = xs.filter(function (x) { return num(x.t) >= t0 && own(x.values, "buzz_ws_connections_active") !== undefined; })
          .map(function (x) { return [(num(x.t) - t0) / 1000, num(own(x.values, "buzz_ws_connections_active"))]; });
        if (cp.length) conns.push({ name: "relay: connections open" + tag, color: "#1f77b4", dash: dashOf(si), pts: cp });
      });
      // The clients' acknowledged publishes per window, beside the relay's stored.
      var mine = windows(r).map(function (w) {
        var ok = 0, d = num(w.end_s) - num(w.start_s);
        ["publish", "http_events"].forEach(function (op) { var o = own(w.ops || {}, op); if (o) ok += num(o.ok); });
        return [num(w.end_s), d > 0 ? ok / d : 0];
      });
      if (mine.length) ser.push({ name: "clients: publishes acknowledged/s", color: "#ff7f0e", dash: "2 3", pts: mine });
      chart(rs, "relay-events-" + ri, "Events per second, as the relay counted them and as the clients saw them acknowledged", "per s", ser);
      var live = [];
      windows(r).forEach(function (w) {
        var n = 0;
        Object.keys(w.clients || {}).forEach(function (k) { n += num(own(w.clients, k)); });
        live.push([num(w.end_s), n]);
      });
      if (live.length) conns.push({ name: "clients in a session", color: "#ff7f0e", dash: "2 3", pts: live });
      chart(rs, "relay-conns-" + ri, "Connections open on the relay beside the run's clients in a session", "count", conns);
    });
  }

  function render() {
  runs = D.runs || [];
  multi = runs.length > 1;
  plots = [];
  app.textContent = "";
  xMax = 0;
  runs.forEach(function (r) {
    windows(r).forEach(function (w) { xMax = Math.max(xMax, num(w.end_s)); });
    periods(r).forEach(function (w) { xMax = Math.max(xMax, num(w.end_s)); });
    steps(r).forEach(function (s) { xMax = Math.max(xMax, num(s.end_s)); });
  });
  if (!(xMax > 0)) xMax = 1;

  // Header: each run, its verdict.
  app.appendChild(el("h1", {}, D.title || "Buzz report"));
  runs.forEach(function (r) {
    var p = rep(r), d = el("div", { "class": "run" });
    var ok = p ? p.ok : null;
    d.appendChild(el("span", { "class": "label" }, r.label));
    d.appendChild(el("span", {}, " " + (r.file || "") + (p ? "  run " + p.run_id + "  scenario " + p.scenario : "") + (p && p.desktop_mode ? "  desktop " + p.desktop_mode : "")));
    if (ok !== null) d.appendChild(el("span", { "class": ok ? "ok" : "bad" }, ok ? "  result: ok" : "  result: FAILED — " + (p.abort_reason || "")));
    // A run without a Buzz report (a plain k6 script): its own verdict.
    if (!p && typeof r.exit_code === "number") {
      var good = r.exit_code === 0;
      d.appendChild(el("span", { "class": good ? "ok" : "bad" }, good ? "  result: ok" : "  result: FAILED (exit " + r.exit_code + ")"));
    }
    if (D.live) d.appendChild(el("span", { "class": "live", id: "live" }, "  live: " + liveState + ", " + periods(r).length + " periods of " + fmt(num(r.metrics && r.metrics.period_s)) + " s"));
    if (p && p.generator && p.generator.saturated) d.appendChild(el("div", { "class": "bad" }, "generator saturated: " + (p.generator.reason || "") + " — latencies of these steps measure the generator, not only the relay"));
    if (r.note) d.appendChild(el("div", { "class": "note" }, r.note));
    app.appendChild(d);
  });

  // Checks: every judgement of the run with its level (the report's checks),
  // failures first, then warnings, skips and passes.
  var order = { fail: 0, warn: 1, skip: 2, pass: 3 };
  var withChecks = runs.filter(function (r) { return rep(r) && (rep(r).checks || []).length; });
  if (withChecks.length) {
    var cs = section("Checks");
    withChecks.forEach(function (r) {
      var p = rep(r), n = p.check_counts || {};
      cs.appendChild(el("div", { "class": "run" }, (multi ? r.label + ": " : "") + "checks: " + num(n.pass) + " pass / " + num(n.fail) + " fail / " + num(n.warn) + " warn" + (n.skip ? " / " + n.skip + " skipped" : "")));
      var list = p.checks.slice().sort(function (a, b) { return num(order[a.level], 4) - num(order[b.level], 4); });
      table(cs, ["check", "level", "detail"], list.map(function (c) {
        var cls = c.level === "fail" ? "bad" : c.level === "warn" ? "warn" : c.level === "pass" ? "ok" : "";
        return [String(c.name), { cls: cls, text: String(c.level) }, String(c.detail || "")];
      }));
    });
  }

  // A plain run's thresholds, as k6 judged them (the Buzz report's are
  // among its checks).
  var withTh = runs.filter(function (r) { return !rep(r) && (r.thresholds || []).length; });
  if (withTh.length) {
    var ts = section("Thresholds");
    var thRows = [];
    withTh.forEach(function (r) {
      r.thresholds.forEach(function (th) {
        thRows.push([(multi ? r.label + ": " : "") + String(th.metric), String(th.source), { cls: th.ok ? "ok" : "bad", text: th.ok ? "✓ held" : "✗ crossed" }]);
      });
    });
    table(ts, ["metric", "threshold", "result"], thRows);
  }

  overview();
  metricsSection();

  // Steps and their verdicts, the generator's health beside them.
  var withSteps = runs.some(function (r) { return steps(r).length; });
  var sec = withSteps ? section("Steps") : null;
  runs.forEach(function (r) {
    if (!sec || !steps(r).length) return;
    if (multi) sec.appendChild(el("h3", {}, r.label));
    table(sec, ["step", "users", "from–to (s)", "clients planned", "verdict", "generator CPU", "sched. lag p99", "generator"],
      steps(r).map(function (s) {
        var cl = KINDS.filter(function (k) { return (s.clients || {})[k]; }).map(function (k) { return s.clients[k] + " " + k; }).join(", ");
        var v = verdict(s), g = s.generator || null;
        return [s.index, s.users, fmt(s.start_s) + "–" + fmt(s.end_s), cl,
          { cls: v, text: v === "failed" ? "✗ " + s.abort_reason : v === "ok" ? "✓ ok" : v === "cut" ? "cut by the abort" : "not reached" },
          g ? fmt(g.cpu_pct) + " %" : "–", g ? fmt(g.lag_p99_ms) + " ms" : "–",
          g ? { cls: g.saturated ? "failed" : "ok", text: g.saturated ? "saturated: " + g.reason : "ok" } : "not recorded"];
      }));
  });

  // Drills and disruptions (issue 42): what happened to people.
  var withDrills = runs.filter(function (r) { return rep(r) && (rep(r).drills || []).length; });
  if (withDrills.length) {
    var dsec = section("Drills and disruptions");
    withDrills.forEach(function (r) {
      if (multi) dsec.appendChild(el("h3", {}, r.label));
      table(dsec, ["", "at", "closes", "connect failures", "affected", "reconnected", "resubscribed p50 / p99 / max", "lost in flight", "missed / recovered", "note"],
        rep(r).drills.map(function (d) {
          var closes = Object.keys(d.closes || {}).sort().map(function (c) { return d.closes[c] + " × " + c; }).join(", ") || "none";
          var back = num(d.resubscribed) === num(d.affected);
          return [(d.declared ? "drill " : "") + String(d.kind), fmt(num(d.at_ms) / 1000) + " s", closes, num(d.connect_failures), num(d.affected),
            { cls: back ? "ok" : "bad", text: num(d.reconnected) + " (" + num(d.resubscribed) + " resubscribed)" },
            fmt(d.resubscribed_ms ? d.resubscribed_ms.p50 : 0) + " / " + fmt(d.resubscribed_ms ? d.resubscribed_ms.p99 : 0) + " / " + fmt(d.resubscribed_ms ? d.resubscribed_ms.max : 0) + " ms",
            num(d.lost_in_flight), num(d.missed) + " / " + num(d.recovered), String(d.note || "")];
        }));
    });
  }

  // The delivery ledger: reach and fan-out completion per step, the lost
  // deliveries and the leaks (issue 40).
  var withLedger = runs.filter(function (r) { return rep(r) && rep(r).ledger; });
  if (withLedger.length) {
    var ls = section("Delivery ledger");
    withLedger.forEach(function (r) {
      var lg = rep(r).ledger, bySteps = [], at = {};
      (lg.rows || []).forEach(function (row) {
        var k = String(row.step);
        if (!(k in at)) { at[k] = bySteps.length; bySteps.push({ step: k, expected: 0, received: 0, lost: 0, recovered: 0, received_late: 0, unjudged: 0, duplicates: 0, inversions: 0, p50: 0, p99: 0 }); }
        var o = bySteps[at[k]];
        ["expected", "received", "lost", "recovered", "received_late", "unjudged", "duplicates", "inversions"].forEach(function (f) { o[f] += num(row[f]); });
        o.p50 = Math.max(o.p50, num(row.completion_p50_ms));
        o.p99 = Math.max(o.p99, num(row.completion_p99_ms));
      });
      var reach = function (o) { var j = o.expected - o.unjudged; return j > 0 ? (o.received / j).toFixed(3) : "–"; };
      var line = function (name, o, p50, p99) {
        return [name, { cls: o.lost > 0 ? "bad" : "ok", text: reach(o) }, o.expected, o.received, o.lost, o.recovered, o.received_late, o.unjudged, o.duplicates, o.inversions, fmt(p50) + " / " + fmt(p99) + " ms"];
      };
      var rows = bySteps.map(function (o) { return line("step " + o.step, o, o.p50, o.p99); });
      rows.push(line("run" + (lg.joined_runners ? " (" + lg.joined_runners + " runners joined)" : ""), lg, num(lg.completion_p50_ms), num(lg.completion_p99_ms)));
      if (multi) ls.appendChild(el("h3", {}, r.label));
      table(ls, ["", "reach", "expected", "received", "lost", "recovered", "late", "unjudged", "duplicates", "inversions", "fan-out completion p50 / p99"], rows);
      var v = lg.visibility;
      if (v && v.probed) {
        ls.appendChild(el("div", { "class": "run" }, "visibility: " + v.probed + " messages read by a member over /query: p50 " + fmt(v.p50_ms) + " ms, p99 " + fmt(v.p99_ms) + " ms after the OK; " + v.visible_at_ok + " readable at the OK, " + v.timed_out + " not within " + fmt(v.timeout_ms) + " ms"));
      }
      var bad = [];
      (lg.missed || []).forEach(function (m) { if (m.recovered_ms === null && m.received_late_ms === undefined && bad.length < 20) bad.push(["lost", String(m.event), String(m.recipient), String(m.channel), ""]); });
      (lg.leaked || []).slice(0, 20).forEach(function (k) { bad.push(["leak", String(k.event), String(k.recipient), String(k.channel), String(k.rule)]); });
      if (bad.length) table(ls, ["", "event", "recipient", "channel", "rule"], bad);
    });
  }

  relaySection();

  var anyWindows = runs.some(function (r) { return windows(r).length > 0; });

  // Clients by kind over the windows.
  if (anyWindows) {
    var cs = section("Clients");
    var ser = [];
    runs.forEach(function (r, ri) {
      KINDS.forEach(function (k) {
        // Every window once the kind has run: a window whose clients have
        // all left lists none of them, and is a zero (issue 29: the line
        // ended a window early).
        var ws = windows(r), seen = false, pts = [];
        if (!ws.some(function (w) { return own(w.clients, k) !== undefined; })) return;
        ws.forEach(function (w) {
          var v = own(w.clients, k);
          if (v !== undefined) seen = true;
          if (seen) pts.push([w.end_s, num(v)]);
        });
        ser.push({ name: prefix(r) + k, color: COL[k], dash: dashOf(ri), pts: pts });
      });
    });
    chart(cs, "clients", "live clients by kind", "clients", ser);
  }

  // The generator: CPU and scheduling lag per step.
  if (withSteps) {
  var gs = section("Generator health");
  var gser = [], lser = [];
  runs.forEach(function (r, ri) {
    var cpu = [], lag = [];
    steps(r).forEach(function (s) {
      if (!s.generator) return;
      cpu.push([s.start_s, s.generator.cpu_pct], [s.end_s, s.generator.cpu_pct]);
      lag.push([s.start_s, s.generator.lag_p99_ms], [s.end_s, s.generator.lag_p99_ms]);
    });
    gser.push({ name: prefix(r) + "CPU % of the cores", color: COL.cpu, dash: dashOf(ri), pts: cpu });
    lser.push({ name: prefix(r) + "scheduling lag p99", color: COL.lag, dash: dashOf(ri), pts: lag });
  });
  chart(gs, "generator-cpu", "generator CPU per step (% of all cores)", "%", gser);
  chart(gs, "generator-lag", "generator scheduling lag per step (due → started, p99)", "ms", lser);
  }

  // Operations: the union of every run's ops; desktop_* grouped apart.
  // Ops with no step or window data (the seed's, setup's) go under Setup.
  var ops = set(), timed = set(), inWin = set();
  runs.forEach(function (r) {
    windows(r).forEach(function (w) { for (var k in w.ops || {}) { ops[k] = timed[k] = inWin[k] = true; } });
    steps(r).forEach(function (s) { for (var k in s.ops || {}) ops[k] = timed[k] = true; });
    for (var k in r.ops || {}) ops[k] = true;
    for (var k2 in (rep(r) || {}).setup || {}) ops[k2] = true;
  });
  var names = Object.keys(ops).sort();
  // A run without a Buzz report has k6 metrics as its rows, not a seed.
  var anyReport = runs.some(function (r) { return rep(r); });
  var untimed = anyReport ? "Setup (the seed; outside the steps, no windows)" : "k6 metrics (whole run)";
  var groups = [["Operations", names.filter(function (n) { return timed[n] && n.indexOf("desktop_") !== 0; })],
    ["Desktop app", names.filter(function (n) { return timed[n] && n.indexOf("desktop_") === 0; })],
    [untimed, names.filter(function (n) { return !timed[n]; })]];


  groups.forEach(function (g) {
    if (!g[1].length) return;
    var s = section(g[0], g[0] === "Desktop app" ? "desktop" : "");
    g[1].forEach(function (op) {
      var card = el("div", { "class": "op" });
      card.appendChild(el("h3", {}, op));
      table(card, ["run", "count", "ok", "p50 ms", "p95 ms", "p99 ms", "p99 from due ms", "lag p99 ms", "errors", "throttled"],
        runs.map(function (r) {
          var t = totals(r, op);
          return [r.label, t.count === null ? "–" : t.count, t.ok === null ? "–" : t.ok, fmt(t.p50_ms), fmt(t.p95_ms), fmt(t.p99_ms), t.due_p99_ms ? fmt(t.due_p99_ms) : "–",
            t.lag_p99_ms ? fmt(t.lag_p99_ms) : "–", t.errors, t.throttled];
        }));
      if (inWin[op]) {
        var lat = [], rate = [];
        runs.forEach(function (r, ri) {
          var ws = windows(r).filter(function (w) { return own(w.ops, op); });
          var pick = function (k) { return ws.filter(function (w) { var o = own(w.ops, op); return num(o.count) - num(o.errors) - num(o.throttled) > 0; }).map(function (w) { return [w.end_s, num(own(w.ops, op)[k])]; }); };
          lat.push({ name: prefix(r) + "p50", color: COL.p50, dash: dashOf(ri), pts: pick("p50_ms") });
          lat.push({ name: prefix(r) + "p95", color: COL.p95, dash: dashOf(ri), pts: pick("p95_ms") });
          lat.push({ name: prefix(r) + "p99", color: COL.p99, dash: dashOf(ri), pts: pick("p99_ms") });
          var due = pick("due_p99_ms").filter(function (p) { return p[1] > 0; });
          if (due.length) lat.push({ name: prefix(r) + "p99 from due", color: COL.due, dash: dashOf(ri), pts: due });
          // Rates over every window: one without the op is a zero, drawn
          // as one, not bridged over (issue 29: a line joined 32/s across
          // an empty window).
          var all = windows(r);
          var per = function (f) { return all.map(function (w) { return [w.end_s, f(own(w.ops, op) || {}) / Math.max(0.001, num(w.end_s) - num(w.start_s))]; }); };
          rate.push({ name: prefix(r) + "ops/s", color: COL.tput, dash: dashOf(ri), pts: per(function (o) { return num(o.count); }) });
          rate.push({ name: prefix(r) + "errors/s", color: COL.err, dash: dashOf(ri), pts: per(function (o) { return num(o.errors); }) });
          rate.push({ name: prefix(r) + "throttled/s", color: COL.thr, dash: dashOf(ri), pts: per(function (o) { return num(o.throttled); }) });
        });
        chart(card, "op-" + op + "-latency", op + " latency per window", "ms", lat);
        chart(card, "op-" + op + "-rate", op + " throughput, errors, throttles per window", "per s", rate);
      }
      s.appendChild(card);
    });
  });

  if (!anyWindows && names.length && anyReport) {
    // No report windows (a merged result file): the whole run per op.
    var ss = section("Latency per operation (whole run)");
    var ser2 = [];
    runs.forEach(function (r, ri) {
      ["p50_ms", "p95_ms", "p99_ms"].forEach(function (k, ki) {
        ser2.push({ name: prefix(r) + k.replace("_ms", ""), color: [COL.p50, COL.p95, COL.p99][ki], dash: dashOf(ri),
          pts: names.map(function (op, i) { return [i + 1, num(totals(r, op)[k])]; }) });
      });
    });
    chart(ss, "ops-summary", "p50/p95/p99 by operation (x: " + names.map(function (n, i) { return (i + 1) + " " + n; }).join(", ") + ")", "ms", ser2,
      { steps: false, xMax: names.length + 1, xTicks: 1, xLabel: function (v) { return String(v); } });
  }

  finish();
  }

  // finish: #plot=ID, and where each plot is.
  function finish() {
  // #plot=ID shows that plot alone (for a link, or a screenshot of one).
  var m = /^#plot=(.+)$/.exec(location.hash);
  if (m) {
    // A hand-edited or cut link must not stop the page: a bad escape
    // shows the whole report.
    var want = null;
    try { want = decodeURIComponent(m[1]); } catch (e) { want = null; }
    var keep = want === null ? null : document.getElementById("plot-" + want);
    if (keep) {
      document.body.classList.add("single");
      keep.classList.add("shown");
    }
  }
  // Where each plot is, for tools that crop screenshots.
  var sx = window.scrollX, sy = window.scrollY;
  plots.forEach(function (id) {
    var f = document.getElementById("plot-" + id), b = f.getBoundingClientRect();
    f.setAttribute("data-rect", [Math.round(b.left + sx), Math.round(b.top + sy), Math.round(b.width), Math.round(b.height)].join(","));
  });
  document.documentElement.setAttribute("data-plots", String(plots.length));
  document.documentElement.setAttribute("data-height", String(Math.ceil(document.documentElement.scrollHeight)));
  }

  function totals(r, op) {
    var t = { count: 0, ok: 0, errors: 0, throttled: 0, p50_ms: 0, p95_ms: 0, p99_ms: 0, due_p99_ms: 0, lag_p99_ms: 0 };
    var p = rep(r) || {};
    steps(r).concat([p.shutdown || {}, { ops: p.setup }]).forEach(function (s) {
      var o = own(s.ops, op);
      if (!o) return;
      t.count += num(o.count); t.ok += num(o.ok); t.errors += num(o.errors); t.throttled += num(o.throttled);
      ["p50_ms", "p95_ms", "p99_ms", "due_p99_ms", "lag_p99_ms"].forEach(function (k) { t[k] = Math.max(t[k], num(o[k])); });
    });
    // Live, before the report: the windows so far (percentiles: the worst).
    if (!steps(r).length) {
      windows(r).forEach(function (w) {
        var o = own(w.ops, op);
        if (!o) return;
        t.count += num(o.count); t.errors += num(o.errors); t.throttled += num(o.throttled);
        t.ok += num(o.count) - num(o.errors) - num(o.throttled);
        ["p50_ms", "p95_ms", "p99_ms"].forEach(function (k) { t[k] = Math.max(t[k], num(o[k])); });
      });
    }
    // A result file's whole-run sinks are exact where the steps' worst is not.
    var x = own(r.ops, op);
    if (x) ["count", "ok", "errors", "throttled", "p50_ms", "p95_ms", "p99_ms"].forEach(function (k) {
      t[k] = (x.absent || []).indexOf(k) >= 0 ? null : num(x[k]);
    });
    return t;
  }

  // The overview: every operation's headline numbers, before the plots.
  function overview() {
    var seen = set();
    runs.forEach(function (r) {
      windows(r).forEach(function (w) { for (var k in w.ops || {}) seen[k] = true; });
      steps(r).forEach(function (s) { for (var k in s.ops || {}) seen[k] = true; });
      for (var k in r.ops || {}) seen[k] = true;
    });
    var names = Object.keys(seen).sort();
    if (!names.length) return;
    var s = section("Overview: operations");
    var rows = [];
    names.forEach(function (op) {
      runs.forEach(function (r) {
        var t = totals(r, op);
        rows.push([op + (multi ? " (" + r.label + ")" : ""), t.count === null ? "–" : t.count, t.errors, t.throttled, fmt(t.p50_ms), fmt(t.p95_ms), fmt(t.p99_ms)]);
      });
    });
    table(s, ["operation", "count", "errors", "throttled", "p50 ms", "p95 ms", "p99 ms"], rows);
  }

  // The k6 metrics over the run's periods, for any script: VUs,
  // iterations, HTTP requests, their latency and failures, checks, data.
  function metricsSection() {
    var have = runs.filter(function (r) { return periods(r).length; });
    if (!have.length) return;
    var period = num(have[0].metrics.period_s, 1);
    var ms = section("Metrics (per period of " + fmt(period) + " s)");
    // Totals over the run: what the summary gives, from the same periods.
    var names = set();
    have.forEach(function (r) { periods(r).forEach(function (w) { for (var k in w.metrics || {}) names[k] = true; }); });
    var list = Object.keys(names).sort();
    table(ms, ["metric"].concat(have.map(function (r) { return (multi ? r.label + " " : "") + "total"; })).concat(["what"]),
      list.map(function (k) {
        var what = "", row = [k];
        have.forEach(function (r) {
          var t = metricTotal(r, k);
          row.push({ cls: "num", text: t.text });
          what = t.what;
        });
        row.push(what);
        return row;
      }));
    function series(name, field, label, color, scale, perSecond) {
      var out = [];
      have.forEach(function (r, ri) {
        var pts = [];
        periods(r).forEach(function (w) {
          var p = own(w.metrics, name), dt = Math.max(0.001, num(w.end_s) - num(w.start_s));
          var v = p ? num(p[field]) : 0;
          if (!p && !perSecond) return;
          pts.push([w.end_s, (perSecond ? v / dt : v) * (scale || 1)]);
        });
        if (pts.length && (names[name])) out.push({ name: prefix(r) + label, color: color, dash: dashOf(ri), pts: pts });
      });
      return out;
    }
    function plot(id, title, unit, ser) { if (ser.length) chart(ms, id, title, unit, ser, { steps: true }); }
    plot("k6-vus", "virtual users", "VUs", series("vus_max", "value", "vus_max", COL.p95).concat(series("vus", "value", "vus", COL.p50)));
    plot("k6-iterations", "iterations per second", "per s", series("iterations", "sum", "iterations/s", COL.tput, 1, true)
      .concat(series("dropped_iterations", "sum", "dropped/s", COL.err, 1, true)));
    plot("k6-http-reqs", "HTTP requests per second", "per s", series("http_reqs", "sum", "requests/s", COL.tput, 1, true));
    // The relay's own count (--relay-metrics; the embedded relay's), live.
    plot("relay-live-events", "the relay's own count: events stored and rejections per second", "per s",
      series("buzz_relay_events_stored", "sum", "relay: stored/s", COL.tput, 1, true).concat(series("buzz_relay_rejections", "sum", "relay: rejections/s", COL.err, 1, true)));
    plot("relay-live-conns", "connections open on the relay (its own count) beside the virtual users", "count",
      series("buzz_relay_connections", "value", "relay: connections", COL.p50).concat(series("vus", "value", "vus", COL.p95)));
    plot("k6-http-duration", "http_req_duration", "ms", series("http_req_duration", "p50", "p50", COL.p50)
      .concat(series("http_req_duration", "p95", "p95", COL.p95)).concat(series("http_req_duration", "p99", "p99", COL.p99)));
    plot("k6-http-failed", "http_req_failed (share of requests)", "%", series("http_req_failed", "value", "failed", COL.err, 100));
    plot("k6-checks", "checks passed (share)", "%", series("checks", "value", "passed", COL.tput, 100));
    plot("k6-iteration-duration", "iteration_duration", "ms", series("iteration_duration", "p50", "p50", COL.p50)
      .concat(series("iteration_duration", "p95", "p95", COL.p95)));
    plot("k6-data", "data per second", "kB/s", series("data_received", "sum", "received", COL.p50, 0.001, true)
      .concat(series("data_sent", "sum", "sent", COL.p95, 0.001, true)));
    // The Buzz generator's health as it goes (the steps' verdicts on it
    // come with the report): its CPU as a share of its cores, in %.
    plot("buzz-generator-cpu", "generator CPU (this process, % of its cores)", "%", series("buzz_generator_cpu", "value", "CPU", COL.cpu, 100));
    plot("buzz-generator-lag", "generator scheduling lag (due → started)", "ms", series("buzz_generator_lag", "p99", "p99", COL.lag)
      .concat(series("buzz_generator_lag", "p50", "p50", COL.p50)));
  }

  // metricTotal is one metric over the whole run from its periods:
  // counters add, a rate is passes of samples, a gauge its last value and
  // a trend its sample count and largest p95.
  function metricTotal(r, k) {
    var n = 0, sum = 0, passes = 0, last = null, p95 = 0, kind = "";
    periods(r).forEach(function (w) {
      var p = own(w.metrics, k);
      if (!p) return;
      n += num(p.n); sum += num(p.sum); passes += num(p.passes); last = num(p.value);
      p95 = Math.max(p95, num(p.p95)); kind = String(p.t || "");
    });
    if (kind === "trend") return { text: String(n), what: n + " samples, largest p95 of a period " + fmt(p95) };
    if (kind === "counter") return { text: String(Math.round(sum * 1000) / 1000), what: "count" };
    if (kind === "rate") return { text: (n ? (100 * passes / n).toFixed(2) : "0.00") + " %", what: passes + " of " + n };
    return { text: last === null ? "–" : fmt(last), what: "last value" };
  }

  // Live: the web dashboard's page follows the run's event stream,
  // drawing each period as it closes, and the whole run at the end.
  var liveState = "running";
  var pending = null;
  function later() {
    if (pending === null) pending = setTimeout(function () { pending = null; render(); }, 250);
  }
  if (D.live && typeof EventSource === "function") {
    var es = new EventSource(D.live);
    es.addEventListener("window", function (e) {
      var w = JSON.parse(e.data), r = D.runs[0];
      r.metrics = r.metrics || { period_s: 1, windows: [] };
      r.metrics.windows.push(w);
      later();
    });
    es.addEventListener("final", function (e) {
      es.close();
      D = JSON.parse(e.data);
      liveState = "finished";
      render();
    });
    es.onerror = function () {
      if (liveState === "running") { liveState = "disconnected"; es.close(); later(); }
    };
  }
  render();
})();
