//go:build !linux

package agent

import "context"

// KillOrphanGroup needs /proc to find the members of a group whose leader is
// gone; elsewhere it finds nothing. See the Linux implementation.
func KillOrphanGroup(ctx context.Context, pgid int, envKV string) (bool, error) {
	return false, nil
}
