"""Jobs that share GPUs by taking turns (the ``gandiva`` policy), run at a fraction of their
speed, integrated exactly between changes.

A scheduling policy that shares GPUs hands the simulator, after each session, the group each
job it placed shares GPUs with and how many of the group's jobs run at once (its capacity);
the first that many jobs of a group run at full speed and the others wait their turn (the
ElasticFlow artifact's ``gandiva``), or, made fluid, each runs at min(1, running / jobs) of its
speed. A sharing job holds its work in full-speed seconds (its pods' duration); between two
changes of its speed it does that work at its speed. When a job of a group ends, the next one
takes its turn (fluid: the others speed up) at that instant, without waiting for a session. After
each change a job's end is worked out again: one end event per job, the earlier one cancelled,
as elastic jobs' (``berth.sim.elastic``). Once every job has arrived, while jobs wait their turn,
a session runs every ``slot`` seconds of the policy even with no job waiting for nodes (the
artifact's loop steps a slot at a time once no arrival is due; before, from arrival to arrival,
as berth's sessions do). Without such a policy there is no ``TimeSlicing`` and pods end as
they always do.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from berth.api.loaded import Manifests
from berth.api.objects import Pod
from berth.framework.scheduler import Scheduler
from berth.sim.events import Ev, EventQueue, MovableEnd


@dataclass(slots=True)
class Sharing:
    """One job placed by a sharing policy: its speed, work left and running pods."""

    speed: float
    remaining: float | None = None  # full-speed seconds left, once its first pod started
    since: float = 0.0
    pods: list[Pod] = field(default_factory=list)
    end: MovableEnd | None = None


class TimeSlicing:
    """The sharing jobs of a run, by job key (namespace/group), and the groups that share."""

    def __init__(
        self,
        queue: EventQueue,
        fluid: bool = False,
        now: Callable[[], float] = lambda: 0.0,
        last_arrival: float = 0.0,
        slot: float = 0.0,
    ) -> None:
        self.queue = queue
        self.fluid = fluid
        self.now = now
        self.last_arrival = last_arrival
        self.slot = slot
        self.jobs: dict[str, Sharing] = {}
        self.group_of: dict[str, int] = {}
        self.members: dict[int, list[str]] = {}
        self.capacity: dict[int, int] = {}
        self.migrations = 0  # the policy's count of moved jobs

    def assign(self, groups: dict[str, tuple[int, int]], migrations: int, now: float) -> None:
        """The policy's sharing after a session: job key → (its group, how many of the
        group's jobs run at once), each group's jobs in turn order."""
        self.migrations = migrations
        self.group_of = {key: group for key, (group, _) in groups.items()}
        self.capacity = {group: capacity for group, capacity in groups.values()}
        self.members = {}
        for key, group in self.group_of.items():
            self.members.setdefault(group, []).append(key)
        for key in groups:
            self._update(key, now)

    def _speed(self, key: str) -> float:
        group = self.group_of[key]
        members, running = self.members[group], self.capacity[group]
        if self.fluid:
            return min(1.0, running / len(members))
        return 1.0 if members.index(key) < running else 0.0

    def _update(self, key: str, now: float) -> None:
        speed = self._speed(key)
        sharing = self.jobs.get(key)
        if sharing is None:
            self.jobs[key] = Sharing(speed)
        elif sharing.speed != speed:
            self._change(sharing, key, speed, now)

    def ticking(self) -> bool:
        """Whether the policy wants a session every ``slot`` seconds even with nothing
        waiting: once every job has arrived, while jobs wait their turn or share."""
        return bool(self.slot) and self.now() >= self.last_arrival and self.sliced() > 0

    def sliced(self) -> int:
        """Started jobs running below full speed now (waiting their turn, in turns)."""
        return sum(1 for s in self.jobs.values() if s.speed < 1.0 and s.pods)

    def takes(self, pod: Pod, now: float) -> bool:
        """Whether a starting pod belongs to a sharing job (which then decides its end)."""
        key = pod.job_key
        sharing = self.jobs.get(key)
        if sharing is None or pod.duration is None:
            return False
        sharing.pods.append(pod)
        if sharing.remaining is None:
            sharing.remaining = pod.duration
            sharing.since = now
            self._schedule(sharing, key, now)
        return True

    def ended(self, end: MovableEnd, now: float) -> list[Pod]:
        """At an end event: the job's running pods, which finish now (none if cancelled)."""
        if end.cancelled:
            return []
        self.queue.live -= 1
        sharing = self.jobs.pop(end.key)
        self._leave(end.key, now)
        return sharing.pods

    def stopped(self, pod: Pod, now: float) -> None:
        """A pod of a sharing job left before its end (evicted, failed): the job stops."""
        key = pod.job_key
        sharing = self.jobs.get(key)
        if sharing is None or pod not in sharing.pods:
            return
        self._cancel(sharing)
        del self.jobs[key]
        self._leave(key, now)

    def _leave(self, key: str, now: float) -> None:
        """Job ``key`` is gone: the others of its group speed up now."""
        group = self.group_of.pop(key, None)
        if group is None:
            return
        members = self.members[group]
        members.remove(key)
        for other in members:
            if other in self.jobs:
                self._update(other, now)

    def _change(self, sharing: Sharing, key: str, speed: float, now: float) -> None:
        if sharing.remaining is not None:
            sharing.remaining -= (now - sharing.since) * sharing.speed
            sharing.since = now
        sharing.speed = speed
        if sharing.remaining is not None:
            self._schedule(sharing, key, now)

    def _cancel(self, sharing: Sharing) -> None:
        if sharing.end is not None:
            sharing.end.cancelled = True
            self.queue.live -= 1
            sharing.end = None

    def _schedule(self, sharing: Sharing, key: str, now: float) -> None:
        self._cancel(sharing)
        if sharing.speed <= 0:
            return  # waiting its turn: no end yet
        sharing.end = MovableEnd(key)
        left = max(sharing.remaining or 0.0, 0.0)
        self.queue.push(now + left / sharing.speed, Ev.SLICE_END, sharing.end)
        self.queue.live += 1

    def sample(self) -> dict[str, float]:
        """Time-series columns: jobs running below full speed, and jobs moved so far."""
        return {"time_sliced_jobs": float(self.sliced()), "migrations": float(self.migrations)}


def sharing_policy(
    scheduler: Scheduler, queue: EventQueue, now: Callable[[], float], manifests: Manifests
) -> TimeSlicing | None:
    """A TimeSlicing fed by the configuration's GPU-sharing plugin (one with an
    ``on_sharing`` hook), or None when no plugin shares GPUs."""
    plugin = next((p for p in scheduler.framework.plugins if hasattr(p, "on_sharing")), None)
    if plugin is None:
        return None
    arrivals = [p.submit_time for p in manifests.pods]
    arrivals += [g.submit_time for g in manifests.groups]
    arrivals += [j.submit_time for j in manifests.jobs]
    slicing = TimeSlicing(
        queue,
        bool(getattr(plugin, "fluid", False)),
        now,
        max(arrivals, default=0.0),
        float(getattr(plugin, "slot", 0.0)),
    )
    plugin.on_sharing = lambda groups, moved: slicing.assign(groups, moved, now())
    return slicing
