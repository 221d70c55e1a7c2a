"""`token-explorer --install-launcher`: the files each platform's launcher writes, with the
home and XDG folders pointed at a temporary folder. The Linux entry is checked by
freedesktop's own validator when it is installed (desktop-file-utils) and by its keys."""

import configparser
import os
import plistlib
import shutil
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import explorer
from explorer.desktop import launcher
from explorer.desktop.icons import ICNS_TYPES, ICO_SIZES, PNG_SIZES, png_size
from explorer.desktop.launcher import LESSON_FORMAT, LESSON_MIME, Command
from explorer.resources import resources_dir

PACKAGE_ROOT = str(Path(explorer.__file__).resolve().parent.parent)
MIME_NS = "{http://www.freedesktop.org/standards/shared-mime-info}"


def desktop_keys(path: Path) -> dict:
    parser = configparser.ConfigParser(interpolation=None, strict=True)
    parser.optionxform = str                       # keys are case-sensitive
    parser.read(path, encoding="utf-8")
    assert parser.sections() == ["Desktop Entry"]
    return dict(parser["Desktop Entry"])


def exec_words(value: str) -> list[str]:
    """The Exec key's arguments, read as the Desktop Entry spec says: the string escape of
    a backslash first, then the quoting; %% is a literal %."""
    text = value.replace("\\\\", "\\")
    words, word, quoted, i = [], "", False, 0
    while i < len(text):
        c = text[i]
        if quoted and c == "\\":
            word, i = word + text[i + 1], i + 2
            continue
        if c == '"':
            quoted = not quoted
        elif c == " " and not quoted:
            words.append(word)
            word = ""
        else:
            word += c
        i += 1
    return [w.replace("%%", "%") for w in words + [word]]


def test_the_linux_entry_starts_this_installation_with_its_icon_and_lesson_files(tmp_path):
    data = tmp_path / "data"
    strange = "/opt/my apps/$HOME \"x\" 100%/bin/token-explorer"     # every escape the spec has
    plan = launcher.plan("linux", {"XDG_DATA_HOME": str(data)}, tmp_path / "home", Command((strange,)))
    lines = launcher.install(plan)
    desktop = data / "applications" / "token-explorer.desktop"
    assert lines[0] == "Installed the Token Explorer launcher for this user:" and f"  {desktop}" in lines

    keys = desktop_keys(desktop)
    if shutil.which("desktop-file-validate"):
        checked = subprocess.run(["desktop-file-validate", str(desktop)], capture_output=True, text=True)
        assert checked.returncode == 0 and checked.stdout == "", checked.stdout
    # the keys the spec requires and the ones this entry is for
    assert keys["Type"] == "Application" and keys["Name"] == "Token Explorer" and keys["Terminal"] == "false"
    assert exec_words(keys["Exec"]) == [strange, "%f"]          # %f: the file opened in the file manager
    assert keys["MimeType"] == f"{LESSON_MIME};"
    assert keys["Icon"] == "token-explorer"
    assert set(keys["Categories"].rstrip(";").split(";")) >= {"Education"}
    for size in PNG_SIZES:
        icon = data / "icons" / "hicolor" / f"{size}x{size}" / "apps" / "token-explorer.png"
        assert png_size(icon.read_bytes()) == (size, size)
    assert (data / "icons" / "hicolor" / "scalable" / "apps" / "token-explorer.svg").read_text().startswith("<?xml")

    # the MIME type: a *.lesson.toml name, or a TOML file that says it is a lesson near its top
    mime = ET.parse(data / "mime" / "packages" / "token-explorer.xml").getroot()
    kind = mime.find(f"{MIME_NS}mime-type")
    assert kind.get("type") == LESSON_MIME
    assert kind.find(f"{MIME_NS}sub-class-of").get("type") == "application/toml"
    assert kind.find(f"{MIME_NS}glob").get("pattern") == "*.lesson.toml"
    matches = [m.get("value") for m in kind.iter(f"{MIME_NS}match")]
    assert LESSON_FORMAT in matches and all(m.get("offset") == "0:4096" for m in kind.iter(f"{MIME_NS}match"))
    lessons = sorted((resources_dir() / "lessons").glob("*.toml"))
    assert lessons and all(any(m.encode() in p.read_bytes()[:4096] for m in matches) for p in lessons)
    if shutil.which("update-mime-database"):      # it read the package: the type is in the database
        assert (data / "mime" / "application" / "x-token-explorer-lesson.xml").is_file()

    lines = launcher.uninstall(plan)
    assert lines[0] == "Removed the Token Explorer launcher:"
    assert not data.exists()          # every file, folder and MIME cache it made: data/ did not exist before
    assert launcher.uninstall(plan) == ["No Token Explorer launcher was installed for this user."]


def test_the_planned_command_starts_this_installation():
    command = launcher.this_installation()
    env = dict(os.environ)
    if command.pythonpath is not None:
        assert command.pythonpath == PACKAGE_ROOT
        env["PYTHONPATH"] = command.pythonpath
    done = subprocess.run([*command.argv, "--version"], capture_output=True, text=True, env=env, cwd="/")
    assert done.returncode == 0 and done.stdout.strip() == f"token-explorer {explorer.__version__}"


def test_a_console_script_beside_the_interpreter_is_preferred(tmp_path, monkeypatch):
    (tmp_path / "bin").mkdir()
    script = tmp_path / "bin" / "token-explorer"
    script.write_text("#!/bin/sh\n")
    monkeypatch.setattr(sys, "executable", str(tmp_path / "bin" / "python"))
    assert launcher.this_installation("linux") == Command((str(script),))
    assert launcher.this_installation("windows").argv == (str(tmp_path / "bin" / "python"), "-m", "explorer")
    (tmp_path / "bin" / "pythonw.exe").write_text("")          # Windows: no console window
    assert launcher.this_installation("windows").argv[0] == str(tmp_path / "bin" / "pythonw.exe")


def ico_images(data: bytes) -> dict[int, bytes]:
    reserved, kind, count = struct.unpack("<HHH", data[:6])
    assert (reserved, kind) == (0, 1)
    images = {}
    for i in range(count):
        width, height, _c, _r, planes, bits, size, offset = struct.unpack("<BBBBHHII", data[6 + 16 * i:22 + 16 * i])
        image = data[offset:offset + size]
        side = width or 256
        assert (width, height, planes, bits) == (width, width, 1, 32) and png_size(image) == (side, side)
        images[side] = image
    return images


def test_the_windows_shortcut_and_open_with(tmp_path):
    appdata = tmp_path / "AppData" / "Roaming"
    command = Command((r"C:\Users\O'Neil\venv\Scripts\pythonw.exe", "-m", "explorer"))
    plan = launcher.plan("windows", {"APPDATA": str(appdata)}, tmp_path, command)
    (icon,) = plan.files
    assert icon.path == appdata / "Token Explorer" / "token-explorer.ico"
    assert sorted(ico_images(icon.data)) == sorted(ICO_SIZES)
    shortcut = appdata / "Microsoft" / "Windows" / "Start Menu" / "Programs" / "Token Explorer.lnk"
    assert plan.made == (shortcut,) and plan.manifest == appdata / "Token Explorer" / "launcher.json"
    (program, *options, script), = plan.after
    assert (program, options) == ("powershell", ["-NoProfile", "-NonInteractive", "-Command"])
    assert f"CreateShortcut('{shortcut}')" in script
    assert r"$s.TargetPath = 'C:\Users\O''Neil\venv\Scripts\pythonw.exe'" in script   # ' doubled
    assert "$s.Arguments = '-m explorer'" in script
    assert f"$s.IconLocation = '{icon.path},0'" in script and script.endswith("$s.Save()")
    registry = {(key, name): value for key, name, value in plan.registry}
    assert registry[(r"Software\Classes\TokenExplorer.Lesson\shell\open\command", "")] == \
        '"C:\\Users\\O\'Neil\\venv\\Scripts\\pythonw.exe" -m explorer "%1"'
    assert registry[(r"Software\Classes\.toml\OpenWithProgids", "TokenExplorer.Lesson")] == ""
    # uninstalling deletes our ProgID's keys deepest first, never .toml's own
    progid = r"Software\Classes\TokenExplorer.Lesson"
    assert launcher.progid_keys(plan.registry) == [
        progid + r"\shell\open\command", progid + r"\shell\open", progid + r"\DefaultIcon", progid + r"\shell", progid]


def test_the_macos_app_bundle(tmp_path):
    command = Command(("/bin/echo", "started"))       # stands in for the interpreter: it shows its arguments
    plan = launcher.plan("macos", {}, tmp_path, command)
    launcher.install(plan)
    bundle = tmp_path / "Applications" / "Token Explorer.app"
    info = plistlib.loads((bundle / "Contents" / "Info.plist").read_bytes())
    assert info["CFBundleIdentifier"] == launcher.BUNDLE_ID and info["CFBundlePackageType"] == "APPL"
    (documents,) = info["CFBundleDocumentTypes"]
    assert documents["CFBundleTypeExtensions"] == ["toml"] and documents["LSHandlerRank"] == "Alternate"
    executable = bundle / "Contents" / "MacOS" / info["CFBundleExecutable"]
    assert os.access(executable, os.X_OK)
    ran = subprocess.run([str(executable), "my lesson.toml"], capture_output=True, text=True)
    assert ran.stdout == "started my lesson.toml\n"
    icns = (bundle / "Contents" / "Resources" / info["CFBundleIconFile"]).read_bytes()
    assert icns[:4] == b"icns" and struct.unpack(">I", icns[4:8])[0] == len(icns)
    at, kinds = 8, []
    while at < len(icns):
        kind, length = icns[at:at + 4].decode(), struct.unpack(">I", icns[at + 4:at + 8])[0]
        kinds.append((kind, png_size(icns[at + 8:at + length])[0]))
        at += length
    assert kinds == list(ICNS_TYPES)

    other = tmp_path / "Applications" / "Other.app" / "Contents"
    other.mkdir(parents=True)
    (other / "Info.plist").write_bytes(plistlib.dumps({"CFBundleIdentifier": "org.example.other"}))
    assert launcher.uninstall(plan)[1:] == [f"  {f.path}" for f in plan.files] and not bundle.exists()
    assert other.is_dir()                             # never removes another app's bundle
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Applications"]   # Library/... made for the manifest: gone


def test_install_and_uninstall_from_the_command_line(tmp_path):
    env = {**os.environ, "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data"),
           "APPDATA": str(tmp_path / "appdata"), "PYTHONPATH": PACKAGE_ROOT}
    installed = subprocess.run([sys.executable, "-m", "explorer", "--install-launcher"], capture_output=True,
                               text=True, env=env)
    assert installed.returncode == 0, installed.stderr
    assert installed.stdout.startswith("Installed the Token Explorer launcher for this user:\n")
    written = [Path(line.strip()) for line in installed.stdout.splitlines()[1:] if line.startswith("  ")]
    assert written and all(p.exists() and str(p).startswith(str(tmp_path)) for p in written)
    removed = subprocess.run([sys.executable, "-m", "explorer", "--uninstall-launcher"], capture_output=True,
                             text=True, env=env)
    assert removed.returncode == 0 and removed.stdout.startswith("Removed the Token Explorer launcher:\n")
    assert not any(p.is_file() for p in written)


def test_the_launcher_needs_no_qt():
    """It is installed from a terminal, maybe one without a display."""
    probe = "import sys, explorer.desktop.launcher; print(sorted(m for m in sys.modules if m.startswith('PySide6')))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": PACKAGE_ROOT})
    assert done.returncode == 0 and done.stdout == "[]\n", done.stderr


# ---------------------------------------------------------------------------- writing like the export does
def linux_plan(tmp_path: Path) -> launcher.Launcher:
    return launcher.plan("linux", {"XDG_DATA_HOME": str(tmp_path / "data")}, tmp_path / "home",
                         Command(("/opt/bin/token-explorer",)))


def tree(folder: Path) -> dict[str, bytes | None]:
    """Every path under `folder` -> its bytes (None for a folder, the target for a link)."""
    return {str(p.relative_to(folder)): (os.readlink(p).encode() if p.is_symlink() else
                                         None if p.is_dir() else p.read_bytes()) for p in folder.rglob("*")}


def test_a_symlink_named_like_a_launcher_file_is_refused_and_its_target_kept(tmp_path):
    plan = linux_plan(tmp_path)
    mine = tmp_path / "my-notes.txt"
    mine.write_text("the user's own file")
    desktop = tmp_path / "data" / "applications" / "token-explorer.desktop"
    desktop.parent.mkdir(parents=True)
    desktop.symlink_to(mine)
    before = tree(tmp_path)
    with pytest.raises(launcher.LauncherError, match=rf"^{desktop}: is a symbolic link to {mine}, which is a "
                                                     rf"regular file; refusing to replace it .*nothing was installed"):
        launcher.install(plan)
    assert tree(tmp_path) == before and mine.read_text() == "the user's own file"


def test_a_desktop_file_of_that_name_the_user_wrote_is_neither_replaced_nor_removed(tmp_path):
    plan = linux_plan(tmp_path)
    desktop = tmp_path / "data" / "applications" / "token-explorer.desktop"
    desktop.parent.mkdir(parents=True)
    desktop.write_text("[Desktop Entry]\nName=my own entry\n")
    before = tree(tmp_path)
    with pytest.raises(launcher.LauncherError, match="already exists and was not written by --install-launcher"):
        launcher.install(plan)
    assert tree(tmp_path) == before
    assert launcher.uninstall(plan)[0] == "No Token Explorer launcher was installed for this user."
    assert desktop.read_text() == "[Desktop Entry]\nName=my own entry\n"
    desktop.unlink()                                   # installed, then the user replaces the entry
    launcher.install(plan)
    desktop.write_text("[Desktop Entry]\nName=edited by hand\n")
    lines = launcher.uninstall(plan)
    assert f"Kept {desktop}: it is not the file the launcher wrote." in lines
    assert desktop.read_text() == "[Desktop Entry]\nName=edited by hand\n"
    assert tree(tmp_path / "data") == {"applications": None, "applications/token-explorer.desktop":
                                       b"[Desktop Entry]\nName=edited by hand\n"}


def test_a_failure_halfway_takes_back_what_the_install_wrote_and_keeps_what_was_there(tmp_path):
    plan = linux_plan(tmp_path)
    data = tmp_path / "data"
    (data / "mime" / "packages").mkdir(parents=True)
    (data / "mime" / "packages" / "other-app.xml").write_text("<mime-info/>")      # another app's type
    (data / "icons").write_text("a file where the icons folder belongs")          # root can write anywhere
    before = tree(tmp_path)
    with pytest.raises(launcher.LauncherError, match=rf"{data / 'icons'}.*nothing was installed"):
        launcher.install(plan)
    assert tree(tmp_path) == before                   # the entry and the MIME type written first: gone


def test_a_failing_refresh_command_is_named_with_its_reason_and_takes_the_install_back(tmp_path):
    failing = tmp_path / "bin" / "update-mime-database"
    failing.parent.mkdir()
    failing.write_text("#!/bin/sh\nexit 3\n")                                      # prints nothing
    failing.chmod(0o755)
    plan = linux_plan(tmp_path)
    plan = launcher.Launcher(**{**plan.__dict__, "after": ((str(failing), str(tmp_path / "data" / "mime")),)})
    with pytest.raises(launcher.LauncherError, match=rf"^{failing} {tmp_path / 'data' / 'mime'} failed "
                                                     r"\(exit 3\): it printed nothing$"):
        launcher.install(plan)
    assert not (tmp_path / "data").exists()
    failing.write_text("#!/bin/sh\necho 'the database is locked' >&2\nexit 1\n")
    with pytest.raises(launcher.LauncherError, match=r"failed \(exit 1\): the database is locked$"):
        launcher.install(plan)


def test_a_relative_xdg_data_home_is_ignored(tmp_path):
    plan = launcher.plan("linux", {"XDG_DATA_HOME": "relative/share"}, tmp_path, Command(("te",)))
    assert plan.files[0].path == tmp_path / ".local" / "share" / "applications" / "token-explorer.desktop"
    assert all(str(f.path).startswith(str(tmp_path)) for f in plan.files)


def test_uninstall_removes_only_what_the_manifest_lists_and_keeps_another_apps_files(tmp_path):
    plan = linux_plan(tmp_path)
    data = tmp_path / "data"
    (data / "applications").mkdir(parents=True)
    (data / "applications" / "other.desktop").write_text("[Desktop Entry]\nName=Other\n")
    (data / "mime" / "packages").mkdir(parents=True)
    (data / "mime" / "packages" / "other-app.xml").write_text(
        '<?xml version="1.0"?><mime-info xmlns="http://www.freedesktop.org/standards/shared-mime-info">'
        '<mime-type type="application/x-other"><glob pattern="*.other"/></mime-type></mime-info>')
    launcher.install(plan)
    installed = launcher.read_manifest(plan.manifest)
    assert set(installed.files) == {str(f.path) for f in plan.files}
    assert str(data / "icons") in installed.folders and str(data / "applications") not in installed.folders
    assert launcher.install(plan)[0].startswith("Installed")                     # a second install: fine
    decoy = data / "icons" / "hicolor" / "48x48" / "apps" / "my-icon.png"       # the user's, in our folder
    decoy.write_bytes(b"mine")
    launcher.uninstall(plan)
    left = tree(data)
    assert left["applications/other.desktop"] and left["mime/packages/other-app.xml"]
    assert left["icons/hicolor/48x48/apps/my-icon.png"] == b"mine"
    assert not any("token-explorer" in name for name in left)
    if shutil.which("update-mime-database"):            # the other app's type is still in the refreshed cache
        assert (data / "mime" / "application" / "x-other.xml").is_file()
        assert not (data / "mime" / "application" / "x-token-explorer-lesson.xml").exists()


def test_a_manifest_that_is_not_one_is_named_and_nothing_is_removed(tmp_path):
    plan = linux_plan(tmp_path)
    launcher.install(plan)
    plan.manifest.write_text('{"format": "token-explorer/launcher-manifest", "files": [1]}')
    before = tree(tmp_path)
    with pytest.raises(launcher.LauncherError, match=rf"^{plan.manifest}: not a launcher manifest"):
        launcher.uninstall(plan)
    assert tree(tmp_path) == before


def test_the_command_line_says_why_in_one_line(tmp_path):
    (tmp_path / "data").mkdir()
    mine = tmp_path / "mine.txt"
    mine.write_text("keep")
    (tmp_path / "data" / "applications").mkdir()
    (tmp_path / "data" / "applications" / "token-explorer.desktop").symlink_to(mine)
    env = {**os.environ, "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data"), "PYTHONPATH": PACKAGE_ROOT}
    done = subprocess.run([sys.executable, "-m", "explorer", "--install-launcher"], capture_output=True,
                          text=True, env=env, timeout=120)
    assert done.returncode == 2 and done.stderr.startswith("token-explorer: error: ") and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "symbolic link" in done.stderr and mine.read_text() == "keep"
