// cronledger's start-up of Swagger UI for GET /api/docs: the document named by the page.
"use strict";
window.addEventListener("DOMContentLoaded", function () {
  var container = document.getElementById("swagger-ui");
  window.ui = SwaggerUIBundle({
    url: container.dataset.document,
    domNode: container,
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    queryConfigEnabled: false, // ?url= and ?configUrl= never load another document
    validatorUrl: null, // no badge fetched from another origin
    defaultModelsExpandDepth: 0,
    displayOperationId: true,
  });
});
