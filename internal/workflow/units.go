package workflow

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"
)

// errUnit is returned by the unit parsers; the caller reports the value.
var errUnit = errors.New("bad unit")

// parseDuration accepts Go duration syntax with at least one unit ("2s",
// "1m30s", "250ms") and the bare number 0. Negative durations are refused.
func parseDuration(s string) (time.Duration, error) {
	if s == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, errUnit
	}
	return d, nil
}

// sizeUnits maps a size suffix to its multiplier. Decimal and binary units
// both exist in the wild (1MB vs 1MiB); both mean what they say.
var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9},
	{"B", 1},
}

// parseSize accepts a whole number of bytes with an optional unit: "1024",
// "512KiB", "8MiB", "1MB". No spaces, no fractions, no lowercase units.
func parseSize(s string) (int64, error) {
	num, mult := s, int64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(s, u.suffix) {
			num, mult = strings.TrimSuffix(s, u.suffix), u.mult
			break
		}
	}
	if num == "" || strings.TrimLeft(num, "0123456789") != "" {
		return 0, errUnit
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n > math.MaxInt64/mult {
		return 0, errUnit
	}
	return n * mult, nil
}

// duration decodes a duration of at least lo.
func (d *decoder) duration(e entry, lo time.Duration) field[time.Duration] {
	var text string
	switch v := unwrap(e.val).(type) {
	case *ast.StringNode:
		text = v.Value
	case *ast.IntegerNode:
		text = v.GetToken().Value
	default:
		d.fail(e.valAt(), "want a duration such as 2s or 1m30s, got %s", describe(e.val))
		return field[time.Duration]{}
	}
	v, err := parseDuration(text)
	if err != nil {
		d.fail(e.valAt(), "invalid duration %q (want e.g. 2s, 1m30s or 500ms)", text)
		return field[time.Duration]{}
	}
	if v < lo {
		d.fail(e.valAt(), "duration %s is too short (want at least %s)", text, lo)
		return field[time.Duration]{}
	}
	return field[time.Duration]{v: v, set: true, at: e.valAt()}
}

// size decodes a positive byte count.
func (d *decoder) size(e entry) field[int64] {
	var text string
	switch v := unwrap(e.val).(type) {
	case *ast.StringNode:
		text = v.Value
	case *ast.IntegerNode:
		text = v.GetToken().Value
	default:
		d.fail(e.valAt(), "want a size such as 8MiB or 1024, got %s", describe(e.val))
		return field[int64]{}
	}
	v, err := parseSize(text)
	if err != nil || v == 0 {
		d.fail(e.valAt(), "invalid size %q (want e.g. 8MiB, 512KiB, 1MB or a number of bytes)", text)
		return field[int64]{}
	}
	return field[int64]{v: v, set: true, at: e.valAt()}
}
