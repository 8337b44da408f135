window.addEventListener("error", function (e) { var box = document.getElementById("error"); box.hidden = false; box.textContent = "the picture could not be drawn: " + e.message; });
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("hgm-data").textContent);
  var svg = document.getElementById("graph");
  var NS = svg.namespaceURI;  // the SVG namespace, taken from the page itself
  var W = data.node_width, H = data.node_height;
  var byId = new Map();
  var nodeEls = new Map();
  var edgeEls = [];
  var EDGE_COLORS = {parent_of: "#64748b", before: "#0284c7", related_to: "#9333ea", derived_from: "#d97706",
                     produces: "#059669", replaces: "#dc2626", causes: "#be123c"};
  var STATUS_COLORS = {done: "#16a34a", failed: "#dc2626", pending: "#9ca3af", active: "#2563eb",
                       blocked: "#f59e0b", skipped: "#a8a29e", stale: "#f59e0b"};

  function el(name, attrs, parent) {
    var node = document.createElementNS(NS, name);
    for (var key in attrs) { if (attrs[key] !== null && attrs[key] !== undefined) node.setAttribute(key, attrs[key]); }
    if (parent) parent.appendChild(node);
    return node;
  }
  function h(tag, text, parent, cls) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = text;
    if (cls) node.className = cls;
    if (parent) parent.appendChild(node);
    return node;
  }
  function edgeColor(type) { return EDGE_COLORS[type] || "#64748b"; }
  function show(value) { return typeof value === "string" ? value : JSON.stringify(value); }
  function plural(n, word) { return n + " " + word + (n === 1 ? "" : "s"); }

  // -- header --------------------------------------------------------------------------------
  document.getElementById("title").textContent = data.title;
  var drawn = data.nodes.length, drawnEdges = data.edges.length;
  var meta = plural(drawn, "node") + ", " + plural(drawnEdges, "edge") + " drawn";
  if (drawn !== data.total_nodes || drawnEdges !== data.total_edges)
    meta += " (of " + data.total_nodes + " and " + data.total_edges + ")";
  if (data.t !== null) meta += " \u00b7 t=" + data.t;
  document.getElementById("meta").textContent = meta;
  if (data.highlight) {
    var q = document.getElementById("query");
    q.hidden = false;
    q.classList.add("highlight");
    document.getElementById("query-text").textContent = data.highlight.query;
    var hl = data.highlight;
    document.getElementById("query-count").textContent =
      hl.kind === "count" || hl.kind === "exists" ? hl.kind + " = " + JSON.stringify(hl.value) : plural(hl.count, "result");
    document.getElementById("query-note").textContent = hl.note || "";
    svg.classList.add("has-highlight");
  }
  var legend = document.getElementById("legend");
  Object.keys(data.node_colors).forEach(function (type) {
    var item = h("span", null, legend, "legend-type");
    var swatch = h("span", null, item, "swatch");
    swatch.style.background = data.node_colors[type][0];
    swatch.style.borderColor = data.node_colors[type][1];
    item.appendChild(document.createTextNode(type));
  });
  var DIRTY_WORDS = {needs_review: "needs review", blocked: "blocked"};
  Object.keys(DIRTY_WORDS).forEach(function (state) {
    if (!data.nodes.some(function (n) { return n.dirty === state; })) return;
    var item = h("span", null, legend, "legend-dirty");
    h("span", null, item, "dirty " + state);
    item.appendChild(document.createTextNode(DIRTY_WORDS[state]));
  });
  if (data.note) {
    var limit = document.getElementById("limit-note");
    limit.hidden = false;
    limit.textContent = data.note + ". Draw more with hgm show --max-nodes N (or to_html(max_nodes=N)), or narrow the picture with --root or --highlight.";
  }
  data.edge_types.forEach(function (type) {
    var item = h("span", null, legend, "legend-edge");
    var line = h("span", null, item, "line");
    line.style.borderTopColor = edgeColor(type);
    if (type !== "parent_of") line.style.borderTopStyle = "dashed";
    item.appendChild(document.createTextNode(type));
  });

  // -- drawing -------------------------------------------------------------------------------
  svg.setAttribute("width", data.width);
  svg.setAttribute("height", data.height);
  svg.setAttribute("viewBox", "0 0 " + data.width + " " + data.height);
  var defs = document.getElementById("defs");
  var markers = {};
  function marker(color) {
    if (markers[color]) return markers[color];
    var id = "arrow-" + Object.keys(markers).length;
    var m = el("marker", {id: id, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 9, markerHeight: 9, markerUnits: "userSpaceOnUse", orient: "auto-start-reverse"}, defs);
    el("path", {d: "M0,0 L10,5 L0,10 z", fill: color}, m);
    markers[color] = id;
    return id;
  }
  data.nodes.forEach(function (n) { byId.set(n.id, n); });
  var columns = new Map();  // x -> the y of every box in that column, top to bottom
  data.nodes.forEach(function (n) { if (!columns.has(n.x)) columns.set(n.x, []); columns.get(n.x).push(n.y); });
  columns.forEach(function (ys) { ys.sort(function (p, q) { return p - q; }); });
  function nextInColumn(a, b) {
    var ys = columns.get(a.x), i = ys.indexOf(a.y), j = ys.indexOf(b.y);
    return Math.abs(i - j) === 1;
  }

  var edgeLayer = document.getElementById("edges"), labelLayer = document.getElementById("edge-labels");
  data.edges.forEach(function (e, index) {
    var a = byId.get(e.from), b = byId.get(e.to);
    if (!a || !b) return;
    var ay = a.y + H / 2, by = b.y + H / 2, d, mid, anchor = "middle";
    if (a.x === b.x && a.id !== b.id && nextInColumn(a, b)) {
      // Neighbours in one column: a short straight arrow between them.
      var down = b.y > a.y, cx = a.x + W / 2;
      var y1 = down ? a.y + H : a.y, y2 = down ? b.y : b.y + H;
      d = "M" + cx + "," + y1 + " L" + cx + "," + y2;
      mid = [cx + 6, (y1 + y2) / 2 + 7];
      anchor = "start";
    } else if (Math.abs(a.x - b.x) < W / 2) {
      // Same column: an arc out to the right.
      var sx = a.x + W, ex = b.x + W, bulge = 28 + Math.min(60, Math.abs(by - ay) * 0.12);
      if (a.id === b.id) { ay -= 8; by += 8; }
      d = "M" + sx + "," + ay + " C" + (sx + bulge) + "," + ay + " " + (ex + bulge) + "," + by + " " + ex + "," + by;
      mid = [sx + bulge * 0.75, (ay + by) / 2];
    } else {
      var forward = b.x > a.x;
      var x1 = forward ? a.x + W : a.x, x2 = forward ? b.x : b.x + W;
      var dx = (x2 - x1) / 2;
      d = "M" + x1 + "," + ay + " C" + (x1 + dx) + "," + ay + " " + (x2 - dx) + "," + by + " " + x2 + "," + by;
      mid = [(x1 + x2) / 2, (ay + by) / 2];
    }
    var color = e.mark ? "#ea580c" : edgeColor(e.type);
    var cls = "edge " + (e.hierarchy ? "hierarchy" : "other") + (e.mark ? " highlight" : "");
    var path = el("path", {d: d, "class": cls, id: e.dom_id, stroke: color, "marker-end": "url(#" + marker(color) + ")"}, edgeLayer);
    path.dataset.from = e.from; path.dataset.to = e.to; path.dataset.type = e.type;
    var tip = el("title", {}, path); tip.textContent = e.from + " \u2192 " + e.to + " (" + e.type + ")";
    edgeEls.push({data: e, el: path});
    if (!e.hierarchy) {
      var label = el("text", {x: mid[0], y: mid[1] - 3, "text-anchor": anchor, "class": "edge-label" + (e.mark ? " highlight" : "")}, labelLayer);
      label.textContent = e.type;
      edgeEls[edgeEls.length - 1].label = label;
    }
  });

  var nodeLayer = document.getElementById("nodes");
  data.nodes.forEach(function (n) {
    var colors = data.node_colors[n.type];
    var cls = "node type-" + n.type.replace(/[^A-Za-z0-9_-]/g, "_") + (n.hierarchy ? " in-hierarchy" : " outside") +
              (n.mark === "result" ? " highlight" : n.mark === "path" ? " onpath" : "") + (n.dirty ? " " + n.dirty : "");
    var g = el("g", {"class": cls, id: n.dom_id, transform: "translate(" + n.x + "," + n.y + ")", tabindex: 0, role: "button"}, nodeLayer);
    g.dataset.id = n.id;
    g.dataset.type = n.type;
    var tip = el("title", {}, g); tip.textContent = n.title + (n.dirty_note ? "\n" + n.dirty_note : "");
    el("rect", {"class": "box", width: W, height: H, rx: 7, ry: 7, fill: colors[0], stroke: colors[1]}, g);
    if (n.status) el("rect", {"class": "status", x: 0, y: 6, width: 4, height: H - 12, rx: 2, fill: STATUS_COLORS[n.status] || "#64748b"}, g);
    var name = el("text", {"class": "name", x: 10, y: 18}, g); name.textContent = n.label;
    var kind = el("text", {"class": "kind", x: W - 8, y: 17, "text-anchor": "end"}, g); kind.textContent = n.type;
    var detail = el("text", {"class": "detail", x: 10, y: 36}, g); detail.textContent = n.detail;
    if (n.dirty) {  // a pill on the top edge of the box: the rule's mark
      var word = DIRTY_WORDS[n.dirty], pill = word.length * 5.6 + 10;
      el("rect", {"class": "dirty-pill", x: W - pill - 6, y: -7, width: pill, height: 14, rx: 7, ry: 7}, g);
      var badge = el("text", {"class": "dirty-badge", x: W - 6 - pill / 2, y: 3.5, "text-anchor": "middle"}, g);
      badge.textContent = word;
    }
    if (n.hidden_children) {
      var more = el("text", {"class": "hidden-note", x: W + 4, y: H / 2 + 4}, g);
      more.textContent = "+" + n.hidden_children;
    }
    nodeEls.set(n.id, g);
    g.addEventListener("click", function (event) { event.stopPropagation(); select(n.id, true); });
    g.addEventListener("keydown", function (event) { if (event.key === "Enter" || event.key === " ") { event.preventDefault(); select(n.id, true); } });
  });

  // -- the picture's size: what was drawn, measured, margins included ---------------------------
  var MARGIN = 24;
  try {
    var box = svg.getBBox();
    var needW = Math.ceil(Math.max(data.width, box.x + box.width + MARGIN));
    var needH = Math.ceil(Math.max(data.height, box.y + box.height + MARGIN));
    if (needW !== data.width || needH !== data.height) {
      svg.setAttribute("width", needW);
      svg.setAttribute("height", needH);
      svg.setAttribute("viewBox", "0 0 " + needW + " " + needH);
    }
  } catch (err) { /* getBBox needs a rendered SVG: the computed size stands */ }

  // -- bringing a node into view -------------------------------------------------------------
  var canvas = document.getElementById("canvas");
  function reveal(id, always) {
    var n = byId.get(id);
    if (!n) return;
    var left = canvas.scrollLeft, top = canvas.scrollTop, width = canvas.clientWidth, height = canvas.clientHeight;
    var seen = n.x >= left && n.x + W <= left + width && n.y - 8 >= top && n.y + H <= top + height;
    if (always || !seen) {
      canvas.scrollLeft = Math.max(0, n.x + W / 2 - width / 2);
      canvas.scrollTop = Math.max(0, n.y + H / 2 - height / 2);
    }
    var g = nodeEls.get(id);
    if (g && g.focus) g.focus({preventScroll: true});
  }
  var results = data.highlight ? data.highlight.ids.filter(function (id) { return nodeEls.has(id); }) : [];
  var current = 0;
  function step(by) {
    if (!results.length) return;
    current = (current + by + results.length) % results.length;
    document.getElementById("query-position").textContent = (current + 1) + "/" + results.length;
    reveal(results[current], false);
  }
  if (results.length) {
    document.getElementById("query-steps").hidden = false;
    document.getElementById("query-position").textContent = "1/" + results.length;
    document.getElementById("query-previous").addEventListener("click", function () { step(-1); });
    document.getElementById("query-next").addEventListener("click", function () { step(1); });
  }

  // -- the side panel ------------------------------------------------------------------------
  var panel = document.getElementById("panel");
  var selected = null;
  function link(id, parent) {
    var a = h("a", id, parent);
    a.dataset.target = id;
    a.addEventListener("click", function () { select(id, true); });
    return a;
  }
  function describeChange(change) {
    var rest = {};
    Object.keys(change).forEach(function (k) { if (k !== "kind") rest[k] = change[k]; });
    return change.kind + " " + JSON.stringify(rest);
  }
  function select(id, fromUser) {
    var n = byId.get(id);
    if (selected) { var old = nodeEls.get(selected); if (old) old.classList.remove("selected"); }
    edgeEls.forEach(function (x) { x.el.classList.remove("adjacent"); });
    if (!n) {
      selected = null; panel.hidden = false; panel.dataset.id = id;
      document.getElementById("panel-title").textContent = id;
      document.getElementById("panel-type").textContent = "not drawn in this picture";
      ["panel-attrs", "panel-edges", "panel-history"].forEach(function (k) { document.getElementById(k).textContent = ""; });
      document.getElementById("panel-mark").textContent = "";
      return;
    }
    selected = id;
    var g = nodeEls.get(id);
    g.classList.add("selected");
    svg.classList.add("has-selection");
    panel.hidden = false;
    panel.dataset.id = id;
    document.getElementById("panel-title").textContent = n.id;
    document.getElementById("panel-type").textContent = n.type + (n.hierarchy ? ", level " + n.level + " of the hierarchy" : ", not in the hierarchy");
    var mark = "";
    if (data.highlight && n.mark) {
      var rank = data.highlight.ids.indexOf(n.id);
      mark = n.mark === "result" ? "result " + (rank + 1) + " of " + data.highlight.count + " of the highlight" : "on a walk of the highlight";
      var walk = null;
      data.highlight.paths.forEach(function (p) { if (!walk && p[p.length - 1] === n.id) walk = p; });
      if (walk && walk.length > 1) mark += ": " + walk.join(" \u2192 ");
    }
    document.getElementById("panel-mark").textContent = mark;
    var markList = document.getElementById("panel-marks");
    markList.textContent = "";
    (n.dirty_marks || []).forEach(function (m) {
      var text = (m.state || n.dirty) + (m.rule ? " by rule " + m.rule : "") +
                 (m.because && m.because.length ? " because of " + m.because.join(", ") : "") +
                 (m.t !== undefined && m.t !== null ? " at t=" + m.t : "") + (m.reason ? ": " + m.reason : "");
      h("li", text, markList, "mark");
    });
    if (!markList.childNodes.length) h("li", n.dirty ? DIRTY_WORDS[n.dirty] : "not marked stale or blocked", markList, n.dirty ? "mark" : "none");
    var table = document.getElementById("panel-attrs");
    table.textContent = "";
    var rows = [["id", n.id], ["type", n.type]];
    Object.keys(n.attrs).forEach(function (k) { rows.push([k, n.attrs[k]]); });
    rows.forEach(function (row) {
      var tr = h("tr", null, table);
      tr.dataset.key = row[0];
      h("td", row[0], tr, "key");
      h("td", show(row[1]), tr, "value");
    });
    var edgeList = document.getElementById("panel-edges");
    edgeList.textContent = "";
    edgeEls.forEach(function (x) {
      var e = x.data;
      if (e.from !== id && e.to !== id) return;
      x.el.classList.add("adjacent");
      var li = h("li", null, edgeList);
      if (e.from === id) { li.appendChild(document.createTextNode(e.type + " \u2192 ")); link(e.to, li); }
      else { link(e.from, li); li.appendChild(document.createTextNode(" \u2192 " + e.type)); }
    });
    if (!edgeList.childNodes.length) h("li", "none drawn", edgeList);
    var historyList = document.getElementById("panel-history");
    historyList.textContent = "";
    if (n.history === null) {
      h("li", "no history: drawn from a bare graph", historyList);
    } else if (!n.history.length) {
      h("li", "no commits touched it", historyList);
    } else {
      n.history.forEach(function (entry) {
        var li = h("li", null, historyList, "commit");
        li.dataset.t = entry.t;
        h("span", "t=" + entry.t, li, "when");
        var who = [entry.kind, entry.author ? "by " + entry.author : null].filter(Boolean).join(" ");
        li.appendChild(document.createTextNode(" " + who + " "));
        if (entry.reason) h("span", "\u201c" + entry.reason + "\u201d", li, "why");
        if (entry.timestamp) {
          h("div", new Date(entry.timestamp * 1000).toISOString().replace("T", " ").slice(0, 19) + " UTC", li, "why");
        }
        entry.changes.forEach(function (change) { h("div", describeChange(change), li, "change"); });
      });
    }
    if (fromUser) {
      try { history.replaceState(null, "", "#select=" + encodeURIComponent(id)); } catch (err) { /* file: pages may refuse */ }
    }
    reveal(id, !fromUser);
  }
  function closePanel() {
    panel.hidden = true;
    if (selected) { var g = nodeEls.get(selected); if (g) g.classList.remove("selected"); }
    svg.classList.remove("has-selection");
    edgeEls.forEach(function (x) { x.el.classList.remove("adjacent"); });
    selected = null;
  }
  document.getElementById("panel-close").addEventListener("click", closePanel);
  document.addEventListener("keydown", function (event) { if (event.key === "Escape") closePanel(); });
  function fromHash() {
    var match = /^#select=(.*)$/.exec(location.hash);
    if (match) select(decodeURIComponent(match[1]), false);
  }
  window.addEventListener("hashchange", fromHash);
  if (/^#select=/.test(location.hash)) fromHash();
  else if (results.length) reveal(results[0], true);
  document.body.dataset.ready = "1";
})();
