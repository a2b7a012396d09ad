"""Generated quota-admission cases for tests/k8s/test_kueue.py: each case is one queue with a
quota in cpu and memory and a few jobs, created one after another, that together ask for more
than the quota. Kueue sees the queue as a ClusterQueue (one ResourceFlavor) with a LocalQueue
and the jobs as suspended batch/v1 Jobs; berth sees it as a Volcano Queue whose capability is
the quota and one PodGroup (with its pending pods) per job.

A job needs ``pods × (cpu, memory)``, where ``pods`` is its parallelism capped by its
completions (what Kueue counts for a batch Job, and the PodGroup's minMember). Some cases give
their jobs a priority class (Kueue's WorkloadPriorityClass, berth's PriorityClass of the same
name and value); the others are plain arrival order. A tenth of the jobs ask for more than the
whole quota, so no order of admission lets them in: those are what a strict FIFO queue stops
at for good.

``admitted`` is the model both oracles are held against in the messages: jobs in queue order
(higher priority first, then arrival), each admitted if it fits in what the quota has left;
``strict`` stops at the first job that does not fit.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

#: Priority classes the cases use, by name: Kueue's WorkloadPriorityClass and berth's
#: PriorityClass carry the same value.
PRIORITIES = {"kq-low": 10, "kq-high": 1000}
CPU_CHOICES = (500, 1000, 1500, 2000, 3000, 4000)  # millicores per pod
MEMORY_CHOICES = (512, 1024, 2048, 4096)  # MiB per pod


@dataclass(frozen=True)
class Job:
    name: str
    parallelism: int
    completions: int
    cpu: int  # millicores per pod
    memory: int  # MiB per pod
    priority_class: str = ""

    @property
    def pods(self) -> int:
        return min(self.parallelism, self.completions)

    @property
    def need(self) -> tuple[int, int]:
        return (self.pods * self.cpu, self.pods * self.memory)

    @property
    def priority(self) -> int:
        return PRIORITIES.get(self.priority_class, 0)


@dataclass
class Case:
    index: int
    cpu: int  # quota, millicores
    memory: int  # quota, MiB
    jobs: list[Job] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"kq-{self.index:02d}"

    def ordered(self) -> list[Job]:
        """Queue order: higher priority first, then arrival (the list's order)."""
        return sorted(self.jobs, key=lambda job: -job.priority)

    def admitted(self, strict: bool = False) -> set[str]:
        """The model: jobs in queue order, each admitted while it fits in the quota left;
        ``strict`` stops at the first that does not."""
        cpu, memory, chosen = self.cpu, self.memory, set()
        for job in self.ordered():
            need_cpu, need_memory = job.need
            if need_cpu <= cpu and need_memory <= memory:
                chosen.add(job.name)
                cpu -= need_cpu
                memory -= need_memory
            elif strict:
                break
        return chosen

    def describe(self) -> str:
        def one(job: Job) -> str:
            priority = f"@{job.priority_class}" if job.priority_class else ""
            return f"{job.name}:{job.pods}x({job.cpu}m,{job.memory}Mi){priority}"

        jobs = ", ".join(one(job) for job in self.jobs)
        return f"{self.name} quota ({self.cpu}m, {self.memory}Mi): {jobs}"


def _job(rng: random.Random, name: str, case: Case, priorities: bool) -> Job:
    parallelism = rng.randint(1, 4)
    completions = parallelism if rng.random() < 0.6 else rng.randint(1, 6)
    pods = min(parallelism, completions)
    # Each job alone fits the quota, so what decides is the order and what is left...
    cpu = rng.choice([c for c in CPU_CHOICES if pods * c <= case.cpu])
    memory = rng.choice([m for m in MEMORY_CHOICES if pods * m <= case.memory])
    if rng.random() < 0.1:
        # ...except a tenth, too big for the whole quota in one resource or the other.
        if rng.random() < 0.5:
            cpu = case.cpu // pods + 500
        else:
            memory = case.memory // pods + 512
    priority_class = rng.choice(("", "kq-low", "kq-high")) if priorities else ""
    return Job(name, parallelism, completions, cpu, memory, priority_class)


def generate(count: int, seed: int = 0) -> list[Case]:
    """``count`` cases of 2 to 6 jobs; every job in a case is named ``j<k>`` in arrival
    order. Cases with priorities alternate with plain FIFO ones."""
    rng = random.Random(seed)
    cases = []
    for index in range(count):
        case = Case(
            index,
            cpu=rng.choice((4, 6, 8, 10, 12)) * 1000,
            memory=rng.choice((4, 8, 12, 16)) * 1024,
        )
        priorities = index % 2 == 1
        for k in range(rng.randint(2, 6)):
            case.jobs.append(_job(rng, f"j{k}", case, priorities))
        cases.append(case)
    return cases


def quantity_cpu(millicores: int) -> str:
    return f"{millicores}m"


def quantity_memory(mebibytes: int) -> str:
    return f"{mebibytes}Mi"


def pod_template(job: Job, scheduler: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "c",
                "image": "busybox",
                "resources": {
                    "requests": {
                        "cpu": quantity_cpu(job.cpu),
                        "memory": quantity_memory(job.memory),
                    }
                },
            }
        ],
    }
    if scheduler:
        spec["schedulerName"] = scheduler
    return spec
