"""Actions run in order by each session."""

from __future__ import annotations

from berth.actions.allocate import Allocate
from berth.actions.backfill import Backfill
from berth.actions.enqueue import Enqueue
from berth.actions.preempt import Preempt
from berth.actions.reclaim import Reclaim

ACTIONS = {cls.name: cls for cls in (Enqueue, Allocate, Preempt, Reclaim, Backfill)}
