"""Enqueue asks a line of alike jobs at a time (berth.framework.backlog); asking every waiting
job on its own, in job order, must come to the same admissions and the same reasons, session
after session, as jobs arrive and capacity is freed."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from berth.actions.enqueue import Enqueue
from berth.api.objects import GroupPhase, PodGroup, Queue
from berth.framework.plugin import Refusal
from berth.framework.session import Session
from tests.builders import GANG, config, node, pod, scheduler


class OneByOne:
    """Every waiting job asked on its own in job order; refusals remembered while nothing was
    freed, as the lines remember them. It asks through an Enqueue's own vote and admission
    (held, not inherited: Enqueue may be compiled)."""

    name = "enqueue"

    def __init__(self) -> None:
        self.enqueue = Enqueue()
        self.refused: dict = {}
        self.epoch: tuple = ()

    def execute(self, session: Session) -> None:
        enqueue, backlog = self.enqueue, session.backlog
        enqueue.idle_check.on_session_open(session)
        timed = session.framework.admission_depends_on_time
        epoch = (session.admission_epoch, tuple(repr(q) for q in session.queues.values()))
        if timed or epoch != self.epoch:
            self.refused = {}
        self.epoch = epoch
        check = None if timed else enqueue._capacity_check(session)
        jobs = list(backlog.jobs())
        kept = {}
        for job in jobs:
            if job.key not in backlog.fresh and job.key in self.refused:
                kept[job.key] = session.job_reasons[job.key] = self.refused[job.key]
        for job in sorted((j for j in jobs if j.key not in kept), key=session.job_order_key):
            vote = enqueue._votes(session, check, [job])[0]
            if isinstance(vote, str | Refusal):
                kept[job.key] = session.job_reasons[job.key] = vote
                continue
            session.admit(job)
            session.job_enqueued(job)
            enqueue.idle_check.on_job_enqueued(job)
            backlog.drop(job.key)
        self.refused = kept
        backlog.asked()


PLUGINS = {
    "proportion": ["priority", GANG, "drf", "proportion", "resource-fit"],
    "overcommit": ["priority", GANG, "proportion", "overcommit", "resource-fit"],
    "capacity": ["priority", GANG, "capacity", "resource-fit"],
    "sla": ["priority", GANG, {"name": "sla", "arguments": {"sla-waiting-time": "30s"}}],
}

job = st.tuples(
    st.sampled_from(["a", "b"]),  # queue
    st.sampled_from(["ns1", "ns2"]),
    st.sampled_from([0, 5]),  # priority
    st.sampled_from([1000, 2000, 3000, 6000]),  # minResources cpu
    st.integers(1, 2),  # pods
)
step = st.one_of(
    st.tuples(st.just("arrive"), st.integers(1, 6)),
    st.tuples(st.just("release"), st.integers(0, 50)),
    st.tuples(st.just("session"), st.just(0)),
)


def build(plugins: list, cpus: list[int], jobs: list, enqueue: OneByOne | None):
    s = scheduler(
        [node(f"n{i}", cpu=cpu) for i, cpu in enumerate(cpus)],
        config(plugins, actions="enqueue, allocate"),
        queues=[Queue("a", weight=1, capability={"cpu": 12000}), Queue("b", weight=3)],
    )
    if enqueue is not None:
        s.actions[0] = enqueue
    groups, pods = [], []
    for i, (queue, namespace, priority, cpu, count) in enumerate(jobs):
        name = f"j{i:02d}"
        groups.append(
            PodGroup(
                name,
                namespace=namespace,
                min_member=count,
                min_resources={"cpu": cpu},
                queue=queue,
                priority=priority,
                submit_time=float(i // 3),
            )
        )
        pods.append(
            [
                pod(f"{name}-{k}", cpu=cpu // count, group=name, namespace=namespace)
                for k in range(count)
            ]
        )
    return s, groups, pods


@settings(max_examples=120, deadline=None)
@given(
    plugins=st.sampled_from(sorted(PLUGINS)),
    cpus=st.lists(st.sampled_from([4000, 8000, 16000]), min_size=1, max_size=3),
    jobs=st.lists(job, min_size=1, max_size=24),
    steps=st.lists(step, min_size=1, max_size=16),
)
def test_lines_agree_with_asking_every_job(plugins, cpus, jobs, steps):
    runs = [build(PLUGINS[plugins], cpus, jobs, enqueue) for enqueue in (None, OneByOne())]
    arrived, now = 0, 0.0
    for kind, amount in [*steps, ("session", 0)]:
        if kind == "arrive":
            for s, groups, pods in runs:
                for index in range(arrived, min(arrived + amount, len(jobs))):
                    s.add_group(groups[index])
                    for p in pods[index]:
                        s.submit(p)
            arrived = min(arrived + amount, len(jobs))
        elif kind == "release":
            for s, _, pods in runs:
                bound = [p for group in pods for p in group if p.bound_node]
                if bound:
                    s.release(bound[amount % len(bound)])
                    bound[amount % len(bound)].bound_node = None
        else:
            now += 10.0
            binds = [{(b.pod.name, b.node) for b in s.run_session(now)} for s, _, _ in runs]
            assert binds[0] == binds[1]
            lines, one_by_one = (s for s, _, _ in runs)
            for key, job in one_by_one.jobs.items():
                assert lines.jobs[key].group.phase == job.group.phase, key
                if job.group.phase == GroupPhase.PENDING:
                    ours, theirs = lines.last_reasons.get(key), one_by_one.last_reasons.get(key)
                    assert str(ours) == str(theirs), key
    waited = [
        {p.name: p.waited_for for group in pods for p in group if p.bound_node}
        for _, _, pods in runs
    ]
    assert waited[0] == waited[1]
