"""Traces (issue 32, item 10): a request's W3C `traceparent` names the trace of its spans, its
store calls, its log lines and the runs it starts; each run's launch continues that trace.

The spans reach OpenTelemetry's in-memory exporter, through a tracer provider that is the
process's for the test only (OpenTelemetry's test utilities reset it after).
"""

from __future__ import annotations

import io
import json
import logging
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.test.globals_test import reset_trace_globals
from opentelemetry.trace import SpanKind

from cronledger import tracing
from cronledger.application.launches import Worker
from cronledger.logs import json_handler
from tests.e2e.helpers import answers
from tests.processes import free_port, started
from tests.support import T0, Api, FakeClock, Opener, World
from web import create_app

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{CALLER_SPAN}-01"


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """The spans that end during the test, store calls on connections it opens included
    (ask for it before the services, which open their connections as they start)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    reset_trace_globals()
    tracing.install(provider)
    try:
        yield exporter
    finally:
        tracing.stop_tracing_store_calls()
        reset_trace_globals()  # later tests run as a process without a collector does


@pytest.fixture
def log_lines() -> Iterator[io.StringIO]:
    """The process's log as it writes it (cronledger/logs.py), JSON lines."""
    stream = io.StringIO()
    handler = json_handler(stream)
    root = logging.getLogger()
    root.addHandler(handler)
    level, root.level = root.level, logging.INFO
    try:
        yield stream
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def hex_trace(span: ReadableSpan) -> str:
    assert span.context is not None
    return f"{span.context.trace_id:032x}"


def hex_span(span: ReadableSpan) -> str:
    assert span.context is not None
    return f"{span.context.span_id:016x}"


def written(stream: io.StringIO, message: str) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    return [line for line in lines if line["message"] == message]


def test_a_request_and_the_launch_of_the_run_it_started_are_one_trace(
    spans: InMemorySpanExporter, open_with: Opener, log_lines: io.StringIO
) -> None:
    clock = FakeClock(T0)
    world = World(open_with(clock), clock)
    api = Api(create_app({"SERVICES": world.services, "TESTING": True}).test_client(), world.token)
    path = f"/api/workflows/schedules/{world.schedule}"

    started = api.post(f"{path}/run", {"request_id": "r1"}, headers={"traceparent": TRACEPARENT})
    assert started.status_code == 202, started.json
    Worker.of(world.services).drain()

    (request,) = [s for s in spans.get_finished_spans() if s.kind == SpanKind.SERVER]
    assert (hex_trace(request), request.parent and f"{request.parent.span_id:016x}") == (
        TRACE_ID,
        CALLER_SPAN,
    )
    store_calls = [s for s in spans.get_finished_spans() if s.kind == SpanKind.CLIENT]
    assert {hex_trace(s) for s in store_calls if s.parent == request.context}, "no store call"
    (launch,) = [s for s in spans.get_finished_spans() if s.name == "launch run"]
    assert hex_trace(launch) == TRACE_ID
    assert launch.parent is not None
    assert launch.parent.span_id == request.context.span_id  # type: ignore[union-attr]
    assert launch.attributes is not None
    assert launch.attributes["cronledger.run_id"] == started.json["id"]
    assert launch.attributes["cronledger.outcome"] == "succeeded"

    world.services.projector.catch_up()
    assert api.get(f"{path}/runs/{started.json['id']}").json["trace_id"] == TRACE_ID
    (request_line,) = [
        line for line in written(log_lines, "request") if line["route"].endswith("/run")
    ]
    (launch_line,) = written(log_lines, "launch succeeded")
    assert request_line["trace_id"] == launch_line["trace_id"] == TRACE_ID
    assert launch_line["span_id"] == hex_span(launch)


def test_without_a_collector_the_callers_trace_still_names_the_run_and_the_log_lines(
    open_with: Opener, log_lines: io.StringIO
) -> None:
    """No tracer provider (no collector named): nothing is recorded, and the `traceparent`
    still goes into the run, its launch's log lines and the request's; a request without one
    starts a run whose trace is its own id, as before."""
    clock = FakeClock(T0)
    world = World(open_with(clock), clock)
    api = Api(create_app({"SERVICES": world.services, "TESTING": True}).test_client(), world.token)
    path = f"/api/workflows/schedules/{world.schedule}/run"
    traced = api.post(path, {"request_id": "r1"}, headers={"traceparent": TRACEPARENT}).json
    plain = api.post(path, {"request_id": "r2"}).json
    Worker.of(world.services).drain()
    assert (traced["trace_id"], plain["trace_id"]) == (TRACE_ID, plain["id"].replace("-", ""))
    launched = {line["run_id"]: line["trace_id"] for line in written(log_lines, "launch succeeded")}
    assert launched == {traced["id"]: TRACE_ID, plain["id"]: plain["trace_id"]}
    requests = [line for line in written(log_lines, "request") if line["route"].endswith("/run")]
    assert [line.get("trace_id") for line in requests] == [TRACE_ID, None]


def test_a_run_started_without_a_trace_launches_in_a_trace_of_its_own(
    spans: InMemorySpanExporter, open_with: Opener
) -> None:
    clock = FakeClock(T0)
    world = World(open_with(clock), clock)
    run_id = world.run_now()  # no request, no trace
    Worker.of(world.services).drain()
    (launch,) = [s for s in spans.get_finished_spans() if s.name == "launch run"]
    assert hex_trace(launch) == run_id.replace("-", "")
    assert world.run(run_id).trace_id == run_id.replace("-", "")


@pytest.mark.parametrize(
    "traceparent",
    [
        "not a traceparent",
        f"00-{'0' * 32}-{CALLER_SPAN}-01",  # an all-zero trace id is invalid
        f"ff-{TRACE_ID}-{CALLER_SPAN}-01",  # version ff is forbidden
    ],
)
def test_a_traceparent_that_is_not_one_is_ignored(
    spans: InMemorySpanExporter, open_with: Opener, traceparent: str
) -> None:
    clock = FakeClock(T0)
    world = World(open_with(clock), clock)
    api = Api(create_app({"SERVICES": world.services, "TESTING": True}).test_client(), world.token)
    path = f"/api/workflows/schedules/{world.schedule}/run"
    started = api.post(path, {"request_id": "r1"}, headers={"traceparent": traceparent})
    assert started.status_code == 202, started.json
    (request,) = [s for s in spans.get_finished_spans() if s.kind == SpanKind.SERVER]
    assert request.parent is None  # a trace of its own
    assert started.json["trace_id"] == hex_trace(request) != TRACE_ID


class Collector:
    """An OTLP/HTTP collector on loopback: the spans exported to it, by trace id."""

    def __init__(self) -> None:
        self.spans: list[tuple[str, str]] = []  # (trace id, span name)
        received = self.spans

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = ExportTraceServiceRequest.FromString(body)
                for resource in request.resource_spans:
                    for scope in resource.scope_spans:
                        received.extend((s.trace_id.hex(), s.name) for s in scope.spans)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}"


def test_a_served_process_exports_its_spans_to_the_collector_named(store_url: str) -> None:
    """`OTEL_EXPORTER_OTLP_ENDPOINT` set: the process's spans (its requests' and their store
    calls') reach that collector, in the caller's trace."""
    collector = Collector()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": collector.url, "OTEL_BSP_SCHEDULE_DELAY": "100"}
    try:
        with started(store_url, "serve", "--port", str(port), **env) as child:
            child.wait_for(lambda: answers(f"{base}/readyz"), "serving")
            asked = urllib.request.Request(
                f"{base}/api/accounts", headers={"traceparent": TRACEPARENT}
            )
            with pytest.raises(urllib.error.HTTPError):  # 401: no token, a request all the same
                urllib.request.urlopen(asked, timeout=10)
            child.wait_for(
                lambda: any(trace_id == TRACE_ID for trace_id, _ in collector.spans),
                "the request's spans exported",
            )
    finally:
        collector.server.shutdown()
    names = {name for trace_id, name in collector.spans if trace_id == TRACE_ID}
    assert "GET /api/accounts" in names, names
