"""The options of ``berth serve`` (what its command line sets)."""

from __future__ import annotations

from dataclasses import dataclass, field

from berth.controllers.colocation_config import ColocationConfig
from berth.controllers.loaning_config import LoaningConfig
from berth.controllers.scaling.config import ScalingConfig
from berth.k8s.binder import AnnotationHook
from berth.k8s.webhook import WebhookOptions

#: Where ``berth serve``'s command line keeps gpu-load-aware's job profiles
#: (berth.k8s.profiles), the least time between two writes, and how many are kept: about
#: 400 bytes each at worst (a 316-character job key), under the API's 1 MiB limit on a
#: ConfigMap.
DEFAULT_CONFIGMAP = "berth-system/berth-gpu-profiles"
DEFAULT_INTERVAL = 30.0
DEFAULT_LIMIT = 2000


@dataclass(slots=True)
class ServeOptions:
    scheduler_name: str = "berth"
    resync: float = 300.0  # seconds between an informer's relists
    watch_timeout: float = 60.0  # seconds a watch request stays open before it is renewed
    bind_concurrency: int = 64  # binds in flight at once
    leader_elect: bool = False
    identity: str = "berth"
    lease_name: str = "berth"
    lease_namespace: str = "berth-system"
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    metrics_port: int | None = None  # None: no HTTP endpoint (0: any free port)
    seed: int = 0
    annotate: list[AnnotationHook] = field(default_factory=list)
    scaling: ScalingConfig | None = None  # a scaling policy for elastic jobs (edl)
    kruise: bool = False  # run OpenKruise's CloneSet, Advanced StatefulSet, BroadcastJob
    #: With ``kruise``: serve the pod webhook and run SidecarSets (None: neither).
    webhook: WebhookOptions | None = None
    kubeflow: bool = False  # run Kubeflow's training jobs (PyTorchJob)
    paddle: bool = False  # run PaddlePaddle EDL's TrainingJobs
    #: Batch resources and BE eviction from usage (berth.k8s.colocation); None: off.
    colocation: ColocationConfig | None = None
    dra: bool = True  # schedule pods' DRA claims (resource.k8s.io/v1)
    workload_api: bool = False  # read the Workload API's PodGroups (scheduling.k8s.io)
    lws: bool = False  # run LeaderWorkerSets
    jobset: bool = False  # run JobSets
    loaning: LoaningConfig | None = None  # lend idle inference nodes to training
    #: Where gpu-load-aware's job profiles are kept (NAMESPACE/NAME; None: in memory only).
    #: berth serve's command line keeps them in berth-system/berth-gpu-profiles by default.
    profiles_configmap: str | None = None
    profiles_interval: float = DEFAULT_INTERVAL  # seconds at least between two writes
    profiles_limit: int = DEFAULT_LIMIT  # jobs kept, the least recently recorded dropped
