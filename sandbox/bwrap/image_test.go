package bwrap

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/git-lease/git-lease/sandbox"
)

// imageSpec is a lease with a disk bound whose runtime and bases
// directories are under dir.
func imageSpec(t testing.TB, dir, id string, bound int64) sandbox.Spec {
	if why := kernelDiskMissing(); why != "" {
		t.Skip("no kernel disk bound here: " + why)
	}
	spec := sandbox.Spec{ID: id, Dir: filepath.Join(dir, id), BasesDir: filepath.Join(dir, "bases"), Limits: sandbox.Limits{DiskBytes: bound}}
	if err := os.MkdirAll(spec.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return spec
}

// Every mount of one image, by this process or another, is one file
// system through one loop device: two loop devices on one image would be
// two file systems writing the same blocks.
func TestImageMountsShareOneLoopDevice(t *testing.T) {
	spec := imageSpec(t, t.TempDir(), "0123456789ab", 8<<20)
	if err := makeImage(spec); err != nil {
		t.Fatal(err)
	}
	a, err := mountImage(imagePath(spec))
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(a)
	if err := ownImage(a, LeaseUIDBase, LeaseUIDBase); err != nil {
		t.Fatal(err)
	}
	b, err := mountImage(imagePath(spec))
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(b)
	var sa, sb unix.Stat_t
	if err := unix.Fstat(a, &sa); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fstat(b, &sb); err != nil {
		t.Fatal(err)
	}
	if sa.Dev != sb.Dev {
		t.Fatalf("two mounts of one image are two file systems (devices %d and %d)", sa.Dev, sb.Dev)
	}
	if err := os.WriteFile("/proc/self/fd/"+strconv.Itoa(a)+"/upper/seen", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/proc/self/fd/" + strconv.Itoa(b) + "/upper/seen"); err != nil {
		t.Fatalf("a file written through one mount is not in the other: %v", err)
	}
	var upper unix.Stat_t
	if err := unix.Stat("/proc/self/fd/"+strconv.Itoa(a)+"/upper", &upper); err != nil {
		t.Fatal(err)
	}
	if upper.Uid != LeaseUIDBase || upper.Gid != LeaseUIDBase || upper.Mode&0o7777 != 0o755 {
		t.Fatalf("the upper directory is %d:%d mode %o, want the lease's uid, 755", upper.Uid, upper.Gid, upper.Mode&0o7777)
	}
}

// BenchmarkImagePerLease measures what the kernel's disk bound adds to a
// root lease's start (the default 2 GiB bound; the template is formatted
// once, before the loop): copying the template's extents (Create), and
// Launch's two detached mounts (the host's, which attaches the loop
// device, and the sandbox's) and handing the directories to the lease's
// uid; then the end of the lease, when the last mount goes.
func BenchmarkImagePerLease(b *testing.B) {
	dir := b.TempDir()
	first := imageSpec(b, dir, "template", 2<<30)
	if _, err := imageTemplate(first); err != nil {
		b.Fatal(err)
	}
	var start, end time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		began := time.Now()
		spec := imageSpec(b, dir, strconv.Itoa(i), 2<<30)
		if err := makeImage(spec); err != nil {
			b.Fatal(err)
		}
		host, err := mountImage(imagePath(spec))
		if err != nil {
			b.Fatal(err)
		}
		if err := ownImage(host, LeaseUIDBase, LeaseUIDBase); err != nil {
			b.Fatal(err)
		}
		sandbox, err := mountImage(imagePath(spec))
		if err != nil {
			b.Fatal(err)
		}
		started := time.Now()
		unix.Close(sandbox)
		unix.Close(host)
		start += started.Sub(began)
		end += time.Since(started)
	}
	b.ReportMetric(float64(start.Microseconds())/float64(b.N)/1000, "start-ms/op")
	b.ReportMetric(float64(end.Microseconds())/float64(b.N)/1000, "end-ms/op")
}

// BenchmarkImageTemplate measures formatting a 2 GiB template, which the
// first lease with a new disk bound pays.
func BenchmarkImageTemplate(b *testing.B) {
	for i := 0; i < b.N; i++ {
		spec := imageSpec(b, b.TempDir(), "template", 2<<30)
		if _, err := imageTemplate(spec); err != nil {
			b.Fatal(err)
		}
	}
}
