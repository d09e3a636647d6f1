import numpy as np
import pytest

from rollgym.core import ConfigError
from rollgym.core.seeding import (
    SPLITS,
    content_digest,
    draw_in_split,
    split_of_key,
    stable_int,
    task_rng,
    task_seed_sequence,
)


def test_task_rng_is_deterministic_and_depends_on_every_coordinate():
    base = task_rng("fam", "train", 5).integers(0, 2**62, size=4)
    assert (base == task_rng("fam", "train", 5).integers(0, 2**62, size=4)).all()
    for other in (task_rng("fam", "test", 5), task_rng("fam", "train", 6), task_rng("fam2", "train", 5),
                  task_rng("fam", "train", 5, attempt=1)):
        assert (other.integers(0, 2**62, size=4) != base).any()


def test_seed_streams_of_neighbouring_indices_do_not_overlap():
    # reasoning-gym's Random(seed + idx) makes dataset(seed=1) a shifted copy of dataset(seed=0).
    firsts = {int(task_rng("fam", "train", i).integers(0, 2**62)) for i in range(2000)}
    assert len(firsts) == 2000
    window = [task_rng("fam", "train", 1).integers(0, 2**62, size=3).tolist()]
    assert window != [task_rng("fam", "train", 0).integers(0, 2**62, size=4)[1:].tolist()]


def test_stable_int_is_machine_independent():
    # A fixed value: sha256 is the same everywhere, unlike hash().
    assert stable_int("countdown") == stable_int("countdown")
    assert stable_int("countdown") == int.from_bytes(
        __import__("hashlib").sha256(b"countdown").digest()[:16], "big"
    )


def test_split_buckets_have_the_documented_proportions():
    counts = {s: 0 for s in SPLITS}
    for i in range(20000):
        counts[split_of_key(f"key-{i}")] += 1
    assert 0.77 < counts["train"] / 20000 < 0.83
    assert 0.08 < counts["test"] / 20000 < 0.12
    assert 0.08 < counts["validation"] / 20000 < 0.12


def test_draw_in_split_only_returns_candidates_of_that_split():
    def candidate(rng: np.random.Generator) -> int:
        return int(rng.integers(0, 50))  # a tiny instance space: collisions are certain

    seen: dict[str, set[int]] = {s: set() for s in SPLITS}
    for split in SPLITS:
        for i in range(300):
            value, _ = draw_in_split("tiny", split, i, candidate, key=str)
            assert split_of_key(str(value)) == split
            seen[split].add(value)
    assert not seen["train"] & seen["test"]
    assert not seen["train"] & seen["validation"]
    assert not seen["test"] & seen["validation"]


def test_draw_in_split_gives_up_with_a_clear_error():
    train_key = next(k for k in (f"k{i}" for i in range(1000)) if split_of_key(k) == "train")
    with pytest.raises(ConfigError, match="too few distinct instances"):
        draw_in_split("fam", "test", 0, lambda rng: 0, key=lambda v: train_key, max_attempts=5)


def test_bad_split_and_index_are_config_errors():
    with pytest.raises(ConfigError, match="Unknown split 'dev'"):
        task_seed_sequence("fam", "dev", 0)
    with pytest.raises(ConfigError, match=">= 0"):
        task_seed_sequence("fam", "train", -1)


def test_content_digest_changes_with_content():
    assert content_digest("a", "b") == content_digest("a", "b")
    assert content_digest("a", "b") != content_digest("ab", "")
    assert len(content_digest("x", length=12)) == 12
