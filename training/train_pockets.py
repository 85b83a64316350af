"""Trains the pocket reader (models/pockets.onnx) on `tandem sim dataset` output.

    python training/train_pockets.py --data DIR [DIR ...] --out models/pockets.onnx --minutes 20

Five heads (P, N, B, R, Q), each a softmax over the count 0..8 of that role in the zone.
"""

import argparse
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Schedule, freeze_batch_norm, load_folded_onnx, load_val_pockets, val_pockets, augment, export_onnx, load_patches, ort_median_ms, to_tensor  # noqa: E402
from nets import MAX_COUNT, ROLES, PocketNet, macs  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", nargs="+", required=True)
    ap.add_argument("--out", default="models/pockets.onnx")
    ap.add_argument("--minutes", type=float, default=20.0)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--width", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--checkpoint", help="where to keep the torch weights (default OUT.pt)")
    ap.add_argument("--val", nargs="*", default=[],
                    help="validation session directories: scored every --val-every minutes, the best weights kept")
    ap.add_argument("--val-every", type=float, default=8.0)
    ap.add_argument("--val-max-pieces", type=int,
                    help="score only the validation pockets holding at most this many pieces")
    ap.add_argument("--init", help="start from these torch weights (same --width) instead of random")
    ap.add_argument("--init-onnx", help="start from an exported pockets.onnx of the same --width (batch norm "
                    "folded into the convolutions and kept fixed)")
    ap.add_argument("--eval", nargs="*", default=[])
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)

    x, rows = load_patches(args.data, "pockets", 128, 96)
    ok = np.array([i for i, r in enumerate(rows) if None not in r.values() and r.get("Q") not in (None, "")])
    y = np.zeros((len(rows), len(ROLES)), dtype=np.int64)
    for i in ok:
        y[i] = [min(int(rows[i][k]), MAX_COUNT) for k in ROLES]
    print(f"{len(ok)} pocket crops; mean counts {y[ok].mean(0).round(2).tolist()}, "
          f"empty {np.mean(y[ok].sum(1) == 0):.2f}", flush=True)
    model = PocketNet(width=args.width)
    if args.init:
        model.load_state_dict(torch.load(args.init, map_location="cpu"))
        print(f"initialised from {args.init}", flush=True)
    if args.init_onnx:
        load_folded_onnx(model, args.init_onnx)
        print(f"initialised from {args.init_onnx} (batch norm folded, frozen)", flush=True)
    print(f"PocketNet width {args.width}: {sum(p.numel() for p in model.parameters())} params, "
          f"{macs(model, (3, 128, 96))} MACs/crop", flush=True)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-3)
    sched = Schedule(opt, args.lr, args.minutes)
    val = load_val_pockets(args.val, args.val_max_pieces) if args.val else []
    best = (-1.0, None, 0)

    def validate(step):
        r = val_pockets(model, val)
        if args.init_onnx:
            freeze_batch_norm(model)  # val_pockets puts every module back into training mode
        print(f"val step {step}: pockets exact {r:.4f}", flush=True)
        return r

    if val and (args.init or args.init_onnx):
        best = (validate(0), {k: v.clone() for k, v in model.state_dict().items()}, 0)
    model.train()
    if args.init_onnx:
        freeze_batch_norm(model)
    t0 = time.time()
    next_val = args.val_every * 60
    step, run_loss, run_acc = 0, 0.0, 0.0
    while True:
        idx = np.sort(rng.choice(ok, size=args.batch))
        # Pieces are small in the zone: gentler geometry, no large shifts out of the crop.
        xb = augment(to_tensor(x[idx]), max_shift=0.03)
        yb = torch.from_numpy(y[idx])
        out = model(xb)
        loss = F.cross_entropy(out.reshape(-1, MAX_COUNT + 1), yb.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        done = sched.step()
        step += 1
        run_loss = 0.98 * run_loss + 0.02 * loss.item()
        run_acc = 0.98 * run_acc + 0.02 * (out.argmax(2) == yb).all(1).float().mean().item()
        if step % 200 == 0:
            print(f"step {step} loss {run_loss:.3f} exact {run_acc:.3f} lr {opt.param_groups[0]['lr']:.5f} "
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
    diff = export_onnx(model, to_tensor(x[ok[:4]]), args.out, "pockets", ["counts"])
    med, p10 = ort_median_ms(args.out, "pockets", (4, 3, 128, 96))
    print(f"exported {args.out} ({os.path.getsize(args.out)} bytes), max |torch - ort| {diff:.2e}; "
          f"4 pockets in onnxruntime, 2 threads: median {med:.2f} ms, p10 {p10:.2f} ms", flush=True)
    if args.eval:
        from eval_sessions import evaluate_pockets

        evaluate_pockets(args.out, args.eval)


if __name__ == "__main__":
    main()
