package verify

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// ErrBadPatch is returned for a patch that is not git's canonical output.
var ErrBadPatch = errors.New("invalid patch")

// emptyBlob is the blob of an empty file: adding or deleting one is the
// only change of content that git prints without a body.
const emptyBlob = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"

// PatchFile is one file of a canonical patch, as its headers describe it.
// Modes and blobs follow the manifest's conventions (ZeroMode and ZeroBlob
// for a side that does not exist). A change of type (file, symlink,
// gitlink) appears as a deletion followed by an addition of the same path,
// as git prints it.
type PatchFile struct {
	OldPath string // empty for an addition
	NewPath string // empty for a deletion
	Status  string // A, M or D
	OldMode string
	NewMode string
	// OldBlob and NewBlob come from the index line. Both are empty for a
	// change of mode alone, where git prints no index line because the
	// blob did not change.
	OldBlob string
	NewBlob string
	Binary  bool // the body is a "GIT binary patch"
}

// ParsePatch reads the output of `git diff-tree -p --binary --full-index
// --no-renames --src-prefix=a/ --dst-prefix=b/` (with core.quotePath=true)
// and returns its files in order. It is strict: a header git would not
// print, a hunk whose line counts do not add up, or trailing text is an
// error wrapping ErrBadPatch. An empty patch has no files.
func ParsePatch(b []byte) ([]PatchFile, error) {
	if len(b) > 0 && b[len(b)-1] != '\n' {
		return nil, fmt.Errorf("%w: it does not end with a newline; was it cut short?", ErrBadPatch)
	}
	r := &lineReader{b: b}
	var files []PatchFile
	for len(r.b) > 0 {
		f, err := r.file()
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", ErrBadPatch, r.n, err)
		}
		files = append(files, f)
	}
	return files, nil
}

// lineReader reads a patch a line at a time without copying it.
type lineReader struct {
	b []byte // what is left: whole lines, each ending in '\n'
	n int    // the number of the last line read
}

func (r *lineReader) peek() ([]byte, bool) {
	if len(r.b) == 0 {
		return nil, false
	}
	return r.b[:bytes.IndexByte(r.b, '\n')], true
}

func (r *lineReader) next() ([]byte, bool) {
	l, ok := r.peek()
	if ok {
		r.b = r.b[len(l)+1:]
		r.n++
	}
	return l, ok
}

// nextAfter reads the next line if it starts with prefix, and returns the
// rest of it.
func (r *lineReader) nextAfter(prefix string) (string, bool) {
	l, ok := r.peek()
	if !ok || !bytes.HasPrefix(l, []byte(prefix)) {
		return "", false
	}
	r.next()
	return string(l[len(prefix):]), true
}

// file reads one "diff --git" section: its headers, then its body.
func (r *lineReader) file() (PatchFile, error) {
	rest, ok := r.nextAfter("diff --git ")
	if !ok {
		r.next() // so the error names this line
		return PatchFile{}, errors.New(`expected a "diff --git" line`)
	}
	path, err := diffGitPath(rest)
	if err != nil {
		return PatchFile{}, err
	}
	f := PatchFile{OldPath: path, NewPath: path, Status: "M"}
	modeLines := false
	if m, ok := r.nextAfter("old mode "); ok {
		n, ok := r.nextAfter("new mode ")
		if !ok {
			return f, errors.New(`"old mode" without "new mode"`)
		}
		f.OldMode, f.NewMode, modeLines = m, n, true
	} else if m, ok := r.nextAfter("new file mode "); ok {
		f.Status, f.OldPath, f.OldMode, f.NewMode = "A", "", ZeroMode, m
	} else if m, ok := r.nextAfter("deleted file mode "); ok {
		f.Status, f.NewPath, f.OldMode, f.NewMode = "D", "", m, ZeroMode
	}
	if idx, ok := r.nextAfter("index "); ok {
		if err := f.parseIndex(idx, modeLines); err != nil {
			return f, err
		}
	} else if !modeLines {
		return f, errors.New(`missing "index" line`)
	}
	if err := f.check(modeLines); err != nil {
		return f, fmt.Errorf("%q: %v", path, err)
	}
	return f, r.body(&f, path)
}

// parseIndex reads "<old>..<new>", followed by the mode when the mode did
// not change.
func (f *PatchFile) parseIndex(idx string, modeLines bool) error {
	blobs, mode, hasMode := strings.Cut(idx, " ")
	f.OldBlob, f.NewBlob, _ = strings.Cut(blobs, "..")
	if !hexRE().MatchString(f.OldBlob) || !hexRE().MatchString(f.NewBlob) {
		return fmt.Errorf("index line %q needs two 40-digit blob names (use --full-index)", idx)
	}
	switch {
	case hasMode && (f.Status != "M" || modeLines):
		return fmt.Errorf("index line %q has a mode where git prints none", idx)
	case !hasMode && f.Status == "M" && !modeLines:
		return fmt.Errorf("index line %q lacks the mode", idx)
	case hasMode:
		f.OldMode, f.NewMode = mode, mode
	}
	return nil
}

// check applies the manifest's rules to what the headers say.
func (f *PatchFile) check(modeLines bool) error {
	if modeLines && (!validMode(f.OldMode) || !validMode(f.NewMode) || f.OldMode == f.NewMode || fileType(f.OldMode) != fileType(f.NewMode)) {
		// A change of type is never printed as a mode change: git splits it.
		return fmt.Errorf("mode change %s -> %s is not one git prints", f.OldMode, f.NewMode)
	}
	if f.OldBlob == "" {
		return nil // a change of mode alone, checked above
	}
	return f.change().check()
}

func validMode(m string) bool { return m != ZeroMode && modeRE.MatchString(m) }

// change is the manifest entry that the headers describe.
func (f *PatchFile) change() FileChange {
	path := f.NewPath
	if path == "" {
		path = f.OldPath
	}
	return FileChange{Path: path, Status: f.Status, OldMode: f.OldMode, NewMode: f.NewMode, OldBlob: f.OldBlob, NewBlob: f.NewBlob}
}

// body reads what follows the headers: a text patch, a binary patch, or
// nothing for a change of mode alone and for an empty file added or deleted.
func (r *lineReader) body(f *PatchFile, path string) error {
	l, _ := r.peek()
	hasBody := bytes.HasPrefix(l, []byte("--- ")) || string(l) == "GIT binary patch"
	bodiless := f.OldBlob == "" || (f.Status == "A" && f.NewBlob == emptyBlob) || (f.Status == "D" && f.OldBlob == emptyBlob)
	switch {
	case hasBody && bodiless:
		return fmt.Errorf("%q: a body where git prints none", path)
	case !hasBody && !bodiless:
		return fmt.Errorf("%q: no body where git prints one", path)
	case !hasBody:
		return nil
	case l[0] == 'G':
		r.next()
		f.Binary = true
		return r.binaryBody()
	}
	for _, side := range []struct{ prefix, absent, name string }{
		{"--- ", "A", "a/" + path},
		{"+++ ", "D", "b/" + path},
	} {
		rest, ok := r.nextAfter(side.prefix)
		if !ok {
			return fmt.Errorf("missing %q line", strings.TrimSpace(side.prefix))
		}
		want := side.name
		if f.Status == side.absent {
			want = "/dev/null"
		}
		if got, err := patchName(rest); err != nil || got != want {
			return fmt.Errorf("%q line names %q, want %q", strings.TrimSpace(side.prefix), rest, want)
		}
	}
	return r.hunks()
}
