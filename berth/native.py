"""The modules berth runs compiled, and when it runs them from source instead.

A session's path (the scheduler, enqueue and allocate with what they share, the cluster
state, the simulation's event loop, the queue shares and the default configurations' plugins)
is compiled by mypyc when berth is installed (``setup.py``): the same Python, type-checked and
turned into C. Compiled modules call each other directly, so they are
used all together or not at all: from source when any of them is missing or its source is not
the one it was built from (a working copy edited since its last build: ``make`` builds again),
or when ``BERTH_COMPILED=0`` asks for it. An edit therefore always takes effect, compiled or
not. The build records each source's digest beside this module (``STAMP``); file times would
not do, as an installer writes the files in whatever order.

Only the standard library is imported here: ``setup.py`` reads the list before anything else
is installed.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

#: What mypyc compiles, as one group (the build fails where one does not type-check).
COMPILED = (
    "berth.actions.allocate",
    "berth.actions.enqueue",
    "berth.actions.eviction",
    "berth.actions.eviction_turn",
    "berth.actions.gang_turn",
    "berth.actions.parking",
    "berth.actions.preempt",
    "berth.actions.ruled_out",
    "berth.actions.runs",
    "berth.actions.turns",
    "berth.cluster.change_log",
    "berth.cluster.devices",
    "berth.cluster.fragmentation",
    "berth.cluster.labels",
    "berth.cluster.state",
    "berth.cluster.totals",
    "berth.framework.backlog",
    "berth.framework.demand",
    "berth.framework.job_info",
    "berth.framework.podclass",
    "berth.framework.queues",
    "berth.framework.scheduler",
    "berth.framework.search",
    "berth.framework.session",
    "berth.framework.statement",
    "berth.plugins.allocation",
    "berth.plugins.balanced_allocation",
    "berth.plugins.capacity",
    "berth.plugins.gang",
    "berth.plugins.gpu_packing",
    "berth.plugins.least_allocated",
    "berth.plugins.most_allocated",
    "berth.plugins.overcommit",
    "berth.plugins.proportion",
    "berth.plugins.queue_share",
    "berth.plugins.requested_to_capacity_ratio",
    "berth.plugins.resource_fit",
    "berth.plugins.tiresias",
    "berth.plugins.topology_spread",
    "berth.sim.engine",
)

#: The environment variable that asks for the sources ("0").
SWITCH = "BERTH_COMPILED"
#: What the build writes in the package: the digest of each compiled module's source.
STAMP = "native_build.json"


def source(root: Path, name: str) -> Path:
    """Where module ``name`` (``berth.…``) has its source, under the directory holding the
    ``berth`` package."""
    return root.joinpath(*name.split(".")).with_suffix(".py")


def built(root: Path, name: str) -> Path | None:
    """Its compiled module, if one was built for this interpreter."""
    stem = source(root, name).with_suffix("")
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = stem.with_name(stem.name + suffix)
        if path.exists():
            return path
    return None


def digests(root: Path, names: Sequence[str]) -> dict[str, str]:
    """The digest of each module's source, as the build records them."""
    return {name: hashlib.sha256(source(root, name).read_bytes()).hexdigest() for name in names}


def stamp(root: Path, names: Sequence[str]) -> None:
    """Record the sources the modules are being built from (the build's first step)."""
    (root / "berth" / STAMP).write_text(json.dumps(digests(root, names), indent=1) + "\n")


def mode(root: Path, names: Sequence[str], asked: str | None) -> str:
    """``compiled``, or ``from source:`` and why: ``asked``, ``not built`` or ``<module>
    changed since the build``."""
    if asked == "0":
        return "from source: asked"
    try:
        recorded = json.loads((root / "berth" / STAMP).read_text())
    except (OSError, ValueError):
        recorded = None
    if not isinstance(recorded, dict) or any(built(root, name) is None for name in names):
        return "from source: not built"
    for name, digest in digests(root, names).items():
        if recorded.get(name) != digest:
            return f"from source: {name} changed since the build"
    return "compiled"


class _FromSource:
    """Finds the compiled group's modules as their sources, ahead of the compiled ones (a
    finder first on ``sys.meta_path``)."""

    def __init__(self, root: Path, names: Sequence[str]) -> None:
        self.root = root
        self.names = frozenset(names)

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.names:
            return None
        return importlib.util.spec_from_file_location(fullname, source(self.root, fullname))


#: How this process runs the group (set by ``choose``, when ``berth`` is imported).
MODE = "from source: not built"


def choose() -> str:
    """Decide, before any of them is imported, whether the group runs compiled; where it does
    not, have its modules found as sources. Returns (and keeps in ``MODE``) the decision."""
    global MODE
    root = Path(__file__).resolve().parent.parent
    MODE = mode(root, COMPILED, os.environ.get(SWITCH))
    if MODE != "compiled" and any(built(root, name) is not None for name in COMPILED):
        sys.meta_path.insert(0, _FromSource(root, COMPILED))
    return MODE


if __name__ == "__main__":  # (the Makefile: what a build depends on)
    print(" ".join(str(source(Path("."), name)) for name in COMPILED))
