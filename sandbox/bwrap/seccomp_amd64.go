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

// archWatchedCalls are x86-64's older write-class calls, without a
// directory descriptor.
var archWatchedCalls = []watchedCall{
	{unix.SYS_MKDIR, "mkdir", []pathArg{{-1, 0}}, nil, true, nil},
	{unix.SYS_MKNOD, "mknod", []pathArg{{-1, 0}}, nil, false, nil},
	{unix.SYS_UNLINK, "unlink", []pathArg{{-1, 0}}, nil, false, nil},
	{unix.SYS_RMDIR, "rmdir", []pathArg{{-1, 0}}, nil, false, nil},
	{unix.SYS_RENAME, "rename", []pathArg{{-1, 0}, {-1, 1}}, nil, false, nil},
	{unix.SYS_LINK, "link", []pathArg{{-1, 1}}, nil, false, nil},
	{unix.SYS_SYMLINK, "symlink", []pathArg{{-1, 1}}, nil, false, nil},
	{unix.SYS_CHMOD, "chmod", []pathArg{{-1, 0}}, nil, false, nil},
	{unix.SYS_CHOWN, "chown", []pathArg{{-1, 0}}, nil, false, nil},
	{unix.SYS_LCHOWN, "lchown", []pathArg{{-1, 0}}, nil, false, nil},
}

// archWatchedOpens are x86-64's older opens.
var archWatchedOpens = []watchedCall{
	{unix.SYS_OPEN, "open", []pathArg{{-1, 0}}, anyBit(1, writeIntent), false, flagsArg(1)},
	{unix.SYS_CREAT, "creat", []pathArg{{-1, 0}}, nil, false, creatFlags},
}
