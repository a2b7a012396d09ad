#!/usr/bin/env bash
# Builds etcd, kube-apiserver, kube-controller-manager and kube-scheduler at the versions
# go.mod pins, and Kueue's manager (kueue) at the version kueue/go.mod pins, into
# build/controlplane/bin (or the folder given): one `go build` per module. The binaries are
# also kept in a per-user cache keyed by both modules' go.mod and go.sum and the sources here,
# so a fresh clone of the same revision (CI) copies them instead of linking again; a warm
# build does nothing.
set -euo pipefail
command -v go >/dev/null || export PATH="$PATH:/usr/local/go/bin"  # the image's Go, if not on PATH
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here/../build/controlplane/bin}"
release="$(sed -n 's/^\tk8s.io\/kubernetes \(v[0-9.]*\).*$/\1/p' "$here/go.mod")"
kueue="$(sed -n 's/^\(require\)\{0,1\}[ \t]*sigs.k8s.io\/kueue \(v[0-9.]*\).*$/\2/p' "$here/kueue/go.mod")"
key="$(cat "$here/go.mod" "$here/go.sum" "$here/etcd/main.go" "$here/kueue/go.mod" \
  "$here/kueue/go.sum" "$here/build.sh" | sha256sum | cut -c1-16)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/berth/controlplane/$key"

if [ -f "$out/.key" ] && [ "$(cat "$out/.key")" = "$key" ]; then
  exit 0
fi
if [ ! -f "$cache/.complete" ]; then
  minor="$(echo "$release" | cut -d. -f2)"
  ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags="$ldflags -X $pkg.gitVersion=$release -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldflags="$ldflags -X $pkg.gitTreeState=clean"
  done
  echo "building the control plane (Kubernetes $release) into $cache"
  start=$(date +%s)
  rm -rf "$cache.tmp" && mkdir -p "$cache.tmp"
  (cd "$here" && go build -buildvcs=false -ldflags "$ldflags" -o "$cache.tmp/" \
    k8s.io/kubernetes/cmd/kube-apiserver \
    k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler \
    ./etcd)
  echo "control plane built in $(( $(date +%s) - start )) s; building Kueue $kueue"
  (cd "$here/kueue" && go build -buildvcs=false \
    -ldflags "-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion=$kueue" -o "$cache.tmp/" \
    sigs.k8s.io/kueue/cmd/kueue)
  touch "$cache.tmp/.complete"
  rm -rf "$cache" && mv "$cache.tmp" "$cache"
  echo "built in $(( $(date +%s) - start )) s"
fi
mkdir -p "$out"
for binary in etcd kube-apiserver kube-controller-manager kube-scheduler kueue; do
  ln -f "$cache/$binary" "$out/$binary" 2>/dev/null || cp -f "$cache/$binary" "$out/$binary"
done
echo "$key" > "$out/.key"
