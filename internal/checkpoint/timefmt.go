package checkpoint

import (
	"database/sql"
	"database/sql/driver"
	"fmt"
	"time"
)

// timeLayout is RFC 3339 with all nine fractional digits. Unlike
// time.RFC3339Nano it never trims trailing zeros, so stored values have a
// fixed width and sort as text in time order.
const timeLayout = "2006-01-02T15:04:05.000000000Z07:00"

// formatTime renders t in UTC in timeLayout.
func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

// parseTime reads a stored timestamp back as a UTC time.
func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("stored timestamp %q: %w", s, err)
	}
	return t.UTC(), nil
}

// dbTime is a NOT NULL timestamp column.
type dbTime time.Time

// Value implements driver.Valuer.
func (t dbTime) Value() (driver.Value, error) { return formatTime(time.Time(t)), nil }

// Scan implements sql.Scanner.
func (t *dbTime) Scan(src any) error {
	s, ok := src.(string)
	if !ok {
		return fmt.Errorf("timestamp column holds %T, want text", src)
	}
	v, err := parseTime(s)
	if err != nil {
		return err
	}
	*t = dbTime(v)
	return nil
}

// nullTime is a nullable timestamp column, mapped to *time.Time.
type nullTime struct{ t *time.Time }

func toNullTime(t *time.Time) nullTime { return nullTime{t: t} }

// Value implements driver.Valuer.
func (n nullTime) Value() (driver.Value, error) {
	if n.t == nil {
		return nil, nil
	}
	return formatTime(*n.t), nil
}

// Scan implements sql.Scanner.
func (n *nullTime) Scan(src any) error {
	if src == nil {
		n.t = nil
		return nil
	}
	var t dbTime
	if err := t.Scan(src); err != nil {
		return err
	}
	v := time.Time(t)
	n.t = &v
	return nil
}

var (
	_ sql.Scanner   = (*dbTime)(nil)
	_ driver.Valuer = dbTime{}
	_ sql.Scanner   = (*nullTime)(nil)
	_ driver.Valuer = nullTime{}
)
