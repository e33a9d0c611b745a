"""Examples of the evidence for third parties: two signed checkpoints of the log's Merkle tree,
the consistency proof between them, and the evidence bundle of an approval instance (the
hashes and signatures are of the example's shape, not of a real log)."""

from __future__ import annotations

from typing import Any

from web.examples.world import SUBMITTED_INSTANCE_ID

KEY_ID = "fff7b47d68d6151d"
CHECKPOINT_48 = {
    "format": "cronledger-checkpoint/1",
    "tree_size": 48,
    "root_hash": "fef12d56d31169a36f26d9666f40a84957713edd223fa327cbccca5c28947ff4",
    "position": 48,
    "signed_at": "2026-10-01T10:00:00.000000+00:00",
    "key_id": KEY_ID,
    "signature": (
        "Joi+m1YLOcEcwRsi5hU2W2RRT9PrxU2v0QThs9IALbEaaxNrcVPD5EVEvuO9A5wDaxZQqiNqfkt8lY2Vq5aoBg=="
    ),
}
CHECKPOINT_64 = {
    "format": "cronledger-checkpoint/1",
    "tree_size": 64,
    "root_hash": "c3c1d6ddc3e153fb00c198761484d4a0475382f88cd74b0c30f08e1088a1a231",
    "position": 64,
    "signed_at": "2026-10-01T11:00:00.000000+00:00",
    "key_id": KEY_ID,
    "signature": (
        "t/gXIi2FHXz2kIupZad+kZzecuhUOsy7xVsuKGa3HBwQLH7Q2BlT4Tld+m/VHwyIe3ljlEjLRyRuks+5ZjWKDQ=="
    ),
}
SUBMITTED_STATE = (
    "eyJ0aW1lc3RhbXAiOnsiX3R5cGVfIjoiZGF0ZXRpbWVfaXNvIiwiX2RhdGFfIjoiMjAyNi0xMC0wMVQwOTowNTow"
    "MCswMDowMCJ9LCJhY3RvciI6ImFubiIsInRpdGxlIjoiT3BlbiBhY2NvdW50In0="
)
PROOF_TO_64 = [
    "f64551fcd6f07823cb87971cfb91446425da18286b3ab1ef935e0cbd7a69f68a",
    "3946ca64ff78d93ca61090a437cbb6b3d2ca0d488f5f9ccf3059608368b27693",
    "43bb00d0ce7790a53b91256b370c887b24791a5539a6fbfb70c5870e8c91ae5d",
    "ab71fc4c8a1c4d62b9202b36ee7c07dd398a0907a37037bd8c3959d6af573608",
    "536c351ae15e5f5e3dc37bcc5dea8ab641e70fc0431a088a1d684aef2ebf3e5b",
    "7d087a2e212c110e851c7b6fdc2853a41e7db1690beef7a9c11b3a26ee77e853",
]
CONSISTENCY_48_64 = [
    "d0f631ca1ddba8db3bcfcb9e057cdc98d0379f1bee00e75a545147a27dadd982",
    "9c0abe51c6e6655d81de2d044d4fb194931f058c0426c67c7285d8f5657ed64a",
]

EXAMPLES: dict[str, dict[str, Any]] = {
    "CheckpointsOut": {"two": {"items": [CHECKPOINT_48, CHECKPOINT_64]}},
    "ConsistencyOut": {
        "grown": {
            "from_checkpoint": CHECKPOINT_48,
            "to_checkpoint": CHECKPOINT_64,
            "proof": CONSISTENCY_48_64,
        },
    },
    "BundleOut": {
        "since-a-saved-checkpoint": {
            "format": "cronledger-evidence-bundle/1",
            "aggregate_id": SUBMITTED_INSTANCE_ID,
            "checkpoint": CHECKPOINT_64,
            "events": [
                {
                    "leaf_index": 37,
                    "position": 38,
                    "aggregate_id": SUBMITTED_INSTANCE_ID,
                    "version": 1,
                    "topic": "domain.approvals:ApprovalInstance.Submitted",
                    "state": SUBMITTED_STATE,
                    "inclusion_proof": PROOF_TO_64,
                }
            ],
            "deleted": [],
            "inserted": [],
            "later": [{"position": 65, "version": 2}],
            "consistency": [{"from_size": 48, "proof": CONSISTENCY_48_64}],
        },
    },
}
