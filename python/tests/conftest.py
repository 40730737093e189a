"""Shared fixtures of the Python tests: the repository's test stores, a registered session, and
nginx serving the corpus over HTTP."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import datafusion
import pytest

import datafusion_zarr

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "data" / "corpus"
FIXTURES = ROOT / "tests" / "data" / "fixtures"
MALFORMED = ROOT / "tests" / "data" / "malformed"


def corpus_cases() -> list[tuple[str, dict]]:
    """Every corpus case with its expected.json, by name."""
    cases = []
    for case in sorted(CORPUS.iterdir()):
        expected = case / "expected.json"
        if expected.exists():
            cases.append((case.name, json.loads(expected.read_text())))
    assert len(cases) == 18, "the corpus has 18 cases"
    return cases


def store(case: str) -> str:
    """The store directory of a corpus case."""
    return str(CORPUS / case / "data.zarr")


@pytest.fixture
def ctx() -> datafusion.SessionContext:
    """A session with read_zarr and STORED AS ZARR registered."""
    ctx = datafusion.SessionContext()
    datafusion_zarr.register(ctx)
    return ctx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def http_root(tmp_path_factory):
    """The corpus served by nginx with range requests and one-level WebDAV listing."""
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not os.path.exists(nginx):
        pytest.fail("nginx is missing: run tools/install-test-servers first")
    prefix = tmp_path_factory.mktemp("nginx")
    port = free_port()
    user = "user root;" if os.geteuid() == 0 else ""
    conf = prefix / "nginx.conf"
    template = ROOT / "crates/test-support/src/servers/nginx.conf"  # the Rust tests' too
    values = {"user": user, "prefix": str(prefix), "port": str(port), "root": str(CORPUS)}
    text = template.read_text()
    for key, value in values.items():
        text = text.replace("{" + key + "}", value)
    conf.write_text(text)
    process = subprocess.Popen([nginx, "-p", str(prefix), "-c", str(conf)])
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    pytest.fail(f"nginx did not start: {(prefix / 'error.log').read_text()}")
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)
