#!/usr/bin/env bash
# Installs the Debian packages schedstream needs and a fresh machine may lack: make, Java (the
# Kafka broker), Maven (its jars), python3-venv, PostgreSQL's server (the store tests) and Chromium
# (the simulation report test renders report.html headless), OpenSSL (the local API server's
# certificates). Go >= 1.24 (to build etcd, kube-apiserver, kubectl and kwok) is checked, not
# installed: Debian 12 ships 1.19; get it from go.dev (docs/live-cluster.md).
# Does nothing when all are there; needs root (or sudo) only when something is missing.
set -euo pipefail

missing=()
command -v make >/dev/null || missing+=(make)
command -v java >/dev/null || missing+=(default-jre-headless)
command -v mvn >/dev/null || missing+=(maven)
python3 -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
command -v chromium >/dev/null || missing+=(chromium)
command -v openssl >/dev/null || missing+=(openssl)
if [ -z "${SCHEDSTREAM_KUBECONFIG:-}" ] && ! go version 2>/dev/null | grep -Eq 'go1\.(2[4-9]|[3-9][0-9])'; then
  echo "warning: Go >= 1.24 is needed to build the local Kubernetes API server (found: $(go version 2>&1))" >&2
fi
((${#missing[@]})) || exit 0

echo "installing Debian packages: ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
