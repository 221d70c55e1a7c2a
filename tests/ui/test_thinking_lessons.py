"""The four lessons of "thinking longer" (four kinds of extra compute): reasoning tokens
share the budget, self-consistency, search with an evaluator, and a tool that brings evidence.
Every expected number is derived here from the table files' probabilities, the course's
arithmetic and the documented rules (token counts by hand, answers from each sample's draw u,
evaluator scores from their stated formulas), never copied from the code's output."""

from __future__ import annotations

import itertools
import json
import tomllib
from fractions import Fraction

import pytest
from PySide6.QtWidgets import QLabel

from explorer.cli.main import main
from explorer.lessons import LessonError, lessons_dir, load_lesson
from explorer.session.narration import frame_explanation, frame_title
from explorer.ui.panels.kv import KVGridPanel
from explorer.ui.panels.timeline import TimelinePanel
from teacher import shows


def scenario_frames(session, lesson, scenario, kind):
    names = [name for name, _ in lesson.scenarios]
    return [i for i, (plan, f) in enumerate(zip(lesson.plans, session.frames))
            if names[plan.scenario] == scenario and f.kind == kind]


def texts(session, index, lang="en"):
    session.go(index)
    f, run, vocab = session.frame, session.run, session.model.vocab
    return frame_title(f, run, vocab, lang), frame_explanation(f, run, vocab, lang)


@pytest.fixture(scope="module")
def lessons():
    return {name: (load_lesson(name), load_lesson(name).build_session())
            for name in ("reasoning-budget", "self-consistency", "search-evaluator", "tool-evidence")}


# ---------------------------------------------------------------------------- reasoning-budget

REASONING = ["<think>", "17×3", "=", "10×3", "+", "7×3", "=", "30", "+", "21", "=", "51", "</think>"]
ANSWER = ["答：", "51", "。", "<eos>"]


def test_the_reasoning_segment_uses_up_a_budget_of_10_and_the_answer_is_empty(lessons):
    lesson, session = lessons["reasoning-budget"]
    session.go(scenario_frames(session, lesson, "base", "stop")[0])
    run, vocab = session.run, session.model.vocab
    assert [vocab.piece_text(t) for t in run.output_ids] == REASONING[:10]
    assert run.finish_reason == "length"
    title, explain = texts(session, session.cursor)
    # 10 generated tokens, all inside <think> (never closed): reasoning 10, output 0, + 2 prompt
    assert "All 10 new tokens were reasoning" in explain["what"] and "“” (0 characters)" in explain["what"]
    assert "prompt 2 + reasoning 10 + output 0 = 12" in explain["check"] and "(length, incomplete)" in title


def test_with_32_tokens_the_answer_arrives_and_the_bill_is_counted_apart(lessons):
    lesson, session = lessons["reasoning-budget"]
    session.go(scenario_frames(session, lesson, "budget-32", "stop")[0])
    run, vocab = session.run, session.model.vocab
    assert [vocab.piece_text(t) for t in run.output_ids] == REASONING + ANSWER and run.finish_reason == "eos"
    _, explain = texts(session, session.cursor)
    # reasoning 13 (markers included), output 4 (the end token included), 2 prompt: 19
    assert "prompt 2 + reasoning 13 + output 4 = 19" in explain["check"]
    title, explain = texts(session, session.cursor + 1, "zh")
    assert title == "气泡里只有5个字符，账单却是19个Token"          # 答：51。 is 5 characters
    assert "可见序列19个，缓存18个" in explain["check"]


def test_the_timeline_and_the_kv_panel_show_the_usage_and_the_visible_sequence(qtbot, lessons):
    lesson, session = lessons["reasoning-budget"]
    session.go(scenario_frames(session, lesson, "budget-32", "stop")[0])
    timeline, kv = TimelinePanel(session), KVGridPanel(session)
    for panel in (timeline, kv):
        qtbot.addWidget(panel)
    assert timeline.findChild(QLabel, "usage").text() == "usage: prompt 2 + reasoning 13 + output 4 = 19 tokens"
    assert timeline.findChild(QLabel, "counts").text().startswith("visible sequence 19  ·  in cache 18")
    assert "text shown 5 characters" in timeline.findChild(QLabel, "counts").text()
    assert shows(kv, "visible sequence: 19")
    session.go(scenario_frames(session, lesson, "base", "decode")[0])             # Decode 4 feeds 10×3
    assert timeline.findChild(QLabel, "usage").text() == "usage: prompt 2 + reasoning 4 + output 0 = 6 tokens"
    session.set_lang("zh")
    assert timeline.findChild(QLabel, "usage").text() == "用量：提示2 + 推理4 + 输出0 = 共6个Token"
    session.set_lang("en")


def test_trace_json_of_the_lesson_has_each_runs_usage(capsys):
    assert main(["trace", "--lesson", "reasoning-budget", "--json"]) == 0
    runs = json.loads(capsys.readouterr().out)
    assert [r["usage"] for r in runs] == [
        {"prompt_tokens": 2, "reasoning_tokens": 10, "output_tokens": 0, "total_tokens": 12},
        {"prompt_tokens": 2, "reasoning_tokens": 13, "output_tokens": 4, "total_tokens": 19}]


# ---------------------------------------------------------------------------- self-consistency

# After <think>: 先算乘法 0.50, 从左到right 0.35, 4×2=8 0.15 (the ruler in that order). The
# paths: 先算乘法 4×2=8 3+8=11 -> 11 (7 tokens with <think>, </think>, 11, <eos>);
# 从左到右 3+4=7 7×2=14 -> 14 (7 tokens); 4×2=8 8+3=11 -> 11 (6 tokens).
def expected_sample(u: float) -> tuple[str, int]:
    if u < 0.5:
        return "11", 7
    return ("14", 7) if u < 0.85 else ("11", 6)


def test_each_sample_follows_its_own_draw_and_the_vote_is_recounted(lessons):
    lesson, session = lessons["self-consistency"]
    index = next(i for i, f in enumerate(session.frames) if f.vote is not None)
    vote = session.frames[index].vote
    assert [s.seed for s in vote.samples] == [1, 2, 3, 4, 5]
    expected = [expected_sample(s.run.steps[1].distribution.u) for s in vote.samples]
    assert [(s.answer, s.tokens) for s in vote.samples] == expected
    counts = {a: [e[0] for e in expected].count(a) for a in ("11", "14")}
    majority = max(counts, key=counts.get)
    assert vote.majority == majority and vote.majority_votes == counts[majority]
    assert vote.tokens == sum(t for _, t in expected)
    title, explain = texts(session, index)
    assert f"the majority says {majority} ({counts[majority]} of 5)" in title
    assert all(f"seed {s.seed} → {a} ({t} tokens)" in explain["what"] for s, (a, t) in zip(vote.samples, expected))
    assert texts(session, index + 1)[0] == f"What the vote cost: {vote.tokens} tokens for 5 samples"


def test_the_single_sample_with_seed_5_and_the_vote_follows_the_temperature(lessons):
    lesson, session = lessons["self-consistency"]
    session.go(scenario_frames(session, lesson, "base", "stop")[0])
    u = session.run.steps[1].distribution.u
    assert session.run.config.seed == 5
    assert session.frame.vote is None and expected_sample(u)[0] == texts(session, session.cursor)[0][-3:-1]
    cold = session.copy()
    cold.go(next(i for i, f in enumerate(cold.frames) if f.vote is not None))
    cold.set_sampling(temperature=0.05)             # 0.5 vs 0.35 at T = 0.05: (0.35/0.5)**20 < 1e-3
    assert [s.answer for s in cold.frame.vote.samples] == ["11"] * 5


def test_a_shared_wrong_fact_makes_the_vote_unanimous_and_wrong(lessons):
    lesson, session = lessons["self-consistency"]
    index = next(i for i, f in enumerate(session.frames) if f.vote is not None
                 and session.run_at(i)[0].prompt_ids == (1, 14))
    vote = session.frames[index].vote
    assert 7 * 8 + 4 == 60 and vote.counts == (("58", 5),)       # every path uses 7×8=54
    title, explain = texts(session, index, "zh")
    assert title == "投票一致，却是错的：58 × 5" and "正确答案60一票也没有" in explain["check"]


def test_trace_prints_every_sample_and_the_cost_with_its_measured_time(capsys):
    assert main(["trace", "--lesson", "self-consistency"]) == 0
    out = capsys.readouterr().out
    assert out.count("self-consistency: 5 samples of this scenario, one per seed") == 2
    assert "majority '58' (5 of 5)" in out and "ms forward in all" in out


# ---------------------------------------------------------------------------- search-evaluator

def closeness(state: str) -> float:
    """The lesson's rule for its poor evaluator: 1 − |24 − x| / 24 of the newest number."""
    x = int(state.split("=")[-1])
    return round(1 - abs(24 - x) / 24, 4)


def can_make_24(numbers: list[Fraction]) -> bool:
    if len(numbers) == 1:
        return numbers[0] == 24
    for i, j in itertools.permutations(range(len(numbers)), 2):
        rest = [n for k, n in enumerate(numbers) if k not in (i, j)]
        a, b = numbers[i], numbers[j]
        for c in (a + b, a - b, a * b) + ((a / b,) if b else ()):
            if can_make_24(rest + [c]):
                return True
    return False


def verifier(state: str) -> float:
    """The lesson's rule for its verifier: can the numbers left (after the steps) still make 24?"""
    numbers = [Fraction(2), Fraction(3), Fraction(4)]
    for step in state.split():
        expr, result = step.split("=")
        a, b = (Fraction(int(v)) for v in expr.replace("×", "+").split("+"))
        numbers.remove(a)
        numbers.remove(b)
        numbers.append(Fraction(int(result)))
    return 1.0 if can_make_24(numbers) else 0.0


def test_the_evaluator_tables_follow_their_stated_rules():
    data = tomllib.loads((lessons_dir() / "search-evaluator.toml").read_text(encoding="utf-8"))
    tables = {e["name"]: e for e in data["evaluators"]}
    states = ["2+3=5", "3+4=7", "2×3=6", "2+3=5 5×4=20", "2+3=5 5+4=9", "3+4=7 7×2=14", "3+4=7 7+2=9",
              "2×3=6 6×4=24", "2×3=6 6+4=10"]
    for state in states:
        assert tables["closeness"]["scores"].get(state, tables["closeness"]["default"]) == closeness(state), state
        assert tables["verifier"]["scores"].get(state, tables["verifier"]["default"]) == verifier(state), state


# (evaluator, width) -> (best state, model calls, evaluations): depth 1 proposes 3 states; each
# kept state has 2 next steps; the model is called once per expanded state.
SEARCHES = {("closeness", 1): ("3+4=7 7×2=14", 2, 3 + 2), ("verifier", 1): ("2×3=6 6×4=24", 2, 3 + 2),
            ("closeness", 2): ("2×3=6 6×4=24", 3, 3 + 2 * 2), ("closeness", 3): ("2×3=6 6×4=24", 4, 3 + 3 * 2)}


def test_each_search_frame_keeps_prunes_and_counts_as_derived(lessons):
    lesson, session = lessons["search-evaluator"]
    vocab = session.model.vocab
    found = {}
    for i, frame in enumerate(session.frames):
        if frame.search_result is not None:
            r = frame.search_result
            best = " ".join(vocab.piece_text(t) for t in r.path(r.best.node_id))
            found[(frame.search.evaluator, r.width)] = (best, r.forwards, r.evaluations)
            title, explain = texts(session, i)
            assert best in title + explain["what"] and f"{r.forwards} model calls, {r.evaluations} evaluations" in explain["check"]
    assert found == SEARCHES
    greedy = session.scenario_results()[0][0]
    assert [vocab.piece_text(t) for t in greedy.output_ids] == ["2+3=5", "5×4=20", "<eos>"]   # 0.40, then 0.6


def test_a_poor_evaluator_prunes_the_right_branch_at_depth_1(lessons):
    lesson, session = lessons["search-evaluator"]
    frame = next(f for f in session.frames if f.search is not None and f.search.evaluator == "closeness"
                 and f.search.width == 1)
    vocab = session.model.vocab
    level1 = {vocab.piece_text(n.token_id): n.status for n in frame.search_result.level(1)}
    assert level1 == {"2+3=5": "pruned", "3+4=7": "kept", "2×3=6": "pruned"}      # 0.2917 > 0.25 > 0.2083


# ---------------------------------------------------------------------------- tool-evidence

TOOL_PROMPT = (1, 2, 13)             # <bos> test_db失败：… 可用工具：read_env
CALL = (14, 15, 16, 17)              # <tool> call_1 read_env </tool>
RESULT = (18, 15, 19, 20)            # <result> call_1 DB_URL未设置 </result>


def run_of(lesson, session, name):
    return session.scenario_results()[[n for n, _ in lesson.scenarios].index(name)][0]


def test_more_reasoning_guesses_and_the_tool_brings_the_cause(lessons):
    lesson, session = lessons["tool-evidence"]
    vocab = session.model.vocab
    think, more = run_of(lesson, session, "base"), run_of(lesson, session, "think-more")
    # <think> 配置文件看不出错误 环境信息缺失 无法区分 </think> = 5; 再比较一遍 仍缺少环境变量: 2 more
    after_think = [run.output_ids[run.output_ids.index(4) + 1:] for run in (think, more)]    # 4 = </think>
    assert [vocab.decode(ids) for ids in after_think] == ["猜测：配置错"] * 2
    assert len(think.output_ids) == 5 + 3 and len(more.output_ids) == 7 + 3 and more.steps[4].forced
    tool = run_of(lesson, session, "tool")
    assert tool.prompt_ids == TOOL_PROMPT and tool.output_ids == CALL and tool.finish_reason == "tool_call"
    after = run_of(lesson, session, "after-tool")
    assert after.prompt_ids == TOOL_PROMPT + CALL + RESULT
    assert vocab.decode(after.output_ids) == "根因：测试环境错（DB_URL未设置）" and after.finish_reason == "eos"


def test_the_cost_frame_counts_every_way_apart(lessons):
    lesson, session = lessons["tool-evidence"]
    index = next(i for i, p in enumerate(lesson.plans) if p.extras["title"]["en"].startswith("4 ·"))
    _, explain = texts(session, index)
    # reasoning 2 + 5 + 3; effort 2 + 7 + 3; tool 3 + 4, then 11 + 4; agents (2 + 4) + (10 + 3) + (2 + 4) + (10 + 4)
    assert ("reasoning 10; higher effort 12; one tool call 7 + 15 and one read_env; "
            "two agents 6 + 13 + 6 + 14 and two tool calls") in explain["what"]


@pytest.mark.parametrize("edit, problem", [
    ('result = ["<result>", "call_1", "DB_URL未设置", "</result>"]',
     "after_tool: the result carries 'call_2', but the call was 'call_1'"),
    ('after_tool = { scenario = "tool",', "after_tool: the run ended with 'eos', not with a complete tool call"),
])
def test_the_host_answers_only_a_complete_call_with_its_own_call_id(tmp_path, edit, problem):
    text = (lessons_dir() / "tool-evidence.toml").read_text(encoding="utf-8")
    text = text.replace('"../tables/', f'"{lessons_dir().parent / "tables"}/')
    bad = {'result = ["<result>", "call_1", "DB_URL未设置", "</result>"]':
           'result = ["<result>", "call_2", "DB_URL未设置", "</result>"]',
           'after_tool = { scenario = "tool",': 'after_tool = { scenario = "base",'}[edit]
    assert text.count(edit) == 1
    path = tmp_path / "bad-tool.toml"
    path.write_text(text.replace(edit, bad), encoding="utf-8")
    with pytest.raises(LessonError, match=r"bad-tool.toml:\d+: scenario 'after-tool': ") as info:
        load_lesson(path)
    assert problem in str(info.value)


# ---------------------------------------------------------------------------- the list

def test_the_lesson_list_shows_the_new_lessons_with_their_prerequisites(qtbot, window, capsys):
    window.actions["all_lessons"].trigger()
    page = window.lesson_switcher.start_page
    for name, first in (("reasoning-budget", "“Four ways to stop”"), ("self-consistency",
                                                                    "“Reasoning tokens share the budget”"),
                        ("search-evaluator", "“Greedy is not the best sequence”"),
                        ("tool-evidence", "“Four ways to stop”")):
        assert name in page.open_buttons
        label = page.findChild(QLabel, f"builds-on-{name}")
        assert label.text().startswith(f"Builds on: {first}"), label.text()
    assert main(["export", "--list"]) == 0
    listing = capsys.readouterr().out
    assert all(name in listing for name in ("reasoning-budget", "self-consistency", "search-evaluator",
                                            "tool-evidence"))


def test_the_beam_panel_shows_a_frames_search_tree_and_its_vote(qtbot, lessons):
    from explorer.ui.panels.beam import BeamPanel
    lesson, session = lessons["search-evaluator"]
    panel = BeamPanel(session)
    qtbot.addWidget(panel)
    session.go(next(i for i, f in enumerate(session.frames) if f.search is not None and f.search.width == 1
                    and f.search.evaluator == "closeness"))
    assert panel.rows() == [("2+3=5", "0.400", "0.2083", "pruned"), ("3+4=7", "0.350", "0.2917", "kept"),
                            ("7×2=14", "0.550", "0.5833", "kept"), ("7+2=9", "0.450", "0.3750", "pruned"),
                            ("2×3=6", "0.250", "0.2500", "pruned")]
    assert panel.final.text() == "Best: 3+4=7 7×2=14 (score 0.5833) · 2 model calls, 5 evaluations"
    lesson, session = lessons["self-consistency"]
    voting = BeamPanel(session)
    qtbot.addWidget(voting)
    session.go(next(i for i, f in enumerate(session.frames) if f.vote is not None))
    answers = [voting.tree.topLevelItem(i).text(1) for i in range(voting.tree.topLevelItemCount())]
    assert answers == [s.answer for s in session.frame.vote.samples] and len(answers) == 5
    assert voting.final.text().startswith(f"Votes: {session.frame.vote.counts[0][0]} × ")


def test_greedy_settings_give_every_seed_the_same_answer(lessons):
    """A teacher switching the vote's lesson to greedy is not refused: five equal runs, one answer."""
    lesson, session = lessons["self-consistency"]
    greedy = session.copy()
    greedy.go(next(i for i, f in enumerate(greedy.frames) if f.vote is not None))
    greedy.set_sampling(mode="greedy")
    vote = greedy.frame.vote
    assert {s.run.output_ids for s in vote.samples} == {vote.samples[0].run.output_ids}
    assert vote.counts == (("11", 5),)            # greedy: 先算乘法 (0.50) -> 4×2=8 -> 3+8=11


@pytest.mark.parametrize("name", ["reasoning-budget", "self-consistency", "search-evaluator", "tool-evidence"])
def test_each_new_lesson_exports_a_chinese_slide(qapp, capsys, tmp_path, name):
    """The English decks are exported by tests/test_export.py; here one Chinese slide each."""
    assert main(["export", "--lesson", name, "--lang", "zh", "--frames", "4", "--format", "png",
                 "--out", str(tmp_path)]) == 0, capsys.readouterr().err
    (png,) = tmp_path.glob("04-*.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
