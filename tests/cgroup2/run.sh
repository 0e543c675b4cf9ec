#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A real cgroup v2 run. Boots a small Debian 12 VM (KVM) whose only cgroup hierarchy is the
# unified v2 one, as on Debian 12, Ubuntu 22.04+, RHEL 9 and Kubernetes nodes, and runs
# sandboxd there as root: started from a cgroup it shares with other processes (the case
# where the kernel answers EBUSY until every process is moved into a leaf), and with
# --cgroup-root given a delegated subtree; then the memory-bomb, fork-bomb and OOM-verdict
# attacks. The guest side is tests/cgroup2/guest.sh and test_cgroup2.py.
#
# The image (rootfs by mmdebstrap, Debian's kernel and initramfs) is built once and cached
# under .cache/cgroup2/ (git-ignored); the worktree (with build/) reaches the guest
# read-only over 9p, so a rebuilt sandboxd needs no new image.
#
#   tests/cgroup2/run.sh [RESULTS_DIR]   junit xml files go there when given
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
CACHE=${SANDBOXD_CG2_CACHE:-$ROOT/.cache/cgroup2}
RESULTS=${1:-}
PACKAGES=(
  linux-image-amd64 initramfs-tools kmod mount
  # what sandboxd links, and the interpreter it jails
  libmicrohttpd12 libcurl4 libjansson4 libseccomp2 libyaml-0-2 libsodium23 libhttp-parser2.9 libpq5
  python3
  # the tests
  python3-pytest iproute2 procps
)
HOST_PACKAGES=(qemu-system-x86 mmdebstrap e2fsprogs)

log() { echo "cgroup2: $*" >&2; }

install_host_packages() {
  local missing=() p
  for p in "${HOST_PACKAGES[@]}"; do
    [[ $(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) == "install ok installed" ]] || missing+=("$p")
  done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q --no-install-recommends "${missing[@]}" ||
    { apt-get update -q && apt-get install -y -q --no-install-recommends "${missing[@]}"; }
}

# KVM when it can run Debian's kernel; else TCG (emulation: slower, the same kernel). A host
# whose KVM is PVM (kvm_pvm: nested virtualisation without VMX, as on some cloud sandboxes)
# runs only PVM-enabled guest kernels, which Debian does not ship.
choose_accel() {
  if [[ -n ${SANDBOXD_CG2_ACCEL:-} ]]; then
    ACCEL=$SANDBOXD_CG2_ACCEL
  elif [[ -w /dev/kvm && ! -d /sys/module/kvm_pvm ]]; then
    ACCEL=kvm
  else
    ACCEL=tcg
  fi
  case $ACCEL in
    kvm) ACCEL_ARGS=(-accel kvm -cpu host) ;;
    tcg) ACCEL_ARGS=(-accel tcg,thread=multi -cpu max) ;;
    *) log "SANDBOXD_CG2_ACCEL must be kvm or tcg"; exit 2 ;;
  esac
  log "accelerator: $ACCEL"
}

# The guest's own init: mount what the test needs from the host over 9p and hand over to
# guest.sh from the worktree (so changing the test needs no new image).
GUEST_INIT='#!/bin/sh
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
mountpoint -q /proc || mount -t proc proc /proc
mountpoint -q /sys || mount -t sysfs sysfs /sys
mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev
modprobe 9pnet_virtio && modprobe 9p
mkdir -p /src /out
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,ro src /src &&
  mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 out /out &&
  exec /bin/bash /src/tests/cgroup2/guest.sh
echo "cgroup2 guest: cannot mount the 9p shares" >&2
echo o >/proc/sysrq-trigger'

build_image() {
  local tmp=$CACHE/tmp
  rm -rf "$tmp"
  mkdir -p "$tmp"
  log "building the Debian 12 image (once; cached in $IMAGE)"
  local init_b64
  init_b64=$(printf '%s\n' "$GUEST_INIT" | base64 -w0)
  mmdebstrap --quiet --variant=apt --include="$(IFS=,; echo "${PACKAGES[*]}")" \
    --customize-hook="echo $init_b64 | base64 -d >\"\$1/usr/local/sbin/sandboxd-cg2-init\"" \
    --customize-hook='chmod 755 "$1/usr/local/sbin/sandboxd-cg2-init"' \
    --customize-hook='printf "virtio_pci\nvirtio_blk\next4\n9pnet_virtio\n9p\n" >>"$1/etc/initramfs-tools/modules"' \
    --customize-hook='chroot "$1" update-initramfs -u -k all' \
    --customize-hook='echo sandboxd-cg2 >"$1/etc/hostname"' \
    --customize-hook='echo "127.0.0.1 localhost" >"$1/etc/hosts"' \
    bookworm "$tmp/rootfs" http://deb.debian.org/debian
  cp "$(ls "$tmp"/rootfs/boot/vmlinuz-* | sort -V | tail -1)" "$tmp/vmlinuz"
  cp "$(ls "$tmp"/rootfs/boot/initrd.img-* | sort -V | tail -1)" "$tmp/initrd.img"
  chmod 644 "$tmp/vmlinuz" "$tmp/initrd.img"
  mke2fs -q -t ext4 -L root -d "$tmp/rootfs" "$tmp/root.img" 2G
  rm -rf "$tmp/rootfs"
  rm -rf "$IMAGE"
  mv "$tmp" "$IMAGE"
  # Images of older recipes only take space.
  find "$CACHE" -mindepth 1 -maxdepth 1 -type d ! -path "$IMAGE" -exec rm -rf {} +
}

# The image is named by its recipe: a change to the packages, the guest's init or the build
# makes a new one.
IMAGE=$CACHE/$(printf '%s\n' "${PACKAGES[*]}" "$GUEST_INIT" "$(declare -f build_image)" |
  sha256sum | cut -c1-16)

# mmdebstrap's root mode, a root-owned image and the tests (sandboxd as root) need root.
[[ $(id -u) -eq 0 ]] || { log "run as root (it builds a root filesystem and runs sandboxd as root)"; exit 1; }
install_host_packages
choose_accel
[[ -x build/sandboxd && -f build/libsbxcell.so ]] || make build >/dev/null
[[ -f $IMAGE/root.img ]] || build_image

OUT=$(mktemp -d /tmp/sandboxd-cg2-out.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
chmod 777 "$OUT"
log "booting the VM (output: $OUT/console.log)"
start=$(date +%s)
rc=0
timeout 1800 qemu-system-x86_64 "${ACCEL_ARGS[@]}" -smp 2 -m 2048 \
  -display none -monitor none -serial stdio -no-reboot \
  -kernel "$IMAGE/vmlinuz" -initrd "$IMAGE/initrd.img" \
  -append "root=/dev/vda rw console=ttyS0 panic=-1 quiet loglevel=3 cgroup_no_v1=all init=/usr/local/sbin/sandboxd-cg2-init" \
  -drive "file=$IMAGE/root.img,if=virtio,format=raw,snapshot=on" \
  -virtfs "local,path=$ROOT,mount_tag=src,security_model=none,readonly=on" \
  -virtfs "local,path=$OUT,mount_tag=out,security_model=none" \
  </dev/null >"$OUT/console.log" 2>&1 || rc=$?
log "the VM ran for $(($(date +%s) - start)) s (qemu exit $rc)"

if [[ ! -f $OUT/rc ]]; then
  log "the guest did not finish; its console:"
  tail -50 "$OUT/console.log" >&2
  exit 1
fi
for f in "$OUT"/*.txt; do
  [[ -f $f ]] && { echo "--- $(basename "$f")"; cat "$f"; }
done
if [[ -n $RESULTS ]]; then
  cp "$OUT"/*.xml "$RESULTS"/ 2>/dev/null || true
fi
guest_rc=$(cat "$OUT/rc")
[[ $guest_rc == 0 ]] || { log "guest tests failed (exit $guest_rc)"; tail -80 "$OUT/console.log" >&2; }
exit "$guest_rc"
