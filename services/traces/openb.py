"""Importer for the Alibaba GPU cluster trace v2023 ("openb"), Weng et al., ATC'23 (FGD):
github.com/alibaba/clusterdata, ``cluster-trace-gpu-v2023/csv/`` (``openb_pod_list_*.csv``
and ``openb_node_list_all_node.csv``).

Every pod becomes a single-task job submitted at ``creation_time`` that runs
``deletion_time - scheduled_time`` seconds. Pods never scheduled (``Pending``, empty
``scheduled_time``) are kept, with duration None: demand the cluster never served, whose
run time is unknown. GPU sharing: a pod with ``num_gpu == 1`` and ``gpu_milli < 1000`` uses
a fraction of one GPU; with ``gpu_sharing="milli"`` (default) every node offers the extended
resource ``alibaba.com/gpu-milli`` (1000 per GPU), whole-GPU pods ask for it beside
``nvidia.com/gpu`` and shared pods ask for it alone, so the total GPU capacity is never
exceeded (per-GPU packing is relaxed to the node's sum); with ``"round-up"`` a shared pod
takes one whole GPU. The node's GPU model becomes the label ``alibaba.com/gpu-model`` and
``gpu_spec`` (allowed models, ``|``-separated) a node affinity on it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from services.traces.model import Job, Node, Trace, milli_quantity
from services.traces.tabular import Row, csv_rows

GPU = "nvidia.com/gpu"
GPU_MILLI = "alibaba.com/gpu-milli"
GPU_MODEL_LABEL = "alibaba.com/gpu-model"
QOS_LABEL = "alibaba.com/qos"
PHASE_LABEL = "alibaba.com/pod-phase"
WHOLE_GPU = 1000
GpuSharing = Literal["milli", "round-up"]

POD_COLUMNS = (
    "name",
    "cpu_milli",
    "memory_mib",
    "num_gpu",
    "gpu_milli",
    "gpu_spec",
    "qos",
    "pod_phase",
    "creation_time",
    "deletion_time",
    "scheduled_time",
)
NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")


def _gpu_requests(gpus: int, milli: int, sharing: GpuSharing) -> dict[str, str]:
    if gpus == 0:
        return {}
    if sharing == "round-up":
        return {GPU: str(gpus)}
    if gpus == 1 and milli < WHOLE_GPU:  # a shared GPU
        return {GPU_MILLI: str(milli)}
    return {GPU: str(gpus), GPU_MILLI: str(gpus * WHOLE_GPU)}


def _job(row: Row, sharing: GpuSharing) -> Job:
    requests = {"cpu": milli_quantity(row.convert("cpu_milli", int))}
    memory = row.convert("memory_mib", int)
    if memory:
        requests["memory"] = f"{memory}Mi"
    requests.update(_gpu_requests(row.convert("num_gpu", int), row.convert("gpu_milli", int), sharing))
    scheduled = row.optional("scheduled_time", int)
    deleted = row.optional("deletion_time", int)
    spec = row.text("gpu_spec")
    with row.context():
        return Job(
            id=row.text("name"),
            submit=row.convert("creation_time", int),
            duration=None if scheduled is None or deleted is None else deleted - scheduled,
            requests=requests,
            node_affinity={GPU_MODEL_LABEL: tuple(spec.split("|"))} if spec else {},
            labels={QOS_LABEL: row.text("qos"), PHASE_LABEL: row.text("pod_phase")},
        )


def _node(row: Row, sharing: GpuSharing) -> Node:
    allocatable = {
        "cpu": milli_quantity(row.convert("cpu_milli", int)),
        "memory": f"{row.convert('memory_mib', int)}Mi",
    }
    gpus = row.convert("gpu", int)
    if gpus:
        allocatable[GPU] = str(gpus)
        if sharing == "milli":
            allocatable[GPU_MILLI] = str(gpus * WHOLE_GPU)
    model = row.text("model")
    with row.context():
        return Node(row.text("sn"), allocatable, {GPU_MODEL_LABEL: model} if model else {})


def read_openb(pods_path: Path, nodes_path: Path | None = None, *, gpu_sharing: GpuSharing = "milli") -> Trace:
    """The pods of ``pods_path`` as jobs, on the nodes of ``nodes_path`` if given."""
    jobs = tuple(_job(row, gpu_sharing) for row in csv_rows(pods_path, POD_COLUMNS))
    nodes = () if nodes_path is None else tuple(_node(row, gpu_sharing) for row in csv_rows(nodes_path, NODE_COLUMNS))
    return Trace(jobs, nodes)
