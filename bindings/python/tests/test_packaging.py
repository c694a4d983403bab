"""What the installed distribution promises: the license (the repository's
own text), the metadata package indexes show, and the typing files."""

from __future__ import annotations

import importlib.metadata
import re

import payidem
from conftest import REPO

PACKAGE = REPO / "bindings" / "python"


def test_the_package_license_is_a_byte_identical_copy_of_the_repository_license() -> None:
    # maturin only packages license files from inside the project directory,
    # so bindings/python/LICENSE is a copy; it must never drift.
    assert (PACKAGE / "LICENSE").read_bytes() == (REPO / "LICENSE").read_bytes()


def test_the_installed_distribution_carries_the_license() -> None:
    dist = importlib.metadata.distribution("payidem")
    assert dist.metadata["License"] == "Apache-2.0"
    assert "License-Expression" not in dist.metadata  # core metadata 2.4: one or the other
    assert "License :: OSI Approved :: Apache Software License" in dist.metadata.get_all("Classifier", [])
    files = [f for f in dist.files or [] if f.parts[-2:] == ("licenses", "LICENSE")]
    assert len(files) == 1, dist.files
    assert files[0].locate().read_bytes() == (REPO / "LICENSE").read_bytes()


def test_metadata_names_the_project_and_what_it_runs_on() -> None:
    meta = importlib.metadata.metadata("payidem")
    assert meta["Version"] == payidem.__version__
    assert meta["Requires-Python"] == ">=3.9"
    urls = dict(entry.split(", ", 1) for entry in meta.get_all("Project-URL", []))
    assert set(urls) == {"Homepage", "Repository", "Documentation", "Issues"}
    # The workspace's repository URL, the one every crate publishes.
    found = re.search(r'^repository = "([^"]+)"$', (REPO / "Cargo.toml").read_text(), re.M)
    assert found is not None
    repository = found.group(1)
    assert urls["Homepage"] == urls["Repository"] == repository
    assert urls["Documentation"].startswith(repository + "/") and urls["Issues"].startswith(repository + "/")
    classifiers = set(meta.get_all("Classifier", []))
    for required in (
        "Operating System :: POSIX :: Linux",
        "Topic :: Office/Business :: Financial",
        "Typing :: Typed",
        *(f"Programming Language :: Python :: 3.{minor}" for minor in range(9, 14)),
    ):
        assert required in classifiers, required
    assert any(c.startswith("Development Status :: ") for c in classifiers)


def test_typing_files_are_installed() -> None:
    dist = importlib.metadata.distribution("payidem")
    names = {f.name for f in dist.files or [] if f.parts[0] == "payidem"}
    assert {"py.typed", "_native.pyi"} <= names, names
