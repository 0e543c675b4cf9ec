#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `make image`: build the OCI image localhost/sandboxd:latest from Debian packages, without any
# registry base image (CONTRACT §11).
#
#   deploy/image/build.sh [BUILD-DIR]      (default: build, the release build)
#
# 1. A base image, localhost/sandboxd-base:<hash>: mmdebstrap makes a Debian rootfs of this
#    host's release holding python3 with the packages the runtime uses in the jail, the shared
#    libraries sandboxd, sandboxd-server and libsbxcell.so load (found with ldd and dpkg -S),
#    tzdata and ca-certificates, and a user sandboxd (uid 10001); `podman import` turns it into
#    an image.
#    It is made again only when that package list, the mirror or this script change.
# 2. The image: `podman build` of deploy/image/Containerfile on that base, copying the build's
#    sandboxd, sandboxd-server, libsbxcell.so and runtime/. Skipped when the image already
#    carries the hash of exactly these inputs (label io.sandboxd.inputs).
# Environment: SANDBOXD_DEBIAN_MIRROR (default http://deb.debian.org), SANDBOXD_IMAGE (default
# localhost/sandboxd:latest).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-build}
[[ $BUILD == /* ]] || BUILD=$ROOT/$BUILD
IMAGE=${SANDBOXD_IMAGE:-localhost/sandboxd:latest}
MIRROR=${SANDBOXD_DEBIAN_MIRROR:-http://deb.debian.org}
BASE_REPO=localhost/sandboxd-base
say() { echo "image: $*"; }

for f in "$BUILD/sandboxd" "$BUILD/sandboxd-server" "$BUILD/libsbxcell.so"; do
  [[ -f $f ]] || { echo "image: $f is missing (make build)" >&2; exit 1; }
done
for tool in podman mmdebstrap; do
  command -v "$tool" >/dev/null || { echo "image: $tool is not installed (make deps)" >&2; exit 1; }
done

# ---- the base --------------------------------------------------------------------------------
. /etc/os-release
SUITE=${VERSION_CODENAME:?this host names no Debian release in /etc/os-release}
# The packages whose shared libraries the binaries load, as this host has them.
# One dpkg query for all: ldd names /lib/..., which merged-/usr packages list as /usr/lib/...
mapfile -t paths < <(ldd "$BUILD/sandboxd" "$BUILD/sandboxd-server" "$BUILD/libsbxcell.so" | awk '/=> \// {print $3}' | sort -u)
query=()
for lib in "${paths[@]}"; do query+=("$lib" "/usr$lib"); done
owners=$(dpkg -S "${query[@]}" 2>/dev/null || true)
for lib in "${paths[@]}"; do
  grep -q -e ": $lib\$" -e ": /usr$lib\$" <<<"$owners" || { echo "image: no package holds $lib" >&2; exit 1; }
done
mapfile -t libs < <(sed 's/: .*//; s/, /\n/g' <<<"$owners")
# The interpreter inside the jail and what the runtime imports there (scripts/deps.sh).
PACKAGES=(python3 python3-jinja2 python3-jsonschema python3-yaml tzdata ca-certificates
          $(printf '%s\n' "${libs[@]}" | sort -u))
SOURCES=("deb $MIRROR/debian $SUITE main" "deb $MIRROR/debian $SUITE-updates main"
         "deb $MIRROR/debian-security $SUITE-security main")
base_hash=$( (printf '%s\n' "${PACKAGES[@]}" "${SOURCES[@]}"; sed -n '/^# ---- the base/,/^# ---- the image/p' "$0") |
  sha256sum | cut -c1-16)
BASE=$BASE_REPO:$base_hash
if podman image exists "$BASE"; then
  say "base $BASE is up to date"
else
  say "making the base $BASE with mmdebstrap ($SUITE: ${#PACKAGES[@]} packages and their dependencies)"
  tmp=$(mktemp -d /tmp/sandboxd-image.XXXXXX)
  trap 'rm -rf "$tmp"' EXIT
  # The user sandboxd runs as, and its home (the state directory's parent), written directly:
  # no passwd package needed in the image.
  mmdebstrap --variant=essential --include="$(IFS=,; echo "${PACKAGES[*]}")" \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    --customize-hook='echo "sandboxd:x:10001:10001:sandboxd:/var/lib/sandboxd:/usr/sbin/nologin" >>"$1/etc/passwd"' \
    --customize-hook='echo "sandboxd:x:10001:" >>"$1/etc/group"' \
    --customize-hook='mkdir -p "$1/var/lib/sandboxd/state" && chown -R 10001:10001 "$1/var/lib/sandboxd" && chmod 700 "$1/var/lib/sandboxd"' \
    --customize-hook='rm -rf "$1/var/cache/apt" "$1/var/lib/apt/lists"; mkdir -p "$1/var/cache/apt" "$1/var/lib/apt/lists"' \
    "$SUITE" "$tmp/rootfs.tar" "${SOURCES[@]}" >"$tmp/mmdebstrap.log" 2>&1 ||
    { tail -20 "$tmp/mmdebstrap.log" >&2; echo "image: mmdebstrap failed" >&2; exit 1; }
  podman import --quiet "$tmp/rootfs.tar" "$BASE" >/dev/null
  rm -rf "$tmp"
  trap - EXIT
  # Older bases only take room.
  for old in $(podman images --format '{{.Repository}}:{{.Tag}}' --filter "reference=$BASE_REPO"); do
    [[ $old == "$BASE" ]] || podman rmi --force "$old" >/dev/null 2>&1 || true
  done
fi

# ---- the image -------------------------------------------------------------------------------
stage=$(mktemp -d /tmp/sandboxd-image.XXXXXX)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/usr/bin" "$stage/usr/lib/sandboxd" "$stage/usr/share/sandboxd"
install -m 755 "$BUILD/sandboxd" "$stage/usr/bin/sandboxd"
install -m 755 "$BUILD/sandboxd-server" "$stage/usr/bin/sandboxd-server"
install -m 644 "$BUILD/libsbxcell.so" "$stage/usr/lib/sandboxd/libsbxcell.so"
cp -r "$ROOT/runtime" "$stage/usr/share/sandboxd/runtime"
find "$stage" -name __pycache__ -prune -exec rm -rf {} +
chmod -R a+rX,go-w "$stage/usr"
cp "$ROOT/deploy/image/Containerfile" "$stage/Containerfile"
inputs=$( (echo "$BASE"; tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$stage" -cf - .) |
  sha256sum | cut -c1-32)
have=$(podman image inspect --format '{{index .Labels "io.sandboxd.inputs"}}' "$IMAGE" 2>/dev/null || true)
if [[ $have == "$inputs" ]]; then
  say "$IMAGE is up to date"
  exit 0
fi
say "building $IMAGE on $BASE"
old=$(podman image inspect --format '{{.Id}}' "$IMAGE" 2>/dev/null || true)
podman build --quiet --pull=never --build-arg "BASE=$BASE" --label "io.sandboxd.inputs=$inputs" \
  -f "$stage/Containerfile" -t "$IMAGE" "$stage" >/dev/null
# The image this one replaced only takes room (unless a container still uses it).
[[ -z $old || $old == $(podman image inspect --format '{{.Id}}' "$IMAGE") ]] ||
  podman rmi "$old" >/dev/null 2>&1 || true
say "built $IMAGE"
