"""Tiny vocabulary-only GGUF files, one per pre-tokenizer (and two SentencePiece-style ones),
built deterministically with the `gguf` writer: all 256 byte tokens (or byte-fallback tokens)
plus merges learnt from SAMPLE, so that where a pre-tokenizer cuts the text changes the ids
(digits in ones or threes, a space before a word or not, contractions in upper case, runs of
spaces and newlines). tools/record_tokenization.py tokenizes TEXTS with llama.cpp for the
same files; tests/core/tokens/test_llama_cpp_tokens.py compares."""

from __future__ import annotations

from collections import Counter

import gguf

from explorer.core.tokens.bpe import byte_to_unicode
from explorer.core.tokens.specials import BYTE, CONTROL, NORMAL, UNKNOWN, USER_DEFINED

SAMPLE = ("The capital of France is Paris. I'LL say it's 12345 and 2024 or 3.14159, DON'T you think? "
          "我爱学习，今天天气很好。我们学习语言模型。def add(a, b):\n    return a + b\n\n"
          "for (int i = 0; i < n; ++i) { sum += x[i]; }\n   \t  spaces  and\ttabs\n\n\n"
          "Hello world, hello WORLD! 1000000 people; 999 bottles. we're they've I'm you'd 🙂👍 ")
MERGES = 300                # learnt from SAMPLE
WHOLE_WORDS = ["Ġworld", "ĠWORLD", "DON", "ĠFrance", "ĠWON"]     # entries no merge builds (Llama 3 takes them whole)

# the texts tokenized by llama.cpp and by the app, for every file
TEXTS = [
    "我爱学习！今天天气很好。",
    "大语言模型一次生成一个词元，先预填充，再逐步解码。",
    "The capital of France is Paris.",
    "Hello world, hello WORLD!",
    "12345 678 1000000 3.14159 2024年 0.5%",
    "a  b   c    d\t\te\n\nf\n\n\n\ng",
    "   leading and trailing spaces   ",
    "line one\r\nline two\n \n  \n",
    "def add(a, b):\n    return a + b\n",
    "for (int i = 0; i < n; ++i) { sum += x[i]; }",
    "emoji: 🙂👍🏽🇫🇷 and ❤️",
    "I'LL DON'T WON'T it's we're THEY'VE I'm you'D",
    "混合 text 和 English，还有数字 12345 与 3.14159。",
    "日本語のテキスト、한국어, Ελληνικά, русский, عربى",
    "naïve café ñ e\u0301 ÀÉÎ",
    "a control token <|im_start|> written in the text, and <|endoftext|>",
    "Gemma's <start_of_turn>user\nhi<end_of_turn>\n and Phi's <|user|>\nhi<|end|>\n",
    "!!! ??? ... --- $+<=>^~| `x`",
    "١٢٣ ²³ Ⅷ",
    " ",
    "\n\n",
]


def learn_merges(words: list[list[str]], count: int) -> list[tuple[str, str]]:
    """BPE's training loop over `words` (lists of symbols): the most frequent neighbouring
    pair, ties by the pair's text, merged everywhere, `count` times."""
    merges = []
    for _ in range(count):
        pairs = Counter(p for w in words for p in zip(w, w[1:]))
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))
        merges.append(best)
        for n, w in enumerate(words):
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                    out.append(w[i] + w[i + 1])
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            words[n] = out
    return merges


def _sample_words(spell) -> list[list[str]]:
    """SAMPLE's lines as symbol lists (merges may cross a space or a digit boundary, so that
    the pre-tokenizer's cuts decide which of them apply)."""
    return [spell(line) for line in SAMPLE.splitlines(keepends=True)]


def _writer(path, name: str, model: str):
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name(name)
    w.add_block_count(1)
    w.add_context_length(128)
    w.add_embedding_length(8)
    w.add_feed_forward_length(8)
    w.add_head_count(1)
    w.add_tokenizer_model(model)
    return w


def _finish(w) -> None:
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


# pre-tokenizer -> (control tokens, user-defined tokens, BOS, EOS, extra keys)
BPE_FILES = {
    "qwen2": (["<|endoftext|>", "<|im_start|>", "<|im_end|>"], ["<think>", "</think>"], 0, 2, {"add_bos": False}),
    "llama-bpe": (["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"],
                  [], 0, 4, {}),       # no add_bos_token key: Llama 3's pre-tokenizer adds <bos> itself
    "gpt-2": (["<|endoftext|>"], [], 0, 0, {}),
    "smollm": (["<|endoftext|>", "<|im_start|>", "<|im_end|>"], [], 1, 2, {"add_bos": False}),
}
# name -> (general.name, add_space_prefix key or None, control tokens)
SPM_FILES = {
    "spm-gemma": ("gemma-tiny", False, ["<start_of_turn>", "<end_of_turn>"]),
    "spm-phi3": ("phi3-tiny", None, ["<|user|>", "<|assistant|>", "<|end|>", "<|endoftext|>"]),
}
FILES = [*BPE_FILES, *SPM_FILES]


def write_bpe(path, pre: str) -> None:
    """A byte-level BPE vocabulary with `pre` as its pre-tokenizer."""
    control, user, bos, eos, keys = BPE_FILES[pre]
    table = byte_to_unicode()
    merges = learn_merges(_sample_words(lambda s: [table[b] for b in s.encode("utf-8")]), MERGES)
    tokens = control + user + [table[b] for b in range(256)] + [a + b for a, b in merges]
    tokens += [t for t in WHOLE_WORDS if t not in tokens]
    types = [CONTROL] * len(control) + [USER_DEFINED] * len(user) + [NORMAL] * (len(tokens) - len(control) - len(user))
    w = _writer(path, f"{pre}-tiny", "gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges([f"{a} {b}" for a, b in merges])
    w.add_bos_token_id(bos)
    w.add_eos_token_id(eos)
    if "add_bos" in keys:
        w.add_add_bos_token(keys["add_bos"])
    _finish(w)


def write_spm(path, name: str) -> None:
    """A SentencePiece-style vocabulary: <unk>, <s>, </s>, control tokens, the byte tokens,
    the sample's characters, and its merges scored so that the earlier merge wins."""
    model_name, space_prefix, control = SPM_FILES[name]
    merges = learn_merges(_sample_words(lambda s: list(s.replace(" ", "▁"))), MERGES)
    chars = sorted(set(SAMPLE.replace(" ", "▁")) - set("\n\t"))      # newlines and tabs: byte fallback
    head = [("<unk>", UNKNOWN), ("<s>", CONTROL), ("</s>", CONTROL)] + [(t, CONTROL) for t in control]
    rows = head + [(f"<0x{b:02X}>", BYTE) for b in range(256)]
    scores = [0.0] * len(rows)
    pieces = [c for c in chars] + [a + b for a, b in merges]
    seen = set()
    for k, piece in enumerate(pieces):
        if piece not in seen:
            seen.add(piece)
            rows.append((piece, NORMAL))
            scores.append(-1000.0 - k if k < len(chars) else -float(k - len(chars)))
    tokens, types = zip(*rows)
    w = _writer(path, model_name, "llama")
    w.add_tokenizer_pre("default")
    w.add_token_list(list(tokens))
    w.add_token_scores(scores)
    w.add_token_types(list(types))
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_add_bos_token(True)
    if space_prefix is not None:
        w.add_add_space_prefix(space_prefix)
    _finish(w)


def write_tokenizer_file(path, name: str) -> None:
    """The tiny file `name` (one of FILES) at `path`."""
    if name in BPE_FILES:
        write_bpe(path, name)
    else:
        write_spm(path, name)
