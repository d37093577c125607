// omnilab report: table filters and sorting, click-to-enlarge frames. No network, no framework.
"use strict";
(function () {
  function setupFilterable(section) {
    var table = section.querySelector("table.tasks");
    if (!table) return;
    var body = table.tBodies[0];
    var selects = section.querySelectorAll("select[data-filter]");
    var search = section.querySelector("input[type=search]");
    var shown = section.querySelector(".shown");
    function apply() {
      var text = search ? search.value.trim().toLowerCase() : "";
      var count = 0;
      var rows = body.rows;
      for (var i = 0; i < rows.length; i++) {
        var row = rows[i];
        var ok = true;
        for (var j = 0; j < selects.length; j++) {
          var want = selects[j].value;
          if (want && row.getAttribute("data-" + selects[j].dataset.filter) !== want) ok = false;
        }
        if (ok && text && (row.getAttribute("data-search") || "").indexOf(text) < 0) ok = false;
        row.hidden = !ok;
        if (ok) count++;
      }
      if (shown) shown.textContent = count + " of " + rows.length + " tasks";
    }
    for (var j = 0; j < selects.length; j++) selects[j].addEventListener("change", apply);
    if (search) search.addEventListener("input", apply);
    var heads = table.tHead ? table.tHead.rows[0].cells : [];
    for (var c = 0; c < heads.length; c++) {
      (function (index, head) {
        head.addEventListener("click", function () {
          var numeric = head.dataset.type === "num";
          var down = head.dataset.dir !== "asc";
          for (var k = 0; k < heads.length; k++) delete heads[k].dataset.dir;
          head.dataset.dir = down ? "asc" : "desc";
          var items = Array.prototype.slice.call(body.rows);
          items.sort(function (a, b) {
            var x = a.cells[index].textContent, y = b.cells[index].textContent;
            var r = numeric ? (parseFloat(x) || 0) - (parseFloat(y) || 0) : x.localeCompare(y);
            return down ? r : -r;
          });
          for (var k = 0; k < items.length; k++) body.appendChild(items[k]);
        });
      })(c, heads[c]);
    }
    apply();
  }

  function setupZoom() {
    var overlay = document.createElement("div");
    overlay.className = "overlay";
    overlay.hidden = true;
    var big = document.createElement("img");
    overlay.appendChild(big);
    overlay.addEventListener("click", function () { overlay.hidden = true; });
    document.body.appendChild(overlay);
    document.addEventListener("click", function (event) {
      var link = event.target.closest ? event.target.closest("a.zoom") : null;
      if (!link) return;
      event.preventDefault();
      big.src = link.getAttribute("href");
      overlay.hidden = false;
    });
    document.addEventListener("keydown", function (event) {
      if (event.key === "Escape") overlay.hidden = true;
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var sections = document.querySelectorAll(".filterable");
    for (var i = 0; i < sections.length; i++) setupFilterable(sections[i]);
    setupZoom();
  });
})();
