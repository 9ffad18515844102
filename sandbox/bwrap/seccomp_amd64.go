package bwrap

import "golang.org/x/sys/unix"

// System calls that x86-64 has and arm64's generic table never had.
var (
	ioportSyscalls   = []uint32{unix.SYS_IOPL, unix.SYS_IOPERM}
	obsoleteSyscalls = []uint32{unix.SYS_USELIB, unix.SYS_USTAT, unix.SYS_SYSFS, unix.SYS__SYSCTL, unix.SYS_NFSSERVCTL}
)

var archSyscallNames = map[uint32]string{
	unix.SYS_IOPL: "iopl", unix.SYS_IOPERM: "ioperm", unix.SYS_USELIB: "uselib", unix.SYS_USTAT: "ustat",
	unix.SYS_SYSFS: "sysfs", unix.SYS__SYSCTL: "_sysctl", unix.SYS_NFSSERVCTL: "nfsservctl",
}
