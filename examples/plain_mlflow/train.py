"""A training that logs with plain ``mlflow`` only (no import from this project).

Under the tuner (``configs/plain-mlflow-example.yaml``) ``mlflow.start_run()`` attaches to
the trial's run through ``MLFLOW_RUN_ID`` and ``MLFLOW_TRACKING_URI``, so whatever the
script logs lands in the trial: the tuner reads ``val_accuracy`` back from MLflow, per epoch
for pruning and the last value as the result. Run by hand, it creates a run of its own.

The model: scikit-learn's ``MLPClassifier`` on the digits set (shipped, no download),
trained epoch by epoch with ``partial_fit``::

    python examples/plain_mlflow/train.py --lr 0.001 --alpha 1e-4 --hidden 64 \
        --batch-size 32 --epochs 10 [--seed 0]
"""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--alpha", type=float, default=1e-4, help="L2 penalty")
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    import warnings

    import mlflow
    import numpy as np
    from sklearn.datasets import load_digits
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.metrics import log_loss
    from sklearn.model_selection import train_test_split
    from sklearn.neural_network import MLPClassifier

    digits = load_digits()
    x = digits.data / 16.0
    x_tr, x_va, y_tr, y_va = train_test_split(
        x, digits.target, test_size=0.2, random_state=args.seed, stratify=digits.target
    )
    clf = MLPClassifier(
        hidden_layer_sizes=(args.hidden,),
        learning_rate_init=args.lr,
        alpha=args.alpha,
        batch_size=args.batch_size,
        random_state=args.seed,
    )
    classes = np.unique(digits.target)
    rng = np.random.default_rng(args.seed)
    with mlflow.start_run():
        mlflow.log_params(vars(args))
        mlflow.set_tag("example", "plain_mlflow")
        for epoch in range(1, args.epochs + 1):
            order = rng.permutation(len(x_tr))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                clf.partial_fit(x_tr[order], y_tr[order], classes=classes)
            acc = float(clf.score(x_va, y_va))
            val_loss = float(log_loss(y_va, clf.predict_proba(x_va), labels=classes))
            mlflow.log_metrics(
                {"loss": float(clf.loss_), "val_loss": val_loss, "val_accuracy": acc}, step=epoch
            )
            print(f"epoch: {epoch} loss: {clf.loss_:.4f} val_accuracy: {acc:.4f}", flush=True)
    print(f"val_accuracy: {acc:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
