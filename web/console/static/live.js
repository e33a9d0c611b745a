// Live console pages (web/console/live.py): a fragment re-fetched for a live event asks the
// server to answer once its read models hold that event (X-Min-Log-Position: the frame's id).
(function () {
  "use strict";
  document.addEventListener("htmx:configRequest", function (event) {
    var trigger = event.detail.triggeringEvent;
    var message = trigger && trigger.detail;
    if (message && message.lastEventId && /^[0-9]{1,19}$/.test(message.lastEventId)) {
      event.detail.headers["X-Min-Log-Position"] = message.lastEventId;
    }
  });
})();
