"""The two tiny CNNs behind models/squares.onnx and models/pockets.onnx (see docs/classifier.md)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

# tracker::SquareClass order.
CLASSES = ["empty", "P", "N", "B", "R", "Q", "K", "p", "n", "b", "r", "q", "k"]
ROLES = ["P", "N", "B", "R", "Q"]
MAX_COUNT = 8


def conv_bn(cin, cout, stride=1, groups=1, k=3):
    return nn.Sequential(
        nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU(inplace=True),
    )


def dwsep(cin, cout, stride=1):
    """Depthwise 3x3 + pointwise: most of a full 3x3's reach at a fraction of its cost."""
    return nn.Sequential(conv_bn(cin, cin, stride, groups=cin), conv_bn(cin, cout, k=1))


class SquareNet(nn.Module):
    """64x48 crop -> 64-d L2-normalised embedding and 13 cosine logits.

    The logits are scale * cos(embedding, class weight), so the run-time classifier can swap the
    class weights for prototypes of the table's own piece set without changing the geometry.
    """

    def __init__(self, width=16, emb=64, scale=16.0):
        super().__init__()
        w = width
        self.features = nn.Sequential(
            conv_bn(3, w, 2),  # 32x24
            dwsep(w, 2 * w, 2),  # 16x12
            dwsep(2 * w, 3 * w),  # 16x12
            dwsep(3 * w, 4 * w, 2),  # 8x6
            dwsep(4 * w, 6 * w),  # 8x6
            dwsep(6 * w, 6 * w, 2),  # 4x3
        )
        self.embed = nn.Linear(6 * w * 12, emb)
        self.weight = nn.Parameter(torch.randn(len(CLASSES), emb) * 0.1)
        self.scale = scale

    def forward(self, x):
        z = self.features(x).flatten(1)
        e = F.normalize(self.embed(z), dim=1)
        logits = self.scale * e @ F.normalize(self.weight, dim=1).t()
        return logits, e


class PocketNet(nn.Module):
    """128x96 pocket crop -> for P,N,B,R,Q logits over the count 0..8."""

    def __init__(self, width=16):
        super().__init__()
        w = width
        self.features = nn.Sequential(
            conv_bn(3, w, 2),  # 64x48
            dwsep(w, 2 * w, 2),  # 32x24
            dwsep(2 * w, 2 * w),
            dwsep(2 * w, 4 * w, 2),  # 16x12
            dwsep(4 * w, 4 * w),
            dwsep(4 * w, 8 * w, 2),  # 8x6
            dwsep(8 * w, 8 * w),
            conv_bn(8 * w, 32, k=1),  # a narrow map keeps the dense head (and the file) small
        )
        self.head = nn.Sequential(
            nn.Flatten(), nn.Linear(32 * 48, 128), nn.ReLU(inplace=True),
            nn.Linear(128, len(ROLES) * (MAX_COUNT + 1)),
        )

    def forward(self, x):
        return self.head(self.features(x)).view(-1, len(ROLES), MAX_COUNT + 1)


def macs(model, shape):
    """Multiply-adds per sample of conv and linear layers (for the model card)."""
    total = 0

    def hook(m, i, o):
        nonlocal total
        if isinstance(m, nn.Conv2d):
            total += o[0].numel() * (m.in_channels // m.groups) * m.kernel_size[0] * m.kernel_size[1]
        elif isinstance(m, nn.Linear):
            total += m.in_features * m.out_features

    hs = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, (nn.Conv2d, nn.Linear))]
    model.eval()
    with torch.no_grad():
        model(torch.zeros(1, *shape))
    for h in hs:
        h.remove()
    return total
