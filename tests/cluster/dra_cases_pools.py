# ruff: noqa: E501  (upstream case names are longer than a line)
"""Upstream cases of ``distinctAttribute`` constraints and of pools spread over slices and
nodes (generations, incomplete and invalid pools), ported as facts."""

from __future__ import annotations

from tests.cluster.dra_tables import (
    CAPACITY0,
    CLAIM0,
    CLASS_A,
    DEVICE1,
    DEVICE2,
    DEVICE3,
    DRIVER_A,
    FOUR,
    NODE1,
    NODE2,
    ONE,
    POOL1,
    POOL2,
    RANGE_POLICY,
    REQ0,
    REQ1,
    REQ2,
    SLICE1,
    SLICE2,
    SLICE3,
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
    distinct,
    first_available,
    local,
    request,
    result,
    slice_,
    sub,
    version,
)

DEVICE4, REQ3 = "device-4", "req-3"
A = f"{DRIVER_A}/"
CLASSES_A = (cls(CLASS_A, DRIVER_A),)
BOOL_SELECTOR = f'device.attributes["{DRIVER_A}"].boolAttribute'


def on_node(*devices, **kw) -> tuple:
    return (slice_(SLICE1, NODE1, POOL1, DRIVER_A, *devices, **kw),)


def valued(name: str, attribute: str, value, **kw):
    return device(name, None, {attribute: value}, **kw)


def r(req: str, dev: str, pool: str = POOL1, consumed=None):
    return result(req, DRIVER_A, pool, dev, consumed)


def three_of(*values: str) -> Case:
    """One request for three devices whose stringAttribute values must differ."""
    devices = (valued(f"device-{i}", "stringAttribute", v) for i, v in enumerate(values, 1))
    return Case(
        claims=(
            claim(
                CLAIM0, request(REQ0, CLASS_A, 3), constraints=(distinct(A + "stringAttribute"),)
            ),
        ),
        classes=CLASSES_A,
        slices=on_node(*devices),
    )


def numa_three(*numas: int, expect=()) -> Case:
    devices = (valued(f"device-{i}", "numa", n) for i, n in enumerate(numas, 1))
    return Case(
        claims=(claim(CLAIM0, request(REQ0, CLASS_A, 3), constraints=(distinct(A + "numa"),)),),
        classes=CLASSES_A,
        slices=on_node(*devices),
        expect=expect,
    )


def bool_first(name: str):
    """``firstAvailable``: a device whose boolAttribute is true, else any."""
    return first_available(name, sub(SUB0, CLASS_A, 1, BOOL_SELECTOR), sub(SUB1, CLASS_A))


def generation(name: str, node: str, gen: int, *devices: str):
    """Slices of one pool, two per generation, one device each."""
    return tuple(
        slice_(name, node, POOL1, DRIVER_A, device(dev), count=2, generation=gen) for dev in devices
    )


ONE_REQUEST = (claim(CLAIM0, request(REQ0, CLASS_A)),)
DUPLICATE_POOL = (
    slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), count=2),
    slice_(SLICE2, NODE1, POOL1, DRIVER_A, device(DEVICE1), count=2),
    slice_(SLICE3, NODE1, POOL2, DRIVER_A, device(DEVICE2)),
)
ALL_FOUR_ATTRIBUTES = (
    (DEVICE1, "1.0.0", 0, True),
    (DEVICE2, "1.0.1", 1, False),
    (DEVICE3, "1.0.2", 2, True),
    (DEVICE4, "1.0.0", 3, True),
)

CASES: dict[str, Case] = {
    "with-distinct-constraints": Case(
        claims=(
            claim(
                CLAIM0,
                *(request(name, CLASS_A) for name in (REQ0, REQ1, REQ2, REQ3)),
                constraints=(
                    distinct(A + "boolAttribute", REQ0, REQ1),
                    distinct(A + "driverVersion", REQ0, REQ1, REQ2),
                    distinct(A + "numa", REQ0, REQ1, REQ2, REQ3),
                ),
            ),
        ),
        classes=CLASSES_A,
        slices=on_node(
            *(
                device(
                    name,
                    None,
                    {"driverVersion": version(v), "numa": numa, "boolAttribute": flag},
                    multi=True,
                )
                for name, v, numa, flag in ALL_FOUR_ATTRIBUTES
            )
        ),
        expect=(
            allocation(
                local(NODE1), r(REQ0, DEVICE1), r(REQ1, DEVICE2), r(REQ2, DEVICE3), r(REQ3, DEVICE4)
            ),
        ),
    ),
    "distinct-constraint-single-request-count-3-not-distinct": three_of(
        "value1", "value2", "value1"
    ),
    "distinct-constraint-single-request-count-3-all-distinct": Case(
        claims=three_of("value1", "value2", "value3").claims,
        classes=CLASSES_A,
        slices=three_of("value1", "value2", "value3").slices,
        expect=(allocation(local(NODE1), r(REQ0, DEVICE1), r(REQ0, DEVICE2), r(REQ0, DEVICE3)),),
    ),
    "distinct-constraint-two-requests-with-count-not-distinct": Case(
        claims=(
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, 2),
                request(REQ1, CLASS_A),
                constraints=(distinct(A + "stringAttribute", REQ0, REQ1),),
            ),
        ),
        classes=CLASSES_A,
        slices=three_of("value1", "value2", "value1").slices,
    ),
    "with-distinct-constraints-attribute-not-set": Case(
        claims=(
            claim(
                CLAIM0, request(REQ0, CLASS_A), constraints=(distinct(A + "boolAttribute", REQ0),)
            ),
        ),
        classes=CLASSES_A,
        slices=on_node(device(DEVICE1, multi=True)),
    ),
    "with-distinct-constraints-with-subrequests": Case(
        claims=(
            claim(
                CLAIM0,
                bool_first(REQ0),
                bool_first(REQ1),
                bool_first(REQ2),
                constraints=(distinct(A + "boolAttribute", REQ0, REQ1),),
            ),
        ),
        classes=CLASSES_A,
        slices=on_node(
            valued(DEVICE1, "boolAttribute", True, multi=True),
            valued(DEVICE2, "boolAttribute", False, multi=True),
        ),
        expect=(
            allocation(
                local(NODE1),
                r(f"{REQ0}/{SUB0}", DEVICE1),
                r(f"{REQ1}/{SUB1}", DEVICE2),
                r(f"{REQ2}/{SUB0}", DEVICE1),
            ),
        ),
    ),
    "distinct-constraint-single-request-multiple-devices-attribute-not-set": Case(
        claims=numa_three().claims,
        classes=CLASSES_A,
        slices=on_node(device(DEVICE1), device(DEVICE2), device(DEVICE3)),
    ),
    "distinct-constraint-single-request-not-enough-distinct-values": numa_three(1, 2, 2, 2),
    "distinct-constraint-single-request-multiple-devices-attribute-set": numa_three(
        1,
        2,
        1,
        3,
        expect=(allocation(local(NODE1), r(REQ0, DEVICE1), r(REQ0, DEVICE2), r(REQ0, DEVICE4)),),
    ),
    "distinct-constraint-one-multi-allocatable-device-with-distinct-constraint": Case(
        claims=(
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, capacity=ONE),
                request(REQ1, CLASS_A, capacity=ONE),
                constraints=(distinct(A + "stringAttribute"),),
            ),
        ),
        classes=(cls_multi(CLASS_A, DRIVER_A, True),),
        slices=on_node(
            device(
                DEVICE1,
                {CAPACITY0: TWO},
                {"stringAttribute": "stringAttributeValue"},
                multi=True,
                policy=RANGE_POLICY,
            )
        ),
    ),
    "distinct-constraint-two-multi-allocatable-devices-with-distinct-constraint": Case(
        claims=(
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, capacity=TWO),
                request(REQ1, CLASS_A, capacity=TWO),
                constraints=(distinct(A + "stringAttribute"),),
            ),
        ),
        classes=(cls_multi(CLASS_A, DRIVER_A, True),),
        slices=tuple(
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(
                    name,
                    {CAPACITY0: FOUR},
                    {"stringAttribute": value},
                    multi=True,
                    policy=RANGE_POLICY,
                ),
                count=2,
            )
            for name, value in (
                (DEVICE1, "stringAttributeValue1"),
                (DEVICE2, "stringAttributeValue2"),
            )
        ),
        expect=(
            allocation(
                local(NODE1),
                r(REQ0, DEVICE1, consumed={CAPACITY0: TWO}),
                r(REQ1, DEVICE2, consumed={CAPACITY0: TWO}),
            ),
        ),
    ),
    "allocation-mode-all-with-multi-host-resource-pool": Case(
        claims=(claim(CLAIM0, all_request(REQ0, CLASS_A)),),
        classes=CLASSES_A,
        slices=(
            slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), count=2),
            slice_(SLICE2, NODE2, POOL1, DRIVER_A, device(DEVICE2), count=2),
        ),
        expect=(allocation(local(NODE1), r(REQ0, DEVICE1)),),
    ),
    "multi-host-resource-pool-with-stale-slice-for-current-node": Case(
        claims=ONE_REQUEST,
        classes=CLASSES_A,
        slices=(
            slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), count=2),
            slice_(SLICE2, NODE2, POOL1, DRIVER_A, device(DEVICE2), count=2, generation=2),
        ),
    ),
    # Upstream would rather not allocate here, but allocates from the old generation the node
    # still sees; so does berth.
    "multi-host-resource-pool-complete-update-from-node-1-to-node-2": Case(
        claims=ONE_REQUEST,
        classes=CLASSES_A,
        slices=generation(SLICE1, NODE1, 1, DEVICE1, DEVICE2)
        + generation(SLICE2, NODE2, 2, DEVICE1, DEVICE2),
        expect=(allocation(local(NODE1), r(REQ0, DEVICE1)),),
    ),
    "multi-host-resource-pool-complete-update-from-node-2-to-node-1": Case(
        claims=ONE_REQUEST,
        classes=CLASSES_A,
        slices=generation(SLICE1, NODE2, 1, DEVICE1, DEVICE2)
        + generation(SLICE2, NODE1, 2, DEVICE1, DEVICE2),
        expect=(allocation(local(NODE1), r(REQ0, DEVICE1)),),
    ),
    "multi-host-resource-pool-incomplete-update-from-node-1-to-node-2": Case(
        claims=ONE_REQUEST,
        classes=CLASSES_A,
        slices=generation(SLICE1, NODE1, 1, DEVICE1, DEVICE2)
        + generation(SLICE2, NODE2, 2, DEVICE1),
        expect=(allocation(local(NODE1), r(REQ0, DEVICE1)),),
    ),
    "multi-host-resource-pool-incomplete-update-from-node-2-to-node-1": Case(
        claims=ONE_REQUEST,
        classes=CLASSES_A,
        slices=generation(SLICE1, NODE2, 1, DEVICE1, DEVICE2)
        + generation(SLICE2, NODE1, 2, DEVICE1),
    ),
    "different-resourceslices-in-pool-can-target-different-nodes": Case(
        claims=ONE_REQUEST,
        classes=CLASSES_A,
        slices=(
            slice_(SLICE1, NODE2, POOL1, DRIVER_A, device(DEVICE1), count=2),
            slice_(SLICE2, NODE1, POOL1, DRIVER_A, device(DEVICE2), count=2),
        ),
        expect=(allocation(local(NODE1), r(REQ0, DEVICE2)),),
    ),
    "invalid-pool-is-ok-if-devices-can-be-allocated-from-other": Case(
        claims=ONE_REQUEST,
        classes=CLASSES_A,
        slices=DUPLICATE_POOL,
        expect=(allocation(local(NODE1), r(REQ0, DEVICE2, POOL2)),),
    ),
    "invalid-pool-is-error-if-no-other-device-can-be-allocated": Case(
        claims=ONE_REQUEST,
        allocated=((DRIVER_A, POOL2, DEVICE2),),
        classes=CLASSES_A,
        slices=DUPLICATE_POOL,
        error="invalid resource pools were encountered",
    ),
    "no-allocation-from-incomplete-pools": Case(
        claims=ONE_REQUEST,
        classes=CLASSES_A,
        slices=(slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), count=2),),
    ),
}
