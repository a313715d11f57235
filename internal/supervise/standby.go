package supervise

import (
	"bytes"
	"errors"
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
// descriptors, passed with the first bytes (SCM_RIGHTS), then its working
// directory, argv and environment, each ended by a NUL, until cadence
// shuts its end (EncodeOrder). The order is the start gate: cadence sends it once it has
// committed the supervisor's pid (G1, G5), and a socket closed without
// one (cadence gone, or the attempt given up) ends the supervisor without
// starting anything.

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
	payload := append([]byte(nil), buf[:n]...)
	for {
		n, err := read(controlFD, buf)
		if err != nil {
			closeAll(files)
			return nil, false
		}
		if n == 0 {
			break
		}
		if len(payload)+n > orderLimit {
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
	return b.Bytes(), nil
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
