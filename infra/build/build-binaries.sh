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
recipe_hash=$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-12)
cache_root=${AGENTBOX_BIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/agentbox-functions}
key="k8s-${K8S_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}_${recipe_hash}"
bin_dir="$cache_root/bin/$key"
binaries=(kube-apiserver kube-controller-manager kube-scheduler etcd kwok)

log() { printf '[build %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

have_all() {
  local b
  for b in "${binaries[@]}"; do [ -x "$bin_dir/$b" ] || return 1; done
}

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

# build_one NAME MODDIR PACKAGE [LDFLAGS]: go build with a heartbeat on stderr.
build_one() {
  local name=$1 moddir=$2 pkg=$3 ldflags=${4:-}
  if [ -x "$bin_dir.partial/$name" ]; then log "$name: already built"; return; fi
  local t0; t0=$(date +%s)
  log "$name: building $pkg"
  ( cd "$moddir" && go build -trimpath -ldflags "-s -w $ldflags" -o "$bin_dir.partial/$name.tmp" "$pkg" ) &
  local pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 15 & wait $! || true
    kill -0 "$pid" 2>/dev/null && log "$name: still building ($(( $(date +%s) - t0 ))s, total $(( $(date +%s) - start ))s)"
  done
  wait "$pid"
  mv "$bin_dir.partial/$name.tmp" "$bin_dir.partial/$name"
  log "$name: done in $(( $(date +%s) - t0 ))s"
}

# new_module DIR MODULE VERSION: a throwaway main module that requires MODULE@VERSION.
new_module() {
  local dir=$1 mod=$2 ver=$3
  mkdir -p "$dir"
  ( cd "$dir" && go mod init agentbox.local/build >/dev/null 2>&1 && go mod edit -require="$mod@$ver" )
}

# Kubernetes: its go.mod replaces every k8s.io staging module with ./staging/...,
# and replace directives of a dependency are ignored, so pin each one to the
# matching published v0.X.Y tag. The list is read from Kubernetes's own go.mod.
k8s_mod="$work/k8s"
new_module "$k8s_mod" k8s.io/kubernetes "$K8S_VERSION"
log "kubernetes: resolving modules"
k8s_gomod=$(cd "$k8s_mod" && go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
staging_version="v0.${K8S_VERSION#v1.}"
staging=$(sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/src/.*#\1#p' "$k8s_gomod")
[ -n "$staging" ] || { log "found no staging replaces in $k8s_gomod"; exit 1; }
for m in $staging; do
  ( cd "$k8s_mod" && go mod edit -replace="$m=$m@$staging_version" )
done
log "kubernetes: pinned $(wc -w <<<"$staging") staging modules to $staging_version"
( cd "$k8s_mod" && printf 'package tools\n\nimport (\n\t_ "k8s.io/kubernetes/cmd/kube-apiserver/app"\n\t_ "k8s.io/kubernetes/cmd/kube-controller-manager/app"\n\t_ "k8s.io/kubernetes/cmd/kube-scheduler/app"\n)\n' > tools.go && go mod tidy >/dev/null 2>&1 || go mod download )
minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
k8s_ldflags="-X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
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
