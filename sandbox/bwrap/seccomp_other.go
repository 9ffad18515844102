//go:build !amd64

package bwrap

// Other architectures have no port I/O calls, and arm64 was born without
// the obsolete ones: their entries refuse nothing there, and stay known
// names so that one policy serves every machine.
var (
	ioportSyscalls, obsoleteSyscalls []uint32
	archSyscallNames                 map[uint32]string
)

// The generic table has only the *at forms of the write-class calls.
var archWatchedCalls, archWatchedOpens []watchedCall
