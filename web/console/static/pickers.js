// Type-ahead pickers (templates/console/lists/_macros.html `picker`): an ARIA 1.2 combobox
// over /console/pick/<kind>?q=. Without this script a picker is a text field taking a name or
// an id, which the page reads. With it, a pick sends the picked item's value (an id, a key)
// from a hidden field of the same name, while the box shows its name; typing again sends
// what is typed, as without the script.
(function () {
  "use strict";
  var WAIT_MS = 150;

  function setUp(box) {
    var field = box.querySelector('input[role="combobox"]');
    var list = box.querySelector('[role="listbox"]');
    var hidden = document.createElement("input");
    var name = field.name;
    var timer = null;
    var asked = 0;
    hidden.type = "hidden";
    if (field.form && field.getAttribute("form")) { hidden.setAttribute("form", field.getAttribute("form")); }
    field.insertAdjacentElement("afterend", hidden);

    function choose(value, label) {
      asked += 1;  // an answer still on its way is for what was typed before
      clearTimeout(timer);
      hidden.name = name;
      hidden.value = value;
      field.removeAttribute("name");
      field.value = label;
      field.dataset.shown = label;
      close();
    }
    function typed() {
      hidden.removeAttribute("name");
      field.name = name;
    }
    if (field.dataset.value && field.value === field.dataset.shown) {
      choose(field.dataset.value, field.value);
    }

    function options() { return Array.prototype.slice.call(list.querySelectorAll('[role="option"]')); }
    function close() {
      list.hidden = true;
      field.setAttribute("aria-expanded", "false");
      field.removeAttribute("aria-activedescendant");
    }
    function show(items) {
      list.textContent = "";
      items.forEach(function (item, index) {
        var option = document.createElement("li");
        option.id = field.id + "-option-" + index;
        option.setAttribute("role", "option");
        option.setAttribute("aria-selected", "false");
        option.dataset.value = item.value;
        option.dataset.label = item.label;
        option.textContent = item.label;
        if (item.hint && item.hint !== item.label) {
          var hint = document.createElement("span");
          hint.className = "hint";
          hint.textContent = " " + item.hint;
          option.appendChild(hint);
        }
        option.addEventListener("mousedown", function (event) {
          event.preventDefault();
          choose(item.value, item.label);
        });
        list.appendChild(option);
      });
      list.hidden = items.length === 0;
      field.setAttribute("aria-expanded", items.length ? "true" : "false");
    }
    function ask() {
      var mine = ++asked;
      var url = box.dataset.pick + "?q=" + encodeURIComponent(field.value.trim());
      fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
        .then(function (answer) { return answer.ok ? answer.json() : { items: [] }; })
        .then(function (found) { if (mine === asked && document.activeElement === field) { show(found.items); } })
        .catch(function () { close(); });
    }
    function move(step) {
      var all = options();
      if (!all.length) { return; }
      var current = all.findIndex(function (o) { return o.getAttribute("aria-selected") === "true"; });
      var next = (current + step + all.length) % all.length;
      all.forEach(function (o, i) { o.setAttribute("aria-selected", i === next ? "true" : "false"); });
      field.setAttribute("aria-activedescendant", all[next].id);
      all[next].scrollIntoView({ block: "nearest" });
    }

    field.addEventListener("input", function () {
      typed();
      clearTimeout(timer);
      timer = setTimeout(ask, WAIT_MS);
    });
    field.addEventListener("focus", function () { if (!field.value) { ask(); } });
    field.addEventListener("keydown", function (event) {
      if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        event.preventDefault();
        if (list.hidden) { ask(); return; }
        move(event.key === "ArrowDown" ? 1 : -1);
      } else if (event.key === "Enter" && !list.hidden) {
        var active = list.querySelector('[aria-selected="true"]');
        if (active) {
          event.preventDefault();
          choose(active.dataset.value, active.dataset.label);
        }
      } else if (event.key === "Escape") {
        close();
      }
    });
    field.addEventListener("blur", close);
  }

  function setUpAll() {
    document.querySelectorAll(".picker[data-pick]").forEach(function (box) {
      if (box.dataset.ready) { return; }
      box.dataset.ready = "1";
      setUp(box);
    });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", setUpAll);
  } else {
    setUpAll();
  }
  document.addEventListener("htmx:afterSwap", setUpAll);
})();
