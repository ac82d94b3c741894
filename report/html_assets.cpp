// The HTML report's inline style sheet and script: constant text, so that nothing a program names can reach a
// <script> element (the data is in the table's data-* attributes, escaped by html_escape). No external resources:
// the page's Content-Security-Policy forbids them.
#include "report/html_parts.h"

namespace asynccheck::report {

const std::string_view kHtmlStyle = R"css(
:root{--error:#c92a2a;--warning:#e67700;--note:#1971c2;--waited:#e8590c;--own:#adb5bd;--work:#1c7ed6;
--behind:#74c0fc;--heldback:#ae3ec9;--line:#dee2e6;--fg:#212529;--aside:#6c757d}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);margin:0 auto;max-width:1200px;
padding:0 16px 32px}
header h1{font-size:22px;margin:16px 0 2px}header p{margin:0 0 8px;color:var(--aside)}
h2{font-size:17px;margin:18px 0 6px;border-bottom:1px solid var(--line)}
code{font:12.5px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;overflow-wrap:anywhere}
#run dl{display:grid;grid-template-columns:repeat(2,max-content minmax(0,1fr));gap:2px 14px;margin:0}
dt{color:var(--aside)}dd{margin:0}.bad{color:var(--error)}
.level{display:inline-block;padding:0 6px;border-radius:3px;color:#fff;font-size:12px;font-weight:600}
.level.error{background:var(--error)}.level.warning{background:var(--warning)}.level.note{background:var(--note)}
.tag{display:inline-block;padding:0 5px;border:1px solid var(--line);border-radius:3px;font-size:11px;color:var(--aside)}
.aside{color:var(--aside);font-size:12px}
.controls{margin:6px 0}.controls label{margin-right:10px}#shown{color:var(--aside)}
table{border-collapse:collapse;width:100%}
th{text-align:left;font-weight:600;border-bottom:2px solid var(--line);padding:4px 6px;white-space:nowrap}
th[data-sort]{cursor:pointer;user-select:none}th[data-sort]:hover{background:#f1f3f5}
th.asc::after{content:" \25B2";font-size:10px}th.desc::after{content:" \25BC";font-size:10px}
td{padding:4px 6px;vertical-align:top}td.n{text-align:right;white-space:nowrap}
tbody.site{border-top:1px solid var(--line)}tbody.site[hidden]{display:none}
tr.detail td{padding:0 6px 10px 30px}
.details .title{font-weight:600;margin:2px 0 4px}
.details dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:0 0 6px}
.split{display:block;height:4px;background:var(--own);margin-top:3px;min-width:60px}
.split .w{display:block;height:4px;background:var(--waited)}
details.stack ol{margin:2px 0;padding-left:26px}details.stack li.python code{font-weight:600}
figure.timeline{margin:6px 0 0}figcaption{font-size:13px;margin-bottom:2px}
svg.timeline{max-width:100%;height:auto;display:block;font:11px system-ui,sans-serif}
svg .waited{fill:var(--waited)}svg .own{fill:var(--own)}svg .call{fill:#495057}
svg .released{fill:var(--work)}svg .behind{fill:var(--behind)}svg .heldback{fill:var(--heldback)}
svg .running{fill:#fff;stroke:var(--work);stroke-dasharray:4 2}
svg .return{stroke:var(--fg);stroke-dasharray:3 3}svg .axis,svg .tick{stroke:var(--aside)}
svg .lane{fill:var(--fg)}svg .tick-label,svg .axis-label{fill:var(--aside)}
svg .work-label,svg .call-label{fill:var(--fg)}svg .inside{fill:#fff}
.no-timeline,.empty{color:var(--aside)}
footer{margin-top:24px;color:var(--aside);font-size:12px}
)css";

// Sorting (a click on a column's head, again to reverse) and filtering (level, rule) move or hide the table's
// <tbody> elements, one per site. The state is kept in the URL's fragment (#level=error&rule=...&sort=total&dir=desc)
// so that a link opens the same view. Once it has run, the body says so: data-ready="1", data-visible-rows=N.
const std::string_view kHtmlScript = R"js(
(function () {
  "use strict";
  var body = document.body;
  var table = document.getElementById("site-table");
  var level = document.getElementById("f-level");
  var rule = document.getElementById("f-rule");
  var shown = document.getElementById("shown");
  var text = { rule: true, call: true };

  function sites() { return table ? Array.prototype.slice.call(table.tBodies) : []; }

  function readHash() {
    var state = { level: "", rule: "", sort: "", dir: "" };
    location.hash.replace(/^#/, "").split("&").forEach(function (part) {
      var eq = part.indexOf("=");
      if (eq < 0) return;
      var key = part.slice(0, eq), value;
      try { value = decodeURIComponent(part.slice(eq + 1)); } catch (e) { return; }
      if (Object.prototype.hasOwnProperty.call(state, key)) state[key] = value;
    });
    return state;
  }

  function writeHash(state) {
    var parts = [];
    Object.keys(state).forEach(function (key) {
      if (state[key]) parts.push(key + "=" + encodeURIComponent(state[key]));
    });
    history.replaceState(null, "", parts.length ? "#" + parts.join("&") : location.pathname + location.search);
  }

  function current() {
    var state = readHash();
    state.level = level ? level.value : "";
    state.rule = rule ? rule.value : "";
    return state;
  }

  function choose(select, value) {
    if (!select) return;
    var known = Array.prototype.some.call(select.options, function (o) { return o.value === value; });
    select.value = known ? value : "";
  }

  function sortBy(key, dir) {
    if (!table || !key) return;
    var list = sites(), numeric = !text[key], sign = dir === "asc" ? 1 : -1;
    list.sort(function (a, b) {
      var x = a.getAttribute("data-" + key) || "", y = b.getAttribute("data-" + key) || "";
      var c = numeric ? Number(x) - Number(y) : x.localeCompare(y);
      return c !== 0 ? sign * c : Number(a.dataset.index) - Number(b.dataset.index);
    });
    list.forEach(function (t) { table.appendChild(t); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) {
      th.classList.remove("asc", "desc");
      if (th.getAttribute("data-sort") === key) th.classList.add(dir === "asc" ? "asc" : "desc");
    });
  }

  function apply(state) {
    choose(level, state.level);
    choose(rule, state.rule);
    var visible = 0, all = sites();
    all.forEach(function (t) {
      var keep = (!level || !level.value || t.dataset.level === level.value) &&
                 (!rule || !rule.value || t.dataset.rule === rule.value);
      t.hidden = !keep;
      if (keep) visible += 1;
    });
    sortBy(state.sort, state.dir);
    if (shown) shown.textContent = visible + " of " + all.length + (all.length === 1 ? " site" : " sites");
    body.setAttribute("data-visible-rows", String(visible));
    body.setAttribute("data-filter", "level=" + (level ? level.value : "") + ";rule=" + (rule ? rule.value : ""));
  }

  function changed() {
    var state = current();
    writeHash(state);
    apply(state);
  }

  if (level) level.addEventListener("change", changed);
  if (rule) rule.addEventListener("change", changed);
  if (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) {
      var key = th.getAttribute("data-sort");
      if (!key) return;
      th.addEventListener("click", function () {
        var state = current();
        // Numbers first from the largest, names from A; a second click reverses.
        var first = text[key] || key === "index" ? "asc" : "desc";
        state.dir = state.sort === key ? (state.dir === "asc" ? "desc" : "asc") : first;
        state.sort = key;
        writeHash(state);
        apply(state);
      });
    });
  }
  window.addEventListener("hashchange", function () { apply(readHash()); });
  apply(readHash());
  body.setAttribute("data-ready", "1");
})();
)js";

}  // namespace asynccheck::report
