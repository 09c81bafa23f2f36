"""pytest plugin: one artifact folder per test for oxla's dumps, crash reproducers
and failure reports.

Usage::

    pytest -p oxla.pytest_plugin --oxla-artifact-dir DIR [--oxla-keep-passing]

Every test gets ``DIR/<sanitized node id>/``. While the test runs, the plugin
points ``OXLA_ARTIFACT_DIR`` at that folder; oxla re-reads the variable at every
compile, so the compiles of that test dump their input, IR, plan, options and
timings there, and a failing compile leaves its crash reproducer (``*.oxrepro``,
replay with ``oxla compile FILE``) there too. After the test:

- a failed test keeps its folder and gets ``failure.txt`` (the failure report and
  captured output of each failed phase);
- a passing or skipped test's folder is removed (with ``--oxla-keep-passing``, only
  when it is empty);
- a test that killed its process is marked: ``RUNNING`` is written when a test
  starts and removed when it ends, so a folder still holding it belongs to a test
  that never finished. Under pytest-xdist (``-n N --max-worker-restart M``) the
  controller renames it to ``CRASHED`` (from ``pytest_handlecrashitem``, and for any
  left over at the end of the session) and writes ``failure.txt``; the run goes on.
"""

import hashlib
import os
import pathlib
import re
import shutil

import pytest

#: The environment variable oxla reads at every compile.
ARTIFACT_DIR_ENV = "OXLA_ARTIFACT_DIR"
#: Marker file present while a test runs.
RUNNING = "RUNNING"
#: Marker file of a test whose process died.
CRASHED = "CRASHED"
#: The failure report of a failed test.
FAILURE = "failure.txt"

_MAX_NAME = 150


def sanitize_nodeid(nodeid):
    """A folder name for a test node id: ``tests/test_a.py::test_b[x-1]`` becomes
    ``tests_test_a.py__test_b_x-1_``; long ids are shortened and keep a hash."""
    name = re.sub(r"[^A-Za-z0-9_.=-]", "_", nodeid).lstrip(".") or "test"
    if len(name) > _MAX_NAME:
        digest = hashlib.sha1(nodeid.encode()).hexdigest()[:10]
        name = f"{name[:_MAX_NAME]}-{digest}"
    return name


def pytest_addoption(parser):
    group = parser.getgroup("oxla", "oxla artifacts")
    group.addoption(
        "--oxla-artifact-dir",
        default=None,
        metavar="DIR",
        help="give every test DIR/<node id>/ for oxla dumps, crash reproducers and failure.txt",
    )
    group.addoption(
        "--oxla-keep-passing",
        action="store_true",
        default=False,
        help="keep the artifact folders of passing tests that hold files",
    )


def pytest_configure(config):
    root = config.getoption("--oxla-artifact-dir")
    if not root:
        return
    root = pathlib.Path(config.invocation_params.dir, root).resolve()
    root.mkdir(parents=True, exist_ok=True)
    plugin = _ArtifactPlugin(root, config.getoption("--oxla-keep-passing"), config)
    config.pluginmanager.register(plugin, "oxla-artifacts")
    if hasattr(config.hook, "pytest_handlecrashitem"):
        config.pluginmanager.register(_CrashHooks(plugin), "oxla-artifacts-xdist")


def _is_xdist_worker(config):
    return hasattr(config, "workerinput")


def _is_xdist_controller(config):
    return not _is_xdist_worker(config) and getattr(config.option, "dist", "no") != "no"


class _ArtifactPlugin:
    def __init__(self, root, keep_passing, config):
        self.root = root
        self.keep_passing = keep_passing
        self.controller = _is_xdist_controller(config)
        self.failed = set()

    def folder(self, nodeid):
        return self.root / sanitize_nodeid(nodeid)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        folder = self.folder(item.nodeid)
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / RUNNING).write_text(f"{item.nodeid}\npid {os.getpid()}\n")
        previous = os.environ.get(ARTIFACT_DIR_ENV)
        os.environ[ARTIFACT_DIR_ENV] = str(folder)
        try:
            yield
        finally:
            if previous is None:
                os.environ.pop(ARTIFACT_DIR_ENV, None)
            else:
                os.environ[ARTIFACT_DIR_ENV] = previous
            (folder / RUNNING).unlink(missing_ok=True)
            self._finish(item.nodeid, folder)

    def pytest_runtest_logreport(self, report):
        # Under xdist the controller sees the workers' reports too; the workers write them.
        if self.controller or not report.failed:
            return
        self.failed.add(report.nodeid)
        self.write_failure(report.nodeid, report.when, report)

    def write_failure(self, nodeid, when, report):
        folder = self.folder(nodeid)
        folder.mkdir(parents=True, exist_ok=True)
        parts = [f"{nodeid} failed during {when}\n\n{report.longreprtext}\n"]
        for title, content in getattr(report, "sections", []):
            parts.append(f"\n----- {title} -----\n{content}")
        with open(folder / FAILURE, "a", encoding="utf-8") as out:
            out.write("".join(parts))

    def _finish(self, nodeid, folder):
        if nodeid in self.failed:
            return
        if self.keep_passing and any(folder.iterdir()):
            return
        shutil.rmtree(folder, ignore_errors=True)

    def mark_crashed(self, nodeid, text):
        folder = self.folder(nodeid)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / RUNNING).unlink(missing_ok=True)
        (folder / CRASHED).write_text(f"{nodeid}\n{text}\n")
        with open(folder / FAILURE, "a", encoding="utf-8") as out:
            out.write(f"{nodeid} crashed\n\n{text}\n")

    def pytest_sessionfinish(self, session):
        if _is_xdist_worker(session.config):
            return
        # A RUNNING marker left behind belongs to a test whose process died.
        for marker in self.root.glob(f"*/{RUNNING}"):
            nodeid = marker.read_text().splitlines()[0] if marker.stat().st_size else ""
            marker.rename(marker.with_name(CRASHED))
            with open(marker.with_name(FAILURE), "a", encoding="utf-8") as out:
                out.write(f"{nodeid} did not finish: its process died\n")


class _CrashHooks:
    """xdist's controller-side hook for a test that took its worker down."""

    def __init__(self, plugin):
        self.plugin = plugin

    def pytest_handlecrashitem(self, crashitem, report, sched):
        self.plugin.mark_crashed(crashitem, report.longreprtext)
