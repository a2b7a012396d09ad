"""The public traces ``berth trace get`` can fetch: where each is published, its checksum,
format, license and how to cite it.

A name stands for one file berth reads (``itp-cluster04``, ``openb-default``); a set name
(``itp``, ``openb``, ``helios``, ...) for several. Each file comes from the address its
publisher serves it at, pinned to a commit where the publisher is a git repository, so that the
bytes, and with them the checksum, cannot change under the name. A checksum is recorded only
where it was established: computed from the published bytes, or published with them by the
trace's authors (the comment at each entry says which). Where none could be, it is None and
the download is reported as unverified rather than given a checksum nobody has seen.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from berth.traces.errors import TraceError


class FetchError(TraceError):
    """A named trace that cannot be had: an unknown name, or a download that failed."""


@dataclass(frozen=True, slots=True)
class Dataset:
    """A published trace collection: what the user agrees to and should cite."""

    title: str
    home: str
    license: str
    citation: str


@dataclass(frozen=True, slots=True)
class Download:
    """A file as its publisher serves it: a trace itself, or an archive holding traces."""

    url: str
    path: str  # in the cache, and on a mirror: FOLDER/FILE
    sha256: str | None
    size: int | None  # bytes, when known exactly
    published_size: str = ""  # the publisher's rounded figure, when the exact one is unknown

    @property
    def archive(self) -> str | None:
        """``tar.gz`` or ``zip`` for an archive to extract, None for a file used as it is."""
        for suffix in ("tar.gz", "zip"):
            if self.path.endswith("." + suffix):
                return suffix
        return None


@dataclass(frozen=True, slots=True)
class Trace:
    """One file berth reads, by name."""

    name: str
    about: str
    format: str  # a berth.traces.formats name
    dataset: Dataset
    download: Download
    path: str  # in the cache: FOLDER/FILE (the publisher's file name, which formats detect)
    #: For a file inside an archive: its path there, or the end of it where the archive's
    #: layout is not known (``batch_task.csv`` matches ``data/batch_task.csv``).
    member: str | None = None
    sha256: str | None = None  # of an archive member, checked after extraction
    size: int | None = None  # of an archive member
    #: Files read beside this one (a node list beside a pod list), fetched with it.
    companions: tuple[str, ...] = ()

    @property
    def verified(self) -> bool:
        """Whether what is downloaded for it is checked against a known checksum."""
        return self.download.sha256 is not None


def _github(repo: str, commit: str, path: str) -> str:
    return f"https://raw.githubusercontent.com/{repo}/{commit}/{path}"


_OSS = "https://aliopentrace.oss-cn-beijing.aliyuncs.com"
_ALIBABA_HOME = "https://github.com/alibaba/clusterdata"
_ALIBABA_TERMS = "research use"  # "for research or study purpose", says its README
_CC_BY = "CC-BY-4.0"


def _file(name: str, about: str, fmt: str, dataset: Dataset, download: Download, **kw) -> Trace:
    """A trace that is downloaded as it is."""
    return Trace(name, about, fmt, dataset, download, download.path, **kw)


# -- Microsoft ITP ---------------------------------------------------------------------------
# The archive's sha256 and every member's were computed from the bytes of the repository's blob
# at the pinned commit; the members are byte-identical to the developers' shared copies.

ITP = Dataset(
    "Microsoft ITP (ElasticFlow) traces: DL training jobs of 10 GPU clusters, 2021-03 to 2021-05",
    "https://github.com/microsoft/elasticflow-traces",
    "MIT",
    "Gu et al., ElasticFlow: An Elastic Serverless Training Platform for Distributed Deep "
    "Learning, ASPLOS '23",
)
_ITP_ARCHIVE = Download(
    _github(
        "microsoft/elasticflow-traces",
        "277ed24d0e908c31a1c98145819e2e3853d8ac00",
        "data/raw-traces.tar.gz",
    ),
    "itp/raw-traces.tar.gz",
    "67398e1a89245c50ae0881bf997e6cda0c95f9f47980af5bc56d67998965669f",
    1_943_846,
)
#: CLUSTER, bytes, sha256
_ITP_CLUSTERS = """
cluster01  83726 27d707f576fce5637f9efec43f610da3d335f36e3c6fd4ded2f5bccfce05974a
cluster02 301866 7a5849e73aff9f9bc33f87c9bacadf8aab2f3a9e7bc5d70956f5cbf40126526c
cluster03 158198 282d765c5289ab0ba870f494dd2c67893f9d16d726fdc8a51f13b7412515dbf8
cluster04 825103 247850e4265f35749e98d15e82a67765301e81272334265f1fe60d65787892a9
cluster05 189032 1553359ddd673a0ffc531ca10e73ba729dbacbce905ce878dbb8499d2dbed0fb
cluster06 125228 52c0d9247d1de9b19a8bdafc25137daf6fa04f274ad3a2eb6dac51226ac2362e
cluster07 662831 d4f46f32e2965c2265b2675c070565a86e40bff45733c828c5767bc0b8c1b318
cluster08 682210 d60c20d0cd05ddf49fddffabbc784ba6177bbc1a762fc5cf8a0bc9056b084db8
cluster09 586203 da4047d6f09cc41709ff85937c82e31f6a6791c896d22e241ae9e1dc7f82bcfd
cluster10  13689 139abea485b52090f5950d0f28d82878169df408e36052ec5c7cd04a3f3fcfa7
"""
_ITP = [
    Trace(
        f"itp-{cluster}",
        f"ITP {cluster}: about 60 days of training jobs (GPU counts only)",
        "itp",
        ITP,
        _ITP_ARCHIVE,
        f"itp/{cluster}.csv",
        member=f"{cluster}.csv",
        sha256=sha256,
        size=int(size),
    )
    for cluster, size, sha256 in (row.split() for row in _ITP_CLUSTERS.strip().splitlines())
]

# -- Alibaba cluster-trace-gpu-v2023 (openb) -------------------------------------------------
# sha256 computed from each file's blob at the pinned commit (the one that published them).

OPENB = Dataset(
    "Alibaba cluster-trace-gpu-v2023: GPU-sharing pods and nodes (openb)",
    f"{_ALIBABA_HOME}/tree/master/cluster-trace-gpu-v2023",
    _ALIBABA_TERMS,
    "Weng et al., Beware of Fragmentation: Scheduling GPU-Sharing Workloads with "
    "Fragmentation Gradient Descent, USENIX ATC '23",
)
_OPENB_COMMIT = "50a91c7c74abe3b658188dc78ac1dd302970d40c"
_OPENB_NODES = ("openb-nodes-all", "openb-nodes-gpu")
#: FILE (after openb_, before .csv), bytes, sha256
_OPENB_FILES = """
node_list_all_node     52287 5a85c2af79c66a1efff8bbcbda430400aae56d8431370d738480967e1a9c6b15
node_list_gpu_node     42353 2beca64b4d3dfa342036a34b56a495c6cef9225db836c81f541282cb1df320b5
pod_list_cpu0         499765 1bc3fd9ee5c1468ccd018f624d9222746e08d59f963f66b925804734271c0eaa
pod_list_cpu037       518687 8ed554026d041b15ff21ddc104d9a21dbd9a93c496262fa23ef7b5be27e220dc
pod_list_cpu050       525811 747f43247bffc2b0bb081d7f61f0705ca8d390dafc0b647e642c92f3baf3ba1e
pod_list_cpu072       537576 f8a2b031461b54d7b9f06d55473c2371eb3357b78a255c646bdca5e0833a8a2f
pod_list_cpu100       554709 bec1c33fbdde61fd463877534ec79b393aec73e1cbb22d55fab9f166ac480982
pod_list_cpu200       622703 b7e9d8a1a601da84d6e0b4110b19ef5001be5e4796d33e7b82f166ba95161f87
pod_list_cpu235       651171 87bebd4d012faa8305ce1fd82737f51cf03361aac28b75d42e34aa656d7f4ee0
pod_list_cpu250       663708 134c21ff96d57533df8a37b67632972884fec9396e77cd0898ddc370cc8e607d
pod_list_cpu300       710698 76528825f40ee662cb098b3b6e683c1efd9f87a0c8af7e628df1f32c639636d1
pod_list_default      575468 1ee7ed79c27a3b0861cda8ddba86a004c6aba904caafa329a76ae93ca63834a8
pod_list_gpushare100  561220 12dbc07d6a49bf8641e2275a2ff5bf7be74b5df7d148d531e135b140b95f9a3d
pod_list_gpushare20   574603 9be2d0efb52e242c32e23dd184cc5fcc1983478c6c9c02cbb6b4b62925c0ffcd
pod_list_gpushare40   572662 d83ce79a4eb6987524bedbb0c65e41aed3a36bf6c1b78b86234c3687a07e1d40
pod_list_gpushare60   566361 d31809628128a1f24491086eda4af3e23882b9213d3ef57a56ee2d1af69492fe
pod_list_gpushare80   563740 88b6649369ced40d0fde287d2498ea61ff4b05fccba8bdc95daf6042f2f8431e
pod_list_gpuspec05    577176 8f1c0ef7e4e511e982bd2818898ba22ee6d273bf5fce124b7ace285b5928cf4e
pod_list_gpuspec10    579461 2dc7e4cb9480484f08539720b433a9ec9ab5d76b396f3f7557c53a2ff78a7611
pod_list_gpuspec20    582612 6b9b89ab8913c1c074e994e98f548cf1a872fc5f76f2442ca8cd514a478b00a9
pod_list_gpuspec25    584915 9d030679a2ccd7e27a7ec9ff15baff34480d22a0012515691fc187e3f35ee68c
pod_list_gpuspec33    587467 eca4f746db1e5b25864ad021b55ece3943e101a3ebd4574d09dcb95c46117652
pod_list_multigpu20   271530 d9ec6f6c74fb980cc0b81239470c6353fceea077ea9abd610003b604c7cc2b01
pod_list_multigpu30   277920 a5e479c6444b1d83eef848159cf00c3cfa13441b2d1e2c113c391b91f1cc5b11
pod_list_multigpu40   286202 32c9e8731ca07ef96108aa65f2a289bb9aacb47f642ed9e3789f99b242df60eb
pod_list_multigpu50   297219 206f2f5959db30ecb7c44e7f13197c8ec50b7a35558ad3777cc3662ef0fe5373
"""


def _openb(row: str) -> Trace:
    stem, size, sha256 = row.split()
    file = f"openb_{stem}.csv"
    download = Download(
        _github("alibaba/clusterdata", _OPENB_COMMIT, f"cluster-trace-gpu-v2023/csv/{file}"),
        f"alibaba-openb-2023/{file}",
        sha256,
        int(size),
    )
    if stem.startswith("node_list_"):
        nodes = stem.removeprefix("node_list_").removesuffix("_node")
        name, about = f"openb-nodes-{nodes}", f"openb nodes ({nodes} nodes)"
        return _file(name, about, "openb", OPENB, download)
    variant = stem.removeprefix("pod_list_")
    about = "openb pods, the real trace" if variant == "default" else f"openb pods, {variant}"
    return _file(f"openb-{variant}", about, "openb", OPENB, download, companions=_OPENB_NODES)


# -- Alibaba cluster-trace-gpu-v2025 ---------------------------------------------------------
# sha256 computed from the blob at the pinned commit; identical to the shared copy.

DLRM = Dataset(
    "Alibaba cluster-trace-gpu-v2025: GPU-disaggregated DLRM inference instances",
    f"{_ALIBABA_HOME}/tree/master/cluster-trace-gpu-v2025",
    _ALIBABA_TERMS,
    "Yang et al., GPU-Disaggregated Serving for Deep Learning Recommendation Models at Scale, "
    "NSDI '25",
)
_DLRM = _file(
    "alibaba-dlrm-2025",
    "DLRM inference instances (CN and HN roles)",
    "alibaba2025",
    DLRM,
    Download(
        _github(
            "alibaba/clusterdata",
            "358ef992044f8393cb17d750e360cb5c26b7bdae",
            "cluster-trace-gpu-v2025/disaggregated_DLRM_trace.csv",
        ),
        "alibaba-dlrm-2025/disaggregated_DLRM_trace.csv",
        "fb17bc4b3f412d5280f70f04a1bdf2adfc4429d1e61237a5b106e86206414295",
        2_118_900,
    ),
)

# -- Alibaba cluster-trace-gpu-v2020 (PAI) ---------------------------------------------------
# The sha256 of each archive is the one the trace's first author publishes with a backup of the
# files (github.com/qzweng/clusterdata-cluster-trace-gpu-v2020-data, check_shasum.sh); for the
# machine spec it was also computed from that backup's blob, and the extracted CSV is identical
# to the shared copy. The job and task archives are too large to have been read here.

PAI = Dataset(
    "Alibaba cluster-trace-gpu-v2020: PAI jobs, tasks and machines",
    f"{_ALIBABA_HOME}/tree/master/cluster-trace-gpu-v2020",
    _CC_BY,
    "Weng et al., MLaaS in the Wild: Workload Analysis and Scheduling in Large-Scale "
    "Heterogeneous GPU Clusters, NSDI '22",
)


def _pai(table: str, sha256: str, size: int | None = None) -> Download:
    url = f"{_OSS}/v2020GPUTraces/{table}.tar.gz"
    return Download(url, f"alibaba-pai-2020/{table}.tar.gz", sha256, size)


_PAI_MACHINES = "alibaba-pai-2020-machines"
_PAI_JOBS = "alibaba-pai-2020-jobs"
_PAI = [
    Trace(
        _PAI_MACHINES,
        "PAI machines (GPU type, cpu, memory, GPUs)",
        "pai",
        PAI,
        _pai(
            "pai_machine_spec",
            "cc0d38a4045af1b1af8179de8b1b54b1ddd995e6160d6d061a6b1000f1276c2d",
            30449,
        ),
        "alibaba-pai-2020/pai_machine_spec.csv",
        member="pai_machine_spec.csv",
        sha256="251e9e33649155a6a935fdc1dc0e90cd4698206936b60bd8fce60ff2ccd51439",
        size=73311,
    ),
    Trace(
        _PAI_JOBS,
        "PAI jobs (read beside the task table for submit times and users)",
        "pai",
        PAI,
        _pai("pai_job_table", "5aad7f7caac501136d14ed6a48e40546f825d7b0617a3a4f337e2348fe0a6cb0"),
        "alibaba-pai-2020/pai_job_table.csv",
        member="pai_job_table.csv",
    ),
    Trace(
        "alibaba-pai-2020-tasks",
        "PAI tasks: the jobs' pods (sort by job first, see docs/traces.md)",
        "pai",
        PAI,
        _pai("pai_task_table", "cd1d6dc3215d2a8607ccf6b6dd952b5db776df86926c73259fea7c1499ac40e5"),
        "alibaba-pai-2020/pai_task_table.csv",
        member="pai_task_table.csv",
        companions=(_PAI_JOBS, _PAI_MACHINES),
    ),
]

# -- Alibaba cluster-trace-v2018 and v2017 ---------------------------------------------------
# v2018: the archives' sha256 and rounded sizes are the ones trace_2018.md publishes. v2017:
# no checksum is established; the repository's SHA256SUM names trace_201708.tgz, a file that
# is not the one its download link serves.

ALIBABA_2018 = Dataset(
    "Alibaba cluster-trace-v2018: 4,000 colocated machines over 8 days",
    f"{_ALIBABA_HOME}/tree/master/cluster-trace-v2018",
    _ALIBABA_TERMS,
    "Alibaba Cluster Trace Program, cluster-trace-v2018 (github.com/alibaba/clusterdata)",
)
ALIBABA_2017 = Dataset(
    "Alibaba cluster-trace-v2017: 1,300 colocated machines, online services and batch jobs",
    f"{_ALIBABA_HOME}/tree/master/cluster-trace-v2017",
    _ALIBABA_TERMS,
    "Alibaba Cluster Trace Program, cluster-trace-v2017 (github.com/alibaba/clusterdata)",
)
_ALIBABA_OLD = [
    Trace(
        "alibaba-2018-machines",
        "2018 machines (machine_meta: zones, cores, memory, status)",
        "alibaba2018",
        ALIBABA_2018,
        Download(
            f"{_OSS}/v2018Traces/machine_meta.tar.gz",
            "alibaba-2018/machine_meta.tar.gz",
            "b5b1b786b22cd413a3674b8f2ebfb2f02fac991c95df537f363ef2797c8f6d55",
            None,
            "92 KB",
        ),
        "alibaba-2018/machine_meta.csv",
        member="machine_meta.csv",
    ),
    Trace(
        "alibaba-2018-machine-usage",
        "2018 machine utilisation every few seconds (machine_usage)",
        "alibaba2018",
        ALIBABA_2018,
        Download(
            f"{_OSS}/v2018Traces/machine_usage.tar.gz",
            "alibaba-2018/machine_usage.tar.gz",
            "3e6ee87fd204bb85b9e234c5c75a5096580fdabc8f085b224033080090753a7a",
            None,
            "1.7 GB",
        ),
        "alibaba-2018/machine_usage.csv",
        member="machine_usage.csv",
    ),
    Trace(
        "alibaba-2017-batch",
        "2017 batch tasks (batch_task), from the whole 2017 trace archive",
        "alibaba2017",
        ALIBABA_2017,
        Download(
            f"{_OSS}/v2017Traces/alibaba-trace-2017.tar.gz",
            "alibaba-2017/alibaba-trace-2017.tar.gz",
            None,
            None,
        ),
        "alibaba-2017/batch_task.csv",
        member="batch_task.csv",
    ),
]

# -- Microsoft Philly ------------------------------------------------------------------------
# sha256 and size from the repository's Git LFS pointer, which names the object by its sha256.

PHILLY = Dataset(
    "Microsoft Philly traces: DNN training jobs, 2017-08 to 2017-12",
    "https://github.com/msr-fiddle/philly-traces",
    _CC_BY,
    "Jeon et al., Analysis of Large-Scale Multi-Tenant GPU Clusters for DNN Training "
    "Workloads, USENIX ATC '19",
)
_PHILLY = Trace(
    "philly",
    "Philly job log (cluster_job_log, JSON; the archive is 1 GB)",
    "philly",
    PHILLY,
    Download(
        "https://media.githubusercontent.com/media/msr-fiddle/philly-traces/"
        "29a1b87fa2d9ed80b83c9e3a37f3a88d382b031d/trace-data.tar.gz",
        "philly/trace-data.tar.gz",
        "2037ccf63a725a02be718b0e1aeee6142c90b7f62d0d849295120e9f6ba13d2c",
        1_055_988_361,
    ),
    "philly/cluster_job_log",
    member="trace-data/cluster_job_log",
)

# -- SenseTime Helios ------------------------------------------------------------------------
# No sha256 established: data.zip is a plain git blob too large for the copy read here.

HELIOS = Dataset(
    "SenseTime Helios traces: jobs of 4 GPU clusters, 2020-04 to 2020-09",
    "https://github.com/S-Lab-System-Group/HeliosData",
    _CC_BY,
    "Hu et al., Characterization and Prediction of Deep Learning Workloads in Large-Scale GPU "
    "Datacenters, SC '21",
)
_HELIOS_ZIP = Download(
    _github(
        "S-Lab-System-Group/HeliosData", "159f0caeec16600b9b6017862952a36aae01c43f", "data.zip"
    ),
    "helios/data.zip",
    None,
    None,
    "36.4 MB",
)
_HELIOS = [
    Trace(
        f"helios-{cluster.lower()}",
        f"Helios {cluster} jobs (Slurm log)",
        "helios",
        HELIOS,
        _HELIOS_ZIP,
        f"helios/{cluster}/cluster_log.csv",
        member=f"{cluster}/cluster_log.csv",
    )
    for cluster in ("Earth", "Saturn", "Uranus", "Venus")
]

# -- Azure LLM inference ---------------------------------------------------------------------
# 2023: sha256 computed from the blobs at the pinned commit; identical to the shared copies.
# 2024: served from Azure blob storage, no checksum established.

AZURE_2023 = Dataset(
    "Azure LLM inference trace 2023: one hour of requests of two services",
    "https://github.com/Azure/AzurePublicDataset/blob/master/AzureLLMInferenceDataset2023.md",
    _CC_BY,
    "Patel et al., Splitwise: Efficient Generative LLM Inference Using Phase Splitting, ISCA '24",
)
AZURE_2024 = Dataset(
    "Azure LLM inference trace 2024: one week of requests of two services",
    "https://github.com/Azure/AzurePublicDataset/blob/master/AzureLLMInferenceDataset2024.md",
    _CC_BY,
    "Stojkovic et al., DynamoLLM: Designing LLM Inference Clusters for Performance and Energy "
    "Efficiency, HPCA '25",
)
_AZURE_COMMIT = "790921015d50dd6aae7f7e47f39ba0e235ad6b08"
_AZURE_BLOBS = "https://azurepublicdatasettraces.blob.core.windows.net/azurellminfererencetrace"


def _azure(year: int, service: str, download: Download) -> Trace:
    what = "code completion" if service == "code" else "conversation"
    span = "one hour" if year == 2023 else "one week"
    dataset = AZURE_2023 if year == 2023 else AZURE_2024
    return _file(f"azure-llm-{year}-{service}", f"LLM {what} requests, {span}", "azure-llm",
                 dataset, download)  # fmt: skip


def _azure_2023(service: str, sha256: str, size: int) -> Trace:
    file = f"AzureLLMInferenceTrace_{service}.csv"
    url = _github("Azure/AzurePublicDataset", _AZURE_COMMIT, f"data/{file}")
    return _azure(2023, service, Download(url, f"azure-llm-2023/{file}", sha256, size))


def _azure_2024(service: str) -> Trace:
    file = f"AzureLLMInferenceTrace_{service}_1week.csv"
    return _azure(2024, service, Download(f"{_AZURE_BLOBS}/{file}", f"azure-llm-2024/{file}",
                                          None, None))  # fmt: skip


_AZURE = [
    _azure_2023("code", "54e9a6d2a4bd06ba1e060304b900abbc74cbea53de96506e60fe5bb4f2277fb6", 320117),
    _azure_2023("conv", "2f1e5b666d4e3055fdbba98598ce2ec307767b9064e03e2fa46676dbcc7d0bf8", 719188),
    _azure_2024("code"),
    _azure_2024("conv"),
]

#: Every trace by name.
TRACES: dict[str, Trace] = {
    trace.name: trace
    for trace in (
        *_ITP,
        *(_openb(row) for row in _OPENB_FILES.strip().splitlines()),
        _DLRM,
        *_PAI,
        *_ALIBABA_OLD,
        _PHILLY,
        *_HELIOS,
        *_AZURE,
    )
}


def _starting(prefix: str) -> tuple[str, ...]:
    return tuple(name for name in TRACES if name.startswith(prefix))


#: Names that stand for several traces.
SETS: dict[str, tuple[str, ...]] = {
    "itp": _starting("itp-"),
    "openb": _starting("openb-"),
    "helios": _starting("helios-"),
    "alibaba-pai-2020": _starting("alibaba-pai-2020-"),
    "azure-llm-2023": _starting("azure-llm-2023-"),
    "azure-llm-2024": _starting("azure-llm-2024-"),
}


def close_names(name: str) -> list[str]:
    """Catalog names a few letters off ``name``, best first."""
    return difflib.get_close_matches(name, [*TRACES, *SETS], n=3, cutoff=0.6)


def traces_named(name: str) -> list[Trace]:
    """The traces a name stands for: one, or a set's. Raises FetchError for an unknown name."""
    if name in TRACES:
        return [TRACES[name]]
    if name in SETS:
        return [TRACES[member] for member in SETS[name]]
    close = close_names(name)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    raise FetchError(
        f"unknown trace {name!r}{hint}; berth trace get --list shows the traces berth can fetch"
    )
