// The schedule form's cron builder: shows the builder (hidden without this script, when the
// expression field is all there is), writes the expression from its choices and tells the
// preview, and turns to "advanced" as soon as the expression is typed by hand.
(function () {
  "use strict";

  function number(input, lowest, highest) {
    var value = parseInt(input.value, 10);
    if (isNaN(value)) { return lowest; }
    return Math.min(highest, Math.max(lowest, value));
  }

  // ISO weekdays (1 is Monday, 7 Sunday) as cron writes them: runs of days as ranges.
  function weekdays(days) {
    if (days.length === 7) { return "*"; }
    var parts = [];
    var start = 0;
    for (var i = 1; i <= days.length; i++) {
      if (i === days.length || days[i] !== days[i - 1] + 1) {
        var first = days[start];
        var last = days[i - 1];
        parts.push(first === last ? String(first) : first + (last === first + 1 ? "," : "-") + last);
        start = i;
      }
    }
    return parts.join(",");
  }

  function expressionOf(builder) {
    var mode = builder.querySelector("#builder-mode").value;
    var time = (builder.querySelector("#builder-time").value || "09:00").split(":");
    var at = parseInt(time[1], 10) + " " + parseInt(time[0], 10);
    if (mode === "minutes") {
      var every = number(builder.querySelector("#builder-every"), 1, 59);
      return (every === 1 ? "*" : "*/" + every) + " * * * *";
    }
    if (mode === "hourly") {
      return number(builder.querySelector("#builder-minute"), 0, 59) + " * * * *";
    }
    if (mode === "daily") { return at + " * * *"; }
    if (mode === "monthly") {
      return at + " " + number(builder.querySelector("#builder-day"), 1, 31) + " * *";
    }
    if (mode === "weekly") {
      var days = [];
      builder.querySelectorAll(".builder-day:checked").forEach(function (box) {
        days.push(parseInt(box.value, 10));
      });
      return at + " * * " + weekdays(days);
    }
    return null; // advanced: the expression as typed
  }

  function showParts(builder) {
    var mode = builder.querySelector("#builder-mode").value;
    builder.querySelectorAll("[data-modes]").forEach(function (part) {
      part.hidden = part.getAttribute("data-modes").split(" ").indexOf(mode) < 0;
    });
  }

  function start() {
    var builder = document.getElementById("cron-builder");
    var expression = document.getElementById("expression");
    if (!builder || !expression) { return; }
    builder.hidden = false;
    showParts(builder);
    var written = null;

    builder.addEventListener("change", function (event) {
      var box = event.target;
      if (box.classList.contains("builder-day") && !builder.querySelector(".builder-day:checked")) {
        box.checked = true; // a week with no day would never fire: one day stays chosen
      }
      showParts(builder);
      var wanted = expressionOf(builder);
      if (wanted === null || wanted === expression.value) { return; }
      written = wanted;
      expression.value = wanted;
      // The preview follows the expression field's own events (htmx, form.html).
      expression.dispatchEvent(new Event("input", { bubbles: true }));
    });
    builder.addEventListener("input", function (event) {
      if (event.target.type === "number" || event.target.type === "time") {
        builder.dispatchEvent(new Event("change"));
      }
    });
    expression.addEventListener("input", function () {
      if (expression.value === written) { return; }
      written = null;
      builder.querySelector("#builder-mode").value = "advanced";
      showParts(builder);
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
