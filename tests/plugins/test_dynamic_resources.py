"""dynamic-resources: pods with DRA claims placed where the claims can be allocated, the
allocation recorded and reserved for the pod, freed when it leaves.

The table ports the verdicts of kube-scheduler's DynamicResources plugin tests
(``pkg/scheduler/framework/plugins/dynamicresources/dynamicresources_test.go``) that state a
placement or a refusal for structured parameters: one worker node, a slice with one device, a
class selecting the driver, a pod naming a claim or a template. Cases about the API round trips
(finalizers, deletion timestamps, PreBind patches, queueing hints) have no counterpart here.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import pytest

from berth.api.dra import (
    ClaimSpec,
    Device,
    DeviceClass,
    DeviceRequest,
    ExactRequest,
    NodeSelection,
    PodClaim,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)
from berth.api.objects import Pod
from berth.cluster.dra.claims import template_claim_name
from berth.framework.scheduler import Scheduler
from berth.resources import GPU
from tests.builders import GANG, config, node, pod, run, scheduler

DRIVER = "some-driver"
CLASS = DeviceClass("my-resource-class", (f'device.driver == "{DRIVER}"',))


def one_device_slice(on: str = "worker", count: int = 1, driver: str = DRIVER) -> ResourceSlice:
    return ResourceSlice(
        f"{on}-slice",
        driver,
        on,
        selection=NodeSelection(node_name=on),
        devices=tuple(Device(f"instance-{i}") for i in range(count)),
    )


def spec(count: int = 1, class_name: str = CLASS.name, selectors: tuple[str, ...] = ()):
    return ClaimSpec((DeviceRequest("req-1", ExactRequest(class_name, selectors, count=count)),))


def claim_pod(name: str, *, claim: str = "", template: str = "", **fields) -> Pod:
    entry = PodClaim("my-resource", claim_name=claim, template_name=template)
    return pod(name, resource_claims=(entry,), **fields)


@dataclass
class Case:
    pods: list[Pod]
    want: dict[str, str | None]  # pod -> node (None: stays pending)
    objects: list[object] = field(default_factory=lambda: [CLASS, one_device_slice()])
    nodes: tuple[str, ...] = ("worker",)
    devices: dict[str, tuple[str, ...]] = field(default_factory=dict)  # claim -> devices


CLAIM = ResourceClaim("my-pod-claim", spec=spec())
TEMPLATE = ResourceClaimTemplate("my-template", spec=spec())
CLAIMED = template_claim_name("my-pod", "my-resource", "default")

CASES = {
    # upstream "empty": a pod without claims is not the plugin's concern
    "empty": Case([pod("my-pod")], {"my-pod": "worker"}, objects=[CLASS]),
    # "claim-reference" / "structured-with-resources": the claim is allocated on the worker's
    # device and reserved for the pod
    "structured-with-resources": Case(
        [claim_pod("my-pod", claim=CLAIM.name)],
        {"my-pod": "worker"},
        objects=[CLASS, one_device_slice(), CLAIM],
        devices={"my-pod-claim": ("instance-0",)},
    ),
    # "claim-template": the pod's own claim, named after the pod and its entry
    "claim-template": Case(
        [claim_pod("my-pod", template=TEMPLATE.name)],
        {"my-pod": "worker"},
        objects=[CLASS, one_device_slice(), TEMPLATE],
        devices={CLAIMED: ("instance-0",)},
    ),
    # "missing-claim": unschedulable, the claim does not exist
    "missing-claim": Case(
        [claim_pod("my-pod", claim="my-pod-claim")],
        {"my-pod": None},
    ),
    # "structured-no-resources": no slice, no device: unschedulable on the node
    "structured-no-resources": Case(
        [claim_pod("my-pod", claim=CLAIM.name)],
        {"my-pod": None},
        objects=[CLASS, CLAIM],
    ),
    # "missing-class" (structured): the request names a class that does not exist
    "missing-class": Case(
        [claim_pod("my-pod", claim="c")],
        {"my-pod": None},
        objects=[one_device_slice(), ResourceClaim("c", spec=spec(class_name="no-such"))],
    ),
    # "CEL-runtime-error": a selector failing at run time makes the claim unallocatable
    "CEL-runtime-error": Case(
        [claim_pod("my-pod", claim="c")],
        {"my-pod": None},
        objects=[
            CLASS,
            one_device_slice(),
            ResourceClaim("c", spec=spec(selectors=('device.attributes["x"].y == 1',))),
        ],
    ),
    # "claim-reference" with the claim allocated for another pod: reserved for both, the
    # second pod goes where the allocation is
    "shared-claim": Case(
        [claim_pod("a", claim=CLAIM.name), claim_pod("b", claim=CLAIM.name)],
        {"a": "worker", "b": "worker"},
        objects=[CLASS, one_device_slice(), one_device_slice("other", 0), CLAIM],
        nodes=("other", "worker"),
        devices={"my-pod-claim": ("instance-0",)},
    ),
    # two pods, one device: the second waits (kube: "cannot allocate all claims")
    "device-taken": Case(
        [claim_pod("a", template=TEMPLATE.name), claim_pod("b", template=TEMPLATE.name)],
        {"a": "worker", "b": None},
        objects=[CLASS, one_device_slice(), TEMPLATE],
    ),
    # the node with the devices, not the other one
    "picks-node-with-devices": Case(
        [claim_pod("my-pod", template="two")],
        {"my-pod": "worker"},
        objects=[
            CLASS,
            one_device_slice("worker", 2),
            one_device_slice("small", 1),
            ResourceClaimTemplate("two", spec=spec(2)),
        ],
        nodes=("small", "worker"),
        devices={
            template_claim_name("my-pod", "my-resource", "default"): ("instance-0", "instance-1")
        },  # fmt: skip
    ),
}


def fresh(name: str) -> Case:
    """A copy of the case: placing pods changes them."""
    return copy.deepcopy(CASES[name])


def build(case: Case) -> Scheduler:
    s = scheduler([node(n, cpu=8000) for n in case.nodes])
    s.set_dra(case.objects)
    return s


@pytest.mark.parametrize("name", list(CASES))
def test_upstream_verdicts(name: str) -> None:
    case = fresh(name)
    s = build(case)
    placed = run(s, case.pods)
    assert {p.name: placed.get(p.name) for p in case.pods} == case.want
    dra = s.state.dra
    assert dra is not None
    for claim_name, devices in case.devices.items():
        claim = dra.claims[f"default/{claim_name}"]
        assert claim.allocation is not None
        assert tuple(r.device for r in claim.allocation.results) == devices
        holders = [p.key for p in case.pods if placed.get(p.name)]
        assert list(claim.reserved_for) == [k for k in holders if k in claim.reserved_for]
        assert claim.reserved_for


def test_freed_when_pods_leave_and_shared_claim_kept_while_held() -> None:
    case = fresh("shared-claim")
    s = build(case)
    run(s, case.pods)
    dra = s.state.dra
    assert dra is not None
    claim = dra.claims["default/my-pod-claim"]
    a, b = case.pods
    s.release(a)
    assert claim.allocation is not None and list(claim.reserved_for) == [b.key]
    s.release(b)
    assert claim.allocation is None and not claim.reserved_for
    assert not dra.allocated.devices


def test_template_claim_goes_with_its_pod_and_the_device_is_free_again() -> None:
    case = fresh("device-taken")
    s = build(case)
    a, b = case.pods
    run(s, [a, b])
    s.release(a)
    assert run(s) == {"b": "worker"}
    dra = s.state.dra
    assert dra is not None
    assert f"default/{template_claim_name('a', 'my-resource', 'default')}" not in dra.claims


def test_template_claim_name_is_cut_as_kubernetes_cuts_it() -> None:
    name = template_claim_name("p" * 60, "c" * 20, "default")
    assert len(name) <= 63
    base, suffix = name[:-5], name[-5:]
    # both parts cut in proportion to their length: 60*57//82 and 20*57//82
    assert base == "p" * 41 + "-" + "c" * 13
    assert len(suffix) == 5


def gpu_slice(on: str, count: int) -> ResourceSlice:
    return ResourceSlice(
        f"{on}-gpus",
        "gpu.example.com",
        on,
        selection=NodeSelection(node_name=on),
        devices=tuple(Device(f"gpu-{i}") for i in range(count)),
    )


GPU_CLASS = DeviceClass("gpu.example.com", ('device.driver == "gpu.example.com"',))


def test_dra_gpus_are_gpu_devices() -> None:
    """A node's DRA GPUs count into its nvidia.com/gpu, and a pod's plain GPU claims into its
    request: the GPU table holds the same devices the claim does."""
    s = scheduler([node("n0", cpu=8000)])
    s.set_dra([GPU_CLASS, gpu_slice("n0", 4), ResourceClaimTemplate("two", spec=ClaimSpec(
        (DeviceRequest("gpus", ExactRequest(GPU_CLASS.name, count=2)),)))])  # fmt: skip
    assert s.state.nodes[0].allocatable[GPU] == 4000
    p = claim_pod("p", template="two")
    assert run(s, [p]) == {"p": "n0"}
    assert p.requests[GPU] == 2000
    assert p.gpu_devices == "gpu-0,gpu-1"
    assert s.state.gpus.remaining[0, :4].tolist() == [0, 0, 1000, 1000]
    s.release(p)
    assert s.state.gpus.remaining[0, :4].tolist() == [1000] * 4


def test_preemption_frees_dra_devices_for_the_preemptor() -> None:
    """A high-priority DRA pod evicts a low-priority one holding the node's only GPU and gets
    that GPU in the same session (kube-scheduler cannot preempt for DRA devices)."""
    cfg = config(["priority", GANG, "resource-fit"], actions="enqueue, allocate, preempt")
    s = scheduler([node("n0", cpu=8000)], cfg)
    s.set_dra([GPU_CLASS, gpu_slice("n0", 1), ResourceClaimTemplate("one", spec=ClaimSpec(
        (DeviceRequest("gpu", ExactRequest(GPU_CLASS.name)),)))])  # fmt: skip
    low = claim_pod("low", template="one", priority=1)
    assert run(s, [low]) == {"low": "n0"}
    high = claim_pod("high", template="one", priority=100)
    s.submit(high)
    binds = {b.pod.name: b.node for b in s.run_session(1.0)}
    assert [e.pod.name for e in s.evictions] == ["low"]
    assert binds == {"high": "n0"}
    dra = s.state.dra
    assert dra is not None
    held = dra.claims[f"default/{template_claim_name('high', 'my-resource', 'default')}"]
    assert held.allocation is not None
    assert [r.device for r in held.allocation.results] == ["gpu-0"]
    assert f"default/{template_claim_name('low', 'my-resource', 'default')}" not in dra.claims
