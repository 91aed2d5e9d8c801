"""Odradek installed as a user's project installs it: a wheel built from this checkout,
in a fresh virtual environment, beside a project of the user's own whose packages have
the common names `storage`, `protocol`, `broker` and `coordinator` (in the working
directory and installed in editable mode). Its tests use the plugin's fixtures and
`odradek.testing`, and see their own packages, not Odradek's."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from helpers.broker import REPO_ROOT

USER_PACKAGES = ("storage", "protocol", "broker", "coordinator")

PROJECT_PYPROJECT = """
    [project]
    name = "users-app"
    version = "1.0"

    [build-system]
    requires = ["setuptools>=68"]
    build-backend = "setuptools.build_meta"

    [tool.setuptools.packages.find]
    include = ["storage", "protocol", "broker", "coordinator"]
"""

PROJECT_TESTS = """
    import storage, protocol, broker, coordinator
    from confluent_kafka import Consumer, Producer

    from odradek.testing import Broker


    def test_the_projects_own_packages():
        for package in (storage, protocol, broker, coordinator):
            assert package.OWNER == "users-app", package.__file__


    def test_the_plugins_broker(odradek_bootstrap_servers):
        producer = Producer({"bootstrap.servers": odradek_bootstrap_servers})
        producer.produce("orders", b"one")
        assert producer.flush(15) == 0
        consumer = Consumer({"bootstrap.servers": odradek_bootstrap_servers,
                             "group.id": "g", "auto.offset.reset": "earliest"})
        consumer.subscribe(["orders"])
        message = None
        for _ in range(40):
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                break
        consumer.close()
        assert message is not None and message.value() == b"one"


    def test_a_broker_of_its_own_survives_kill_9(odradek_broker_factory):
        node = odradek_broker_factory(num_partitions=2)
        producer = Producer({"bootstrap.servers": node.bootstrap_servers, "acks": "all"})
        producer.produce("events", b"kept")
        assert producer.flush(15) == 0
        node.kill()
        node.restart()
        assert node.is_running()


    def test_the_testing_api():
        with Broker() as node:
            assert node.is_running()
"""


def run(*args: str | Path, cwd: Path | None = None, timeout: float = 600) -> str:
    # as in a user's shell: nothing of this checkout on the path
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, f"{args}:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done.stdout


def test_a_project_with_packages_of_the_same_names_uses_the_installed_wheel(
    tmp_path: Path,
) -> None:
    wheels = tmp_path / "wheels"
    run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", wheels, REPO_ROOT)
    (wheel,) = wheels.glob("odradek-*.whl")
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", venv)
    python = venv / "bin" / "python"
    run(python, "-m", "pip", "install", "-q", wheel, "pytest", "confluent-kafka")

    project = tmp_path / "users-app"
    for package in USER_PACKAGES:
        (project / package).mkdir(parents=True)
        (project / package / "__init__.py").write_text('OWNER = "users-app"\n')
    (project / "tests").mkdir()
    (project / "tests" / "__init__.py").write_text("")
    (project / "tests" / "test_app.py").write_text(textwrap.dedent(PROJECT_TESTS))
    (project / "pyproject.toml").write_text(textwrap.dedent(PROJECT_PYPROJECT))
    run(python, "-m", "pip", "install", "-q", "-e", project)

    output = run(python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests", cwd=project)
    assert "4 passed" in output, output
    # the command the wheel installs answers too
    assert "usage" in run(venv / "bin" / "odradek", "--help").lower()
