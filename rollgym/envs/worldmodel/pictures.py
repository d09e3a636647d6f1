"""Pictures of world-model rollouts: a pure numpy + zlib PNG writer and side-by-side strips.

:func:`comparison_strip` lays out, for every view, three rows: ground truth,
prediction and the absolute error (amplified, in a heat colour), one column per
frame. :func:`write_png` saves any ``(H, W, 3)`` uint8 array without Pillow.
"""

from __future__ import annotations

import os
import struct
import zlib
from pathlib import Path

import numpy as np

from rollgym.core.io import write_bytes_atomic


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def encode_png(image: np.ndarray) -> bytes:
    """PNG bytes of an ``(H, W, 3)`` or ``(H, W)`` uint8 image.

    Example:
        >>> encode_png(np.zeros((2, 2, 3), np.uint8))[:8]
        b'\\x89PNG\\r\\n\\x1a\\n'
    """
    img = np.asarray(image)
    if img.dtype != np.uint8:
        raise ValueError(f"PNG images are uint8; got {img.dtype}. Scale to 0..255 and cast first.")
    if img.ndim == 2:
        img = np.repeat(img[..., None], 3, axis=2)
    if img.ndim != 3 or img.shape[2] != 3:
        raise ValueError(f"Expected an (H, W, 3) image, got shape {img.shape}.")
    h, w, _ = img.shape
    rows = np.concatenate([np.zeros((h, 1), np.uint8), img.reshape(h, w * 3)], axis=1)  # filter 0 per row
    header = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(rows.tobytes(), 9))
        + _chunk(b"IEND", b"")
    )


def write_png(path: str | os.PathLike[str], image: np.ndarray) -> Path:
    """Write ``image`` to ``path`` as PNG, atomically (temp file, then rename)."""
    return write_bytes_atomic(path, encode_png(image))


def error_map(truth: np.ndarray, prediction: np.ndarray, gain: float = 4.0) -> np.ndarray:
    """A heat-coloured uint8 image of ``|truth - prediction|`` (mean over channels, times ``gain``)."""
    err = np.abs(truth.astype(np.float32) - prediction.astype(np.float32)).mean(axis=-1) / 255.0
    e = np.clip(err * gain, 0.0, 1.0)
    heat = np.stack([np.clip(3 * e, 0, 1), np.clip(3 * e - 1, 0, 1), np.clip(3 * e - 2, 0, 1)], axis=-1)
    return (heat * 255 + 0.5).astype(np.uint8)  # type: ignore[no-any-return]


def comparison_strip(truth: np.ndarray, prediction: np.ndarray, gap: int = 2) -> np.ndarray:
    """Side-by-side grid of ground truth, prediction and error, per view and frame.

    Args:
        truth: ``(views, frames, H, W, 3)`` uint8.
        prediction: the same shape, uint8 or float in ``[0, 1]``.
        gap: white pixels between tiles.

    Returns:
        ``(3 * views * (H + gap), frames * (W + gap), 3)`` uint8.
    """
    truth = np.asarray(truth)
    pred = np.asarray(prediction)
    if pred.dtype != np.uint8:
        pred = (np.clip(np.nan_to_num(pred.astype(np.float32)), 0.0, 1.0) * 255 + 0.5).astype(np.uint8)
    if truth.shape != pred.shape or truth.ndim != 5:
        raise ValueError(
            f"truth and prediction must both be (views, frames, H, W, 3); got {truth.shape} and {pred.shape}."
        )
    v, f, h, w, _ = truth.shape
    out = np.full((3 * v * (h + gap), f * (w + gap), 3), 255, dtype=np.uint8)
    for i in range(v):
        for j in range(f):
            tiles = (truth[i, j], pred[i, j], error_map(truth[i, j], pred[i, j]))
            for k, tile in enumerate(tiles):
                r = (3 * i + k) * (h + gap)
                c = j * (w + gap)
                out[r : r + h, c : c + w] = tile
    return out


def write_strip(path: str | os.PathLike[str], truth: np.ndarray, prediction: np.ndarray) -> Path:
    """Write :func:`comparison_strip` of ``truth`` and ``prediction`` to a PNG file."""
    return write_png(path, comparison_strip(truth, prediction))
