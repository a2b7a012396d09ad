"""The jobs awaiting admission, kept from one session to the next in lines of jobs alike, so
that admitting costs what changed, not the length of the backlog.

Jobs alike in queue, namespace, priority and minResources (and in whether their PodGroup
exists) get the same admission verdict in the same state, and keep their order among
themselves while they wait: the votes of proportion, capacity and overcommit look at nothing
else, and the job orderings (priority, gang, drf) tell such jobs apart only by submission time.
Enqueue therefore asks the first job of each line; a refused line stays refused until the next
admission (an admission only takes capacity), after which its jobs behind the admitted one are
asked again. A plugin that tells alike jobs apart (``Plugin.per_job_admission``) gets a line
per job.

Why each job waited is kept per line as segments of its order: the jobs from one segment's
first job to the next segment's share its reason. Jobs asked one by one (new since the last
session that asked every line) keep theirs by name.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator

import numpy as np
from sortedcontainers import SortedList

from berth.cluster.state import ClusterState
from berth.framework.job_info import JobInfo
from berth.framework.plugin import Reason

#: Where a job stands among the jobs of its line: its submission time, then its key.
Place = tuple[float, str]


def place(job: JobInfo) -> Place:
    return (job.group.submit_time, job.key)


def line_key(job: JobInfo, state: ClusterState, per_job: bool) -> tuple:
    """What a job's admission verdict and its order among alike jobs depend on."""
    group = job.group
    request = job.min_request(state)
    used = np.flatnonzero(request)
    need = request[: used[-1] + 1].tobytes() if len(used) else b""
    key = (group.queue, group.namespace, group.priority, job.placeholder, need)
    return key + (job.key,) if per_job else key


class Line:
    """Alike jobs awaiting admission, in their order."""

    __slots__ = ("key", "places", "jobs", "placed", "segments", "reasons")

    def __init__(self, key: tuple) -> None:
        self.key = key
        self.places: SortedList = SortedList()
        self.jobs: dict[str, JobInfo] = {}
        #: Each job's place as it was filed (a replaced PodGroup can move it).
        self.placed: dict[str, Place] = {}
        #: (first place, reason) in order: what the last session that asked the whole line
        #: told each of its jobs.
        self.segments: list[tuple[Place, Reason]] = []
        #: Reasons of the jobs asked one by one since.
        self.reasons: dict[str, Reason] = {}

    def __len__(self) -> int:
        return len(self.places)

    def at(self, position: int) -> JobInfo:
        return self.jobs[self.places[position][1]]

    def after(self, mark: Place) -> int:
        """The position of the first job placed after ``mark``."""
        return self.places.bisect_right(mark)

    def place_of(self, job: JobInfo) -> Place:
        return self.placed[job.key]

    def reason(self, job: JobInfo) -> Reason | None:
        reason = self.reasons.get(job.key)
        if reason is not None:
            return reason
        segments = self.segments
        mark = self.placed[job.key]
        index = bisect_right(segments, mark, key=lambda segment: segment[0]) - 1
        return segments[index][1] if index >= 0 else None


class Backlog:
    """The lines, and which line each waiting job is in."""

    def __init__(self, state: ClusterState, per_job: bool) -> None:
        #: Where minResources become vectors, and whether each job gets a line of its own
        #: (``Framework.per_job_admission``).
        self.state = state
        self.per_job = per_job
        self.lines: dict[tuple, Line] = {}
        self.line_of: dict[str, Line] = {}
        #: Jobs new or changed since enqueue last ran, and of those the ones never asked.
        self.fresh: dict[str, JobInfo] = {}
        self.new: set[str] = set()
        #: Why each job that left the backlog (admitted) waited while it was in it, until the
        #: scheduler takes them.
        self.left: dict[str, Reason] = {}

    def __contains__(self, key: str) -> bool:
        return key in self.line_of

    def __len__(self) -> int:
        return len(self.line_of)

    def file(self, job: JobInfo) -> None:
        """Put a job in its line (moving it if it was in another), marked fresh."""
        key = line_key(job, self.state, self.per_job)
        line = self.line_of.get(job.key)
        mark = place(job)
        carried = None  # why a job that moves waited until now
        if line is not None and (line.key != key or line.placed[job.key] != mark):
            carried = self.reason(job.key)
            self.drop(job.key, keep_fresh=True)
        elif line is None:
            self.new.add(job.key)
        else:
            self.fresh[job.key] = job
            return
        line = self.lines.get(key)
        if line is None:
            line = self.lines[key] = Line(key)
        line.places.add(mark)
        line.jobs[job.key] = job
        line.placed[job.key] = mark
        if carried is not None:
            line.reasons[job.key] = carried
        self.line_of[job.key] = line
        self.fresh[job.key] = job

    def touch(self, job: JobInfo) -> None:
        """A job of the backlog gained or lost a pod: same line, to be asked again."""
        self.fresh[job.key] = job

    def asked(self) -> None:
        """Enqueue has asked about every fresh job."""
        self.fresh.clear()
        self.new.clear()

    def drop(self, key: str, keep_fresh: bool = False) -> None:
        line = self.line_of.pop(key, None)
        if line is None:
            return
        del line.jobs[key]
        line.places.remove(line.placed.pop(key))
        line.reasons.pop(key, None)
        if not line.jobs:
            del self.lines[line.key]
        if not keep_fresh:
            self.fresh.pop(key, None)
            self.new.discard(key)

    def reason(self, key: str) -> Reason | None:
        """Why a job in the backlog waited in the last session that asked about it; None for
        a job no session has asked about yet."""
        line = self.line_of.get(key)
        if line is None or key in self.new:
            return None
        return line.reason(line.jobs[key])

    def reasons(self) -> Iterator[tuple[str, Reason]]:
        for key in self.line_of:
            reason = self.reason(key)
            if reason is not None:
                yield key, reason

    def jobs(self) -> Iterator[JobInfo]:
        for line in self.lines.values():
            yield from line.jobs.values()


class JobReasons:
    """Why each job waited in a session, by job key: the reasons given job by job (``given``),
    then the backlog's for the jobs awaiting admission (kept per line, not per job).

    Not a dict subclass: compiled code reads a dict's items directly, past any override."""

    __slots__ = ("given", "backlog")

    def __init__(self, backlog: Backlog | None) -> None:
        self.given: dict[str, Reason] = {}
        self.backlog = backlog

    def __setitem__(self, key: str, reason: Reason) -> None:
        self.given[key] = reason

    def get(self, key: str) -> Reason | None:
        reason = self.given.get(key)
        if reason is None and self.backlog is not None:
            reason = self.backlog.reason(key)
        return reason

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None

    def every(self) -> Iterator[tuple[str, Reason]]:
        """Every job's reason, the backlog's included."""
        given = self.given
        yield from given.items()
        if self.backlog is not None:
            for key, reason in self.backlog.reasons():
                if key not in given:
                    yield key, reason
