"""preempt: a starving job evicts running pods of lower-priority jobs in its own queue, on the
node needing the fewest and least important victims, never breaking a victim gang, never when
the task fits on idle room, and not at all unless the whole preemptor job can start."""

from __future__ import annotations

import pytest

from berth.api.objects import GroupPhase, PodGroup, Queue
from tests.builders import GANG, Case, check, config, node, pod, queued

CFG = config(
    ["priority", GANG, "resource-fit", "node-affinity", "least-allocated"],
    actions="enqueue, allocate, preempt, backfill",
)


def cpu(name: str, amount: int, **fields) -> object:
    return pod(name, cpu=amount, mem=0, **fields)


def gang(
    name: str,
    members: int,
    amount: int,
    min_member: int | None = None,
    priority: int = 0,
    **group_fields,
) -> tuple[PodGroup, list]:
    group = PodGroup(
        name,
        min_member=members if min_member is None else min_member,
        priority=priority,
        **group_fields,
    )
    return group, [cpu(f"{name}-{i}", amount, group=name) for i in range(members)]


def by(preemptor: str, *victims: str) -> dict[str, str]:
    return dict.fromkeys(victims, f"preempted by default/{preemptor}")


def two_nodes(**kw) -> list:
    return [node("n0", cpu=4000, **kw), node("n1", cpu=4000, **kw)]


def make_cases() -> dict[str, Case]:
    cases: dict[str, Case] = {}
    cases["no idle room: the low-priority pod goes"] = Case(
        [node("n", cpu=4000)],
        bound=[(cpu("low", 4000), "n")],
        pods=[cpu("high", 1000, priority=10)],
        binds={"high": "n"},
        evictions=by("high", "low"),
    )
    cases["idle room: nothing is evicted"] = Case(
        [node("n0", cpu=4000), node("n1", cpu=4000)],
        bound=[(cpu("low", 4000), "n0")],
        pods=[cpu("high", 1000, priority=10)],
        binds={"high": "n1"},
    )
    cases["equal priority never preempts"] = Case(
        [node("n", cpu=4000)],
        bound=[(cpu("peer", 4000, priority=10), "n")],
        pods=[cpu("high", 1000, priority=10)],
        binds={},
    )
    cases["a higher-priority pod is never evicted for a lower one"] = Case(
        [node("n", cpu=4000)],
        bound=[(cpu("high", 4000, priority=10), "n")],
        pods=[cpu("low", 1000)],
        binds={},
    )
    cases["other queues are not preempted"] = Case(
        [node("n", cpu=4000)],
        bound=[(queued(cpu("low", 4000), "other"), "n")],
        queues=[Queue("other")],
        pods=[cpu("high", 1000, priority=10)],
        binds={},
    )
    cases["node selector: victims only where the preemptor may run"] = Case(
        [node("n0", cpu=4000), node("n1", cpu=4000, labels={"pool": "gpu"})],
        bound=[(cpu("low0", 4000), "n0"), (cpu("low1", 4000, priority=5), "n1")],
        pods=[cpu("high", 1000, priority=10, node_selector={"pool": "gpu"})],
        binds={"high": "n1"},
        evictions=by("high", "low1"),
    )
    cases["the node with the least important victims"] = Case(
        two_nodes(),
        bound=[(cpu("mid", 4000, priority=5), "n0"), (cpu("low", 4000), "n1")],
        pods=[cpu("high", 1000, priority=10)],
        binds={"high": "n1"},
        evictions=by("high", "low"),
    )
    cases["the node needing the fewest victims"] = Case(
        two_nodes(),
        bound=[(cpu("a", 2000), "n0"), (cpu("b", 2000), "n0"), (cpu("c", 4000), "n1")],
        pods=[cpu("high", 3000, priority=10)],
        binds={"high": "n1"},
        evictions=by("high", "c"),
    )
    cases["two jobs on one node: only as many victims as needed, lowest first"] = Case(
        [node("n", cpu=4000)],
        bound=[(cpu("low1", 2000, priority=1), "n"), (cpu("low0", 2000), "n")],
        pods=[cpu("high", 2000, priority=10)],
        binds={"high": "n"},
        evictions=by("high", "low0"),
    )
    cases["two jobs on one node: both when needed"] = Case(
        [node("n", cpu=4000)],
        bound=[(cpu("low1", 2000, priority=1), "n"), (cpu("low0", 2000), "n")],
        pods=[cpu("high", 4000, priority=10)],
        binds={"high": "n"},
        evictions=by("high", "low0", "low1"),
    )
    cases["preemptable=false pod is spared"] = Case(
        [node("n", cpu=4000)],
        bound=[(cpu("low", 4000, preemptable=False), "n")],
        pods=[cpu("high", 1000, priority=10)],
        binds={},
    )
    spared, spared_pods = gang("spared", 1, 4000, preemptable=False)
    cases["preemptable=false group is spared"] = Case(
        [node("n", cpu=4000)],
        groups=[spared],
        bound=[(p, "n") for p in spared_pods],
        pods=[cpu("high", 1000, priority=10)],
        binds={},
    )
    return cases


@pytest.mark.parametrize("name", make_cases().keys())
def test_preempt(name):
    check(make_cases()[name], CFG)


def gang_case(
    victims: list[tuple[str, int, int, int]],
    preemptor: tuple[int, int],
    nodes: int,
    expected_evictions: set[str],
    bound_preemptor: int,
) -> Case:
    """Victim gangs (name, members, min_member, cpu each) spread over ``nodes`` 4-CPU nodes in
    order; a preemptor gang (members, cpu each) of priority 10."""
    groups, bound = [], []
    slots = [f"n{i}" for i in range(nodes)]
    free = dict.fromkeys(slots, 4000)
    for name, members, min_member, amount in victims:
        group, pods = gang(name, members, amount, min_member)
        groups.append(group)
        for p in pods:
            where = next(n for n in slots if free[n] >= amount)
            free[where] -= amount
            bound.append((p, where))
    hi, hi_pods = gang("hi", preemptor[0], preemptor[1], priority=10)
    binds = {p.name for p in hi_pods[:bound_preemptor]}
    return Case(
        [node(n, cpu=4000) for n in slots],
        groups=groups + [hi],
        bound=bound,
        pods=hi_pods,
        binds=binds,
        evictions=by("hi", *expected_evictions),
        phases={"hi": GroupPhase.INQUEUE},
    )


GANG_CASES = {
    "surplus pod above minMember goes first": (
        [("elastic", 4, 3, 1000)],
        (1, 1000),
        1,
        {"elastic-0"},
        1,
    ),
    "a gang at minMember goes whole": (
        [("tight", 2, 2, 2000)],
        (1, 1000),
        1,
        {"tight-0", "tight-1"},
        1,
    ),
    "a whole small gang rather than a bigger one": (
        [("big", 2, 2, 2000), ("small", 1, 1, 4000)],
        (1, 4000),
        2,
        {"small-0"},
        1,
    ),
    "surplus pods rather than a whole job": (
        [("tight", 2, 2, 1000), ("elastic", 6, 2, 1000)],
        (1, 2000),
        2,
        {"elastic-0", "elastic-1"},
        1,
    ),
    "a gang spread over nodes goes whole, freeing both": (
        [("wide", 2, 2, 4000)],
        (2, 4000),
        2,
        {"wide-0", "wide-1"},
        2,
    ),
    "a preemptor gang that cannot complete evicts nobody": (
        [("low", 1, 1, 4000), ("kept", 1, 1, 4000)],
        (3, 4000),
        2,
        set(),
        0,
    ),
}


@pytest.mark.parametrize(
    "victims,preemptor,nodes,evicted,placed", GANG_CASES.values(), ids=GANG_CASES.keys()
)
def test_gangs_stay_whole(victims, preemptor, nodes, evicted, placed):
    check(gang_case(victims, preemptor, nodes, evicted, placed), CFG)


def test_part_idle_part_preempted():
    # The gang's first pod fits on idle room; only the second needs a victim.
    hi, hi_pods = gang("hi", 2, 4000, priority=10)
    check(
        Case(
            two_nodes(),
            groups=[hi],
            bound=[(cpu("low", 4000), "n0")],
            pods=hi_pods,
            binds={"hi-0": "n1", "hi-1": "n0"},
            evictions=by("hi", "low"),
        ),
        CFG,
    )


def test_preempt_alone_places_on_idle_room_without_evicting():
    cfg = config(["priority", GANG, "resource-fit"], actions="enqueue, preempt")
    check(
        Case(
            two_nodes(),
            bound=[(cpu("low", 4000), "n0")],
            pods=[cpu("high", 1000, priority=10)],
            binds={"high": "n1"},
        ),
        cfg,
    )


def test_pods_placed_in_the_same_session_are_not_victims():
    # allocate cannot fit the gang and places lo-new instead; preempt could free n0 but not
    # evict lo-new, so the gang rolls back and "old" keeps its node.
    hi, hi_pods = gang("hi", 2, 4000, priority=10)
    check(
        Case(
            two_nodes(),
            groups=[hi],
            bound=[(cpu("old", 4000), "n0")],
            pods=hi_pods + [cpu("lo-new", 4000)],
            binds={"lo-new": "n1"},
        ),
        CFG,
    )


def test_running_jobs_above_min_member_do_not_preempt():
    hi, hi_pods = gang("hi", 2, 4000, min_member=1, priority=10)
    bound = [(hi_pods[0], "n0"), (cpu("low", 4000), "n1")]
    check(Case(two_nodes(), groups=[hi], bound=bound, pods=hi_pods[1:], binds={}), CFG)


def test_a_queue_at_capability_preempts_within_itself():
    # high would fit on idle n1, but its queue is full; evicting a lower-priority pod of the
    # same queue frees the share, so high takes low's place and the capability still holds.
    cfg = config(
        ["priority", GANG, "proportion", "resource-fit"], actions="enqueue, allocate, preempt"
    )
    q = Queue("q", capability={"cpu": 4000})
    bound = [(queued(cpu("low", 4000), "q"), "n0")]
    check(
        Case(
            two_nodes(),
            queues=[q],
            bound=bound,
            pods=[queued(cpu("high", 2000, priority=10), "q")],
            binds={"high": "n0"},
            evictions=by("high", "low"),
        ),
        cfg,
    )


@pytest.mark.parametrize(
    "gang_starving,evicted",
    [(True, set()), (False, {"low"})],
    ids=["gang decides: at minMember it does not starve", "priority alone: a pending pod starves"],
)
def test_starvation_is_voted_by_the_first_tier_with_a_voter(gang_starving, evicted):
    # "elastic" runs its minMember (1) and wants one more pod; a low-priority job holds the rest
    # of the node. With gang voting, the job is not starving; without, priority's vote (any
    # pending pod) makes it starve, and it preempts.
    elastic = PodGroup("elastic", min_member=1, priority=10)
    gang_entry = {**GANG, "enableJobStarving": gang_starving}
    cfg = config(["priority", gang_entry, "resource-fit"], actions="enqueue, allocate, preempt")
    check(
        Case(
            [node("n", cpu=4000)],
            groups=[elastic],
            bound=[(cpu("elastic-0", 2000, group="elastic"), "n"), (cpu("low", 2000), "n")],
            pods=[cpu("elastic-1", 2000, group="elastic")],
            binds={"elastic-1": "n"} if evicted else {},
            evictions=by("elastic", *evicted),
        ),
        cfg,
    )


def test_surplus_pods_of_a_more_important_job_go_before_a_whole_less_important_job():
    """Node n0 holds a rigid job of priority 1, node n1 an elastic job of priority 5 running
    one worker above its minimum. Volcano's order would stop the rigid job (the lower
    priority); berth takes the elastic job's extra worker, which restarts nobody."""
    rigid, rigid_pods = gang("rigid", 1, 4000, priority=1)
    elastic, elastic_pods = gang("elastic", 2, 2000, min_member=1, priority=5)
    hi, hi_pods = gang("hi", 1, 2000, priority=10)
    case = Case(
        [node("n0", cpu=4000), node("n1", cpu=4000)],
        groups=[rigid, elastic, hi],
        bound=[(rigid_pods[0], "n0"), (elastic_pods[0], "n1"), (elastic_pods[1], "n1")],
        pods=hi_pods,
        binds={"hi-0"},
        evictions=by("hi", "elastic-0"),
        phases={"hi": GroupPhase.INQUEUE},
    )
    check(case, CFG)
