// The new token's copy button: puts the token on the clipboard (the field stays selectable by
// hand where the browser refuses).
(function () {
  "use strict";
  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-copy]");
    if (!button) { return; }
    var field = document.getElementById(button.getAttribute("data-copy"));
    field.select();
    var done = function () { button.textContent = button.getAttribute("data-copied"); };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(field.value).then(done, function () { document.execCommand("copy"); done(); });
    } else {
      document.execCommand("copy");
      done();
    }
  });
})();

// A group's form: only the members ticked may be chosen as its leader; unticking the leader
// leaves the group without one.
(function () {
  "use strict";
  document.addEventListener("change", function (event) {
    var box = event.target;
    var leader = box.form && box.form.querySelector("select[data-members='" + box.name + "']");
    if (!leader || box.type !== "checkbox") { return; }
    var option = leader.querySelector("option[value='" + CSS.escape(box.value) + "']");
    if (!option) { return; }
    option.disabled = !box.checked;
    if (!box.checked && option.selected) { leader.value = ""; }
  });
})();

// The definition form: Enter in a field sends it by its own button (create or save), not by
// "Add another level", the form's first button (without JavaScript, Enter sends that one,
// which saves nothing and shows the form again as it was).
(function () {
  "use strict";
  document.addEventListener("keydown", function (event) {
    var field = event.target;
    if (event.key !== "Enter" || !field.form || field.tagName !== "INPUT") { return; }
    var button = field.form.querySelector("[data-enter-sends]");
    if (!button) { return; }
    event.preventDefault();
    field.form.requestSubmit(button);
  });
})();
