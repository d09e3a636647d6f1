import numpy as np
import pytest
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array

from rollgym.core import TextSpace


def test_any_unicode_string_within_length_is_contained():
    space = TextSpace(50)
    assert space.contains("Réponds: 3 × 8 = 24 ✓\n<answer>x</answer>")
    assert space.contains("")
    assert not space.contains("a" * 51)
    assert not space.contains(b"bytes")
    assert not space.contains(42)


def test_min_length_is_enforced():
    space = TextSpace(10, min_length=2)
    assert not space.contains("a")
    assert space.contains("ab")


def test_samples_are_members_and_seedable():
    a, b = TextSpace(30, seed=7), TextSpace(30, seed=7)
    samples = [a.sample() for _ in range(20)]
    assert samples == [b.sample() for _ in range(20)]
    assert all(a.contains(s) for s in samples)


def test_equality_and_hash():
    assert TextSpace(10) == TextSpace(10)
    assert TextSpace(10) != TextSpace(11)
    assert len({TextSpace(10), TextSpace(10)}) == 1


def test_vector_batches_are_tuples_of_strings():
    space = TextSpace(20)
    batched = batch_space(space, 3)
    out = create_empty_array(space, 3)
    result = concatenate(space, ["a", "bé", "c"], out)
    assert tuple(result) == ("a", "bé", "c")
    assert batched.contains(("x", "y", "z"))
    assert isinstance(np.asarray(result, dtype=object), np.ndarray)


def test_shared_sample_tables_behave_like_gymnasium_text_with_the_same_charset():
    """TextSpace builds Text's charset tables once and shares them; sampling must not notice."""
    from gymnasium.spaces import Text

    from rollgym.core.spaces import SAMPLE_CHARSET

    ours, theirs = TextSpace(40, seed=3), Text(40, min_length=0, charset=SAMPLE_CHARSET, seed=3)
    assert ours.character_set == theirs.character_set == frozenset(SAMPLE_CHARSET)
    assert ours.characters == theirs.characters
    assert [ours.sample() for _ in range(50)] == [theirs.sample() for _ in range(50)]
    assert [ours.character_index(c) for c in "aZ9 é"] == [theirs.character_index(c) for c in "aZ9 é"]
    with pytest.raises(ValueError):  # Text's own length checks still run
        TextSpace(3, min_length=5)
