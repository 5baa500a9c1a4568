"""``vasimov bench run --ray ADDRESS``: the scenarios of a suite as Ray tasks, the same tasks
(:func:`vasimov_tools.bench_run.run_one`) the local worker pool runs, so the results are the same.

``local`` starts a private Ray instance for this run only and ends it with the run. Ray's defaults suit a cluster
node, not a 2-core laptop beside the twin: an object store of 30 % of the memory, a dashboard, usage reporting, logs
in ``/tmp/ray`` shared with every other Ray user. Here the instance gets ``--workers`` CPUs, an object store of
:data:`LOCAL_OBJECT_STORE_BYTES` (a result is a few hundred kB of JSON), no dashboard, no usage reporting, and its
own temporary folder (logs, sockets) that is removed afterwards. Ray's services listen on every interface, so
Ray's token authentication stays on, with a random token held only in the environment of this process and its
children (:func:`local_environment`) rather than written to ``~/.ray/auth_token``. Ray's services (gcs_server,
raylet, its agents and workers) are descendants of this process; whatever of them outlives ``ray.shutdown()`` -- also
after Ctrl-C or a failure -- is ended here by process id (:func:`end_processes`).

Any other ``ADDRESS`` joins a running cluster (``ray.init(address=ADDRESS)``, e.g. ``auto`` on a cluster node or
``ray://head:10001``). Its nodes run the tasks with their own Python: vasimov and its dependencies must be installed
there (the same commit, which the results record as the driver's ``code_version``); ``docs/scenarios.md`` says how.
In-flight tasks are limited to the cluster's CPU count, so the progress line shows what really runs.

Ray is an optional dependency (``pip install vasimov[ray]``, installed by ``make setup`` for the tests);
this module imports it only inside :func:`run_tasks`.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import secrets
import shutil
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

import psutil

from vasimov_tools import bench_run

LOCAL = "local"
LOCAL_OBJECT_STORE_BYTES = 80 * 1024 * 1024  # Ray refuses less than 75 MiB
TEMP_PREFIX = "vasimov-ray-"  # the local instance's folder under the system temp dir (short: it holds sockets)
END_GRACE_S = 5.0  # for Ray's leftover processes to exit on SIGTERM before SIGKILL


def ray_available() -> bool:
    """Whether ``ray`` is installed (found, not imported: importing it is slow and sets up process state)."""
    return importlib.util.find_spec("ray") is not None


def local_init_options(num_cpus: int, temp_dir: str) -> dict[str, Any]:
    """``ray.init`` keywords of the bounded private instance (see the module docstring for why each)."""
    return {"num_cpus": num_cpus, "num_gpus": 0, "include_dashboard": False,
            "object_store_memory": LOCAL_OBJECT_STORE_BYTES, "_temp_dir": temp_dir, "log_to_driver": False,
            "logging_level": logging.WARNING, "namespace": "vasimov-bench"}


_TOKEN: list[str] = []  # one per process: Ray's driver caches the token it first read


def local_environment() -> dict[str, str | None]:
    """Environment (None: unset) while a local instance runs, inherited by Ray's services and workers: no usage
    report; Ray's default token authentication, with a random token that lives nowhere else (Ray itself sets
    ``RAY_AUTH_MODE=token``, restored afterwards)."""
    if not _TOKEN:
        _TOKEN.append(secrets.token_hex(32))
    return {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_TOKEN": _TOKEN[0], "RAY_AUTH_MODE": None}


@contextlib.contextmanager
def _environment(values: dict[str, str | None]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    for k, v in values.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


AUTH_LOGGER = "ray._private.authentication.authentication_token_setup"


@contextlib.contextmanager
def _quiet(logger_name: str) -> Iterator[None]:
    log = logging.getLogger(logger_name)
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(level)


def end_processes(procs: list[psutil.Process], grace: float = END_GRACE_S) -> list[int]:
    """SIGTERM, then after ``grace`` seconds SIGKILL, the given processes that still run; their ids."""
    alive = []
    for p in procs:
        with contextlib.suppress(psutil.Error):
            p.terminate()
            alive.append(p)
    _, left = psutil.wait_procs(alive, timeout=grace)
    for p in left:
        with contextlib.suppress(psutil.Error):
            p.kill()
    psutil.wait_procs(left, timeout=grace)
    return [p.pid for p in alive]


def _descendants(exclude: set[int]) -> list[psutil.Process]:
    try:
        return [p for p in psutil.Process().children(recursive=True) if p.pid not in exclude]
    except psutil.Error:
        return []


@contextlib.contextmanager
def session(address: str, num_cpus: int) -> Iterator[Any]:
    """A connected ``ray`` module; on leaving, Ray shut down, its local processes ended and its folder removed."""
    import ray

    before = {p.pid for p in _descendants(set())}  # e.g. a test's other children: not ours to end
    local = address == LOCAL
    temp_dir = tempfile.mkdtemp(prefix=TEMP_PREFIX) if local else None
    with _environment(local_environment() if local else {"RAY_USAGE_STATS_ENABLED": "0"}):
        try:
            if temp_dir is not None:
                # Ray announces its default token authentication as a warning on every start: known, said above
                with _quiet(AUTH_LOGGER):
                    ray.init(**local_init_options(num_cpus, temp_dir))
            else:
                ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING,
                         namespace="vasimov-bench")
            yield ray
        finally:
            started = _descendants(before)  # Ray's services and workers, before shutdown orphans any of them
            try:
                ray.shutdown()
            finally:
                end_processes([p for p in started if p.is_running()])
                if temp_dir is not None:
                    shutil.rmtree(temp_dir, ignore_errors=True)


def run_tasks(tasks: list[dict[str, Any]], address: str, workers: int, progress: bench_run.Progress,
              on_done: Callable[[dict[str, Any]], None]) -> None:
    """Run the tasks as Ray tasks of one CPU each, :func:`bench_run.longest_first`, at most as many in flight as
    there are CPUs (``workers`` for ``local``; the cluster's otherwise). A task whose worker dies is an ``error``
    result of that scenario; the rest of the suite still runs."""
    with session(address, workers) as ray:
        slots = workers if address == LOCAL else max(1, int(ray.cluster_resources().get("CPU", 1)))
        remote = ray.remote(num_cpus=1, max_retries=0)(bench_run.run_one)
        queue = bench_run.longest_first(tasks)
        pending: dict[Any, dict[str, Any]] = {}
        while queue or pending:
            while queue and len(pending) < slots:
                t = queue.pop(0)
                pending[remote.remote(t)] = t
                progress.started(t["scenario"].name)
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                task = pending.pop(ref)
                try:
                    doc = ray.get(ref)
                except ray.exceptions.RayError as exc:  # the worker process died (run_one itself never raises)
                    doc = bench_run.error_doc(task, f"{type(exc).__name__}: {exc}")
                on_done(doc)
