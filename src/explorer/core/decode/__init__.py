"""Turning logits into text: the generation loop, sampling stages, stopping, beam search,
speculative decoding, the prefix cache, votes, search, tool calls and usage."""
