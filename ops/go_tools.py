"""Go tools the deployment tests use, built from their Go modules at pinned versions with the
machine's Go into .local/tools/ (ignored by git), plus the Kubernetes API's JSON schemas for
kubeconform, made from the OpenAPI document of the pinned k8s.io/kubernetes module (the one the
local API server is built from), so the schema check needs no network beyond the Go proxy.

    python -m ops.go_tools            # build what is missing; prints each tool's path
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
TOOLS_DIR = REPO_ROOT / ".local" / "tools"
TOOLS = {
    "helm": ("helm.sh/helm/v3/cmd/helm", "v3.19.0"),
    "kubeconform": ("github.com/yannh/kubeconform/cmd/kubeconform", "v0.7.0"),
}
KUBERNETES = ("k8s.io/kubernetes", "v1.33.13")
# Kinds the chart renders, and what kubeconform looks them up by.
SCHEMA_KINDS = (
    "ConfigMap", "Secret", "Service", "ServiceAccount", "Deployment", "Job",
    "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
)  # fmt: skip


class GoToolError(RuntimeError):
    pass


def _go() -> str:
    go = shutil.which("go") or ("/usr/local/go/bin/go" if Path("/usr/local/go/bin/go").is_file() else None)
    if go is None:
        raise GoToolError("Go is not installed (ops/install-deps.sh installs it)")
    return go


def tool(name: str) -> Path:
    """The tool's binary, built first if this version is not there yet."""
    package, version = TOOLS[name]
    home = TOOLS_DIR / f"{name}@{version}"
    binary = home / name
    if binary.is_file():
        return binary
    home.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "GOBIN": str(home), "GOFLAGS": "-mod=mod", "CGO_ENABLED": "0"}
    built = subprocess.run(
        [_go(), "install", f"{package}@{version}"], env=env, capture_output=True, text=True, check=False
    )
    if built.returncode != 0 or not binary.is_file():
        raise GoToolError(f"building {package}@{version} failed:\n{built.stderr[-3000:]}")
    return binary


def _module_dir(module: str, version: str) -> Path:
    found = subprocess.run(
        [_go(), "mod", "download", "-json", f"{module}@{version}"],
        capture_output=True,
        text=True,
        check=False,
        cwd=TOOLS_DIR,
        env={**os.environ, "GOFLAGS": "-mod=mod"},
    )
    if found.returncode != 0:
        raise GoToolError(f"downloading {module}@{version} failed:\n{found.stderr[-3000:]}")
    return Path(json.loads(found.stdout)["Dir"])


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            yield ref.rsplit("/", 1)[-1]
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def _strict(definition: dict[str, Any]) -> dict[str, Any]:
    """As openapi2jsonschema --strict does: no unknown field in an object with known fields."""
    out = json.loads(json.dumps(definition))
    stack = [out]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if "properties" in node and "additionalProperties" not in node:
                node["additionalProperties"] = False
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return out


# Both are written as strings or numbers in manifests (ports, quantities).
_STRING_OR_NUMBER = {"oneOf": [{"type": "string"}, {"type": "number"}]}
_LOOSE = ("io.k8s.apimachinery.pkg.util.intstr.IntOrString", "io.k8s.apimachinery.pkg.api.resource.Quantity")


def kube_schemas() -> Path:
    """kubeconform's schema directory for SCHEMA_KINDS (``{kind}{-group}-{version}.json``)."""
    module, version = KUBERNETES
    out = TOOLS_DIR / f"kube-schemas@{version}"
    if (out / ".complete").is_file():
        return out
    TOOLS_DIR.mkdir(parents=True, exist_ok=True)
    swagger = json.loads((_module_dir(module, version) / "api" / "openapi-spec" / "swagger.json").read_text())
    definitions = {name: _strict(d) for name, d in swagger["definitions"].items()}
    for name in _LOOSE:
        definitions[name] = _STRING_OR_NUMBER
    out.mkdir(parents=True, exist_ok=True)
    for name, definition in swagger["definitions"].items():
        for gvk in definition.get("x-kubernetes-group-version-kind", []):
            if gvk["kind"] not in SCHEMA_KINDS or not name.startswith("io.k8s.api."):
                continue
            needed, todo = set(), [name]
            while todo:
                current = todo.pop()
                if current not in needed:
                    needed.add(current)
                    todo.extend(_refs(definitions[current]))
            group = gvk["group"].split(".")[0]
            suffix = f"-{group}-{gvk['version']}" if group else f"-{gvk['version']}"
            schema = {"$ref": f"#/definitions/{name}", "definitions": {n: definitions[n] for n in sorted(needed)}}
            (out / f"{gvk['kind'].lower()}{suffix}.json").write_text(json.dumps(schema))
    (out / ".complete").write_text(version + "\n")
    return out


def main() -> int:
    try:
        for name in TOOLS:
            print(f"{name}: {tool(name)}")
        print(f"kube schemas: {kube_schemas()}")
    except GoToolError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
