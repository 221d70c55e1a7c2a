"""`token-explorer --install-launcher` / `--uninstall-launcher`: the launcher each platform
expects (a freedesktop entry, a Start-menu shortcut, a macOS app bundle), planned as data
(`plan`) and carried out by `install` / `uninstall`."""

from __future__ import annotations

import os
import plistlib
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from .icons import ICO_SIZES, ICON_NAME, PNG_SIZES, pack_icns, pack_ico, png_path, shipped_pngs, svg_path

APP_NAME = "Token Explorer"
COMMAND = "token-explorer"
COMMENT = "See how a language model produces text one token at a time"
LESSON_MIME = "application/x-token-explorer-lesson"
LESSON_FORMAT = 'format = "token-explorer/lesson"'     # the first key of every lesson file
BUNDLE_ID = "org.token-explorer.TokenExplorer"        # macOS bundle id; the Windows ProgID below
WINDOWS_PROGID = "TokenExplorer.Lesson"


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
    remove: tuple[Path, ...]                        # uninstall deletes these: files, this app's bundle
                                                    # folder, other folders once empty (in this order)
    shown: tuple[Path, ...]                         # the main files, named when installed
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
    data = Path(env.get("XDG_DATA_HOME") or home / ".local" / "share")
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
    return Launcher("linux", tuple(files), tuple(f.path for f in files), (desktop, mime, icons),
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
    return Launcher("windows", (LauncherFile(icon, ico),), (shortcut, icon, icon.parent), (shortcut, icon),
                    registry=registry,
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
    return Launcher("macos", files, (bundle,), (bundle,), after=(register,))


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
    for argv in commands:
        if shutil.which(argv[0]) or Path(argv[0]).is_file():
            subprocess.run(list(argv), check=True, capture_output=True)


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


def install(launcher: Launcher) -> list[str]:
    """Write the launcher's files, set its registry values, run its follow-up commands.
    Returns the lines to print: what was written."""
    for f in launcher.files:
        f.path.parent.mkdir(parents=True, exist_ok=True)
        f.path.write_bytes(f.data)
        if f.executable:
            f.path.chmod(0o755)
    if launcher.registry:
        _write_registry(launcher.registry)
    _run_after(launcher.after)
    return [f"Installed the {APP_NAME} launcher for this user:", *(f"  {p}" for p in launcher.shown),
            *launcher.notes]


def _is_our_bundle(folder: Path) -> bool:
    info = folder / "Contents" / "Info.plist"
    return info.is_file() and plistlib.loads(info.read_bytes()).get("CFBundleIdentifier") == BUNDLE_ID


def uninstall(launcher: Launcher) -> list[str]:
    """Remove what `install` wrote (a bundle folder only if it is this app's bundle)."""
    removed = []
    for path in launcher.remove:
        if path.is_dir():
            if _is_our_bundle(path):
                shutil.rmtree(path)
                removed.append(path)
            elif not any(path.iterdir()):
                path.rmdir()
        elif path.exists():
            path.unlink()
            removed.append(path)
    if launcher.registry:
        _delete_registry(launcher.registry)
    _run_after(launcher.after_uninstall)
    if not removed:
        return [f"No {APP_NAME} launcher was installed for this user."]
    return [f"Removed the {APP_NAME} launcher:", *(f"  {p}" for p in removed)]
