"""Self-consistency (the second kind of extra compute spent on a question): sample the same
prompt with several seeds, read each sample's answer, and take the majority vote."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..errors import SettingError
from .generate import Run, generate
from ..models.protocol import LanguageModel
from .sampling import SamplingConfig
from .usage import count_usage


@dataclass(frozen=True)
class Sample:
    seed: int
    run: Run
    answer: str              # the answer text: outside reasoning segments, trimmed
    tokens: int              # generated tokens (reasoning included): what this sample cost


@dataclass(frozen=True)
class Vote:
    samples: tuple[Sample, ...]
    counts: tuple[tuple[str, int], ...]    # (answer, votes), most votes first, ties in order of appearance

    @property
    def majority(self) -> str:
        return self.counts[0][0]

    @property
    def majority_votes(self) -> int:
        return self.counts[0][1]

    @property
    def tokens(self) -> int:
        """Generated tokens over every sample: N runs' worth."""
        return sum(s.tokens for s in self.samples)

    @property
    def seconds(self) -> float:
        """Forward time measured over every sample."""
        return sum(step.seconds for s in self.samples for step in s.run.steps)


def self_consistency(model: LanguageModel, prompt_ids, config: SamplingConfig, seeds,
                     overrides: dict | None = None) -> Vote:
    """One Run per seed, each answer read, and the vote. The settings should sample: with
    greedy choices (a teacher's change) every seed gives the same run, and the vote shows it.

    Each sample is an ordinary Run of `generate` with the scenario's settings and its own seed.
    A sample's answer is the text outside its reasoning segments (`core.decode.usage`), trimmed. The
    majority is the answer with the most votes, a tie going to the one that appeared first.
    The cost is the sum over the samples: every generated token and the forward time."""
    seeds = tuple(int(s) for s in seeds)
    if not seeds:
        raise SettingError("samples: expected at least one seed")
    vocab = model.vocab
    samples = []
    for seed in seeds:
        run = generate(model, prompt_ids, config.with_(seed=seed), overrides=overrides, check_recompute=False)
        usage = count_usage(run.prompt_ids, run.output_ids, vocab)
        samples.append(Sample(seed, run, vocab.decode(usage.answer_ids).strip(), len(run.output_ids)))
    tally = Counter(s.answer for s in samples)
    first = {a: i for i, a in reversed(list(enumerate(s.answer for s in samples)))}
    counts = tuple(sorted(tally.items(), key=lambda kv: (-kv[1], first[kv[0]])))
    return Vote(tuple(samples), counts)
