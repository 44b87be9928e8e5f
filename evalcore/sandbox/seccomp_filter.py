"""The sandbox's seccomp filter: the system calls a graph program never needs, refused by the kernel.

Compiled once per process by libseccomp (through `pyseccomp`, its ctypes binding: the C library, packaged
as libseccomp2 by every distribution, does the compiling) into a classic BPF program; the sandbox's init
loads those bytes with prctl(PR_SET_SECCOMP) in the program's process just before it execs the
interpreter, so no library is loaded per run. The filter is inherited by everything the program forks and
cannot be removed (no_new_privs is set first).

Refused with EPERM unless said otherwise (a program sees "Operation not permitted", as under Docker's
default profile):

* memory outside the limits and shared memory: memfd_create, memfd_secret, SysV shared memory, semaphores
  and message queues, POSIX message queues (POSIX shared memory is a file in /dev/shm, which the sandbox
  does not have);
* namespaces and mounts: unshare, setns, clone with any namespace flag, mount and the new mount API,
  pivot_root, chroot, file handles (open_by_handle_at); clone3 answers ENOSYS, so the C library falls
  back to clone, whose flags a filter can read;
* kernel interfaces with a history of exploits or none of a graph program's business: io_uring_*,
  perf_event_open, bpf, userfaultfd, ptrace, process_vm_readv/writev, kcmp, pidfd_getfd, keyrings
  (add_key, request_key, keyctl), fanotify, modify_ldt, NUMA placement, personality flags that disable
  ASLR or make reads executable;
* host facts: sysinfo (uptime, load average, RAM), times (jiffies since boot), syslog; statfs, fstatfs and
  ustat (the sizes of the host's filesystems: the bound /dev is a devtmpfs of half the RAM, the bound
  libraries show the host disk's size and free space);
* the host's shared kernel resources: the asynchronous I/O contexts io_setup and its family (fs.aio-max-nr
  is one count for the whole host, 65,536 events: one program held all of them for its run, and every
  io_setup on the host failed with EAGAIN), sync/syncfs (they write back every dirty page of the host's
  filesystems: one `os.sync()` flushed 200 MB the host had not written yet), and inotify instances (128 per
  user: in a user namespace the program's user is the caller's, and it took all of them);
* administration: modules, kexec, reboot, swap, clocks, quotas, accounting, host and domain names,
  iopl/ioperm, vhangup, uselib; ioctl TIOCSTI/TIOCLINUX (typing into a terminal);
* prctl PR_SET_MM (rewriting the process's memory map descriptors), PR_SET_PTRACER,
  PR_SET_CHILD_SUBREAPER;
* sockets of any family, AF_UNIX included (EAFNOSUPPORT, which a program reads as "no network"). AF_UNIX
  reaches nothing outside the network namespace, but its queued data is kernel memory that only a cgroup
  counts: without one (init's watch of the proportional set size), 3 processes held 1,410 MiB in socket
  buffers under a 512 MB limit. The audit hook already refused every socket, socketpair included.
* POSIX and OFD record locks (fcntl F_SETLK, F_SETLKW, F_OFD_SETLK, F_OFD_SETLKW answer ENOLCK, "no locks
  available"): their count has no limit (RLIMIT_LOCKS is not enforced), each costs ~200 bytes of kernel
  memory that the memory cgroup does not charge (Linux reverted that accounting in 6.3), and 16 processes
  held 1.92 million of them, 359 MiB of slab, under a 512 MB limit the cgroup saw 15 MB of. flock (one lock
  per open file) stays;
* setsid and setpgid: the program stays in the process group the supervisor kills at the end (in the weaker
  mode, without a pid namespace, a process that left it outlived the run).

A system call of another ABI (32-bit int 0x80, x32 numbers) kills the process (SIGSYS): that is the
classic way around a filter written for one architecture.
"""

from __future__ import annotations

import errno
import functools
import tempfile

DENIED = (
    # memory outside the limits, shared memory
    "memfd_create", "memfd_secret", "shmget", "shmat", "shmctl", "shmdt", "msgget", "msgsnd", "msgrcv",
    "msgctl", "semget", "semop", "semctl", "semtimedop", "mq_open", "mq_unlink", "mq_timedsend",
    "mq_timedreceive", "mq_notify", "mq_getsetattr",
    # namespaces and mounts
    "unshare", "setns", "mount", "umount", "umount2", "pivot_root", "chroot", "fsopen", "fsconfig",
    "fsmount", "fspick", "move_mount", "open_tree", "open_tree_attr", "mount_setattr", "name_to_handle_at",
    "open_by_handle_at",
    # kernel interfaces
    "io_uring_setup", "io_uring_enter", "io_uring_register", "perf_event_open", "bpf", "userfaultfd",
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd", "add_key", "request_key",
    "keyctl", "fanotify_init", "lookup_dcookie", "modify_ldt", "mbind", "set_mempolicy",
    "set_mempolicy_home_node", "migrate_pages", "move_pages",
    # host facts
    "sysinfo", "times", "syslog", "statfs", "fstatfs", "ustat",
    # the host's shared kernel resources
    "io_setup", "io_destroy", "io_submit", "io_cancel", "io_getevents", "io_pgetevents", "sync", "syncfs",
    "inotify_init", "inotify_init1",
    # administration
    "acct", "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot",
    "swapon", "swapoff", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "quotactl",
    "quotactl_fd", "iopl", "ioperm", "vhangup", "uselib", "nfsservctl", "sethostname", "setdomainname",
    # leaving the process group the supervisor kills
    "setsid", "setpgid",
)
# clone flags that make a namespace (CLONE_NEWTIME is clone3/unshare only)
_CLONE_NS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000)
_PERSONALITY_DENIED = (0x0040000, 0x0400000)  # ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC
_IOCTL_DENIED = (0x5412, 0x541C)  # TIOCSTI, TIOCLINUX
_PRCTL_DENIED = (35, 36, 0x59616D61)  # PR_SET_MM, PR_SET_CHILD_SUBREAPER, PR_SET_PTRACER
_FCNTL_LOCKS = (6, 7, 37, 38)  # F_SETLK, F_SETLKW, F_OFD_SETLK, F_OFD_SETLKW (the same on every 64-bit ABI)


class FilterUnavailable(Exception):
    pass


@functools.cache
def bpf_program() -> bytes:
    """The filter as classic BPF (struct sock_filter[]), for prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER).
    Raises FilterUnavailable (one line) where libseccomp is missing."""
    try:
        import pyseccomp as sc
    except (ImportError, OSError, RuntimeError) as e:  # pyseccomp loads libseccomp.so.2 at import
        raise FilterUnavailable(f"libseccomp is not usable ({type(e).__name__}: {e}); install libseccomp2 and "
                                f"the pyseccomp package (scripts/setup.sh does both)") from None
    f = sc.SyscallFilter(sc.ALLOW)
    f.set_attr(sc.Attr.ACT_BADARCH, sc.KILL_PROCESS)
    try:  # a binary tree over the syscall numbers instead of a linear chain: every call the program makes pays it
        f.set_attr(sc.Attr.CTL_OPTIMIZE, 2)
    except OSError:  # libseccomp before 2.5
        pass
    native = sc.system_arch()

    def known(name: str) -> bool:
        try:
            return sc.resolve_syscall(native, name) >= 0
        except (OSError, ValueError):
            return False

    def deny(name: str, *args, err: int = errno.EPERM) -> None:
        if known(name):
            f.add_rule(sc.ERRNO(err), name, *args)

    for name in DENIED:
        deny(name)
    flags_arg = 1 if native in (sc.Arch.S390, sc.Arch.S390X) else 0  # clone's flags: arg 1 on s390
    for flag in _CLONE_NS:
        deny("clone", sc.Arg(flags_arg, sc.MASKED_EQ, flag, flag))
    deny("clone3", err=errno.ENOSYS)
    for flag in _PERSONALITY_DENIED:
        deny("personality", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    for req in _IOCTL_DENIED:
        deny("ioctl", sc.Arg(1, sc.MASKED_EQ, 0xFFFFFFFF, req))
    for opt in _PRCTL_DENIED:
        deny("prctl", sc.Arg(0, sc.EQ, opt))
    for cmd in _FCNTL_LOCKS:
        deny("fcntl", sc.Arg(1, sc.EQ, cmd), err=errno.ENOLCK)
    for call in ("socket", "socketpair"):
        deny(call, err=errno.EAFNOSUPPORT)
    with tempfile.TemporaryFile() as out:
        f.export_bpf(out)
        out.seek(0)
        bpf = out.read()
    if not bpf or len(bpf) % 8:
        raise FilterUnavailable(f"libseccomp exported a malformed filter ({len(bpf)} bytes)")
    return bpf


def check() -> str:
    """'' when the filter can be built here, else the reason."""
    try:
        bpf_program()
    except FilterUnavailable as e:
        return str(e)
    return ""

