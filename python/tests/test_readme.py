"""The README's Python example runs as written, from the repository root."""

from __future__ import annotations

import re

import pyarrow.parquet as pq

from conftest import ROOT


def test_readme_python_example(monkeypatch) -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Using it from Python", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 1, "one Python example"
    monkeypatch.chdir(ROOT)
    scope: dict = {}
    exec(compile(blocks[0], "README.md", "exec"), scope)  # noqa: S102 - our own README
    names = scope["table"].column("name").to_pylist()
    assert names and all(n.startswith("S") for n in names)
    assert scope["labels"].num_rows == 27
    assert scope["ctx"].sql("SELECT count(*) AS n FROM labels").to_pydict() == {"n": [27]}
    exported = pq.read_table("/tmp/big_cities.parquet")
    assert exported.column_names == ["name", "population"]
    assert scope["rows"] == exported.num_rows > 0
    assert all(p > 5_000_000 for p in exported.column("population").to_pylist())
