"""Every Python example of the README and the user guide runs as written: each document's
```python blocks (but those marked no_run), in order, in one scope, in a directory holding
links to the repository's tests/ and queries/. Examples end with their own asserts."""

from __future__ import annotations

import re

import pytest

from conftest import ROOT

FENCE = re.compile(r"^```python([^\n]*)\n(.*?)^```", re.S | re.M)


def documents() -> list:
    docs = [ROOT / "README.md", ROOT / "python" / "README.md"]
    return docs + sorted((ROOT / "docs").glob("*.md"))


def examples(path) -> list[tuple[int, str]]:
    text = path.read_text()
    out = []
    for match in FENCE.finditer(text):
        if "no_run" in match.group(1) or "ignore" in match.group(1):
            continue
        line = text.count("\n", 0, match.start()) + 2
        out.append((line, match.group(2)))
    return out


@pytest.mark.parametrize("document", documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_python_examples_run(document, tmp_path, monkeypatch) -> None:
    for name in ("tests", "queries"):
        (tmp_path / name).symlink_to(ROOT / name)
    monkeypatch.chdir(tmp_path)
    scope: dict = {"__name__": "__doc_example__"}
    for line, code in examples(document):
        label = f"{document.relative_to(ROOT)}:{line}"
        exec(compile(code, label, "exec"), scope)  # noqa: S102 - our own documents


def test_the_readme_and_package_page_have_python_examples() -> None:
    assert examples(ROOT / "README.md"), "the README has a Python example"
    assert len(examples(ROOT / "python" / "README.md")) >= 2
