package bwrap

import "golang.org/x/sys/unix"

// System calls that x86-64 has and arm64's generic table never had.
var (
	ioportSyscalls   = []uint32{unix.SYS_IOPL, unix.SYS_IOPERM}
	obsoleteSyscalls = []uint32{unix.SYS_USELIB, unix.SYS_USTAT, unix.SYS_SYSFS, unix.SYS__SYSCTL, unix.SYS_NFSSERVCTL}
)
