"""Actions run in order by each session, registered with the framework by name."""

from __future__ import annotations

from berth.actions.allocate import Allocate
from berth.actions.backfill import Backfill
from berth.actions.enqueue import Enqueue
from berth.actions.gandiva import GandivaAction
from berth.actions.preempt import Preempt
from berth.actions.reclaim import Reclaim
from berth.framework.registry import register_actions

register_actions(Enqueue, Allocate, Preempt, Reclaim, Backfill, GandivaAction)
