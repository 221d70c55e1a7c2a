"""The `real_model` marker lands on the tests that need an installed model, and on no other, so
`python -m pytest -m "not real_model"` is a complete run for a machine without the models."""

import subprocess
import sys

from paths import REPO


def collected(*args: str) -> set[str]:
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return {line for line in proc.stdout.splitlines() if "::" in line}


def test_tests_that_take_a_model_or_a_lesson_on_one_are_marked_and_the_others_are_not():
    files = ("tests/core/gguf/test_smollm2.py", "tests/core/decode/test_sampling.py", "tests/lessons/test_lessons.py")
    marked = collected("-m", "real_model", *files)
    unmarked = collected("-m", "not real_model", *files)
    assert marked and unmarked and not marked & unmarked
    assert collected("tests/core/gguf/test_smollm2.py") <= marked          # its fixtures load the model
    assert "tests/core/decode/test_sampling.py::test_sample_on_a_real_models_next_token" in marked
    assert "tests/lessons/test_lessons.py::test_every_frame_plays_in_both_languages[gemma-wo-ai]" in marked
    assert "tests/lessons/test_lessons.py::test_every_frame_plays_in_both_languages[sampling]" in unmarked
    assert "tests/core/decode/test_sampling.py::test_top_k_course_numbers" in unmarked
