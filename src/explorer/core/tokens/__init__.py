"""Vocabularies and tokenizers: byte-level BPE, SentencePiece, chat markers."""
