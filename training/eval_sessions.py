"""Measures models/squares.onnx and models/pockets.onnx on session directories written by
`tandem sim dataset --sessions N` (the contract's protocol: prototypes from the start position).

    python training/eval_sessions.py --squares models/squares.onnx --pockets models/pockets.onnx DIR ...

Each DIR is one session or a parent of sessions (any directory holding labels.csv counts).
Per-square figures on the `test` rows (unoccluded squares): without adaptation (argmax of the
model's logits), with mean class prototypes of the `adapt` rows (nearest by cosine), with the
1-nearest adapt crop, with a 5-nearest vote weighted by exp(16 * cosine), and 1-nearest over the
start position plus the session's earlier positions (as if the tracker had confirmed them).
"""

import argparse
import csv
import json
import os
import sys

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nets import CLASSES  # noqa: E402


def sessions_under(paths):
    out = []
    for p in paths:
        if os.path.isfile(os.path.join(p, "labels.csv")):
            out.append(p)
        elif os.path.isdir(p):
            out.extend(sorted(os.path.join(p, d) for d in os.listdir(p)
                              if os.path.isfile(os.path.join(p, d, "labels.csv"))))
    return out


def load_images(d, paths, size):
    arr = []
    for p in paths:
        im = Image.open(os.path.join(d, p)).convert("RGB")
        if im.size != size:
            im = im.resize(size, Image.BILINEAR)
        arr.append(np.asarray(im))
    return np.stack(arr).transpose(0, 3, 1, 2).astype(np.float32) / 255.0


def session(path):
    import onnxruntime  # noqa: F401

    return path


def evaluate_squares(model_path, paths, verbose=True):
    import onnxruntime as ort

    sess = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    totals = {}
    per_class = {m: np.zeros((13, 2)) for m in ("plain", "proto", "nn1", "knn5", "nn1_confirmed")}
    for d in sessions_under(paths):
        rows = list(csv.DictReader(open(os.path.join(d, "labels.csv"))))
        x = load_images(d, [r["path"] for r in rows], (48, 64))
        y = np.array([CLASSES.index(r["label"]) for r in rows])
        split = np.array([r["split"] for r in rows])
        logits, emb = sess.run(["logits", "embedding"], {"crops": x})
        a, t = split == "adapt", split == "test"
        protos = np.stack([emb[a & (y == c)].mean(0) for c in range(13)])
        protos /= np.linalg.norm(protos, axis=1, keepdims=True)
        sim = emb[t] @ emb[a].T
        # k nearest adapt crops, votes weighted by exp(16 * cosine).
        top = np.argsort(-sim, axis=1)[:, :5]
        votes = np.zeros((int(t.sum()), 13))
        for j in range(5):
            np.add.at(votes, (np.arange(len(top)), y[a][top[:, j]]), np.exp(16 * sim[np.arange(len(top)), top[:, j]]))
        pred = {
            "plain": logits[t].argmax(1),
            "proto": (emb[t] @ protos.T).argmax(1),
            "nn1": y[a][sim.argmax(1)],
            "knn5": votes.argmax(1),
        }
        # The tracker confirms positions as the game goes on: position p is classified with the
        # start position plus positions < p (true labels) as exemplars (1-nearest).
        pos = np.array([int(os.path.basename(r["path"]).split("_")[0]) for r in rows])
        conf = np.empty(int(t.sum()), dtype=np.int64)
        tpos = pos[t]
        for p in np.unique(tpos):
            bank = a | (t & (pos < p))
            q = tpos == p
            conf[q] = y[bank][(emb[t][q] @ emb[bank].T).argmax(1)]
        pred["nn1_confirmed"] = conf
        camera = os.path.basename(d).rsplit("-", 1)[0]
        for m, p in pred.items():
            ok = p == y[t]
            k = (camera, m)
            c, n = totals.get(k, (0, 0))
            totals[k] = (c + int(ok.sum()), n + int(ok.size))
            for cls in range(13):
                sel = y[t] == cls
                per_class[m][cls] += [ok[sel].sum(), sel.sum()]
        if verbose:
            print(f"{d}: " + ", ".join(f"{m} {np.mean(p == y[t]) * 100:.2f} %" for m, p in pred.items()),
                  flush=True)
    report = {f"{cam}/{m}": {"correct": c, "total": n, "accuracy": c / max(n, 1)}
              for (cam, m), (c, n) in sorted(totals.items())}
    for m in ("proto", "nn1"):
        report[f"per_class_{m}"] = {CLASSES[i]: round(per_class[m][i, 0] / max(per_class[m][i, 1], 1), 4)
                                    for i in range(13)}
    print(json.dumps(report, indent=1), flush=True)
    return report


def evaluate_pockets(model_path, paths, verbose=True):
    import onnxruntime as ort

    sess = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    totals = {}
    for d in sessions_under(paths):
        f = os.path.join(d, "pockets.csv")
        if not os.path.isfile(f):
            continue
        rows = list(csv.DictReader(open(f)))
        x = load_images(d, [r["path"] for r in rows], (96, 128))
        y = np.array([[int(r[k]) for k in "PNBRQ"] for r in rows])
        (counts,) = sess.run(["counts"], {"pockets": x})
        pred = counts.argmax(2)
        camera = os.path.basename(d).rsplit("-", 1)[0]
        exact = (pred == y).all(1)
        role = (pred == y)
        c = totals.setdefault(camera, [0, 0, 0, 0])
        c[0] += int(exact.sum())
        c[1] += len(rows)
        c[2] += int(role.sum())
        c[3] += role.size
    report = {cam: {"pockets_exact": c[0] / max(c[1], 1), "pockets": c[1], "role_counts_exact": c[2] / max(c[3], 1)}
              for cam, c in totals.items()}
    print(json.dumps(report, indent=1), flush=True)
    return report


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--squares")
    ap.add_argument("--pockets")
    ap.add_argument("dirs", nargs="+")
    args = ap.parse_args()
    if args.squares:
        evaluate_squares(args.squares, args.dirs)
    if args.pockets:
        evaluate_pockets(args.pockets, args.dirs)


if __name__ == "__main__":
    main()
