"""Names and defaults of trace reading that the command line shows before it reads any trace
(``--format`` choices, option defaults in ``--help``). They are defined here, in a module that
imports nothing, so that building the parser loads no format and no object model; the formats
and ``TraceOptions`` take them from here."""

ITP = "itp"
PHILLY = "philly"
OPENB = "openb"
HELIOS = "helios"
ALIBABA2025 = "alibaba2025"
AZURE_LLM = "azure-llm"
ALIBABA2017 = "alibaba2017"
PAI = "pai"
ALIBABA2018 = "alibaba2018"

#: The formats berth reads, in the order ``detect_format`` tries them: formats recognised by
#: their header first, then the headerless ones recognised by file name.
FORMAT_NAMES = (ITP, PHILLY, OPENB, HELIOS, ALIBABA2025, AZURE_LLM, ALIBABA2017, PAI, ALIBABA2018)

#: GPUs per worker when a trace gives only a job's GPU count (an 8-GPU server's).
DEFAULT_GPUS_PER_NODE = 8
#: MiB of a whole machine, for traces that give memory as a fraction of one.
DEFAULT_MACHINE_MEMORY = 64 * 1024
