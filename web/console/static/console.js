// The console's own script: remembers the browser's time zone, sends the CSRF token with
// htmx's requests, asks before a form marked data-confirm is sent, lets a box in a table's
// head pick every row's box, and shows the message of an htmx request the server refused
// (htmx swaps no error answer).
(function () {
  "use strict";
  var zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  if (zone) {
    var secure = window.location.protocol === "https:" ? "; Secure" : "";
    document.cookie = "cronledger_zone=" + encodeURIComponent(zone) +
      "; path=/; SameSite=Lax; max-age=31536000" + secure;
  }
  document.addEventListener("htmx:configRequest", function (event) {
    var token = document.querySelector('meta[name="csrf-token"]');
    if (token) { event.detail.headers["X-CSRFToken"] = token.content; }
  });
  document.addEventListener("submit", function (event) {
    var question = event.target.getAttribute("data-confirm");
    if (question && !window.confirm(question)) { event.preventDefault(); }
  });
  document.addEventListener("change", function (event) {
    var all = event.target;
    if (!all.classList || !all.classList.contains("pick-all")) { return; }
    all.closest("table").querySelectorAll('tbody input[type="checkbox"]').forEach(function (box) {
      box.checked = all.checked;
    });
  });
  document.addEventListener("htmx:responseError", function (event) {
    var alert = document.getElementById("console-alert");
    var xhr = event.detail.xhr;
    if (!alert || !xhr) { return; }
    var page = new DOMParser().parseFromString(xhr.responseText || "", "text/html");
    var message = page.querySelector(".error-message");
    alert.textContent = message ? message.textContent : xhr.status + " " + xhr.statusText;
    alert.hidden = false;
  });
})();
