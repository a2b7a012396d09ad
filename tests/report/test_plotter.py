"""The figure worker: its PNGs are the bytes drawn in the run's own process, an error in a
figure reaches the run, and a worker that is gone leaves the drawing to the run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import berth.report.plotter
from berth.report.html import report_figures
from berth.report.plots import PLOT_FILES, job_delays
from berth.report.plotter import Plotter, core_to_spare
from tests.report.test_html import _run


@pytest.fixture(autouse=True)
def _a_core_to_spare(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(berth.report.plotter, "core_to_spare", lambda: True)


def _figures(out: Path, plotter: Plotter) -> dict[str, bytes]:
    _, series, _, groups = _run(2.0, 30)
    out.mkdir()
    plots, loaning = plotter.draw(report_figures, out, series, job_delays(groups))()
    assert loaning is None
    assert [plot.path.name for plot in plots] == list(PLOT_FILES)
    return {plot.path.name: plot.path.read_bytes() for plot in plots}


def _started() -> Plotter:
    plotter = Plotter().start("berth.report.html")
    assert plotter.ready(timeout=60)
    return plotter


def test_the_worker_draws_the_bytes_drawn_here(tmp_path: Path) -> None:
    plotter = _started()
    worker = plotter._worker
    assert worker is not None
    there = _figures(tmp_path / "worker", plotter)
    assert worker.wait() == 0  # it drew them and left
    assert there == _figures(tmp_path / "here", Plotter())


def test_an_error_in_a_figure_is_raised_in_the_run(tmp_path: Path) -> None:
    _, series, _, groups = _run(1.0, 3)
    plotter = _started()
    drawn = plotter.draw(report_figures, tmp_path / "missing", series, job_delays(groups))
    with pytest.raises(FileNotFoundError):
        drawn()


def test_a_worker_that_died_leaves_the_figures_to_the_run(tmp_path: Path) -> None:
    plotter = _started()
    worker = plotter._worker
    assert worker is not None
    worker.kill()
    worker.wait()
    assert len(_figures(tmp_path / "out", plotter)) == len(PLOT_FILES)


def test_a_worker_killed_while_drawing_leaves_the_figures_to_the_run(tmp_path: Path) -> None:
    _, series, _, groups = _run(2.0, 30)
    plotter = _started()
    worker = plotter._worker
    assert worker is not None
    drawn = plotter.draw(report_figures, tmp_path, series, job_delays(groups))
    worker.kill()
    plots, _ = drawn()
    assert [plot.path.name for plot in plots] == list(PLOT_FILES)


def test_a_run_that_draws_before_the_worker_is_ready_draws_itself(tmp_path: Path) -> None:
    plotter = Plotter().start("berth.report.html")
    worker = plotter._worker
    assert worker is not None
    assert len(_figures(tmp_path / "out", plotter)) == len(PLOT_FILES)  # (it was importing)
    assert worker.returncode is not None  # let go


def test_a_worker_given_nothing_is_stopped() -> None:
    plotter = Plotter().start("berth.report.html")
    worker = plotter._worker
    assert worker is not None
    plotter.close()
    assert worker.returncode is not None


def test_no_worker_without_a_core_to_spare(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setattr(berth.report.plotter, "core_to_spare", lambda: False)
    plotter = Plotter().start("berth.report.html")
    assert not plotter.ready()
    assert len(_figures(tmp_path / "out", plotter)) == len(PLOT_FILES)


def test_a_core_is_to_spare_when_the_load_leaves_one_idle(monkeypatch: pytest.MonkeyPatch):
    """(``core_to_spare`` as imported here: the fixture replaced the module's.)"""
    monkeypatch.setattr(os, "sched_getaffinity", lambda _: {0, 1})
    for load, expected in ((0.4, True), (1.0, True), (1.3, False)):
        monkeypatch.setattr(os, "getloadavg", lambda load=load: (load, 0.0, 0.0))
        assert core_to_spare() is expected
