"""The text so far, frame by frame: the prompt and the selected tokens decoded, reasoning
marked, an incomplete character shown as its bytes."""

from types import SimpleNamespace

from explorer.core.models.teaching import load_teaching_model
from explorer.core.tokens.vocab import Vocabulary
from explorer.lessons import load_lesson
from explorer.session import Frame, Session
from explorer.session.text_so_far import TextPart, own_run_caption, plain_text, shows_output, text_so_far


def parts_per_frame(session):
    out = []
    for index in range(len(session.frames)):
        session.go(index)
        parts = text_so_far(session.frame, session.run, session.model.vocab)
        out.append((session.frame.kind, [(p.kind, p.text) for p in parts]))
    return out


def test_the_teaching_model_writes_woai_xuexi_then_stops_at_eos():
    """我爱 greedy: 学习 is picked from the Prefill, ！ from Decode 1, EOS (no text) from Decode 2."""
    session = Session(load_teaching_model(), [1, 2])
    prompt = ("prompt", "我爱")
    assert parts_per_frame(session) == [
        ("input", [prompt]),
        ("prefill", [prompt]),
        ("pick", [prompt, ("answer", "学习")]),
        ("decode", [prompt, ("answer", "学习")]),
        ("pick", [prompt, ("answer", "学习！")]),
        ("decode", [prompt, ("answer", "学习！")]),
        ("pick", [prompt, ("answer", "学习！")]),            # EOS is a special token: no text
        ("stop", [prompt, ("answer", "学习！")]),
    ]
    assert [shows_output(f, session.run) for f in session.frames] == [False, False] + [True] * 6


def test_a_reasoning_segment_is_its_own_part_and_the_answer_follows_it():
    """reasoning-budget with a budget of 32: <think> 17×3 = 10×3 + 7×3 = 30 + 21 = 51 </think>
    答： 51 。 <eos>; the markers and <bos> are special tokens and have no text."""
    lesson = load_lesson("reasoning-budget")
    session = lesson.build_session()
    names = [name for name, _ in lesson.scenarios]
    stop = next(i for i, (plan, f) in enumerate(zip(lesson.plans, session.frames))
                if names[plan.scenario] == "budget-32" and f.kind == "stop")
    session.go(stop)
    parts = text_so_far(session.frame, session.run, session.model.vocab)
    assert parts == (TextPart("prompt", "问：17×3=？"), TextPart("reasoning", "17×3=10×3+7×3=30+21=51"),
                     TextPart("answer", "答：51。"))
    budget_10 = next(i for i, (plan, f) in enumerate(zip(lesson.plans, session.frames))
                     if names[plan.scenario] == "base" and f.kind == "stop")
    session.go(budget_10)     # 10 new tokens: <think> and nine of the reasoning, no answer part
    parts = text_so_far(session.frame, session.run, session.model.vocab)
    assert parts == (TextPart("prompt", "问：17×3=？"), TextPart("reasoning", "17×3=10×3+7×3=30+21"))


def test_an_incomplete_character_is_shown_as_its_bytes_until_its_last_byte_arrives():
    """爱 is E7 88 B1 in UTF-8, written here as three byte tokens after the prompt "a"."""
    vocab = Vocabulary(("a", b"\xe7", b"\x88", b"\xb1", "<eos>"), {"eos": 4})
    run = SimpleNamespace(prompt_ids=(0,))

    def parts(visible):
        frame = Frame("pick", 0, visible, (), 0)
        return [(p.kind, p.text) for p in text_so_far(frame, run, vocab)]
    assert parts((0, 1)) == [("prompt", "a"), ("incomplete", "<0xE7>")]
    assert parts((0, 1, 2)) == [("prompt", "a"), ("incomplete", "<0xE7><0x88>")]
    assert parts((0, 1, 2, 3)) == [("prompt", "a"), ("answer", "爱")]
    assert parts((0, 1, 2, 3, 4)) == [("prompt", "a"), ("answer", "爱")]


def test_the_plain_line_joins_the_parts_and_shows_line_breaks():
    parts = (TextPart("prompt", "Hi\n"), TextPart("answer", "there"))
    assert plain_text(parts) == "Hi↵there"


def test_an_own_run_is_named_by_its_model_and_prompt():
    session = Session(load_teaching_model(), [1, 2])
    model = session.model
    assert own_run_caption(session.run, model.name, model.vocab, "en") == f"Own run · {model.name} · prompt “我爱”"
    assert own_run_caption(session.run, model.name, model.vocab, "zh") == f"自由探索 · {model.name} · 提示“我爱”"
