"""gandiva: place jobs in the ``gandiva`` plugin's node sets, as the ElasticFlow artifact's
``gandiva_sim_jobs`` does at every event.

Each session: jobs that ended leave their node sets, emptied sets give their nodes back, the
GPUs are re-divided between job sizes (``NodeSets.adjust``: node sets taken or given back, jobs
moved), then waiting jobs, in arrival order, join a node set (packed, on new nodes, or
time-sliced) or keep waiting. A job's pods go one per node of its set; on a set whose GPUs
are all taken, a pod shares the least shared devices (ClusterState then counts more GPUs
requested there than the node has: each sharing job's). A moved job's pods move with it, at
once and for free (the artifact charges nothing for a migration); the moves are counted.

The node sets go to the plugin's ``on_sharing`` hook: the simulator runs a set's jobs in
turns, or all at a fraction of their speed (``berth.sim.timeslice``).
"""

from __future__ import annotations

from berth.actions.turns import admitted
from berth.cluster.devices import Placement, record_devices
from berth.framework.job_info import JobInfo
from berth.framework.plugin import Plugin
from berth.framework.session import Session
from berth.plugins.gandiva import Gandiva, NodeSet, NodeSets, sharing_devices
from berth.resources import GPU


def job_gpus(job: JobInfo) -> int:
    """GPUs of the whole job: its pods', bound or waiting."""
    pods = [*job.bound.values(), *job.pending]
    return round(sum(pod.requests.get(GPU, 0) for pod in pods) / 1000)


class GandivaAction:
    name = "gandiva"

    def __init__(self, arguments: dict | None = None) -> None:
        self.arguments = dict(arguments or {})

    def execute(self, session: Session) -> None:
        """Ends, re-division and migrations, rotation (at a multiple of the plugin's
        ``rotation``), then placements; the sharing goes to the simulator."""
        plugin = _plugin(session.framework.plugins)
        framework = session.framework
        if plugin not in framework.device_pickers:
            framework.device_pickers.insert(0, plugin)
        sets = plugin.node_sets(session.state)
        for key in [k for k in sets.of if not _placed(session, k)]:
            sets.leave(key)
        sets.release_empty()
        before = dict(sets.of)
        sets.adjust()
        sets.release_empty()
        if plugin.rotation and session.now % plugin.rotation == 0:
            sets.rotate()
        self._move(session, sets, before)
        for job in session.servable_jobs():
            if not job.pending or job.bound or not admitted(job, session):
                continue
            gpus = job_gpus(job)
            if gpus <= 0:
                session.job_reasons[job.key] = "gandiva: places only jobs that ask for GPUs"
                continue
            node_set = sets.place(job.key, gpus)
            if node_set is None:
                session.job_reasons[job.key] = (
                    f"gandiva: no free node and no node set of {gpus}-GPU jobs"
                )
                continue
            self._bind(session, plugin, job, node_set)
        if plugin.on_sharing is not None:
            plugin.on_sharing(sets.groups(), sets.migrations)

    @staticmethod
    def _bind(session: Session, plugin: Gandiva, job: JobInfo, node_set: NodeSet) -> None:
        statement = session.statement()
        plugin.sharing = True
        try:
            for i, pod in enumerate(sorted(job.pending, key=session.task_order_key)):
                cls = session.search.compile(pod)
                statement.allocate(job, pod, node_set.rows[i % len(node_set.rows)], cls)
        finally:
            plugin.sharing = False
        statement.commit()

    @staticmethod
    def _move(session: Session, sets: NodeSets, before: dict[str, NodeSet]) -> None:
        """Pods of jobs whose node set changed go to the new set's nodes."""
        state = session.state
        for key, node_set in sets.of.items():
            if before.get(key, node_set) is node_set:
                continue
            job = session.all_jobs[key]
            for i, pod in enumerate(sorted(job.bound.values(), key=lambda p: p.key)):
                row = node_set.rows[i % len(node_set.rows)]
                vector = state.request_vector(pod.requests)
                state.unbind(pod, state.rows[pod.bound_node], vector)
                cls = session.search.compile(pod)
                placement = state.bind(pod, row, vector, sharing_devices(state, cls, row))
                pod.bound_node = state.names[row]
                if isinstance(placement, Placement):
                    record_devices(pod, pod.bound_node, placement)


def _placed(session: Session, key: str) -> bool:
    """Whether job ``key`` still has pods on nodes (a finished job has none)."""
    job = session.all_jobs.get(key)
    return job is not None and bool(job.bound)


def _plugin(plugins: list[Plugin]) -> Gandiva:
    for plugin in plugins:
        if isinstance(plugin, Gandiva):
            return plugin
    raise ValueError("action gandiva: the configuration has no gandiva plugin")
