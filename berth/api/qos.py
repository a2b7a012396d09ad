"""Koordinator's QoS classes, priority bands and batch resources.

Colocation sorts pods in two ways. The QoS class (label ``koordinator.sh/qosClass``) says how
a pod is treated on its node: LSE and LSR get cores of their own, LS shares the pool, BE runs
on what the others leave and is suppressed or evicted when they need it back, SYSTEM is the
node's own daemons. The priority class (label ``koordinator.sh/priority-class``, else the band
``spec.priority`` falls in) says whose usage counts against the batch resources: koord-prod and
koord-mid pods' usage is subtracted, koord-batch and koord-free pods live on what is left.

BE pods request ``kubernetes.io/batch-cpu`` (millicores, as Koordinator counts it: ``1000`` is
one core) and ``kubernetes.io/batch-memory`` (bytes) instead of cpu and memory.
"""

from __future__ import annotations

from enum import StrEnum

from berth.resources import CPU, MEMORY

QOS_LABEL = "koordinator.sh/qosClass"
PRIORITY_CLASS_LABEL = "koordinator.sh/priority-class"
BATCH_CPU = "kubernetes.io/batch-cpu"
BATCH_MEMORY = "kubernetes.io/batch-memory"


class QoS(StrEnum):
    LSE = "LSE"
    LSR = "LSR"
    LS = "LS"
    BE = "BE"
    SYSTEM = "SYSTEM"


class PriorityBand(StrEnum):
    PROD = "koord-prod"
    MID = "koord-mid"
    BATCH = "koord-batch"
    FREE = "koord-free"


#: Koordinator's priority value ranges, inclusive.
BANDS: tuple[tuple[PriorityBand, int, int], ...] = (
    (PriorityBand.PROD, 9000, 9999),
    (PriorityBand.MID, 7000, 7999),
    (PriorityBand.BATCH, 5000, 5999),
    (PriorityBand.FREE, 3000, 3999),
)

#: Bands whose pods run on reclaimed resources (their usage is not subtracted from batch).
LOW_BANDS = frozenset({PriorityBand.BATCH, PriorityBand.FREE})


def band_of_priority(priority: int) -> PriorityBand | None:
    """The band ``priority`` falls in, None outside every band."""
    for band, low, high in BANDS:
        if low <= priority <= high:
            return band
    return None


def qos_of(labels: dict[str, str], requests: dict[str, int]) -> QoS:
    """The pod's QoS class: its label, else what Koordinator derives from the Kubernetes QoS
    class (a pod asking no cpu and no memory is BestEffort, hence BE; any other LS)."""
    value = labels.get(QOS_LABEL)
    if value is not None and value in QoS.__members__:
        return QoS.__members__[value]
    if not requests.get(CPU) and not requests.get(MEMORY):
        return QoS.BE
    return QoS.LS


def band_of(labels: dict[str, str], priority: int, qos: QoS) -> PriorityBand:
    """The pod's priority band: its label, else its priority's band, else its QoS class's
    default (BE: koord-batch, every other class: koord-prod)."""
    value = labels.get(PRIORITY_CLASS_LABEL)
    if value is not None and value in PriorityBand._value2member_map_:
        return PriorityBand(value)
    band = band_of_priority(priority)
    if band is not None:
        return band
    return PriorityBand.BATCH if qos == QoS.BE else PriorityBand.PROD


def check_qos_label(labels: dict[str, str]) -> str | None:
    """What is wrong with a pod's QoS or priority-class label, if anything."""
    value = labels.get(QOS_LABEL)
    if value is not None and value not in QoS.__members__:
        return f"{QOS_LABEL}: {value!r} is not one of {', '.join(QoS)}"
    value = labels.get(PRIORITY_CLASS_LABEL)
    if value is not None and value not in PriorityBand._value2member_map_:
        return f"{PRIORITY_CLASS_LABEL}: {value!r} is not one of {', '.join(PriorityBand)}"
    return None
