# ruff: noqa: E501  (upstream case names are longer than a line)
"""Upstream cases of consumable capacity (devices with ``allowMultipleAllocations`` shared by
several allocations, each consuming part of their capacities), ported as facts."""

from __future__ import annotations

from decimal import Decimal

from berth.api.dra import CapacityPolicy
from tests.cluster.dra_tables import (
    CAPACITY0,
    CLAIM0,
    CLAIM1,
    CLASS_A,
    DEVICE1,
    DEVICE2,
    DRIVER_A,
    FOUR,
    NODE1,
    ONE,
    POOL1,
    RANGE_POLICY,
    REQ0,
    REQ1,
    SLICE1,
    SUB0,
    SUB1,
    THREE,
    TWO,
    ZERO,
    Case,
    all_request,
    allocation,
    claim,
    cls,
    cls_multi,
    device,
    first_available,
    local,
    match,
    request,
    result,
    slice_,
    sub,
    valid_values,
)

POINT_TWO, POINT_THREE = Decimal("0.2"), Decimal("0.3")
#: withFractionalCapacityRequestPolicyRange: default 200m, min 200m, step 100m, max 1.
FRACTIONAL = CapacityPolicy(default=POINT_TWO, min=POINT_TWO, step=Decimal("0.1"), max=ONE)
CAP_SELECTOR = f'device.attributes["{DRIVER_A}"].stringAttribute == "cap"'
FALLBACK_SELECTOR = f'device.attributes["{DRIVER_A}"].stringAttribute == "fb"'
MULTI = (cls_multi(CLASS_A, DRIVER_A, True),)
DEDICATED = (cls_multi(CLASS_A, DRIVER_A, False),)
ANY_A = (cls(CLASS_A, DRIVER_A),)
CAPACITY1 = "capacity-1"
HUGE = Decimal(10**21)


def on_node(*devices) -> tuple:
    return (slice_(SLICE1, NODE1, POOL1, DRIVER_A, *devices),)


def shared(name: str, value: Decimal | None = None, policy=None, attributes=None, **caps):
    """A device with ``allowMultipleAllocations`` and ``capacity-0`` (or the capacities named)."""
    capacity = caps or ({CAPACITY0: value} if value is not None else {})
    return device(name, capacity, attributes, multi=True, policy=policy)


def ranged(name: str, value: Decimal, **kw):
    """withCapacityRequestPolicyRange: default 2, min 2, step 2, max 4."""
    return shared(name, value, RANGE_POLICY, **kw)


def took(req: str, dev: str, amount: Decimal):
    return result(req, DRIVER_A, POOL1, dev, {CAPACITY0: amount})


def alone(*results):
    return allocation(local(NODE1), *results)


def two_claims(asked: Decimal | None = None) -> tuple:
    return (
        claim(CLAIM0, request(REQ0, CLASS_A, capacity=asked)),
        claim(CLAIM1, request(REQ0, CLASS_A, capacity=asked)),
    )


def one_claim(asked: Decimal | None = None, **kw) -> tuple:
    return (claim(CLAIM0, request(REQ0, CLASS_A, capacity=asked, **kw)),)


def all_claim(asked: Decimal) -> tuple:
    return (claim(CLAIM0, all_request(REQ0, CLASS_A, capacity=asked)),)


def one_and_all(asked: Decimal) -> tuple:
    return (
        claim(
            CLAIM0,
            request(REQ0, CLASS_A, capacity=asked),
            all_request(REQ1, CLASS_A, capacity=asked),
        ),
    )


CASES: dict[str, Case] = {
    # claim-0 takes all of device-1's capacity; claim-1's first alternative (all devices with
    # "cap") is refused on capacity after its constraint saw device-1, and its fallback must
    # still match device-2's different value.
    "consumable-capacity-rejection-rolls-back-constraints": Case(
        claims=(
            claim(CLAIM0, request(REQ0, CLASS_A, 1, CAP_SELECTOR, capacity=TWO)),
            claim(
                CLAIM1,
                first_available(
                    REQ0,
                    sub(SUB0, CLASS_A, 1, CAP_SELECTOR, mode="All", capacity=TWO),
                    sub(SUB1, CLASS_A, 1, FALLBACK_SELECTOR),
                ),
                constraints=(match(f"{DRIVER_A}/stringAttribute"),),
            ),
        ),
        classes=ANY_A,
        slices=on_node(
            shared(DEVICE1, TWO, attributes={"stringAttribute": "cap"}),
            device(DEVICE2, None, {"stringAttribute": "fb"}),
        ),
        expect=(
            alone(took(REQ0, DEVICE1, TWO)),
            alone(result(f"{REQ0}/{SUB1}", DRIVER_A, POOL1, DEVICE2)),
        ),
    ),
    "consumable-capacity-negative-request-aborts": Case(
        claims=one_claim(Decimal(-5)),
        classes=MULTI,
        slices=on_node(shared(DEVICE1, Decimal(10))),
        error="negative",
    ),
    # 250m lies between min 200m and the next step 300m: rounded up to 300m.
    "consumable-capacity-fractional-range-gate-enabled-round-up": Case(
        claims=one_claim(Decimal("0.25")),
        classes=MULTI,
        slices=on_node(shared(DEVICE1, ONE, FRACTIONAL)),
        expect=(alone(took(REQ0, DEVICE1, POINT_THREE)),),
    ),
    "consumable-capacity-multi-allocatable-device-with-missing-capacity-request": Case(
        claims=one_claim(ONE),
        classes=ANY_A,
        slices=on_node(shared(DEVICE1, **{CAPACITY1: ONE})),
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-with-missing-capacity-request": Case(
        claims=all_claim(ONE),
        classes=MULTI,
        slices=on_node(shared(DEVICE1, **{CAPACITY1: ONE})),
    ),
    "consumable-capacity-multi-allocatable-device-without-policy-without-capacity-request-block": Case(
        claims=two_claims(),
        classes=MULTI,
        slices=on_node(shared(DEVICE1, TWO)),
    ),
    "consumable-capacity-multi-allocatable-device-without-policy-with-capacity-request": Case(
        claims=two_claims(ONE),
        classes=MULTI,
        slices=on_node(shared(DEVICE1, TWO)),
        expect=(alone(took(REQ0, DEVICE1, ONE)), alone(took(REQ0, DEVICE1, ONE))),
    ),
    "consumable-capacity-multi-allocatable-device-with-policy-without-capacity-request": Case(
        claims=two_claims(),
        classes=MULTI,
        slices=on_node(ranged(DEVICE1, FOUR)),
        expect=(alone(took(REQ0, DEVICE1, TWO)), alone(took(REQ0, DEVICE1, TWO))),
    ),
    "consumable-capacity-multi-allocatable-device-with-zero-request-policy": Case(
        claims=two_claims(),
        classes=MULTI,
        slices=on_node(shared(DEVICE1, ONE, valid_values(ZERO))),
        expect=(alone(took(REQ0, DEVICE1, ZERO)), alone(took(REQ0, DEVICE1, ZERO))),
    ),
    "consumable-capacity-multi-allocatable-device-violates-zero-request-policy": Case(
        claims=one_claim(ONE),
        classes=MULTI,
        slices=on_node(shared(DEVICE1, ONE, valid_values(ZERO))),
    ),
    "consumable-capacity-multi-allocatable-device-with-range-policy-with-capacity-request": Case(
        claims=two_claims(ONE),
        classes=MULTI,
        slices=on_node(ranged(DEVICE1, FOUR)),
        expect=(alone(took(REQ0, DEVICE1, TWO)), alone(took(REQ0, DEVICE1, TWO))),
    ),
    "consumable-capacity-multi-allocatable-device-with-range-policy-step": Case(
        claims=one_claim(THREE),
        classes=MULTI,
        slices=on_node(ranged(DEVICE1, FOUR)),
        expect=(alone(took(REQ0, DEVICE1, FOUR)),),
    ),
    "consumable-capacity-multi-allocatable-device-with-valid-values-policy": Case(
        claims=one_claim(TWO),
        classes=MULTI,
        slices=on_node(shared(DEVICE1, FOUR, valid_values(ONE, TWO))),
        expect=(alone(took(REQ0, DEVICE1, TWO)),),
    ),
    "consumable-capacity-multi-allocatable-device-with-valid-values-policy-round-up": Case(
        claims=one_claim(TWO),
        classes=MULTI,
        slices=on_node(shared(DEVICE1, THREE, valid_values(ONE, THREE))),
        expect=(alone(took(REQ0, DEVICE1, THREE)),),
    ),
    "consumable-capacity-multi-allocatable-device-with-exceeded-consumable-capacity-request": Case(
        claims=(
            claim(CLAIM0, request(REQ0, CLASS_A, capacity=ONE)),
            claim(CLAIM1, request(REQ0, CLASS_A, capacity=TWO)),
        ),
        classes=MULTI,
        slices=on_node(ranged(DEVICE1, TWO)),
    ),
    "consumable-capacity-multi-allocatable-device-with-request-over-max-sharing-policy": Case(
        claims=one_claim(Decimal(6)),
        classes=MULTI,
        slices=on_node(ranged(DEVICE1, Decimal(10))),
    ),
    "consumable-capacity-with-multi-allocatable-device-backtrack": Case(
        claims=(
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, capacity=TWO),
                request(REQ1, CLASS_A, capacity=TWO),
                constraints=(match(f"{DRIVER_A}/stringAttribute"),),
            ),
            claim(CLAIM1, request(REQ0, CLASS_A, capacity=TWO)),
        ),
        classes=ANY_A,
        slices=on_node(
            ranged(DEVICE2, TWO, attributes={"stringAttribute": "stringAttributeValue1"}),
            ranged(DEVICE1, FOUR, attributes={"stringAttribute": "stringAttributeValue2"}),
        ),
        expect=(
            alone(took(REQ0, DEVICE1, TWO), took(REQ1, DEVICE1, TWO)),
            alone(took(REQ0, DEVICE2, TWO)),
        ),
    ),
    "consumable-capacity-multi-allocatable-device-with-subrequest": Case(
        claims=(
            claim(
                CLAIM0,
                first_available(
                    REQ0,
                    sub(SUB0, CLASS_A, capacity=FOUR),
                    sub(SUB1, CLASS_A, capacity=TWO),
                    sub(SUB1, CLASS_A),
                ),
            ),
        ),
        classes=MULTI,
        slices=on_node(ranged(DEVICE1, TWO)),
        expect=(alone(took(f"{REQ0}/{SUB1}", DEVICE1, TWO)),),
    ),
    "consumable-capacity-multi-allocatable-device-with-no-available-consumable-capacity": Case(
        claims=one_claim(TWO),
        consumed={(DRIVER_A, POOL1, DEVICE1): {CAPACITY0: TWO}},
        classes=MULTI,
        slices=on_node(ranged(DEVICE1, TWO)),
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-filter-out-no-capacity": Case(
        claims=all_claim(TWO),
        classes=MULTI,
        slices=on_node(shared(DEVICE1, TWO), shared(DEVICE2)),
        expect=(alone(took(REQ0, DEVICE1, TWO)),),
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-filter-out-insufficient-capacity": Case(
        claims=all_claim(TWO),
        classes=MULTI,
        slices=on_node(shared(DEVICE1, TWO), shared(DEVICE2, ONE)),
        expect=(alone(took(REQ0, DEVICE1, TWO)),),
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-sufficient": Case(
        claims=one_and_all(ONE),
        classes=ANY_A,
        slices=on_node(shared(DEVICE1, TWO), shared(DEVICE2, ONE)),
        expect=(
            alone(
                took(REQ0, DEVICE1, ONE),
                took(REQ1, DEVICE1, ONE),
                took(REQ1, DEVICE2, ONE),
            ),
        ),
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-sufficient": Case(
        claims=all_claim(ONE),
        consumed={(DRIVER_A, POOL1, DEVICE1): {CAPACITY0: ONE}},
        classes=ANY_A,
        slices=on_node(shared(DEVICE1, TWO), shared(DEVICE2, ONE)),
        expect=(alone(took(REQ0, DEVICE1, ONE), took(REQ0, DEVICE2, ONE)),),
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-insufficient": Case(
        claims=one_and_all(ONE),
        classes=ANY_A,
        slices=on_node(shared(DEVICE1, ONE), shared(DEVICE2, ONE)),
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-insufficient": Case(
        claims=all_claim(ONE),
        consumed={(DRIVER_A, POOL1, DEVICE1): {CAPACITY0: ONE}},
        classes=ANY_A,
        slices=on_node(shared(DEVICE1, ONE), shared(DEVICE2, ONE)),
    ),
    "consumable-capacity-dedicated-device-with-consumable-capacity-request": Case(
        claims=one_claim(ONE),
        classes=DEDICATED,
        slices=on_node(device(DEVICE1, {CAPACITY0: ONE})),
        expect=(alone(result(REQ0, DRIVER_A, POOL1, DEVICE1)),),
    ),
    "consumable-capacity-dedicated-device-with-multiple-consumable-capacity-request": Case(
        claims=two_claims(ONE),
        classes=DEDICATED,
        slices=on_node(device(DEVICE1, {CAPACITY0: TWO}, policy=RANGE_POLICY)),
    ),
    "consumable-capacity-requests-are-not-modified": Case(
        claims=(
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, capacity=TWO),
                request(REQ1, CLASS_A, capacity=HUGE),
            ),
        ),
        classes=ANY_A,
        slices=on_node(
            device(
                DEVICE1,
                multi=True,
                policy=CapacityPolicy(default=HUGE, min=TWO),
                capacity={CAPACITY0: HUGE + 2},
            )
        ),
        expect=(alone(took(REQ0, DEVICE1, TWO), took(REQ1, DEVICE1, HUGE)),),
    ),
    "allow-multiple-allocations-exclude-multi-allocatable-device-by-class-selector": Case(
        claims=one_claim(ONE),
        classes=DEDICATED,
        slices=on_node(shared(DEVICE1, ONE)),
    ),
    "allow-multiple-allocations-not-allocate-multi-allocatable-device-which-already-dedicated": Case(
        claims=one_claim(ONE),
        allocated=((DRIVER_A, POOL1, DEVICE1),),
        classes=MULTI,
        slices=on_node(ranged(DEVICE1, TWO)),
    ),
    "allow-multiple-allocations-not-allocate-dedicated-device-which-change-from-multi-allocatable": Case(
        claims=one_claim(ONE),
        consumed={(DRIVER_A, POOL1, DEVICE1): {CAPACITY0: ONE}},
        classes=MULTI,
        slices=on_node(device(DEVICE1, {CAPACITY0: TWO}, policy=RANGE_POLICY)),
    ),
}
