package agent_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/agent"
	"github.com/cadence-dev/cadence/internal/agent/sim"
)

// spin keeps one core busy for d.
func spin(d time.Duration) {
	end := time.Now().Add(d)
	x := 0
	for time.Now().Before(end) {
		for i := range 1 << 16 {
			x += i
		}
	}
	_ = x
}

// sigIgn returns the SigIgn mask (hex) of a /proc status file.
func sigIgn(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "unreadable: " + err.Error()
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "SigIgn:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "missing"
}

// helperEnv switches the test binary into a helper process: the simulated
// agent (as `cadence agent sim …`) or one of the small agents below. Tests
// run real processes this way without a shell or a separate build.
const helperEnv = "CADENCE_AGENT_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(helperMain(os.Args[1:]))
	}
	os.Exit(m.Run())
}

func helperMain(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "helper: no mode")
		return 2
	}
	arg := func(i int) string {
		if i < len(args) {
			return args[i]
		}
		return ""
	}
	if arg(len(args)-1) == "ignore-term" {
		signal.Ignore(syscall.SIGTERM)
	}
	switch args[0] {
	case "agent": // agent sim … or agent supervise …
		if arg(1) == "supervise" {
			return agent.Supervise(args[2:], os.Stderr)
		}
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		defer stop()
		return sim.Main(ctx, args[2:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	case "cat":
		_, _ = io.Copy(os.Stdout, os.Stdin)
		fmt.Fprintln(os.Stderr, "note on stderr")
		return 0
	case "args":
		for _, a := range args[1:] {
			fmt.Println(a)
		}
		return 0
	case "print":
		data, err := os.ReadFile(arg(1))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		_, _ = os.Stdout.Write(data)
		return 0
	case "replay":
		// replay STDOUT STDERR CODE: a recorded transcript, its stderr,
		// and the CLI's exit code.
		for i, w := range []*os.File{os.Stderr, os.Stdout} {
			data, err := os.ReadFile(arg(2 - i))
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 2
			}
			_, _ = w.Write(data)
		}
		code, _ := strconv.Atoi(arg(3))
		return code
	case "getenv":
		// getenv NAME...: NAME=value of each, as the agent sees it.
		for _, name := range args[1:] {
			fmt.Printf("%s=%s\n", name, os.Getenv(name))
		}
		return 0
	case "exit":
		code, _ := strconv.Atoi(arg(1))
		fmt.Println("bye")
		return code
	case "bytes":
		n, _ := strconv.Atoi(arg(1))
		_, _ = os.Stdout.WriteString(strings.Repeat("y", n))
		return 0
	case "flood":
		line := strings.Repeat("x", 64<<10) + "\n"
		for {
			if _, err := os.Stdout.WriteString(line); err != nil {
				return 1
			}
		}
	case "tick":
		n, _ := strconv.Atoi(arg(1))
		every, _ := time.ParseDuration(arg(2))
		for i := range n {
			fmt.Println("tick", i)
			time.Sleep(every)
		}
		return 0
	case "transcript":
		// transcript N SIZE ANSWER: Claude Code stream-json with N tool
		// results of SIZE bytes each, then a result event whose answer is
		// {"ok": true} (ANSWER "small") or "big:K", K bytes of text.
		n, _ := strconv.Atoi(arg(1))
		size, _ := strconv.Atoi(arg(2))
		w := bufio.NewWriterSize(os.Stdout, 1<<16)
		fmt.Fprintln(w, `{"type":"system","subtype":"init","session_id":"5e55a1d0-0000-4000-8000-000000000001"}`)
		for i := range n {
			fmt.Fprintf(w, `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t%d","content":"%s"}]}}`+"\n", i, strings.Repeat("x", size))
		}
		answer := `{\"ok\": true}`
		if k, ok := strings.CutPrefix(arg(3), "big:"); ok {
			size, _ := strconv.Atoi(k)
			answer = strings.Repeat("a", size)
		}
		fmt.Fprintf(w, `{"type":"result","subtype":"success","is_error":false,"result":"%s","session_id":"5e55a1d0-0000-4000-8000-000000000001","num_turns":%d}`+"\n", answer, n+1)
		if err := w.Flush(); err != nil {
			return 1
		}
		return 0
	case "burn":
		// burn D: no output while using a core for D, like a build run
		// by an agent's tool; then an answer.
		d, _ := time.ParseDuration(arg(1))
		spin(d)
		fmt.Println(`{"ok": true}`)
		return 0
	case "burn-child":
		// burn-child D: silent while a child in a session of its own (a
		// detached tool) burns a core for D; then an answer.
		exe, err := os.Executable()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		child := exec.Command(exe, "burn", arg(1))
		child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := child.Run(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		fmt.Println(`{"ok": true}`)
		return 0
	case "silent":
		// A CLI hung at its start: no output at all, no CPU.
		time.Sleep(time.Hour)
		return 0
	case "stderr-then-sleep":
		// stderr-then-sleep D: one line on stderr, silence for D, then
		// an answer.
		fmt.Fprintln(os.Stderr, "warming up")
		d, _ := time.ParseDuration(arg(1))
		time.Sleep(d)
		fmt.Println(`{"ok": true}`)
		return 0
	case "sleep":
		fmt.Println("sleeping")
		time.Sleep(time.Hour)
		return 0
	case "escape":
		// A descendant that leaves the process group (as a daemonising tool
		// would) while still holding stdout.
		exe, err := os.Executable()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		child := exec.Command(exe, "sleep")
		child.Stdout = os.Stdout
		child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		fmt.Printf("escaped %d\n", child.Process.Pid)
		return 0
	case "answer-hang":
		// A final answer (Claude Code's result event), then no exit.
		fmt.Println(`{"type":"result","subtype":"success","is_error":false,"result":"{\"ok\": true}","session_id":"5e55a1d0-0000-4000-8000-000000000002"}`)
		time.Sleep(time.Hour)
		return 0
	case "close-hang":
		// A text answer, stdout closed, then no exit.
		fmt.Println(`{"ok": true}`)
		os.Stdout.Close()
		time.Sleep(time.Hour)
		return 0
	case "escape-hang":
		// A descendant in a session of its own, then the agent hangs
		// (ignoring SIGTERM when the last argument says so).
		exe, err := os.Executable()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		child := exec.Command(exe, "sleep")
		child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		fmt.Printf("escaped %d\n", child.Process.Pid)
		time.Sleep(time.Hour)
		return 0
	case "tree":
		// A child that starts a grandchild in its own process group, as a
		// real agent starting a tool would.
		sub := []string{"sleep"}
		if arg(1) == "ignore-term" {
			sub = append(sub, "ignore-term")
		}
		exe, err := os.Executable()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		child := exec.Command(exe, sub...)
		child.Stdout = os.Stdout
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		fmt.Printf("pids %d %d\n", os.Getpid(), child.Process.Pid)
		time.Sleep(time.Hour)
		return 0
	}
	fmt.Fprintln(os.Stderr, "helper: unknown mode", args[0])
	return 2
}
