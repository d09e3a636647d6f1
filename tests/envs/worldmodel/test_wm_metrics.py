"""SSIM and PSNR agree with scikit-image; masks and clip scores behave."""

from __future__ import annotations

import numpy as np
import pytest

from rollgym.envs.worldmodel.metrics import masked_psnr, masked_ssim, psnr, score_clip, ssim
from rollgym.envs.worldmodel.render import Renderer
from rollgym.envs.worldmodel.scene import draw_scene
from rollgym.envs.worldmodel.sim import TabletopSim
from tests.conftest import require_module


def _test_images() -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(7)
    noise = rng.random((64, 64, 3))
    pairs = [(noise, np.clip(noise + rng.normal(0, 0.1, noise.shape), 0, 1))]
    sim = TabletopSim(draw_scene("train", 0)[0])
    a = Renderer(size=64).render(sim).astype(np.float64) / 255
    for _ in range(5):
        sim.step(np.array([1.0, 0.5, -1.0, 0.0]))
    b = Renderer(size=64).render(sim).astype(np.float64) / 255
    pairs += [(a[i], b[i]) for i in range(3)]
    smooth = np.linspace(0, 1, 80 * 72 * 3).reshape(80, 72, 3)
    pairs.append((smooth, np.clip(smooth * 0.9 + 0.05 * rng.random(smooth.shape), 0, 1)))
    return pairs


@pytest.mark.parametrize("gaussian", [True, False])
def test_ssim_matches_scikit_image(gaussian: bool) -> None:
    require_module("skimage")
    from skimage.metrics import structural_similarity

    for a, b in _test_images():
        if gaussian:
            ref = structural_similarity(a, b, data_range=1.0, channel_axis=-1, gaussian_weights=True,
                                        sigma=1.5, use_sample_covariance=False)
        else:
            ref = structural_similarity(a, b, data_range=1.0, channel_axis=-1)
        assert float(ssim(a, b, gaussian=gaussian)) == pytest.approx(ref, abs=1e-4)


def test_psnr_matches_scikit_image_and_batches() -> None:
    require_module("skimage")
    from skimage.metrics import peak_signal_noise_ratio

    pairs = _test_images()
    for a, b in pairs:
        assert float(psnr(a, b)) == pytest.approx(peak_signal_noise_ratio(a, b, data_range=1.0), abs=1e-4)
    a, b = pairs[1]
    batch_a, batch_b = np.stack([a, pairs[2][0]]), np.stack([b, pairs[2][1]])
    assert psnr(batch_a, batch_b).shape == (2,)
    assert ssim(batch_a, batch_b)[1] == pytest.approx(float(ssim(pairs[2][0], pairs[2][1])), abs=1e-12)


def test_identical_images_and_caps() -> None:
    img = np.random.default_rng(0).random((32, 32, 3))
    assert float(ssim(img, img)) == pytest.approx(1.0)
    assert np.isinf(psnr(img, img))
    assert float(psnr(img, img, cap=50.0)) == 50.0


def test_masked_metrics_look_only_inside_the_mask() -> None:
    a = np.zeros((32, 32, 3))
    b = a.copy()
    b[:8, :8] = 0.5
    mask = np.zeros((32, 32), bool)
    mask[16:, 16:] = True
    assert float(masked_psnr(a, b, mask)) == 50.0  # no error inside the mask
    assert float(masked_ssim(a, b, mask)) == pytest.approx(1.0)
    assert np.isnan(masked_psnr(a, b, np.zeros((32, 32), bool)))


def test_copy_last_has_zero_skill_and_a_perfect_prediction_positive() -> None:
    ep_frames = []
    sim = TabletopSim(draw_scene("train", 1)[0])
    r = Renderer(size=64)
    last = r.render(sim)
    for _ in range(4):
        sim.step(np.array([0.8, 0.0, -0.5, 0.0]))
        ep_frames.append(r.render(sim))
    truth = np.stack(ep_frames, axis=1).astype(np.float64) / 255
    base = last.astype(np.float64) / 255
    copy = score_clip(truth, np.repeat(base[:, None], 4, axis=1), base).skill()
    perfect = score_clip(truth, truth, base).skill()
    for key in ("ssim", "psnr", "ssim_masked", "psnr_masked"):
        assert np.allclose(copy[key], 0.0, atol=1e-9)
        assert (perfect[key] > 0).all()
