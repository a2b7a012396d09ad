"""Load-curve annotations of inference Deployments: curves, the replica rule, and what is
wrong with a bad curve (file, row, what was expected)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from berth.api.load_curves import (
    BUILTIN_SHAPES,
    DAY,
    LoadCurve,
    LoadScaling,
    builtin_curve,
)
from berth.api.manifest import load_files
from berth.api.workloads import workload_pods
from berth.traces.daily_shape import daily_shape

AZURE = Path(__file__).resolve().parents[3] / "shared" / "traces" / "azure-llm-2023"

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: chat
  annotations:
{annotations}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: chat}}}}
  template:
    metadata:
      labels: {{app: chat}}
    spec:
      containers:
        - name: server
          image: vllm
          resources: {{requests: {{cpu: "1"}}}}
"""


def deployment(tmp_path: Path, annotations: dict[str, str], csv: str | None = None):
    if csv is not None:
        (tmp_path / "curve.csv").write_text(textwrap.dedent(csv))
    lines = "\n".join(f'    {key}: "{value}"' for key, value in annotations.items())
    path = tmp_path / "chat.yaml"
    path.write_text(DEPLOYMENT.format(annotations=lines))
    return load_files([path])


def test_curve_interpolates_and_repeats() -> None:
    curve = LoadCurve("c", (0.0, 100.0), (10.0, 20.0), 200.0)
    assert [curve.rate(t) for t in (0, 50, 100, 150, 200, 250)] == [10, 15, 20, 15, 10, 15]


@pytest.mark.parametrize(
    "rate,scale,per_replica,low,high,expected",
    [
        (10.0, 1.0, 4.0, 1, None, 3),  # ceil(10 / 4)
        (8.0, 1.0, 4.0, 1, None, 2),  # exactly two replicas' worth
        (0.0, 1.0, 4.0, 1, None, 1),  # never below min-replicas
        (0.0, 1.0, 4.0, 0, None, 0),  # min-replicas 0 lets a service idle
        (10.0, 3.0, 4.0, 1, None, 8),  # load-scale multiplies the curve
        (100.0, 1.0, 4.0, 1, 5, 5),  # capped at max-replicas
    ],
)
def test_recommended_replicas(rate, scale, per_replica, low, high, expected) -> None:
    scaling = LoadScaling(LoadCurve("flat", (0.0,), (rate,), DAY), per_replica, scale, low, high)
    assert scaling.recommended(1234.0) == expected


def test_builtin_day_can_be_squeezed_into_a_shorter_period() -> None:
    day, hours = builtin_curve("azure-llm-conv"), builtin_curve("azure-llm-conv", 2400.0)
    assert day.rate(11 * 3600) == hours.rate(1100) == BUILTIN_SHAPES["azure-llm-conv"][11]


@pytest.mark.parametrize("name", ["conv", "code"])
def test_builtin_shapes_are_the_trace_binned_by_hour(name) -> None:
    path = AZURE / f"AzureLLMInferenceTrace_{name}.csv"
    if not path.exists():
        pytest.skip("the Azure LLM trace is not here")
    assert daily_shape(path) == BUILTIN_SHAPES[f"azure-llm-{name}"]


def test_annotations_make_a_scaling(tmp_path) -> None:
    manifests = deployment(
        tmp_path,
        {
            "berth.io/load-curve": "curve.csv",
            "berth.io/requests-per-replica": "2.5",
            "berth.io/min-replicas": "0",
            "berth.io/max-replicas": "9",
            "berth.io/load-period": "3600",
        },
        csv="time,requests_per_second,tokens_per_second\n0,5,1\n1800,10,1\n",
    )
    assert not manifests.errors
    scaling = manifests.workloads[0].spec.load
    assert (scaling.min_replicas, scaling.max_replicas, scaling.interval) == (0, 9, 15.0)
    assert scaling.curve.times == (0.0, 1800.0) and scaling.curve.period == 3600
    assert scaling.recommended(900) == 3  # 7.5 requests/s at 2.5 each
    assert scaling.peak() == 4  # 10 requests/s
    assert workload_pods(manifests.workloads, 1) == 4  # what the run is checked against


@pytest.mark.parametrize(
    "annotations,csv,message",
    [
        (
            {"berth.io/load-curve": "azure-llm-chat", "berth.io/requests-per-replica": "1"},
            None,
            "'azure-llm-chat' is neither a built-in shape (azure-llm-code, azure-llm-conv) "
            "nor a .csv file",
        ),
        (
            {"berth.io/load-curve": "azure-llm-conv"},
            None,
            "berth.io/requests-per-replica: required with berth.io/load-curve",
        ),
        (
            {
                "berth.io/load-curve": "azure-llm-conv",
                "berth.io/requests-per-replica": "1",
                "berth.io/min-replicas": "5",
                "berth.io/max-replicas": "2",
            },
            None,
            "berth.io/max-replicas: 2 is below berth.io/min-replicas 5",
        ),
        (
            {
                "berth.io/load-curve": "azure-llm-conv",
                "berth.io/requests-per-replica": "1",
                "berth.io/min-replicas": "1.5",
            },
            None,
            "berth.io/min-replicas: '1.5' is not an integer >= 0",
        ),
        (
            {"berth.io/load-curve": "missing.csv", "berth.io/requests-per-replica": "1"},
            None,
            "missing.csv: cannot read (No such file or directory)",
        ),
        (
            {"berth.io/load-curve": "curve.csv", "berth.io/requests-per-replica": "1"},
            "t,rps\n0,1\n",
            "curve.csv: row 1: expected the header time,requests_per_second",
        ),
        (
            {"berth.io/load-curve": "curve.csv", "berth.io/requests-per-replica": "1"},
            "time,requests_per_second\n0,1\n60,lots\n",
            "curve.csv: row 3: 'lots' is not a number (expected requests per second >= 0)",
        ),
        (
            {"berth.io/load-curve": "curve.csv", "berth.io/requests-per-replica": "1"},
            "time,requests_per_second\n0,1\n60,2\n30,2\n",
            "curve.csv: row 4: time 30 is not after the previous row's 60 "
            "(expected increasing times)",
        ),
        (
            {
                "berth.io/load-curve": "curve.csv",
                "berth.io/requests-per-replica": "1",
                "berth.io/load-period": "60",
            },
            "time,requests_per_second\n0,1\n60,2\n",
            "curve.csv: row 3: time 60 is not within the period (expected < 60 s, "
            "berth.io/load-period)",
        ),
        (
            {"berth.io/load-curve": "curve.csv", "berth.io/requests-per-replica": "1"},
            "time,requests_per_second\n",
            "curve.csv: no rows after the header (expected at least one point)",
        ),
    ],
)
def test_bad_curves_are_refused(tmp_path, annotations, csv, message) -> None:
    manifests = deployment(tmp_path, annotations, csv)
    assert len(manifests.errors) == 1, manifests.errors
    problem = manifests.errors[0]
    assert problem.path.startswith("metadata.annotations.berth.io/")
    assert message in f"{problem.path}: {problem.message}"
