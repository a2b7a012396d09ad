"""The garbage collector kept to the objects a step makes.

A run's inputs live as long as the run, and a finished run's objects as long as its outputs
are written: hundreds of thousands of them on a long trace. Full collections set off by the
short-lived objects of the steps that follow would walk them all again, a tenth of a second
each, to free nothing. Freezing them (``gc.freeze``) leaves the collector only what is new.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

#: Collections of the middle generation between two full ones while inside (Python's default
#: is 10). A full collection inside a run frees next to nothing, yet walks every young list of
#: a job's pods (those of a trace task run to 15,000), about a second each on the whole
#: Alibaba 2017 trace.
MIDDLE_PER_FULL = 100


@contextmanager
def new_objects_only() -> Iterator[None]:
    """While inside, the collector looks only at objects made since entering, or since its
    last full collection: a run's own objects (its pods, above all) outlive it too, and a
    full collection of a long replay would walk millions of them each time the heap grew by
    a quarter. The block that froze first unfreezes everything on leaving; an inner block (or
    a process that froze objects of its own) leaves them frozen for it."""
    outer = gc.get_freeze_count() > 0
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.callbacks.append(_freeze_after_full)
    gc.set_threshold(*thresholds[:2], max(thresholds[2], MIDDLE_PER_FULL))
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.callbacks.remove(_freeze_after_full)
        if not outer:
            gc.unfreeze()


def _freeze_after_full(phase: str, info: dict[str, int]) -> None:
    """What survived a full collection is frozen: the next one walks only what came after."""
    if phase == "stop" and info["generation"] == 2:
        gc.freeze()
