"""What a MindSpore training records of its data.

Each dataset is described once per role (tags, the pipeline as JSON and as a picture), and
the first training batch is drawn as the network receives it (an image grid with labels, a
table of the other tensors, per-column statistics at step 0). A picture or a sample is never
worth a failed training: an error is noted in a tag instead.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from lineage import tags as T
from lineage.mindspore._dataset import DatasetInfo, describe_dataset
from lineage.mindspore._sample import DataSample, build_sample, network_outputs
from lineage.training import ArtifactFolder, noting_errors

__all__ = ["DataRecord"]


class DataRecord:
    """The data side of one training's recording into ``run``, writing through ``files``.

    ``fingerprint``: hash the dataset files; ``sample_count``: rows of the first batch to
    draw (0: none). ``from_dataset``: draw the sample from the training dataset even when a
    step hands its batch (in dataset sink mode a step's inputs are device placeholders).
    Not thread-safe: driven from the training loop's thread, like its recorder.
    """

    def __init__(
        self, run: Any, files: ArtifactFolder, *, fingerprint: bool, sample_count: int
    ) -> None:
        self.run = run
        self.files = files
        self.fingerprint = fingerprint
        self.sample_count = sample_count
        self.from_dataset = False
        self.sampled = False
        self._described: set[str] = set()
        self._train_dataset: Any = None
        self._train_info: DatasetInfo | None = None

    def described(self, role: str) -> bool:
        return role in self._described

    def set_train(self, dataset: Any, info: DatasetInfo) -> None:
        """The training dataset the sample is drawn from."""
        self._train_dataset, self._train_info = dataset, info

    def describe(self, dataset: Any, role: str) -> DatasetInfo:
        """``dataset`` described; the first time for a ``role``, its tags, pipeline JSON and
        picture recorded too."""
        info = describe_dataset(dataset, role, fingerprint=self.fingerprint)
        if role not in self._described:
            self._described.add(role)
            self.run.set_tags(info.tags())
            pipeline: dict[str, Any] = {"pipeline": info.pipeline}
            if info.pipeline_error:
                pipeline["serialize_error"] = info.pipeline_error
            self.files.log(self.run, f"dataset/{role}_pipeline.json", pipeline)
            self._graph(info)
        return info

    def _graph(self, info: DatasetInfo) -> None:
        if not info.pipeline:
            return
        with noting_errors(self.run, info.role, "graph_error"):
            from lineage.mindspore._pipeline_figure import save_pipeline_graph

            title = f"{info.role} data pipeline (sources on top; the last step feeds the network)"
            if info.pipeline_error:
                title += "\nnot serializable, operation names only: " + info.pipeline_error[:80]
            rel = f"dataset/{info.role}_pipeline.png"
            self.run.log_artifact(
                save_pipeline_graph(info.pipeline, self.files.path(rel), title=title), "dataset"
            )

    def log_sample(self, batch: Any, network: Any) -> None:
        """The first training batch as ``network`` receives it: from ``batch`` when it holds
        every column of the training dataset (and :attr:`from_dataset` is off), else from a
        fresh iterator over that dataset. Errors become a tag, never a failed training."""
        self.sampled = True
        ds = self._train_dataset
        with noting_errors(self.run, "train", "sample_error"):
            names = [str(n) for n in ds.get_col_names()] if ds is not None else []
            if (
                not self.from_dataset
                and isinstance(batch, list | tuple)
                and names
                and len(batch) == len(names)
            ):
                arrays = list(batch)
            elif ds is not None:
                it = ds.create_tuple_iterator(num_epochs=1, output_numpy=True)
                arrays = list(next(iter(it)))
            else:
                return
            sample = build_sample(
                "train",
                names or [f"column{i}" for i in range(len(arrays))],
                arrays,
                count=self.sample_count,
                pipeline=self._train_info.pipeline if self._train_info else None,
                classes=network_outputs(network),
            )
            self.run.set_tags(
                {T.data_tag("train", "columns"): json.dumps(sample.describe())[:4000]}
            )
            metrics = {k: v for k, v in sample.metrics().items() if np.isfinite(v)}
            if metrics:
                self.run.log_metrics(metrics, step=0)
            self._sample_files(sample)

    def _sample_files(self, sample: DataSample) -> None:
        from lineage.mindspore._sample_figures import (
            TableColumn,
            save_image_grid,
            save_sample_table,
        )

        n = sample.count
        doc: dict[str, Any] = {"rows": n, "columns": sample.describe(), "stats": {}}
        for c in sample.columns:
            doc["stats"][c.name] = c.stats
            if c.kind != "image":
                flat = c.rows.reshape(len(c.rows), -1)[:, :64]
                rows = flat[:, 0] if flat.shape[1] == 1 else flat
                doc["columns"][c.name]["first_rows"] = rows.tolist()
        self.files.log(self.run, "dataset/train_sample.json", doc)
        images, label = sample.images(), sample.label()
        if images is not None and images.layout:
            labels = None
            if label is not None:
                labels = [str(v) for v in label.rows.reshape(len(label.rows), -1)[:, 0]]
            how = f"{images.name} {images.shape} {images.dtype}"
            if images.range_source:
                how += f", from {images.range_source}"
            path = save_image_grid(
                images.rows,
                self.files.path("dataset/train_sample.png"),
                layout=images.layout,
                labels=labels,
                channel_ranges=images.channel_ranges,
                title=f"train: first {len(images.rows)} of the first batch as the network "
                f"receives it ({how}); {label.name if label else 'no label'} underneath",
            )
            self.run.log_artifact(path, "dataset")
        tabular = sample.tabular()
        if tabular:
            path = save_sample_table(
                [TableColumn(c.name, c.batch, len(c.rows)) for c in tabular],
                self.files.path("dataset/train_sample_table.png"),
                title="train: the first batch as the network receives it",
            )
            self.run.log_artifact(path, "dataset")
