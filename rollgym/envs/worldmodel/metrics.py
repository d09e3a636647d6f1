"""Image fidelity metrics in vectorised numpy: SSIM, PSNR, motion masks, clip scores, LPIPS probe.

SSIM follows Wang et al. (2004) and agrees with ``skimage.metrics.structural_similarity``:
``gaussian=True`` (the default here) matches ``gaussian_weights=True, sigma=1.5,
use_sample_covariance=False``; ``gaussian=False`` matches skimage's default 7x7
uniform window with the sample covariance. Both compute the SSIM map only where
the window fits inside the image (skimage's cropped mean) and average over
channels. PSNR matches ``skimage.metrics.peak_signal_noise_ratio``; the scores
used as rewards cap it at :data:`PSNR_CAP` dB so that a perfect frame stays finite.

All functions take float images in ``[0, 1]`` shaped ``(..., H, W, C)`` and
return one value per leading index, so a whole clip (views x frames) is scored
in a few batched matrix products.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

K1, K2 = 0.01, 0.03
PSNR_CAP = 50.0
MOTION_THRESHOLD = 8.0 / 255.0
MOTION_DILATION = 2


@lru_cache(maxsize=32)
def _window_matrix(n: int, gaussian: bool, win_size: int, sigma: float) -> np.ndarray:
    """``(n - w + 1, n)`` matrix whose rows are the window weights at each valid position."""
    if gaussian:
        radius = int(3.5 * sigma + 0.5)  # scipy's gaussian_filter truncation, as skimage uses
        x = np.arange(-radius, radius + 1, dtype=np.float64)
        w = np.exp(-0.5 * (x / sigma) ** 2)
    else:
        w = np.ones(win_size)
    w /= w.sum()
    k = len(w)
    if n < k:
        raise ValueError(f"Images must be at least {k} pixels on each side for SSIM, got {n}.")
    m = np.zeros((n - k + 1, n))
    for i in range(n - k + 1):
        m[i, i : i + k] = w
    return m


def _filter(x: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Valid separable filtering of ``(..., C, H, W)`` stacks."""
    return rows @ x @ cols.T  # type: ignore[no-any-return]


def ssim_map(
    a: np.ndarray,
    b: np.ndarray,
    *,
    gaussian: bool = True,
    win_size: int = 7,
    sigma: float = 1.5,
    data_range: float = 1.0,
) -> np.ndarray:
    """The SSIM map of ``a`` against ``b``, ``(..., H', W')`` averaged over channels.

    ``H' = H - w + 1`` where ``w`` is the window (11 for the Gaussian, ``win_size`` otherwise).
    """
    # float32 inputs stay float32 (twice as fast; SSIM changes by ~1e-6), anything else is float64
    dtype = np.result_type(np.asarray(a).dtype, np.asarray(b).dtype, np.float32)
    if dtype != np.float32:
        dtype = np.dtype(np.float64)
    x = np.moveaxis(np.asarray(a, dtype=dtype), -1, -3)
    y = np.moveaxis(np.asarray(b, dtype=dtype), -1, -3)
    if x.shape != y.shape:
        raise ValueError(f"SSIM needs images of the same shape, got {np.shape(a)} and {np.shape(b)}.")
    h, w = x.shape[-2:]
    rows = _window_matrix(h, gaussian, win_size, sigma).astype(dtype)
    cols = _window_matrix(w, gaussian, win_size, sigma).astype(dtype)
    stack = np.stack([x, y, x * x, y * y, x * y])
    mx, my, mxx, myy, mxy = _filter(stack, rows, cols)
    n = rows.shape[1] - rows.shape[0] + 1
    norm = 1.0 if gaussian else n * n / (n * n - 1.0)
    vx, vy, cov = norm * (mxx - mx * mx), norm * (myy - my * my), norm * (mxy - mx * my)
    c1, c2 = (K1 * data_range) ** 2, (K2 * data_range) ** 2
    s = ((2 * mx * my + c1) * (2 * cov + c2)) / ((mx * mx + my * my + c1) * (vx + vy + c2))
    return s.mean(axis=-3, dtype=np.float64)  # type: ignore[no-any-return]


def ssim(a: np.ndarray, b: np.ndarray, **kwargs: Any) -> np.ndarray:
    """Mean SSIM per image of ``(..., H, W, C)`` stacks (see :func:`ssim_map` for options).

    Example:
        >>> img = np.random.default_rng(0).random((16, 16, 3))
        >>> float(ssim(img, img))
        1.0
    """
    return ssim_map(a, b, **kwargs).mean(axis=(-2, -1))  # type: ignore[no-any-return]


def psnr(a: np.ndarray, b: np.ndarray, data_range: float = 1.0, cap: float | None = None) -> np.ndarray:
    """PSNR in dB per image of ``(..., H, W, C)`` stacks; ``inf`` for identical images unless ``cap``.

    Example:
        >>> round(float(psnr(np.zeros((4, 4, 3)), np.full((4, 4, 3), 0.1))), 6)
        20.0
    """
    mse = np.mean((np.asarray(a, np.float64) - np.asarray(b, np.float64)) ** 2, axis=(-3, -2, -1))
    with np.errstate(divide="ignore"):
        value = 10 * np.log10(data_range**2 / mse)
    return value if cap is None else np.minimum(value, cap)  # type: ignore[no-any-return]


def dilate(mask: np.ndarray, radius: int) -> np.ndarray:
    """Binary dilation of ``(..., H, W)`` masks by a square of side ``2 * radius + 1``."""
    out = mask.copy()
    for _ in range(radius):
        grown = out.copy()
        grown[..., 1:, :] |= out[..., :-1, :]
        grown[..., :-1, :] |= out[..., 1:, :]
        grown[..., :, 1:] |= grown[..., :, :-1]
        grown[..., :, :-1] |= grown[..., :, 1:]
        out = grown
    return out


def motion_mask(truth: np.ndarray, prediction: np.ndarray, baseline: np.ndarray,
                threshold: float = MOTION_THRESHOLD, radius: int = MOTION_DILATION) -> np.ndarray:
    """Where the scene moved or the model said it did: ``(..., H, W)`` bool.

    A pixel is in the mask when the true frame or the prediction differs from the
    copy-last baseline by more than ``threshold`` in some channel, dilated by
    ``radius`` pixels. Both the prediction and the baseline are scored on this one
    mask, so a model is rewarded for motion it gets right and penalised for motion
    it invents.
    """
    moved = np.abs(truth - baseline).max(axis=-1) > threshold
    moved |= np.abs(prediction - baseline).max(axis=-1) > threshold
    return dilate(moved, radius)


def masked_psnr(a: np.ndarray, b: np.ndarray, mask: np.ndarray, cap: float = PSNR_CAP) -> np.ndarray:
    """PSNR per image over the pixels in ``mask`` (``(..., H, W)``); NaN where the mask is empty."""
    sq = ((np.asarray(a, np.float64) - np.asarray(b, np.float64)) ** 2).mean(axis=-1)
    count = mask.sum(axis=(-2, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        mse = (sq * mask).sum(axis=(-2, -1)) / count
        value = np.minimum(10 * np.log10(1.0 / mse), cap)
    return np.where(count > 0, value, np.nan)  # type: ignore[no-any-return]


def _masked_mean_of_map(smap: np.ndarray, mask: np.ndarray) -> np.ndarray:
    pad = (mask.shape[-1] - smap.shape[-1]) // 2
    m = mask[..., pad : pad + smap.shape[-2], pad : pad + smap.shape[-1]]
    count = m.sum(axis=(-2, -1))
    with np.errstate(invalid="ignore"):
        value = (smap * m).sum(axis=(-2, -1)) / count
    return np.where(count > 0, value, np.nan)  # type: ignore[no-any-return]


def masked_ssim(a: np.ndarray, b: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Mean of the Gaussian SSIM map over the pixels in ``mask``; NaN where the mask is empty.

    The map covers only the pixels where the 11x11 window fits, so the mask is cropped alike.
    """
    return _masked_mean_of_map(ssim_map(a, b), mask)


@dataclass
class ClipScores:
    """Per-view, per-frame curves of one clip: prediction, copy-last baseline, and masked variants.

    Every array is ``(views, frames)``. ``*_masked`` are NaN for frames with an empty mask.
    """

    ssim: np.ndarray
    psnr: np.ndarray
    ssim_masked: np.ndarray
    psnr_masked: np.ndarray
    baseline_ssim: np.ndarray
    baseline_psnr: np.ndarray
    baseline_ssim_masked: np.ndarray
    baseline_psnr_masked: np.ndarray
    mask_fraction: np.ndarray

    CURVES = ("ssim", "psnr", "ssim_masked", "psnr_masked", "baseline_ssim", "baseline_psnr",
              "baseline_ssim_masked", "baseline_psnr_masked", "mask_fraction")

    @classmethod
    def concatenate(cls, parts: list[ClipScores]) -> ClipScores:
        """Join the curves of consecutive chunks along the frame axis."""
        return cls(**{k: np.concatenate([getattr(p, k) for p in parts], axis=1) for k in cls.CURVES})

    def skill(self) -> dict[str, np.ndarray]:
        """Per-view mean improvement over copy-last: SSIM, PSNR (dB), and both inside the motion mask.

        Masked means skip frames with an empty mask (0 when every frame's mask is empty).
        """

        def gain(pred: np.ndarray, base: np.ndarray) -> np.ndarray:
            d = pred - base
            ok = ~np.isnan(d)
            mean = np.where(ok, d, 0.0).sum(axis=1) / np.maximum(ok.sum(axis=1), 1)
            return np.where(ok.any(axis=1), mean, 0.0)

        return {
            "ssim": (self.ssim - self.baseline_ssim).mean(axis=1),
            "psnr": (self.psnr - self.baseline_psnr).mean(axis=1),
            "ssim_masked": gain(self.ssim_masked, self.baseline_ssim_masked),
            "psnr_masked": gain(self.psnr_masked, self.baseline_psnr_masked),
        }

    def curves(self, views: tuple[str, ...]) -> dict[str, dict[str, list[float | None]]]:
        """JSON-ready ``{view: {curve: [per-frame values]}}`` (``None`` for NaN)."""
        out: dict[str, dict[str, list[float | None]]] = {}
        for i, view in enumerate(views):
            out[view] = {
                k: [None if np.isnan(x) else float(x) for x in getattr(self, k)[i]] for k in self.CURVES
            }
        return out


def score_clip(truth: np.ndarray, prediction: np.ndarray, baseline: np.ndarray) -> ClipScores:
    """Score a predicted clip against the truth and the copy-last baseline.

    Args:
        truth: ``(views, frames, H, W, 3)`` float in ``[0, 1]``.
        prediction: same shape.
        baseline: ``(views, H, W, 3)``: the frame that copy-last would repeat, per view.
    """
    base = np.broadcast_to(baseline[:, None], truth.shape)
    mask = motion_mask(truth, prediction, base)
    # one batched SSIM pass for the prediction and the baseline
    maps = ssim_map(np.stack([prediction, base]), np.broadcast_to(truth, (2, *truth.shape)))
    return ClipScores(
        ssim=maps[0].mean(axis=(-2, -1)),
        psnr=psnr(prediction, truth, cap=PSNR_CAP),
        ssim_masked=_masked_mean_of_map(maps[0], mask),
        psnr_masked=masked_psnr(prediction, truth, mask),
        baseline_ssim=maps[1].mean(axis=(-2, -1)),
        baseline_psnr=psnr(base, truth, cap=PSNR_CAP),
        baseline_ssim_masked=_masked_mean_of_map(maps[1], mask),
        baseline_psnr_masked=masked_psnr(base, truth, mask),
        mask_fraction=mask.mean(axis=(-2, -1)),
    )


# -- LPIPS: only with local weights -------------------------------------------------------------
LPIPS_BACKBONE_FILE = "alexnet-owt-7be5be79.pth"


def lpips_status() -> tuple[bool, str]:
    """Whether LPIPS can run offline here, and why not.

    LPIPS needs the ``lpips`` package (which ships only its small linear heads) and
    the AlexNet backbone weights in torch's hub cache. rollgym never downloads
    them: when either is missing, LPIPS is reported as missing, not replaced.
    """
    if importlib.util.find_spec("lpips") is None or importlib.util.find_spec("torchvision") is None:
        return False, "LPIPS needs the lpips and torchvision packages, which are not installed"
    hub = Path(os.environ.get("TORCH_HOME", Path.home() / ".cache" / "torch")) / "hub" / "checkpoints"
    if not (hub / LPIPS_BACKBONE_FILE).exists():
        return False, f"LPIPS backbone weights {LPIPS_BACKBONE_FILE} not found in {hub} (never downloaded)"
    return True, "available"


class LpipsScorer:
    """LPIPS (AlexNet) on local weights only; construct it only when :func:`lpips_status` says available."""

    def __init__(self) -> None:
        ok, why = lpips_status()
        if not ok:
            from rollgym.core.errors import MissingDependencyError

            raise MissingDependencyError(f"LPIPS is unavailable: {why}; use lpips='auto' or False.")
        import lpips
        import torch

        self._torch = torch
        self._model = lpips.LPIPS(net="alex", verbose=False).eval()

    def __call__(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """LPIPS distance per image of ``(..., H, W, 3)`` stacks in ``[0, 1]``."""
        lead = a.shape[:-3]
        torch = self._torch
        x = torch.from_numpy(np.ascontiguousarray(a.reshape(-1, *a.shape[-3:]))).permute(0, 3, 1, 2).float() * 2 - 1
        y = torch.from_numpy(np.ascontiguousarray(b.reshape(-1, *b.shape[-3:]))).permute(0, 3, 1, 2).float() * 2 - 1
        with torch.no_grad():
            d = self._model(x, y).reshape(-1).numpy()
        return d.reshape(lead).astype(np.float64)  # type: ignore[no-any-return]
