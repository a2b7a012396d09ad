"""Azure LLM inference trace (Azure Public Dataset, 2023): ``TIMESTAMP,ContextTokens,
GeneratedTokens``, one row per request to a production LLM service (the ``code`` and
``conversation`` files, an hour each).

It has no jobs or machines: it is a load, read as request arrivals and turned into a curve of
requests and tokens per second (``berth.traces.load``) that drives the replica count of
inference services. Times are dates with sub-second digits, taken as seconds since the earliest
request (a first pass finds it).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from berth.traces.base import Table, TraceFormat, has_columns
from berth.traces.constants import AZURE_LLM
from berth.traces.errors import TraceLog
from berth.traces.model import TraceOptions
from berth.traces.rows import Clock, Row, epoch, guard, read_csv

COLUMNS = ("timestamp", "contexttokens", "generatedtokens")


@dataclass(frozen=True, slots=True)
class Request:
    time: float  # seconds since the first request
    context_tokens: int
    generated_tokens: int


def read_requests(path: Path, options: TraceOptions, log: TraceLog) -> Iterator[Request]:
    rows = read_csv(path, COLUMNS, header=True)
    clock = Clock(epoch(row.text("timestamp") for row in rows if not row.problem))
    return guard(read_csv(path, COLUMNS, header=True), lambda row: _request(row, clock), log, path)


def _request(row: Row, clock: Clock) -> Request:
    return Request(
        time=clock.seconds(row.required("timestamp", "a date and time"), "timestamp"),
        context_tokens=row.integer("contexttokens", "a token count >= 0", minimum=0),
        generated_tokens=row.integer("generatedtokens", "a token count >= 0", minimum=0),
    )


FORMAT = TraceFormat(
    AZURE_LLM,
    "Azure LLM inference requests (AzureLLMInferenceTrace_*.csv): a load curve",
    (
        Table(
            "load",
            "requests (TIMESTAMP,ContextTokens,GeneratedTokens)",
            has_columns(*COLUMNS),
            read_requests,
        ),
    ),
)
