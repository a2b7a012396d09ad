"""berth: one scheduling engine for mixed clusters, in simulation and on Kubernetes."""

__version__ = "0.1.0"
