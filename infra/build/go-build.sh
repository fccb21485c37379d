# go-build.sh: the helpers build-binaries.sh and build-node-binaries.sh share (sourced, not run).
# Callers set: bin_dir, binaries (array), start (epoch seconds), LOG_TAG.

log() { printf '[%s %s] %s\n' "$LOG_TAG" "$(date +%H:%M:%S)" "$*" >&2; }

# have_all: every binary of the recipe is in bin_dir.
have_all() {
  local b
  for b in "${binaries[@]}"; do [ -x "$bin_dir/$b" ] || return 1; done
}

# recipe_hash FILE...: the first 12 hex digits of the hash of the recipe's files (a change rebuilds).
recipe_hash() { cat "$@" | sha256sum | cut -c1-12; }

# build_one NAME MODDIR PACKAGE [LDFLAGS] [TAGS]: go build into bin_dir.partial with a heartbeat on stderr.
build_one() {
  local name=$1 moddir=$2 pkg=$3 ldflags=${4:-} tags=${5:-}
  if [ -x "$bin_dir.partial/$name" ]; then log "$name: already built"; return; fi
  local t0; t0=$(date +%s)
  log "$name: building $pkg"
  ( cd "$moddir" && go build -trimpath -tags "$tags" -ldflags "-s -w $ldflags" -o "$bin_dir.partial/$name.tmp" "$pkg" ) &
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

# kubernetes_module DIR VERSION IMPORTS...: a module requiring k8s.io/kubernetes@VERSION whose
# staging modules are pinned to their published v0.X.Y tags (its go.mod replaces each with
# ./staging/..., and a dependency's replace directives are ignored), importing IMPORTS so that
# `go mod tidy` resolves what they need. Sets k8s_ldflags (the version stamped into binaries).
kubernetes_module() {
  local dir=$1 version=$2; shift 2
  new_module "$dir" k8s.io/kubernetes "$version"
  log "kubernetes: resolving modules"
  local gomod staging_version staging m imports=""
  gomod=$(cd "$dir" && go mod download -json "k8s.io/kubernetes@$version" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  staging_version="v0.${version#v1.}"
  staging=$(sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/src/.*#\1#p' "$gomod")
  [ -n "$staging" ] || { log "found no staging replaces in $gomod"; exit 1; }
  for m in $staging; do
    ( cd "$dir" && go mod edit -replace="$m=$m@$staging_version" )
  done
  log "kubernetes: pinned $(wc -w <<<"$staging") staging modules to $staging_version"
  for m in "$@"; do imports+="\t_ \"$m\"\n"; done
  ( cd "$dir" && printf "package tools\n\nimport (\n$imports)\n" > tools.go && go mod tidy >/dev/null 2>&1 || go mod download )
  local minor=${version#v1.}; minor=${minor%%.*}
  k8s_ldflags="-X k8s.io/component-base/version.gitVersion=$version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
}
