"""One window per user: a second start hands what it was asked to open to the running
window over a local socket and exits. It never waits long: a window that takes the
connection but does not answer within seconds (hung, or still loading a model) is said to,
and this start opens its own window."""

from __future__ import annotations

import getpass
import hashlib
import json
import os
import re
from pathlib import Path

from PySide6.QtCore import QDir, QElapsedTimer, QLockFile, QObject, Signal
from PySide6.QtNetwork import QLocalServer, QLocalSocket

from ..core.errors import ExplorerError
from ..i18n import add_messages

CONNECT_MS = 1000     # a listening window accepts at once; this long means there is none
ANSWER_MS = 3000      # a running window answers at once; one still loading a real model may not
LOCK_MS = 2 * CONNECT_MS + ANSWER_MS + 1000   # another start checking at the same moment holds the lock this long at most
ACK = b"ok\n"
MAX_REQUEST_BYTES = 64 << 10     # a request names a file or a model: a line far shorter than this
MAX_REQUEST_TEXT = 4096          # characters of one value (a path)
REQUEST_KEYS = ("lesson", "model", "params")

add_messages({
    "instance.unanswered": {"en": "Another Token Explorer window did not answer within {seconds} s: this one "
                                  "opened instead (close the other if it is still there)",
                            "zh": "另一个Token Explorer窗口在{seconds}秒内没有回应，于是打开了这个窗口（如果那个窗口还在，可以关掉它）"},
})


class Unanswered(ExplorerError):
    """A window took the connection but gave no answer in time (or a wrong one)."""


def instance_name(env=None) -> str:
    """The socket's name: one per user and settings folder (XDG_CONFIG_HOME / APPDATA), so a
    test or a second account with its own settings gets a window of its own."""
    env = os.environ if env is None else env
    try:
        user = getpass.getuser()
    except (KeyError, OSError):              # no name for this uid (a container)
        user = str(os.getuid()) if hasattr(os, "getuid") else "user"
    folder = env.get("XDG_CONFIG_HOME") or env.get("APPDATA") or env.get("HOME") or str(Path.home())
    digest = hashlib.sha256(f"{user}\0{folder}".encode()).hexdigest()[:12]
    return f"token-explorer-{re.sub(r'[^A-Za-z0-9_.-]', '_', user)[:32]}-{digest}"


class InstanceServer(QObject):
    """The running window's end: `received` carries each request a later start sent."""

    received = Signal(dict)

    def __init__(self, name: str, parent: QObject | None = None):
        super().__init__(parent)
        self.name = name
        self.notice = ""     # why this start listens although a window seemed to run ("" when none did)
        self.server = QLocalServer(self)
        self.server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        self.server.newConnection.connect(self._accept)
        self._partial: dict[QLocalSocket, bytearray] = {}    # what each connection sent so far

    def listen(self) -> None:
        """Listen under the name, replacing a socket a crashed window left behind (call
        only after `hand_over` found no window answering)."""
        QLocalServer.removeServer(self.name)
        if not self.server.listen(self.name):
            raise ExplorerError(f"cannot listen for later starts on {self.name!r}: {self.server.errorString()}")

    def _accept(self) -> None:
        while self.server.hasPendingConnections():
            socket = self.server.nextPendingConnection()
            self._partial[socket] = bytearray()
            socket.readyRead.connect(lambda s=socket: self._read(s))
            socket.disconnected.connect(lambda s=socket: self._closed(s))

    def _closed(self, socket: QLocalSocket) -> None:
        self._partial.pop(socket, None)
        socket.deleteLater()

    def _read(self, socket: QLocalSocket) -> None:
        """Gather the request line (appended in place: linear in its size), at most
        MAX_REQUEST_BYTES; answer it once it is whole, or as soon as it is too long."""
        data = self._partial.get(socket)
        if data is None:                                 # answered already
            return
        start = len(data)
        data += bytes(socket.readAll().data())
        end = data.find(b"\n", max(0, start))
        if end < 0 and len(data) <= MAX_REQUEST_BYTES:
            return
        del self._partial[socket]
        request, problem = (None, f"more than {MAX_REQUEST_BYTES:,} bytes") if end < 0 or end > MAX_REQUEST_BYTES \
            else checked_request(bytes(data[:end]))
        socket.write(ACK if request is not None else f"bad request: {problem}\n".encode("utf-8"))
        socket.flush()
        socket.disconnectFromServer()
        if request is not None:
            self.received.emit(request)


def checked_request(line: bytes) -> tuple[dict | None, str]:
    """(the request, "") of one line a later start sent, or (None, what is wrong): a JSON
    object whose keys are among REQUEST_KEYS, each a text of at most MAX_REQUEST_TEXT
    characters without NUL. Anything else, however deep or odd, is refused, never raised."""
    try:
        value = json.loads(line.decode("utf-8"))
    except UnicodeDecodeError:
        return None, "not UTF-8 text"
    except (json.JSONDecodeError, RecursionError, ValueError) as exc:
        return None, f"not one line of JSON ({type(exc).__name__})"
    if not isinstance(value, dict):
        return None, "expected a JSON object"
    for key, item in value.items():
        if key not in REQUEST_KEYS:
            return None, f"unknown key {key[:40]!r} (expected {', '.join(REQUEST_KEYS)})"
        if not isinstance(item, str) or not item or len(item) > MAX_REQUEST_TEXT or "\0" in item:
            return None, f"{key}: expected a path or a name (text of 1 to {MAX_REQUEST_TEXT:,} characters)"
    return value, ""


def hand_over(name: str, request: dict) -> bool:
    """Send `request` to a window listening under `name`; True once it answered. False if
    none is listening. Blocks, at most CONNECT_MS twice and ANSWER_MS (a start that is about
    to exit has no event loop to run). Raises Unanswered if a window took the connection but
    gave no answer in time."""
    socket = QLocalSocket()
    socket.connectToServer(name)
    if not socket.waitForConnected(CONNECT_MS):
        return False
    socket.write(json.dumps(request).encode("utf-8") + b"\n")
    socket.waitForBytesWritten(CONNECT_MS)
    answer, timer = b"", QElapsedTimer()
    timer.start()
    while not answer.endswith(b"\n") and timer.elapsed() < ANSWER_MS:    # one deadline for the whole answer
        if socket.waitForReadyRead(max(1, ANSWER_MS - timer.elapsed())):
            answer += bytes(socket.readAll().data())
        elif socket.state() != QLocalSocket.LocalSocketState.ConnectedState:
            break
    socket.abort()
    if answer == ACK:
        return True
    said = answer.decode("utf-8", "replace").strip()
    raise Unanswered("a Token Explorer window seems to be running but "
                     + (f"did not take the request ({said})" if said else f"did not answer in {ANSWER_MS // 1000} s"))


def claim(name: str, request: dict) -> InstanceServer | None:
    """The server of this start if it is the first (listening already), or None once a
    running window took `request`. Needs a QCoreApplication (the server's notifier).

    The request is one line of JSON (`{"lesson": path}`, `{"model": key}`, `{"params":
    path}`, or `{}` to bring the window forward) answered by "ok". A socket left behind by a
    crashed window refuses the connection and is replaced; so is one whose window does not
    answer in time (the server's `notice` says so). A lock file makes the check-then-listen
    of two starts at the same moment one after the other (a lock left by a start that
    died is taken over at once; one held longer than LOCK_MS is an error)."""
    lock = QLockFile(QDir(QDir.tempPath()).filePath(f"{name}.lock"))
    lock.setStaleLockTime(LOCK_MS)
    if not lock.tryLock(LOCK_MS):
        raise ExplorerError(f"another start of Token Explorer has held {lock.fileName()} for more than "
                            f"{LOCK_MS // 1000} s; try again, or remove that file if no other start is running")
    try:
        try:
            if hand_over(name, request):
                return None
            notice = ""
        except Unanswered as exc:
            notice = f"{exc}: opening a new window (close the other one if it is still there)"
        server = InstanceServer(name)
        server.notice = notice
        server.listen()
        return server
    finally:
        lock.unlock()
