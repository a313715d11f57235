//go:build !race

package repair

// raceEnabled shrinks timing tests, which the race detector slows tenfold.
const raceEnabled = false
