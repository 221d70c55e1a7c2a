"""One window per user: a second start hands what it was asked to open to the running
window over a local socket and exits."""

from __future__ import annotations

import getpass
import hashlib
import json
import os
import re
from pathlib import Path

from PySide6.QtCore import QDir, QLockFile, QObject, Signal
from PySide6.QtNetwork import QLocalServer, QLocalSocket

from ..core.errors import ExplorerError

CONNECT_MS = 2000     # a listening window accepts at once; this long means there is none
ANSWER_MS = 30000     # a window still starting (loading a real model) answers once its event loop runs
LOCK_MS = 10000       # another start checking at the same moment holds the lock this long at most
ACK = b"ok\n"


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
        self.server = QLocalServer(self)
        self.server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        self.server.newConnection.connect(self._accept)
        self._partial: dict[QLocalSocket, bytes] = {}    # what each connection sent so far

    def listen(self) -> None:
        """Listen under the name, replacing a socket a crashed window left behind (call
        only after `hand_over` found no window answering)."""
        QLocalServer.removeServer(self.name)
        if not self.server.listen(self.name):
            raise ExplorerError(f"cannot listen for later starts on {self.name!r}: {self.server.errorString()}")

    def _accept(self) -> None:
        while self.server.hasPendingConnections():
            socket = self.server.nextPendingConnection()
            self._partial[socket] = b""
            socket.readyRead.connect(lambda s=socket: self._read(s))
            socket.disconnected.connect(lambda s=socket: self._closed(s))

    def _closed(self, socket: QLocalSocket) -> None:
        self._partial.pop(socket, None)
        socket.deleteLater()

    def _read(self, socket: QLocalSocket) -> None:
        if socket not in self._partial:                  # answered already
            return
        data = self._partial[socket] = self._partial[socket] + bytes(socket.readAll().data())
        if b"\n" not in data:
            return
        del self._partial[socket]
        line = data.split(b"\n", 1)[0]
        try:
            request = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            request = None
        socket.write(ACK if isinstance(request, dict) else b"bad request\n")
        socket.flush()
        socket.disconnectFromServer()
        if isinstance(request, dict):
            self.received.emit(request)


def hand_over(name: str, request: dict) -> bool:
    """Send `request` to a window listening under `name`; True once it answered. False if
    none is listening. Blocks (a start that is about to exit has no event loop to run).
    Raises ExplorerError if a window took the connection but never answered."""
    socket = QLocalSocket()
    socket.connectToServer(name)
    if not socket.waitForConnected(CONNECT_MS):
        return False
    socket.write(json.dumps(request).encode("utf-8") + b"\n")
    socket.waitForBytesWritten(CONNECT_MS)
    answer = b""
    while not answer.endswith(b"\n"):
        if not socket.waitForReadyRead(ANSWER_MS):
            break
        answer += bytes(socket.readAll().data())
    socket.abort()
    if answer == ACK:
        return True
    raise ExplorerError(f"a Token Explorer window is running but did not take the request "
                        f"({answer.decode('utf-8', 'replace').strip() or f'no answer in {ANSWER_MS // 1000} s'}); "
                        f"close it and start again")


def claim(name: str, request: dict) -> InstanceServer | None:
    """The server of this start if it is the first (listening already), or None once a
    running window took `request`. Needs a QCoreApplication (the server's notifier).

    The request is one line of JSON (`{"lesson": path}`, `{"model": key}`, `{"params":
    path}`, or `{}` to bring the window forward) answered by "ok". A socket left behind by a
    crashed window refuses the connection and is replaced; a lock file makes the
    check-then-listen of two starts at the same moment one after the other."""
    lock = QLockFile(QDir(QDir.tempPath()).filePath(f"{name}.lock"))
    if not lock.tryLock(LOCK_MS):
        raise ExplorerError(f"another start of Token Explorer holds {lock.fileName()}; try again")
    try:
        if hand_over(name, request):
            return None
        server = InstanceServer(name)
        server.listen()
        return server
    finally:
        lock.unlock()
