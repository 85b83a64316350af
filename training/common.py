"""Data loading, augmentation and ONNX export shared by the square and pocket trainers."""

import csv
import math
import os
import time

import numpy as np
import torch
import torch.nn.functional as F


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def load_patches(dirs, kind, h, w):
    """Concatenates `<dir>/<kind>.u8` (raw RGB patches) and their CSV rows over `dirs`.

    Reads straight into one preallocated array (no second copy: the square data of a few
    thousand frames is several GB)."""
    size = h * w * 3
    parts, rows = [], []
    for d in dirs:
        r = read_csv(os.path.join(d, f"{kind}.csv"))
        # A generator still running: keep the complete patches with a CSV row only.
        n = min(len(r), os.path.getsize(os.path.join(d, f"{kind}.u8")) // size)
        r = r[:n]
        for row in r:
            row["dir"] = d
        parts.append((d, n))
        rows.extend(r)
    out = np.empty((len(rows), h, w, 3), dtype=np.uint8)
    at = 0
    for d, n in parts:
        with open(os.path.join(d, f"{kind}.u8"), "rb") as f:
            f.readinto(memoryview(out[at:at + n]).cast("B"))
        at += n
    return out, rows


def to_tensor(batch_u8):
    """uint8 NHWC -> float32 NCHW in 0..1 (the models' input convention: byte / 255)."""
    return torch.from_numpy(batch_u8).permute(0, 3, 1, 2).float().div_(255.0)


def augment(x, strength=1.0, flip=True, max_shift=0.06):
    """Set-level photometric and small geometric variation, batch-wise on CPU tensors.

    Keeps the light/dark order of colours (white pieces stay lighter than black ones): gains,
    gamma, contrast, desaturation, channel permutation, noise and blur, a small shift/scale.
    """
    n = x.shape[0]
    dev = x.device
    # Geometry: small scale and shift, optional mirror (no piece is chiral enough to matter).
    s = 1.0 + (torch.rand(n, device=dev) - 0.5) * 0.16 * strength
    tx = (torch.rand(n, device=dev) - 0.5) * 2 * max_shift * strength
    ty = (torch.rand(n, device=dev) - 0.5) * 2 * max_shift * strength
    sx = s * torch.where(torch.rand(n, device=dev) < 0.5, -1.0, 1.0) if flip else s
    theta = torch.zeros(n, 2, 3, device=dev)
    theta[:, 0, 0] = sx
    theta[:, 1, 1] = s
    theta[:, 0, 2] = tx
    theta[:, 1, 2] = ty
    grid = F.affine_grid(theta, x.shape, align_corners=False)
    x = F.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=False)
    # Colour: channel permutation for a third, desaturation for a fifth.
    perm = torch.rand(n, device=dev) < 0.33 * strength
    if perm.any():
        idx = torch.stack([torch.randperm(3) for _ in range(int(perm.sum()))])
        xp = x[perm]
        x[perm] = torch.gather(xp, 1, idx[:, :, None, None].expand_as(xp))
    grey = torch.rand(n, device=dev) < 0.2 * strength
    if grey.any():
        g = x[grey].mean(1, keepdim=True)
        x[grey] = g.expand(-1, 3, -1, -1).clone()
    gain = 1.0 + (torch.rand(n, 3, 1, 1, device=dev) - 0.5) * 0.5 * strength
    bright = 1.0 + (torch.rand(n, 1, 1, 1, device=dev) - 0.5) * 0.8 * strength
    x = x * gain * bright
    mean = x.mean((1, 2, 3), keepdim=True)
    contrast = 1.0 + (torch.rand(n, 1, 1, 1, device=dev) - 0.5) * 0.6 * strength
    x = (x - mean) * contrast + mean
    x = x.clamp(0, 1)
    gamma = torch.exp((torch.rand(n, 1, 1, 1, device=dev) - 0.5) * 0.6 * strength)
    x = x.clamp_min(1e-4) ** gamma
    # Blur for some, then noise.
    blur = torch.rand(n, device=dev) < 0.3 * strength
    if blur.any():
        k = torch.tensor([1.0, 2.0, 1.0], device=dev)
        k = (k[:, None] * k[None, :]) / 16.0
        xb = F.conv2d(F.pad(x[blur], (1, 1, 1, 1), mode="replicate"), k.expand(3, 1, 3, 3), groups=3)
        x[blur] = xb
    sigma = torch.rand(n, 1, 1, 1, device=dev) * 0.03 * strength
    x = x + torch.randn_like(x) * sigma
    return x.clamp(0, 1)


class Schedule:
    """Warm-up, then a cosine learning rate over a wall-clock budget: on a shared 2-core machine
    the throughput changes during a run, so the schedule follows elapsed time, not steps."""

    def __init__(self, opt, lr, minutes, warmup_steps=100):
        self.opt, self.lr, self.budget = opt, lr, minutes * 60.0
        self.warmup = warmup_steps
        self.t0 = time.time()
        self.step_no = 0

    def step(self):
        self.step_no += 1
        frac = (time.time() - self.t0) / self.budget
        if self.step_no < self.warmup:
            f = self.step_no / self.warmup
        else:
            f = 0.5 * (1 + math.cos(math.pi * min(1.0, frac)))
        for g in self.opt.param_groups:
            g["lr"] = self.lr * max(f, 0.01)
        return frac >= 1.0


def export_onnx(model, example, path, input_name, output_names):
    """Exports with a dynamic batch (opset 17) and checks onnxruntime against torch."""
    model.eval()
    dyn = {input_name: {0: "N"}}
    for o in output_names:
        dyn[o] = {0: "N"}
    torch.onnx.export(model, example, path, input_names=[input_name], output_names=output_names,
                      opset_version=17, dynamic_axes=dyn, dynamo=False)
    import onnxruntime as ort

    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    with torch.no_grad():
        ref = model(example)
    ref = ref if isinstance(ref, tuple) else (ref,)
    got = sess.run(output_names, {input_name: example.numpy()})
    worst = max(float(np.abs(r.numpy() - g).max()) for r, g in zip(ref, got))
    if worst > 1e-3:
        raise SystemExit(f"onnxruntime and torch disagree on {path}: max |diff| {worst}")
    return worst


def ort_median_ms(path, input_name, shape, threads=2, runs=200):
    """Median and 10th-percentile time of one batch in onnxruntime with `threads` intra-op threads."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    x = np.random.rand(*shape).astype(np.float32)
    for _ in range(20):
        sess.run(None, {input_name: x})
    ts = []
    for _ in range(runs):
        t = time.perf_counter()
        sess.run(None, {input_name: x})
        ts.append(time.perf_counter() - t)
    ts = np.array(ts) * 1e3
    return float(np.median(ts)), float(np.percentile(ts, 10))


def load_val_squares(dirs):
    """Session directories -> [(crops float NCHW, class index, is_adapt)] for in-training validation."""
    from eval_sessions import load_images, sessions_under
    from nets import CLASSES

    out = []
    for d in sessions_under(dirs):
        rows = read_csv(os.path.join(d, "labels.csv"))
        x = torch.from_numpy(load_images(d, [r["path"] for r in rows], (48, 64)))
        y = np.array([CLASSES.index(r["label"]) for r in rows])
        out.append((x, y, np.array([r["split"] == "adapt" for r in rows])))
    return out


def val_squares(model, sessions):
    """(plain, 5-NN) accuracy over the test rows of `sessions`, the protocol of eval_sessions.py."""
    was = model.training
    model.eval()
    right = np.zeros(2)
    total = 0
    with torch.no_grad():
        for x, y, a in sessions:
            logits, emb = model(x)
            logits, emb = logits.numpy(), emb.numpy()
            t = ~a
            sim = emb[t] @ emb[a].T
            top = np.argsort(-sim, axis=1)[:, :5]
            votes = np.zeros((int(t.sum()), logits.shape[1]))
            rows = np.arange(len(top))
            for j in range(5):
                np.add.at(votes, (rows, y[a][top[:, j]]), np.exp(16 * sim[rows, top[:, j]]))
            right += [(logits[t].argmax(1) == y[t]).sum(), (votes.argmax(1) == y[t]).sum()]
            total += int(t.sum())
    model.train(was)
    return right / max(total, 1)


def load_val_pockets(dirs, max_pieces=None):
    """Session directories -> [(pocket crops float NCHW, counts [n, 5])]; with `max_pieces` only
    the pockets holding at most that many pieces (the ones play makes)."""
    from eval_sessions import load_images, sessions_under

    out = []
    for d in sessions_under(dirs):
        f = os.path.join(d, "pockets.csv")
        if os.path.isfile(f):
            rows = read_csv(f)
            if max_pieces is not None:
                rows = [r for r in rows if sum(int(r[k]) for k in "PNBRQ") <= max_pieces]
            if not rows:
                continue
            x = torch.from_numpy(load_images(d, [r["path"] for r in rows], (96, 128)))
            out.append((x, np.array([[int(r[k]) for k in "PNBRQ"] for r in rows])))
    return out


def val_pockets(model, sessions):
    """Share of pockets whose five role counts are all right."""
    was = model.training
    model.eval()
    right = total = 0
    with torch.no_grad():
        for x, y in sessions:
            pred = model(x).argmax(2).numpy()
            right += int((pred == y).all(1).sum())
            total += len(y)
    model.train(was)
    return right / max(total, 1)


def freeze_batch_norm(model):
    """Batch norm as a fixed affine map: running statistics used, scales and shifts not trained."""
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.eval()
            for p in m.parameters():
                p.requires_grad_(False)


def load_folded_onnx(model, path):
    """Copies an exported network's weights into `model` (a `SquareNet` or a `PocketNet` of the
    exported width).

    The export folds each batch norm into the convolution before it (weight and bias); the
    convolution gets the folded weight and its batch norm becomes the identity plus that bias,
    which is exact while the batch norm stays in eval mode (`freeze_batch_norm`)."""
    import onnx
    from onnx import numpy_helper

    inits = {i.name: numpy_helper.to_array(i) for i in onnx.load(path).graph.initializer}
    sd = model.state_dict()
    for name in inits:
        if name in sd:  # the linear layers and the class vectors keep their names in the export
            sd[name] = torch.from_numpy(inits[name].copy())
    folded = [inits[n] for n in inits if n.startswith("onnx::Conv_")]
    convs = [(n, m) for n, m in model.named_modules() if isinstance(m, torch.nn.Conv2d)]
    bns = [(n, m) for n, m in model.named_modules() if isinstance(m, torch.nn.BatchNorm2d)]
    if len(folded) != 2 * len(convs) or len(bns) != len(convs):
        raise SystemExit(f"{path}: {len(folded)} folded tensors for {len(convs)} convolutions")
    for k, ((cname, conv), (bname, bn)) in enumerate(zip(convs, bns)):
        w, b = folded[2 * k], folded[2 * k + 1]
        if tuple(w.shape) != tuple(conv.weight.shape):
            raise SystemExit(f"{path}: {cname} has shape {w.shape}, the net wants {tuple(conv.weight.shape)}")
        sd[cname + ".weight"] = torch.from_numpy(w.copy())
        sd[bname + ".weight"] = torch.ones_like(sd[bname + ".weight"])
        sd[bname + ".bias"] = torch.from_numpy(b.copy())
        sd[bname + ".running_mean"] = torch.zeros_like(sd[bname + ".running_mean"])
        sd[bname + ".running_var"] = torch.full_like(sd[bname + ".running_var"], 1.0 - bn.eps)
    model.load_state_dict(sd)
