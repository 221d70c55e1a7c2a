"""Models already on the computer (catalog/local): found in fake Ollama, LM Studio and Hugging
Face stores and in added folders, by the names those tools show, without changing anything;
opened by Ollama's name or by path; refused by name when absent, or too big for the memory."""

from __future__ import annotations

import os

import numpy as np
import pytest

from gguf_files import llama_tensors, tiny, write_llama  # noqa: F401  (tiny: fixture)
from gguf_splits import write_split_llama
from model_stores import stores, tree_state  # noqa: F401  (stores: fixture)

from explorer.catalog import memory
from explorer.catalog.load import load_model
from explorer.catalog.local import (FOLDER, HUGGINGFACE, LMSTUDIO, OLLAMA, ModelNotFound, find_models,
                                    is_gguf, ollama_path)
from explorer.catalog.memory import NotEnoughMemory, available_memory
from explorer.core.gguf.reader import GGUFError
from explorer.core.gguf.summary import summarize_file
from explorer.units import byte_size
from explorer.lessons.models import build_model


def by_name(found):
    return {m.name: m for m in found}


def test_each_tools_models_are_listed_by_the_names_it_shows(stores):
    qwen = stores.ollama_model("qwen2.5:0.5b", stores.gguf_bytes(1))
    mine = stores.ollama_model("tinyllama:latest", stores.gguf_bytes(2), namespace="someone")
    lms = stores.lmstudio_model("lmstudio-community/Qwen-GGUF/Qwen-Q4_0.gguf", stores.tiny.read_bytes())
    old = stores.lmstudio_model("bartowski/Smol-GGUF/Smol-Q8_0.gguf", stores.tiny.read_bytes(), old=True)
    hf = stores.hf_model("Org/Tiny-GGUF", "tiny-q8_0.gguf", stores.tiny.read_bytes(), revisions=("r1", "r2"))
    found = by_name(find_models())
    assert found["qwen2.5:0.5b"].path == qwen and found["qwen2.5:0.5b"].source == OLLAMA
    assert found["qwen2.5:0.5b"].key == "ollama:qwen2.5:0.5b"
    assert found["someone/tinyllama:latest"].path == mine
    assert found["lmstudio-community/Qwen-Q4_0"].path == lms and found["lmstudio-community/Qwen-Q4_0"].source == LMSTUDIO
    assert found["bartowski/Smol-Q8_0"].path == old and found["bartowski/Smol-Q8_0"].key == str(old)
    assert found["Org/Tiny-GGUF/tiny-q8_0"].source == HUGGINGFACE
    assert found["Org/Tiny-GGUF/tiny-q8_0"].path in hf                         # two snapshots, one blob: once
    assert len(found) == 5 and not any("sha256" in name for name in found)     # the template blob is no model
    s = found["qwen2.5:0.5b"].summary
    assert s.supported and s.architecture == "llama" and s.file_size == qwen.stat().st_size and s.memory > 0


def test_finding_models_changes_nothing(stores, tmp_path):
    stores.ollama_model("qwen2.5:0.5b", stores.gguf_bytes(1))
    stores.hf_model("Org/Tiny-GGUF", "tiny.gguf", stores.tiny.read_bytes())
    before = tree_state(tmp_path)
    assert len(find_models()) == 2
    assert tree_state(tmp_path) == before


def test_a_blob_whose_manifest_is_gone_is_listed_and_opens_by_path(stores):
    blob = stores.ollama_model("qwen2.5:0.5b", stores.gguf_bytes(1))
    for manifest in (stores.ollama / "manifests").rglob("0.5b"):
        manifest.unlink()
    [entry] = find_models()
    assert entry.path == blob and entry.name == blob.name and entry.key == str(blob) and entry.source == OLLAMA
    assert load_model(str(blob)).name == blob.name           # no .gguf extension: known by its magic


def test_an_ollama_model_loads_by_its_name_and_a_missing_one_says_where_it_looked(stores):
    blob = stores.ollama_model("qwen2.5:0.5b", stores.gguf_bytes(1))
    assert ollama_path("ollama:qwen2.5:0.5b") == blob
    model = load_model("ollama:qwen2.5:0.5b")
    assert model.name == "qwen2.5:0.5b" and load_model("ollama:qwen2.5:0.5b") is model   # shared
    assert load_model(str(blob)).name == "qwen2.5:0.5b"                                  # the blob knows its name
    with pytest.raises(ModelNotFound) as exc:
        load_model("ollama:qwen3:4b")
    manifest = stores.ollama / "manifests" / "registry.ollama.ai" / "library" / "qwen3" / "4b"
    assert "ollama:qwen3:4b is not on this computer" in str(exc.value) and str(manifest) in str(exc.value)
    assert "from OLLAMA_MODELS" in str(exc.value) and "ollama pull qwen3:4b" in str(exc.value)
    blob.unlink()
    with pytest.raises(ModelNotFound, match=f"names the blob {blob}, which is missing"):
        load_model("ollama:qwen2.5:0.5b")
    with pytest.raises(ModelNotFound, match="expected an Ollama model name"):
        load_model("ollama:../../etc:passwd")


def test_an_added_folder_is_searched_by_magic_without_following_link_loops(stores, tmp_path, tiny):  # noqa: F811
    folder = tmp_path / "class models"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "no-extension").write_bytes(stores.tiny.read_bytes())
    (folder / "fake.gguf").write_bytes(b"<html>not found</html>")
    (folder / "sub" / "loop").symlink_to(folder, target_is_directory=True)
    parts = write_split_llama(folder / "split.gguf", tiny[1], max_tensors=8)
    found = by_name(find_models([str(folder)]))
    assert set(found) == {"no-extension", parts[0].stem}                        # parts 2..n are not entries
    assert all(m.source == FOLDER for m in found.values())
    assert found[parts[0].stem].summary.supported
    assert found[parts[0].stem].summary.file_size == sum(p.stat().st_size for p in parts)
    assert not is_gguf(folder / "fake.gguf") and not is_gguf(folder)


def test_a_file_that_is_no_language_model_is_refused_with_what_it_is(stores, tmp_path):
    from gguf import GGUFValueType as V
    path = write_llama(tmp_path / "adapter.gguf", llama_tensors(np.random.default_rng(4)),
                       extra_kv={"general.type": ("adapter", V.STRING), "adapter.type": ("lora", V.STRING)})
    with pytest.raises(GGUFError, match=f"{path}: A LoRA adapter"):
        load_model(str(path))


def test_a_model_bigger_than_the_memory_left_is_refused_with_its_estimate(stores, monkeypatch):
    monkeypatch.setattr(memory, "available_memory", lambda: 1000)
    estimate = byte_size(summarize_file(stores.tiny).memory)
    with pytest.raises(NotEnoughMemory, match=f"{stores.tiny}: needs about {estimate} of memory here .* but only 1 kB"):
        load_model(str(stores.tiny))


def test_the_memory_available_is_the_kernels_memavailable(tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       16314240 kB\nMemFree:  1 kB\nMemAvailable:    8124376 kB\n")
    assert available_memory(meminfo) == 8124376 * 1024
    assert available_memory(tmp_path / "absent") is None
    if os.path.exists("/proc/meminfo"):
        assert available_memory() > 0


def test_a_lesson_names_a_model_by_ollama_name_or_path_and_says_when_it_is_absent(stores, tmp_path):
    stores.ollama_model("qwen2.5:0.5b", stores.gguf_bytes(1))
    lesson = tmp_path / "lessons" / "mine.toml"
    lesson.parent.mkdir()
    assert build_model({"kind": "gguf", "name": "ollama:qwen2.5:0.5b"}, lesson).name == "qwen2.5:0.5b"
    (tmp_path / "lessons" / "m.gguf").write_bytes(stores.tiny.read_bytes())
    assert build_model({"kind": "gguf", "file": "m.gguf"}, lesson).name == "m"
    with pytest.raises(ModelNotFound, match="ollama:llama3.2:1b is not on this computer"):
        build_model({"kind": "gguf", "name": "ollama:llama3.2:1b"}, lesson)
    with pytest.raises(ModelNotFound, match=f"'absent.gguf': this lesson's model is not on this computer "
                                            f"\\(looked for {tmp_path / 'lessons' / 'absent.gguf'}\\)"):
        build_model({"kind": "gguf", "file": "absent.gguf"}, lesson)
    with pytest.raises(Exception, match="name = \"ollama:NAME:TAG\" or file"):
        build_model({"kind": "gguf"}, lesson)


def test_a_model_that_fits_only_read_in_place_opens_so_and_says_why(gemma3, monkeypatch, capsys):
    """Gemma 3 (Q4_K_M): its Q4_K and Q6_K matrices read from the file need 50 MB less."""
    from explorer.catalog import registry as model_registry
    from explorer.cli.main import main
    from explorer.core.decode.generate import generate
    from explorer.core.decode.sampling import SamplingConfig
    from explorer.core.gguf.blocks import MappedMatrix
    path = model_registry.installed_path("gemma3-270m")
    s = summarize_file(path)
    assert 0 < s.memory_in_place < s.memory
    monkeypatch.setattr(memory, "available_memory", lambda: (s.memory + s.memory_in_place) // 2)
    model = load_model(str(path))
    assert isinstance(model.params.layers[0].wq.T, MappedMatrix) and not isinstance(gemma3.params.layers[0].wq.T,
                                                                                     MappedMatrix)
    assert f"memory is short, so its weights are read in place from the file (about {byte_size(s.memory_in_place)}" \
        in model.load_note and gemma3.load_note == ""
    ids = gemma3.vocab.encode("我爱")
    config = SamplingConfig(max_new_tokens=2)
    assert generate(model, ids, config, check_recompute=False).output_ids == \
        generate(gemma3, ids, config, check_recompute=False).output_ids
    assert main(["trace", "--model", str(path), "--prompt-ids", "2", "--max-new-tokens", "1"]) == 0
    assert "note: " in capsys.readouterr().err
    monkeypatch.setattr(memory, "available_memory", lambda: s.memory_in_place - 1)
    with pytest.raises(NotEnoughMemory, match=f"at least {byte_size(s.memory_in_place)} with its weights read in place"):
        load_model(str(path))
