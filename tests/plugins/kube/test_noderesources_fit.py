"""kube-scheduler's NodeResourcesFit filter tables (fit_test.go: TestEnoughRequests,
TestNotEnoughRequests, TestStorageRequests), run against berth's resource-fit in the default
profile. The node has 10m cpu, 20 bytes of memory, 32 pods, 5 example.com/aaa, 20 bytes of
ephemeral storage and 5 bytes of 2Mi hugepages; one pod already runs on it."""

from __future__ import annotations

import numpy as np
import pytest

from tests.plugins.kube.harness import cluster, node, plugin, pod, verdicts

EXT_A, EXT_B = "example.com/aaa", "example.com/bbb"
K8S_A, K8S_B = "kubernetes.io/something", "subdomain.kubernetes.io/something"
HUGE = "hugepages-2Mi"
NODE = {
    "cpu": "10m",
    "memory": "20",
    "pods": 32,
    EXT_A: 5,
    "ephemeral-storage": "20",
    HUGE: "5",
}


def r(cpu: int = 0, memory: int = 0, **extra: int) -> dict[str, str]:
    """A container's requests: cpu in millicores, memory and the rest in plain units."""
    requests = {"cpu": f"{cpu}m", "memory": str(memory)}
    requests.update(
        {name.replace("__", "/").replace("_", "-"): str(v) for name, v in extra.items()}
    )
    return requests


def ext(name: str, amount: int, cpu: int = 0, memory: int = 0) -> dict[str, str]:
    return {**r(cpu, memory), name: str(amount)}


# (containers, init containers, overhead, already used, plugin args, insufficient resources)
ENOUGH = {
    "no resources requested always fits": ([], [], None, r(10, 20), {}, []),
    "too many resources fails": ([r(1, 1)], [], None, r(10, 20), {}, ["cpu", "memory"]),
    "too many resources fails due to init container cpu": (
        [r(1, 1)],
        [r(3, 1)],
        None,
        r(8, 19),
        {},
        ["cpu"],
    ),
    "too many resources fails due to highest init container cpu": (
        [r(1, 1)],
        [r(3, 1), r(2, 1)],
        None,
        r(8, 19),
        {},
        ["cpu"],
    ),
    "too many resources fails due to init container memory": (
        [r(1, 1)],
        [r(1, 3)],
        None,
        r(9, 19),
        {},
        ["memory"],
    ),
    "too many resources fails due to highest init container memory": (
        [r(1, 1)],
        [r(1, 3), r(1, 2)],
        None,
        r(9, 19),
        {},
        ["memory"],
    ),
    "init container fits: the max, not the sum, counts": (
        [r(1, 1)],
        [r(1, 1)],
        None,
        r(9, 19),
        {},
        [],
    ),
    "several init containers fit: the max, not the sum": (
        [r(1, 1)],
        [r(1, 1), r(1, 1)],
        None,
        r(9, 19),
        {},
        [],
    ),
    "both resources fit": ([r(1, 1)], [], None, r(5, 5), {}, []),
    "one resource memory fits": ([r(2, 1)], [], None, r(9, 5), {}, ["cpu"]),
    "one resource cpu fits": ([r(1, 2)], [], None, r(5, 19), {}, ["memory"]),
    "equal edge case": ([r(5, 1)], [], None, r(5, 19), {}, []),
    "equal edge case for init container": ([r(4, 1)], [r(5, 1)], None, r(5, 19), {}, []),
    "extended resource fits": ([ext(EXT_A, 1)], [], None, r(), {}, []),
    "extended resource fits for init container": ([r()], [ext(EXT_A, 1)], None, r(), {}, []),
    "extended resource capacity enforced": (
        [ext(EXT_A, 10, 1, 1)],
        [],
        None,
        ext(EXT_A, 0),
        {},
        [EXT_A],
    ),
    "extended resource capacity enforced for init container": (
        [r()],
        [ext(EXT_A, 10, 1, 1)],
        None,
        ext(EXT_A, 0),
        {},
        [EXT_A],
    ),
    "extended resource allocatable enforced": (
        [ext(EXT_A, 1, 1, 1)],
        [],
        None,
        ext(EXT_A, 5),
        {},
        [EXT_A],
    ),
    "extended resource allocatable enforced for init container": (
        [r()],
        [ext(EXT_A, 1, 1, 1)],
        None,
        ext(EXT_A, 5),
        {},
        [EXT_A],
    ),
    "extended resource allocatable enforced for multiple containers": (
        [ext(EXT_A, 3, 1, 1), ext(EXT_A, 3, 1, 1)],
        [],
        None,
        ext(EXT_A, 2),
        {},
        [EXT_A],
    ),
    "extended resource allocatable admits multiple init containers": (
        [r()],
        [ext(EXT_A, 3, 1, 1), ext(EXT_A, 3, 1, 1)],
        None,
        ext(EXT_A, 2),
        {},
        [],
    ),
    "extended resource allocatable enforced for multiple init containers": (
        [r()],
        [ext(EXT_A, 6, 1, 1), ext(EXT_A, 3, 1, 1)],
        None,
        ext(EXT_A, 2),
        {},
        [EXT_A],
    ),
    "extended resource allocatable enforced for unknown resource": (
        [ext(EXT_B, 1, 1, 1)],
        [],
        None,
        r(),
        {},
        [EXT_B],
    ),
    "extended resource allocatable enforced for unknown resource for init container": (
        [r()],
        [ext(EXT_B, 1, 1, 1)],
        None,
        r(),
        {},
        [EXT_B],
    ),
    "kubernetes.io resource capacity enforced": (
        [ext(K8S_A, 10, 1, 1)],
        [],
        None,
        r(),
        {},
        [K8S_A],
    ),
    "kubernetes.io resource capacity enforced for init container": (
        [r()],
        [ext(K8S_B, 10, 1, 1)],
        None,
        r(),
        {},
        [K8S_B],
    ),
    "hugepages resource capacity enforced": (
        [ext(HUGE, 10, 1, 1)],
        [],
        None,
        ext(HUGE, 0),
        {},
        [HUGE],
    ),
    "hugepages resource capacity enforced for init container": (
        [r()],
        [ext(HUGE, 10, 1, 1)],
        None,
        ext(HUGE, 0),
        {},
        [HUGE],
    ),
    "hugepages resource allocatable enforced for multiple containers": (
        [ext(HUGE, 3, 1, 1), ext(HUGE, 3, 1, 1)],
        [],
        None,
        ext(HUGE, 2),
        {},
        [HUGE],
    ),
    "skip checking ignored extended resource": (
        [ext(EXT_B, 1, 1, 1)],
        [],
        None,
        r(),
        {"ignoredResources": [EXT_B]},
        [],
    ),
    "resources + pod overhead fits": (
        [r(1, 1)],
        [],
        {"cpu": "3m", "memory": "13"},
        r(5, 5),
        {},
        [],
    ),
    "requests + overhead does not fit for memory": (
        [r(1, 1)],
        [],
        {"cpu": "1m", "memory": "15"},
        r(5, 5),
        {},
        ["memory"],
    ),
    "skip checking ignored extended resource via resource groups": (
        [{**r(1, 1), EXT_B: "1", K8S_A: "1"}],
        [],
        None,
        r(),
        {"ignoredResourceGroups": ["example.com"]},
        [K8S_A],
    ),
    "skip checking extended resource request with quantity zero": (
        [ext(EXT_A, 0, 1, 1)],
        [],
        None,
        ext(EXT_A, 6),
        {},
        [],
    ),
    "skip checking resource request with quantity zero": (
        [{EXT_A: "1"}],
        [],
        None,
        ext(EXT_A, 1, 20, 30),
        {},
        [],
    ),
}


def insufficient(s, incoming) -> list[str]:
    fit = plugin(s, "resource-fit")
    cls = s.search.compile(incoming)
    found = fit.explain(cls, s.state, np.arange(s.state.n))
    return sorted(
        reason.removeprefix("insufficient ") for reason, rejected in found if rejected.any()
    )


@pytest.mark.parametrize(
    "containers,init,overhead,used,args,short", ENOUGH.values(), ids=ENOUGH.keys()
)
def test_enough_requests(containers, init, overhead, used, args, short):
    config = [{"name": "NodeResourcesFit", "args": args}] if args else []
    s = cluster(
        [node("n", capacity=NODE)],
        [(pod("existing", containers=[used]), "n")],
        plugin_config=config,
    )
    incoming = pod(containers=containers, init_containers=init, overhead=overhead)
    assert verdicts(s, "resource-fit", incoming) == {"n": not short}
    assert insufficient(s, incoming) == sorted(short)


# TestNotEnoughRequests: the node takes one pod and already has it.
NOT_ENOUGH = {
    "no specified resources, but no room for another pod": ([], [], r(10, 20)),
    "both resources fit, but no room for another pod": ([r(1, 1)], [], r(5, 5)),
    "equal edge case, but no room for another pod": ([r(5, 1)], [], r(5, 19)),
    "equal edge case with an init container, but no room for another pod": (
        [r(5, 1)],
        [r(5, 1)],
        r(5, 19),
    ),
}


@pytest.mark.parametrize("containers,init,used", NOT_ENOUGH.values(), ids=NOT_ENOUGH.keys())
def test_not_enough_pods(containers, init, used):
    s = cluster(
        [node("n", capacity={"cpu": "10m", "memory": "20", "pods": 1})],
        [(pod("e", containers=[used]), "n")],
    )
    incoming = pod(containers=containers, init_containers=init)
    assert verdicts(s, "resource-fit", incoming) == {"n": False}
    assert insufficient(s, incoming) == ["pods"]


# TestStorageRequests: (containers, init containers, already used, fits)
STORAGE = {
    "empty storage requested, and pod fits": ([r(1, 1)], [], r(2, 10), True),
    "ephemeral storage request exceeds allocatable": (
        [{"ephemeral-storage": "25"}],
        [],
        r(2, 2),
        False,
    ),
    "ephemeral storage is sufficient": (
        [{"ephemeral-storage": "5"}],
        [],
        {**r(2, 2), "ephemeral-storage": "10"},
        True,
    ),
    "pod fits": ([{"ephemeral-storage": "10"}], [], r(2, 2), True),
}


@pytest.mark.parametrize("containers,init,used,fits", STORAGE.values(), ids=STORAGE.keys())
def test_storage_requests(containers, init, used, fits):
    s = cluster([node("n", capacity=NODE)], [(pod("e", containers=[used]), "n")])
    incoming = pod(containers=containers, init_containers=init)
    assert verdicts(s, "resource-fit", incoming) == {"n": fits}
