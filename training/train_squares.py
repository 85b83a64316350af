"""Trains the square classifier (models/squares.onnx) on `tandem sim dataset` output.

    python training/train_squares.py --data DIR [DIR ...] --out models/squares.onnx --minutes 30

Cosine-softmax (CosFace) head on an L2-normalised 64-d embedding, so that class prototypes of
an unseen piece set (from the start position) are separable by cosine similarity.
"""

import argparse
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Schedule, load_val_squares, val_squares, augment, export_onnx, load_patches, ort_median_ms, to_tensor  # noqa: E402
from nets import CLASSES, SquareNet, macs  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", nargs="+", required=True)
    ap.add_argument("--out", default="models/squares.onnx")
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--width", type=int, default=16)
    ap.add_argument("--margin", type=float, default=0.25)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--checkpoint", help="where to keep the torch weights (default OUT.pt)")
    ap.add_argument("--val", nargs="*", default=[],
                    help="validation session directories: scored every --val-every minutes, the best weights kept")
    ap.add_argument("--val-every", type=float, default=8.0)
    ap.add_argument("--init", help="start from these torch weights (same --width) instead of random")
    ap.add_argument("--aug", type=float, default=1.0, help="augmentation strength")
    ap.add_argument("--eval", nargs="*", default=[], help="session directories to report on")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)

    x, rows = load_patches(args.data, "squares", 64, 48)
    ok = [i for i, r in enumerate(rows) if None not in r.values() and r.get("label") in CLASSES]
    keep = np.array([i for i in ok if rows[i]["occluded"] == "0"])
    labels = np.zeros(len(rows), dtype=np.int64)
    for i in ok:
        labels[i] = CLASSES.index(rows[i]["label"])
    print(f"{len(rows)} crops, {len(keep)} unoccluded for training; class counts "
          f"{np.bincount(labels[keep], minlength=13).tolist()}", flush=True)
    # Balance: empties dominate; sample classes with weight ~ count^-0.5.
    counts = np.bincount(labels[keep], minlength=13).astype(np.float64)
    w = 1.0 / np.sqrt(np.maximum(counts[labels[keep]], 1))
    w /= w.sum()

    model = SquareNet(width=args.width)
    if args.init:
        model.load_state_dict(torch.load(args.init, map_location="cpu"))
        print(f"initialised from {args.init}", flush=True)
    print(f"SquareNet width {args.width}: {sum(p.numel() for p in model.parameters())} params, "
          f"{macs(model, (3, 64, 48))} MACs/crop", flush=True)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=5e-4)
    sched = Schedule(opt, args.lr, args.minutes)
    val = load_val_squares(args.val) if args.val else []
    best = (-1.0, None, 0)

    def validate(step):
        r = val_squares(model, val)
        print(f"val step {step}: plain {r[0]:.4f} 5-NN {r[1]:.4f}", flush=True)
        return r[1]

    if val and args.init:
        best = (validate(0), {k: v.clone() for k, v in model.state_dict().items()}, 0)
    model.train()
    t0 = time.time()
    next_val = args.val_every * 60
    step, run_loss, run_acc = 0, 0.0, 0.0
    while True:
        idx = rng.choice(keep, size=args.batch, p=w)
        xb = augment(to_tensor(x[np.sort(idx)]), strength=args.aug)
        yb = torch.from_numpy(labels[np.sort(idx)])
        logits, _ = model(xb)
        # CosFace: subtract the margin from the true class's cosine (logits are scale * cos).
        marg = F.one_hot(yb, len(CLASSES)).float() * (args.margin * model.scale)
        loss = F.cross_entropy(logits - marg, yb, label_smoothing=0.05)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        done = sched.step()
        step += 1
        run_loss = 0.98 * run_loss + 0.02 * loss.item()
        run_acc = 0.98 * run_acc + 0.02 * (logits.argmax(1) == yb).float().mean().item()
        if step % 200 == 0:
            print(f"step {step} loss {run_loss:.3f} acc {run_acc:.4f} lr {opt.param_groups[0]['lr']:.5f} "
                  f"{time.time() - t0:.0f} s", flush=True)
        if val and (done or time.time() - t0 >= next_val):
            next_val += args.val_every * 60
            score = validate(step)
            if score > best[0]:
                best = (score, {k: v.clone() for k, v in model.state_dict().items()}, step)
        if done:
            break
    if val:
        print(f"keeping the weights of step {best[2]} (validation {best[0]:.4f})", flush=True)
        model.load_state_dict(best[1])
    model.eval()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    torch.save(model.state_dict(), args.checkpoint or args.out + ".pt")
    ex = to_tensor(x[keep[:8]])
    diff = export_onnx(model, ex, args.out, "crops", ["logits", "embedding"])
    med, p10 = ort_median_ms(args.out, "crops", (128, 3, 64, 48))
    print(f"exported {args.out} ({os.path.getsize(args.out)} bytes), max |torch - ort| {diff:.2e}; "
          f"128 crops in onnxruntime, 2 threads: median {med:.2f} ms, p10 {p10:.2f} ms", flush=True)
    if args.eval:
        from eval_sessions import evaluate_squares

        evaluate_squares(args.out, args.eval)


if __name__ == "__main__":
    main()
