"""The byte-level BPE vocabulary of the tiny test models: three ChatML control tokens,
the 256 bytes in GPT-2's spelling and five merges (no pytest here: tools/ import it too)."""

from explorer.core.tokens.bpe import byte_to_unicode

CONTROL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
MERGES = ["Ġ t", "h e", "Ġt he", "Ġ a", "i n"]
TOKENS = CONTROL + [byte_to_unicode()[b] for b in range(256)] + ["Ġt", "he", "Ġthe", "Ġa", "in"]
VOCAB = len(TOKENS)
