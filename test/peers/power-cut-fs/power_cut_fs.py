"""A FUSE file system that can lose power (test-only; test/faults/power-loss.test.ts).

It passes every operation through to a backing directory, except file DATA: what write() and
truncate() change is held in memory per file (whole pages, as a page cache holds them) and
reaches the backing file only when that file is fsynced (fsync or fdatasync). Reads see the
pending data, as they would through a page cache. Metadata (create, mkdir, unlink, rename,
chmod, utimens) is applied to the backing directory at once: a file created and never synced
survives a power cut empty, as on a file system that journals metadata but not data.

Control, one command a line on stdin, one answer a line on stdout:

  cut [KEEP SEED]
        the power is cut: every pending (unsynced) write is dropped, and from now on every
        write, truncate, fsync and metadata change fails with EIO (a process still running
        writes nothing more). With KEEP (0 to 1) and SEED, a torn cut: each pending page reaches
        the disk first with probability KEEP, picked by SEED, as a disk's cache writes some of
        what it holds back, in any order, before the power goes (pending truncates, and pages
        of files no process holds open any more, are dropped).
        Answers "CUT <pages dropped> <pages kept>".

The power comes back by mounting again (a new process on the same backing directory): the
kernel's caches of the old mount go with it. Stdin closed: the file system unmounts itself.

Usage: python power_cut_fs.py BACKING_DIR MOUNTPOINT [--fsync-ms=N] [--ignore-fsync]
  --fsync-ms=N    each fsync takes N ms, as a disk's does, before it syncs anything: a cut in
                  that time loses what it was syncing (so a caller told "durable" before its
                  fsync returned is caught). The cut can come meanwhile; other operations wait.
  --ignore-fsync  a disk that lies: fsync returns at once and syncs nothing (a negative control:
                  every write is unsynced at a cut).
Prints "READY" once mounted.
"""

from __future__ import annotations

import errno
import os
import random
import subprocess
import sys
import threading
import time

from mfusepy import FUSE, FuseOSError, Operations

PAGE = 4096


class Pending:
    """One file's unsynced data: pages by index, the size as written, and how much of the
    backing file still counts (a truncate below the backing size hides the rest until a sync)."""

    def __init__(self, backing_size: int) -> None:
        self.size = backing_size
        self.kept = backing_size
        self.pages: dict[int, bytes] = {}


class PowerCutFs(Operations):
    use_ns = True

    def __init__(self, root: str, ignore_fsync: bool, fsync_ms: float) -> None:
        self.root = root
        self.ignore_fsync = ignore_fsync
        self.fsync_ms = fsync_ms
        self.mutex = threading.Lock()
        self.off = False
        # By inode, so a rename keeps a file's pending data and an open, unlinked file keeps its own.
        self.pending: dict[int, Pending] = {}
        self.open_files: dict[int, int] = {}  # fh (the backing fd) -> inode

    # --- helpers ---------------------------------------------------------------------------

    def _real(self, path: str) -> str:
        return os.path.join(self.root, path.lstrip("/"))

    def _powered(self) -> None:
        if self.off:
            raise FuseOSError(errno.EIO)

    def _page_from_backing(self, fd: int, index: int, p: Pending | None) -> bytes:
        data = os.pread(fd, PAGE, index * PAGE)
        if p is not None and index * PAGE + len(data) > p.kept:
            data = data[: max(0, p.kept - index * PAGE)]
        return data.ljust(PAGE, b"\0")

    def _page(self, fd: int, index: int, p: Pending) -> bytes:
        page = p.pages.get(index)
        return page if page is not None else self._page_from_backing(fd, index, p)

    def _pending_for(self, fd: int) -> Pending:
        ino = os.fstat(fd).st_ino
        p = self.pending.get(ino)
        if p is None:
            p = self.pending[ino] = Pending(os.fstat(fd).st_size)
        return p

    def _truncate_fd(self, fd: int, length: int) -> None:
        p = self._pending_for(fd)
        if length < p.size:
            for index in [i for i in p.pages if i * PAGE >= length]:
                del p.pages[index]
            if length % PAGE:
                index = length // PAGE
                page = self._page(fd, index, p)
                p.pages[index] = page[: length % PAGE].ljust(PAGE, b"\0")
            p.kept = min(p.kept, length)
        p.size = length

    def _sync(self, fd: int) -> None:
        ino = os.fstat(fd).st_ino
        p = self.pending.pop(ino, None)
        if p is None:
            return
        if os.fstat(fd).st_size > p.kept:
            os.ftruncate(fd, p.kept)
        for index, page in sorted(p.pages.items()):
            end = min(PAGE, p.size - index * PAGE)
            if end > 0:
                os.pwrite(fd, page[:end], index * PAGE)
        os.ftruncate(fd, p.size)
        # The backing directory outlives every simulated cut, so its own fsync proves nothing.

    # --- control ---------------------------------------------------------------------------

    def cut(self, keep: float, seed: int) -> tuple[int, int]:
        with self.mutex:
            self.off = True
            pick = random.Random(seed)
            dropped = kept = 0
            for ino, p in sorted(self.pending.items()):
                fd = next((fd for fd, i in self.open_files.items() if i == ino), None)
                for index, page in sorted(p.pages.items()):
                    end = min(PAGE, p.size - index * PAGE)
                    if fd is not None and end > 0 and pick.random() < keep:
                        os.pwrite(fd, page[:end], index * PAGE)
                        kept += 1
                    else:
                        dropped += 1
            self.pending.clear()
            return dropped, kept

    # --- data ------------------------------------------------------------------------------

    def open(self, path: str, flags: int) -> int:
        with self.mutex:
            if self.off and flags & (os.O_WRONLY | os.O_RDWR | os.O_TRUNC):
                raise FuseOSError(errno.EIO)
            fd = os.open(self._real(path), (flags & ~(os.O_TRUNC | os.O_APPEND)) | os.O_CLOEXEC)
            self.open_files[fd] = os.fstat(fd).st_ino
            if flags & os.O_TRUNC:
                self._truncate_fd(fd, 0)
            return fd

    def create(self, path: str, mode: int, fi: int | None = None) -> int:
        with self.mutex:
            self._powered()
            fd = os.open(self._real(path), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, mode)
            ino = os.fstat(fd).st_ino
            if not any(i == ino for i in self.open_files.values()):
                self.pending.pop(ino, None)  # a reused inode: nothing of the old file's data is left
            self.open_files[fd] = ino
            return fd

    def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
        with self.mutex:
            p = self.pending.get(self.open_files[fh])
            if p is None:
                return os.pread(fh, size, offset)
            end = min(offset + size, p.size)
            if offset >= end:
                return b""
            first, last = offset // PAGE, (end - 1) // PAGE
            data = b"".join(self._page(fh, i, p) for i in range(first, last + 1))
            return data[offset - first * PAGE : end - first * PAGE]

    def write(self, path: str, data: bytes, offset: int, fh: int) -> int:
        with self.mutex:
            self._powered()
            p = self._pending_for(fh)
            at = offset
            while at < offset + len(data):
                index, within = divmod(at, PAGE)
                take = min(PAGE - within, offset + len(data) - at)
                page = self._page(fh, index, p)
                p.pages[index] = page[:within] + data[at - offset : at - offset + take] + page[within + take :]
                at += take
            p.size = max(p.size, offset + len(data))
            return len(data)

    def truncate(self, path: str, length: int, fh: int | None = None) -> int:
        with self.mutex:
            self._powered()
            if fh is not None:
                self._truncate_fd(fh, length)
                return 0
            fd = os.open(self._real(path), os.O_RDWR | os.O_CLOEXEC)
            try:
                self._truncate_fd(fd, length)
            finally:
                os.close(fd)
            return 0

    def fsync(self, path: str, datasync: int, fh: int) -> int:
        time.sleep(self.fsync_ms / 1000)  # without the mutex: a cut may come meanwhile
        with self.mutex:
            self._powered()
            if not self.ignore_fsync:
                self._sync(fh)
            return 0

    def flush(self, path: str, fh: int) -> int:
        return 0  # close() is not a sync

    def release(self, path: str, fh: int) -> int:
        with self.mutex:
            ino = self.open_files.pop(fh)
            gone = os.fstat(fh).st_nlink == 0
            os.close(fh)
            if gone and ino not in self.open_files.values():
                self.pending.pop(ino, None)
            return 0

    def getattr(self, path: str, fh: int | None = None) -> dict[str, int]:
        with self.mutex:
            st = os.fstat(fh) if fh is not None else os.lstat(self._real(path))
            attrs = {
                key: getattr(st, key)
                for key in ("st_mode", "st_ino", "st_nlink", "st_uid", "st_gid", "st_size", "st_blocks")
            }
            attrs.update(st_atime=st.st_atime_ns, st_mtime=st.st_mtime_ns, st_ctime=st.st_ctime_ns)
            p = self.pending.get(st.st_ino)
            if p is not None:
                attrs["st_size"] = p.size
                attrs["st_blocks"] = (p.size + 511) // 512
            return attrs

    # --- metadata, applied at once ---------------------------------------------------------

    def unlink(self, path: str) -> int:
        with self.mutex:
            self._powered()
            st = os.lstat(self._real(path))
            os.unlink(self._real(path))
            if st.st_nlink == 1 and st.st_ino not in self.open_files.values():
                self.pending.pop(st.st_ino, None)
            return 0

    def rename(self, old: str, new: str) -> int:
        with self.mutex:
            self._powered()
            os.rename(self._real(old), self._real(new))
            return 0

    def mkdir(self, path: str, mode: int) -> int:
        with self.mutex:
            self._powered()
            os.mkdir(self._real(path), mode)
            return 0

    def rmdir(self, path: str) -> int:
        with self.mutex:
            self._powered()
            os.rmdir(self._real(path))
            return 0

    def chmod(self, path: str, mode: int) -> int:
        with self.mutex:
            self._powered()
            os.chmod(self._real(path), mode)
            return 0

    def chown(self, path: str, uid: int, gid: int) -> int:
        with self.mutex:
            self._powered()
            os.chown(self._real(path), uid, gid)
            return 0

    def utimens(self, path: str, times: tuple[int, int] | None = None) -> int:
        with self.mutex:
            self._powered()
            os.utime(self._real(path), ns=times)
            return 0

    def fsyncdir(self, path: str, datasync: int, fh: int) -> int:
        with self.mutex:
            self._powered()
            return 0

    def access(self, path: str, amode: int) -> int:
        if not os.access(self._real(path), amode):
            raise FuseOSError(errno.EACCES)
        return 0

    def readdir(self, path: str, fh: int) -> list[str]:
        return [".", "..", *os.listdir(self._real(path))]

    def statfs(self, path: str) -> dict[str, int]:
        sv = os.statvfs(self._real(path))
        keys = ("f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail", "f_ffree", "f_files", "f_frsize", "f_namemax")
        return {key: getattr(sv, key) for key in keys}

    def init(self, path: str) -> None:
        print("READY", flush=True)


def control(fs: PowerCutFs, mountpoint: str) -> None:
    for line in sys.stdin:
        words = line.split()
        if words[:1] == ["cut"]:
            keep, seed = (float(words[1]), int(words[2])) if len(words) == 3 else (0.0, 0)
            print("CUT %d %d" % fs.cut(keep, seed), flush=True)
        elif line.strip():
            print(f"UNKNOWN {line.strip()}", flush=True)
    # The test is gone: unmount, which ends the FUSE loop.
    subprocess.run(["fusermount3", "-u", "-z", mountpoint], check=False)


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) != 2:
        sys.exit(__doc__)
    backing, mountpoint = (os.path.abspath(a) for a in args)
    fsync_ms = next((float(a.split("=", 1)[1]) for a in sys.argv if a.startswith("--fsync-ms=")), 0.0)
    fs = PowerCutFs(backing, ignore_fsync="--ignore-fsync" in sys.argv, fsync_ms=fsync_ms)
    threading.Thread(target=control, args=(fs, mountpoint), daemon=True).start()
    FUSE(fs, mountpoint, foreground=True, nothreads=True, fsname="powercut")


if __name__ == "__main__":
    main()
