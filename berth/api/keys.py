"""The well-known label and annotation names berth reads and writes, and the values they take.

Most are names other systems define (Kubernetes, Volcano, OpenKruise, Koordinator, NVIDIA's GPU
feature discovery); the ``berth.io/`` ones are berth's own. They live together, apart from the
objects, because manifest parsers, controllers, the simulator and scheduler plugins all share
them, and a name spelled in one place cannot drift. ``gpu_groups`` is here too: it reads the
value of one of these annotations.
"""

from __future__ import annotations

HOSTNAME_LABEL = "kubernetes.io/hostname"
ZONE_LABEL = "topology.kubernetes.io/zone"
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"  # the GPU model (NVIDIA's GPU feature discovery)
GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"
QUEUE_NAME_ANNOTATION = "scheduling.volcano.sh/queue-name"
PREEMPTABLE_ANNOTATION = "volcano.sh/preemptable"
SLA_WAITING_TIME_ANNOTATION = "sla-waiting-time"
SUBMIT_TIME_ANNOTATION = "berth.io/submit-time"
DURATION_ANNOTATION = "berth.io/duration"
UTILIZATION_ANNOTATION = "berth.io/utilization"
FAIL_AFTER_ANNOTATION = "berth.io/fail-after"
EXIT_CODE_ANNOTATION = "berth.io/exit-code"
FAIL_PROBABILITY_ANNOTATION = "berth.io/fail-probability"
#: GPU memory per device (on nodes) or needed on each device a pod uses, MiB.
GPU_MEMORY_ANNOTATION = "berth.io/gpu-memory"
#: A node's GPU interconnect islands (NVLink / NVSwitch domains): device indices, comma-separated
#: within a group, groups separated by semicolons ("0,1,2,3;4,5,6,7"). Without it a node's
#: devices form one group; a device it does not list is a group of its own.
GPU_TOPOLOGY_ANNOTATION = "berth.io/gpu-topology"


def gpu_groups(text: str) -> tuple[tuple[int, ...], ...]:
    """The device groups of a ``berth.io/gpu-topology`` annotation; ValueError says what is
    wrong with it."""
    groups = []
    seen: set[int] = set()
    for part in text.split(";"):
        if not part.strip():
            raise ValueError("an empty group (expected e.g. 0,1,2,3;4,5,6,7)")
        group = []
        for item in part.split(","):
            try:
                device = int(item.strip())
            except ValueError:
                raise ValueError(
                    f"{item.strip()!r} is not a device index (expected e.g. 0,1,2,3;4,5,6,7)"
                ) from None
            if device < 0:
                raise ValueError(f"device {device}: indices start at 0")
            if device in seen:
                raise ValueError(f"device {device} is in two groups")
            seen.add(device)
            group.append(device)
        groups.append(tuple(group))
    return tuple(groups)


# What Volcano's job controller puts on the pods it creates.
JOB_NAME_LABEL = "volcano.sh/job-name"
TASK_NAME_LABEL = "volcano.sh/task-spec"
TASK_INDEX_ANNOTATION = "volcano.sh/task-index"
# What workload controllers put on their pods (Kubernetes' and OpenKruise's keys).
POD_TEMPLATE_HASH_LABEL = "pod-template-hash"
REVISION_LABEL = "controller-revision-hash"
DELETION_COST_ANNOTATION = "controller.kubernetes.io/pod-deletion-cost"
#: Seconds OpenKruise waits, the pod unready, before it changes a pod's images in place.
INPLACE_GRACE_ANNOTATION = "apps.kruise.io/inplace-update-grace"
TOPOLOGY_SOCKETS = "berth.io/cpu-sockets"
TOPOLOGY_CORES = "berth.io/cpu-cores-per-socket"
TOPOLOGY_THREADS = "berth.io/cpu-threads-per-core"
TOPOLOGY_NUMA = "berth.io/cpu-numa-nodes-per-socket"
#: Koordinator's pod resource spec (``preferredCPUBindPolicy``) and status (``cpuset``), and
#: the node label choosing how NUMA nodes are filled.
RESOURCE_SPEC_ANNOTATION = "scheduling.koordinator.sh/resource-spec"
RESOURCE_STATUS_ANNOTATION = "scheduling.koordinator.sh/resource-status"
CPU_BIND_POLICY_KEY = "preferredCPUBindPolicy"
NUMA_STRATEGY_LABEL = "node.koordinator.sh/numa-allocate-strategy"
FULL_PCPUS = "FullPCPUs"
SPREAD_BY_PCPUS = "SpreadByPCPUs"
BIND_POLICIES = (FULL_PCPUS, SPREAD_BY_PCPUS)
MOST_ALLOCATED = "MostAllocated"
LEAST_ALLOCATED = "LeastAllocated"
NUMA_STRATEGIES = (MOST_ALLOCATED, LEAST_ALLOCATED)
DEFAULT_SCHEDULER = "berth"
DEFAULT_QUEUE = "default"
# Volcano's hierarchical DRF reads a queue's place in the tree from these annotations.
HIERARCHY_ANNOTATION = "volcano.sh/hierarchy"
HIERARCHY_WEIGHTS_ANNOTATION = "volcano.sh/hierarchy-weights"
# Pod and PriorityClass preemptionPolicy values.
PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
PREEMPT_NEVER = "Never"
# Capacity loaning's pools: the label (and taint key) naming a node's pool, and its values.
POOL_LABEL = "berth.io/pool"
INFERENCE_POOL = "inference"
LENT_POOL = "lent"
