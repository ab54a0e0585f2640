// The summary table, sorted and filtered where it is read (issue 31): inline in the page, no library and
// nothing fetched, so an offline copy of the report (or its single-file version) works as well.
//
// A wrapper marked data-table-tools holds one table and a hidden tool bar (a search box and a row count)
// that this script shows. Sorting goes by the table's own header ids: each body cell names its column in
// its `headers` attribute (HTML's table semantics, which great_tables writes), so a column under a
// spanner heading sorts like any other. A click on a heading sorts by it, a second click reverses;
// empty cells and "—" stay last either way. The filter keeps the rows holding every word typed.
(function () {
  "use strict";
  var SIZES = { K: 1024, M: 1048576, G: 1073741824, T: 1099511627776 };
  // "1,234", "12.5", "575–596" (by its low end) and "16K" (in bytes) are numbers; the rest is text.
  var NUMBER = /^(-?[\d,]*\.?\d+)\s*([KMGT])?(?:i?B)?(?:\s*[–-]\s*[\d.,]+[KMGT]?)?$/;

  function sortKey(text) {
    var t = text.trim();
    if (t === "" || t === "—" || t === "-") { return null; }
    var m = NUMBER.exec(t);
    if (m) { return parseFloat(m[1].replace(/,/g, "")) * (m[2] ? SIZES[m[2]] : 1); }
    return t;
  }

  function compare(a, b) {            // numbers before text, text in natural order ("1x6" < "2x3")
    if (typeof a === "number" && typeof b === "number") { return a - b; }
    if (typeof a === "number") { return -1; }
    if (typeof b === "number") { return 1; }
    return a.localeCompare(b, undefined, { numeric: true, sensitivity: "base" });
  }

  function cellOf(row, column) {
    for (var i = 0; i < row.cells.length; i++) {
      var names = (row.cells[i].getAttribute("headers") || "").split(/\s+/);
      if (names.indexOf(column) >= 0) { return row.cells[i]; }
    }
    return null;
  }

  function sortBy(table, th) {
    var body = table.tBodies[0];
    var descending = th.getAttribute("aria-sort") === "ascending";
    var rows = Array.prototype.slice.call(body.rows).map(function (row, i) {
      var cell = cellOf(row, th.id);
      return { row: row, i: i, key: cell ? sortKey(cell.textContent) : null };
    });
    rows.sort(function (a, b) {
      if (a.key === null || b.key === null) { return (a.key === null) - (b.key === null) || a.i - b.i; }
      return (descending ? compare(b.key, a.key) : compare(a.key, b.key)) || a.i - b.i;
    });
    rows.forEach(function (r) { body.appendChild(r.row); });
    table.querySelectorAll("th[aria-sort]").forEach(function (h) { h.setAttribute("aria-sort", "none"); });
    th.setAttribute("aria-sort", descending ? "descending" : "ascending");
  }

  function filterRows(table, text, count) {
    var words = text.toLowerCase().split(/\s+/).filter(Boolean);
    var rows = table.tBodies[0].rows, shown = 0;
    for (var i = 0; i < rows.length; i++) {
      var row = rows[i].textContent.toLowerCase();
      var keep = words.every(function (w) { return row.indexOf(w) >= 0; });
      rows[i].hidden = !keep;
      shown += keep ? 1 : 0;
    }
    count.textContent = shown + " of " + rows.length + " rows";
  }

  function setUp(wrapper) {
    var table = wrapper.querySelector("table");
    var tools = wrapper.querySelector(".table-tools");
    if (!table || !table.tBodies.length || !tools) { return; }
    var input = tools.querySelector("input");
    var count = tools.querySelector(".count");
    table.querySelectorAll("thead th[id][scope=col]").forEach(function (th) {
      th.setAttribute("aria-sort", "none");
      th.tabIndex = 0;
      th.title = "sort by this column (again: reverse)";
      th.addEventListener("click", function () { sortBy(table, th); });
      th.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sortBy(table, th); }
      });
    });
    input.addEventListener("input", function () { filterRows(table, input.value, count); });
    filterRows(table, input.value, count);
    tools.hidden = false;
  }

  document.querySelectorAll("[data-table-tools]").forEach(setUp);
})();
