"""Runs written by MLflow's own autologging, not by lineage, are lineage: `lineage runs`,
`importance`, `diagnose`, `report`, `tuner init` and a campaign's `warm_start` read them.

The runs are real: one process trains eight Lightning modules under
``mlflow.pytorch.autolog()`` (params ``lr``, ``momentum``, ``optimizer_name``, ``epochs``...;
metrics per epoch), then three Hugging Face Trainer runs through the Trainer's own
``MLflowCallback`` (``report_to=["mlflow"]``: every ``TrainingArguments`` field and the model
config as params, ``loss`` per step, ``eval_*`` per evaluation), the last with a learning rate
far too large.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import lightning  # noqa: F401  (the trainings below need both extras: a missing one fails)
import pytest
import transformers  # noqa: F401
import yaml

# One worker makes the runs once for the module's tests.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("autolog")]

GENERATE = """
import os, sys
import mlflow, numpy as np, torch
from sklearn.datasets import load_digits

kinds = sys.argv[1:]
if "lightning" in kinds:
    import lightning as L

    x, y = load_digits(return_X_y=True)
    x, y = torch.tensor(x[:400] / 16.0, dtype=torch.float32), torch.tensor(y[:400])
    data = torch.utils.data.TensorDataset

    class Digits(L.LightningModule):
        def __init__(self, lr, momentum):
            super().__init__()
            self.save_hyperparameters()
            self.net = torch.nn.Sequential(
                torch.nn.Linear(64, 16), torch.nn.ReLU(), torch.nn.Linear(16, 10)
            )

        def training_step(self, batch, i):
            loss = torch.nn.functional.cross_entropy(self.net(batch[0]), batch[1])
            self.log("train_loss", loss)
            return loss

        def validation_step(self, batch, i):
            self.log("val_accuracy", (self.net(batch[0]).argmax(1) == batch[1]).float().mean())

        def configure_optimizers(self):
            h = self.hparams
            return torch.optim.SGD(self.parameters(), lr=h.lr, momentum=h.momentum)

    mlflow.set_experiment("autolog-lightning")
    mlflow.pytorch.autolog(log_models=False, checkpoint=False)
    for lr, momentum in zip(
        [0.3, 0.1, 0.03, 0.01, 0.003, 0.2, 0.05, 0.001],
        [0.5, 0.9, 0.7, 0.8, 0.6, 0.95, 0.55, 0.85],
    ):
        torch.manual_seed(0)
        trainer = L.Trainer(
            max_epochs=2, accelerator="cpu", logger=False, enable_checkpointing=False,
            enable_progress_bar=False, enable_model_summary=False, num_sanity_val_steps=0,
        )
        trainer.fit(
            Digits(lr, momentum),
            torch.utils.data.DataLoader(data(x[:320], y[:320]), batch_size=32),
            torch.utils.data.DataLoader(data(x[320:], y[320:]), batch_size=80),
        )
if "hf" in kinds:
    import transformers

    mlflow.pytorch.autolog(disable=True)  # the Trainer's runs are its own callback's alone
    os.environ["MLFLOW_EXPERIMENT_NAME"] = "autolog-hf"

    class Tokens(torch.utils.data.Dataset):
        def __init__(self, n, seed):
            g = torch.Generator().manual_seed(seed)
            self.ids = torch.randint(1, 20, (n, 8), generator=g)
            self.labels = (self.ids == 5).any(1).long()

        def __len__(self):
            return len(self.ids)

        def __getitem__(self, i):
            return {"input_ids": self.ids[i], "labels": self.labels[i]}

    def accuracy(p):
        return {"accuracy": float((np.argmax(p.predictions, 1) == p.label_ids).mean())}

    for lr, batch_size in [(3e-3, 16), (1e-2, 32), (1e3, 16)]:
        transformers.set_seed(0)
        config = transformers.BertConfig(
            vocab_size=20, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
            intermediate_size=32, max_position_embeddings=16, num_labels=2,
        )
        args = transformers.TrainingArguments(
            output_dir="hf-out", num_train_epochs=2, per_device_train_batch_size=batch_size,
            learning_rate=lr, eval_strategy="epoch", logging_steps=1, save_strategy="no",
            report_to=["mlflow"], disable_tqdm=True, use_cpu=True,
        )
        transformers.Trainer(
            model=transformers.BertForSequenceClassification(config), args=args,
            train_dataset=Tokens(96, 0), eval_dataset=Tokens(32, 1), compute_metrics=accuracy,
        ).train()
"""


@pytest.fixture(scope="module")
def autolog_uri(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("autolog")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    script = root / "generate.py"
    script.write_text(GENERATE)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "TUNER_"))}
    env.update(MLFLOW_TRACKING_URI=uri, OMP_NUM_THREADS="1")
    # Both kinds in one process: torch, MLflow and scikit-learn are imported once.
    done = subprocess.run(
        [sys.executable, str(script), "lightning", "hf"], cwd=root, env=env, capture_output=True,
        text=True, timeout=480,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return uri


def _lineage(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    from lineage.cli import main

    capsys.readouterr()
    code = main(list(argv))
    return code, capsys.readouterr().out


def test_runs_and_importance_read_autologged_params(
    autolog_uri: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _lineage(
        capsys, "runs", "--experiment", "autolog-lightning", "--tracking-uri", autolog_uri,
        "--format", "json",
    )  # fmt: skip
    assert code == 0
    runs = json.loads(out)
    assert len(runs) == 8 and {r["tags"]["mlflow.autologging"] for r in runs} == {"pytorch"}
    assert {r["params"]["optimizer_name"] for r in runs} == {"SGD"}

    code, out = _lineage(
        capsys, "importance", "--experiment", "autolog-lightning", "--tracking-uri",
        autolog_uri, "--target", "val_accuracy", "--goal", "maximize", "--format", "json",
    )  # fmt: skip
    assert code == 0
    ranked = {p["name"]: p for p in json.loads(out)["params"]}
    assert ranked["lr"]["importance"] > ranked["momentum"]["importance"]


def test_diagnose_reads_autologged_curves(
    autolog_uri: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _lineage(
        capsys, "diagnose", "--experiment", "autolog-hf", "--tracking-uri", autolog_uri,
        "--format", "json",
    )  # fmt: skip
    runs = json.loads(out)["runs"]
    assert code == 0 and len(runs) == 3  # warnings only
    flagged = [r for r in runs if r["findings"]]
    assert len(flagged) == 1, flagged
    # Read from the Trainer's own names: learning_rate, and optim (adamw) for the bound.
    (finding,) = flagged[0]["findings"]
    assert finding["check"] == "hyperparameter_range"
    assert finding["summary"].startswith("learning_rate = 1000.0 is above 0.1")


def test_report_and_tuner_init_derive_from_autologged_runs(
    autolog_uri: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tuner.cli import main as tuner

    out_dir = tmp_path / "report"
    code, _ = _lineage(
        capsys, "report", "--experiment", "autolog-lightning", "--tracking-uri", autolog_uri,
        "--target", "val_accuracy", "--goal", "maximize", "-o", str(out_dir),
    )  # fmt: skip
    assert code == 0 and (out_dir / "report.html").is_file() and (out_dir / "slice.png").is_file()

    written = tmp_path / "refined.yaml"
    argv = ["init", "--from", "autolog-lightning", "--tracking-uri", autolog_uri]
    argv += ["--target", "val_accuracy", "--goal", "maximize", "-o", str(written)]
    assert tuner(argv) == 0
    config = yaml.safe_load(written.read_text())
    assert "lr" in config["parameters"]
    assert config["warm_start"]["from"][0]["experiment"] == "autolog-lightning"


def _campaign(repo_root: Path, name: str, **changes: Any) -> dict[str, Any]:
    config = yaml.safe_load((repo_root / f"configs/{name}.yaml").read_text())
    config.update(changes)
    return config


def test_a_campaign_warm_starts_from_autologged_runs_with_mapped_names(
    autolog_uri: str, repo_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tuner.cli import main as tuner

    # The digits loop's campaign, on what autolog recorded of the Lightning runs: its
    # `optimizer` choice `sgd` is autolog's `optimizer_name` `SGD`.
    digits = _campaign(repo_root, "pytorch-digits", workdir=str(repo_root))
    for fixed in ("batch_size", "hidden"):  # the runs did not record these
        del digits["parameters"][fixed]
    digits["command"] = "python examples/pytorch_digits/train.py --lr {lr} --epochs {epochs}"
    source = {"experiment": "autolog-lightning", "tracking_uri": autolog_uri}
    digits["warm_start"] = {"from": [{**source, "params": {"optimizer": "optimizer_name"}}]}
    # The Trainer's campaign, on the Trainer's own names and its eval_ metric.
    hf = _campaign(repo_root, "transformers-tiny", workdir=str(repo_root))
    hf["parameters"]["epochs"] = {"type": "int", "low": 1, "high": 3}
    hf["warm_start"] = {
        "from": [
            {
                "experiment": "autolog-hf",
                "tracking_uri": autolog_uri,
                "params": {
                    "batch_size": "per_device_train_batch_size",
                    "hidden": "hidden_size",
                    "epochs": "num_train_epochs",
                },
                "target": "eval_accuracy",
            }
        ]
    }
    expected = {"digits": "8 earlier run(s) imported", "hf": "2 earlier run(s) imported"}
    for name, config in (("digits", digits), ("hf", hf)):
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump(config))
        capsys.readouterr()
        assert tuner(["validate", str(path)]) == 0
        out = capsys.readouterr().out
        assert expected[name] in out, out
    # The third Trainer run's learning rate (1000) is outside the campaign's range.
    assert "learning_rate=1000 is outside" in out
