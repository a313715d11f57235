package report

import (
	"strings"
	"testing"
	"time"
)

// TestTicks checks that the axis steps by a round duration chosen by the
// run's length, with at most targetTicks intervals, and labels each tick
// with the precision its step needs.
func TestTicks(t *testing.T) {
	day := 24 * time.Hour
	tests := []struct {
		span   time.Duration
		step   time.Duration
		labels string // the first few labels
	}{
		// Runs shorter than a second get a one-second axis: 1s/100ms =
		// 10 intervals; 50ms would give 20.
		{0, 100 * time.Millisecond, "0 +100ms +200ms"},
		{3 * time.Second, 500 * time.Millisecond, "0 +500ms +1s +1.5s +2s"},
		{10 * time.Second, time.Second, "0 +1s +2s +3s"},
		// 4m/15s = 16 > 10; 4m/30s = 8.
		{4 * time.Minute, 30 * time.Second, "0 +30s +1m +1m30s +2m"},
		// 45m/2m = 22.5; 45m/5m = 9.
		{45 * time.Minute, 5 * time.Minute, "0 +5m +10m"},
		// 3h/15m = 12; 3h/30m = 6.
		{3 * time.Hour, 30 * time.Minute, "0 +30m +1h +1h30m +2h"},
		// 2d/3h = 16; 2d/6h = 8.
		{2 * day, 6 * time.Hour, "0 +6h +12h +18h +1d +1d06h"},
		// Past the largest round step (28d), multiples of it: 2000d/28d
		// = 71.4, 71/10+1 = 8 times 28d = 224d.
		{2000 * day, 224 * day, "0 +224d +448d"},
	}
	for _, tc := range tests {
		sc := newScale(epoch, epoch.Add(tc.span))
		if got := tickStep(sc.span); got != tc.step {
			t.Errorf("span %v: step %v, want %v", tc.span, got, tc.step)
			continue
		}
		ticks := sc.ticks()
		if len(ticks)-1 > targetTicks {
			t.Errorf("span %v: %d intervals, want at most %d", tc.span, len(ticks)-1, targetTicks)
		}
		want := strings.Fields(tc.labels)
		var got []string
		for _, tk := range ticks[:min(len(want), len(ticks))] {
			got = append(got, tk.Label)
		}
		if strings.Join(got, " ") != tc.labels {
			t.Errorf("span %v: labels %q, want %q", tc.span, strings.Join(got, " "), tc.labels)
		}
		if ticks[0].X != labelWidth {
			t.Errorf("span %v: first tick at %v, want the plot's left edge %v", tc.span, ticks[0].X, labelWidth)
		}
	}
}

// TestScale checks positions: the plot starts after the label column, is
// plotWidth wide, clamps instants outside the run, and keeps short bars
// visible.
func TestScale(t *testing.T) {
	sc := newScale(epoch, epoch.Add(100*time.Second))
	tests := []struct {
		at   time.Duration
		want float64
	}{
		{0, labelWidth},
		{25 * time.Second, labelWidth + 250},
		{100 * time.Second, labelWidth + plotWidth},
		{-time.Minute, labelWidth},
		{time.Hour, labelWidth + plotWidth},
	}
	for _, tc := range tests {
		if got := sc.x(epoch.Add(tc.at)); got != tc.want {
			t.Errorf("x(+%v) = %v, want %v", tc.at, got, tc.want)
		}
	}
	if got := sc.width(epoch, epoch.Add(time.Millisecond), minBarWidth); got != minBarWidth {
		t.Errorf("a 1ms bar in a 100s run is %v wide, want the minimum %v", got, minBarWidth)
	}
}

func TestHuman(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"}, {-time.Second, "0s"}, {850 * time.Millisecond, "850ms"}, {1234 * time.Millisecond, "1.2s"},
		{42 * time.Second, "42s"}, {4*time.Minute + 5*time.Second, "4m05s"}, {2*time.Hour + 3*time.Minute, "2h03m"},
		{76 * time.Hour, "3d04h"},
	}
	for _, tc := range tests {
		if got := human(tc.d); got != tc.want {
			t.Errorf("human(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}
