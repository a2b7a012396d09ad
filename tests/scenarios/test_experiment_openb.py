"""docs/experiments/openb-fragmentation: the experiment script end to end on a small openb-format
cluster and pod list written here (one seed), so the script cannot rot."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "docs/experiments/openb-fragmentation/run.py"


def test_experiment_script_runs_every_policy(tmp_path: Path, capsys) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "openb_node_list_gpu_node.csv").write_text(
        "sn,cpu_milli,memory_mib,gpu,model\n"
        + "".join(f"n{i},64000,262144,{g},V100\n" for i, g in enumerate([1, 2, 4, 8] * 3))
    )
    (data / "openb_pod_list_tiny.csv").write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
        + "".join(
            f"p{i},{2000 + 1000 * (i % 3)},4096,{n},{m}\n"
            for i, (n, m) in enumerate([(1, 500), (1, 1000), (1, 250), (2, 1000), (0, 0)] * 6)
        )
    )
    spec = importlib.util.spec_from_file_location("openb_fragmentation_run", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = tmp_path / "out"
    out.mkdir()
    module.main(["--seeds", "1", "--jobs", "1", "--data", str(data), "--out", str(out)])
    results = json.loads((out / "results.json").read_text())
    assert set(results["tiny"]) == set(module.POLICIES)
    assert all(0 < r["gpu_allocation_percent"] <= 100 for r in results["tiny"].values())
    assert (out / "allocation-tiny.png").exists()
    assert "| tiny |" in capsys.readouterr().out
