"""The glossary: the course's terms with a short definition in every language, and the
words that mark them in explanation text (`load_glossary`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from ..core.errors import ExplorerError
from ..i18n import LANGS
from ..resources import resources_dir
from .reader import LessonError, TomlReader

FORMAT = "token-explorer/glossary"
VERSION = 1
TERM_KEYS = ("id", "term", "definition", "aliases")
_ID = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")
_WORD = "A-Za-z0-9_"          # characters that make a Latin word continue


class GlossaryError(LessonError):
    """A glossary file that cannot be used; the message names the file and the key."""


def glossary_path() -> Path:
    """The shipped glossary. (Not in resources/lessons/: every *.toml there is read as a lesson.)"""
    return resources_dir() / "glossary.toml"


@dataclass(frozen=True)
class Term:
    id: str
    term: dict[str, str]                    # lang -> name
    definition: dict[str, str]              # lang -> one or two sentences
    aliases: dict[str, tuple[str, ...]]     # lang -> other words that mark the term

    def words(self, lang: str) -> tuple[str, ...]:
        """Every word that marks this term in `lang`: the term itself first, then its aliases."""
        return (self.term[lang],) + tuple(a for a in self.aliases.get(lang, ()) if a != self.term[lang])


@dataclass(frozen=True)
class Glossary:
    path: Path
    terms: tuple[Term, ...]
    _by_id: dict = field(init=False, repr=False, compare=False)
    _compiled: dict = field(init=False, repr=False, compare=False)    # lang -> _patterns(lang)

    def __post_init__(self):
        object.__setattr__(self, "_by_id", {t.id: t for t in self.terms})
        object.__setattr__(self, "_compiled", {})

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(t.id for t in self.terms)

    def __contains__(self, term_id: str) -> bool:
        return term_id in self._by_id

    def term(self, term_id: str) -> Term:
        return self._by_id[term_id]

    def find(self, text: str, lang: str) -> list[tuple[int, int, str]]:
        """Where terms occur in `text`: sorted, non-overlapping (start, end, term_id).

        The longest word wins where matches overlap (预填充 over 填充), then the earlier
        one. Latin letters match case-insensitively and only as whole words: "token" marks
        "Token" and the Token in 一个Token, but not "tokens" or "tokenizer"."""
        if lang not in LANGS:
            raise ValueError(f"lang {lang!r}: expected one of {', '.join(LANGS)}")
        hits = []
        for word, term_id in self._patterns(lang):
            hits += [(m.start(), m.end(), term_id) for m in word.finditer(text)]
        hits.sort(key=lambda h: (-(h[1] - h[0]), h[0]))
        taken: list[tuple[int, int, str]] = []
        for start, end, term_id in hits:
            if all(end <= s or start >= e for s, e, _ in taken):
                taken.append((start, end, term_id))
        return sorted(taken)

    def _patterns(self, lang: str) -> list[tuple[re.Pattern, str]]:
        """(compiled word, term id) of one language, compiled when it is first needed."""
        compiled = self._compiled.get(lang)
        if compiled is None:
            compiled = self._compiled[lang] = [(_pattern(w), t.id) for t in self.terms for w in t.words(lang)]
        return compiled


def _pattern(word: str) -> re.Pattern:
    """`word`, case-insensitive; an edge that is a Latin word character must not continue a word."""
    edge = f"(?-i:[{_WORD}])"      # both cases are listed: no case folding (5x quicker to compile)
    before = f"(?<!{edge})" if re.match(f"[{_WORD}]", word[0]) else ""
    after = f"(?!{edge})" if re.match(f"[{_WORD}]", word[-1]) else ""
    return re.compile(before + re.escape(word) + after, re.IGNORECASE)


# ---------------------------------------------------------------------------- loading

class _GlossaryReader(TomlReader):
    error = GlossaryError


def load_glossary(path: Path | str | None = None) -> Glossary:
    """Read and check a glossary file (default: the shipped one).

    File format (TOML; errors are GlossaryErrors naming the file and the key path, e.g.
    `glossary.toml: terms[3].definition: missing "zh" text`)::

        format = "token-explorer/glossary"
        version = 1

        [[terms]]
        id = "kv-cache"                                   # lowercase letters, digits, hyphens
        term = { en = "KV cache", zh = "KV缓存" }         # the name shown in a tooltip header
        definition = { en = "...", zh = "..." }           # one or two sentences
        aliases = { en = ["KV caches"], zh = ["KV cache"] }   # optional; more words that mark it

    The term itself always marks it; aliases add other spellings. A word may belong to one
    term only (per language), so a match never has two meanings."""
    path = glossary_path() if path is None else Path(path)
    r = _GlossaryReader(path)
    data = r.read(path, FORMAT, VERSION, ("format", "version", "terms"), ("format", "version", "terms"))
    if not isinstance(data["terms"], list) or not data["terms"]:
        r.fail("terms", "expected at least one [[terms]] table")
    terms, seen_ids = [], {}
    owner: dict[tuple[str, str], str] = {}      # (lang, folded word) -> where it was first given
    for i, td in enumerate(data["terms"]):
        where = f"terms[{i}]"
        r.table(td, where, TERM_KEYS, ("id", "term", "definition"))
        term_id = td["id"]
        if not isinstance(term_id, str) or not _ID.fullmatch(term_id):
            r.fail(f"{where}.id", f"{term_id!r}: expected lowercase letters, digits and hyphens, e.g. \"kv-cache\"")
        if term_id in seen_ids:
            r.fail(f"{where}.id", f"{term_id!r} is already terms[{seen_ids[term_id]}]")
        seen_ids[term_id] = i
        term = Term(term_id, r.text(td["term"], f"{where}.term"), r.text(td["definition"], f"{where}.definition"),
                    _aliases(r, td.get("aliases", {}), f"{where}.aliases"))
        for lang in LANGS:
            for k, word in enumerate(term.words(lang)):
                at = f"{where}.term.{lang}" if k == 0 else f"{where}.aliases.{lang}"
                key = (lang, word.casefold())
                if key in owner:
                    r.fail(at, f"{word!r} already marks {owner[key]}: a word may mark one term only")
                owner[key] = f"{term_id!r} ({at})"
        terms.append(term)
    return Glossary(path, tuple(terms))


def _aliases(r: TomlReader, value, where: str) -> dict[str, tuple[str, ...]]:
    r.table(value, where, LANGS)
    out = {}
    for lang, words in value.items():
        if not isinstance(words, list) or not all(isinstance(w, str) and w.strip() == w and w for w in words):
            r.fail(f"{where}.{lang}", "expected a list of non-empty words without surrounding spaces")
        out[lang] = tuple(words)
    return out


@cache
def course_glossary() -> tuple[Glossary | None, str]:
    """(the shipped glossary, "") or (None, why it cannot be read): read once per process; the
    window shows the reason instead of the terms."""
    try:
        return load_glossary(), ""
    except (ExplorerError, OSError) as exc:
        return None, str(exc)


def glossary_terms() -> tuple[Term, ...]:
    """The shipped glossary's terms (none when it cannot be read)."""
    g = course_glossary()[0]
    return g.terms if g is not None else ()


def find_term(term_id: str) -> Term | None:
    return next((t for t in glossary_terms() if t.id == term_id), None)
