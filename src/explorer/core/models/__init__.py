"""Language models in numpy: the protocol, KV cache, traces, layers, attention, the
arithmetic a forward computes in, the decoder, the teaching and table models and their
parameter files."""
