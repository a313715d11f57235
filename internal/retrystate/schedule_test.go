package retrystate

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC)

func TestSchedule(t *testing.T) {
	paris := time.FixedZone("CET", 3600)
	tests := []struct {
		name       string
		finishedAt time.Time
		drawn      time.Duration
		retryAfter time.Duration
		wantDelay  time.Duration
		wantNext   time.Time
	}{
		{"drawn only", t0, 1873 * time.Millisecond, 0, 1873 * time.Millisecond, time.Date(2026, 3, 14, 9, 26, 54, 873e6, time.UTC)},
		{"retry-after larger", t0, 2 * time.Second, 30 * time.Second, 30 * time.Second, time.Date(2026, 3, 14, 9, 27, 23, 0, time.UTC)},
		{"retry-after smaller", t0, 40 * time.Second, 5 * time.Second, 40 * time.Second, time.Date(2026, 3, 14, 9, 27, 33, 0, time.UTC)},
		{"both zero", t0, 0, 0, 0, t0},
		{"negative counts as zero", t0, -time.Second, -time.Minute, 0, t0},
		{"other zone becomes UTC", time.Date(2026, 3, 14, 10, 26, 53, 0, paris), time.Minute, 0, time.Minute, time.Date(2026, 3, 14, 9, 27, 53, 0, time.UTC)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			delay, next := Schedule(tt.finishedAt, tt.drawn, tt.retryAfter)
			if delay != tt.wantDelay {
				t.Errorf("delay = %v, want %v", delay, tt.wantDelay)
			}
			if next != tt.wantNext { // == also checks location and monotonic reading
				t.Errorf("next = %v, want %v", next, tt.wantNext)
			}
		})
	}
}

func TestScheduleStripsMonotonicReading(t *testing.T) {
	_, next := Schedule(time.Now(), time.Second, 0)
	if next != next.Round(0) {
		t.Errorf("next %v carries a monotonic clock reading", next)
	}
}

func TestLater(t *testing.T) {
	tests := []struct {
		name             string
		stored, proposed time.Time
		want             time.Time
	}{
		{"proposed later", t0, t0.Add(time.Minute), t0.Add(time.Minute)},
		{"stored later is kept", t0.Add(time.Minute), t0, t0.Add(time.Minute)},
		{"equal", t0, t0, t0},
		{"nothing stored", time.Time{}, t0, t0},
		{"nothing proposed", t0, time.Time{}, t0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Later(tt.stored, tt.proposed); !got.Equal(tt.want) || got.Location() != time.UTC {
				t.Errorf("Later(%v, %v) = %v, want %v in UTC", tt.stored, tt.proposed, got, tt.want)
			}
		})
	}
}

func TestRemaining(t *testing.T) {
	tests := []struct {
		name          string
		now, deadline time.Time
		want          time.Duration
	}{
		{"ahead", t0, t0.Add(90 * time.Second), 90 * time.Second},
		{"at deadline", t0, t0, 0},
		{"past deadline", t0.Add(time.Hour), t0, 0},
		{"zones do not matter", t0.In(time.FixedZone("X", -5*3600)), t0.Add(time.Second), time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Remaining(tt.now, tt.deadline); got != tt.want {
				t.Errorf("Remaining = %v, want %v", got, tt.want)
			}
		})
	}
}
