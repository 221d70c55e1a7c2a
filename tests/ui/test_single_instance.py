"""One window per user: a second `token-explorer LESSON.toml` hands the file to the running
window (here: this test's window, listening under the name the second process computes
from the same settings folder) and exits; a broken file is reported in that window."""

import os
import socket
import subprocess
import sys
from pathlib import Path

import explorer
from explorer.resources import resources_dir
from explorer.ui.app import apply_request
from explorer.ui.single_instance import InstanceServer, claim, instance_name

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


def test_a_second_start_hands_its_lesson_file_to_the_running_window(window, qtbot, tmp_path):
    server = listening_window(window, tmp_path)
    lesson = resources_dir() / "lessons" / "beam.toml"
    assert window.lesson.id != "beam"
    with qtbot.waitSignal(server.received, timeout=60_000) as handed:
        started = second_start(tmp_path, str(lesson))
    out, err = started.communicate(timeout=60)
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
    assert started.wait(timeout=60) == 0
    assert window.errors[-1] == "broken.toml: title: missing"        # the file and the problem
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
