// Package report renders the history of one run as a single self-contained
// HTML file (SPEC §14): a timeline with a lane per step or map item, each
// attempt a bar coloured by its outcome, the waits between attempts with
// their reason, circuit openings, help rounds and checks; then, per step,
// its attempts, repairs, cost, tokens and turns, each failed attempt's
// diagnosis and the follow-up that was sent, and its dead items.
//
// The report reads the run through history.Inspect, the query layer of
// `cadence inspect`, and adds only the failed-handoff records on disk. It is
// rendered with html/template, so agent output, errors and prompts are
// escaped wherever they land; its CSS and script are embedded in the binary
// and inlined, and a Content-Security-Policy forbids every network request
// and every script but the report's own, so it opens offline from an
// attachment or a CI artifact.
package report

import (
	"bufio"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"sync"
	"time"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/history"
)

// Options say where the report finds the files an attempt names and how it
// ends the timeline of a run still going.
type Options struct {
	// Dir is the project directory the run's failed-handoff records are
	// read from. Empty: none are read, and a failed attempt shows the
	// diagnosis stored in the state database and the next attempt's
	// prompt as the follow-up.
	Dir string
	// Now ends the timeline of a run that has not finished.
	Now time.Time
}

var (
	//go:embed assets/report.html.tmpl
	pageTemplate string
	//go:embed assets/report.css
	styleSheet string
	//go:embed assets/report.js
	script string
)

// policy is the report's Content-Security-Policy: nothing is fetched, and
// the only script that may run is the embedded one, named by its hash, so
// that even markup smuggled past the escaping could not run.
var policy = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'sha256-" + scriptHash() + "'"

func scriptHash() string {
	h := sha256.Sum256([]byte(script))
	return base64.StdEncoding.EncodeToString(h[:])
}

// tmpl is parsed once, at the first report rather than at every start
// of cadence (0.7 ms of each process's initialisation); it holds no state
// between executions.
var tmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("report").Funcs(template.FuncMap{
		"num":  num,
		"pct":  percent,
		"pctw": func(share float64) string { return num(min(max(share, 0), 1)*100) + "%" },
		"svgw": func() string { return num(svgWidth) },
		// labelw is where the plot begins, after the lane names.
		"labelw": func() string { return num(labelWidth + 4) },
		"sumh":   func() string { return num(summaryHeight) },
		"css":    func() template.CSS { return template.CSS(styleSheet) },
		"js":     func() template.JS { return template.JS(script) },
		"csp":    func() string { return policy },
		"runClass": func(s checkpoint.RunStatus) string {
			switch s {
			case checkpoint.RunRunning, checkpoint.RunSucceeded, checkpoint.RunFailed, checkpoint.RunInterrupted, checkpoint.RunAbandoned:
				return string(s)
			}
			return "other"
		},
	}).Parse(pageTemplate))
})

// Render writes the HTML report of rep to w.
func Render(w io.Writer, rep *history.Report, opts Options) error {
	if rep == nil {
		return fmt.Errorf("render report: no run")
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	if err := tmpl().Execute(bw, build(rep, opts)); err != nil {
		return fmt.Errorf("render the report of run %s: %w", rep.Run.ID, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write the report of run %s: %w", rep.Run.ID, err)
	}
	return nil
}
