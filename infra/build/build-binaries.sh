#!/usr/bin/env bash
# build-binaries.sh: builds the local control plane's binaries from Go modules, once.
#
# Why from source: this machine (and CI) reach the Go module proxy but no binary
# download site, so kube-apiserver, kube-controller-manager, kube-scheduler, etcd
# and kwok are compiled here and cached outside the repository, keyed by their
# versions and by this script's own hash (a change to the recipe rebuilds).
#
# Usage: build-binaries.sh            prints the binary directory on stdout
# Env:   AGENTBOX_BIN_CACHE           cache root (default ~/.cache/agentbox-functions)
set -euo pipefail

K8S_VERSION=v1.36.3
ETCD_VERSION=v3.6.16
KWOK_VERSION=v0.8.0

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LOG_TAG=build
# shellcheck source=go-build.sh
. "$here/go-build.sh"
cache_root=${AGENTBOX_BIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/agentbox-functions}
key="k8s-${K8S_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}_$(recipe_hash "${BASH_SOURCE[0]}" "$here/go-build.sh")"
bin_dir="$cache_root/bin/$key"
binaries=(kube-apiserver kube-controller-manager kube-scheduler etcd kwok)

if have_all; then
  echo "$bin_dir"
  exit 0
fi

command -v go >/dev/null || { log "the Go toolchain is needed to build the control plane (go not on PATH)"; exit 1; }
export GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0
mkdir -p "$cache_root/work" "$bin_dir.partial"
# One build at a time per cache: a second caller waits for the first.
exec 9>"$cache_root/build.lock"
flock 9
if have_all; then echo "$bin_dir"; exit 0; fi

work=$(mktemp -d "$cache_root/work/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
start=$(date +%s)

k8s_mod="$work/k8s"
kubernetes_module "$k8s_mod" "$K8S_VERSION" \
  k8s.io/kubernetes/cmd/kube-apiserver/app k8s.io/kubernetes/cmd/kube-controller-manager/app k8s.io/kubernetes/cmd/kube-scheduler/app
build_one kube-apiserver "$k8s_mod" k8s.io/kubernetes/cmd/kube-apiserver "$k8s_ldflags"
build_one kube-controller-manager "$k8s_mod" k8s.io/kubernetes/cmd/kube-controller-manager "$k8s_ldflags"
build_one kube-scheduler "$k8s_mod" k8s.io/kubernetes/cmd/kube-scheduler "$k8s_ldflags"

etcd_mod="$work/etcd"
new_module "$etcd_mod" go.etcd.io/etcd/server/v3 "$ETCD_VERSION"
( cd "$etcd_mod" && printf 'package tools\n\nimport _ "go.etcd.io/etcd/server/v3/etcdmain"\n' > tools.go && go mod tidy >/dev/null 2>&1 || true )
build_one etcd "$etcd_mod" go.etcd.io/etcd/server/v3

kwok_mod="$work/kwok"
new_module "$kwok_mod" sigs.k8s.io/kwok "$KWOK_VERSION"
( cd "$kwok_mod" && printf 'package tools\n\nimport _ "sigs.k8s.io/kwok/pkg/kwok/cmd"\n' > tools.go && go mod tidy >/dev/null 2>&1 || true )
build_one kwok "$kwok_mod" sigs.k8s.io/kwok/cmd/kwok "-X sigs.k8s.io/kwok/pkg/consts.Version=$KWOK_VERSION"

rm -rf "$bin_dir"
mv "$bin_dir.partial" "$bin_dir"
log "all binaries built in $(( $(date +%s) - start ))s into $bin_dir"
echo "$bin_dir"
