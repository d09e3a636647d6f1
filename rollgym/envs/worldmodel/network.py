"""The small action-conditioned flow-warping CNN (imports torch; load it lazily).

One network serves every view. For each next frame it reads the last two frames
of a view, the robot action, the effector pose before and after it, a one-hot
view code and pixel coordinates, all as image planes. At half resolution it
predicts a flow field, a blend mask and a colour image; the next frame is the
last frame warped by the (upsampled) flow, blended with the colour image. With
zero flow and a saturated mask it is copy-last, which is where training starts.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

NUM_VIEWS = 3
ACTION_DIM = 4
IN_CHANNELS = 6 + ACTION_DIM + 2 * ACTION_DIM + NUM_VIEWS + 2


class FlowWarpNet(nn.Module):
    """Predicts one next frame per sample: ``forward(prev, last, action, pose0, pose1, view) -> frame``.

    Shapes: ``prev``/``last`` ``(B, 3, H, W)`` in ``[0, 1]``; ``action``, ``pose0``, ``pose1``
    ``(B, 4)``; ``view`` ``(B,)`` long. Returns ``(B, 3, H, W)`` in ``[0, 1]``.
    """

    def __init__(self, width: int = 32) -> None:
        super().__init__()
        w = width
        self.width = width
        self.enc1 = nn.Conv2d(IN_CHANNELS, w, 4, stride=2, padding=1)
        self.enc2 = nn.Conv2d(w, w + w // 2, 3, stride=2, padding=1)
        self.mid1 = nn.Conv2d(w + w // 2, w + w // 2, 3, padding=1)
        self.mid2 = nn.Conv2d(w + w // 2, w + w // 2, 3, padding=1)
        self.dec = nn.Conv2d(w + w // 2 + w, w, 3, padding=1)
        self.head = nn.Conv2d(w, 6, 3, padding=1)
        # per view: image flow per unit of effector motion (x, y) and zoom per unit of height change,
        # divided by the camera's height above the table; learns the wrist camera's ego-motion
        self.ego = nn.Parameter(torch.zeros(NUM_VIEWS, 3))
        nn.init.zeros_(self.head.weight)
        bias = self.head.bias
        assert bias is not None
        with torch.no_grad():
            bias.zero_()
            bias[2] = 6.0  # start by keeping the warped last frame

    def forward(self, prev: torch.Tensor, last: torch.Tensor, action: torch.Tensor, pose0: torch.Tensor,
                pose1: torch.Tensor, view: torch.Tensor) -> torch.Tensor:
        b, _, h, w = last.shape
        vec = torch.cat([action, pose0, pose1, F.one_hot(view, NUM_VIEWS).to(last.dtype)], dim=1)
        ys = torch.linspace(-1, 1, h, dtype=last.dtype, device=last.device)
        xs = torch.linspace(-1, 1, w, dtype=last.dtype, device=last.device)
        gy, gx = torch.meshgrid(ys, xs, indexing="ij")
        coords = torch.stack([gx, gy]).expand(b, 2, h, w)
        x = torch.cat([prev, last, vec[:, :, None, None].expand(b, vec.shape[1], h, w), coords], dim=1)
        e1 = F.relu(self.enc1(x))
        e2 = F.relu(self.enc2(e1))
        m = F.relu(self.mid1(e2))
        m = F.relu(self.mid2(m)) + e2
        u = F.interpolate(m, size=e1.shape[-2:], mode="bilinear", align_corners=False)
        d = F.relu(self.dec(torch.cat([u, e1], dim=1)))
        out = F.interpolate(self.head(d), size=(h, w), mode="bilinear", align_corners=False)
        flow = out[:, 0:2].permute(0, 2, 3, 1) * 0.25
        ego = self.ego[view]  # (B, 3)
        motion = (pose1 - pose0)[:, 0:3] / (pose0[:, 2:3] + 0.3)
        shift = torch.stack([ego[:, 0] * motion[:, 0], ego[:, 1] * motion[:, 1]], dim=-1)
        zoom = ego[:, 2] * motion[:, 2]
        flow = flow + shift[:, None, None, :] + zoom[:, None, None, None] * torch.stack([gx, gy], dim=-1)
        grid = torch.stack([gx, gy], dim=-1).expand(b, h, w, 2) + flow
        warped = F.grid_sample(last, grid, mode="bilinear", padding_mode="border", align_corners=True)
        keep = torch.sigmoid(out[:, 2:3])
        colour = torch.sigmoid(out[:, 3:6])
        return keep * warped + (1 - keep) * colour


def rollout(net: FlowWarpNet, context: torch.Tensor, actions: torch.Tensor, poses: torch.Tensor,
            view_ids: torch.Tensor, detach_every: int = 0) -> torch.Tensor:
    """Predict ``K`` frames autoregressively for a batch of views.

    Args:
        context: ``(B, C, 3, H, W)`` context frames (``C >= 1``), in ``[0, 1]``.
        actions: ``(B, K, 4)``.
        poses: ``(B, K + 1, 4)``: the pose at the last context frame, then after each action.
        view_ids: ``(B,)`` long.
        detach_every: cut gradients through the fed-back frames every this many steps (0: never).

    Returns:
        ``(B, K, 3, H, W)``.
    """
    prev = context[:, -2] if context.shape[1] > 1 else context[:, -1]
    last = context[:, -1]
    frames = []
    for k in range(actions.shape[1]):
        nxt = net(prev, last, actions[:, k], poses[:, k], poses[:, k + 1], view_ids)
        frames.append(nxt)
        prev, last = last, nxt
        if detach_every and (k + 1) % detach_every == 0:
            prev, last = prev.detach(), last.detach()
    return torch.stack(frames, dim=1)
