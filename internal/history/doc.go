// Package history is the run as read: inspect and its report types,
// stats, follow, the list of runs and a step's output, and the events the
// run loop emits. It never writes the state, and it never takes the
// project lock or a run's lease, so every read-only command and the HTML
// report use it while a run goes on, and none of them imports the engine.
package history
