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
from common import Schedule, freeze_batch_norm, load_folded_onnx, load_val_squares, val_squares, augment, export_onnx, load_patches, ort_median_ms, read_csv, to_tensor  # noqa: E402
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
    ap.add_argument("--init-onnx", help="start from an exported squares.onnx (batch norm folded into the "
                    "convolutions; implies --freeze-bn)")
    ap.add_argument("--freeze-bn", action="store_true", help="keep batch-norm statistics and scales fixed")
    ap.add_argument("--widen-from", type=int,
                    help="with --init-onnx: the exported model's width; its weights are widened to --width "
                         "(each new channel a copy of an old one, consumers' weights shared between the "
                         "copies), so training starts from the same function")
    ap.add_argument("--widen-noise", type=float, default=0.02,
                    help="relative noise on the copied channels' weights (copies must differ to diverge)")
    ap.add_argument("--episodic", type=float, default=0.0,
                    help="weight of the episodic loss: queries of a table classified by prototypes from "
                         "that table's start position (needs data written with `sim dataset --episode K`)")
    ap.add_argument("--tables", type=int, default=4, help="tables per episodic batch")
    ap.add_argument("--queries", type=int, default=48, help="query crops per table and batch")
    ap.add_argument("--aug", type=float, default=1.0, help="augmentation strength")
    ap.add_argument("--occluded", action="store_true",
                    help="also train on crops whose square centre a nearer object hides: at a low "
                         "camera they are the patches a neighbour's body spills into")
    ap.add_argument("--eval", nargs="*", default=[], help="session directories to report on")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)

    x, rows = load_patches(args.data, "squares", 64, 48)
    ok = [i for i, r in enumerate(rows) if None not in r.values() and r.get("label") in CLASSES]
    keep = np.array([i for i in ok if args.occluded or rows[i]["occluded"] == "0"])
    labels = np.zeros(len(rows), dtype=np.int64)
    for i in ok:
        labels[i] = CLASSES.index(rows[i]["label"])
    print(f"{len(rows)} crops, {len(keep)} for training; class counts "
          f"{np.bincount(labels[keep], minlength=13).tolist()}", flush=True)
    # Balance: empties dominate; sample classes with weight ~ count^-0.5.
    counts = np.bincount(labels[keep], minlength=13).astype(np.float64)
    w = 1.0 / np.sqrt(np.maximum(counts[labels[keep]], 1))
    w /= w.sum()

    model = SquareNet(width=args.width)
    if args.init:
        model.load_state_dict(torch.load(args.init, map_location="cpu"))
        print(f"initialised from {args.init}", flush=True)
    if args.init_onnx:
        if args.widen_from and args.widen_from != args.width:
            narrow = SquareNet(width=args.widen_from)
            load_folded_onnx(narrow, args.init_onnx)
            widen(narrow, model, rng, args.widen_noise)
            print(f"widened from width {args.widen_from}", flush=True)
        else:
            load_folded_onnx(model, args.init_onnx)
        args.freeze_bn = True
        print(f"initialised from {args.init_onnx} (batch norm folded, frozen)", flush=True)
    episodes = table_episodes(rows, labels, keep) if args.episodic > 0 else []
    if args.episodic > 0:
        print(f"episodic loss on {len(episodes)} tables", flush=True)
        if not episodes:
            raise SystemExit("--episodic needs data with a `table` column (sim dataset --episode K)")
    print(f"SquareNet width {args.width}: {sum(p.numel() for p in model.parameters())} params, "
          f"{macs(model, (3, 64, 48))} MACs/crop", flush=True)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=5e-4)
    sched = Schedule(opt, args.lr, args.minutes)
    val = load_val_squares(args.val) if args.val else []
    best = (-1.0, None, 0)

    def validate(step):
        r = val_squares(model, val)
        if args.freeze_bn:
            freeze_batch_norm(model)  # val_squares puts every module back into training mode
        print(f"val step {step}: plain {r[0]:.4f} 5-NN {r[1]:.4f}", flush=True)
        return r[1]

    if val and (args.init or args.init_onnx):
        best = (validate(0), {k: v.clone() for k, v in model.state_dict().items()}, 0)
    model.train()
    if args.freeze_bn:
        freeze_batch_norm(model)
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
        if episodes:
            loss = loss + args.episodic * episodic_loss(model, x, labels, episodes, rng, args)
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


START_PLACEMENT = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR"




def widen(narrow, wide, rng, noise):
    """Copies `narrow` into the wider `wide` of the same layout, function-preserving up to
    `noise` (Net2WiderNet): each extra output channel of a full or pointwise convolution copies
    a random old channel (its batch norm too), a depthwise convolution follows its input's
    copies, and every consumer divides the weights of a copied input channel among its copies.
    The copies' incoming weights get `noise` x their spread so that training can pull them apart."""
    n_convs = [m for m in narrow.modules() if isinstance(m, torch.nn.Conv2d)]
    w_convs = [m for m in wide.modules() if isinstance(m, torch.nn.Conv2d)]
    n_bns = [m for m in narrow.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    w_bns = [m for m in wide.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    g_in = np.arange(3)  # the image's channels are not widened
    with torch.no_grad():
        for nc, wc, nb, wb in zip(n_convs, w_convs, n_bns, w_bns):
            old_out, new_out = nc.out_channels, wc.out_channels
            if nc.groups > 1:  # depthwise: one filter per channel, copies follow the input's
                g_out = g_in
                wc.weight.copy_(nc.weight[torch.from_numpy(g_in)])
            else:
                g_out = np.concatenate([np.arange(old_out), rng.integers(0, old_out, new_out - old_out)])
                share = np.bincount(g_in, minlength=nc.in_channels)[g_in].astype(np.float32)
                w = nc.weight[torch.from_numpy(g_out)][:, torch.from_numpy(g_in)]
                w = w / torch.from_numpy(share).view(1, -1, 1, 1)
                extra = w[old_out:]
                extra += noise * extra.std() * torch.randn_like(extra)
                wc.weight.copy_(w)
            idx = torch.from_numpy(g_out)
            for name in ("weight", "bias", "running_mean", "running_var"):
                getattr(wb, name).copy_(getattr(nb, name)[idx])
            g_in = g_out
        # The embedding reads the last map flattened channel-major (channel * positions + position).
        pos = narrow.embed.in_features // n_convs[-1].out_channels
        share = np.bincount(g_in, minlength=n_convs[-1].out_channels)[g_in].astype(np.float32)
        cols = (g_in[:, None] * pos + np.arange(pos)[None, :]).reshape(-1)
        scale = np.repeat(1.0 / share, pos).astype(np.float32)
        wide.embed.weight.copy_(narrow.embed.weight[:, torch.from_numpy(cols)] * torch.from_numpy(scale))
        wide.embed.bias.copy_(narrow.embed.bias)
        wide.weight.copy_(narrow.weight)


def table_episodes(rows, labels, keep):
    """Per table of episodic data: (support = its start-position crops, queries = its other
    crops in `keep`), as index arrays into the patch array. A table whose start frame was
    not written (refused crops) is left out."""
    kept = np.zeros(len(rows), dtype=bool)
    kept[keep] = True
    frame_table, start_frames = {}, set()
    for d in sorted({r["dir"] for r in rows}):
        f = os.path.join(d, "frames.csv")
        for r in read_csv(f) if os.path.isfile(f) else []:
            if not r.get("table") or r.get("table_fen") is None:
                continue  # a row still being written, or data without episodes
            frame_table[(d, r["frame"])] = (d, int(r["table"]))
            if all(b.split("[")[0].strip() == START_PLACEMENT for b in r["table_fen"].split("|")):
                start_frames.add((d, r["frame"]))
    tables = {}
    for i, r in enumerate(rows):
        t = frame_table.get((r["dir"], r["frame"]))
        if t is None or not kept[i]:
            continue
        sup, qry = tables.setdefault(t, ([], []))
        (sup if (r["dir"], r["frame"]) in start_frames else qry).append(i)
    out = []
    for sup, qry in tables.values():
        # A complete start position shows all 13 classes; anything else cannot adapt.
        if qry and len(set(labels[sup].tolist())) == len(CLASSES):
            out.append((np.array(sup), np.array(qry)))
    return out


def episodic_loss(model, x, labels, episodes, rng, args):
    """Cross-entropy of query crops against class prototypes of their own table's start
    position: what the run-time classifier does with a table it has never seen."""
    picks = rng.choice(len(episodes), size=min(args.tables, len(episodes)), replace=False)
    losses = []
    for p in picks:
        sup_all, qry = episodes[p]
        # Up to four exemplars per class keep the batch small; every class keeps one at least.
        sup = np.concatenate([
            rng.permutation(sup_all[labels[sup_all] == c])[:4] for c in range(len(CLASSES))
        ])
        q = rng.choice(qry, size=min(args.queries, len(qry)), replace=False)
        xb = augment(to_tensor(x[np.concatenate([sup, q])]), strength=args.aug * 0.5)
        _, emb = model(xb)
        es, eq = emb[: len(sup)], emb[len(sup):]
        ys = torch.from_numpy(labels[sup])
        protos = torch.zeros(len(CLASSES), es.shape[1]).index_add_(0, ys, es)
        protos = F.normalize(protos, dim=1)
        logits = model.scale * eq @ protos.t()
        losses.append(F.cross_entropy(logits, torch.from_numpy(labels[q])))
    return torch.stack(losses).mean()


if __name__ == "__main__":
    main()
