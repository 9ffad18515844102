package main

import (
	"fmt"
	"os"
)

// stop deletes a box and its local claim. A box that is already gone but
// still claimed loses its claim; an unknown ID exits 4 "not found". A fixed
// lease ID leaves a tombstone, so it can never be leased again.
func stop(args []string) *exitError {
	fs := newFlags("stop")
	fs.String("provider", "", "")
	id := fs.String("id", "", "")
	if err := parse(fs, args); err != nil {
		return err
	}
	switch {
	case *id != "" && fs.NArg() > 0, fs.NArg() > 1:
		return fail(2, "usage: crabbox stop <lease-id-or-slug>")
	case *id == "" && fs.NArg() == 1:
		*id = fs.Arg(0)
	case *id == "":
		return fail(2, "usage: crabbox stop <lease-id-or-slug>")
	}
	root, err := providerRoot()
	if err != nil {
		return err
	}
	b, err := loadBox(root, *id)
	if err != nil && !hasClaim(*id) {
		return err
	}
	if knob("STOP", "") == "leave" {
		fmt.Printf("deleted lease=%s server=%s\n", *id, *id)
		return nil
	}
	if err == nil {
		if b.Fixed {
			os.MkdirAll(tombstone(root, ""), 0o755)
			os.WriteFile(tombstone(root, b.ID), nil, 0o644)
		}
		if err := os.RemoveAll(boxDir(root, b.ID)); err != nil {
			return fail(7, "delete box %s: %v", b.ID, err)
		}
	}
	removeClaim(*id)
	if knob("STOP", "") == "notfound" {
		return fail(4, "lease not found: %s", *id)
	}
	fmt.Printf("deleted lease=%s server=%s\n", *id, *id)
	return nil
}
