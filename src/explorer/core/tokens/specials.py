"""Special tokens as llama.cpp treats them: which ones are recognised when written in a
prompt, how a prompt is cut around them, and which ones end generation (llama-vocab.cpp)."""

from __future__ import annotations

# tokenizer.ggml.token_type values
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
IN_TEXT_TYPES = (UNKNOWN, CONTROL, USER_DEFINED)     # found in a prompt's text (parse_special)
_C_SPACE = " \t\n\v\f\r"                           # C's isspace

# tokens llama.cpp makes control tokens and end-of-generation ids by their text, whatever
# the file says (its "auto-detect" lists: the files' converters did not always mark them)
END_OF_GENERATION = ("<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "</s>",
                     "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>",
                     "<end_of_utterance>", "<｜end▁of▁sentence｜>")
# fill-in-the-middle markers, each list's first token the file holds (when its key is absent);
# the last three also end generation
FIM_PREFIX = ("<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>")
FIM_SUFFIX = ("<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>")
FIM_MIDDLE = ("<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>")
FIM_ENDING = {"fim_pad": ("<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"),
              "fim_rep": ("<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"),
              "fim_sep": ("<|file_sep|>",)}


def by_length(tokens, ids) -> tuple:
    """((text, id), ...) of the tokens `ids`, longest UTF-8 first (the order llama.cpp looks
    for them in a prompt; empty texts are never found)."""
    found = [(tokens[i], int(i)) for i in ids if tokens[i]]
    return tuple(sorted(found, key=lambda t: (-len(t[0].encode("utf-8")), t[1])))


def phi3_rstrip(model_name: str, tokens, ids) -> frozenset:
    """The ids (of the special tokens `ids`) after which llama.cpp drops the whitespace that
    follows in a prompt: every special token of a model whose `general.name` says Phi-3 except <unk>, <s> and
    <|endoftext|> (llama-vocab.cpp's per-model token attributes); none for other models."""
    name = (model_name or "").lower()
    if "phi-3" not in name and "phi3" not in name:
        return frozenset()
    return frozenset(int(i) for i in ids if tokens[i] not in ("<unk>", "<s>", "<|endoftext|>"))


def split_specials(text: str, specials: tuple, rstrip: frozenset = frozenset()) -> list:  # -> str and int
    """`text` with every special token written in it replaced by its id: each token in
    turn, longest first, is cut out of every piece of text still left (llama.cpp's
    tokenizer_st_partition; so "<|im_start|>" is found whole before a shorter token inside it).
    After a token of `rstrip` the whitespace that follows is dropped."""
    parts: list = [text]
    for token, token_id in specials:
        if not any(isinstance(p, str) and token in p for p in parts):
            continue
        cut: list = []
        for p in parts:
            if not isinstance(p, str) or token not in p:
                cut.append(p)
                continue
            for k, chunk in enumerate(p.split(token)):
                if k:
                    cut.append(token_id)
                    chunk = chunk.lstrip(_C_SPACE) if token_id in rstrip else chunk
                if chunk:
                    cut.append(chunk)
        parts = cut
    return parts
