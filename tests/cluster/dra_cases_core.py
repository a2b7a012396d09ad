"""Upstream cases of plain requests, pools, node selection, constraints and ``firstAvailable``
lists, ported as facts: same inputs, same devices or the same error."""

from __future__ import annotations

from berth.api.dra import Constraint, DeviceClass, NodeSelection
from berth.api.selectors import NodeSelectorTerm, Requirement
from tests.cluster.dra_tables import (
    ALL,
    CLAIM0,
    CLAIM1,
    CLASS_A,
    CLASS_B,
    DEVICE1,
    DEVICE2,
    DEVICE3,
    DRIVER_A,
    DRIVER_B,
    NODE1,
    POOL1,
    POOL2,
    POOL3,
    POOL4,
    REGION1,
    REQ0,
    REQ1,
    SLICE1,
    SLICE2,
    SUB0,
    SUB1,
    Case,
    all_request,
    allocation,
    claim,
    cls,
    device,
    distinct,
    first_available,
    label_selector,
    local,
    local_selector,
    match,
    one_device,
    request,
    result,
    slice_,
    sub,
    version,
)

A = f"{DRIVER_A}/"
CLASSES_AB = (cls(CLASS_A, DRIVER_A), cls(CLASS_B, DRIVER_B))
ONE_A = (one_device(SLICE1, NODE1, POOL1, DRIVER_A),)


def two_with(attribute: str, first, second) -> tuple:
    """Two devices of driver A differing in one attribute."""
    return (
        slice_(
            SLICE1,
            NODE1,
            POOL1,
            DRIVER_A,
            device(DEVICE1, None, {attribute: first}),
            device(DEVICE2, None, {attribute: second}),
        ),
    )


def all_first(name: str = REQ0):
    """``firstAvailable``: all of class A, else one of class B."""
    return first_available(name, sub(SUB0, CLASS_A, mode="All"), sub(SUB1, CLASS_B))


def not_matching(attribute: str, first, second) -> Case:
    return Case(
        claims=(claim(CLAIM0, request(REQ0, CLASS_A, 2), constraints=(match(A + attribute),)),),
        classes=CLASSES_AB,
        slices=two_with(attribute, first, second),
    )


def versioned(*rows: tuple[str, str, str]) -> tuple:
    devices = (
        device(name, None, {"driverVersion": version(v), "stringAttribute": s})
        for name, v, s in rows
    )
    return (slice_(SLICE1, NODE1, POOL1, DRIVER_A, *devices),)


B_ONE = result(f"{REQ0}/{SUB1}", DRIVER_B, POOL2, DEVICE1)
MANY_NETWORK_SELECTOR = NodeSelection(
    terms=(
        NodeSelectorTerm(
            (
                Requirement("region", "In", (REGION1,)),
                Requirement("planet", "In", ("earth",)),
            ),
            (Requirement("metadata.name", "In", (NODE1,)),),
        ),
    )
)


def two_lists(constraint) -> Case:
    """Two devices whose stringAttribute is a list, under one constraint over both: with
    ``DRAListTypeAttributes`` off (its default in 1.37) a list never compares, as in berth."""
    return Case(
        claims=(claim(CLAIM0, request(REQ0, CLASS_A, 2), constraints=(constraint,)),),
        classes=(cls(CLASS_A, DRIVER_A),),
        slices=two_with(
            "stringAttribute", ("value1", "value2", "value3"), ("value2", "value3", "value4")
        ),
    )


CASES: dict[str, Case] = {
    "list-attributes-disabled-match-constraint-with-lists": two_lists(match(A + "stringAttribute")),
    "list-attributes-disabled-distinct-constraint-with-lists": two_lists(
        distinct(A + "stringAttribute")
    ),
    "empty-class": Case(
        claims=(claim(CLAIM0, request(REQ0, "")),),
        classes=(cls(CLASS_A, DRIVER_A),),
        slices=ONE_A,
        error="claim claim-0, request req-0: missing device class name",
    ),
    "all-devices-many-plus-another": Case(
        claims=(claim(CLAIM0, all_request(REQ0, CLASS_A)), claim(CLAIM1, request(REQ0, CLASS_B))),
        classes=CLASSES_AB,
        slices=(
            slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2)),
            one_device(SLICE1, NODE1, POOL1, DRIVER_B),
        ),
        expect=(
            allocation(
                local(NODE1),
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ0, DRIVER_A, POOL1, DEVICE2),
            ),
            allocation(local(NODE1), result(REQ0, DRIVER_B, POOL1, DEVICE1)),
        ),
    ),
    "all-devices-many-plus-another-reversed": Case(
        claims=(claim(CLAIM1, request(REQ0, CLASS_B)), claim(CLAIM0, all_request(REQ0, CLASS_A))),
        classes=CLASSES_AB,
        slices=(
            slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2)),
            one_device(SLICE1, NODE1, POOL1, DRIVER_B),
        ),
        expect=(
            allocation(local(NODE1), result(REQ0, DRIVER_B, POOL1, DEVICE1)),
            allocation(
                local(NODE1),
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ0, DRIVER_A, POOL1, DEVICE2),
            ),
        ),
    ),
    "all-devices-slice-without-devices-prioritized-list": Case(
        claims=(claim(CLAIM0, all_first()),),
        classes=CLASSES_AB,
        slices=(
            slice_(SLICE1, NODE1, POOL1, DRIVER_A),
            one_device(SLICE2, NODE1, POOL2, DRIVER_B),
        ),
        expect=(allocation(local(NODE1), B_ONE),),
    ),
    "all-devices-no-slices-prioritized-list": Case(
        claims=(claim(CLAIM0, all_first()),),
        classes=CLASSES_AB,
        slices=(one_device(SLICE2, NODE1, POOL2, DRIVER_B),),
        expect=(allocation(local(NODE1), B_ONE),),
    ),
    "all-devices-some-allocated-prioritized-list": Case(
        claims=(claim(CLAIM0, all_first()),),
        allocated=((DRIVER_A, POOL1, DEVICE1),),
        classes=CLASSES_AB,
        slices=(
            slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2)),
            one_device(SLICE2, NODE1, POOL2, DRIVER_B),
        ),
        expect=(allocation(local(NODE1), B_ONE),),
    ),
    "many-network-attached-devices": Case(
        claims=(claim(CLAIM0, request(REQ0, CLASS_A, 4)),),
        classes=(cls(CLASS_A, DRIVER_A),),
        slices=(
            one_device(SLICE1, label_selector("region", REGION1), POOL1, DRIVER_A),
            one_device(SLICE1, ALL, POOL2, DRIVER_A),
            one_device(SLICE1, label_selector("planet", "earth"), POOL3, DRIVER_A),
            one_device(SLICE1, local_selector(NODE1), POOL4, DRIVER_A),
        ),
        expect=(
            allocation(
                MANY_NETWORK_SELECTOR,
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ0, DRIVER_A, POOL2, DEVICE1),
                result(REQ0, DRIVER_A, POOL3, DEVICE1),
                result(REQ0, DRIVER_A, POOL4, DEVICE1),
            ),
        ),
    ),
    "with-constraint-not-matching-int-attribute": not_matching("numa", 1, 2),
    "with-constraint-not-matching-int-attribute-all-devices": Case(
        claims=(claim(CLAIM0, all_request(REQ0, CLASS_A), constraints=(match(A + "numa"),)),),
        classes=CLASSES_AB,
        slices=two_with("numa", 1, 2),
        error="claim claim-0, request req-0: cannot add device driver-a/pool-1/device-2 because "
        "a claim constraint would not be satisfied",
    ),
    "with-constraint-not-matching-string-attribute": not_matching(
        "stringAttribute", "stringAttributeValue", "stringAttributeValue2"
    ),
    "with-constraint-not-matching-bool-attribute": not_matching("boolAttribute", True, False),
    "with-constraint-not-matching-version-attribute": not_matching(
        "driverVersion", version("1.0.0"), version("2.0.0")
    ),
    "with-constraint-for-request": Case(
        claims=(
            claim(
                CLAIM0,
                request(REQ0, CLASS_A),
                request(REQ1, CLASS_A),
                constraints=(match(A + "driverVersion", REQ0),),
            ),
        ),
        classes=CLASSES_AB,
        slices=two_with("driverVersion", version("1.0.0"), version("2.0.0")),
        expect=(
            allocation(
                local(NODE1),
                result(REQ0, DRIVER_A, POOL1, DEVICE1),
                result(REQ1, DRIVER_A, POOL1, DEVICE2),
            ),
        ),
    ),
    "with-constraint-for-request-retry": Case(
        claims=(
            claim(
                CLAIM0,
                request(REQ0, CLASS_A),
                request(REQ1, CLASS_A),
                constraints=(match(A + "driverVersion", REQ0), match(A + "stringAttribute")),
            ),
        ),
        classes=CLASSES_AB,
        slices=versioned((DEVICE1, "1.0.0", "a"), (DEVICE2, "2.0.0", "b"), (DEVICE3, "3.0.0", "b")),
        expect=(
            allocation(
                local(NODE1),
                result(REQ0, DRIVER_A, POOL1, DEVICE2),
                result(REQ1, DRIVER_A, POOL1, DEVICE3),
            ),
        ),
    ),
    "unknown-selector": Case(
        claims=(claim(CLAIM0, request(REQ0, CLASS_A, 1, "")),),
        classes=(cls(CLASS_A, DRIVER_A),),
        slices=ONE_A,
        error="CEL expression empty",
    ),
    "unknown-allocation-mode": Case(
        claims=(claim(CLAIM0, request(REQ0, CLASS_A, mode="future-mode")),),
        classes=(cls(CLASS_A, DRIVER_A),),
        slices=ONE_A,
        error="unsupported count mode future-mode",
    ),
    "unknown-constraint": Case(
        claims=(claim(CLAIM0, request(REQ0, CLASS_A), constraints=(Constraint(),)),),
        classes=(cls(CLASS_A, DRIVER_A),),
        slices=ONE_A,
        error="empty constraint",
    ),
    "invalid-CEL-one-device-class": Case(
        claims=(claim(CLAIM0, request(REQ0, CLASS_A)),),
        classes=(DeviceClass(CLASS_A, ("noSuchVar",)),),
        slices=ONE_A,
        error="undeclared reference",
    ),
}
