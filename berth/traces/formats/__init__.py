"""The trace formats berth reads, by name in the order ``detect_format`` tries them (that order
is ``FORMAT_NAMES``, kept where the command line reads it without loading the formats)."""

from __future__ import annotations

from berth.traces.base import TraceFormat
from berth.traces.constants import FORMAT_NAMES
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

_BY_NAME = {
    fmt.name: fmt
    for fmt in (
        alibaba2017.FORMAT,
        alibaba2018.FORMAT,
        alibaba2025.FORMAT,
        azure_llm.FORMAT,
        helios.FORMAT,
        itp.FORMAT,
        openb.FORMAT,
        pai.FORMAT,
        philly.FORMAT,
    )
}
FORMATS: dict[str, TraceFormat] = {name: _BY_NAME[name] for name in FORMAT_NAMES}
