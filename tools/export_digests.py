"""Export every shipped lesson in every format and language and print one SHA-256 per file.

A change that should not alter what a teacher gets (a refactor, a move) is checked by
running this before and after and comparing the two listings:

    python tools/export_digests.py > before.txt
    ... change ...
    python tools/export_digests.py > after.txt && diff before.txt after.txt

Each lesson is exported by the installed `token-explorer export` in its own process, so
nothing carries over from one lesson to the next.
"""

from __future__ import annotations

import argparse
import hashlib
import pathlib
import subprocess
import sys
import tempfile

FORMATS = "png,pdf,pptx,csv,json"
LANGS = ("en", "zh")


def lesson_names() -> list[str]:
    listing = subprocess.run(
        [sys.executable, "-m", "explorer", "export", "--list"],
        check=True, capture_output=True, text=True,
    ).stdout
    names, in_lessons = [], False
    for line in listing.splitlines():
        if line.strip() == "lessons:":
            in_lessons = True
        elif in_lessons and line.startswith("  "):
            names.append(line.strip())
        elif in_lessons:
            break
    return names


def digests(lesson: str, lang: str, formats: str) -> list[str]:
    with tempfile.TemporaryDirectory() as out:
        subprocess.run(
            [sys.executable, "-m", "explorer", "export", "--lesson", lesson,
             "--lang", lang, "--format", formats, "--out", out],
            check=True, capture_output=True,
        )
        rows = []
        for path in sorted(pathlib.Path(out).rglob("*")):
            if path.is_file():
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
                rows.append(f"{digest}  {lesson}/{lang}/{path.relative_to(out)}")
        return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lesson", action="append", help="only these lessons (repeatable)")
    parser.add_argument("--format", default=FORMATS, help=f"formats to export (default {FORMATS})")
    args = parser.parse_args()
    for lesson in args.lesson or lesson_names():
        for lang in LANGS:
            for row in digests(lesson, lang, args.format):
                print(row, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
