"""A parameter file is validated field by field; each problem names the field."""

import copy
import json

import pytest

from explorer.core.errors import ParamsError
from explorer.core.models.params_file import load_params, model_from_document
from explorer.core.models.teaching import default_params_path


@pytest.fixture
def doc():
    return json.loads(default_params_path().read_text(encoding="utf-8"))


def write(tmp_path, doc):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def mutated(doc, change):
    d = copy.deepcopy(doc)
    change(d)
    return d


def test_round_trip_of_the_shipped_file(doc, tmp_path):
    model = load_params(write(tmp_path, doc))
    assert model.name == "teaching" and len(model.vocab) == 7


def test_missing_file_names_the_path(tmp_path):
    with pytest.raises(ParamsError, match="nowhere.json: file not found"):
        load_params(tmp_path / "nowhere.json")


def test_unparseable_file_names_the_line(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{\n  "format": "token-explorer/params",\n  oops\n}', encoding="utf-8")
    with pytest.raises(ParamsError, match=r"broken.json: not valid JSON at line 3"):
        load_params(path)


@pytest.mark.parametrize("change, message", [
    (lambda d: d["tensors"]["layers"][0].__setitem__("wq", [[0.1] * 3] * 4),
     r"tensors\.layers\[0\]\.wq: expected shape \[4, 4\], got \[4, 3\]"),
    (lambda d: d["tensors"]["embed"][2].__setitem__(1, float("nan")),
     r"tensors\.embed: nan at index \[2, 1\]: expected a finite number"),
    (lambda d: d["tensors"]["w_out"][0].__setitem__(0, float("inf")),
     r"tensors\.w_out: inf at index \[0, 0\]"),
    (lambda d: d["tensors"]["layers"][0].__setitem__("w1", [[1, 2], [3]]),
     r"tensors\.layers\[0\]\.w1: ragged: its rows have different lengths \(expected shape \[4, 8\]\)"),
    (lambda d: d["tensors"].pop("b_out"), r"tensors\.b_out: missing"),
    (lambda d: (d["vocabulary"]["pieces"].pop(4), d["vocabulary"]["specials"].__setitem__("eos", 5)),
     r"config\.vocab_size: 7, but the vocabulary has 6 pieces"),
    (lambda d: d["vocabulary"]["specials"].__setitem__("eos", 9), r"vocabulary\.specials\.eos: 9 is not an id"),
    (lambda d: d["config"].__setitem__("d_model", 0), r"config\.d_model: 0 is not a valid positive int"),
    (lambda d: d["config"].__setitem__("norm", "batch"), r"config: norm = 'batch'"),
    (lambda d: d["config"].__setitem__("colour", "blue"), r"config\.colour: unknown setting"),
    (lambda d: d.__setitem__("format", "something-else"), r"format: expected 'token-explorer/params'"),
    (lambda d: d["tensors"].__setitem__("layers", []), r"tensors\.layers: has 0 entries, but config\.n_layers = 1"),
])
def test_bad_field_is_named(doc, tmp_path, change, message):
    with pytest.raises(ParamsError, match=message):
        load_params(write(tmp_path, mutated(doc, change)))


def test_vocabulary_matrix_mismatch_names_both(doc):
    d = mutated(doc, lambda d: (d["vocabulary"]["pieces"].append("多"),
                                d["config"].__setitem__("vocab_size", 8)))
    with pytest.raises(ParamsError, match=r"tensors\.embed: expected shape \[8, 4\], got \[7, 4\]"):
        model_from_document(d, "x.json")
