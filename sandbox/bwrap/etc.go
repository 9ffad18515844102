package bwrap

import (
	"os"
	"path"
	"sort"
)

// The sandbox's /etc is not the host's: the host's holds owner-only
// secrets (shadow files, host keys, private TLS keys), its users and
// groups, its resolver and its tools' configuration (a system gitconfig
// with credential helpers, say). The agent gets generated identity and
// name-service files, no resolver (it has no network but the proxy, which
// resolves on the host), and only the host files that tools need to run.
// Trusted policy's read_only adds more.

// etcFromHost are bound read-only from the host's /etc when present.
var etcFromHost = []string{
	"ssl/certs", "ca-certificates", "ca-certificates.conf", "pki/tls/certs", "pki/ca-trust", // TLS roots, for the proxy
	"ld.so.cache", "ld.so.conf", "ld.so.conf.d", // where the dynamic linker finds multiarch libraries
	"alternatives",          // Debian's command symlinks (awk, editor, java…)
	"localtime", "timezone", // the time zone
	"protocols", "services", "mime.types", // tables that language runtimes read
	"os-release", "debian_version", "lsb-release", "shells", "terminfo", "magic", "magic.mime",
}

// generatedEtc are the files the sandbox's /etc is made of, by name.
func generatedEtc(id string) map[string]string {
	return map[string]string{
		"passwd":        "root:x:0:0:root:/root:/bin/sh\nagent:x:" + agentUID + ":" + agentUID + ":agent:" + agentHome + ":/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
		"group":         "root:x:0:\nagent:x:" + agentUID + ":\nnogroup:x:65534:\n",
		"hosts":         "127.0.0.1\tlocalhost lease-" + id + "\n::1\tlocalhost ip6-localhost ip6-loopback\n",
		"hostname":      "lease-" + id + "\n",
		"nsswitch.conf": "passwd: files\ngroup: files\nshadow: files\nhosts: files\nnetworks: files\nprotocols: files\nservices: files\n",
	}
}

// etcOptions make /etc from the generated files (staged by the init) and
// the host files tools need.
func (v *sandboxView) etcOptions() {
	names := make([]string, 0, len(v.etc))
	for name := range v.etc {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		v.add("--ro-bind", path.Join(stageDir, "etc", name), path.Join("/etc", name))
	}
	for _, name := range etcFromHost {
		if _, err := os.Stat(path.Join("/etc", name)); err == nil {
			v.add("--ro-bind", path.Join("/etc", name), path.Join("/etc", name))
		}
	}
	v.add("--symlink", "../proc/self/mounts", "/etc/mtab")
}
