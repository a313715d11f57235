package attempt

import (
	"crypto/sha256"
	"encoding/json"
	"os"
	"reflect"
	"sync"
	"time"
)

// outputStamps remembers the CADENCE_OUTPUTS_DIR files whose content this
// process read back and found right, by inode, with what stat said of the
// file then. A later check of the same file against the same content is
// then one lstat (from the directory listing) instead of an open and a
// read: in a chain, where each step's directory is the one of the step
// before it renamed, step i would otherwise read i files, n²/2 in a run.
//
// A stamp stands for the file's content only while nothing can have
// written the file since it was read without changing its stat. Every
// change to an inode's data or metadata sets its ctime to the clock's
// time, which no process can set back; so a file whose ctime, when it was
// read, was already older than that read by more than the clock's
// granularity (stampMargin), and is unchanged since, was not written
// after the read. A file written in the margin before it was read gets
// no stamp, and is read again at the next check: a file is read until it
// is old enough, a bounded number of times however long the chain. A file
// system whose times have whole seconds at most (ctime's nanoseconds 0)
// gets no stamps. A crash loses the stamps with the process: the first
// check of a resumed run reads every file, as it must (SPEC §7).
type outputStamps struct {
	mu sync.Mutex
	m  map[fileID]outputStamp
	// enc keeps, by step id, the file content last made from a step's
	// output value: a finished step's output is one value for the rest of
	// the run, handed to every step after it, and encoding it again for
	// each of them is n²/2 encodings in a chain.
	enc map[string]*encoded

	// wmu is held through a check of a directory with watches (w), from
	// the first read of their events to the last.
	wmu sync.Mutex
	w   outputWatch
}

// watch returns the watches, held until unwatch, or nil when there are
// none (s nil, or no inotify here).
func (s *outputStamps) watch() *outputWatch {
	if s == nil {
		return nil
	}
	s.wmu.Lock()
	if !s.w.init() {
		s.wmu.Unlock()
		return nil
	}
	return &s.w
}

func (s *outputStamps) unwatch() { s.wmu.Unlock() }

// close ends the watches.
func (s *outputStamps) close() {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.w.close()
}

// encoded is the content of STEP.json made from the output value src,
// which it keeps alive, so that no other value can take its address.
type encoded struct {
	src  map[string]any
	text []byte
	sum  [sha256.Size]byte
}

// content is STEP.json's content for step id whose output (its "Output")
// is in v: the JSON of v["Output"] and a newline, encoded once per value,
// with its sum.
func (s *outputStamps) content(id string, v map[string]any) (*encoded, error) {
	if s != nil {
		s.mu.Lock()
		e, ok := s.enc[id]
		s.mu.Unlock()
		if ok && reflect.ValueOf(e.src).UnsafePointer() == reflect.ValueOf(v).UnsafePointer() {
			return e, nil
		}
	}
	b, err := json.Marshal(v["Output"])
	if err != nil {
		return nil, err
	}
	b = append(b, '\n')
	e := &encoded{src: v, text: b, sum: sha256.Sum256(b)}
	if s != nil {
		s.mu.Lock()
		if s.enc == nil {
			s.enc = map[string]*encoded{}
		}
		s.enc[id] = e
		s.mu.Unlock()
	}
	return e, nil
}

// fileID is an inode: a file keeps it through renames of itself or its
// directory, which is how a step's directory passes to the next one.
type fileID struct{ dev, ino uint64 }

// outputStamp is what the file's stat said when its content was found to
// be the content whose sum is sum.
type outputStamp struct {
	size         int64
	mtime, ctime int64 // nanoseconds since the epoch
	sum          [sha256.Size]byte
}

// stampMargin is how much older than the read of a file its ctime must be
// for the read to stamp it: beyond the granularity of any clock a file
// system takes its times from (a jiffy, at most 10 ms).
const stampMargin = 50 * time.Millisecond

// holds reports whether the file name in the directory d still has the
// content whose sum is want, as a stamp of this process says, without
// reading it: one stat relative to the directory, not following a link.
func (s *outputStamps) holds(d *os.File, name string, want [sha256.Size]byte) bool {
	if s == nil {
		return false
	}
	id, st, ok := statAt(d, name)
	if !ok {
		return false
	}
	s.mu.Lock()
	old, found := s.m[id]
	s.mu.Unlock()
	st.sum = old.sum
	return found && old == st && old.sum == want
}

// check reads the file at path and reports whether its content is want;
// when it is, and the file is old enough, it is stamped.
func (s *outputStamps) check(path string, want []byte) bool {
	readAt := time.Now()
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if right := readsAs(f, want); !right || s == nil {
		return right
	}
	fi, err := f.Stat()
	if err != nil {
		return true
	}
	id, st, ok := statStamp(fi)
	if !ok || !stampable(st, readAt) {
		return true // right, but too new (or its times too coarse) to be stamped
	}
	st.sum = sha256.Sum256(want)
	s.mu.Lock()
	if s.m == nil {
		s.m = map[fileID]outputStamp{}
	}
	s.m[id] = st
	s.mu.Unlock()
	return true
}

// stampable reports whether a file whose stat, taken after a read that
// began at readAt, is st can be known by its stat from then on: its ctime
// is older than the read by more than the clock's granularity, and has a
// fraction of a second (a file system keeping whole seconds could give a
// later change the same ctime).
func stampable(st outputStamp, readAt time.Time) bool {
	return st.ctime%int64(time.Second) != 0 && st.ctime < readAt.Add(-stampMargin).UnixNano()
}

// forget drops the stamp of the file name in the directory d, which this
// process is about to remove: a stamp of a file that is gone is of no use.
func (s *outputStamps) forget(d *os.File, name string) {
	if s == nil {
		return
	}
	if id, _, ok := statAt(d, name); ok {
		s.mu.Lock()
		delete(s.m, id)
		s.mu.Unlock()
	}
}
