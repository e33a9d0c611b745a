"""Examples of callback sources: `esign`, the e-signature system of tenant `acme`."""

from __future__ import annotations

from typing import Any

from web.examples.world import CREATED_AT

ESIGN_ID = "f3090e61-df80-50d2-83ce-1c4e64dc7382"  # derived from the tenant and the name
ESIGN = {
    "id": ESIGN_ID,
    "name": "esign",
    "description": "The e-signature system: posts contract signing callbacks",
    "generation": 1,
    "created_at": CREATED_AT,
    "secret_created_at": CREATED_AT,
    "version": 1,
}
ROTATED = {**ESIGN, "generation": 2, "secret_created_at": "2026-10-01T12:00:00Z", "version": 2}

EXAMPLES: dict[str, dict[str, Any]] = {
    "CallbackSourceCreate": {
        "esign": {
            "name": "esign",
            "description": "The e-signature system: posts contract signing callbacks",
        },
    },
    "CallbackSourceOut": {"registered": ESIGN, "rotated": ROTATED},
    "CallbackSourceSecretOut": {
        "registered": {**ESIGN, "secret": "whsec_UNhY4JhezH9gQYqvDMWrWH9CwlcKiECVqejMrND2VFw="},
        "rotated": {**ROTATED, "secret": "whsec_X7FnnghnQFm3LicdiQLBGhJ7tTAbBV3Hf6A5Mq2lalY="},
    },
    "CallbackSourcePage": {
        "first-page": {
            "items": [ESIGN],
            "page": 1,
            "page_size": 20,
            "total": 1,
            "total_capped": False,
            "next_cursor": None,
        },
    },
}
