// Package verify holds the rules and evidence of results: manifests, patch
// digests, path rules and signatures. It knows nothing of sandboxes.
package verify

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sync"
)

// ManifestVersion is the version of the manifest format written today.
const ManifestVersion = 1

// FileChange is one changed path of a result, as git's raw diff would
// describe it: modes are six octal digits and blobs 40 hex digits, with
// "000000" and forty zeros for the side that does not exist.
type FileChange struct {
	Path    string `json:"path"`
	Status  string `json:"status"` // A, M or D
	OldMode string `json:"old_mode"`
	NewMode string `json:"new_mode"`
	OldBlob string `json:"old_blob"`
	NewBlob string `json:"new_blob"`
}

// Manifest lists every changed path between a base tree and a result tree.
type Manifest struct {
	Version    int          `json:"version"`
	Base       string       `json:"base"`
	BaseTree   string       `json:"base_tree"`
	ResultTree string       `json:"result_tree"`
	Files      []FileChange `json:"files"`
}

var (
	// hexRE is compiled on first use: a counted repetition compiles into
	// a program of one node per count, milliseconds that every start of
	// the binary (the sandbox's init included) would pay.
	hexRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{40}$`) })
	modeRE = regexp.MustCompile(`^(000000|100644|100755|120000|160000)$`)

	// ErrBadManifest is returned for a manifest that does not parse or is inconsistent.
	ErrBadManifest = errors.New("invalid manifest")
)

// ZeroBlob and ZeroMode stand for a side of a change that does not exist.
const (
	ZeroBlob = "0000000000000000000000000000000000000000"
	ZeroMode = "000000"
)

// ParseManifest decodes and checks a manifest: known version, well-formed
// hashes and modes, statuses consistent with their sides, and paths in
// strictly increasing order (so no path appears twice).
func ParseManifest(b []byte) (*Manifest, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadManifest, err)
	}
	// More() misses a stray "]" or "}"; only the end of input may follow.
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: trailing data", ErrBadManifest)
	}
	if m.Version != ManifestVersion {
		return nil, fmt.Errorf("%w: version %d (this git-lease reads %d; upgrade it)", ErrBadManifest, m.Version, ManifestVersion)
	}
	for _, h := range []string{m.Base, m.BaseTree, m.ResultTree} {
		if !hexRE().MatchString(h) {
			return nil, fmt.Errorf("%w: bad hash %q", ErrBadManifest, h)
		}
	}
	for i, f := range m.Files {
		if err := f.check(); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrBadManifest, f.Path, err)
		}
		if i > 0 && m.Files[i-1].Path >= f.Path {
			return nil, fmt.Errorf("%w: %q is out of order or repeated", ErrBadManifest, f.Path)
		}
	}
	return &m, nil
}

func (f FileChange) check() error {
	if f.Path == "" {
		return errors.New("empty path")
	}
	if !hexRE().MatchString(f.OldBlob) || !hexRE().MatchString(f.NewBlob) {
		return errors.New("bad blob hash")
	}
	if !modeRE.MatchString(f.OldMode) || !modeRE.MatchString(f.NewMode) {
		return errors.New("bad mode")
	}
	oldAbsent := f.OldMode == ZeroMode && f.OldBlob == ZeroBlob
	newAbsent := f.NewMode == ZeroMode && f.NewBlob == ZeroBlob
	oldPresent := f.OldMode != ZeroMode && f.OldBlob != ZeroBlob
	newPresent := f.NewMode != ZeroMode && f.NewBlob != ZeroBlob
	switch f.Status {
	case "A":
		if !oldAbsent || !newPresent {
			return errors.New("an addition needs only a new side")
		}
	case "D":
		if !oldPresent || !newAbsent {
			return errors.New("a deletion needs only an old side")
		}
	case "M":
		if !oldPresent || !newPresent || (f.OldMode == f.NewMode && f.OldBlob == f.NewBlob) {
			return errors.New("a modification needs two different sides")
		}
	default:
		return fmt.Errorf("unknown status %q", f.Status)
	}
	return nil
}

// Marshal encodes the manifest in its stored form (indented, newline-terminated).
func (m *Manifest) Marshal() []byte {
	b, _ := json.MarshalIndent(m, "", "  ")
	return append(b, '\n')
}

// PatchDigest is the digest recorded for a canonical patch: "sha256:<hex>".
func PatchDigest(patch []byte) string {
	sum := sha256.Sum256(patch)
	return "sha256:" + hex.EncodeToString(sum[:])
}
