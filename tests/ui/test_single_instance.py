"""One window per user: a second `token-explorer LESSON.toml` hands the file to the running
window (here: this test's window, listening under the name the second process computes
from the same settings folder) and exits; a broken file is reported in that window."""

import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from PySide6.QtCore import QDir, QLockFile

import explorer
from explorer.core.errors import ExplorerError
from explorer.resources import resources_dir
from explorer.ui.app import apply_request
from explorer.ui.single_instance import ANSWER_MS, CONNECT_MS, InstanceServer, claim, hand_over, instance_name

PACKAGE_ROOT = str(Path(explorer.__file__).resolve().parent.parent)


def second_start(tmp_path, *args):
    """`token-explorer ARGS` as another process, with this test's settings folder."""
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config"), "QT_QPA_PLATFORM": "offscreen",
           "PYTHONPATH": PACKAGE_ROOT}
    return subprocess.Popen([sys.executable, "-m", "explorer", *args], env=env, cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def listening_window(window, tmp_path):
    server = InstanceServer(instance_name({"XDG_CONFIG_HOME": str(tmp_path / "config")}), window)
    server.listen()
    server.received.connect(lambda request: apply_request(window, request))
    return server


def ended(qtbot, started):
    """(stdout, stderr) of the second start once it has ended, the running window's events
    handled meanwhile: its answer must reach the second start before that one's deadline
    (blocked in wait(), the window would not answer, and the second start would open a
    window of its own)."""
    qtbot.waitUntil(lambda: started.poll() is not None, timeout=120_000)
    return started.communicate()


def test_a_second_start_hands_its_lesson_file_to_the_running_window(window, qtbot, tmp_path):
    server = listening_window(window, tmp_path)
    lesson = resources_dir() / "lessons" / "beam.toml"
    assert window.lesson.id != "beam"
    with qtbot.waitSignal(server.received, timeout=60_000) as handed:
        started = second_start(tmp_path, str(lesson))
    out, err = ended(qtbot, started)
    assert started.returncode == 0, err
    assert out == "token-explorer: Token Explorer is already running: its window opens it\n"
    assert handed.args == [{"lesson": str(lesson)}]
    assert window.lesson.id == "beam" and window.lesson.title_in("en") in window.windowTitle()


def test_a_broken_lesson_file_is_reported_in_the_running_window(window, qtbot, tmp_path):
    server = listening_window(window, tmp_path)
    broken = tmp_path / "broken.toml"
    broken.write_text('format = "token-explorer/lesson"\nversion = 1\n', encoding="utf-8")
    shown = window.lesson
    with qtbot.waitSignal(server.received, timeout=60_000):
        started = second_start(tmp_path, "broken.toml")            # relative to the second start's folder
    ended(qtbot, started)
    assert started.returncode == 0
    assert window.errors[-1] == "broken.toml:1: title: missing"        # the file, the line and the problem
    assert window.statusBar().currentMessage() == window.errors[-1]
    assert window.lesson is shown                                    # the lesson shown stays

    apply_request(window, {"lesson": str(tmp_path / "gone.toml")})
    assert window.errors[-1].endswith("gone.toml: file not found")


def test_a_socket_left_by_a_crashed_window_is_replaced(qapp, tmp_path):
    name = instance_name({"XDG_CONFIG_HOME": str(tmp_path / "crashed")})
    dead = InstanceServer(name)
    dead.listen()
    path = dead.server.fullServerName()
    dead.server.close()                   # Qt removes its socket file; a crash would not:
    left = socket.socket(socket.AF_UNIX)
    left.bind(path)                       # a socket file nobody listens on
    left.close()
    server = claim(name, {"lesson": "beam"})   # finds no window answering, so it listens itself
    assert server is not None and server.server.isListening() and server.server.fullServerName() == path
    server.server.close()


def test_instance_names_differ_by_settings_folder():
    one, two = instance_name({"XDG_CONFIG_HOME": "/a"}), instance_name({"XDG_CONFIG_HOME": "/b"})
    assert one != two and one.startswith("token-explorer-") and one == instance_name({"XDG_CONFIG_HOME": "/a"})


# ---------------------------------------------------------------------------- a window that does not answer

class Unresponsive:
    """A socket at the instance's name that accepts every connection, reads what it is sent
    and never answers (a hung window)."""

    def __init__(self, name: str):
        probe = InstanceServer(name)
        probe.listen()
        self.path = probe.server.fullServerName()
        probe.server.close()
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.bind(self.path)
        self.sock.listen(4)
        self.accepted: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        try:
            while True:
                conn, _ = self.sock.accept()
                self.accepted.append(conn)
                conn.recv(4096)                  # takes the request, says nothing
        except OSError:                          # closed by `close`
            pass

    def close(self):
        for conn in self.accepted:
            conn.close()
        self.sock.close()


@pytest.fixture
def unresponsive(tmp_path):
    server = Unresponsive(instance_name({"XDG_CONFIG_HOME": str(tmp_path / "config")}))
    yield server
    server.close()


GENEROUS = 3 * (2 * CONNECT_MS + ANSWER_MS) / 1000     # s: what a start may take at most, three times over


def test_a_window_that_never_answers_is_said_to_and_this_start_listens_itself(qapp, tmp_path, unresponsive):
    name = instance_name({"XDG_CONFIG_HOME": str(tmp_path / "config")})
    started = time.monotonic()
    server = claim(name, {"lesson": "beam"})
    assert time.monotonic() - started < GENEROUS
    assert unresponsive.accepted                                   # it did reach the hung window
    assert server is not None and server.server.isListening() and server.server.fullServerName() == unresponsive.path
    assert "did not answer in 3 s" in server.notice and "opening a new window" in server.notice
    server.server.close()


def test_a_second_start_facing_a_hung_window_opens_its_own(qapp, tmp_path, unresponsive):
    started = second_start(tmp_path, "--lesson", "beam")
    try:
        line = read_line(started.stderr, GENEROUS + 60)             # + the start-up of Python and Qt
        assert line.startswith("token-explorer: a Token Explorer window seems to be running but did not answer")
        # its own window listens under the name: a third start is answered by it
        name = instance_name({"XDG_CONFIG_HOME": str(tmp_path / "config")})
        assert wait_for(lambda: hand_over(name, {}), GENEROUS + 60)
    finally:
        started.send_signal(signal.SIGTERM)
        started.communicate(timeout=60)
    assert started.returncode == 143


def test_a_lock_left_by_a_start_that_died_is_taken_at_once(qapp, tmp_path):
    name = instance_name({"XDG_CONFIG_HOME": str(tmp_path / "died")})
    code = ("import os, sys; from PySide6.QtCore import QDir, QLockFile; "
            f"lock = QLockFile(QDir(QDir.tempPath()).filePath('{name}.lock')); "
            "assert lock.tryLock(0); os._exit(0)")          # dies holding it: the file stays
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    assert (Path(QDir.tempPath()) / f"{name}.lock").exists()
    started = time.monotonic()
    server = claim(name, {})
    assert server is not None and server.notice == "" and time.monotonic() - started < GENEROUS
    server.server.close()


def test_a_lock_held_too_long_is_an_error_with_a_message(qapp, tmp_path):
    name = instance_name({"XDG_CONFIG_HOME": str(tmp_path / "held")})
    held = QLockFile(QDir(QDir.tempPath()).filePath(f"{name}.lock"))
    held.setStaleLockTime(0)                  # this test's own lock never goes stale
    assert held.tryLock(0)
    try:
        with pytest.raises(ExplorerError, match=r"another start of Token Explorer has held .* for more than"):
            claim(name, {})
    finally:
        held.unlock()


def read_line(stream, seconds: float) -> str:
    """The next line of `stream`, waiting at most `seconds` (a thread reads it)."""
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: lines.put(stream.readline()), daemon=True).start()
    return lines.get(timeout=seconds)


def wait_for(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return False


# ---------------------------------------------------------------------------- hostile requests

def raw_exchange(qtbot, server, payload: bytes) -> bytes:
    """Send `payload` to `server` as another program might (from a thread: the window's
    event loop runs meanwhile) and return what it answered."""
    answer = queue.Queue()

    def talk():
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(server.server.fullServerName())
            try:
                s.sendall(payload)
            except OSError:               # the server answered and hung up before it all went
                pass
            data = b""
            while not data.endswith(b"\n"):
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
            answer.put(data)
    threading.Thread(target=talk, daemon=True).start()
    qtbot.waitUntil(lambda: not answer.empty(), timeout=60_000)
    return answer.get()


HOSTILE = {  # request line -> what the answer says
    "a list where a path belongs": (b'{"model": ["x"]}\n', b"model: expected a path or a name"),
    "a number where a path belongs": (b'{"params": 7}\n', b"params: expected a path or a name"),
    "an unknown key": (b'{"lessons": "beam"}\n', b"unknown key 'lessons'"),
    "not an object": (b'["beam"]\n', b"expected a JSON object"),
    "200,000 nested brackets": (b"[" * 200_000 + b"\n", b"more than 65,536 bytes"),
    "60,000 nested brackets": (b"[" * 60_000 + b"]" * 60_000 + b"\n", b"more than 65,536 bytes"),
    "20,000 nested brackets": (b"[" * 20_000 + b"]" * 20_000 + b"\n", b"not one line of JSON"),
    "no end of line in 1 MB": (b"x" * (1 << 20), b"more than 65,536 bytes"),
    "not UTF-8": (b'{"lesson": "\xff"}\n', b"not UTF-8 text"),
    "a NUL in a path": (b'{"lesson": "a\\u0000b"}\n', b"lesson: expected a path or a name"),
    "a path of 10,000 characters": (b'{"lesson": "' + b"a" * 10_000 + b'"}\n', b"lesson: expected a path"),
    "a value that is no JSON": (b"{'lesson': beam}\n", b"not one line of JSON"),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_hostile_request_is_answered_as_bad_and_changes_nothing(window, qtbot, tmp_path, case):
    server = listening_window(window, tmp_path)
    payload, said = HOSTILE[case]
    shown, received = window.lesson, []
    server.received.connect(received.append)
    answer = raw_exchange(qtbot, server, payload)
    assert answer.startswith(b"bad request: ") and said in answer, answer
    assert received == [] and window.lesson is shown and window.errors == []
    assert raw_exchange(qtbot, server, b"{}\n") == b"ok\n"          # and the next start is still answered


def test_a_burst_of_failed_requests_keeps_one_error_box(window, qtbot, tmp_path):
    listening_window(window, tmp_path)
    for i in range(30):
        apply_request(window, {"lesson": str(tmp_path / f"gone-{i}.toml")})
    from PySide6.QtWidgets import QMessageBox
    boxes = [w for w in window.findChildren(QMessageBox) if w.isVisible()]
    assert len(boxes) == 1 and boxes[0] is window._last_box
    assert "gone-29.toml" in boxes[0].text() and "the latest of 30 problems" in boxes[0].text()
    assert len(window.errors) == 30
