"""A budget of refusals: a caller refused too often in a minute is refused everything for a while.

Every command, accepted or rejected, is an event, so a client that keeps sending commands that
lose (or tokens that fail) would otherwise grow the log and load the service without limit.
Each answer from 400 to 499 (but 429) costs the caller one unit of a per-minute budget; once it
is spent, every request of that caller answers 429 `TOO_MANY_REQUESTS` with `Retry-After` until
the minute has passed. A caller is its bearer token, or its address when it sends none. Every
request counts, whether a route matches it or not (a made-up path or method is refused like any
other request). The counts live in the web process's memory, so each process keeps its own.
"""

from __future__ import annotations

import hashlib
import math
import time

from flask import Flask, Response, current_app, request
from flask_limiter import Limiter, RequestLimit

from domain.messages import Message
from web.problems import problem
from web.rate_limits import add_items, limit_item, policy_item

UNMATCHED = "unmatched"  # what the budget calls a request no route matched
POLICY = "refusals"  # the budget's name in RateLimit-Policy and RateLimit


def refusal_budget(app: Flask, per_minute: int) -> Limiter:
    """Rate-limit the app's callers by how often they are refused, and tell each refused one
    how much of its budget is left (its hook runs after the limiter's, which deducts)."""
    app.after_request(tell_budget)
    return Limiter(
        caller,
        app=app,
        application_limits=[f"{per_minute} per minute"],
        application_limits_deduct_when=is_refusal,
        storage_uri="memory://",
        on_breach=too_many_refusals,
        # Flask-Limiter names a request by its endpoint, and skips one that has none.
        request_identifier=lambda: request.endpoint or UNMATCHED,
    )


def caller() -> str:
    """Who spends the budget: a digest of the bearer token, else the client's address."""
    _, _, token = request.headers.get("Authorization", "").partition(" ")
    if token.strip():
        return "token:" + hashlib.sha256(token.strip().encode()).hexdigest()[:32]
    return f"address:{request.remote_addr}"


def is_refusal(response: Response) -> bool:
    return 400 <= response.status_code < 500 and response.status_code != 429


def tell_budget(response: Response) -> Response:
    """`RateLimit-Policy` and `RateLimit` on an answer that spends the budget (400-499), a
    throttled caller's 429 included: the quota, what is left and when it is whole again."""
    if not 400 <= response.status_code < 500:
        return response
    spent = current_app.extensions.get("limiter")
    limit = next(iter(spent)).current_limit if spent else None
    if limit is None:
        return response
    reset = max(0, math.ceil(limit.window.reset_time - time.time()))
    add_items(
        response,
        policy_item(POLICY, limit.limit.amount, limit.limit.get_expiry()),
        limit_item(POLICY, max(0, limit.remaining), reset),
    )
    return response


def too_many_refusals(limit: RequestLimit) -> Response:
    wait = max(1, math.ceil(limit.window.reset_time - time.time()))
    answer = problem(
        "TOO_MANY_REQUESTS",
        Message(
            "more than {count} of this caller's requests were refused within a minute; "
            "try again in {wait} s",
            count=limit.limit.amount,
            wait=wait,
        ),
    )
    answer.headers["Retry-After"] = str(wait)
    return answer
