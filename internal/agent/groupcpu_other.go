//go:build !linux

package agent

import "time"

// groupCPU cannot see the CPU use of processes outside Linux: idle
// detection there counts output only.
type groupCPU struct{}

func newGroupCPU(int) *groupCPU { return &groupCPU{} }

func (*groupCPU) sample() time.Duration { return 0 }

func (*groupCPU) since(int) {}

// cpuAware reports whether idle detection can see CPU use here.
const cpuAware = false
