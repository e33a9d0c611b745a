// The dead-letter list: a box in the table's head picks, or unpicks, every run on the page.
(function () {
  "use strict";
  document.addEventListener("change", function (event) {
    var all = event.target;
    if (!all.classList || !all.classList.contains("pick-all")) { return; }
    var table = all.closest("table");
    table.querySelectorAll('input[name="run_id"]').forEach(function (box) { box.checked = all.checked; });
  });
})();
