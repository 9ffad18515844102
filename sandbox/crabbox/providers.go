package crabbox

// boundary is what stands between an agent in a box and everything else,
// for each Crabbox provider whose boxes Crabbox reaches over SSH (the
// "crabbox-managed" SSH providers of Crabbox 0bba5f7d's
// docs/providers/provider-metadata.json): git-lease's run and copy path
// (crabbox cp and crabbox run --no-sync over SSH) is the same for all of
// them, and is what the contract test (TestRealCrabbox) exercises. The
// boundary is the provider's substrate as Crabbox describes it; trusted
// policy still decides which ones count as sandboxed.
var boundary = map[string]string{
	// Virtual machines.
	"apple-vm": "VM", "aws": "VM", "azure": "VM", "digitalocean": "VM", "exe-dev": "VM", "gcp": "VM",
	"hetzner": "VM", "hostinger": "VM", "hyperv": "VM", "kubevirt": "VM", "lambda": "VM", "linode": "VM",
	"lume": "VM", "machine0": "VM", "morph": "VM", "multipass": "VM", "nebius": "VM", "ovh": "VM",
	"parallels": "VM", "phala": "VM", "proxmox": "VM", "scaleway": "VM", "tart": "VM",
	"tencentcloud": "VM", "tenki": "VM", "vultr": "VM", "xcp-ng": "VM",
	// MicroVMs.
	"firecracker": "microVM", "sprites": "microVM",
	// Containers.
	"local-container": "container", "apple-container": "container",
	// A managed box whose substrate Crabbox does not name (VM or container).
	"ascii-box": "managed box", "coder": "managed box", "daytona": "managed box",
	"github-codespaces": "managed box", "incus": "managed box", "namespace-devbox": "managed box",
	"namespace-instance": "managed box", "nvidia-brev": "managed box", "runpod": "managed box",
	"sealos-devbox": "managed box", "semaphore": "managed box", "vast": "managed box",
	// No boundary: an existing host, or whatever a configured program does.
	"ssh": "none", "external": "none",
}

// delegated are the Crabbox providers that run a command through a
// service's own API instead of a box reached over SSH (Crabbox 0bba5f7d's
// "ssh": "no" providers: delegated sandboxes, local process sandboxes,
// service control). Crabbox's cp and run --no-sync do not work the same way
// there, and no contract test covers them, so git-lease refuses them.
var delegated = []string{
	"agent-sandbox", "anthropic-sandbox-runtime", "apple-machine", "aws-lambda-microvm",
	"azure-dynamic-sessions", "blacksmith-testbox", "blaxel", "cloud-run-sandbox", "cloudflare",
	"cloudflare-dynamic-workers", "cloudflare-sandbox", "codesandbox", "crownest", "cua", "cubesandbox",
	"docker-sandbox", "e2b", "fastapi-cloud", "freestyle", "islo", "modal", "mxc", "nomad", "opencomputer",
	"opensandbox", "orgo", "railway", "smolvm", "superserve", "tensorlake", "unikraft-cloud",
	"upstash-box", "vercel-sandbox", "wandb", "windows-sandbox",
}
