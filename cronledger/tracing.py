"""Traces (docs/operations.md#tracing): the W3C trace context a request brings, carried into
the runs it starts and onto log lines, and OpenTelemetry spans of requests, launches and store
calls, exported when `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`)
names a collector.

Without a collector nothing is recorded, and a request's `traceparent` still names the trace
its log lines, and the runs it starts, belong to: the OpenTelemetry API passes a context it did
not record on as it is.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from opentelemetry import context, trace
from opentelemetry.trace import (
    NonRecordingSpan,
    SpanContext,
    SpanKind,
    TraceFlags,
    Tracer,
    TracerProvider,
)

ENDPOINTS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
TRACER = "cronledger"
# A W3C traceparent of version 00 (https://www.w3.org/TR/trace-context/#traceparent-header),
# as a run keeps it: lower-case hex, neither id all zeros.
TRACEPARENT = re.compile(r"00-(?!0{32})([0-9a-f]{32})-(?!0{16})([0-9a-f]{16})-([0-9a-f]{2})")


def configure_tracing(kind: str, environ: Mapping[str, str] = os.environ) -> bool:
    """Once per process: when a collector is named, spans are recorded and exported to it in
    batches, and store calls are traced. Whether it is."""
    if not any(environ.get(name) for name in ENDPOINTS):
        return False
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from cronledger.version import installed_version

    resource = Resource.create(
        {
            "service.name": environ.get("OTEL_SERVICE_NAME") or "cronledger",
            "service.version": installed_version(),
            "cronledger.process": kind,
        }
    )
    provider = SdkTracerProvider(resource=resource)  # samples by OTEL_TRACES_SAMPLER
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    install(provider)
    return True


def install(provider: TracerProvider) -> None:
    """`provider` records this process's spans, store calls included."""
    trace.set_tracer_provider(provider)
    trace_store_calls(provider)


def trace_store_calls(provider: TracerProvider) -> None:
    """Each statement on a connection opened from now on is a span (psycopg, sqlite3)."""
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
    from opentelemetry.instrumentation.sqlite3 import SQLite3Instrumentor

    PsycopgInstrumentor().instrument(tracer_provider=provider)
    SQLite3Instrumentor().instrument(tracer_provider=provider)


def stop_tracing_store_calls() -> None:
    """Connections opened from now on are not traced (tests: the provider stays, once set)."""
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
    from opentelemetry.instrumentation.sqlite3 import SQLite3Instrumentor

    PsycopgInstrumentor().uninstrument()
    SQLite3Instrumentor().uninstrument()


def tracer() -> Tracer:
    return trace.get_tracer(TRACER)


def flush(seconds: float = 5.0) -> None:
    """Export the spans still waiting (a process about to exit), for up to `seconds`."""
    provider = trace.get_tracer_provider()
    force_flush = getattr(provider, "force_flush", None)
    if force_flush is not None:
        force_flush(int(seconds * 1000))


def current_traceparent() -> str | None:
    """The trace context this thread runs in (a request's, say) as a W3C traceparent; None
    outside any trace."""
    span_context = trace.get_current_span().get_span_context()
    if not span_context.is_valid:
        return None
    return (
        f"00-{span_context.trace_id:032x}-{span_context.span_id:016x}-"
        f"{int(span_context.trace_flags):02x}"
    )


def parent_of(traceparent: str) -> context.Context | None:
    """The context a span continuing `traceparent` starts in; None if it is not one."""
    matched = TRACEPARENT.fullmatch(traceparent)
    if matched is None:
        return None
    trace_id, span_id, flags = matched.groups()
    remote = SpanContext(
        int(trace_id, 16), int(span_id, 16), is_remote=True, trace_flags=TraceFlags(int(flags, 16))
    )
    return trace.set_span_in_context(NonRecordingSpan(remote))


@contextmanager
def span_in(
    name: str, traceparent: str, attributes: Mapping[str, str | int]
) -> Iterator[trace.Span]:
    """A span of `name` in the trace `traceparent` names, current in this thread until the
    block ends (its log lines name the trace), linked to the span current before it (the
    work it is part of: a worker's poll, say)."""
    around = trace.get_current_span().get_span_context()
    span = tracer().start_span(
        name,
        context=parent_of(traceparent),
        kind=SpanKind.INTERNAL,
        attributes=dict(attributes),
        links=[trace.Link(around)] if around.is_valid else None,
    )
    with trace.use_span(span, end_on_exit=True):
        yield span


class TraceFields(logging.Filter):
    """Every log line written in a trace names it: `trace_id` and `span_id` (a line that names
    a trace of its own keeps it, without the span)."""

    def filter(self, record: logging.LogRecord) -> bool:
        span_context = trace.get_current_span().get_span_context()
        if span_context.is_valid:
            trace_id = f"{span_context.trace_id:032x}"
            if getattr(record, "trace_id", trace_id) == trace_id:
                record.trace_id = trace_id
                record.span_id = f"{span_context.span_id:016x}"
        return True
