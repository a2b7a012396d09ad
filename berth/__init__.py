"""berth: one scheduling engine for mixed clusters, in simulation and on Kubernetes."""

from berth import native

__version__ = "0.1.0"

# Before any module of the compiled group is imported: compiled, or all of them from source.
native.choose()
