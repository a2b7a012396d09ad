"""``simulate --explain`` and ``berth explain`` through the command line."""

from __future__ import annotations

import json

from berth.cli import main
from tests.scenarios.test_simulate import simulate


def test_simulate_explains_the_pods_asked_for(tmp_path, capsys):
    out = tmp_path / "run"
    assert simulate(out, "--explain", "web-0", "--explain", "default/huge") == 0
    explained = json.loads((out / "explain.json").read_text())
    assert explained["patterns"] == ["web-0", "default/huge"]
    pods = {pod["pod"]: pod for pod in explained["pods"]}
    assert set(pods) == {"default/web-0", "default/huge"}
    web = pods["default/web-0"]
    assert web["placed"]["outcome"] == "placed" and web["placed"]["node"] == web["node"]
    chosen = [s for s in web["placed"]["scores"] if s["chosen"]]
    assert [s["node"] for s in chosen] == [web["node"]]
    huge = pods["default/huge"]
    assert huge["phase"] == "Pending" and huge["placed"] is None
    assert huge["refused"]["message"] == huge["reason"]  # what pods.csv says, explained
    html = (out / "report.html").read_text()
    assert 'id="explained"' in html and "Placed on " in html and "◀ chosen" in html

    capsys.readouterr()
    assert main(["explain", "huge", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "default/huge" in printed and "Refused at" in printed and "nodes rejected" in printed


def test_a_rerun_without_explain_removes_the_old_explanations(tmp_path):
    out = tmp_path / "run"
    assert simulate(out, "--explain", "web-0") == 0
    assert simulate(out) == 0
    assert not (out / "explain.json").exists()
    assert 'id="explained"' not in (out / "report.html").read_text()


def test_explain_says_how_to_record_a_pod_not_recorded(tmp_path, capsys):
    out = tmp_path / "run"
    assert simulate(out) == 0
    capsys.readouterr()
    assert main(["explain", "web-0", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {out}: no explain.json")
    assert "berth simulate --cluster" in err and err.rstrip().endswith("--explain web-0")
    assert simulate(out, "--explain", "web-0") == 0
    capsys.readouterr()
    assert main(["explain", "web-1", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "no explained pod matches 'web-1'" in err and "--explain web-1" in err
    assert "Traceback" not in err


def test_explain_refuses_a_file_it_did_not_write(tmp_path, capsys):
    (tmp_path / "explain.json").write_text("[1, 2]")
    assert main(["explain", "x", "--out", str(tmp_path)]) == 1
    assert "not an explain file berth wrote" in capsys.readouterr().err
