"""What a model is taught in: a named model's spec says it, a model opened by path its tokenizer;
the prompt a new session starts from follows it."""

from types import SimpleNamespace

from gguf_files import tiny  # noqa: F401  (fixture: a small llama file, byte-level BPE)

from explorer.catalog.load import default_prompt, load_model, teaching_language
from explorer.catalog.registry import MODELS, TEACHING
from explorer.core.models.teaching import load_teaching_model
from explorer.core.tokens.bpe import BPEVocabulary
from explorer.core.tokens.spm import CONTROL, SentencePieceVocabulary


def test_a_named_model_is_taught_in_its_specs_language():
    assert [MODELS[name].language for name in ("smollm2", "gemma3-270m")] == ["en", "zh"]
    teaching = load_teaching_model()
    assert teaching_language(TEACHING, teaching) == "zh" and default_prompt(TEACHING, teaching) == "我爱"
    # the name decides, not the vocabulary: Gemma's SentencePiece and SmolLM2's BPE alike
    assert default_prompt("smollm2", teaching) == "The capital of France is"
    assert default_prompt("gemma3-270m", teaching) == "我爱"


def test_a_model_opened_by_path_is_taught_in_its_tokenizers_language(tiny):  # noqa: F811
    path = str(tiny[0])
    assert default_prompt(path, load_model(path)) == "The capital of France is"       # byte-level BPE
    spm = SentencePieceVocabulary.build(["<pad>", "<eos>"], [0.0, 0.0], [CONTROL, CONTROL], {"pad": 0, "eos": 1})
    bpe = BPEVocabulary.build(["<s>", "</s>", "a"], [], {"bos": 0, "eos": 1})
    assert default_prompt("other.gguf", SimpleNamespace(vocab=spm)) == "我爱"             # SentencePiece
    assert default_prompt("other.gguf", SimpleNamespace(vocab=bpe)) == "The capital of France is"
    assert default_prompt(None, load_teaching_model()) == "我爱"                        # a parameter file
