"""Build and cache the lab's Debian image with real OpenZFS.

The recipe is data (RECIPE plus the files written into the guest); its hash is
the cache key, so changing the recipe builds a new image and an unchanged
recipe reuses the cached one. Building needs root (debootstrap, chroot, mount).
"""

from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor, wait
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from zbench_lib.core import paths
from zbench_lib.core.errors import CommandError, ConfigError, ZbenchError

MIRROR = os.environ.get("ZBENCH_DEBIAN_MIRROR", "http://deb.debian.org/debian")

RECIPE = {
    "recipe_version": 7,
    "suite": "bookworm",
    "base_packages": [
        "linux-image-amd64", "systemd-sysv", "udev", "dbus", "kmod", "procps",
        "iproute2", "openssh-server", "fio", "sysstat", "fdisk", "e2fsprogs",
        "util-linux", "gzip", "sudo",
        # the NFS datastore case (access: nfs): the lab exports a dataset to itself
        "nfs-kernel-server",
        # several clients on one datastore (issue 30): a zvol served over iSCSI by LIO, and the
        # initiator a client VM (a lab of the same image) logs in with
        "targetcli-fb", "open-iscsi",
    ],
    # Users a remote-box test logs in as: `bench` may run anything through `sudo -n` (how
    # many benchmark boxes are set up), `guest` may not (sudo would prompt).
    "users": {"bench": "ALL=(root) NOPASSWD: ALL", "guest": None},
    "build_packages": ["linux-headers-amd64"],
    # dkms pulls these in; autoremove keeps some because others recommend them.
    "purge_after_build": ["gcc-12", "cpp-12", "libgcc-12-dev", "linux-libc-dev", "libc6-dev",
                          "make", "patch", "dpkg-dev"],
    "zfs_packages": ["zfs-dkms", "zfsutils-linux"],
    "zfs_suite": "bookworm-backports",
    "image_size": "2G",
    "disabled_units": [
        "apt-daily.timer", "apt-daily-upgrade.timer", "e2scrub_all.timer",
        "fstrim.timer", "man-db.timer", "systemd-tmpfiles-clean.timer",
        "zfs-scrub-monthly@.timer", "zfs-scrub-weekly@.timer",
        "zfs-trim-monthly@.timer", "zfs-trim-weekly@.timer",
    ],
}

GUEST_FILES = {
    "etc/hostname": "zbench-lab\n",
    "etc/hosts": "127.0.0.1 localhost\n127.0.1.1 zbench-lab\n",
    "etc/fstab": "LABEL=zbench-root / ext4 defaults,noatime 0 1\n",
    "etc/modules-load.d/zfs.conf": "zfs\n",
    "etc/systemd/network/20-wired.network":
        "[Match]\nName=eth* en*\n\n[Network]\nDHCP=ipv4\n",
    "etc/ssh/sshd_config.d/zbench.conf":
        "PermitRootLogin prohibit-password\nPasswordAuthentication no\nUseDNS no\n",
    "etc/apt/sources.list":
        f"deb {MIRROR} bookworm main contrib\n"
        f"deb {MIRROR} bookworm-backports main contrib\n",
    # Benchmarks must not share the disks with housekeeping.
    "etc/systemd/journald.conf.d/zbench.conf": "[Journal]\nStorage=volatile\n",
}

# OpenZFS releases a lab can run: where Debian bookworm takes each from. 2.3 is the
# default (backports); 2.1 is bookworm's own release, what Debian 12 and Ubuntu 22.04
# hosts run. The default's recipe is RECIPE itself, so its cache key never moves.
ZFS_RELEASES = {"2.3": {}, "2.1": {"zfs_suite": "bookworm", "zfs_release": "2.1"}}
DEFAULT_ZFS = "2.3"


def recipe(zfs: str = DEFAULT_ZFS) -> dict:
    """The image recipe for one OpenZFS release (ConfigError for one zbench cannot build)."""
    if zfs not in ZFS_RELEASES:
        raise ConfigError(f"lab: unknown OpenZFS release {zfs!r}; the lab builds "
                          f"{', '.join(sorted(ZFS_RELEASES))}")
    return {**RECIPE, **ZFS_RELEASES[zfs]}


STAGES = ["debootstrap", "packages", "openzfs", "dkms", "configure", "slim", "image"]


def recipe_key(zfs: str = DEFAULT_ZFS) -> str:
    blob = json.dumps({"recipe": recipe(zfs), "files": GUEST_FILES}, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def image_dir(zfs: str = DEFAULT_ZFS) -> Path:
    return paths.images_dir() / recipe_key(zfs)


def cached_image(zfs: str = DEFAULT_ZFS) -> Path | None:
    """The ready image directory for the recipe of this OpenZFS release, or None."""
    d = image_dir(zfs)
    return d if (d / "manifest.json").exists() else None


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


class _Builder:
    def __init__(self, work: Path, log, zfs: str = DEFAULT_ZFS):
        self.zfs = zfs
        self.recipe = recipe(zfs)
        self.work = work
        self.root = work / "root"
        self.log = log
        self.mounts: list[Path] = []

    def sh(self, argv, env=None, timeout=3600):
        self.log.write(f"\n$ {' '.join(map(str, argv))}\n")
        self.log.flush()
        full_env = dict(os.environ, DEBIAN_FRONTEND="noninteractive", LC_ALL="C.UTF-8",
                        **(env or {}))
        proc = subprocess.run([str(a) for a in argv], stdout=self.log, stderr=subprocess.STDOUT,
                              env=full_env, timeout=timeout, stdin=subprocess.DEVNULL)
        if proc.returncode != 0:
            self.log.flush()
            tail = Path(self.log.name).read_text(errors="replace").splitlines()[-20:]
            raise CommandError("build", argv, proc.returncode, "\n".join(tail))

    def chroot(self, *argv, **kw):
        self.sh(["chroot", self.root, *argv], **kw)

    def _installed(self, names):
        res = subprocess.run(["chroot", str(self.root), "dpkg-query", "-W", "-f",
                              "${Package} ${Status}\n", *names], capture_output=True, text=True)
        return [line.split()[0] for line in res.stdout.splitlines() if line.endswith(" installed")]

    def mount_api(self):
        for fstype, target in (("proc", "proc"), ("sysfs", "sys")):
            self.sh(["mount", "-t", fstype, fstype, self.root / target])
            self.mounts.append(self.root / target)
        self.sh(["mount", "--bind", "/dev", self.root / "dev"])
        self.mounts.append(self.root / "dev")

    def umount_all(self):
        for m in reversed(self.mounts):
            subprocess.run(["umount", "-l", str(m)], capture_output=True)
        self.mounts.clear()

    def kernel_version(self) -> str:
        versions = sorted(p.name for p in (self.root / "lib/modules").iterdir())
        if not versions:
            raise ZbenchError("no kernel installed in the image tree")
        return versions[-1]

    # --- stages -------------------------------------------------------------
    def debootstrap(self):
        self.sh(["debootstrap", "--variant=minbase", self.recipe["suite"], self.root, MIRROR])

    def packages(self):
        for rel, text in GUEST_FILES.items():
            p = self.root / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
        # Keep the kernel's initramfs generic enough to find virtio disks.
        self.mount_api()
        self.chroot("apt-get", "update", "-q")
        self.chroot("apt-get", "install", "-y", "-q", "--no-install-recommends",
                    *self.recipe["base_packages"], *self.recipe["build_packages"])

    def openzfs(self):
        self.chroot("apt-get", "install", "-y", "-q", "--no-install-recommends",
                    "-t", self.recipe["zfs_suite"], *self.recipe["zfs_packages"])

    def dkms(self):
        # zfs-dkms's postinst skips the build inside a chroot; build explicitly.
        kver = self.kernel_version()
        zfs_src = sorted((self.root / "usr/src").glob("zfs-*"))
        if not zfs_src:
            raise ZbenchError("zfs-dkms left no source tree in /usr/src")
        zver = self.zfs_version = zfs_src[-1].name.split("-", 1)[1]
        moddir = self.root / "lib/modules" / kver
        # With /proc mounted the postinst may already have built it.
        if not list(moddir.rglob("zfs.ko*")):
            self.chroot("dkms", "install", f"zfs/{zver}", "-k", kver, timeout=5400)
        built = list(moddir.rglob("zfs.ko*"))
        if not built:
            raise ZbenchError(f"dkms did not produce zfs.ko for {kver}")

    def configure(self):
        key = self.work / "id_ed25519"
        self.sh(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "zbench-lab", "-f", key])
        ssh_dir = self.root / "root/.ssh"
        ssh_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        (ssh_dir / "authorized_keys").write_text(Path(f"{key}.pub").read_text())
        os.chmod(ssh_dir / "authorized_keys", 0o600)
        for user, rule in self.recipe["users"].items():
            self.chroot("useradd", "--create-home", "--shell", "/bin/bash", user)
            self.chroot("usermod", "-p", "*", user)      # no password, not locked: key logins only
            home = self.root / "home" / user / ".ssh"
            home.mkdir(mode=0o700, parents=True, exist_ok=True)
            (home / "authorized_keys").write_text(Path(f"{key}.pub").read_text())
            os.chmod(home / "authorized_keys", 0o600)
            self.chroot("chown", "-R", f"{user}:{user}", f"/home/{user}/.ssh")
            if rule:
                sudoers = self.root / "etc/sudoers.d" / f"zbench-{user}"
                sudoers.write_text(f"{user} {rule}\n")
                os.chmod(sudoers, 0o440)
        self.chroot("systemctl", "enable", "systemd-networkd", "ssh")
        for unit in self.recipe["disabled_units"]:
            subprocess.run(["chroot", str(self.root), "systemctl", "mask", unit],
                           stdout=self.log, stderr=subprocess.STDOUT)
        host_pub = (self.root / "etc/ssh/ssh_host_ed25519_key.pub").read_text().split()
        (self.work / "known_hosts").write_text(f"zbench-lab {host_pub[0]} {host_pub[1]}\n")

    def slim(self):
        # Build tools and headers are not needed at run time, but removing
        # zfs-dkms deletes the modules it built: stash them and put them back.
        kver = self.kernel_version()
        moddir = self.root / "lib/modules" / kver
        stash = self.work / "zfs-modules"
        stash.mkdir(exist_ok=True)
        for ko in moddir.rglob("*.ko*"):
            if ko.parent.name == "dkms" or "updates" in ko.parts:
                shutil.copy2(ko, stash / ko.name)
        self.chroot("apt-mark", "manual", "zfsutils-linux")
        self.chroot("apt-get", "purge", "-y", "-q", "zfs-dkms", *self.recipe["build_packages"],
                    f"linux-headers-{kver}")
        installed = self._installed(self.recipe["purge_after_build"])
        if installed:
            self.chroot("apt-get", "purge", "-y", "-q", *installed)
        self.chroot("apt-get", "autoremove", "--purge", "-y", "-q")
        self.chroot("apt-get", "clean")
        target = moddir / "extra" / "zfs"
        target.mkdir(parents=True, exist_ok=True)
        for ko in stash.iterdir():
            shutil.copy2(ko, target / ko.name)
        self.chroot("depmod", "-a", kver)
        for rel in ("usr/share/doc", "usr/share/man", "usr/share/info", "var/lib/apt/lists",
                    "usr/src", "var/lib/dkms"):
            shutil.rmtree(self.root / rel, ignore_errors=True)
            (self.root / rel).mkdir(parents=True, exist_ok=True)

    def image(self):
        self.umount_all()
        kver = self.kernel_version()
        shutil.copy2(self.root / "boot" / f"vmlinuz-{kver}", self.work / "vmlinuz")
        shutil.copy2(self.root / "boot" / f"initrd.img-{kver}", self.work / "initrd.img")
        self.sh(["mke2fs", "-q", "-F", "-t", "ext4", "-L", "zbench-root", "-d", self.root,
                 self.work / "rootfs.raw", self.recipe["image_size"]])
        manifest = {
            "key": recipe_key(self.zfs), "recipe": self.recipe, "kernel": kver,
            "zfs_version": getattr(self, "zfs_version", None),
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        (self.work / "manifest.json").write_text(json.dumps(manifest, indent=2))


def check_build_prerequisites() -> None:
    if os.geteuid() != 0:
        raise ZbenchError(
            "building the lab image needs root (debootstrap, chroot and mount).\n"
            "Run once as root:  sudo zbench lab build\n"
            "The image is then cached and every later command runs as a normal user "
            f"(set ZBENCH_CACHE so root and you share the cache; now {paths.cache_dir()}).")
    missing = [t for t in ("debootstrap", "chroot", "mke2fs", "ssh-keygen") if not shutil.which(t)]
    if missing:
        raise ZbenchError(f"missing build tools: {', '.join(missing)}; run `zbench setup` first")


def build_image(force: bool = False, zfs: str = DEFAULT_ZFS) -> Path:
    """Return the cached image for this OpenZFS release's recipe, building it if needed."""
    key = recipe_key(zfs)
    ready = cached_image(zfs)
    if ready and not force:
        _say(f"lab image {key} (OpenZFS {zfs}) is cached in {ready}")
        return ready
    check_build_prerequisites()
    final = image_dir(zfs)
    work = final.with_name(final.name + ".build")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    log_path = work / "build.log"
    t0 = time.monotonic()
    with open(log_path, "w") as log:
        b = _Builder(work, log, zfs)
        try:
            for i, stage in enumerate(STAGES, 1):
                _say(f"[lab build {zfs} {i}/{len(STAGES)}] {stage} ...")
                ts = time.monotonic()
                getattr(b, stage)()
                _say(f"[lab build {zfs} {i}/{len(STAGES)}] {stage} done in {time.monotonic() - ts:.0f} s "
                     f"(elapsed {time.monotonic() - t0:.0f} s)")
        except BaseException:
            b.umount_all()
            _say(f"lab image build failed; full log: {log_path}")
            raise
        finally:
            b.umount_all()
    shutil.rmtree(work / "root")
    shutil.rmtree(work / "zfs-modules", ignore_errors=True)
    if final.exists():
        shutil.rmtree(final)
    os.rename(work, final)
    _say(f"lab image {key} (OpenZFS {zfs}) built in {time.monotonic() - t0:.0f} s: {final}")
    return final


def build_images(releases: list[str], force: bool = False) -> list[Path]:
    """Build (or reuse) the image of each OpenZFS release, the builds side by side.

    Each build is a tree of its own (debootstrap, apt, dkms in its own chroot), and a lone build
    leaves most of a 2-core machine idle while it downloads and unpacks: built together, the 2.3 and
    2.1 images took 489 s on this machine against 896 s one after the other (2026-12-03). The first
    failure is raised once every build has ended (a build's mounts are its own to undo).
    """
    for zfs in releases:
        recipe(zfs)                 # an unknown release is refused before any build starts
    if len(releases) == 1:
        return [build_image(force=force, zfs=releases[0])]
    check_build_prerequisites()
    with ThreadPoolExecutor(max_workers=len(releases), thread_name_prefix="lab-build") as pool:
        futures = [pool.submit(build_image, force, zfs) for zfs in releases]
        wait(futures)
    return [f.result() for f in futures]
