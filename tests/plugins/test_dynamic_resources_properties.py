"""Properties of DRA scheduling over random clusters and pod sequences: no device is allocated
to two claims, the free counts the filter reads match the claims, a shared claim stays
allocated while a pod holds it, and everything is free once every pod has left."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

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
from tests.builders import node, pod, run, scheduler

GPU_CLASS = DeviceClass("gpu", ('device.driver == "gpu.example.com"',))
BIG = DeviceClass("big", ('device.driver == "gpu.example.com"', "device.attributes.mem >= 40"))


def objects(gpus: list[int]) -> list[object]:
    out: list[object] = [GPU_CLASS, BIG]
    for i, count in enumerate(gpus):
        out.append(
            ResourceSlice(
                f"n{i}-gpus",
                "gpu.example.com",
                f"n{i}",
                selection=NodeSelection(node_name=f"n{i}"),
                devices=tuple(
                    Device(f"gpu-{k}", attributes={"mem": 80 if k % 2 else 20})
                    for k in range(count)
                ),
            )
        )
    for count in (1, 2, 3):
        for cls in (GPU_CLASS, BIG):
            request = DeviceRequest("r", ExactRequest(cls.name, count=count))
            out.append(ResourceClaimTemplate(f"{cls.name}-{count}", spec=ClaimSpec((request,))))
    request = DeviceRequest("r", ExactRequest(GPU_CLASS.name, count=1))
    out.append(ResourceClaim("shared", spec=ClaimSpec((request,))))
    return out


asks = st.lists(
    st.tuples(
        st.sampled_from(["gpu-1", "gpu-2", "gpu-3", "big-1", "big-2", "shared"]), st.booleans()
    ),  # fmt: skip
    min_size=1,
    max_size=14,
)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=4), asks, st.randoms())
def test_no_device_twice_and_all_freed(gpus, pods, rnd) -> None:
    s = scheduler([node(f"n{i}", cpu=64000) for i in range(len(gpus))])
    s.set_dra(objects(gpus))
    dra = s.state.dra
    assert dra is not None
    placed = []
    by_name = {}
    for number, (ask, leave_early) in enumerate(pods):
        entry = (
            PodClaim("c", claim_name="shared")
            if ask == "shared"
            else PodClaim("c", template_name=ask)
        )
        p = pod(f"p{number}", cpu=100, resource_claims=(entry,))
        by_name[p.name] = p
        binds = run(s, [p], now=float(number))
        placed += [by_name[name] for name in binds]  # earlier pods too, once room was freed
        _check(s)
        if leave_early and placed:
            gone = placed.pop(rnd.randrange(len(placed)))
            s.release(gone)
            _check(s)
    for p in placed:
        s.release(p)
        _check(s)
    assert not dra.allocated.devices
    assert all(c.allocation is None and not c.reserved_for for c in dra.claims.values())
    assert not dra.inventory.held.any()


def _check(s) -> None:
    dra = s.state.dra
    seen: set = set()
    for claim in dra.claims.values():
        if claim.allocation is None:
            assert not claim.reserved_for
            continue
        assert claim.reserved_for, f"{claim.key} allocated but reserved for no pod"
        for result in claim.allocation.results:
            ident = (result.driver, result.pool, result.device)
            assert ident not in seen, f"{ident} allocated twice"
            seen.add(ident)
    assert seen == dra.allocated.devices
    inventory = dra.inventory
    held = {inventory.ids[i] for i in range(len(inventory.ids)) if inventory.held[i]}
    assert held == seen
    for counts in inventory.kinds.values():
        for row in range(s.state.n):
            free = sum(
                1 for at in inventory.on_row[row] if counts.match[at] and not inventory.held[at]
            )
            assert counts.free[row] == free
