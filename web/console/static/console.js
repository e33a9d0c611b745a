// The console's own script: remembers the browser's time zone, sends the CSRF token with
// htmx's requests, asks before a form marked data-confirm is sent, and shows the message of
// an htmx request the server refused (htmx swaps no error answer).
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
