#!/usr/bin/python3
"""The handwritten digits of scikit-learn (Debian's python3-sklearn ships
them: 1797 images of 8 x 8 pixels, no download) as an mft data file.

    jobs/make_digits.py [--out input/digits.h5] [--heldout-out input/digits_heldout.h5]
                        [--heldout 0.2] [--seed 0] [--baseline]

Each image is a sequence of N = 8 tokens, one per pixel row: the row's 8
pixels (scaled to [0, 1]) and the row's position as a one-hot vector of 8
(d = 16). The target of an image is its class, one-hot and centred
(1 - 1/10 for the class, -1/10 elsewhere), read through a fixed random readout
W (10 x 16, entries N(0, 1/d), seed 4): mft's pooled loss with 10 outputs,
and the accuracy (loss.accuracy) is the fraction of images whose largest
output is their class. A fraction --heldout of the images (drawn with
--seed) goes to the held-out file (data.heldout of input/digits.cfg).

--baseline prints, on the same split, the accuracy of logistic regression on
the 64 pixels and of a least-squares linear readout on the mean token
x̄(0): what a model without attention reaches.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np  # noqa: E402

from make_data import Refused, convert, run  # noqa: E402


def digits():
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        raise Refused("scikit-learn is not installed (apt-get install python3-sklearn)")
    d = load_digits()
    images = d.images / 16.0  # (1797, 8, 8) in [0, 1]
    M = images.shape[0]
    position = np.broadcast_to(np.eye(8), (M, 8, 8))
    tokens = np.concatenate([images, position], axis=2)  # (M, 8 tokens, 16)
    targets = np.full((M, 10), -0.1)
    targets[np.arange(M), d.target] += 1.0
    readout = np.random.default_rng(4).normal(size=(10, 16)) / 4.0  # N(0, 1/d), d = 16
    return tokens, targets, readout, d.target


def baseline(tokens, labels, held):
    from sklearn.linear_model import LogisticRegression
    pixels = tokens[:, :, :8].reshape(len(tokens), -1)
    lr = LogisticRegression(max_iter=5000).fit(pixels[~held], labels[~held])
    print(f"baseline: logistic regression on the 64 pixels: accuracy {lr.score(pixels[~held], labels[~held]):.4f} "
          f"(training), {lr.score(pixels[held], labels[held]):.4f} (held-out)")
    mean = tokens.mean(axis=1)  # x̄(0), (M, 16)
    X = np.hstack([mean, np.ones((len(mean), 1))])
    Y = np.eye(10)[labels]
    w, *_ = np.linalg.lstsq(X[~held], Y[~held], rcond=None)
    acc = lambda rows: float(np.mean(np.argmax(X[rows] @ w, axis=1) == labels[rows]))
    print(f"baseline: least-squares readout of the mean token x̄(0): accuracy {acc(~held):.4f} (training), "
          f"{acc(held):.4f} (held-out)")


def main(argv):
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default=os.path.join(top, "input", "digits.h5"))
    p.add_argument("--heldout-out", default=os.path.join(top, "input", "digits_heldout.h5"))
    p.add_argument("--heldout", type=float, default=0.2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--baseline", action="store_true")
    a = p.parse_args(argv)
    tokens, targets, readout, labels = digits()
    held = convert(tokens, targets, readout, a.out, a.heldout, a.heldout_out, a.seed)
    if a.baseline:
        baseline(tokens, labels, held)


if __name__ == "__main__":
    run(main, "make_digits")
