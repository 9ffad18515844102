package verify

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// ErrPatchMismatch is returned when a patch's headers and a manifest
// describe different changes: one of them was not computed from the other's
// trees, and neither should be trusted.
var ErrPatchMismatch = errors.New("patch does not match manifest")

// CheckPatchManifest checks that the patch headers describe exactly the
// manifest's changes: the same paths with the same statuses, modes and
// blobs. A deletion followed by an addition of one path (git's way of
// printing a change of type) matches the manifest's single modification.
// The error wraps ErrPatchMismatch and names the first differing path in
// manifest order.
func CheckPatchManifest(files []PatchFile, m *Manifest) error {
	got := map[string]FileChange{}
	for _, f := range files {
		c := f.change()
		prev, seen := got[c.Path]
		switch {
		case !seen:
			got[c.Path] = c
		case prev.Status == "D" && c.Status == "A" && fileType(prev.OldMode) != fileType(c.NewMode):
			got[c.Path] = FileChange{Path: c.Path, Status: "M", OldMode: prev.OldMode, NewMode: c.NewMode, OldBlob: prev.OldBlob, NewBlob: c.NewBlob}
		default:
			return fmt.Errorf("%w: %q appears twice in the patch", ErrPatchMismatch, c.Path)
		}
	}
	for _, want := range m.Files {
		c, ok := got[want.Path]
		if !ok {
			return fmt.Errorf("%w: %q is in the manifest but not in the patch", ErrPatchMismatch, want.Path)
		}
		delete(got, want.Path)
		if c.OldBlob == "" && want.OldBlob == want.NewBlob {
			// A change of mode alone: the patch names no blob, the
			// manifest names the same blob on both sides.
			c.OldBlob, c.NewBlob = want.OldBlob, want.NewBlob
		}
		if why := changeDiff(c, want); why != "" {
			return fmt.Errorf("%w: %q: %s", ErrPatchMismatch, want.Path, why)
		}
	}
	if len(got) > 0 {
		return fmt.Errorf("%w: %q is in the patch but not in the manifest", ErrPatchMismatch, slices.Min(slices.Collect(maps.Keys(got))))
	}
	return nil
}

// changeDiff says how a patch's change differs from the manifest's, or
// returns "" when they agree.
func changeDiff(got, want FileChange) string {
	switch {
	case got.Status != want.Status:
		return fmt.Sprintf("the patch has status %s, the manifest %s", got.Status, want.Status)
	case got.OldMode != want.OldMode || got.NewMode != want.NewMode:
		return fmt.Sprintf("the patch has modes %s -> %s, the manifest %s -> %s", got.OldMode, got.NewMode, want.OldMode, want.NewMode)
	case got.OldBlob != want.OldBlob || got.NewBlob != want.NewBlob:
		return fmt.Sprintf("the patch has blobs %s..%s, the manifest %s..%s", got.OldBlob, got.NewBlob, want.OldBlob, want.NewBlob)
	}
	return ""
}

// fileType is the part of a mode that says file, symlink or gitlink.
func fileType(mode string) string {
	if len(mode) < 3 {
		return mode
	}
	return mode[:3]
}
