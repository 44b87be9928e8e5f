"""The sandbox's init: trusted code that builds the program's world, then starts the program in it.

Run by `evalcore.sandbox` as a script (`python -I -S _sandbox_init.py CONFIG`), never imported: it uses
only the standard library. In strict mode it runs as pid 1 of fresh mount, pid, network, IPC and UTS
namespaces made by util-linux `unshare` (plus a user namespace when not run as root). It then

1. makes every mount private (nothing it mounts is seen by the host), mounts a small tmpfs as the new root
   and binds into it, read-only, only what the program needs: the Python installation, the directory of
   the C library, networkx (at /sandbox/site) and the program's input folder (at /sandbox); /tmp is a
   fresh size-limited tmpfs, /dev holds null, zero, random and urandom; there is no /proc, no /etc, no
   /home, no run folder, no dataset;
2. pivots into the new root and detaches the old one, so the host's filesystem is gone from this mount
   namespace, not merely hidden by permissions (we run as root in CI, where permissions protect nothing);
3. forks the program: it joins the run's cgroup (memory, CPU and processes of the program as a whole, when
   the host could make one), a new session, the rlimits, no_new_privs, either a fresh unprivileged uid
   (when root: no capabilities, RLIMIT_NPROC binds) or an empty capability bounding set (in a user
   namespace), and last the seccomp filter; then exec's `python -I -S -B` on the bootstrap, which installs
   the audit hook and runs the program;
4. reaps children, and exits with the program's status, written first to the status pipe. That pipe is
   init's alone: the program never holds it (it is closed at exec), so how the program ended (wait4's
   status and CPU time) cannot be written by the program. The program's fd 3 is another pipe, for the
   bootstrap's description of a failure, which the host reads as data only. Init's exit (as pid 1) makes
   the kernel kill every process left in the namespace. A thread watches the lifeline pipe: when the host
   side goes away, init exits, and the namespace dies with it (like bwrap's --die-with-parent).

In rlimits-only mode steps 1-2 and the namespaces are skipped: the program runs on the host's filesystem
and network, with only the rlimits, the cleared environment and the audit hook.
"""

import _signal  # signal and threading cost more to import (enum) than the rest of init
import _thread
import ctypes
import marshal
import os
import resource
import sys

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 0x1, 0x2, 0x4, 0x8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 0x20, 0x1000, 0x4000, 0x40000
MNT_DETACH = 2
PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 38, 24, 47, 4
PR_SET_SECCOMP, SECCOMP_MODE_FILTER, PR_SET_DUMPABLE = 22, 2, 4
# glibc has no pivot_root wrapper; the syscall number is per architecture.
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "ppc64le": 203, "s390x": 217}
SYS_KEYCTL = {"x86_64": 250, "aarch64": 219, "riscv64": 219, "ppc64le": 271, "s390x": 280}
KEYCTL_JOIN_SESSION_KEYRING = 1

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
_libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]


class _SockFprog(ctypes.Structure):  # struct sock_fprog
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


class SetupError(Exception):
    pass


def _check(rc: int, what: str) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise SetupError(f"{what}: {os.strerror(err)}")


def _b(s):
    return None if s is None else os.fsencode(s)


def mount(src, dst, fstype, flags, data=None) -> None:
    _check(_libc.mount(_b(src), _b(dst), _b(fstype), flags, _b(data)), f"mount {dst}")


def _locked_flags(path: str) -> int:
    """Flags of the source mount that a bind must keep (a user namespace may not clear them)."""
    f = os.statvfs(path).f_flag
    out = 0
    for st, ms in ((os.ST_NOSUID, MS_NOSUID), (os.ST_NODEV, MS_NODEV), (os.ST_NOEXEC, MS_NOEXEC)):
        if f & st:
            out |= ms
    return out


class Root:
    def __init__(self, root: str):
        self.root = root
        self.bound: list[str] = []

    def inside(self, path: str) -> str:
        return self.root + path

    def is_bound(self, path: str) -> bool:
        return any(path == b or path.startswith(b.rstrip("/") + "/") for b in self.bound)

    def bind(self, src: str, dst: str, *, devices: bool = False, noexec: bool = False) -> None:
        target = self.inside(dst)
        if os.path.isdir(src):
            os.makedirs(target, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if not os.path.exists(target):
                open(target, "wb").close()
        mount(src, target, None, MS_BIND | MS_REC)
        flags = MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | _locked_flags(src)
        if not devices:
            flags |= MS_NODEV
        if noexec:
            flags |= MS_NOEXEC
        mount(None, target, None, flags)
        self.bound.append(dst)

    def expose(self, path: str, depth: int = 0) -> None:
        """Make `path` resolve inside the new root as on the host: copy the symlinks met on the way
        (/lib -> usr/lib, /lib64/ld-linux... -> ...) and bind the real directory or file at the end."""
        if depth > 16:
            raise SetupError(f"too many symlinks under {path}")
        path = os.path.normpath(path)
        comps = path.strip("/").split("/")
        cur = ""
        for i, comp in enumerate(comps):
            cur += "/" + comp
            if self.is_bound(cur):
                return
            if os.path.islink(cur):
                target = os.readlink(cur)
                link = self.inside(cur)
                if not os.path.lexists(link):
                    os.makedirs(os.path.dirname(link), exist_ok=True)
                    os.symlink(target, link)
                rest = comps[i + 1:]
                self.expose(os.path.join(os.path.dirname(cur), target, *rest), depth + 1)
                return
        self.bind(path, path)


def hide_host_names() -> None:
    """The UTS namespace starts with the host's names: replace them (uname's nodename, the domain name)."""
    for call, name in ((_libc.sethostname, b"sandbox"), (_libc.setdomainname, b"(none)")):
        _check(call(name, len(name)), "set the host name")


def private_proc(path: str):
    """A proc of this pid namespace, mounted outside the new root and kept only as init's descriptor: the
    program never sees it, init reads its processes' CPU time and memory from it. None where the kernel
    refuses the mount (a user namespace under a masked /proc)."""
    try:
        mount("proc", path, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    except SetupError:
        return None
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)


_DEVICES = {"null": 3, "zero": 5, "random": 8, "urandom": 9}  # char devices, major 1


def make_devices(r: Root, fresh: bool) -> None:
    """/dev/{null,zero,random,urandom}. As root, fresh nodes on a tiny tmpfs of their own: the host's nodes
    carry the time its devtmpfs was made (the boot), and that devtmpfs's size (half the RAM). In a user
    namespace, where no device can be made, the host's nodes are bound (statfs is refused by the filter)."""
    dev = r.inside("/dev")
    os.makedirs(dev, exist_ok=True)
    if fresh:
        mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "size=4k,nr_inodes=8,mode=755")
        try:
            for name, minor in _DEVICES.items():
                os.mknod(f"{dev}/{name}", 0o666 | 0o020000, os.makedev(1, minor))
                os.chmod(f"{dev}/{name}", 0o666)
        except OSError:  # a device cgroup or a kernel that refuses mknod: the host's nodes, as below
            _check(_libc.umount2(_b(dev), MNT_DETACH), "umount /dev")
        else:
            mount(None, dev, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NOEXEC)
            r.bound.append("/dev")
            return
    for name in _DEVICES:
        r.bind(f"/dev/{name}", f"/dev/{name}", devices=True, noexec=True)


def build_root(cfg: dict):
    """Build and enter the program's root; returns init's private proc descriptor (or None)."""
    root = cfg["newroot"]
    hide_host_names()
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    procfd = private_proc(cfg["procdir"]) if cfg["procdir"] else None
    mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=2m,nr_inodes=4096,mode=755")
    r = Root(root)
    for d in cfg["lib_paths"]:
        if os.path.lexists(d):
            r.expose(d)
    r.expose(cfg["prefix"])
    if not r.is_bound(os.path.dirname(cfg["python"])):
        r.expose(os.path.dirname(cfg["python"]))
    # The base installation's own site-packages (pip, ...) is not importable: an empty read-only tmpfs
    # covers it. Extension modules that would undo the audit hook (_ctypes: arbitrary memory and
    # syscalls; _xxsubinterpreters: interpreters without the hook) are covered by an empty file.
    for d in cfg["hide_dirs"]:
        if os.path.isdir(d):
            mount("tmpfs", r.inside(d), "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "size=4k,nr_inodes=4")
    empty = r.inside("/.empty")
    open(empty, "wb").close()
    for f in cfg["hide_files"]:
        if os.path.isfile(f):
            mount(empty, r.inside(f), None, MS_BIND)
            mount(None, r.inside(f), None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    if cfg["networkx_dir"]:
        r.bind(cfg["networkx_dir"], "/sandbox/site/networkx", noexec=True)
    else:
        os.makedirs(r.inside("/sandbox/site"), exist_ok=True)
    r.bind(cfg["indir"], "/sandbox/in", noexec=True)
    make_devices(r, fresh=cfg["run_uid"] is not None)
    # /tmp, the one writable place, is noexec: nothing the program writes can be run or mapped executable
    # (a C extension or a copied interpreter written there fails to load).
    tmp = r.inside("/tmp")
    os.makedirs(tmp, exist_ok=True)
    mount("tmpfs", tmp, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
          f"size={cfg['disk_mb']}m,nr_inodes={cfg['disk_inodes']},mode=1777")
    mount(None, root, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    nr = SYS_PIVOT_ROOT.get(os.uname().machine)
    if nr is None:
        raise SetupError(f"pivot_root: unknown syscall number on {os.uname().machine}")
    os.chdir(root)
    _check(_libc.syscall(nr, b".", b"."), "pivot_root")
    _check(_libc.umount2(b".", MNT_DETACH), "umount old root")  # procfd keeps its detached mount alive
    os.chdir("/")
    return procfd


def drop_privileges(cfg: dict) -> None:
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    # A fresh anonymous session keyring: the kernel keys of the host's session are not the program's.
    nr = SYS_KEYCTL.get(os.uname().machine)
    if nr is not None and _libc.syscall(nr, KEYCTL_JOIN_SESSION_KEYRING, None) < 0:
        raise SetupError(f"keyctl: {os.strerror(ctypes.get_errno())}")
    if cfg["run_uid"] is not None:
        uid = cfg["run_uid"]
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)  # a non-zero uid: every capability goes
    elif cfg["mode"] == "strict":
        # uid 0 of our own user namespace: an empty bounding set means the exec'd program has none.
        _libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
        for cap in range(cfg["cap_last_cap"] + 1):
            _check(_libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), "drop capabilities")


def set_limits(lim: dict) -> None:
    mb = 1024 * 1024
    for res, value in (
        (resource.RLIMIT_AS, lim["memory_mb"] * mb),
        (resource.RLIMIT_NPROC, lim["max_processes"]),
        (resource.RLIMIT_FSIZE, lim["max_file_mb"] * mb),
        (resource.RLIMIT_NOFILE, lim["max_open_files"]),
        (resource.RLIMIT_CORE, 0),
        # queued signals and POSIX timers: the inherited default is a function of the host's RAM (96,369 here:
        # RAM / 256 KiB), which the program could read back
        (resource.RLIMIT_SIGPENDING, 1024),
    ):
        resource.setrlimit(res, (value, value))
    # soft: SIGXCPU, classified `timeout`; hard, a second later: SIGKILL for a program that ignores SIGXCPU
    resource.setrlimit(resource.RLIMIT_CPU, (lim["cpu_s"], lim["cpu_s"] + 1))


def load_seccomp(bpf: bytes) -> None:
    """The host's filter (compiled by libseccomp), for this process and all it forks; needs no_new_privs."""
    buf = ctypes.create_string_buffer(bpf, len(bpf))
    prog = _SockFprog(len(bpf) // 8, ctypes.cast(buf, ctypes.c_void_p))
    _check(_libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0), "seccomp")


def start_program(cfg: dict, status_fd: int, hint_fd: int, cgroup_fds: list) -> int:
    pid = os.fork()
    if pid:
        return pid
    try:
        for fd in cgroup_fds:  # first: everything the program does is counted in the run's cgroup
            os.write(fd, b"0")
        if cfg["mode"] == "strict":
            os.setsid()  # kill(0, ...) then reaches only the sandbox's own processes
        if status_fd == 3:  # fd 3 becomes the program's hint pipe
            status_fd = os.dup(status_fd)
        os.dup2(hint_fd, 3)
        os.closerange(4, status_fd)  # the status pipe stays until exec (it reports a failure to start)
        os.closerange(status_fd + 1, 1 << 16)
        os.set_inheritable(status_fd, False)
        os.chdir(cfg["workdir"])
        drop_privileges(cfg)
        set_limits(cfg["limits"])
        if cfg["seccomp"]:
            load_seccomp(cfg["seccomp"])
        os.execve(cfg["python"], [cfg["python"], "-I", "-S", "-B", "-X", "utf8", cfg["bootstrap"],
                                  cfg["bootstrap_config"]], cfg["env"])
    except BaseException as e:  # noqa: BLE001 - report anything, then leave the forked child
        try:
            os.write(status_fd, f"init-error start: {e}\n".encode())
        except OSError:
            pass
    os._exit(125)


def _totals(procfd: int, page: int, tick: int) -> tuple[float, float]:
    """CPU seconds and proportional memory (MB) of every process of the namespace but init, plus what the
    reaped ones spent (init's children's rusage; a process's own reaped children are in its cutime)."""
    dead = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu, pss_kb = dead.ru_utime + dead.ru_stime, 0
    for name in os.listdir(procfd):
        if not name.isdigit() or name == "1":
            continue
        try:
            fd = os.open(name + "/stat", os.O_RDONLY, dir_fd=procfd)
            try:
                fields = os.read(fd, 4096).rpartition(b")")[2].split()
            finally:
                os.close(fd)
            cpu += sum(int(x) for x in fields[11:15]) / tick  # utime stime cutime cstime
            fd = os.open(name + "/smaps_rollup", os.O_RDONLY, dir_fd=procfd)
            try:
                for line in os.read(fd, 8192).splitlines():
                    if line.startswith(b"Pss:"):
                        pss_kb += int(line.split()[1])
            finally:
                os.close(fd)
        except (OSError, ValueError, IndexError):
            continue  # it ended meanwhile
    return cpu, pss_kb / 1024


def watch_totals(procfd: int, report_fd: int, cpu_s: float, memory_mb: float) -> None:
    """Without a cgroup: the CPU time and memory of all the program's processes together, read every 0.1 s
    from init's private proc; past either limit init ends, and the namespace with it. Coarser than a cgroup
    (a sample every 0.1 s; memory as proportional set size, so shared pages count once)."""
    page, tick = os.sysconf("SC_PAGE_SIZE"), os.sysconf("SC_CLK_TCK")
    while True:
        cpu, mem = _totals(procfd, page, tick)
        if cpu > cpu_s or mem > memory_mb:
            kind, value = ("cpu", cpu) if cpu > cpu_s else ("memory", mem)
            os.write(report_fd, f"limit {kind} {value:.3f}\n".encode())
            os._exit(137)
        _sleep(0.1)


def _sleep(seconds: float) -> None:
    import select  # a C module: cheap, and only in the fallback

    select.select([], [], [], seconds)


def watch_lifeline(fd: int, child: int, strict: bool) -> None:
    while os.read(fd, 4096):
        pass
    # The host side is gone: end the program. As pid 1, exiting kills the whole namespace.
    if not strict:
        os.killpg(os.getpgid(0), _signal.SIGKILL)
    os._exit(137)


def main() -> None:
    with open(sys.argv[1], "rb") as f:
        cfg = marshal.load(f)  # not json: importing json (and re) costs more than the rest
    report_fd, hint_fd, lifeline_fd = cfg["status_fd"], cfg["hint_fd"], cfg["lifeline_fd"]
    # Python's SIGINT handler would let the program (uid 0 of a user namespace, like init) end init with
    # kill(1, SIGINT); without a handler, pid 1 of a namespace gets no signal from inside it.
    _signal.signal(_signal.SIGINT, _signal.SIG_DFL)
    os.set_inheritable(report_fd, False)
    # not dumpable: a process of the same uid cannot open init's /proc/PID/fd (the status pipe) or trace it
    _libc.prctl(PR_SET_DUMPABLE, 0, None, 0, 0)
    strict = cfg["mode"] == "strict"
    try:
        # opened before the root is replaced (no /sys inside), written by the child as root
        cgroup_fds = [os.open(f, os.O_WRONLY | os.O_CLOEXEC) for f in cfg["cgroup_procs"]]
        procfd = build_root(cfg) if strict else None
        child = start_program(cfg, report_fd, hint_fd, cgroup_fds)
        os.close(hint_fd)
        for fd in cgroup_fds:
            os.close(fd)
    except (SetupError, OSError) as e:
        os.write(report_fd, f"init-error {e}\n".encode())
        os._exit(125)
    _thread.start_new_thread(watch_lifeline, (lifeline_fd, child, strict))
    if procfd is not None:
        lim = cfg["limits"]
        _thread.start_new_thread(watch_totals, (procfd, report_fd, lim["cpu_s"], lim["memory_mb"]))
    while True:  # as pid 1 we reap every orphan, and stop at the program's own end
        try:
            pid, status, usage = os.wait4(-1, 0)
        except ChildProcessError:
            os._exit(125)
        if pid == child:
            break
    # the program's own CPU time: tells a SIGKILL at RLIMIT_CPU's hard limit from any other SIGKILL
    os.write(report_fd, f"cpu {usage.ru_utime + usage.ru_stime:.3f}\n".encode())
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        os.write(report_fd, f"status signal {sig}\n".encode())
        os._exit(128 + sig)
    code = os.WEXITSTATUS(status)
    os.write(report_fd, f"status exit {code}\n".encode())
    os._exit(code)


if __name__ == "__main__":
    main()
