"""The Helm chart (deploy/helm/schedstream), rendered by `helm template` and checked by
kubeconform -strict against the Kubernetes API's schemas (both tools built from their Go
modules by ops/go_tools.py), then read: probes on /readyz, the metrics port, RBAC for the verbs
watch and apply use, settings from the Secret, and a scheduler config the worker accepts."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from domain.scheduler.config import from_mapping
from ops import go_tools
from services.config import Settings
from tests.conftest import IN_CI

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "deploy" / "helm" / "schedstream"


@pytest.fixture(scope="module")
def tools() -> dict[str, Path]:
    try:
        return {
            "helm": go_tools.tool("helm"),
            "kubeconform": go_tools.tool("kubeconform"),
            "schemas": go_tools.kube_schemas(),
        }
    except go_tools.GoToolError as exc:
        if IN_CI:
            pytest.fail(f"{exc} (CI=true: the chart must be checked)", pytrace=False)
        pytest.skip(str(exc))


@dataclass(frozen=True)
class Case:
    name: str
    values: dict[str, Any] = field(default_factory=dict)
    want_components: tuple[str, ...] = ("worker", "watch", "apply")
    want_secret: bool = True


CASES = [
    Case("defaults"),
    Case(
        "sasl over tls with an existing secret and probes on watch and apply",
        {
            "kafka": {
                "security": {
                    "protocol": "SASL_SSL",
                    "saslMechanism": "SCRAM-SHA-512",
                    "tlsSecret": "kafka-ca",
                    "mutualTls": True,
                }
            },
            "secrets": {"create": False, "existingSecret": "schedstream-prod"},
            "watch": {"metricsPort": 9091},
            "apply": {"metricsPort": 9092, "dryRun": True},
            "worker": {"replicas": 3},
        },
        want_secret=False,
    ),
    Case("worker alone", {"watch": {"enabled": False}, "apply": {"enabled": False}}, ("worker",)),
]


def render(tools: dict[str, Path], values: dict[str, Any], tmp_path: Path) -> str:
    values_file = tmp_path / "values.yaml"
    values_file.write_text(yaml.safe_dump(values))
    env = {**os.environ, **{f"HELM_{d}_HOME": str(tmp_path / d.lower()) for d in ("CACHE", "CONFIG", "DATA")}}
    return subprocess.run(
        [str(tools["helm"]), "template", "sched", str(CHART), "--namespace", "batch", "-f", str(values_file)],
        capture_output=True, text=True, check=True, env=env,
    ).stdout  # fmt: skip


def documents(rendered: str) -> dict[tuple[str, str], dict[str, Any]]:
    docs = [d for d in yaml.safe_load_all(rendered) if d]
    return {(d["kind"], d["metadata"]["name"]): d for d in docs}


def container(docs: dict[tuple[str, str], dict[str, Any]], component: str) -> dict[str, Any]:
    return docs[("Deployment", f"sched-{component}")]["spec"]["template"]["spec"]["containers"][0]


class _Reads(dict[str, str]):
    """An empty environment that remembers which variables were asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: set[str] = set()

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        self.asked.add(key)
        return default


def settings_variables() -> set[str]:
    env = _Reads()
    Settings.from_env(env)
    return env.asked


def rules(docs: dict[tuple[str, str], dict[str, Any]], role: str) -> Iterator[tuple[str, str, str]]:
    for rule in docs[("ClusterRole", role)]["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                for verb in rule["verbs"]:
                    yield group, resource, verb


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_chart_renders_valid_manifests(tools: dict[str, Path], tmp_path: Path, case: Case) -> None:
    rendered = render(tools, case.values, tmp_path)
    manifests = tmp_path / "rendered.yaml"
    manifests.write_text(rendered)
    location = f"{tools['schemas']}/{{{{ .ResourceKind }}}}{{{{ .KindSuffix }}}}.json"
    checked = subprocess.run(
        [str(tools["kubeconform"]), "-strict", "-summary", "-schema-location", location, str(manifests)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "Invalid: 0, Errors: 0, Skipped: 0" in checked.stdout

    docs = documents(rendered)
    deployments = sorted(name.removeprefix("sched-") for kind, name in docs if kind == "Deployment")
    assert deployments == sorted(case.want_components)
    assert (("Secret", "sched") in docs) == case.want_secret
    config = yaml.safe_load(docs[("ConfigMap", "sched")]["data"]["scheduler.yaml"])
    from_mapping(config)  # the worker accepts it (raises ConfigError otherwise)

    known = settings_variables()
    for component in case.want_components:
        spec = container(docs, component)
        names = {env["name"] for env in spec["env"]}
        assert names <= known, f"{component}: {sorted(names - known)} are read by nothing"
        secret_refs = {e["valueFrom"]["secretKeyRef"]["name"] for e in spec["env"] if "valueFrom" in e}
        assert secret_refs == {"sched" if case.want_secret else "schedstream-prod"}
        assert spec["securityContext"]["runAsNonRoot"] is True


def test_the_worker_is_probed_on_readyz_and_serves_its_metrics_port(tools: dict[str, Path], tmp_path: Path) -> None:
    docs = documents(render(tools, {}, tmp_path))
    worker = container(docs, "worker")
    assert worker["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}
    assert worker["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert worker["ports"] == [{"name": "metrics", "containerPort": 9090}]
    env = {e["name"]: e.get("value") for e in worker["env"]}
    assert env["SCHEDSTREAM_METRICS_ADDR"] == "0.0.0.0:9090"
    assert env["SCHEDSTREAM_LOG_FORMAT"] == "json"
    assert worker["args"] == ["worker", "--config", "/etc/schedstream/scheduler.yaml"]
    assert docs[("Service", "sched-worker")]["spec"]["ports"][0]["port"] == 9090
    assert "readinessProbe" not in container(docs, "watch")  # watch serves no probes unless given a port


def test_rbac_gives_watch_its_reads_and_apply_its_writes(tools: dict[str, Path], tmp_path: Path) -> None:
    docs = documents(render(tools, {}, tmp_path))
    watch = set(rules(docs, "sched-watch"))
    for group, resource in [("", "nodes"), ("", "pods"), ("", "namespaces"), ("scheduling.k8s.io", "priorityclasses"),
                            ("scheduling.volcano.sh", "podgroups"), ("scheduling.volcano.sh", "queues"),
                            ("batch.volcano.sh", "jobs"), ("topology.volcano.sh", "hypernodes"),
                            ("kueue.x-k8s.io", "workloads"), ("kueue.x-k8s.io", "clusterqueues"),
                            ("kueue.x-k8s.io", "localqueues"), ("kueue.x-k8s.io", "resourceflavors")]:  # fmt: skip
        assert {(group, resource, "list"), (group, resource, "watch")} <= watch, resource
    assert not {verb for _, _, verb in watch} - {"get", "list", "watch"}  # the watch writes nothing

    apply = set(rules(docs, "sched-apply"))
    assert {("", "pods/binding", "create"), ("", "pods/eviction", "create"), ("", "events", "create")} <= apply
    for group, status in [("scheduling.volcano.sh", "podgroups/status"), ("scheduling.volcano.sh", "queues/status"),
                          ("kueue.x-k8s.io", "workloads/status"), ("batch.volcano.sh", "jobs/status")]:  # fmt: skip
        assert {(group, status, "patch"), (group, status, "update")} <= apply, status
    assert not any(verb in ("delete", "deletecollection", "*") for _, _, verb in apply)
    binding = docs[("ClusterRoleBinding", "sched-apply")]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "sched-apply", "namespace": "batch"}]
