"""2,000 random teacher actions on the real window, in both desk layouts: no exception, no growth
of Python objects."""

import gc
import random

import pytest
from PySide6.QtCore import QEvent, Qt
from PySide6.QtWidgets import QApplication

from explorer.core.models.teaching import load_teaching_model
from explorer.lessons import lessons_dir, load_lesson
from teacher import enter_prompt, type_text

KEYS = (Qt.Key.Key_Right, Qt.Key.Key_Left, Qt.Key.Key_Home, Qt.Key.Key_End)
PROMPTS = ("我爱", "我爱学习", "你爱我", "我")           # the teaching model's words
LOGITS = ("2, 1, 0", "1 1 1", "3, 0.5, -1, 2")          # a logits lesson's numbers
# lessons on small models: a real model's steps run in the background, so what a random action
# meets would depend on timing (its window is tested in test_real_lesson / test_real_model_ui)
LESSONS = sorted(path.stem for path in lessons_dir().glob("*.toml")
                 if not load_lesson(path.stem).installed_models)
TEACHING = load_teaching_model().name




def random_action(rng: random.Random, window, qtbot) -> None:
    controls, dist = window.panels["controls"], window.panels["distribution"]
    kind = rng.choice(("slider", "slider", "slider", "key", "key", "key", "force", "back", "undo",
                       "lang", "mode", "prompt", "type", "full_matrix", "seed", "lesson", "presentation",
                       "zoom", "fit"))
    if kind == "slider":
        slider = controls.slider(rng.choice(("temperature", "top_k", "top_p", "min_p", "repetition_penalty")))
        slider.setValue(rng.randint(slider.minimum(), slider.maximum()))
    elif kind == "key":
        qtbot.keyClick(window, rng.choice(KEYS))
    elif kind == "force" and window.session.step is not None:
        dist.click_candidate(rng.randrange(len(window.session.model.vocab)))
    elif kind == "back" and dist.back_button.isEnabled():
        dist.back_button.click()
    elif kind == "undo" and dist.undo_button.isEnabled():
        dist.undo_button.click()
    elif kind == "lang":
        window.actions[rng.choice(("lang_en", "lang_zh"))].trigger()
    elif kind == "mode":
        controls.mode_combo.setCurrentIndex(rng.randrange(controls.mode_combo.count()))
    elif kind == "prompt" and (window.prompt_bar.editing_logits or window.session.model.name == TEACHING):
        enter_prompt(qtbot, window, rng.choice(LOGITS if window.prompt_bar.editing_logits else PROMPTS))
    elif kind == "type":                       # typed into the prompt box, not (yet) entered
        window.prompt_bar.edit.setFocus()
        type_text(window.prompt_bar.edit, "爱")
    elif kind == "lesson":
        assert window.lesson_switcher.switch_lesson(load_lesson(rng.choice(LESSONS)))
    elif kind == "presentation":
        window.actions["presentation"].trigger()
    elif kind == "full_matrix":
        window.panels["attention"].full_matrix_toggle.toggle()
    elif kind == "seed":
        controls.seed_spin.setValue(rng.randrange(100))
    elif kind == "zoom":                       # Ctrl+= / Ctrl+-, within a classroom's range
        size = window.settings["font_size"]
        window.zoom(1 if size < 11 else -1 if size > 14 else rng.choice((-1, 1)))
    elif kind == "fit":                        # what the window does once a change settles
        window.desk_layout.fit_to_screen()


def python_objects() -> int:
    # widgets replaced with deleteLater (a lesson's check questions) go when control returns to
    # the event loop, which a teacher's window always does and this loop of actions never does
    QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    gc.collect()
    return len(gc.get_objects())


@pytest.fixture(params=[False, True], ids=["desk", "compact desk"])
def any_window(request, qtbot, tmp_path):
    """The window in the wide desk layout and in the compact one of a narrow screen."""
    from explorer.ui.app import build_window
    w = build_window(settings_path=str(tmp_path / "settings.ini"), compact=request.param)
    qtbot.addWidget(w)
    w.resize(1600 if not request.param else 1280, 760)
    w.show()
    qtbot.waitExposed(w)
    return w


def test_random_actions_raise_nothing_and_leak_nothing(any_window, qtbot):
    window = any_window
    rng = random.Random(20261129)
    for _ in range(300):                       # warm-up: caches and lazily built items settle
        random_action(rng, window, qtbot)
    before = python_objects()
    for _ in range(1700):
        random_action(rng, window, qtbot)
    after = python_objects()
    assert window.errors == []
    assert after - before < 0.02 * before, f"Python objects grew from {before} to {after}"
