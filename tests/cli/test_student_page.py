"""The student page (`export --format html`) in a real browser: headless Chromium from
Debian's packages, driven by Selenium, one browser for the whole module. The page's
probabilities are compared with core's `distribution` on the same logits and settings."""

import base64
import io
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from headless_chromium import chromium, missing_browser, network_requests

from explorer.cli.main import main
from explorer.core.decode.sampling import SamplingConfig, distribution
from explorer.export.page_logits import page_vector, split_logits
from explorer.lessons import load_lesson
from explorer.session.narration import frame_title

TOLERANCE = 1e-9


@pytest.fixture(scope="module")
def browser():
    why = missing_browser()
    if why:
        pytest.fail(f"the student page tests need a browser: {why}")
    with chromium() as driver:
        yield driver


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """lesson -> its exported page (exported once, when first asked for)."""
    out, made = tmp_path_factory.mktemp("pages"), {}

    def page(lesson: str, *flags: str) -> Path:
        key = (lesson, flags)
        if key not in made:
            folder = out / f"{lesson}{len(made)}"
            assert main(["export", "--lesson", lesson, "--format", "html", "--out", str(folder), *flags]) == 0
            (made[key],) = folder.glob("*.html")
        return made[key]
    return page


@pytest.fixture(scope="module")
def sessions():
    made = {}

    def session(lesson: str):
        if lesson not in made:
            made[lesson] = load_lesson(lesson).build_session()
        return made[lesson]
    return session


def open_page(driver, path: Path, fragment: str = ""):
    """Load the page afresh at `fragment` (a whole load: the page reads the fragment as it starts)."""
    driver.get("about:blank")
    driver.get(path.as_uri() + fragment)
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, errors


def goto(driver, path: Path, fragment: str) -> None:
    """Move the page open at `path` (loaded if it is not) to `fragment`, as a link within it does."""
    from selenium.webdriver.support.wait import WebDriverWait

    if not driver.current_url.startswith(path.as_uri()):
        open_page(driver, path)
    driver.execute_script("document.getElementById('counter').textContent = ''; location.hash = arguments[0]", fragment)
    WebDriverWait(driver, 30).until(lambda d: text_of(d, "counter"))     # the page has read the new fragment


def text_of(driver, element_id: str) -> str:
    return driver.execute_script(f"return document.getElementById({element_id!r}).textContent")


def candidates(driver) -> dict[int, tuple[float, float]]:
    rows = driver.execute_script(
        "return [...document.querySelectorAll('#chart [data-token-id]')].map(e => [e.dataset.tokenId, e.dataset.logit,"
        " e.dataset.p])")
    return {int(i): (float(logit), float(p)) for i, logit, p in rows}


def embedded_data(path: Path) -> dict:
    text = path.read_text(encoding="utf-8")
    return json.loads(re.search(r'<script type="application/json" id="lesson-data">(.*?)</script>', text, re.S)
                      .group(1).replace("<\\/", "</"))


def reveal_if_asking(driver) -> None:
    if driver.execute_script("return !document.getElementById('answer').hidden") is False:
        driver.find_element("id", "reveal").click()


@pytest.mark.parametrize("lesson", ["wo-ai-to-eos", "sampling", "beam"])
def test_every_frame_shows_the_lessons_title_and_counter(browser, pages, sessions, lesson):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    session = sessions(lesson)
    path = pages(lesson)
    count = len(session.frames)
    for lang in ("en", "zh"):
        open_page(browser, path, f"#lang={lang}")
        assert text_of(browser, "lesson-title") == session.content.title_in(lang)
        for index, frame in enumerate(session.frames):
            reveal_if_asking(browser)
            run, model = session.run_at(index)
            assert text_of(browser, "frame-title") == frame_title(frame, run, model.vocab, lang)
            assert text_of(browser, "counter") == f"{index + 1} / {count}"
            alt = browser.execute_script("return document.getElementById('slide-img').alt")
            assert alt and browser.execute_script("return document.getElementById('slide-img').naturalWidth") == 1280
            ActionChains(browser).send_keys(Keys.ARROW_RIGHT).perform()


# (lesson, settings): every frame of the lesson that shows a distribution is checked
SETTINGS = [
    ("sampling", dict(temperature=1.5, top_k=0, top_p=0.9, min_p=0.0, repetition_penalty=1.0, order="llama.cpp")),
    ("sampling", dict(temperature=2.0, top_k=0, top_p=0.85, min_p=0.0, repetition_penalty=1.0, order="llama.cpp")),
    ("wo-ai-to-eos", dict(temperature=0.7, top_k=2, top_p=1.0, min_p=0.05, repetition_penalty=1.3, order="hf")),
    ("wo-ai-to-eos", dict(temperature=0.0, top_k=0, top_p=0.5, min_p=0.0, repetition_penalty=2.0, order="hf")),
    ("gemma-wo-ai", dict(temperature=1.5, top_k=0, top_p=0.9, min_p=0.0, repetition_penalty=1.5, order="llama.cpp")),
    ("gemma-wo-ai", dict(temperature=0.6, top_k=40, top_p=0.95, min_p=0.02, repetition_penalty=1.0, order="hf")),
]


@pytest.mark.parametrize("lesson,settings", SETTINGS)
def test_live_probabilities_equal_cores(browser, pages, sessions, lesson, settings):
    session = sessions(lesson)
    path = pages(lesson)
    fragment = "&".join(f"{k}={v}" for k, v in settings.items())
    config = SamplingConfig(mode="sample", **settings)
    checked = 0
    for index, frame in enumerate(session.frames):
        if not frame.shows_distribution:
            continue
        goto(browser, path, f"#frame={index + 1}&{fragment}&answer=1")
        run, _ = session.run_at(index)
        raw = run.steps[frame.step].distribution.raw_logits
        seen = run.prompt_ids + run.output_ids[:frame.step]
        vector = page_vector(split_logits(raw, seen))                  # the page's numbers: raw itself if small
        if raw.size <= 1024:
            assert np.array_equal(vector, raw)
        probs = distribution(vector, config, seen_ids=seen).probs
        shown = candidates(browser)
        assert shown
        for token, (logit, p) in shown.items():
            assert logit == float(raw[token])
            assert abs(p - probs[token]) <= TOLERANCE, (index, token, p, probs[token])
        checked += 1
    assert checked >= 2


def test_keys_and_buttons_move_the_counter_and_the_frame(browser, pages, sessions):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    session = sessions("sampling")
    path, count = pages("sampling"), len(session.frames)
    open_page(browser, path)
    seen_slides = set()

    def where() -> str:
        seen_slides.add(browser.execute_script("return document.getElementById('slide-img').src.length + ':' + "
                                               "document.getElementById('slide-img').src.slice(-40)"))
        return text_of(browser, "counter")

    def press(key) -> str:
        ActionChains(browser).send_keys(key).perform()
        return where()

    assert where() == f"1 / {count}"
    assert press(Keys.ARROW_RIGHT) == f"2 / {count}"
    assert press(Keys.SPACE) == f"3 / {count}"
    assert press(Keys.ARROW_LEFT) == f"2 / {count}"
    assert press(Keys.END) == f"{count} / {count}"
    assert press(Keys.ARROW_RIGHT) == f"{count} / {count}"          # the end stays the end
    assert press(Keys.HOME) == f"1 / {count}"
    assert browser.find_element("id", "prev").get_attribute("disabled") == "true"
    browser.find_element("id", "next").click()
    assert where() == f"2 / {count}"
    run, model = session.run_at(1)
    assert text_of(browser, "frame-title") == frame_title(session.frames[1], run, model.vocab, "en")
    assert "frame=2" in browser.current_url
    browser.find_element("id", "prev").click()
    assert where() == f"1 / {count}" and len(seen_slides) == 4          # each frame its own picture
    browser.find_element("id", "lang").click()
    assert text_of(browser, "lesson-title") == session.content.title_in("zh") and "lang=zh" in browser.current_url


def test_a_slider_redraws_the_chart_and_writes_the_fragment(browser, pages, sessions):
    path = pages("sampling")
    open_page(browser, path, "#frame=1")
    before = candidates(browser)
    browser.execute_script("const s = document.getElementById('set-temperature'); s.value = '2';"
                           "s.dispatchEvent(new Event('input'))")
    after = candidates(browser)
    assert "temperature=2" in browser.current_url and after != before
    # the course's numbers: softmax([2, 1, 0] / 2)
    assert [round(after[t][1], 4) for t in sorted(after)] == [0.5065, 0.3072, 0.1863]
    run, _ = sessions("sampling").run_at(0)
    settings = embedded_data(path)["dists"][0]["settings"]
    probs = distribution(run.steps[0].distribution.raw_logits,
                         SamplingConfig(mode="sample", **{**settings, "temperature": 2.0}), seen_ids=run.prompt_ids).probs
    assert all(abs(p - probs[t]) <= TOLERANCE for t, (_, p) in after.items())


def test_a_bad_fragment_is_clamped_or_ignored(browser, pages):
    path = pages("sampling")
    data = embedded_data(path)
    last = len(data["frames"])
    recorded = data["dists"][data["frames"][-1]["dist"]]["settings"]
    open_page(browser, path, "#frame=999&temperature=abc&top_p=-3&min_p=7&top_k=1e309&repetition_penalty=&"
                             "order=nonsense&colour=red&lang=fr&%zz")
    assert text_of(browser, "counter") == f"{last} / {last}"
    assert text_of(browser, "out-top_p") == "0.01" and text_of(browser, "out-min_p") == "1"
    assert text_of(browser, "out-temperature") == str(recorded["temperature"]).removesuffix(".0")
    assert text_of(browser, "out-top_k") == str(recorded["top_k"])
    assert candidates(browser) and text_of(browser, "lesson-title") == data["title"]["en"]
    open_page(browser, path, "#frame=-4&top_k=2.6")
    assert text_of(browser, "counter") == f"1 / {last}" and text_of(browser, "out-top_k") == "3"


@pytest.mark.parametrize("lesson", ["wo-ai-to-eos", "gemma-wo-ai"])
def test_chinese_frames_draw_every_character_from_the_embedded_font(browser, pages, lesson):
    from fontTools.ttLib import TTFont

    path = pages(lesson)
    text = path.read_text(encoding="utf-8")
    font = TTFont(io.BytesIO(base64.b64decode(re.search(r"data:font/otf;base64,([A-Za-z0-9+/=]+)", text).group(1))))
    cmap = font.getBestCmap()
    assert len(cmap) < 3000                                       # a subset, not the whole bundled face
    for index in range(len(embedded_data(path)["frames"])):
        goto(browser, path, f"#frame={index + 1}&lang=zh&answer=1")
        shown = browser.execute_script("return document.body.innerText + document.getElementById('slide-img').alt")
        missing = sorted({c for c in shown if not c.isspace() and ord(c) not in cmap})
        assert not missing, (lesson, index, missing)
        assert any("\u4e00" <= c <= "\u9fff" for c in shown)
        assert browser.execute_script("return document.fonts.check('16px \"Token Explorer CJK\"', '我爱')")
        assert browser.execute_script(
            "return getComputedStyle(document.body).fontFamily").startswith('"Token Explorer CJK"')


@pytest.mark.parametrize("lesson", ["wo-ai-to-eos", "gemma-wo-ai"])
def test_the_page_makes_no_network_request(browser, pages, lesson):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    path = pages(lesson)
    browser.get("about:blank")
    network_requests(browser)                                     # the browser's own start page aside
    assert "default-src 'none'" in path.read_text(encoding="utf-8")[:2000]
    open_page(browser, path, "#frame=3&temperature=1.2")
    for _ in range(len(embedded_data(path)["frames"])):
        ActionChains(browser).send_keys(Keys.ARROW_RIGHT).perform()
    browser.find_element("id", "lang").click()
    assert network_requests(browser) == []


def test_frames_and_panel_give_the_subset(browser, pages, sessions):
    path = pages("wo-ai-to-eos", "--frames", "3-4,7", "--panel", "distribution")
    assert path.name == "wo-ai-to-eos-distribution.html"
    session = sessions("wo-ai-to-eos")
    wanted = [session.frames[i] for i in (2, 3, 6)]
    data = embedded_data(path)
    assert [f["kind"] for f in data["frames"]] == [f.kind for f in wanted]
    open_page(browser, path, "#frame=3")
    run, model = session.run_at(6)
    assert text_of(browser, "counter") == "3 / 3"
    assert text_of(browser, "frame-title") == frame_title(wanted[2], run, model.vocab, "en")


def test_the_page_is_the_same_bytes_twice_and_a_full_disk_leaves_nothing(capsys, tmp_path, monkeypatch, pages):
    import errno

    from explorer.export.files import StagedFiles
    first = pages("sampling")
    assert main(["export", "--lesson", "sampling", "--format", "html", "--out", str(tmp_path / "again")]) == 0
    assert (tmp_path / "again" / "sampling.html").read_bytes() == first.read_bytes()
    real_add = StagedFiles.add
    for problem in (errno.ENOSPC, errno.EROFS):
        out = tmp_path / f"deck{problem}"
        out.mkdir()

        def failing_add(self, name, data, problem=problem):
            if name.endswith(".html"):
                real_add(self, name, data[: len(data) // 2])          # half the page, then the disk fails
                raise OSError(problem, "the disk refuses", name)
            return real_add(self, name, data)

        monkeypatch.setattr(StagedFiles, "add", failing_add)
        code = main(["export", "--lesson", "sampling", "--format", "png,html", "--out", str(out)])
        monkeypatch.setattr(StagedFiles, "add", real_add)
        assert code == 2 and "nothing was written" in capsys.readouterr().err
        assert list(out.iterdir()) == []


def test_ctrl_c_during_the_page_leaves_nothing(tmp_path):
    out = tmp_path / "deck"
    out.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "explorer", "export", "--lesson", "sampling", "--out", str(out),
                             "--format", "png,html"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    while not any(out.iterdir()) and proc.poll() is None:      # the first file is staged: drawing has begun
        time.sleep(0.01)
    proc.send_signal(2)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 130 and "export cancelled, nothing was written" in stderr
    assert stdout == "" and list(out.iterdir()) == []


def page_sample(driver, entry: dict, settings: dict) -> dict:
    """The page's own sampling function on one distribution entry."""
    return driver.execute_script("const out = window.tokenExplorerSample(arguments[0], arguments[1]);"
                                 "return {p: Array.from(out.p), rest: out.rest}", entry, settings)


def test_the_pages_rules_give_the_courses_numbers(browser, pages):
    from explorer.export.page_logits import page_entry
    open_page(browser, pages("sampling"))
    off = dict(temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, repetition_penalty=1.0, order="hf")

    def entry(logits, seen=()):
        page = split_logits(np.array(logits, dtype=float), seen)
        return page_entry(page, [str(i) for i in page.ids], seen, off, 0)

    four = entry(np.log([0.55, 0.25, 0.15, 0.05]))
    assert np.allclose(page_sample(browser, four, {**off, "top_p": 0.8})["p"], [0.55 / 0.8, 0.25 / 0.8, 0, 0])
    assert np.allclose(page_sample(browser, four, {**off, "top_p": 0.9})["p"], [0.55 / 0.95, 0.25 / 0.95, 0.15 / 0.95, 0])
    three = entry([2.0, 1.0, 0.0])
    hf = page_sample(browser, three, {**off, "temperature": 2.0, "top_p": 0.85})["p"]
    cpp = page_sample(browser, three, {**off, "temperature": 2.0, "top_p": 0.85, "order": "llama.cpp"})["p"]
    assert np.round(hf, 4).tolist() == [0.5065, 0.3072, 0.1863] and np.round(cpp, 4).tolist() == [0.6225, 0.3775, 0]
    assert np.round(page_sample(browser, three, {**off, "top_k": 2})["p"], 6).tolist() == [0.731059, 0.268941, 0]
    ties = entry([1.0, 3.0, 3.0, 0.5])
    assert page_sample(browser, ties, {**off, "top_k": 1})["p"][0] == 0 and \
        page_sample(browser, ties, {**off, "top_k": 1})["p"][1] == 0.5               # a tie at the boundary stays
    assert page_sample(browser, ties, {**off, "temperature": 0})["p"] == [0, 1, 0, 0]   # greedy: the lower id
    penalised = entry([2.0, -1.0, 0.5], seen=[0, 1])
    expected = np.exp([1.0, -2.0, 0.5]) / np.exp([1.0, -2.0, 0.5]).sum()                # 2 / 2 and -1 * 2
    assert np.allclose(page_sample(browser, penalised, {**off, "repetition_penalty": 2.0})["p"], expected, atol=1e-15)


@pytest.mark.parametrize("settings", [
    dict(temperature=1.0, top_k=0, top_p=0.995, min_p=0.0, repetition_penalty=1.0, order="hf"),
    dict(temperature=1.7, top_k=900, top_p=1.0, min_p=0.0005, repetition_penalty=1.4, order="llama.cpp"),
    dict(temperature=0.4, top_k=0, top_p=0.9999, min_p=0.0, repetition_penalty=0.8, order="hf"),
    dict(temperature=0.0, top_k=0, top_p=1.0, min_p=0.0, repetition_penalty=50.0, order="hf"),
])
def test_a_big_vocabularys_groups_follow_cores_rules(browser, pages, settings):
    """A 4,000-token vocabulary, flat enough that top-k and top-p cut into the grouped rest:
    the page's numbers equal core's on the vector the page stands for (carried ids and the
    rest's total), including a top-p boundary inside a group."""
    from explorer.export.page_logits import page_entry
    open_page(browser, pages("sampling"))
    rng = np.random.default_rng(11)
    raw = np.round(rng.normal(0, 1.2, 4000), 2)                 # many equal logits: groups of many tokens
    raw[[5, 77]] = [9.0, 8.5]                                    # seen ids at the top, for the penalty
    seen = (5, 77, 3999, 5)
    page = split_logits(raw, seen)
    entry = page_entry(page, [str(i) for i in page.ids], seen, settings, 5)
    out = page_sample(browser, entry, settings)
    probs = distribution(page_vector(page), SamplingConfig(mode="sample", **settings), seen_ids=seen).probs
    assert np.max(np.abs(np.array(out["p"]) - probs[page.ids])) <= TOLERANCE
    assert abs(out["rest"] - probs[page.rest_ids].sum()) <= TOLERANCE
