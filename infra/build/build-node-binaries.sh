#!/usr/bin/env bash
# build-node-binaries.sh: builds the real node's binaries from Go modules, once.
#
# kubelet comes from k8s.io/kubernetes pinned exactly as build-binaries.sh pins the control plane
# (the same version, so node and apiserver agree), containerd 2.x (with its runc shim and ctr)
# from github.com/containerd/containerd/v2: Debian ships containerd 1.6, and kubelet 1.36 needs
# the CRI of containerd 2.x. runc, the CNI plugins and the registry come from Debian (setup-node.sh).
# Cached outside the repository, keyed by versions and this script's hash, like the control plane.
#
# Usage: build-node-binaries.sh       prints the binary directory on stdout
# Env:   AGENTBOX_BIN_CACHE           cache root (default ~/.cache/agentbox-functions)
set -euo pipefail

K8S_VERSION=v1.36.3
CONTAINERD_VERSION=v2.4.2

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LOG_TAG=build-node
# shellcheck source=go-build.sh
. "$here/go-build.sh"
cache_root=${AGENTBOX_BIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/agentbox-functions}
key="node_k8s-${K8S_VERSION}_containerd-${CONTAINERD_VERSION}_$(recipe_hash "${BASH_SOURCE[0]}" "$here/go-build.sh")"
bin_dir="$cache_root/bin/$key"
binaries=(kubelet containerd containerd-shim-runc-v2 ctr)

if have_all; then
  echo "$bin_dir"
  exit 0
fi

command -v go >/dev/null || { log "the Go toolchain is needed to build the real node (go not on PATH)"; exit 1; }
export GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0
mkdir -p "$cache_root/work" "$bin_dir.partial"
exec 9>"$cache_root/build-node.lock"
flock 9
if have_all; then echo "$bin_dir"; exit 0; fi

work=$(mktemp -d "$cache_root/work/build-node.XXXXXX")
trap 'rm -rf "$work"' EXIT
start=$(date +%s)

# kubelet: the same Kubernetes version as the control plane, pinned the same way.
k8s_mod="$work/k8s"
kubernetes_module "$k8s_mod" "$K8S_VERSION" k8s.io/kubernetes/cmd/kubelet/app
build_one kubelet "$k8s_mod" k8s.io/kubernetes/cmd/kubelet "$k8s_ldflags"

# containerd: no btrfs, devmapper or zfs snapshotters (they need cgo and libraries; overlayfs serves).
ctd_mod="$work/containerd"
new_module "$ctd_mod" github.com/containerd/containerd/v2 "$CONTAINERD_VERSION"
( cd "$ctd_mod" && printf 'package tools\n\nimport (\n\t_ "github.com/containerd/containerd/v2/cmd/containerd"\n\t_ "github.com/containerd/containerd/v2/cmd/ctr"\n\t_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"\n)\n' > tools.go && go mod tidy >/dev/null 2>&1 || go mod download )
ctd_ldflags="-X github.com/containerd/containerd/v2/version.Version=$CONTAINERD_VERSION"
ctd_tags="no_btrfs no_devmapper no_zfs"
build_one containerd "$ctd_mod" github.com/containerd/containerd/v2/cmd/containerd "$ctd_ldflags" "$ctd_tags"
build_one containerd-shim-runc-v2 "$ctd_mod" github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 "$ctd_ldflags" "$ctd_tags"
build_one ctr "$ctd_mod" github.com/containerd/containerd/v2/cmd/ctr "$ctd_ldflags" "$ctd_tags"

rm -rf "$bin_dir"
mv "$bin_dir.partial" "$bin_dir"
log "node binaries built in $(( $(date +%s) - start ))s into $bin_dir"
echo "$bin_dir"
