"""`token-explorer --install-launcher` / `--uninstall-launcher`: the launcher each platform
expects (a freedesktop entry, a Start-menu shortcut, a macOS app bundle), planned as data
(`plan`) and carried out by `install` / `uninstall`, which write like the export does: all
or nothing, never through a link, never over a file they did not write, and uninstall
removes only what the install recorded in its manifest."""

from __future__ import annotations

import hashlib
import json
import os
import plistlib
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import ExplorerError
from ..core.jsonfile import atomic_file, read_json
from ..core.userfile import check_replaceable
from .icons import ICO_SIZES, ICON_NAME, PNG_SIZES, pack_icns, pack_ico, png_path, shipped_pngs, svg_path

APP_NAME = "Token Explorer"
COMMAND = "token-explorer"
COMMENT = "See how a language model produces text one token at a time"
LESSON_MIME = "application/x-token-explorer-lesson"
LESSON_FORMAT = 'format = "token-explorer/lesson"'     # the first key of every lesson file
BUNDLE_ID = "org.token-explorer.TokenExplorer"        # macOS bundle id; the Windows ProgID below
WINDOWS_PROGID = "TokenExplorer.Lesson"
MANIFEST = "launcher.json"                            # what an install wrote, in a folder of this app's own
MANIFEST_FORMAT = "token-explorer/launcher-manifest"
MANIFEST_LIMIT = 1 << 20                              # bytes of a manifest read at most


class LauncherError(ExplorerError):
    """The launcher could not be installed or removed; the message says which file and why."""


@dataclass(frozen=True)
class Command:
    """How to start this installation: the program and its first arguments, and a folder to
    put on PYTHONPATH when the package runs from a checkout (not installed)."""
    argv: tuple[str, ...]
    pythonpath: str | None = None


@dataclass(frozen=True)
class LauncherFile:
    path: Path
    data: bytes
    executable: bool = False


@dataclass(frozen=True)
class Launcher:
    """What installing the launcher does on one platform."""
    platform: str                                   # "linux" | "windows" | "macos"
    files: tuple[LauncherFile, ...]                 # written (folders made as needed)
    manifest: Path                                  # where the install records what it wrote
    shown: tuple[Path, ...]                         # the main files, named when installed
    made: tuple[Path, ...] = ()                     # files the `after` commands make (recorded too)
    caches: tuple[tuple[Path, str], ...] = ()       # (folder, glob of its sources): what the `after`
                                                    # commands generate there is recorded, and removed
                                                    # once no source is left in it
    registry: tuple[tuple[str, str, str], ...] = ()  # Windows: (key under HKEY_CURRENT_USER, value name, data)
    after: tuple[tuple[str, ...], ...] = ()         # commands run after installing, when their program exists
    after_uninstall: tuple[tuple[str, ...], ...] = ()
    notes: tuple[str, ...] = ()                     # lines printed after installing


def current_platform() -> str:
    if sys.platform == "win32":
        return "windows"
    return "macos" if sys.platform == "darwin" else "linux"


def this_installation(platform: str | None = None) -> Command:
    """The command that starts this installation: the `token-explorer` script beside the
    running interpreter (a virtual environment's or pipx's), else the interpreter with
    `-m explorer` (on Windows `pythonw`, which opens no console window)."""
    platform = platform or current_platform()
    bin_dir = Path(sys.executable).parent
    if platform == "windows":
        windowless = bin_dir / "pythonw.exe"
        python = str(windowless if windowless.exists() else sys.executable)
        return Command((python, "-m", "explorer"), _checkout_path())
    script = bin_dir / COMMAND
    if script.exists():
        return Command((str(script),))
    return Command((sys.executable, "-m", "explorer"), _checkout_path())


def _checkout_path() -> str | None:
    """The folder holding the `explorer` package when the interpreter would not find it
    by itself (a checkout run with PYTHONPATH=src), else None."""
    here = Path(__file__).resolve().parents[2]   # src/, above explorer/desktop/
    installed = {Path(sysconfig.get_paths()[key]).resolve() for key in ("purelib", "platlib")}
    return None if here in installed else str(here)


# ---------------------------------------------------------------------------- Linux
def exec_quote(arg: str) -> str:
    """One argument of a desktop entry's Exec key (freedesktop Desktop Entry spec, "The Exec
    key"): quoted when it holds a reserved character, `"` `` ` `` `$` `\\` escaped inside the
    quotes, then the string escape of `\\`, and `%` doubled."""
    reserved = set(" \t\n\"'\\><~|&;$*?#()`")
    if arg and not reserved & set(arg):
        return arg.replace("%", "%%")
    quoted = "".join("\\" + c if c in '"`$\\' else c for c in arg)
    return ('"' + quoted + '"').replace("\\", "\\\\").replace("%", "%%")


def desktop_entry(command: Command) -> str:
    """The `.desktop` file: `%f` hands it the lesson file opened in the file manager."""
    argv = command.argv if command.pythonpath is None else ("env", f"PYTHONPATH={command.pythonpath}",
                                                          *command.argv)
    lines = [
        "[Desktop Entry]",
        "Type=Application",
        "Version=1.0",
        f"Name={APP_NAME}",
        "Name[zh_CN]=Token 探索器",
        "GenericName=Language model explorer",
        "GenericName[zh_CN]=语言模型探索器",
        f"Comment={COMMENT}",
        "Comment[zh_CN]=用真实的数字，一步一步看语言模型如何逐个Token生成文本",
        "Exec=" + " ".join(exec_quote(a) for a in argv) + " %f",
        f"Icon={ICON_NAME}",
        "Terminal=false",
        "StartupNotify=true",
        f"StartupWMClass={COMMAND}",
        "Categories=Education;ArtificialIntelligence;",
        "Keywords=LLM;language model;token;transformer;attention;KV cache;sampling;",
        f"MimeType={LESSON_MIME};",
    ]
    return "\n".join(lines) + "\n"


def mime_package() -> str:
    """shared-mime-info's description of lesson files: a `*.lesson.toml` name (longer than
    TOML's `*.toml`, so it wins), or a file that says it is a lesson near its top (read
    when the name does not decide, e.g. an attachment saved without a suffix)."""
    spaced, tight = LESSON_FORMAT, LESSON_FORMAT.replace(" = ", "=")
    matches = "\n".join(f'      <match type="string" offset="0:4096" value="{v.replace(chr(34), "&quot;")}"/>'
                        for v in (spaced, tight))
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<mime-info xmlns="http://www.freedesktop.org/standards/shared-mime-info">
  <mime-type type="{LESSON_MIME}">
    <comment>Token Explorer lesson</comment>
    <comment xml:lang="zh_CN">Token 探索器课程</comment>
    <sub-class-of type="application/toml"/>
    <icon name="{ICON_NAME}"/>
    <glob pattern="*.lesson.toml" weight="60"/>
    <magic priority="80">
{matches}
    </magic>
  </mime-type>
</mime-info>
"""


def linux_launcher(env: dict, home: Path, command: Command) -> Launcher:
    xdg = env.get("XDG_DATA_HOME") or ""
    data = Path(xdg) if os.path.isabs(xdg) else home / ".local" / "share"   # a relative one is ignored (XDG spec)
    desktop = data / "applications" / f"{COMMAND}.desktop"
    mime = data / "mime" / "packages" / f"{COMMAND}.xml"
    icons = data / "icons" / "hicolor"
    files = [LauncherFile(desktop, desktop_entry(command).encode()),
             LauncherFile(mime, mime_package().encode())]
    files += [LauncherFile(icons / f"{n}x{n}" / "apps" / f"{ICON_NAME}.png", png_path(n).read_bytes())
              for n in PNG_SIZES]
    files.append(LauncherFile(icons / "scalable" / "apps" / f"{ICON_NAME}.svg", svg_path().read_bytes()))
    refresh = (("update-mime-database", str(data / "mime")),
               ("update-desktop-database", str(data / "applications")))
    return Launcher("linux", tuple(files), data / COMMAND / MANIFEST, (desktop, mime, icons),
                    caches=((data / "mime", "packages/*.xml"), (data / "applications", "*.desktop")),
                    after=refresh, after_uninstall=refresh)


# ---------------------------------------------------------------------------- Windows
def ps_quote(text: str) -> str:
    """A PowerShell single-quoted string (a quote inside is doubled)."""
    return "'" + text.replace("'", "''") + "'"


def windows_args(argv: tuple[str, ...]) -> str:
    """Arguments as one Windows command line (quoted where they hold a space)."""
    return " ".join(f'"{a}"' if " " in a or not a else a for a in argv)


def windows_launcher(env: dict, home: Path, command: Command) -> Launcher:
    appdata = Path(env.get("APPDATA") or home / "AppData" / "Roaming")
    icon = appdata / APP_NAME / f"{ICON_NAME}.ico"
    shortcut = appdata / "Microsoft" / "Windows" / "Start Menu" / "Programs" / f"{APP_NAME}.lnk"
    target, *args = command.argv
    folder = command.pythonpath or str(home)       # `-m explorer` finds a checkout's package here
    script = "; ".join([
        "$s = (New-Object -ComObject WScript.Shell).CreateShortcut(" + ps_quote(str(shortcut)) + ")",
        "$s.TargetPath = " + ps_quote(target),
        "$s.Arguments = " + ps_quote(windows_args(tuple(args))),
        "$s.WorkingDirectory = " + ps_quote(folder),
        "$s.IconLocation = " + ps_quote(f"{icon},0"),
        "$s.Description = " + ps_quote(COMMENT),
        "$s.Save()",
    ])
    open_command = f'"{target}" {windows_args(tuple(args))} "%1"'
    classes = r"Software\Classes"
    registry = ((rf"{classes}\{WINDOWS_PROGID}", "", "Token Explorer lesson"),
                (rf"{classes}\{WINDOWS_PROGID}\DefaultIcon", "", f"{icon},0"),
                (rf"{classes}\{WINDOWS_PROGID}\shell\open\command", "", open_command),
                (rf"{classes}\.toml\OpenWithProgids", WINDOWS_PROGID, ""))
    ico = pack_ico(shipped_pngs(ICO_SIZES))
    return Launcher("windows", (LauncherFile(icon, ico),), icon.parent / MANIFEST, (shortcut, icon),
                    made=(shortcut,), registry=registry,
                    after=(("powershell", "-NoProfile", "-NonInteractive", "-Command", script),),
                    notes=("Lesson files: right-click a .toml file, Open with → Token Explorer.",))


# ---------------------------------------------------------------------------- macOS
def sh_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def macos_launcher(env: dict, home: Path, command: Command) -> Launcher:
    bundle = home / "Applications" / f"{APP_NAME}.app"
    contents = bundle / "Contents"
    info = {
        "CFBundleName": APP_NAME,
        "CFBundleDisplayName": APP_NAME,
        "CFBundleIdentifier": BUNDLE_ID,
        "CFBundleExecutable": COMMAND,
        "CFBundleIconFile": f"{ICON_NAME}.icns",
        "CFBundlePackageType": "APPL",
        "CFBundleInfoDictionaryVersion": "6.0",
        "LSApplicationCategoryType": "public.app-category.education",
        "NSHighResolutionCapable": True,
        # offered in Finder's "Open With" for TOML files, never made their default app
        "CFBundleDocumentTypes": [{"CFBundleTypeName": "Token Explorer lesson", "CFBundleTypeRole": "Viewer",
                                   "CFBundleTypeExtensions": ["toml"], "LSHandlerRank": "Alternate"}],
    }
    export = [] if command.pythonpath is None else [f"export PYTHONPATH={sh_quote(command.pythonpath)}"]
    script = "\n".join(["#!/bin/sh", "# starts Token Explorer from where it is installed", *export,
                        "exec " + " ".join(sh_quote(a) for a in command.argv) + ' "$@"']) + "\n"
    files = (LauncherFile(contents / "Info.plist", plistlib.dumps(info, sort_keys=True)),
             LauncherFile(contents / "MacOS" / COMMAND, script.encode(), executable=True),
             LauncherFile(contents / "Resources" / f"{ICON_NAME}.icns", pack_icns(shipped_pngs())))
    register = ("/System/Library/Frameworks/CoreServices.framework/Frameworks/LaunchServices.framework"
                "/Support/lsregister", "-f", str(bundle))
    manifest = home / "Library" / "Application Support" / APP_NAME / MANIFEST
    return Launcher("macos", files, manifest, (bundle,), after=(register,))


PLANNERS = {"linux": linux_launcher, "windows": windows_launcher, "macos": macos_launcher}


def plan(platform: str | None = None, env: dict | None = None, home: Path | None = None,
         command: Command | None = None) -> Launcher:
    """The launcher for `platform` (default: this one), for the user whose environment and
    home are given (default: the current user's), starting `command` (default: this
    installation).

    - Linux (freedesktop): a `.desktop` entry with the icon, the icon in the user's hicolor
      theme, and a MIME type for lesson files (`application/x-token-explorer-lesson`: a name
      `*.lesson.toml`, or `format = "token-explorer/lesson"` in the first 4 KB of a file whose
      name says nothing).
    - Windows: a Start-menu shortcut (made by PowerShell's WScript.Shell) with an `.ico`, and
      "Open with Token Explorer" for `.toml` files.
    - macOS: `~/Applications/Token Explorer.app`, a small bundle whose executable starts this
      installation, with an `.icns` and `.toml` files as documents it can open."""
    platform = platform or current_platform()
    return PLANNERS[platform](os.environ if env is None else env, Path.home() if home is None else home,
                              command or this_installation(platform))


# ---------------------------------------------------------------------------- carrying out
def _run_after(commands) -> None:
    """Run the follow-up commands whose program exists; LauncherError with what one printed
    (or that it printed nothing) when it fails."""
    for argv in commands:
        if not (shutil.which(argv[0]) or Path(argv[0]).is_file()):
            continue
        try:
            done = subprocess.run(list(argv), capture_output=True, stdin=subprocess.DEVNULL)
        except OSError as exc:
            raise LauncherError(f"could not run {argv[0]}: {exc.strerror or exc}") from None
        if done.returncode != 0:
            said = b"\n".join(t.strip() for t in (done.stderr, done.stdout) if t.strip())
            said = said.decode("utf-8", "replace") or "it printed nothing"
            raise LauncherError(f"{' '.join(argv)} failed (exit {done.returncode}): {said}")


def _write_registry(values) -> None:
    import winreg      # Windows only

    for key, name, data in values:
        with winreg.CreateKey(winreg.HKEY_CURRENT_USER, key) as handle:
            winreg.SetValueEx(handle, name, 0, winreg.REG_SZ, data)


def progid_keys(values) -> list[str]:
    """The registry keys of our own ProgID and every key under it that `values` made,
    deepest first (the order they can be deleted in)."""
    ours = set()
    for key, _name, _data in values:
        parts = key.split("\\")
        if WINDOWS_PROGID in parts:
            ours.update("\\".join(parts[:n]) for n in range(parts.index(WINDOWS_PROGID) + 1, len(parts) + 1))
    return sorted(ours, key=lambda k: (-k.count("\\"), k))


def _delete_registry(values) -> None:
    """The values, then the keys of our own ProgID, deepest first (.toml's key stays)."""
    import winreg

    for key, name, _data in values:
        try:
            with winreg.OpenKey(winreg.HKEY_CURRENT_USER, key, 0, winreg.KEY_SET_VALUE) as handle:
                winreg.DeleteValue(handle, name)
        except FileNotFoundError:
            pass
    for key in progid_keys(values):
        try:
            winreg.DeleteKey(winreg.HKEY_CURRENT_USER, key)
        except OSError:               # gone already, or holds something not ours
            pass


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _file_sha256(path: Path) -> str | None:
    """The digest of a regular file at `path` (not followed through a link), else None."""
    try:
        if not path.is_symlink() and path.is_file():
            return _sha256(path.read_bytes())
    except OSError:
        pass
    return None


@dataclass
class Manifest:
    """What installs of the launcher wrote: files with their digests, the folders they
    created, and what the follow-up commands generated in a cache folder."""
    files: dict[str, str]
    folders: list[str]
    generated: dict[str, list[str]]

    def text(self) -> str:
        return json.dumps({"format": MANIFEST_FORMAT, "files": self.files, "folders": self.folders,
                           "generated": self.generated}, indent=1, sort_keys=True) + "\n"


def read_manifest(path: Path) -> Manifest | None:
    """The manifest at `path`, None if there is none; LauncherError naming it if it is not one."""
    if not os.path.lexists(path):
        return None
    value = read_json(path, LauncherError, MANIFEST_LIMIT, "launcher manifest")
    strings = lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v)
    if not (isinstance(value, dict) and value.get("format") == MANIFEST_FORMAT
            and isinstance(value.get("files"), dict) and all(isinstance(v, str) for v in value["files"].values())
            and strings(value.get("folders")) and isinstance(value.get("generated"), dict)
            and all(strings(v) for v in value["generated"].values())):
        raise LauncherError(f"{path}: not a launcher manifest (expected format = {MANIFEST_FORMAT!r} with files, "
                            f"folders and generated); remove the launcher's files by hand and then this file")
    return Manifest(value["files"], value["folders"], value["generated"])


def _tree(folder: Path) -> set[str]:
    return {str(p) for p in folder.rglob("*")} if folder.is_dir() else set()


class _Journal:
    """What one install has written so far, so that a failure can take it back: the new
    files, the old bytes of the files it replaced, the folders it created."""

    def __init__(self):
        self.written: list[tuple[Path, bytes | None]] = []
        self.folders: list[Path] = []

    def make_folders(self, folder: Path) -> None:
        missing = [p for p in (folder, *folder.parents) if not os.path.lexists(p)]
        for path in reversed(missing):
            path.mkdir()
            self.folders.append(path)

    def write(self, path: Path, data: bytes, executable: bool = False) -> None:
        self.make_folders(path.parent)
        before = path.read_bytes() if path.is_file() else None
        with atomic_file(path) as out:              # a regular file or a new name, never a link
            out.write(data)
        self.written.append((path, before))
        if executable:
            path.chmod(0o755)

    def undo(self) -> None:
        for path, before in reversed(self.written):
            try:
                if before is None:
                    path.unlink(missing_ok=True)
                else:
                    with atomic_file(path) as out:
                        out.write(before)
            except (OSError, ExplorerError):
                pass
        _remove_empty(self.folders)


def _remove_empty(folders) -> None:
    """Each folder that is empty, deepest first (one holding anything stays)."""
    for folder in sorted(map(Path, folders), key=lambda p: -len(p.parts)):
        try:
            folder.rmdir()
        except OSError:
            pass


def _check_target(path: Path, data: bytes, owned: dict[str, str]) -> None:
    """A launcher file may be written at `path` if nothing is there, or a regular file this
    launcher wrote (its digest is in the manifest, or it already holds these bytes)."""
    _check_free(path)
    digest = _file_sha256(path)
    if digest is not None and digest not in (owned.get(str(path)), _sha256(data)):
        raise LauncherError(f"{path}: already exists and was not written by --install-launcher; "
                            f"nothing was installed (move it away and try again)")


def _check_free(path: Path) -> None:
    """LauncherError unless `path` is free or a regular file (a link is never written through)."""
    if not os.path.lexists(path):
        return
    try:
        check_replaceable(path)
    except ExplorerError as exc:
        raise LauncherError(f"{exc}; nothing was installed") from None


def install(launcher: Launcher) -> list[str]:
    """Write the launcher's files, set its registry values, run its follow-up commands, and
    record what was written in the manifest. All or nothing: on any failure what this
    install wrote is removed and the files it replaced get their bytes back. Returns the
    lines to print: what was written."""
    old = read_manifest(launcher.manifest) or Manifest({}, [], {})
    for f in launcher.files:
        _check_target(f.path, f.data, old.files)
    for path in launcher.made:                       # a shortcut of that name the user made stays theirs
        _check_target(path, b"", old.files)
    _check_free(launcher.manifest)
    journal, before = _Journal(), {str(folder): _tree(folder) for folder, _sources in launcher.caches}
    registered = False
    try:
        for f in launcher.files:
            journal.write(f.path, f.data, f.executable)
        if launcher.registry:
            registered = True
            _write_registry(launcher.registry)
        _run_after(launcher.after)
        journal.make_folders(launcher.manifest.parent)
        files = {**old.files, **{str(f.path): _sha256(f.data) for f in launcher.files}}
        files.update({str(p): d for p in launcher.made if (d := _file_sha256(p)) is not None})
        generated = {folder: sorted(set(old.generated.get(folder, ())) | (_tree(Path(folder)) - seen))
                     for folder, seen in before.items()}
        folders = sorted(set(old.folders) | {str(p) for p in journal.folders})
        journal.write(launcher.manifest, Manifest(files, folders, generated).text().encode())
    except BaseException as exc:
        for folder, seen in before.items():          # what a follow-up command generated meanwhile
            for path in sorted(_tree(Path(folder)) - seen - {str(p) for p, old in journal.written if old},
                               key=len, reverse=True):
                _remove_path(Path(path))
        journal.undo()
        if registered:
            _delete_registry(launcher.registry)
        if isinstance(exc, OSError):
            where = f"{exc.filename}: " if exc.filename else ""
            raise LauncherError(f"{where}{exc.strerror or exc}; nothing was installed") from None
        raise
    return [f"Installed the {APP_NAME} launcher for this user:", *(f"  {p}" for p in launcher.shown),
            *launcher.notes]


def _remove_path(path: Path) -> None:
    """A generated file, or a generated folder once empty."""
    try:
        if path.is_dir() and not path.is_symlink():
            path.rmdir()
        else:
            path.unlink(missing_ok=True)
    except OSError:
        pass


def uninstall(launcher: Launcher) -> list[str]:
    """Remove what the installs recorded in the manifest and nothing else: a file only if it
    still holds the bytes the install wrote (a file of that name the user wrote stays), the
    folders they created once empty, and what the follow-up commands generated in a cache
    folder once no source is left in it (else the cache is refreshed). Without a manifest
    (a launcher installed before there was one), the planned files that hold exactly what
    the plan would write."""
    manifest = read_manifest(launcher.manifest)
    if manifest is None:
        manifest = Manifest({str(f.path): _sha256(f.data) for f in launcher.files}, [], {})
    removed, kept = [], []
    for name, digest in manifest.files.items():
        path = Path(name)
        if _file_sha256(path) == digest:
            path.unlink()
            removed.append(path)
        elif os.path.lexists(path):
            kept.append(path)
    if launcher.registry:
        _delete_registry(launcher.registry)
    for folder, sources in launcher.caches:
        if str(folder) in manifest.folders and not any(Path(folder).glob(sources)):
            inside = [p for p in manifest.generated.get(str(folder), ()) if Path(p).is_relative_to(folder)]
            for path in sorted(inside, key=len, reverse=True):
                _remove_path(Path(path))
    if os.path.lexists(launcher.manifest):
        launcher.manifest.unlink()
    _remove_empty(manifest.folders)
    _run_after(c for c in launcher.after_uninstall if Path(c[-1]).is_dir())   # a folder left: refresh it
    lines = [f"Kept {p}: it is not the file the launcher wrote." for p in kept]
    if not removed:
        return [f"No {APP_NAME} launcher was installed for this user.", *lines]
    return [f"Removed the {APP_NAME} launcher:", *(f"  {p}" for p in removed), *lines]
