"""overcommit: admit a PodGroup while the minResources of the groups admitted but not started
fit in the idle capacity stretched by ``overcommit-factor``.

Admitting a little more than is idle keeps the allocator busy as running pods finish, without
letting every waiting gang in at once. The enqueue action falls back to this check with factor
1 when no plugin decides, so admission is exact by default.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from berth.framework.config import OVERCOMMIT_DEFAULT
from berth.framework.job_info import JobInfo
from berth.framework.plugin import Plugin, PluginArgumentError, Refusal, Vote
from berth.framework.queues import padded, stacked
from berth.framework.session import Session
from berth.resources import format_amount

DEFAULT_FACTOR = OVERCOMMIT_DEFAULT


class Overcommit(Plugin):
    name = "overcommit"

    def __init__(self, arguments: dict[str, Any] | None = None) -> None:
        super().__init__(arguments)
        self.factor = self.float_arg("overcommit-factor", DEFAULT_FACTOR)
        if self.factor < 1.0:
            raise PluginArgumentError(
                f"plugin {self.name}: argument overcommit-factor: must be >= 1 "
                f"(got {self.factor:g})"
            )
        self.idle = np.zeros(0)

    def on_session_open(self, session: Session) -> None:
        self.session = session
        state = session.state
        idle = state.idle().astype(np.float64)
        if self.factor != 1.0:  # (enqueue's idle check: nothing to stretch)
            idle += (self.factor - 1.0) * state.total_allocatable()
        self.idle = idle
        for job in session.promised():
            self.on_job_enqueued(job)

    def _widen(self, width: int) -> None:
        """Room in ``idle`` for a resource first seen in a job's minResources (none of it idle)."""
        if width > len(self.idle):
            self.idle = padded(self.idle, width)

    def _need(self, job: JobInfo) -> np.ndarray:
        need = job.min_request(self.session.state)
        self._widen(len(need))
        return need

    def needs(self, jobs: list[JobInfo]) -> np.ndarray:
        """The jobs' minResources as the rows of one matrix, for ``fit``."""
        rows = [job.min_request(self.session.state) for job in jobs]
        self._widen(max(map(len, rows), default=0))
        return stacked(rows, len(self.idle))

    def fit(self, needs: np.ndarray) -> np.ndarray:
        """Which rows of ``needs`` (from ``needs`` or ``_need``) fit the idle capacity as it is
        now: ``job_enqueueable``'s test, for a whole backlog at once."""
        idle = self.idle[: needs.shape[1]]
        # Only what the job asks for: a resource over-promised to admitted groups (idle below
        # zero, as sla's admissions can make it) must not stop jobs that need none of it.
        return np.asarray(((needs <= idle) | (needs <= 0)).all(axis=1))

    def job_enqueueable(self, job: JobInfo) -> Vote:
        return self.jobs_enqueueable([job])[0]

    def jobs_enqueueable(self, jobs: list[JobInfo]) -> list[Vote]:
        fits = self.fit(self.needs(jobs))
        return [True if fit else self.shortfall(job) for job, fit in zip(jobs, fits, strict=True)]

    def shortfall(self, job: JobInfo) -> Refusal:
        """The refusal for a job that does not fit, rendered only if someone reads it."""
        need = self._need(job)
        # ``idle`` is replaced, never changed in place, on admission: no copy needed here.
        return Refusal(partial(self._explain, need, self.idle[: len(need)]))

    def _explain(self, need: np.ndarray, idle: np.ndarray) -> str:
        names = self.session.state.axis.names
        short = "; ".join(
            f"{names[col]} needs {format_amount(names[col], need[col])}, "
            f"{format_amount(names[col], max(idle[col], 0))} idle"
            for col in np.flatnonzero((need > idle) & (need > 0))
        )
        stretched = f" × {self.factor:g}" if self.factor != 1.0 else ""
        return f"minResources exceed the idle capacity{stretched}: {short}"

    def on_job_enqueued(self, job: JobInfo) -> None:
        need = self._need(job)
        idle = self.idle.copy()
        idle[: len(need)] -= need
        self.idle = idle
