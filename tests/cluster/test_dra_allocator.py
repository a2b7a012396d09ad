"""The structured DRA allocator against the upstream allocator's shared table
(``structured/internal/allocatortesting/allocator_testing.go`` in
k8s.io/dynamic-resource-allocation): the same inputs, the same devices or the same error.

Every upstream case is named: ported ones run (here and in ``dra_cases_*.py``), the others are
in ``dra_skipped.REASONS`` with the reason; a test checks that together they cover the table.
"""

from __future__ import annotations

import pytest

from berth.cluster.dra import AllocatedState, AllocationError, Allocator
from tests.cluster import (
    dra_cases_access,
    dra_cases_capacity,
    dra_cases_core,
    dra_cases_lists,
    dra_cases_pools,
    dra_cases_search,
)
from tests.cluster.dra_skipped import REASONS, UPSTREAM_CASES
from tests.cluster.dra_tables import (
    CAPACITY0,
    CLAIM0,
    CLAIM1,
    CLASS_A,
    CLASS_B,
    DEVICE1,
    DEVICE2,
    DRIVER_A,
    DRIVER_B,
    FOUR,
    NODE1,
    NODE2,
    ONE,
    POOL1,
    POOL2,
    RANGE_POLICY,
    REGION1,
    REGION2,
    REQ0,
    REQ1,
    SLICE1,
    SLICE2,
    SUB0,
    SUB1,
    TWO,
    Case,
    all_request,
    allocation,
    claim,
    cls,
    cls_multi,
    device,
    first_available,
    gi,
    label_selector,
    local,
    many_devices,
    match,
    node_labels,
    one_device,
    request,
    result,
    slice_,
    sub,
    version,
)
from tests.cluster.dra_tables import slice_ as slice_with

MEM1 = f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("1Gi")) >= 0'
MEM2 = f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("2Gi")) >= 0'
SMALL_LARGE = (device(DEVICE1, {"memory": gi(1)}), device(DEVICE2, {"memory": gi(2)}))
LARGE_SMALL = SMALL_LARGE[::-1]
ATTRS = {"driverVersion": version("1.0.0"), "numa": 1, "stringAttribute": "stringAttributeValue",
         "boolAttribute": True}  # fmt: skip
A = f"{DRIVER_A}/"

BASIC_CASES: dict[str, Case] = {
    "empty": Case(),
    "simple": Case(
        claims=(claim(CLAIM0, request(REQ0, CLASS_A)),),
        classes=(cls(CLASS_A, DRIVER_A),),
        slices=(one_device(SLICE1, NODE1, POOL1, DRIVER_A),),
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1)),),
    ),
    "other-node": Case(
        claims=(claim(CLAIM0, request(REQ0, CLASS_A)),),
        classes=(cls(CLASS_A, DRIVER_A),),
        slices=(
            one_device(SLICE1, NODE1, POOL1, DRIVER_B),
            one_device(SLICE2, NODE2, POOL2, DRIVER_A),
        ),
        node=(NODE2, REGION2),
        expect=(allocation(local(NODE2), result(REQ0, DRIVER_A, POOL2, DEVICE1)),),
    ),
    "small-and-large": Case(
        claims=(claim(CLAIM0, request(REQ0, CLASS_A, 1, MEM1), request(REQ1, CLASS_A, 1, MEM2)),),
        classes=(cls(CLASS_A, DRIVER_A),),
        slices=(slice_with(SLICE1, NODE1, POOL1, DRIVER_A, *SMALL_LARGE),),
        expect=(
            allocation(
                local(NODE1),
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ1, DRIVER_A, POOL1, DEVICE2),
            ),
        ),
    ),
    "small-and-large-backtrack-requests": Case(
        claims=(claim(CLAIM0, request(REQ0, CLASS_A, 1, MEM1), request(REQ1, CLASS_A, 1, MEM2)),),
        classes=(cls(CLASS_A, DRIVER_A),),
        slices=(slice_with(SLICE1, NODE1, POOL1, DRIVER_A, *LARGE_SMALL),),
        expect=(
            allocation(
                local(NODE1),
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ1, DRIVER_A, POOL1, DEVICE2),
            ),
        ),
    ),
    "small-and-large-backtrack-claims": Case(
        claims=(
            claim(CLAIM0, request(REQ0, CLASS_A, 1, MEM1)),
            claim(CLAIM1, request(REQ1, CLASS_A, 1, MEM2)),
        ),
        classes=(cls(CLASS_A, DRIVER_A),),
        slices=(slice_with(SLICE1, NODE1, POOL1, DRIVER_A, *LARGE_SMALL),),
        expect=(
            allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1)),
            allocation(local(NODE1), result(REQ1, DRIVER_A, POOL1, DEVICE2)),
        ),
    ),
    "devices-split-across-different-slices": Case(
        claims=(claim(CLAIM0, request(REQ0, CLASS_A, 2)),),
        classes=(cls(CLASS_A, DRIVER_A),),
        slices=(
            one_device(SLICE1, NODE1, POOL1, DRIVER_A),
            one_device(SLICE2, NODE1, POOL2, DRIVER_A),
        ),
        expect=(
            allocation(
                local(NODE1),
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ0, DRIVER_A, POOL2, DEVICE1),
            ),
        ),
    ),
    "obsolete-slice": Case(
        claims=(claim(CLAIM0, request(REQ0, CLASS_A)),),
        classes=(cls(CLASS_A, DRIVER_A),),
        slices=(
            slice_with("slice-1-obsolete", NODE1, POOL1, DRIVER_A, device(DEVICE1), count=2),
            slice_with(
                "slice-1-obsolete", NODE1, POOL1, DRIVER_A, device(DEVICE2), count=2, generation=2
            ),  # fmt: skip
        ),
    ),
    "duplicate-slice": Case(
        claims=(claim(CLAIM0, request(REQ0, CLASS_A)),),
        classes=(cls(CLASS_A, DRIVER_A),),
        slices=(
            one_device(SLICE1, NODE1, POOL1, DRIVER_A, count=2),
            one_device(SLICE1 + "-2", NODE1, POOL1, DRIVER_A, count=2),
        ),
        error="invalid resource pools were encountered",
    ),
    "no-slices": Case(
        claims=(claim(CLAIM0, request(REQ0, CLASS_A)),),
        classes=(cls(CLASS_A, DRIVER_A),),
    ),
    "not-enough-suitable-devices": Case(
        claims=(claim(CLAIM0, request(REQ0, CLASS_A)), claim(CLAIM0, request(REQ1, CLASS_A))),
        classes=(cls(CLASS_A, DRIVER_A),),
        slices=(one_device(SLICE1, NODE1, POOL1, DRIVER_A),),
    ),
    "no-classes": Case(
        claims=(claim(CLAIM0, request(REQ0, CLASS_A)),),
        slices=(one_device(SLICE1, NODE1, POOL1, DRIVER_A),),
        error="could not retrieve device class class-a",
    ),
    "unknown-class": Case(
        claims=(claim(CLAIM0, request(REQ0, "unknown-class")),),
        classes=(cls(CLASS_A, DRIVER_A),),
        slices=(one_device(SLICE1, NODE1, POOL1, DRIVER_A),),
        error="could not retrieve device class unknown-class",
    ),
    "no-claims-to-allocate": Case(
        classes=(cls(CLASS_A, DRIVER_A),),
        slices=(one_device(SLICE1, NODE1, POOL1, DRIVER_A),),
    ),
    "all-devices-single": Case(
        claims=(claim(CLAIM0, all_request(REQ0, CLASS_A)),),
        classes=(cls(CLASS_A, DRIVER_A),),
        slices=(one_device(SLICE1, NODE1, POOL1, DRIVER_A),),
        expect=(allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1)),),
    ),
    "all-devices-many": Case(
        claims=(claim(CLAIM0, all_request(REQ0, CLASS_A)),),
        classes=(cls(CLASS_A, DRIVER_A),),
        slices=(
            one_device(SLICE1, NODE1, POOL1, DRIVER_A),
            one_device(SLICE1, NODE1, POOL2, DRIVER_A),
        ),
        expect=(
            allocation(
                local(NODE1),
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ0, DRIVER_A, POOL2, DEVICE1),
            ),
        ),
    ),
    "all-devices-of-the-incomplete-pool": Case(
        claims=(claim(CLAIM0, all_request(REQ0, CLASS_A)),),
        classes=(cls(CLASS_A, DRIVER_A),),
        slices=(one_device(SLICE1, NODE1, POOL1, DRIVER_A, count=2),),
        error="claim claim-0, request req-0: asks for all devices, but resource pool "
        "driver-a/pool-1 is currently being updated",
    ),
    "all-devices-plus-another": Case(
        claims=(claim(CLAIM0, all_request(REQ0, CLASS_A)), claim(CLAIM1, request(REQ0, CLASS_B))),
        classes=(cls(CLASS_A, DRIVER_A), cls(CLASS_B, DRIVER_B)),
        slices=(
            one_device(SLICE1, NODE1, POOL1, DRIVER_A),
            one_device(SLICE1, NODE1, POOL1, DRIVER_B),
        ),
        expect=(
            allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1)),
            allocation(local(NODE1), result(REQ0, DRIVER_B, POOL1, DEVICE1)),
        ),
    ),
    "all-devices-plus-another-reversed": Case(
        claims=(claim(CLAIM1, request(REQ0, CLASS_B)), claim(CLAIM0, all_request(REQ0, CLASS_A))),
        classes=(cls(CLASS_A, DRIVER_A), cls(CLASS_B, DRIVER_B)),
        slices=(
            one_device(SLICE1, NODE1, POOL1, DRIVER_A),
            one_device(SLICE1, NODE1, POOL1, DRIVER_B),
        ),
        expect=(
            allocation(local(NODE1), result(REQ0, DRIVER_B, POOL1, DEVICE1)),
            allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1)),
        ),
    ),
    "all-devices-no-solution": Case(
        claims=(claim(CLAIM1, request(REQ0, CLASS_A)), claim(CLAIM0, all_request(REQ0, CLASS_A))),
        classes=(cls(CLASS_A, DRIVER_A),),
        slices=(one_device(SLICE1, NODE1, POOL1, DRIVER_A),),
    ),
    "all-devices-no-solution-reversed": Case(
        claims=(claim(CLAIM0, all_request(REQ0, CLASS_A)), claim(CLAIM1, request(REQ0, CLASS_A))),
        classes=(cls(CLASS_A, DRIVER_A),),
        slices=(one_device(SLICE1, NODE1, POOL1, DRIVER_A),),
    ),
    "all-devices-slice-without-devices": Case(
        claims=(claim(CLAIM0, all_request(REQ0, CLASS_A)),),
        classes=(cls(CLASS_A, DRIVER_A),),
        slices=(slice_(SLICE1, NODE1, POOL1, DRIVER_A),),
    ),
    "all-devices-no-slices": Case(
        claims=(claim(CLAIM0, all_request(REQ0, CLASS_A)),),
        classes=(cls(CLASS_A, DRIVER_A),),
    ),
    "all-devices-some-allocated": Case(
        claims=(claim(CLAIM0, all_request(REQ0, CLASS_A)),),
        allocated=((DRIVER_A, POOL1, DEVICE1),),
        classes=(cls(CLASS_A, DRIVER_A),),
        slices=(slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2)),),
    ),
    "network-attached-device": Case(
        claims=(claim(CLAIM0, request(REQ0, CLASS_A)),),
        classes=(cls(CLASS_A, DRIVER_A),),
        slices=(one_device(SLICE1, label_selector("region", REGION1), POOL1, DRIVER_A),),
        expect=(
            allocation(label_selector("region", REGION1), result(REQ0, DRIVER_A, POOL1, DEVICE1)),
        ),
    ),
    "unsuccessful-allocation-network-attached-device": Case(
        claims=(claim(CLAIM0, request(REQ0, CLASS_A)),),
        classes=(cls(CLASS_A, DRIVER_A),),
        slices=(one_device(SLICE1, label_selector("region", REGION1), POOL1, DRIVER_A),),
        node=(NODE2, REGION2),
    ),
    "local-and-network-attached-devices": Case(
        claims=(claim(CLAIM0, request(REQ0, CLASS_A, 2)),),
        classes=(cls(CLASS_A, DRIVER_A),),
        slices=(
            one_device(SLICE1, label_selector("region", REGION1), POOL1, DRIVER_A),
            one_device(SLICE1, NODE1, POOL2, DRIVER_A),
        ),
        expect=(
            allocation(
                local(NODE1),
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ0, DRIVER_A, POOL2, DEVICE1),
            ),
        ),
    ),
    "several-different-drivers": Case(
        claims=(claim(CLAIM0, request(REQ0, CLASS_A)), claim(CLAIM0, request(REQ0, CLASS_B))),
        classes=(cls(CLASS_A, DRIVER_A), cls(CLASS_B, DRIVER_B)),
        slices=(
            slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2)),
            one_device(SLICE1, NODE1, POOL1, DRIVER_B),
        ),
        expect=(
            allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1)),
            allocation(local(NODE1), result(REQ0, DRIVER_B, POOL1, DEVICE1)),
        ),
    ),
    "already-allocated-devices": Case(
        claims=(claim(CLAIM0, request(REQ0, CLASS_A)),),
        allocated=((DRIVER_A, POOL1, DEVICE1), (DRIVER_A, POOL1, DEVICE2)),
        classes=(cls(CLASS_A, DRIVER_A),),
        slices=(one_device(SLICE1, NODE1, POOL1, DRIVER_A),),
    ),
    "with-constraint": Case(
        claims=(
            claim(
                CLAIM0,
                request(REQ0, CLASS_A),
                request(REQ1, CLASS_A),
                constraints=(
                    match(A + "numa"),
                    match(A + "driverVersion"),
                    match(A + "stringAttribute"),
                    match(A + "boolAttribute"),
                ),
            ),
        ),
        classes=(cls(CLASS_A, DRIVER_A),),
        slices=(
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, None, ATTRS),
                device(DEVICE2, None, ATTRS),
            ),  # fmt: skip
        ),
        expect=(
            allocation(
                local(NODE1),
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ1, DRIVER_A, POOL1, DEVICE2),
            ),
        ),
    ),
    "with-constraint-non-existent-attribute": Case(
        claims=(
            claim(CLAIM0, request(REQ0, CLASS_A), constraints=(match(A + "NonExistentAttribute"),)),
        ),
        classes=(cls(CLASS_A, DRIVER_A),),
        slices=(one_device(SLICE1, NODE1, POOL1, DRIVER_A),),
    ),
    "invalid-CEL-one-device": Case(
        claims=(claim(CLAIM0, request(REQ0, CLASS_A, 1, "noSuchVar")),),
        classes=(cls(CLASS_A, DRIVER_A),),
        slices=(one_device(SLICE1, NODE1, POOL1, DRIVER_A),),
        error="undeclared reference",
    ),
    "invalid-CEL-all-devices": Case(
        claims=(claim(CLAIM0, all_request(REQ0, CLASS_A, "noSuchVar")),),
        classes=(cls(CLASS_A, DRIVER_A),),
        slices=(one_device(SLICE1, NODE1, POOL1, DRIVER_A),),
        error="undeclared reference",
    ),
    "too-many-devices-single-request": Case(
        claims=(claim(CLAIM0, request(REQ0, CLASS_A, 500)),),
        classes=(cls(CLASS_A, DRIVER_A),),
        error="exceeds the claim limit",
    ),
    "many-devices-okay": Case(
        claims=(claim(CLAIM0, request(REQ0, CLASS_A, 32)),),
        classes=(cls(CLASS_A, DRIVER_A),),
    ),
    "too-many-devices-total": Case(
        claims=(claim(CLAIM0, request(REQ0, CLASS_A, 32), request(REQ1, CLASS_A, 1)),),
        classes=(cls(CLASS_A, DRIVER_A),),
        slices=(many_devices(SLICE1, NODE1, POOL1, DRIVER_A, 33),),
        error="exceeds the claim limit",
    ),
    "all-devices-invalid-CEL": Case(
        claims=(claim(CLAIM0, request(REQ0, CLASS_A, 500)),),
        classes=(cls(CLASS_A, DRIVER_A),),
        error="exceeds the claim limit",
    ),
    "prioritized-list-first-unavailable": Case(
        claims=(claim(CLAIM0, first_available(REQ0, sub(SUB0, CLASS_B), sub(SUB1, CLASS_A))),),
        classes=(cls(CLASS_A, DRIVER_A), cls(CLASS_B, DRIVER_B)),
        slices=(one_device(SLICE1, NODE1, POOL1, DRIVER_A),),
        expect=(allocation(local(NODE1), result(f"{REQ0}/{SUB1}", DRIVER_A, POOL1, DEVICE1)),),
    ),
    "prioritized-list-non-available": Case(
        claims=(
            claim(CLAIM0, first_available(REQ0, sub(SUB0, CLASS_B, 2), sub(SUB1, CLASS_A, 2))),
        ),
        classes=(cls(CLASS_A, DRIVER_A), cls(CLASS_B, DRIVER_B)),
        slices=(
            one_device(SLICE1, NODE1, POOL1, DRIVER_A),
            one_device(SLICE2, NODE1, POOL2, DRIVER_B),
        ),
    ),
    "prioritized-list-too-many-in-first-subrequest": Case(
        claims=(
            claim(CLAIM0, first_available(REQ0, sub(SUB0, CLASS_B, 500), sub(SUB1, CLASS_A, 1))),
        ),
        classes=(cls(CLASS_A, DRIVER_A), cls(CLASS_B, DRIVER_B)),
        slices=(one_device(SLICE1, NODE1, POOL1, DRIVER_A),),
        expect=(allocation(local(NODE1), result(f"{REQ0}/{SUB1}", DRIVER_A, POOL1, DEVICE1)),),
    ),
    "max-number-devices": Case(
        claims=(claim(CLAIM0, request(REQ0, CLASS_A, 32)),),
        classes=(cls(CLASS_A, DRIVER_A),),
        slices=(many_devices(SLICE1, NODE1, POOL1, DRIVER_A, 32),),
        expect=(
            allocation(
                local(NODE1),
                *(result(REQ0, DRIVER_A, POOL1, f"device-{i}") for i in range(32)),
            ),
        ),
    ),
    "consumable-capacity-multi-allocatable-device-without-capacity-without-capacity-request": Case(
        claims=(claim(CLAIM0, request(REQ0, CLASS_A)), claim(CLAIM1, request(REQ0, CLASS_A))),
        classes=(cls_multi(CLASS_A, DRIVER_A, True),),
        slices=(slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1, multi=True)),),
        expect=(
            allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1)),
            allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1)),
        ),
    ),
    "consumable-capacity-multi-allocatable-device-without-policy-without-capacity-request": Case(
        claims=(claim(CLAIM0, request(REQ0, CLASS_A)), claim(CLAIM1, request(REQ0, CLASS_A))),
        classes=(cls_multi(CLASS_A, DRIVER_A, True),),
        slices=(
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, {CAPACITY0: ONE}, multi=True),
                device(DEVICE2, {CAPACITY0: ONE}, multi=True),
            ),  # fmt: skip
        ),
        expect=(
            allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1, {CAPACITY0: ONE})),
            allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE2, {CAPACITY0: ONE})),
        ),
    ),
    "consumable-capacity-multi-allocatable-device-with-allocated-capacity-use-remaining": Case(
        claims=(claim(CLAIM0, request(REQ0, CLASS_A, capacity=TWO)),),
        consumed={(DRIVER_A, POOL1, DEVICE1): {CAPACITY0: TWO}},
        classes=(cls_multi(CLASS_A, DRIVER_A, True),),
        slices=(
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, {CAPACITY0: FOUR}, multi=True, policy=RANGE_POLICY),
            ),
        ),  # fmt: skip
        expect=(
            allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE1, {CAPACITY0: TWO})),
        ),
    ),
    "consumable-capacity-multi-allocatable-device-with-allocated-capacity-next-device": Case(
        claims=(claim(CLAIM0, request(REQ0, CLASS_A, capacity=TWO)),),
        consumed={(DRIVER_A, POOL1, DEVICE1): {CAPACITY0: TWO}},
        classes=(cls_multi(CLASS_A, DRIVER_A, True),),
        slices=(
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEVICE1, {CAPACITY0: TWO}, multi=True, policy=RANGE_POLICY),
                device(DEVICE2, {CAPACITY0: TWO}, multi=True, policy=RANGE_POLICY),
            ),
        ),  # fmt: skip
        expect=(
            allocation(local(NODE1), result(REQ0, DRIVER_A, POOL1, DEVICE2, {CAPACITY0: TWO})),
        ),
    ),
}


#: The ported cases: the basic ones above and the dra_cases_* modules' by topic.
TABLES = (
    BASIC_CASES,
    dra_cases_access.CASES,
    dra_cases_core.CASES,
    dra_cases_lists.CASES,
    dra_cases_capacity.CASES,
    dra_cases_pools.CASES,
    dra_cases_search.CASES,
)
CASES = {name: case for table in TABLES for name, case in table.items()}


def _run(case: Case):
    allocated = AllocatedState(set(case.allocated), dict(case.consumed))
    allocator = Allocator(case.classes, case.slices, allocated)
    name, region = case.node
    return allocator.allocate(name, node_labels(region), case.claims)


@pytest.mark.parametrize("name", sorted(CASES))
def test_upstream_table(name: str) -> None:
    case = CASES[name]
    if case.error:
        with pytest.raises(AllocationError, match=case.error):
            _run(case)
        return
    got = _run(case)
    assert (got or []) == list(case.expect)


@pytest.mark.parametrize("name", sorted(REASONS))
def test_upstream_case_not_ported(name: str) -> None:
    pytest.skip(REASONS[name])


def test_every_upstream_case_is_ported_or_listed() -> None:
    assert sum(len(table) for table in TABLES) == len(CASES), "a case is ported twice"
    assert not set(CASES) & set(REASONS), "a ported case is still listed as skipped"
    assert set(CASES) | set(REASONS) == set(UPSTREAM_CASES)
    assert len(UPSTREAM_CASES) == len(set(UPSTREAM_CASES))
