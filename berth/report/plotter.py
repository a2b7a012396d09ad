"""A worker process that draws a run's figures while the run goes on.

The figures of a report cost a run about 0.7 s, all of it after the simulation: about 0.2 s to
import matplotlib and the rest to draw and compress the PNGs. A command that writes figures
starts the worker first (``python -m berth.report.plotter MODULE``), when the machine has a
core to spare; the worker imports matplotlib and the module that draws while the run loads
and simulates, and draws the figures while the run writes its tables. The figures are the
same bytes as drawn in the run's own process, and the run's process never imports matplotlib.
Without a spare core the worker would take CPU from the run (about 0.5 s of it), so there is
none.

The worker says it is ready once it has imported what drawing needs; the run then sends it one
pickled call on its standard input and reads the pickled result (or the exception the call
raised, raised again in the run) from its standard output. A run that wants its figures before
the worker is ready (a small one: it would wait for the imports it could do faster itself),
or whose worker could not be started or died, draws them in its own process.
"""

from __future__ import annotations

import importlib
import os
import pickle
import select
import subprocess
import sys
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

#: What the worker writes once it can draw.
_READY = b"R"


class Plotter:
    """Draws figures in a worker once ``start`` has started one, else in this process."""

    def __init__(self) -> None:
        self._worker: subprocess.Popen[bytes] | None = None
        self._ready = False

    def start(self, module: str) -> Plotter:
        """Start a worker that imports ``module`` (where the drawing functions are), if a
        core is to spare."""
        if not core_to_spare():
            return self
        try:
            self._worker = subprocess.Popen(
                [sys.executable, "-m", "berth.report.plotter", module],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
            )
        except OSError:  # no processes here (a sandbox): draw in this one
            self._worker = None
        return self

    def ready(self, timeout: float = 0.0) -> bool:
        """Whether the worker can draw, waiting up to ``timeout`` seconds for it to say so."""
        worker = self._worker
        if worker is None or self._ready:
            return self._ready
        assert worker.stdout is not None
        readable, _, _ = select.select([worker.stdout], [], [], timeout)
        self._ready = bool(readable) and worker.stdout.read(len(_READY)) == _READY
        return self._ready

    def draw(self, draw: Callable[..., T], *args: object) -> Callable[[], T]:
        """``draw(*args)``, begun now in the worker if it is ready; call what is returned for
        its result."""
        ready = self.ready()
        worker, self._worker, self._ready = self._worker, None, False  # one call per worker
        if worker is not None and not ready:
            _stop(worker)  # a small run: drawing here is sooner than waiting for its imports
            worker = None
        if worker is not None:
            assert worker.stdin is not None
            try:
                worker.stdin.write(pickle.dumps((draw, args)))
                worker.stdin.close()
            except OSError:  # it is gone
                _stop(worker)
                worker = None
        if worker is None:
            result = draw(*args)
            return lambda: result
        stdout = worker.stdout
        assert stdout is not None

        def result() -> T:
            answer = stdout.read()
            if worker.wait() != 0 or not answer:  # it died (killed, out of memory): here
                return draw(*args)
            done, value = pickle.loads(answer)
            if not done:
                raise value
            return value

        return result

    def close(self) -> None:
        """Stop a worker that was given nothing to draw (the run failed first)."""
        if self._worker is not None:
            _stop(self._worker)
            self._worker = None


def _stop(worker: subprocess.Popen[bytes]) -> None:
    worker.kill()
    worker.wait()
    for stream in (worker.stdin, worker.stdout):
        if stream is not None:
            stream.close()


def core_to_spare() -> bool:
    """Whether the processes that were runnable over the last minute left one of the cores
    this process may use idle, on average."""
    affinity = getattr(os, "sched_getaffinity", None)
    cores = len(affinity(0)) if affinity is not None else os.cpu_count() or 1
    return os.getloadavg()[0] <= cores - 1


def serve(module: str) -> None:
    """The worker: import what drawing needs, then run the one call sent on stdin. Standard
    output carries only the answers; what the imports or the drawing print goes to stderr."""
    answers = sys.stdout.buffer
    sys.stdout = sys.stderr
    from matplotlib import figure  # noqa: F401  (what the first figure would import)
    from matplotlib.backends import backend_agg  # noqa: F401

    importlib.import_module(module)
    answers.write(_READY)
    answers.flush()
    call = sys.stdin.buffer.read()
    if not call:
        return
    draw, args = pickle.loads(call)
    try:
        answer = (True, draw(*args))
    except Exception as exc:  # raised again in the run
        answer = (False, exc)
    answers.write(pickle.dumps(answer))


if __name__ == "__main__":
    serve(sys.argv[1])
