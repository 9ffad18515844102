package policy

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Duration is a TOML/JSON duration written as Go writes them ("30m", "90s").
type Duration time.Duration

// UnmarshalText parses "30m", "1h30m", "45s".
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil || v < 0 {
		return fmt.Errorf("%q is not a duration (write it like 30m or 90s)", b)
	}
	*d = Duration(v)
	return nil
}

// MarshalText writes the duration as Go writes it.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// Size is a byte count written with a binary unit ("4GiB", "512MiB", "100").
type Size int64

var sizeUnits = []struct {
	suffix string
	factor int64
}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}}

// UnmarshalText parses "4GiB", "8MiB", "512KiB" or a plain number of bytes.
func (s *Size) UnmarshalText(b []byte) error {
	text := strings.TrimSpace(string(b))
	factor := int64(1)
	for _, u := range sizeUnits {
		if n, ok := strings.CutSuffix(text, u.suffix); ok {
			text, factor = strings.TrimSpace(n), u.factor
			break
		}
	}
	v, err := strconv.ParseInt(text, 10, 64)
	if err != nil || v < 0 || v > (1<<62)/factor {
		return fmt.Errorf("%q is not a size (write it like 4GiB, 512MiB or 1048576)", b)
	}
	*s = Size(v * factor)
	return nil
}

// MarshalText writes the size with the largest unit that divides it.
func (s Size) MarshalText() ([]byte, error) {
	for _, u := range sizeUnits {
		if s != 0 && int64(s)%u.factor == 0 {
			return []byte(fmt.Sprintf("%d%s", int64(s)/u.factor, u.suffix)), nil
		}
	}
	return []byte("0"), nil
}

// String is the duration as written in policy files.
func (d Duration) String() string { return time.Duration(d).String() }

// String is the size as written in policy files.
func (s Size) String() string {
	b, _ := s.MarshalText()
	return string(b)
}
