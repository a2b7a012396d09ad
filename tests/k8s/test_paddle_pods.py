"""What berth writes for a TrainingJob, without a cluster: EDL's defaults, ports, commands,
trainer count and GPU switch (``pkg/updater/jobparser.go``), and a role's state."""

from __future__ import annotations

from typing import Any

import pytest

from berth.k8s import paddle


def job(**spec: Any) -> dict[str, Any]:
    trainer = {"min-instance": 1, "max-instance": 1, **spec.pop("trainer", {})}
    return {"metadata": {"name": "t", "namespace": "ns"}, "spec": {"trainer": trainer, **spec}}


def variables(raw: dict[str, Any]) -> dict[str, Any]:
    return {item["name"]: item.get("value") for item in paddle.env(raw)}


PORT_CASES = [
    # (spec, expected ports)
    ({}, [("jobport-7164", 7164), ("jobport-7165", 7165)]),
    ({"port": 9000, "ports_num": 2}, [(f"jobport-{p}", p) for p in (9000, 9001, 9002)]),
    ({"ports_num": 0, "ports_num_for_sparse": 3}, [(f"jobport-{p}", p) for p in range(7164, 7168)]),
]


@pytest.mark.parametrize(("spec", "expected"), PORT_CASES)
def test_ports_follow_edls_defaults(spec, expected):
    got = [(p["name"], p["containerPort"]) for p in paddle.ports(job(**spec))]
    assert got == expected


TRAINER_COUNT_CASES = [
    # (trainer requests, PADDLE_INIT_TRAINER_COUNT, PADDLE_INIT_USE_GPU)
    ({}, "0", "0"),
    ({"cpu": "500m"}, "1", "0"),  # Quantity.Value() rounds up
    ({"cpu": "2"}, "2", "0"),
    ({"cpu": "4", "nvidia.com/gpu": "2"}, "2", "1"),
    ({"cpu": "4", "alpha.kubernetes.io/nvidia-gpu": "1"}, "1", "1"),
]


@pytest.mark.parametrize(("requests", "count", "gpu"), TRAINER_COUNT_CASES)
def test_one_trainer_process_per_gpu_else_per_core(requests, count, gpu):
    got = variables(job(trainer={"resources": {"requests": requests}}))
    assert (got["PADDLE_INIT_TRAINER_COUNT"], got["PADDLE_INIT_USE_GPU"]) == (count, gpu)


def test_a_job_without_pservers_or_passes_gets_edls_defaults():
    got = variables(job(trainer={"min-instance": 2, "max-instance": 5}))
    assert got["TRAINERS"] == got["PADDLE_INIT_NUM_GRADIENT_SERVERS"] == "2"
    assert got["PSERVERS"] == "0"
    assert (got["PADDLE_INIT_PORT"], got["PADDLE_INIT_NUM_PASSES"]) == ("7164", "1")


COMMAND_CASES = [
    # (role, fault_tolerant, command)
    ("trainer", True, ["paddle_k8s", "start_new_trainer"]),
    ("trainer", False, ["paddle_k8s", "start_trainer", "v2"]),
    ("pserver", True, ["paddle_k8s", "start_new_pserver"]),
    ("pserver", False, ["paddle_k8s", "start_pserver"]),
    ("master", True, ["paddle_k8s", "start_master"]),
]


@pytest.mark.parametrize(("role", "fault_tolerant", "command"), COMMAND_CASES)
def test_each_role_starts_with_edls_command(role, fault_tolerant, command):
    raw = job(image="img", fault_tolerant=fault_tolerant, VolumeMounts=[{"name": "v"}])
    spec = paddle.pod_spec(raw, role, "berth")
    (container,) = spec["containers"]
    assert container["command"] == command and container["image"] == "img"
    assert ("volumeMounts" in container) == (role != "pserver")
    assert spec.get("restartPolicy") == ("Never" if role == "trainer" else None)


def test_the_old_gpu_name_is_written_as_nvidia_com_gpu():
    raw = job(trainer={"resources": {"limits": {"alpha.kubernetes.io/nvidia-gpu": "8"}}})
    assert paddle.resources(raw, "trainer") == {"limits": {"nvidia.com/gpu": "8"}}
    assert paddle.pod_spec(raw, "trainer", "berth")["containers"][0]["image"] == (
        "paddlepaddle/paddlecloud-job"
    )


ROLE_STATE_CASES = [
    ({}, "starting"),
    ({"starting": 2}, "starting"),
    ({"starting": 1, "running": 1}, "running"),
    ({"succeeded": 2}, "succeeded"),
    ({"succeeded": 1, "running": 1}, "running"),
    ({"failed": 1, "running": 3}, "failed"),
]


@pytest.mark.parametrize(("counts", "state"), ROLE_STATE_CASES)
def test_a_roles_state(counts, state):
    assert paddle.role_state(counts) == state
