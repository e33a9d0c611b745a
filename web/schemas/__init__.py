"""Request and response shapes, one module per resource beside web/<resource>.py and
web/examples/<resource>.py; the OpenAPI document is generated from them. `base` holds the
fields and schemas they are made of, `enums` every named set of values."""
