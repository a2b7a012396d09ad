"""Defaults and names that the command line shows in its help but that belong to parts of
berth slow to import: the simulator, the scaling policies, the Kubernetes backend and the
benchmark, whose packages load the plugins, the controllers and numpy. They are defined here,
in a module that imports nothing, so that building the parser loads none of those parts; the
modules that use them import them from here."""

#: The most pods a run builds unless told otherwise (``--max-pods``): about 5 GB of memory at
#: the roughly 2.5 KB a simulated pod costs (objects, events, accounting).
DEFAULT_MAX_PODS = 2_000_000

#: ``berth fill``: the paper's workload size, GPU requests of 130% of the cluster's GPUs.
FILL_TARGET = 1.3
#: ``berth fill``: the placement policies of the paper (and berth's own), as scheduler
#: configurations.
FILL_POLICIES = ("random", "dotprod", "gpu-clustering", "gpu-packing", "gpu-bestfit", "fgd")

#: ``berth bench``: the shapes of the pending pods.
BENCH_SCENARIOS = (
    "basic",
    "spread",
    "anti-affinity",
    "gang",
    "mixed",
    "gpu-share",
    "topology",
    "dra",
)

#: Scaling of elastic jobs: seconds between a policy's rounds (EDL's own loop runs every 30 s).
SCALING_INTERVAL = 60.0
#: The edl scaling policy's ``maxLoadDesired``: the cluster's load that growth stays within.
EDL_MAX_LOAD = 0.97
#: Seconds a gang waits before a scaling policy frees whole servers for it, taking elastic
#: workers above their minimum off (``berth.controllers.scaling.starvation``), when capacity
#: loaning is on and ``starvationWait`` (``--starvation-wait``) is not set.
STARVATION_WAIT = 7200.0
#: The scaling policies ``berth serve`` can run (aryl reads each job's remaining work from its
#: trainer's berth.io/progress, or estimates it: berth.k8s.remaining).
SERVE_SCALING_POLICIES = ("edl", "aryl")

#: ``berth serve --kruise``: the pod webhook's port (Kruise's) and where deploy/kruise/webhook/
#: mounts its serving certificate and key (a kubernetes.io/tls Secret).
WEBHOOK_PORT = 9876
WEBHOOK_CERT = "/etc/berth-webhook/tls.crt"
WEBHOOK_KEY = "/etc/berth-webhook/tls.key"
