"""Parameter files: a readable JSON document with the vocabulary, the configuration, how it
was fitted, and every tensor row by row, checked on load field by field."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from .decoder import DecoderConfig, DecoderModel, DecoderParams, LayerParams
from ..errors import ParamsError
from ..jsonfile import dumps_readable, read_json, write_text_atomic
from ..user_numbers import NumbersError, number_array
from ..tokens.vocab import Vocabulary

FORMAT = "token-explorer/params"
VERSION = 1


# ---------------------------------------------------------------- writing

# settings only the architectures read from GGUF files use (Gemma's, Llama 3's), written when set
GGUF_ONLY = ("embed_scale", "rope_pairs", "windows", "local_rope_base", "kept_rows", "rope_scaling",
             "attn_scale", "queries_scaled_first", "attn_softcap", "final_softcap", "context_length")
OPTIONAL_COUNTS = ("context_length",)     # None by default, else a positive int
_DEFAULTS = {f.name: f.default for f in dataclasses.fields(DecoderConfig)}


def params_document(model: DecoderModel, fit: dict | None = None, description: str = "") -> dict:
    """The JSON document of a model; tensors are written with their float64 repr."""
    c, p = model.config, model.params
    doc = {
        "format": FORMAT,
        "version": VERSION,
        "name": model.name,
        "description": description,
        "vocabulary": vocabulary_document(model.vocab),
        "config": {name: value for name, value in dataclasses.asdict(c).items()
                   if name not in GGUF_ONLY or getattr(c, name) != _DEFAULTS[name]},
    }
    if fit is not None:
        doc["fit"] = fit
    tensors = {"embed": p.embed.tolist()}
    if p.pos_embed is not None:
        tensors["pos_embed"] = p.pos_embed.tolist()
    tensors["layers"] = [_layer_document(lp) for lp in p.layers]
    if p.norm_f is not None:
        tensors["norm_f"] = _norm_document(p.norm_f)
    if p.w_out is not None:
        tensors["w_out"] = p.w_out.tolist()
    if p.b_out is not None:
        tensors["b_out"] = p.b_out.tolist()
    doc["tensors"] = tensors
    return doc


def vocabulary_document(vocab: Vocabulary) -> dict:
    pieces = [p if isinstance(p, str) else {"hex": p.hex()} for p in vocab.pieces]
    return {"pieces": pieces, "specials": dict(vocab.specials)}


def _layer_document(lp: LayerParams) -> dict:
    out = {}
    for f in dataclasses.fields(lp):
        value = getattr(lp, f.name)
        if value is None:
            continue
        out[f.name] = _norm_document(value) if f.name.startswith("norm") else value.tolist()
    return out


def _norm_document(norm) -> dict:
    gamma, beta = norm
    return {"gamma": gamma.tolist()} | ({} if beta is None else {"beta": beta.tolist()})


def save_params(path, model: DecoderModel, fit: dict | None = None, description: str = "") -> None:
    """Write atomically; the same model gives the same bytes."""
    write_text_atomic(path, dumps_readable(params_document(model, fit, description)) + "\n")


# ---------------------------------------------------------------- reading

def load_params(path) -> DecoderModel:
    """Load and validate a parameter file; any problem raises ParamsError naming the field."""
    path = Path(path)
    doc = read_json(path, ParamsError)
    return model_from_document(doc, path.name)


def model_from_document(doc, source: str) -> DecoderModel:
    r = _Reader(source)
    r.expect(isinstance(doc, dict), "", "expected a JSON object at the top")
    r.expect(doc.get("format") == FORMAT, "format", f"expected {FORMAT!r}, got {doc.get('format')!r}")
    r.expect(doc.get("version") == VERSION, "version", f"expected {VERSION}, got {doc.get('version')!r}")
    vocab = vocabulary_from_document(r.get(doc, "vocabulary", dict), r)
    config = _config(r.get(doc, "config", dict), r)
    r.expect(config.vocab_size == len(vocab), "config.vocab_size",
             f"{config.vocab_size}, but the vocabulary has {len(vocab)} pieces")
    t = r.get(doc, "tensors", dict)
    c = config
    d, V, e, f = c.d_model, c.vocab_size, c.head_dim, c.d_ff
    embed = r.tensor(t, "embed", (V, d), "tensors")
    layer_docs = r.get(t, "layers", list, "tensors")
    r.expect(len(layer_docs) == c.n_layers, "tensors.layers",
             f"has {len(layer_docs)} entries, but config.n_layers = {c.n_layers}")
    swiglu, normed = c.ffn == "swiglu", c.norm != "none"
    layers = []
    for i, ld in enumerate(layer_docs):
        where = f"tensors.layers[{i}]"
        r.expect(isinstance(ld, dict), where, "expected an object")
        layers.append(LayerParams(
            wq=r.tensor(ld, "wq", (d, c.n_heads * e), where),
            wk=r.tensor(ld, "wk", (d, c.n_kv_heads * e), where),
            wv=r.tensor(ld, "wv", (d, c.n_kv_heads * e), where),
            wo=r.tensor(ld, "wo", (c.n_heads * e, d), where),
            w1=r.tensor(ld, "w1", (d, f), where),
            w2=r.tensor(ld, "w2", (f, d), where),
            w3=r.tensor(ld, "w3", (d, f), where) if swiglu else None,
            b1=r.optional_tensor(ld, "b1", (f,), where),
            b2=r.optional_tensor(ld, "b2", (d,), where),
            norm1=r.norm(ld, "norm1", d, c.norm, where) if normed else None,
            norm2=r.norm(ld, "norm2", d, c.norm, where) if normed else None))
    params = DecoderParams(
        embed=embed, layers=tuple(layers),
        w_out=None if c.tied_output else r.tensor(t, "w_out", (d, V), "tensors"),
        b_out=r.tensor(t, "b_out", (V,), "tensors") if c.output_bias else None,
        pos_embed=r.tensor(t, "pos_embed", (c.max_positions, d), "tensors") if c.positions == "learned" else None,
        norm_f=r.norm(t, "norm_f", d, c.norm, "tensors") if normed else None)
    name = doc.get("name", "model")
    r.expect(isinstance(name, str), "name", "expected a string")
    return DecoderModel(config, params, vocab, name=name)


def vocabulary_from_document(v: dict, r: "_Reader") -> Vocabulary:
    raw = r.get(v, "pieces", list, "vocabulary")
    r.expect(len(raw) > 0, "vocabulary.pieces", "is empty, expected at least one piece")
    pieces, seen = [], {}       # seen: piece -> its first id
    for i, p in enumerate(raw):
        if isinstance(p, str):
            pieces.append(p)
        elif isinstance(p, dict) and isinstance(p.get("hex"), str):
            try:
                pieces.append(bytes.fromhex(p["hex"]))
            except ValueError:
                r.fail(f"vocabulary.pieces[{i}].hex", f"{p['hex']!r} is not hexadecimal")
        else:
            r.fail(f"vocabulary.pieces[{i}]", 'expected a string or {"hex": "..."}')
        r.expect(len(pieces[-1]) > 0, f"vocabulary.pieces[{i}]", "is empty: expected at least one character or byte")
        first = seen.setdefault(pieces[-1], i)
        r.expect(first == i, f"vocabulary.pieces[{i}]",
                 f"{pieces[-1]!r} is already piece {first}: expected distinct pieces")
    specials = v.get("specials", {})
    r.expect(isinstance(specials, dict), "vocabulary.specials", "expected an object")
    for role, sid in specials.items():
        r.expect(isinstance(sid, int) and not isinstance(sid, bool) and 0 <= sid < len(pieces),
                 f"vocabulary.specials.{role}", f"{sid!r} is not an id in 0..{len(pieces) - 1}")
    return Vocabulary(tuple(pieces), dict(specials))


def _config(cd: dict, r: "_Reader") -> DecoderConfig:
    fields = {f.name: f for f in dataclasses.fields(DecoderConfig)}
    for key in cd:
        r.expect(key in fields, f"config.{key}", f"unknown setting (known: {', '.join(fields)})")
    values = {}
    for name, fld in fields.items():
        if name not in cd:
            continue
        value, want = cd[name], (int if name in OPTIONAL_COUNTS else type(fld.default))
        ok = (isinstance(value, bool) if want is bool else
              isinstance(value, int) and not isinstance(value, bool) and value > 0 if want is int else
              isinstance(value, (int, float)) and not isinstance(value, bool) and np.isfinite(value)
              if want is float else isinstance(value, want))
        r.expect(ok, f"config.{name}", f"{value!r} is not a valid {'positive int' if want is int else want.__name__}")
        values[name] = value
    try:
        return DecoderConfig(**values)
    except ValueError as exc:
        r.fail("config", str(exc))


class _Reader:
    """Field access that raises ParamsError naming `source` and the field path."""

    def __init__(self, source: str):
        self.source = source

    def fail(self, field: str, problem: str):
        raise ParamsError(f"{self.source}: {field}: {problem}" if field else f"{self.source}: {problem}")

    def expect(self, ok: bool, field: str, problem: str) -> None:
        if not ok:
            self.fail(field, problem)

    def get(self, obj: dict, key: str, kind: type, where: str = ""):
        field = f"{where}.{key}" if where else key
        self.expect(key in obj, field, "missing")
        self.expect(isinstance(obj[key], kind), field, f"expected a JSON {kind.__name__}")
        return obj[key]

    def tensor(self, obj: dict, key: str, shape: tuple, where: str) -> np.ndarray:
        field = f"{where}.{key}"
        self.expect(key in obj, field, f"missing (expected shape {list(shape)})")
        try:
            arr = number_array(obj[key], len(shape))
        except NumbersError as exc:
            self.fail(field + exc.where, f"{exc.problem} (expected shape {list(shape)})")
        self.expect(arr.shape == shape, field, f"expected shape {list(shape)}, got {list(arr.shape)}")
        bad = np.argwhere(~np.isfinite(arr))
        if len(bad):
            self.fail(field, f"{arr[tuple(bad[0])]} at index {bad[0].tolist()}: expected a finite number")
        return arr

    def optional_tensor(self, obj, key, shape, where):
        return self.tensor(obj, key, shape, where) if key in obj else None

    def norm(self, obj, key, d, kind, where):
        field = f"{where}.{key}"
        self.expect(isinstance(obj.get(key), dict), field, "missing (expected {\"gamma\": [...]})")
        gamma = self.tensor(obj[key], "gamma", (d,), field)
        beta = self.tensor(obj[key], "beta", (d,), field) if kind == "layer" else None
        return gamma, beta
