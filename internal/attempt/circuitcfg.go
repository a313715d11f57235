package attempt

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/circuit"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// agentConfigHash identifies the configuration of an agent that decides
// whether it can run at all: its preset, program, arguments, the names
// (not the values) of the environment variables it adds, its endpoint and
// model, its circuit settings and, for the sim preset, its scenario's
// content. A breaker recorded under another hash was opened by another
// configuration.
func agentConfigHash(ag *workflow.Agent) string {
	envKeys := slices.Sorted(maps.Keys(ag.Env))
	var scenario []byte
	if ag.Scenario != "" {
		// Unreadable: the attempt will say so; the hash only has to be
		// stable for the same file.
		b, _ := os.ReadFile(ag.Scenario)
		sum := sha256.Sum256(b)
		scenario = sum[:]
	}
	b, _ := json.Marshal(struct {
		Preset, PromptVia, Output, BaseURL, Model, APIKeyEnv string
		Command, Args, ContinueArgs, EnvKeys                 []string
		NativeSchema                                         bool
		Scenario                                             []byte
		Failures, HalfOpenCalls                              int
		OpenFor                                              time.Duration
	}{ag.Preset, ag.PromptVia, ag.Output, ag.BaseURL, ag.Model, ag.APIKeyEnv,
		ag.Command, ag.Args, ag.ContinueArgs, envKeys, ag.NativeSchema, scenario,
		ag.Circuit.Failures, ag.Circuit.HalfOpenCalls, ag.Circuit.OpenFor})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// agentConfigHashes hashes every agent of a workflow once, when the
// project is opened.
func agentConfigHashes(wf *workflow.Workflow) map[string]string {
	out := make(map[string]string, len(wf.Agents))
	for name, ag := range wf.Agents {
		out[name] = agentConfigHash(ag)
	}
	return out
}

// breakerRead is an agent's breaker as an attempt of this workflow sees
// it, read in the attempt's transaction.
type breakerRead struct {
	circuit.Breaker
	hash    string // the agent's configuration now, stored with the next write
	changed bool   // recorded under another configuration, and read as reset
}

// agentBreaker reads an agent's breaker. One recorded under another
// configuration of the agent is read as reset, and the reset noted in the
// audit log: the failures it counted were the old configuration's (a
// misspelt program, a wrong endpoint), and the fixed workflow must not
// wait out the circuit that mistake opened.
func (r *Runner) agentBreaker(tx *checkpoint.Tx, agentName string, now time.Time) (breakerRead, error) {
	b, stored, err := loadBreakerHash(tx, agentName)
	if err != nil {
		return breakerRead{}, err
	}
	br := breakerRead{Breaker: b, hash: r.configHashes[agentName]}
	if stored == "" || br.hash == "" || stored == br.hash {
		return br, nil
	}
	br.changed = true
	if b.State == circuit.Closed && b.Failures == 0 {
		return br, nil
	}
	br.Breaker = circuit.Reset(b, now)
	err = tx.AddEvent(checkpoint.Event{At: now, Kind: "circuit_reset",
		Detail: fmt.Sprintf("circuit of agent %s closed: the agent's configuration changed since it was recorded (was %s; failures counted: %d)",
			agentName, b.State, b.Failures)})
	return br, err
}

// putBreaker stores next as its agent's breaker, read as before in the
// same transaction, unless the attempt left it as it was (and it is
// stored already, under this configuration): most outcomes change
// nothing, and every process sharing a database would otherwise write,
// and contend for, the agent's one row at every attempt.
func putBreaker(tx *checkpoint.Tx, before breakerRead, next circuit.Breaker, now time.Time) error {
	if !before.changed && sameBreaker(before.Breaker, next) {
		_, err := tx.Circuit(next.Agent)
		if err == nil || !errors.Is(err, checkpoint.ErrNotFound) {
			return err
		}
	}
	row := BreakerRow(next, now)
	row.ConfigHash = before.hash
	return tx.PutCircuit(row)
}
