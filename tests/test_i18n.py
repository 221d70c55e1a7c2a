"""One translation mechanism: every message has both languages, and core holds no words
of its own (it returns codes and numbers; session, ui and the CLI word them)."""

import ast
import importlib
import pkgutil
import re
import string
from pathlib import Path

import pytest

import explorer
from explorer.i18n import LANGS, MESSAGES, add_messages, tr

CORE = Path(explorer.__file__).parent / "core"
CJK = re.compile(r"[\u3001-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff01-\uff5e]")   # ideographs, CJK punctuation (not U+3000, a space)
# model data, not words: the teaching model's vocabulary is the course's Chinese tokens
DATA = {("teaching.py", "PIECES")}


def every_message() -> dict:
    """MESSAGES once every module of explorer (each registers its own words) is imported."""
    for module in pkgutil.walk_packages(explorer.__path__, "explorer."):
        if not module.name.endswith("__main__"):
            importlib.import_module(module.name)
    return MESSAGES


def fields(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}


def test_every_message_has_both_languages_with_the_same_fields():
    messages = every_message()
    assert len(messages) > 300
    for key, texts in messages.items():
        assert set(texts) == set(LANGS), key
        assert all(isinstance(texts[lang], str) for lang in LANGS), key
        assert fields(texts["en"]) == fields(texts["zh"]), key


def test_a_key_defined_twice_or_without_chinese_is_refused():
    with pytest.raises(KeyError, match="defined twice"):
        add_messages({"prompt": {"en": "prompt", "zh": "提示"}})
    with pytest.raises(KeyError, match="no text for"):
        add_messages({"test.only_english": {"en": "hello"}})
    assert tr("stage.temperature", "zh") == "温度" and tr("stage.temperature", "fr") == "temperature"


def docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings (module, class, function)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def data_strings(tree: ast.AST, filename: str) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and (filename, t.id) in DATA for t in node.targets):
            out |= {id(c) for c in ast.walk(node.value) if isinstance(c, ast.Constant)}
    return out


def test_core_holds_no_user_facing_chinese_and_no_language_tables():
    """Chinese may stand in core's comments and docstrings (they explain the course's
    example), never in a string it returns or prints; nor does core pick words by language."""
    found = []
    for path in sorted(CORE.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        allowed = docstrings(tree) | data_strings(tree, path.name)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in allowed:
                if CJK.search(node.value) or node.value == "zh":
                    found.append(f"core/{path.name}:{node.lineno}: {node.value[:40]!r}")
    assert found == []


def test_the_scan_finds_words_in_core_code():
    tree = ast.parse('"""我爱 in a docstring"""\nLABELS = {"zh": {"kept": "保留"}}\n')
    allowed = docstrings(tree)
    hits = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and id(n) not in allowed and (CJK.search(n.value) or n.value == "zh")]
    assert hits == ["zh", "保留"]
