"""Every number the command line takes goes through one parser that states its range: a
hostile value (5,000 digits, NaN, 1e309, an empty item, a range that runs backwards) is exit
2 with the flag, the value shortened and the range, never a traceback. Slide shapes are
those the layout and PowerPoint take; --out says what stands in the way; a closed or full
standard output ends as documented (141 quietly, or 2 with "the disk is full")."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import pytest

from cli_parsers import commands
from paths import SRC

from explorer.cli.main import main
from explorer.core.limits import Whole
from explorer.export.spec import MAX_SIDE, MIN_HEIGHT, MIN_RATIO

HUGE = "9" * 5000                       # past Python's 4,300-digit int-string limit
HOSTILE = [HUGE, "-1", "0", "1e309", "nan", "inf", "", "1,,2", "1e3", "１２"]   # the last: full-width digits
# flags whose text is read once the lesson is known (its frame count, the formats)
LATE = {("export", "--frames"): [HUGE, "-1", "0", "", "1,,2", "3-1", "1e309", "nan", "99"],
        ("export", "--size"): [HUGE + "x1080", "1920x" + HUGE, "-1x1080", "0x0", "", "nanxnan", "1e309x1080",
                               "8192x240", "320x1400", "1920"]}
NEEDS = {"sample": ["--logits=2,1,0"], "install": ["smollm2"], "check": ["x.toml"]}   # what each requires besides


def numeric_flags():
    """(command path, flag, its number kind) of every flag read by the one number parser."""
    for path, parser in commands():
        for action in parser._actions:
            kind = getattr(action, "kind", None)
            if kind is not None:
                yield path, action.option_strings[0], kind


def test_no_flag_reads_a_number_outside_the_one_parser():
    loose = [(path, a.option_strings) for path, p in commands() for a in p._actions if a.type in (int, float)]
    assert loose == []
    found = {(path[-1], flag) for path, flag, _ in numeric_flags()}
    for flag in ("--seed", "--max-new-tokens", "--top", "--beam-width", "--force", "--prompt-ids", "--speculative",
                 "--temperature", "--top-p", "--length-penalty"):
        assert ("trace", flag) in found and ("export", flag) in found
    assert {("sample", f) for f in ("--logits", "--probs", "--seen", "--step")} <= found
    assert ("export", "--scale") in found and ("new", "--force") in found


def refused(kind, text: str) -> bool:
    """Whether `text` lies outside the range `kind` declares (judged from its bounds, not its parser)."""
    try:
        value = float(text)
    except ValueError:
        return True                                 # not a number at all
    if isinstance(kind, Whole):
        return text.strip() != text or not text.lstrip("-").isascii() or not text.lstrip("-").isdigit() \
            or not kind.lowest <= value <= kind.highest
    if math.isnan(value) or (math.isinf(value) and text.lstrip("+-").lower() not in ("inf", "infinity")):
        return True
    return not (kind.lowest < value if kind.open_low else kind.lowest <= value) or \
        not (value < kind.highest if kind.open_high else value <= kind.highest)


def cli(capsys, argv) -> tuple[int, str]:
    """(exit status, stderr) of the command line run in this process."""
    try:
        status = main(argv)
    except SystemExit as exc:
        status = exc.code
    return status, capsys.readouterr().err


def argv_for(path, flag, value, tmp_path) -> list[str]:
    extra = [] if flag in ("--logits", "--probs") else NEEDS.get(path[-1], [])
    if path == ("lesson", "new"):
        extra = ["--out", str(tmp_path / "new.toml")]
    if path == ("export",):
        extra = ["--out", str(tmp_path / "out")]
    return [*path, *extra, f"{flag}={value}"]


CASES = [(path, flag, kind, value) for path, flag, kind in numeric_flags() for value in HOSTILE]


@pytest.mark.parametrize("path, flag, kind, value", CASES,
                         ids=[f"{' '.join(c[0])} {c[1]}={c[3][:8]}" for c in CASES])
def test_every_numeric_flag_refuses_hostile_values_by_name(capsys, tmp_path, path, flag, kind, value):
    items = value.split(",") if flag in ("--prompt-ids", "--logits", "--probs", "--seen") else [value]
    if flag == "--force":
        items, value = [value], f"{value}:1"        # STEP is the number under test
    if flag == "--seen" and value == "":
        return                                      # no ids seen: allowed
    if not any(refused(kind, item) for item in items):
        return                                      # inside the flag's range: not a hostile value for it
    status, err = cli(capsys, argv_for(path, flag, value, tmp_path))
    assert status == 2 and flag in err and "Traceback" not in err, err
    assert "expected" in err and len(err) < 4000          # the value shortened, the range stated
    assert not (tmp_path / "out").exists() and not (tmp_path / "new.toml").exists()


@pytest.mark.parametrize("flag, value", [(flag, v) for (_, flag), values in LATE.items() for v in values])
def test_frames_and_sizes_refuse_hostile_values_with_the_range(capsys, tmp_path, flag, value):
    status, err = cli(capsys, ["export", "--out", str(tmp_path / "out"), "--format", "png", f"{flag}={value}"])
    assert status == 2 and flag in err and "Traceback" not in err and "expected" in err and len(err) < 1000, err
    if flag == "--frames" and value not in ("", "1,,2", "3-1"):
        assert "from 1 to 10" in err                       # the default lesson's 10 frames
    if flag == "--size" and "x" in value and HUGE not in value:
        assert f"HEIGHT from {MIN_HEIGHT}" in err


def test_a_force_id_of_any_size_is_refused_by_name(capsys):
    for value in (f"0:{HUGE}", "0:-1", "0:nan", "0:", ":", "0:1:2"):
        status, err = cli(capsys, ["trace", f"--force={value}"])
        assert status == 2 and "--force" in err and "Traceback" not in err and len(err) < 4000, (value, err)


# ---------------------------------------------------------------------------- slide shapes

def test_a_deck_slide_is_powerpoints_own_16_9_and_stays_within_its_limits():
    from explorer.core.errors import ExplorerError
    from explorer.export.pptx_deck import deck_slide_size
    assert deck_slide_size(1920, 1080) == (12192000, 6858000)      # 13.333 x 7.5 in, PowerPoint's 16:9
    for width, height in ((8192, 240), (320, 1400), (8192, 480)):
        with pytest.raises(ExplorerError, match="PowerPoint takes 1 to 56 in on each side"):
            deck_slide_size(width, height)


@pytest.mark.parametrize("size", [f"{round(MIN_HEIGHT * MIN_RATIO)}x{MIN_HEIGHT}", "6384x480"])
def test_the_extreme_shapes_accepted_make_a_deck_powerpoint_opens(qapp, capsys, tmp_path, size):
    from pptx import Presentation
    status, err = cli(capsys, ["export", "--out", str(tmp_path), "--format", "pptx,png", "--frames", "5",
                               "--size", size])
    assert status == 0, err
    deck = Presentation(str(tmp_path / "wo-ai-to-eos.pptx"))
    for side in (deck.slide_width, deck.slide_height):
        assert 914400 <= side <= 56 * 914400                     # 1 to 56 inches
    assert MAX_SIDE >= max(map(int, size.split("x")))


# ---------------------------------------------------------------------------- --out and a full disk

def test_out_names_what_stands_in_the_way(capsys, tmp_path):
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for out, words in ((a_file, "is a regular file"), (fifo, "is a pipe (FIFO)"), ("/dev/full", "is a character device"),
                       (a_file / "slides", "notes.txt is a regular file (part of the path")):
        status, err = cli(capsys, ["export", "--out", str(out), "--format", "csv"])
        assert status == 2 and words in err and "expected a folder" in err and "File exists" not in err, err
    assert a_file.read_text() == "mine"


def test_out_in_a_folder_without_permission_says_so(capsys, tmp_path, monkeypatch):
    import explorer.export.files as files
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    real_access = files.os.access            # root may write anywhere: the folder's permission as a user meets it
    monkeypatch.setattr(files.os, "access", lambda path, mode: False if str(path) == str(locked) else real_access(path, mode))
    status, err = cli(capsys, ["export", "--out", str(locked / "slides"), "--format", "csv"])
    assert status == 2 and f"the folder {locked} is not writable (no permission to create {locked / 'slides'} in it)" in err
    assert not (locked / "slides").exists()


def test_a_full_disk_says_so_and_leaves_nothing_half_written(qapp, capsys, tmp_path, monkeypatch):
    import explorer.export.files as files
    real_fdopen = files.os.fdopen

    def onto_a_full_disk(fd, mode="r", *args, **kwargs):         # every staged file written onto /dev/full
        if "w" not in mode:                                        # reading the lesson: as it is
            return real_fdopen(fd, mode, *args, **kwargs)
        os.close(fd)
        return real_fdopen(os.open("/dev/full", os.O_WRONLY), mode, *args, **kwargs)

    monkeypatch.setattr(files.os, "fdopen", onto_a_full_disk)
    out = tmp_path / "out"
    status, err = cli(capsys, ["export", "--out", str(out), "--format", "png,csv", "--frames", "1-2"])
    assert status == 2 and "the disk is full" in err and "nothing was written" in err, err
    assert not out.exists() and list(tmp_path.iterdir()) == []          # no folder, no staging


# ---------------------------------------------------------------------------- the standard output

def run_module(argv, **kwargs) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(SRC), QT_QPA_PLATFORM="offscreen")
    return subprocess.run([sys.executable, "-m", "explorer", *argv], env=env, stderr=subprocess.PIPE, text=True,
                          timeout=120, **kwargs)


@pytest.mark.parametrize("argv", [["trace", "--json", "--max-new-tokens", "2"], ["sample", "--logits", "2,1,0"],
                                  ["model", "list"]])
def test_a_closed_standard_output_ends_as_a_closed_pipe(argv):
    done = run_module(argv, preexec_fn=lambda: os.close(1))      # started as with `>&-`
    assert done.returncode == 141 and done.stderr == ""


def test_an_export_with_stdout_closed_writes_its_files_whole(tmp_path):
    """A file opened while descriptor 1 is free would take its number: the null device holds it."""
    done = run_module(["export", "--out", str(tmp_path), "--format", "csv"],
                      preexec_fn=lambda: os.close(1))
    assert done.returncode == 141 and done.stderr == ""          # the paths could not be printed
    (csv_file,) = tmp_path.glob("*.csv")
    assert csv_file.read_text(encoding="utf-8").startswith("step")


def test_a_full_standard_output_says_the_disk_is_full():
    with open("/dev/full", "w") as full:
        done = run_module(["trace", "--max-new-tokens", "2"], stdout=full)
    assert done.returncode == 2 and "the disk is full" in done.stderr and "Traceback" not in done.stderr
