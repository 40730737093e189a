"""Shared fixtures of the Python tests: the repository's test stores and a registered session."""

from __future__ import annotations

import json
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
