package main

import "testing"

func TestGCTarget(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want int
		set  bool
	}{
		{"GOGC unset", map[string]string{"HOME": "/h"}, 400, true},
		{"GOGC chosen by the user", map[string]string{"GOGC": "50"}, 0, false},
		{"GOGC off", map[string]string{"GOGC": "off"}, 0, false},
		{"GOGC set empty", map[string]string{"GOGC": ""}, 400, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, set := gcTarget(func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok })
			if got != tt.want || set != tt.set {
				t.Errorf("gcTarget = %d, %v; want %d, %v", got, set, tt.want, tt.set)
			}
		})
	}
}
