#!/usr/bin/env bash
# Installs the Debian packages schedstream needs and a fresh machine may lack: make, Java (the
# Kafka broker), Maven (its jars), python3-venv, PostgreSQL's server (the store tests) and Chromium
# (the simulation report test renders report.html headless).
# Does nothing when all are there; needs root (or sudo) only when something is missing.
set -euo pipefail

missing=()
command -v make >/dev/null || missing+=(make)
command -v java >/dev/null || missing+=(default-jre-headless)
command -v mvn >/dev/null || missing+=(maven)
python3 -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
command -v chromium >/dev/null || missing+=(chromium)
((${#missing[@]})) || exit 0

echo "installing Debian packages: ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
