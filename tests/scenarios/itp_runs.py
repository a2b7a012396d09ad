"""``berth simulate`` of a small ITP trace written for a test, on eight-GPU nodes, under one of
the policy examples: what the policy scenario tests share."""

from __future__ import annotations

from pathlib import Path

from berth.cli import main

POLICIES = Path(__file__).resolve().parents[2] / "examples" / "policies"


def gpu_nodes(count: int) -> str:
    """Nodes n1 … n<count> of 8 GPUs (and cpu and memory to spare), as manifests."""
    return "---\n".join(
        f"""apiVersion: v1
kind: Node
metadata: {{name: n{i}}}
status:
  allocatable: {{cpu: "512", memory: 4Ti, nvidia.com/gpu: "8", pods: "110"}}
"""
        for i in range(1, count + 1)
    )


def simulate_itp(tmp_path: Path, trace: str, nodes: str, config: Path, name: str) -> Path:
    """Simulate ``trace`` (ITP rows) on ``nodes`` under ``config``; the output folder."""
    trace_file, cluster = tmp_path / "trace.csv", tmp_path / "nodes.yaml"
    trace_file.write_text(trace)
    cluster.write_text(nodes)
    out = tmp_path / name
    args = ["simulate", "--trace", str(trace_file), "--format", "itp", "--cluster", str(cluster)]
    assert main([*args, "--config", str(config), "--quiet", "--out", str(out)]) == 0
    return out
