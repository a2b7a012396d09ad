"""The trace formats berth reads, in the order ``detect_format`` tries them: formats recognised
by their header first, then the headerless ones recognised by file name."""

from __future__ import annotations

from berth.traces.base import TraceFormat
from berth.traces.formats import (
    alibaba2017,
    alibaba2018,
    alibaba2025,
    azure_llm,
    helios,
    itp,
    openb,
    pai,
    philly,
)

FORMATS: dict[str, TraceFormat] = {
    fmt.name: fmt
    for fmt in (
        itp.FORMAT,
        philly.FORMAT,
        openb.FORMAT,
        helios.FORMAT,
        alibaba2025.FORMAT,
        azure_llm.FORMAT,
        alibaba2017.FORMAT,
        pai.FORMAT,
        alibaba2018.FORMAT,
    )
}
