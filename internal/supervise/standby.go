package supervise

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// A standby supervisor (`cadence agent supervise --parent PID --standby`)
// is started before the attempt it will serve is known, so that its start
// (an exec of the cadence binary and the Go runtime's initialisation, a
// few milliseconds) is paid while the attempt before it runs, not between
// two attempts. It does all a supervisor does before its program starts
// (the parent-death signal, the child subreaper), tells cadence it is
// ready with one byte on its control socket (descriptor 3, a unix stream
// socket), and then waits there for its order: the program's standard
// descriptors, passed with the first bytes (SCM_RIGHTS), then the order's
// length, its working directory, argv and environment (EncodeOrder). The
// order is the start gate: cadence sends it once it has committed the
// supervisor's pid (G1, G5), and a socket closed without one (cadence
// gone, or the attempt given up) ends the supervisor without starting
// anything.
//
// Once the program has ended and every process it started is killed and
// reaped, the supervisor reports how the program ended on the socket
// (EncodeEnd) and is ready for another order: one supervisor serves many
// attempts, one at a time, so that an attempt costs a fork and an exec of
// its program, not a start of the cadence binary as well. An attempt
// leaves nothing behind for the next: the supervisor is a child
// subreaper, so everything the program started is its descendant until
// killed, and one that cannot kill them all within KillBound reports its
// end as not reusable and exits as a one-shot supervisor does.

// orderLimit bounds an order: argv and the environment of an agent fit
// in ARG_MAX (2 MiB on Linux), and an order is never larger than what the
// kernel would let cadence exec.
const orderLimit = 4 << 20

// order is what a standby supervisor is to run.
type order struct {
	dir   string
	argv  []string
	env   []string
	files []*os.File // stdin, stdout, stderr
}

// close closes the order's descriptors in the supervisor: the program
// holds its own copies once started.
func (o *order) close() {
	for _, f := range o.files {
		f.Close()
	}
}

// controlFD is the descriptor of a standby supervisor's control socket.
const controlFD = 3

// awaitOrder says the supervisor is ready and reads its order; false when
// the socket closed without a whole one.
func awaitOrder() (*order, bool) {
	if _, err := syscall.Write(controlFD, []byte{1}); err != nil {
		return nil, false
	}
	buf := make([]byte, 64<<10)
	oob := make([]byte, syscall.CmsgSpace(3*4))
	n, oobn, _, _, err := recvmsg(controlFD, buf, oob)
	if err != nil || n == 0 {
		return nil, false
	}
	files, ok := passedFiles(oob[:oobn])
	if !ok {
		return nil, false
	}
	size, payload, ok := unframe(buf[:n])
	if !ok {
		closeAll(files)
		return nil, false
	}
	payload = append([]byte(nil), payload...)
	for len(payload) < size {
		n, err := read(controlFD, buf[:min(len(buf), size-len(payload))])
		if err != nil || n == 0 {
			closeAll(files)
			return nil, false
		}
		payload = append(payload, buf[:n]...)
	}
	o, ok := parseOrder(payload)
	if !ok {
		closeAll(files)
		return nil, false
	}
	o.files = files
	return o, true
}

// passedFiles returns the three descriptors passed with the order's first
// bytes; false unless exactly three came.
func passedFiles(oob []byte) ([]*os.File, bool) {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, false
	}
	var fds []int
	for _, m := range msgs {
		got, err := syscall.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		fds = append(fds, got...)
	}
	if len(fds) != 3 {
		for _, fd := range fds {
			syscall.Close(fd)
		}
		return nil, false
	}
	names := []string{"stdin", "stdout", "stderr"}
	files := make([]*os.File, 3)
	for i, fd := range fds {
		// Never inherited as they are: the program gets them as 0, 1, 2.
		syscall.CloseOnExec(fd)
		files[i] = os.NewFile(uintptr(fd), names[i])
	}
	return files, true
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// parseOrder reads an order's text: the working directory, the number of
// argv words, the words, the number of environment entries, the entries,
// each ended by a NUL.
func parseOrder(b []byte) (*order, bool) {
	if len(b) == 0 || b[len(b)-1] != 0 {
		return nil, false
	}
	fields := bytes.Split(b[:len(b)-1], []byte{0})
	o := &order{}
	next := func() (string, bool) {
		if len(fields) == 0 {
			return "", false
		}
		f := string(fields[0])
		fields = fields[1:]
		return f, true
	}
	list := func() ([]string, bool) {
		c, ok := next()
		n, err := strconv.Atoi(c)
		if !ok || err != nil || n < 0 || n > len(fields) {
			return nil, false
		}
		out := make([]string, n)
		for i := range out {
			out[i], _ = next()
		}
		return out, true
	}
	var ok bool
	if o.dir, ok = next(); !ok {
		return nil, false
	}
	if o.argv, ok = list(); !ok || len(o.argv) == 0 {
		return nil, false
	}
	if o.env, ok = list(); !ok || len(fields) != 0 {
		return nil, false
	}
	return o, true
}

// EncodeOrder is the text of an order, as parseOrder reads it: the
// program runs in dir with argv (argv[0] its path) and exactly the
// environment env. A NUL in
// any of its strings cannot be passed to exec either: it is an error.
func EncodeOrder(dir string, argv, env []string) ([]byte, error) {
	if len(argv) == 0 {
		return nil, errors.New("no program to run")
	}
	var b bytes.Buffer
	add := func(s string) error {
		if bytes.IndexByte([]byte(s), 0) >= 0 {
			return errors.New("a NUL byte in an argument, the environment or the directory")
		}
		b.WriteString(s)
		b.WriteByte(0)
		return nil
	}
	if err := add(dir); err != nil {
		return nil, err
	}
	for _, list := range [][]string{argv, env} {
		b.WriteString(strconv.Itoa(len(list)))
		b.WriteByte(0)
		for _, s := range list {
			if err := add(s); err != nil {
				return nil, err
			}
		}
	}
	if b.Len() > orderLimit {
		return nil, errors.New("the program's arguments and environment are too large")
	}
	return append(strconv.AppendInt(nil, int64(b.Len()), 10), append([]byte{0}, b.Bytes()...)...), nil
}

// unframe splits the first bytes of an order into its length and the
// text that came with it; false when the length is missing, malformed or
// past orderLimit, or more came than it says.
func unframe(b []byte) (int, []byte, bool) {
	head, rest, ok := bytes.Cut(b, []byte{0})
	if !ok || len(head) == 0 || len(head) > 8 {
		return 0, nil, false
	}
	n, err := strconv.Atoi(string(head))
	if err != nil || n <= 0 || n > orderLimit || len(rest) > n {
		return 0, nil, false
	}
	return n, rest, true
}

// How a standby supervisor reports that its program ended: endTag, a
// byte saying whether it is ready for another order (1) or exits (0),
// and the program's wait status, four bytes little-endian.
const (
	endTag = 2
	EndLen = 6
)

// EncodeEnd is the report of a program that ended with ws.
func EncodeEnd(ws syscall.WaitStatus, reusable bool) []byte {
	b := []byte{endTag, 0, byte(ws), byte(ws >> 8), byte(ws >> 16), byte(ws >> 24)}
	if reusable {
		b[1] = 1
	}
	return b
}

// DecodeEnd reads a report made by EncodeEnd; false when b is not one.
func DecodeEnd(b []byte) (ws syscall.WaitStatus, reusable, ok bool) {
	if len(b) != EndLen || b[0] != endTag || b[1] > 1 {
		return 0, false, false
	}
	return syscall.WaitStatus(uint32(b[2]) | uint32(b[3])<<8 | uint32(b[4])<<16 | uint32(b[5])<<24), b[1] == 1, true
}

// serve runs the orders cadence (process parent) sends, one at a time,
// until its control socket closes, and returns the supervisor's exit code.
func serve(parent int, orphaned <-chan os.Signal) int {
	// The programs never get the socket: one could report its own end.
	syscall.CloseOnExec(controlFD)
	for served := 0; ; served++ {
		o, ok := awaitOrder()
		if !ok {
			if served > 0 {
				return 0 // cadence needs no more
			}
			return 1 // the same as a gate closed without a byte
		}
		select {
		case <-orphaned:
			if os.Getppid() != parent {
				// cadence died: nothing may start now.
				o.close()
				return 1
			}
			// cadence lives: a signal that came while no program ran
			// (the parent-death signal of a thread of cadence that
			// ended, which the kernel sends too) has nothing to stop.
		default:
		}
		r := runOrder(o, orphaned)
		if r.err != nil {
			fmt.Fprintf(o.files[2], "cadence agent supervise: wait for %s: %v\n", o.argv[0], r.err)
		}
		o.close()
		if r.err != nil {
			return 1
		}
		reusable := r.clean
		if _, err := syscall.Write(controlFD, EncodeEnd(r.status, reusable)); err != nil || !reusable {
			return exitLike(r.status)
		}
	}
}

// runOrder runs an order's program to its end and kills what it left.
func runOrder(o *order, orphaned <-chan os.Signal) waitResult {
	attr := &os.ProcAttr{Dir: o.dir, Env: o.env, Files: o.files}
	proc, code := start(o.argv, attr, o.files[2])
	if proc == nil {
		return waitResult{status: syscall.WaitStatus(code << 8), clean: true}
	}
	// The program holds its stdin and stdout now; the supervisor lets go
	// of them, so that cadence sees the end of the program's stdout when
	// the program closes it, not only when the program's end is reported.
	closeAll(o.files[:2])
	return supervise(proc, orphaned)
}

// recvmsg is syscall.Recvmsg, again after an interrupted call.
func recvmsg(fd int, p, oob []byte) (n, oobn, flags int, from syscall.Sockaddr, err error) {
	for {
		n, oobn, flags, from, err = syscall.Recvmsg(fd, p, oob, 0)
		if !errors.Is(err, syscall.EINTR) {
			return
		}
	}
}

// read is syscall.Read, again after an interrupted call.
func read(fd int, p []byte) (int, error) {
	for {
		n, err := syscall.Read(fd, p)
		if !errors.Is(err, syscall.EINTR) {
			return n, err
		}
	}
}
