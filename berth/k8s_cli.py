"""``berth serve`` and ``berth snapshot``.

The commands live beside the other command-line modules rather than in ``berth.k8s``, whose
package registers every plugin and action when imported: the parser is built for every
``berth`` command, and the Kubernetes backend is imported only when one of these runs.
"""

from __future__ import annotations

import argparse
import logging
import signal
import socket
import sys
from pathlib import Path

from berth.defaults import (
    EDL_MAX_LOAD,
    SCALING_INTERVAL,
    SERVE_SCALING_POLICIES,
    STARVATION_WAIT,
    WEBHOOK_CERT,
    WEBHOOK_KEY,
    WEBHOOK_PORT,
)
from berth.input_failures import EXIT_INPUT
from berth.traces.arguments import positive, positive_seconds, seconds, share


def _configmap_ref(text: str) -> str:
    namespace, _, name = text.partition("/")
    if text != "off" and (not namespace or not name or "/" in name):
        raise argparse.ArgumentTypeError(f"{text!r}: expected NAMESPACE/NAME or off")
    return text


def add_k8s_commands(sub: argparse._SubParsersAction) -> None:
    serve = sub.add_parser(
        "serve", help="schedule a Kubernetes cluster: berth as a secondary scheduler"
    )
    _add_kubeconfig(serve)
    serve.add_argument(
        "--config", type=Path, help="scheduler configuration (YAML; default: the built-in one)"
    )
    serve.add_argument(
        "--scheduler-name", default="berth", help="schedule pods with this schedulerName"
    )
    serve.add_argument(
        "--leader-elect", action="store_true", help="lead through a Lease before scheduling"
    )
    serve.add_argument(
        "--lease-namespace", default="berth-system", help="the Lease's namespace (berth-system)"
    )
    serve.add_argument("--lease-name", default="berth", help="the Lease's name (berth)")
    serve.add_argument("--identity", default=socket.gethostname(), help="this replica's name")
    serve.add_argument(
        "--metrics-port", type=int, default=8080, help="/metrics, /healthz, /readyz (0: any)"
    )
    serve.add_argument(
        "--bind-concurrency", type=int, default=64, help="binds in flight at once (default 64)"
    )
    serve.add_argument(
        "--resync", type=float, default=300.0, help="seconds between relists (default 300)"
    )
    serve.add_argument(
        "--log-level", default="info", choices=["debug", "info", "warning"], help="(default info)"
    )
    serve.add_argument(
        "--scaling",
        choices=SERVE_SCALING_POLICIES,
        help="scale elastic jobs with this policy (default: they grow as room appears; aryl "
        "reads each job's remaining work from its berth.io/progress annotation)",
    )
    serve.add_argument(
        "--scaling-interval",
        type=positive_seconds,
        help=f"seconds between the policy's rounds ({SCALING_INTERVAL:g})",
    )
    serve.add_argument(
        "--max-load-desired",
        type=share,
        help=f"edl: the cluster's load that growth stays within ({EDL_MAX_LOAD})",
    )
    serve.add_argument(
        "--starvation-wait",
        type=_wait,
        help="seconds a gang waits before whole servers are freed for it by taking elastic "
        f"workers above their minimum off, or off ({STARVATION_WAIT:g} with --loaning, else off)",
    )
    serve.add_argument(
        "--kruise",
        action="store_true",
        help="run OpenKruise's CloneSets, BroadcastJobs and SidecarSets (apps.kruise.io/v1alpha1) "
        "and Advanced StatefulSets (apps.kruise.io/v1beta1); the CRDs and RBAC in deploy/kruise/, "
        "the pod webhook in deploy/kruise/webhook/: only where OpenKruise itself is not installed",
    )
    serve.add_argument(
        "--webhook-port",
        type=int,
        help=f"with --kruise: HTTPS port of the pod webhook that injects SidecarSets' sidecars "
        f"({WEBHOOK_PORT}, Kruise's; 0: any)",
    )
    serve.add_argument(
        "--webhook-cert",
        type=Path,
        help=f"with --kruise: the webhook's serving certificate, PEM ({WEBHOOK_CERT}); given, "
        "berth also writes it as the caBundle of berth-mutating-webhook-configuration",
    )
    serve.add_argument(
        "--webhook-key", type=Path, help=f"with --kruise: its private key, PEM ({WEBHOOK_KEY})"
    )
    serve.add_argument(
        "--kubeflow",
        action="store_true",
        help="run Kubeflow's PyTorchJobs (kubeflow.org/v1; the CRD and RBAC in "
        "deploy/kubeflow/): only where Kubeflow's training operator is not installed",
    )
    serve.add_argument(
        "--paddle",
        action="store_true",
        help="run PaddlePaddle EDL's TrainingJobs (paddlepaddle.org/v1; the CRD and RBAC in "
        "deploy/paddle/): only where EDL's controller is not installed",
    )
    serve.add_argument(
        "--colocation",
        nargs="?",
        const="",
        metavar="FILE",
        help="write nodes' batch resources from usage and evict BE pods as the simulator's "
        "colocation does, with the simulation.colocation section of FILE (default: of "
        "--config; Koordinator's defaults without one); see docs/kubernetes.md",
    )
    serve.add_argument(
        "--no-dra",
        dest="dra",
        action="store_false",
        help="do not watch DRA objects (resource.k8s.io/v1): for API servers that do not "
        "serve that API (a pod's resource claims are then not allocated)",
    )
    serve.add_argument(
        "--workload-api",
        action="store_true",
        help="gang-schedule the pods of the Workload API's PodGroups (scheduling.k8s.io/v1beta1; "
        "Kubernetes 1.37 with the GenericWorkload feature gate)",
    )
    serve.add_argument(
        "--lws",
        action="store_true",
        help="run LeaderWorkerSets (leaderworkerset.x-k8s.io/v1; the CRD and RBAC in "
        "deploy/lws/): only where LWS's own controller is not installed",
    )
    serve.add_argument(
        "--jobset",
        action="store_true",
        help="run JobSets (jobset.x-k8s.io/v1alpha2; the CRD and RBAC in deploy/jobset/): "
        "only where JobSet's own controller is not installed",
    )
    serve.add_argument(
        "--loaning",
        type=Path,
        metavar="FILE",
        help="lend idle inference nodes to training and take them back for inference: FILE "
        "holds a simulation.loaning section (docs/kubernetes.md#capacity-loaning)",
    )
    serve.add_argument(
        "--profiles-configmap",
        type=_configmap_ref,
        metavar="NAMESPACE/NAME",
        help="where gpu-load-aware's per-job GPU profiles are kept across restarts "
        "(berth-system/berth-gpu-profiles), or off; see docs/kubernetes.md",
    )
    serve.add_argument(
        "--profiles-interval",
        type=positive_seconds,
        metavar="SECONDS",
        help="write the profiles' ConfigMap at most this often (30)",
    )
    serve.add_argument(
        "--profiles-limit",
        type=positive(int),
        metavar="JOBS",
        help="jobs whose profiles are kept, the least recently finished dropped first (2000)",
    )
    serve.set_defaults(handler=_serve)

    snap = sub.add_parser(
        "snapshot", help="write the live cluster as manifests berth simulate runs"
    )
    _add_kubeconfig(snap)
    snap.add_argument("--out", type=Path, required=True, help="output directory")
    snap.set_defaults(handler=_snapshot)


def _add_kubeconfig(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kubeconfig", help="kubeconfig file (default: in-cluster, then $KUBECONFIG)"
    )


def _client(kubeconfig: str | None):  # type: ignore[no-untyped-def]
    from kubernetes.config import ConfigException

    from berth.k8s.client import KubeClient, load_configuration

    try:
        return KubeClient(load_configuration(kubeconfig))
    except (ConfigException, OSError, ValueError) as exc:
        where = kubeconfig or "in-cluster service account or default kubeconfig"
        print(f"error: {where}: cannot load a Kubernetes configuration ({exc})", file=sys.stderr)
        return None


def _wait(text: str) -> float:
    """argparse type: seconds >= 0 (90s, 2h) or off (never)."""
    if text == "off":
        return float("inf")
    value = seconds(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} must be >= 0 or off")
    return value


def _serve(args: argparse.Namespace) -> int:
    # Importing berth.k8s registers the plugins and actions the Framework below looks up.
    from berth.controllers.loaning_config import LoaningConfigError
    from berth.controllers.scaling.config import ScalingConfig
    from berth.framework.config import ConfigError
    from berth.framework.config_files import load_config
    from berth.framework.framework import Framework
    from berth.framework.plugin import PluginArgumentError
    from berth.k8s import logs
    from berth.k8s.loaning import read_config
    from berth.k8s.options import DEFAULT_CONFIGMAP, DEFAULT_INTERVAL, DEFAULT_LIMIT
    from berth.k8s.server import ServeOptions, Server
    from berth.k8s.webhook import WebhookError

    try:
        config = load_config(args.config)
        Framework(config)
        loaning = read_config(args.loaning, config.period) if args.loaning else None
    except (ConfigError, PluginArgumentError, LoaningConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    tuned = [
        flag
        for flag, value in (
            ("--scaling-interval", args.scaling_interval),
            ("--max-load-desired", args.max_load_desired),
            ("--starvation-wait", args.starvation_wait),
        )
        if value is not None
    ]
    if tuned and not args.scaling:
        print(f"error: {tuned[0]} needs --scaling (a policy to tune)", file=sys.stderr)
        return EXIT_INPUT
    webhook = _webhook(args)
    if isinstance(webhook, str):
        print(f"error: {webhook}", file=sys.stderr)
        return EXIT_INPUT
    for warning in config.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    colocation = None
    if args.colocation is not None:
        from berth.controllers.colocation_config import ColocationConfig, ColocationConfigError

        try:
            source = config if not args.colocation else load_config(Path(args.colocation))
            raw = source.simulation.get("colocation")
            if args.colocation and "colocation" not in source.simulation:
                raise ColocationConfigError(
                    f"{args.colocation}: simulation.colocation: missing (the section "
                    "berth simulate reads)"
                )
            colocation = ColocationConfig.from_raw(raw, source.source)
        except (ConfigError, ColocationConfigError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_INPUT
    client = _client(args.kubeconfig)
    if client is None:
        return EXIT_INPUT
    logs.setup(args.log_level)
    options = ServeOptions(
        scheduler_name=args.scheduler_name,
        leader_elect=args.leader_elect,
        identity=args.identity,
        lease_name=args.lease_name,
        lease_namespace=args.lease_namespace,
        metrics_port=args.metrics_port,
        bind_concurrency=args.bind_concurrency,
        resync=args.resync,
        kruise=args.kruise,
        webhook=webhook,
        kubeflow=args.kubeflow,
        paddle=args.paddle,
        colocation=colocation,
        dra=args.dra,
        workload_api=args.workload_api,
        lws=args.lws,
        jobset=args.jobset,
        loaning=loaning,
        profiles_configmap=(
            None
            if args.profiles_configmap == "off"
            else args.profiles_configmap or DEFAULT_CONFIGMAP
        ),
        profiles_interval=args.profiles_interval or DEFAULT_INTERVAL,
        profiles_limit=args.profiles_limit or DEFAULT_LIMIT,
        scaling=(
            ScalingConfig(
                args.scaling,
                args.scaling_interval or SCALING_INTERVAL,
                args.max_load_desired or EDL_MAX_LOAD,
                args.starvation_wait,
            )
            if args.scaling
            else None
        ),
    )
    try:
        server = Server(client, config, options)
    except WebhookError as exc:  # its port taken, or its certificate gone since the check
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: server.stop())
    logging.getLogger("berth.k8s").info(
        "serving", extra={"api": client.host, "scheduler_name": args.scheduler_name}
    )
    server.run()
    lost = server.elector is not None and server.elector.lost.is_set()
    return 2 if lost else 0


def _webhook(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    """The pod webhook's options (None without --kruise), or what is wrong with them."""
    from berth.k8s.ca_bundle import CONFIGURATION
    from berth.k8s.webhook import WebhookError, WebhookOptions, server_context

    given = {"--webhook-port": args.webhook_port, "--webhook-cert": args.webhook_cert}
    given["--webhook-key"] = args.webhook_key
    if not args.kruise:
        flags = [flag for flag, value in given.items() if value is not None]
        return f"{flags[0]} needs --kruise (the webhook injects SidecarSets)" if flags else None
    options = WebhookOptions(
        port=WEBHOOK_PORT if args.webhook_port is None else args.webhook_port,
        cert=args.webhook_cert or Path(WEBHOOK_CERT),
        key=args.webhook_key or Path(WEBHOOK_KEY),
        # a certificate named on the command line also goes into the configuration's caBundle
        configuration=CONFIGURATION if args.webhook_cert is not None else None,
    )
    if not 0 <= options.port <= 65535:
        return f"--webhook-port {options.port}: expected a port number (0 to 65535)"
    try:
        server_context(options.cert, options.key)
    except WebhookError as exc:
        return f"{exc}: the SidecarSet webhook of --kruise needs a serving certificate"
    return options


def _snapshot(args: argparse.Namespace) -> int:
    from berth.k8s.client import ApiError, ConnectionLost
    from berth.k8s.snapshot import take, write

    client = _client(args.kubeconfig)
    if client is None:
        return EXIT_INPUT
    client.retries = 2
    try:
        snap = take(client)
    except (ApiError, ConnectionLost) as exc:
        print(f"error: {client.host}: {exc}", file=sys.stderr)
        return EXIT_INPUT
    finally:
        client.close()
    cluster, workload = write(snap, args.out)
    nodes = sum(doc["kind"] == "Node" for doc in snap.cluster)
    for note in snap.notes:
        print(f"note: {note}", file=sys.stderr)
    print(
        f"{nodes} nodes and {len(snap.cluster) - nodes} other objects → {cluster}; "
        f"{len(snap.workload)} objects → {workload}\n"
        f"run it: berth simulate --cluster {cluster} --workload {workload}"
    )
    return 0
