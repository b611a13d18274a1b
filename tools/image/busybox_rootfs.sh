#!/usr/bin/env bash
# tools/image/busybox_rootfs.sh DIR: a minimal root filesystem in DIR: Debian's busybox-static at
# /bin/busybox with a link per applet, /etc/passwd and /etc/group (root, nobody), nsswitch.conf,
# /tmp. The base of the real node's busybox image (tools/testenv/realnode.bash) and of coach's
# kubectl-delivery image (tools/image/build-kubectl-delivery).
set -euo pipefail
root=${1:?usage: busybox_rootfs.sh DIR}
[[ -x /bin/busybox ]] || { echo "busybox_rootfs.sh: /bin/busybox missing (apt-get install busybox-static)" >&2; exit 1; }
/bin/busybox --list-full >/dev/null 2>&1 ||
  { echo "busybox_rootfs.sh: /bin/busybox is not busybox-static (no --list-full)" >&2; exit 1; }
mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,etc,tmp,root,proc,sys,dev,var/tmp}
chmod 1777 "$root/tmp" "$root/var/tmp"
cp /bin/busybox "$root/bin/busybox"
for applet in $(/bin/busybox --list-full); do
  [[ -e $root/$applet || $applet == bin/busybox ]] || ln -s /bin/busybox "$root/$applet"
done
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
printf 'hosts: files dns\n' >"$root/etc/nsswitch.conf"
