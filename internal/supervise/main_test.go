package supervise

import (
	"os"
	"testing"
)

// helperEnv makes the test binary the supervisor, as `cadence agent
// supervise` makes cadence: os.Args[1:] are the supervisor's arguments.
const helperEnv = "SUPERVISE_TEST_SUPERVISOR"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(Main(os.Args[1:], os.Stderr))
	}
	os.Exit(m.Run())
}
