"""Train the reference flow-warping world model on simulator data, then fine-tune it with the env's reward.

Two stages, one command each (torch is required; CPU is enough)::

    python -m rollgym.envs.worldmodel.train supervised --out sup.pt
    python -m rollgym.envs.worldmodel.train finetune --init sup.pt --out ft.pt

``supervised``: one-step teacher-forced prediction (the next frame from the two
true frames before it), L1 loss with extra weight where the scene moves.

``finetune_l1_on_rollouts`` is its control: the same rollouts trained with the
supervised L1 loss instead of the reward (``docs/experiments.md`` compares them).

``finetune``: reward-driven. The model rolls out on its own predictions for
``unroll`` frames, exactly as ``WorldModel-v0`` plays in autoregressive mode,
and ascends the env's own reward (the view-averaged SSIM and PSNR skill over
copy-last, on the full frame and inside the motion mask), computed in torch by
:func:`clip_reward_torch`, which a test checks against the numpy env reward.

The shipped weights (``flowwarp_supervised.pt`` and ``flowwarp_finetuned.pt``
next to this file) were produced with these defaults (120 training episodes of
24 frames at 64x64, width 24, 600 supervised steps of batch 8, 200 fine-tuning
steps of batch 4 with 12-frame rollouts, one thread):
``python -m rollgym.envs.worldmodel.train all``, about 3 CPU minutes. Rerunning
it with torch 2.13.0+cpu reproduces both files' tensors bit for bit.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from rollgym.core.io import atomic_path
from rollgym.envs.worldmodel.dataset import simulate_dataset
from rollgym.envs.worldmodel.metrics import MOTION_DILATION, MOTION_THRESHOLD, PSNR_CAP

HERE = Path(__file__).resolve().parent
_VIEW_IDS = {"left": 0, "right": 1, "wrist": 2}


def _torch() -> Any:
    try:
        import torch
    except ImportError as exc:
        from rollgym.core.errors import MissingDependencyError

        raise MissingDependencyError("Training needs torch; pip install 'rollgym[worldmodel]'.") from exc
    return torch


def _gaussian_window(torch: Any) -> Any:
    x = torch.arange(-5, 6, dtype=torch.float32)
    w = torch.exp(-0.5 * (x / 1.5) ** 2)
    w = w / w.sum()
    return (w[:, None] * w[None, :])[None, None]


def clip_reward_torch(pred: Any, truth: Any, baseline: Any) -> Any:
    """The env's ``reward_region="both"`` reward per clip, differentiable in ``pred``.

    Args:
        pred, truth: ``(B, K, 3, H, W)`` in ``[0, 1]``.
        baseline: ``(B, 3, H, W)``: copy-last's frame.

    Returns:
        ``(B,)``: ``0.25 * (SSIM skill + masked SSIM skill + (PSNR skill + masked PSNR skill) / 10)``,
        each averaged over the K frames, as :class:`~rollgym.envs.worldmodel.env.WorldModelEnv` computes
        for one view.
    """
    torch = _torch()
    import torch.nn.functional as F

    b, k, c, h, w = pred.shape
    base = baseline[:, None].expand_as(truth)
    with torch.no_grad():
        moved = (truth - base).abs().amax(dim=2) > MOTION_THRESHOLD
        moved = moved | ((pred - base).abs().amax(dim=2) > MOTION_THRESHOLD)
        r = MOTION_DILATION
        mask = F.max_pool2d(moved.float().reshape(b * k, 1, h, w), 2 * r + 1, stride=1, padding=r).reshape(b, k, h, w)
    win = _gaussian_window(torch).to(pred.dtype).repeat(c, 1, 1, 1)

    def ssim_map(x: Any, y: Any) -> Any:
        x, y = x.reshape(b * k, c, h, w), y.reshape(b * k, c, h, w)
        stats = [F.conv2d(t, win, groups=c) for t in (x, y, x * x, y * y, x * y)]
        mx, my, mxx, myy, mxy = stats
        vx, vy, cov = mxx - mx * mx, myy - my * my, mxy - mx * my
        c1, c2 = 0.01**2, 0.03**2
        s = ((2 * mx * my + c1) * (2 * cov + c2)) / ((mx * mx + my * my + c1) * (vx + vy + c2))
        return s.mean(dim=1).reshape(b, k, h - 10, w - 10)

    def psnr(err: Any, m: Any | None) -> Any:
        sq = err.mean(dim=2)
        if m is None:
            mse = sq.mean(dim=(-2, -1))
        else:
            mse = (sq * m).sum(dim=(-2, -1)) / m.sum(dim=(-2, -1)).clamp(min=1)
        return (-10 * torch.log10(mse.clamp(min=10 ** (-PSNR_CAP / 10))))

    m_crop = mask[..., 5:-5, 5:-5]
    has = (m_crop.sum(dim=(-2, -1)) > 0).float()
    has_full = (mask.sum(dim=(-2, -1)) > 0).float()

    def masked_mean(v: Any, present: Any) -> Any:
        return (v * present).sum(dim=1) / present.sum(dim=1).clamp(min=1)

    sp, sb = ssim_map(pred, truth), ssim_map(base, truth)
    ssim_skill = (sp.mean(dim=(-2, -1)) - sb.mean(dim=(-2, -1))).mean(dim=1)
    msk = (sp * m_crop).sum(dim=(-2, -1)) / m_crop.sum(dim=(-2, -1)).clamp(min=1) \
        - (sb * m_crop).sum(dim=(-2, -1)) / m_crop.sum(dim=(-2, -1)).clamp(min=1)
    ssim_skill_masked = masked_mean(msk, has)
    ep, eb = (pred - truth) ** 2, (base - truth) ** 2
    psnr_skill = (psnr(ep, None) - psnr(eb, None)).mean(dim=1)
    psnr_skill_masked = masked_mean(psnr(ep, mask) - psnr(eb, mask), has_full)
    return 0.25 * (ssim_skill + ssim_skill_masked + (psnr_skill + psnr_skill_masked) / 10.0)


def _tensors(data: dict[str, np.ndarray]) -> dict[str, Any]:
    torch = _torch()
    views = [str(v) for v in data["views"]]
    return {
        "frames": torch.from_numpy(data["frames"]),  # uint8 (N, V, T, H, W, 3)
        "actions": torch.from_numpy(data["actions"]),
        "poses": torch.from_numpy(data["poses"]),
        "view_ids": torch.tensor([_VIEW_IDS[v] for v in views]),
    }


def _clips(t: dict[str, Any], rng: np.random.Generator, batch: int, context: int, length: int) -> tuple[Any, ...]:
    """Random clips: context frames, future frames, actions, poses, view ids."""
    torch = _torch()
    n, v, total = t["frames"].shape[:3]
    ep = torch.from_numpy(rng.integers(0, n, batch))
    vi = torch.from_numpy(rng.integers(0, v, batch))
    start = rng.integers(context - 1, total - length, batch)
    idx = torch.from_numpy(start[:, None] + np.arange(-(context - 1), length + 1)[None])
    frames = t["frames"][ep[:, None], vi[:, None], idx].permute(0, 1, 4, 2, 3).float() / 255.0
    actions = t["actions"][ep[:, None], idx[:, context - 1 : -1]]
    poses = t["poses"][ep[:, None], idx[:, context - 1 :]]
    return frames[:, :context], frames[:, context:], actions, poses, t["view_ids"][vi]


def save_model(net: Any, path: Path) -> Path:
    torch = _torch()
    state = {k: v.detach().clone() for k, v in net.state_dict().items()}
    state["_width"] = torch.tensor(net.width)
    with atomic_path(path) as tmp:
        torch.save(state, tmp)
    return path


def load_net(path: Path) -> Any:
    """Load a network saved by this script (``weights_only=True``)."""
    torch = _torch()
    from rollgym.envs.worldmodel.network import FlowWarpNet

    state = torch.load(path, map_location="cpu", weights_only=True)
    width = int(state.pop("_width").item()) if "_width" in state else 32
    net = FlowWarpNet(width)
    net.load_state_dict(state)
    return net


def train_supervised(data: dict[str, np.ndarray], steps: int, batch: int = 16, width: int = 32, lr: float = 2e-3,
                     seed: int = 0, log_every: int = 50) -> tuple[Any, list[float]]:
    """One-step teacher-forced training; returns the network and the loss curve."""
    torch = _torch()
    from rollgym.envs.worldmodel.network import FlowWarpNet

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    t = _tensors(data)
    net = FlowWarpNet(width)
    # the few ego-motion gains need far larger steps than the convolution weights
    others = [p for name, p in net.named_parameters() if name != "ego"]
    opt = torch.optim.Adam([{"params": others}, {"params": [net.ego], "lr": 25 * lr}], lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, max(steps, 1))
    losses = []
    for step in range(steps):
        ctx, fut, actions, poses, vids = _clips(t, rng, batch, 2, 1)
        pred = net(ctx[:, 0], ctx[:, 1], actions[:, 0], poses[:, 0], poses[:, 1], vids)
        target = fut[:, 0]
        moving = ((target - ctx[:, 1]).abs().amax(dim=1, keepdim=True) > MOTION_THRESHOLD).float()
        moving = torch.nn.functional.max_pool2d(moving, 5, stride=1, padding=2)
        loss = ((pred - target).abs() * (1 + 8 * moving)).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
        if log_every and step % log_every == 0:
            print(f"supervised step {step:5d}  loss {np.mean(losses[-log_every:]):.4f}", flush=True)
    return net, losses


def _finetune_on_rollouts(net: Any, data: dict[str, np.ndarray], steps: int, batch: int, unroll: int, lr: float,
                          seed: int, log_every: int, objective: Callable[[Any, Any, Any], tuple[Any, Any]],
                          log: str) -> tuple[Any, list[float]]:
    """Fine-tuning on the model's own autoregressive rollouts: ``objective(pred, fut, ctx)`` gives the loss to
    minimise and the figure to record; ``log`` formats a log line from the step and the recent mean."""
    torch = _torch()
    from rollgym.envs.worldmodel.network import rollout

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    t = _tensors(data)
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    curve = []
    for step in range(steps):
        ctx, fut, actions, poses, vids = _clips(t, rng, batch, 2, unroll)
        pred = rollout(net, ctx, actions, poses, vids, detach_every=4)
        loss, figure = objective(pred, fut, ctx)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
        curve.append(float(figure.detach()))
        if log_every and step % log_every == 0:
            print(log.format(step=step, mean=np.mean(curve[-log_every:])), flush=True)
    return net, curve


def finetune_with_reward(net: Any, data: dict[str, np.ndarray], steps: int, batch: int = 8, unroll: int = 8,
                         lr: float = 3e-4, seed: int = 1, log_every: int = 25) -> tuple[Any, list[float]]:
    """Reward-driven fine-tuning on the model's own autoregressive rollouts; returns the reward curve."""

    def objective(pred: Any, fut: Any, ctx: Any) -> tuple[Any, Any]:
        reward = clip_reward_torch(pred, fut, ctx[:, -1]).mean()
        return -reward, reward

    return _finetune_on_rollouts(net, data, steps, batch, unroll, lr, seed, log_every, objective,
                                 "finetune step {step:5d}  reward {mean:+.4f}")


def finetune_l1_on_rollouts(net: Any, data: dict[str, np.ndarray], steps: int, batch: int = 8, unroll: int = 8,
                            lr: float = 3e-4, seed: int = 1, log_every: int = 25) -> tuple[Any, list[float]]:
    """The control for :func:`finetune_with_reward`: the same rollouts, the supervised stage's L1 loss, no reward.

    Everything is as in the reward fine-tune (clips, unroll, gradient cuts, optimiser, clipping); only
    the objective differs: the motion-weighted L1 of :func:`train_supervised`, on every frame the model
    predicted from its own outputs. A gain that this control also gets comes from training on the model's
    own rollouts, not from the reward. Returns the network and the loss curve.
    """
    torch = _torch()

    def objective(pred: Any, fut: Any, ctx: Any) -> tuple[Any, Any]:
        previous = torch.cat([ctx[:, -1:], fut[:, :-1]], dim=1)
        moving = ((fut - previous).abs().amax(dim=2) > MOTION_THRESHOLD).float()
        b, k, h, w = moving.shape
        moving = torch.nn.functional.max_pool2d(moving.reshape(b * k, 1, h, w), 5, stride=1, padding=2).reshape(
            b, k, 1, h, w)
        loss = ((pred - fut).abs() * (1 + 8 * moving)).mean()
        return loss, loss

    return _finetune_on_rollouts(net, data, steps, batch, unroll, lr, seed, log_every, objective,
                                 "l1-on-rollouts step {step:5d}  loss {mean:.4f}")


def main(argv: list[str] | None = None) -> None:
    """Command-line entry point; see the module docstring."""
    parser = argparse.ArgumentParser(description="Train the reference world model of WorldModel-v0.")
    parser.add_argument("stage", choices=["supervised", "finetune", "all"])
    parser.add_argument("--episodes", type=int, default=120)
    parser.add_argument("--frames", type=int, default=24)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--finetune-steps", type=int, default=200)
    parser.add_argument("--width", type=int, default=24)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--finetune-batch", type=int, default=4)
    parser.add_argument("--unroll", type=int, default=12)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--init", type=Path, default=HERE / "flowwarp_supervised.pt")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--out-finetuned", type=Path, default=HERE / "flowwarp_finetuned.pt")
    args = parser.parse_args(argv)
    torch = _torch()
    torch.set_num_threads(args.threads)
    began = time.perf_counter()
    data = simulate_dataset(args.episodes, args.frames, split="train", size=args.size)
    print(f"simulated {args.episodes} episodes in {time.perf_counter() - began:.1f} s", flush=True)
    if args.stage in ("supervised", "all"):
        net, _ = train_supervised(data, args.steps, batch=args.batch, width=args.width)
        out = args.out or HERE / "flowwarp_supervised.pt"
        print(f"wrote {save_model(net, out)}")
    if args.stage in ("finetune", "all"):
        init = (args.out or HERE / "flowwarp_supervised.pt") if args.stage == "all" else args.init
        net = load_net(init)
        net, _ = finetune_with_reward(net, data, args.finetune_steps, batch=args.finetune_batch, unroll=args.unroll)
        out = args.out_finetuned if args.stage == "all" or args.out is None else args.out
        print(f"wrote {save_model(net, out)}")
    print(f"done in {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    main()
