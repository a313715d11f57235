package circuit

import (
	"errors"
	"testing"
)

func TestTransitionAllowsExactlyTheTable(t *testing.T) {
	allowed := map[[2]State]bool{
		{Closed, Open}:     true,
		{Open, HalfOpen}:   true,
		{Open, Closed}:     true,
		{HalfOpen, Open}:   true,
		{HalfOpen, Closed}: true,
	}
	states := []State{Closed, Open, HalfOpen}
	for _, from := range states {
		for _, to := range states {
			err := Transition(from, to)
			if allowed[[2]State{from, to}] {
				if err != nil {
					t.Errorf("Transition(%s, %s) = %v, want allowed", from, to, err)
				}
				continue
			}
			if !errors.Is(err, ErrInvalidTransition) {
				t.Errorf("Transition(%s, %s) = %v, want ErrInvalidTransition", from, to, err)
			}
		}
	}
	for _, pair := range [][2]State{{"", Open}, {Closed, "melted"}, {"", ""}} {
		if err := Transition(pair[0], pair[1]); !errors.Is(err, ErrInvalidTransition) {
			t.Errorf("Transition(%q, %q) = %v, want ErrInvalidTransition", pair[0], pair[1], err)
		}
	}
}

func TestStateValid(t *testing.T) {
	for s, want := range map[State]bool{Closed: true, Open: true, HalfOpen: true, "": false, "half-open": false, "OPEN": false} {
		if got := s.Valid(); got != want {
			t.Errorf("State(%q).Valid() = %v, want %v", s, got, want)
		}
	}
}
