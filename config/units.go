package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Duration is a time.Duration written in TOML as a string with a unit,
// such as "25s" or "1m30s".
type Duration struct{ time.Duration }

// UnmarshalText parses a duration such as "25s"; a bare number is refused
// because its unit would be a guess.
func (d *Duration) UnmarshalText(text []byte) error {
	parsed, err := parseDuration(string(text))
	if err != nil {
		return err
	}
	*d = parsed
	return nil
}

// MarshalText writes the duration in the form UnmarshalText reads.
func (d Duration) MarshalText() ([]byte, error) {
	return []byte(d.Duration.String()), nil
}

func parseDuration(s string) (Duration, error) {
	if s == "" {
		return Duration{}, fmt.Errorf(`empty duration; write a number with a unit, like "25s" or "1m30s"`)
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return Duration{}, fmt.Errorf(`%s has no unit; write it as a string with one, like "%ss"`, s, s)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return Duration{}, fmt.Errorf(`%q is not a duration; write a number with a unit (ms, s, m, h), like "25s" or "1m30s"`, s)
	}
	return Duration{d}, nil
}

// Size is a number of bytes, written in TOML as a string with a binary unit
// ("64KiB", "4MiB", "1GiB") or as a bare integer of bytes.
type Size int64

// Binary units from largest to smallest, so String picks the largest exact one.
var sizeUnits = []struct {
	name  string
	bytes int64
}{
	{"TiB", 1 << 40},
	{"GiB", 1 << 30},
	{"MiB", 1 << 20},
	{"KiB", 1 << 10},
}

// UnmarshalText parses "512MiB", "64KiB", "1GiB" or a bare number of bytes.
func (s *Size) UnmarshalText(text []byte) error {
	parsed, err := parseSize(string(text))
	if err != nil {
		return err
	}
	*s = parsed
	return nil
}

// MarshalText writes the size in the form UnmarshalText reads.
func (s Size) MarshalText() ([]byte, error) {
	return []byte(s.String()), nil
}

// String writes the size with the largest binary unit that divides it
// exactly, or as bytes when none does.
func (s Size) String() string {
	if s != 0 {
		for _, u := range sizeUnits {
			if int64(s)%u.bytes == 0 {
				return strconv.FormatInt(int64(s)/u.bytes, 10) + u.name
			}
		}
	}
	return strconv.FormatInt(int64(s), 10)
}

const sizeFix = `write a whole number with KiB, MiB or GiB, like "512MiB", or a bare number of bytes`

func parseSize(text string) (Size, error) {
	digits := strings.TrimRightFunc(text, func(r rune) bool { return r < '0' || r > '9' })
	unit := text[len(digits):]
	if digits == "" || strings.TrimLeft(digits, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not a size; %s", text, sizeFix)
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is too large a size; %s", text, sizeFix)
	}
	if unit == "" {
		return Size(n), nil
	}
	for _, u := range sizeUnits {
		if unit != u.name {
			continue
		}
		if n > math.MaxInt64/u.bytes {
			return 0, fmt.Errorf("%q is too large a size; %s", text, sizeFix)
		}
		return Size(n * u.bytes), nil
	}
	return 0, fmt.Errorf("%q has an unknown unit %q; %s", text, unit, sizeFix)
}
