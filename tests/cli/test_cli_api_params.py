"""The API stages' flags on `sample` and `trace`: values reach the stages (checked against the
peers' formulas), pieces of --logit-bias are looked up, bad values are exit 2 with the flag,
the value and the range."""

from __future__ import annotations

import json

import numpy as np
import pytest

from explorer.cli.main import main


def run(capsys, argv) -> tuple[int, str, str]:
    try:
        status = main(argv)
    except SystemExit as exc:
        status = exc.code
    out = capsys.readouterr()
    return status, out.out, out.err


def test_sample_counts_seen_as_the_output_for_openai_penalties(capsys):
    """OpenAI: logit - count * frequency - (count > 0) * presence, over --seen 1,1,3."""
    status, out, _ = run(capsys, ["sample", "--logits=1,2,0.5,-1", "--seen", "1,1,3", "--frequency-penalty", "0.5",
                                  "--presence-penalty", "0.25", "--json"])
    assert status == 0
    data = json.loads(out)
    final = [s for s in data["stages"] if s["name"] == "presence_penalty"][0]["logits"]
    np.testing.assert_allclose(final, [1.0, 2 - 2 * 0.5 - 0.25, 0.5, -1 - 0.5 - 0.25])
    assert data["order"][:3] == ["repetition_penalty", "frequency_penalty", "presence_penalty"]   # the stages that ran


def test_sample_shows_each_new_stage_that_is_on(capsys):
    status, out, _ = run(capsys, ["sample", "--probs", "0.5,0.3,0.15,0.05", "--typical-p", "0.2", "--top-n-sigma", "3",
                                  "--min-keep", "2", "--xtc-probability", "1", "--xtc-threshold", "0.2",
                                  "--order", "llama.cpp"])
    assert status == 0
    for title in ("top_n_sigma (n=3, keep≥2)", "typical_p (p=0.2, keep≥2)", "xtc (p≥0.2"):
        assert title in out
    assert "logit_bias" not in out and "presence_penalty" not in out        # off: no table


def test_trace_bans_a_piece_with_logit_bias(capsys):
    """The teaching model's greedy 我爱 -> 学习 ！; a bias of -100 on the piece 学习 takes it away."""
    status, out, _ = run(capsys, ["trace", "--json", "--max-new-tokens", "3"])
    plain = json.loads(out)
    status, out, _ = run(capsys, ["trace", "--json", "--max-new-tokens", "3", "--logit-bias", "学习:-100"])
    banned = json.loads(out)
    assert status == 0 and 3 in plain["output_ids"] and 3 not in banned["output_ids"]


def test_trace_holds_the_end_token_back(capsys):
    status, out, _ = run(capsys, ["trace", "--json", "--max-new-tokens", "6", "--min-new-tokens", "5"])
    data = json.loads(out)
    assert status == 0 and 6 not in data["output_ids"][:5] and len(data["output_ids"]) >= 5


@pytest.mark.parametrize("argv, message", [
    (["sample", "--logits=2,1,0", "--typical-p", "-0.1"], "--typical-p '-0.1' is out of range; expected a number from 0 (excluded) to 1"),
    (["sample", "--logits=2,1,0", "--xtc-probability", "1.5"], "--xtc-probability '1.5' is out of range; expected a number from 0 to 1"),
    (["sample", "--logits=2,1,0", "--presence-penalty", "nan"], "--presence-penalty 'nan' is NaN"),
    (["sample", "--logits=2,1,0", "--min-new-tokens", "1.5"], "--min-new-tokens '1.5' is not an integer"),
    (["sample", "--logits=2,1,0", "--logit-bias", "1:200"], "--logit-bias BIAS '200' is out of range; expected a number from -100 to 100"),
    (["sample", "--logits=2,1,0", "--logit-bias", "1"], "--logit-bias '1' is not ID:BIAS"),
    (["sample", "--logits=2,1,0", "--logit-bias", "x:1"], "--logit-bias x:1: a piece needs a model's vocabulary"),
    (["trace", "--logit-bias", "9:-100"], "--logit-bias 9:-100: token 9 is outside the vocabulary: expected an id from 0 to 6"),
    (["trace", "--logit-bias", "我爱:-100"], "'我爱' is not one token of the vocabulary (it encodes to 2 tokens)"),
    (["trace", "--logit-bias", "1:1,1:2"], "--logit-bias: token 1 is given twice"),
    (["trace", "--typical-p", "0.5", "--order", "top_k,temperature"],
     "--order top_k,temperature with --typical-p: a stage left out of the order never runs"),
])
def test_bad_values_name_the_flag_and_the_range(capsys, argv, message):
    status, _, err = run(capsys, argv)
    assert status == 2 and message in err and "Traceback" not in err, err


def test_trace_json_names_the_api_settings_that_are_on_only(capsys):
    _, out, _ = run(capsys, ["trace", "--json", "--max-new-tokens", "2"])
    plain = json.loads(out)["settings"]
    _, out, _ = run(capsys, ["trace", "--json", "--max-new-tokens", "2", "--typical-p", "0.9", "--logit-bias", "4:-1"])
    api = json.loads(out)["settings"]
    assert "typical_p" not in plain and plain["order"] == ["repetition_penalty", "temperature", "top_k", "top_p", "min_p"]
    assert api["typical_p"] == 0.9 and api["logit_bias"] == {"4": -1.0} and api["order"][0] == "logit_bias"
