package attempt

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// outputWatch knows, from the kernel, which CADENCE_OUTPUTS_DIR
// directories and files nothing has changed since this process found them
// right, so that a check of a directory costs a read of the pending events
// and not a stat per file: in a chain, step i would otherwise stat i files,
// n²/2 in a run. Stamps (outputStamps.m) know a file by its stat; a watch
// is told of every change to its inode, however it was made: a write
// through another name (a hard link elsewhere) included.
//
// Each directory checked whole has an inotify watch for the names in it
// (created, removed, renamed in or out), and each file in it a watch of
// its own inode (written, truncated, closed after a write, its mode, times
// or links changed). The directory is known while no name event came
// since its last whole check; a file is known right while no event came
// since it was found right (read back, or written by this process with its
// watch in place before its name was published). Anything else is checked
// as before, and an overflowed event queue forgets everything.
//
// Events are queued by the kernel in the system call that makes the
// change, so once the attempt's processes are gone (the supervisor kills
// and reaps them all before it reports the end) every change they made is
// in the queue when the next check reads it. This process's own writes
// and removals in a directory are announced (own) and their name events
// are not news. A crash loses the watches with the process: the first
// check of a resumed run reads every file, as it must (SPEC §7).
//
// A watch that cannot be added (no inotify, the limit of watches reached)
// leaves the file or directory to the stamps. The zero value is ready;
// its methods are called with outputStamps.mu held.
type outputWatch struct {
	fd    int // the inotify instance, once made; -1 when it cannot be
	off   bool
	wds   map[int32]watchTarget
	dirs  map[fileID]*watchedDir
	files map[fileID]*watchedFile
}

// watchTarget is what a watch descriptor watches.
type watchTarget struct {
	dir bool
	id  fileID
}

// watchedDir is a directory with a watch on its names.
type watchedDir struct {
	wd int32
	// known: names is the whole listing of the directory, and no name in
	// it changed since, but for this process's own changes.
	known bool
	// partial: a file of the check in progress has no watch.
	partial bool
	names   map[string]fileID
	own     map[string]bool // names this process is writing or removing now
}

// watchedFile is a file with a watch on its inode.
type watchedFile struct {
	wd  int32
	sum [sha256.Size]byte // the content it was found (or written) with
	// changed: an event came since it was found right.
	changed bool
}

// Masks of the two kinds of watch.
const (
	dirWatchMask  = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_DELETE_SELF | unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW
	fileWatchMask = unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_CLOSE_WRITE | unix.IN_DONT_FOLLOW
)

// init makes the inotify instance on first use; false when there is none.
func (w *outputWatch) init() bool {
	if w.off {
		return false
	}
	if w.wds == nil {
		fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
		if err != nil {
			w.off = true
			return false
		}
		w.fd = fd
		w.wds = map[int32]watchTarget{}
		w.dirs = map[fileID]*watchedDir{}
		w.files = map[fileID]*watchedFile{}
	}
	return true
}

// close ends the inotify instance.
func (w *outputWatch) close() {
	if w.wds != nil && !w.off {
		unix.Close(w.fd)
	}
	w.off = true
}

// drain reads the pending events and forgets what they say changed.
func (w *outputWatch) drain() {
	var buf [16 << 10]byte
	for {
		n, err := unix.Read(w.fd, buf[:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n <= 0 {
			if err != nil && !errors.Is(err, unix.EAGAIN) {
				w.forgetAll()
			}
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			end := off + unix.SizeofInotifyEvent + int(ev.Len)
			if end > n {
				w.forgetAll()
				return
			}
			name := string(bytes.TrimRight(buf[off+unix.SizeofInotifyEvent:end], "\x00"))
			w.apply(ev.Wd, ev.Mask, name)
			off = end
		}
	}
}

// apply takes one event in.
func (w *outputWatch) apply(wd int32, mask uint32, name string) {
	if mask&unix.IN_Q_OVERFLOW != 0 {
		w.forgetAll()
		return
	}
	t, ok := w.wds[wd]
	if !ok {
		return
	}
	if mask&unix.IN_IGNORED != 0 { // the watch is gone: its inode was freed, or removed
		delete(w.wds, wd)
		if t.dir {
			if d := w.dirs[t.id]; d != nil && d.wd == wd {
				delete(w.dirs, t.id)
			}
		} else if f := w.files[t.id]; f != nil && f.wd == wd {
			delete(w.files, t.id)
		}
		return
	}
	if !t.dir {
		if f := w.files[t.id]; f != nil {
			f.changed = true
		}
		return
	}
	d := w.dirs[t.id]
	if d == nil {
		return
	}
	if mask&unix.IN_DELETE_SELF != 0 || !d.ownName(name) {
		d.known = false
	}
}

// ownName reports whether name is one this process is changing: a name it
// writes or removes, or the temporary name of one it writes.
func (d *watchedDir) ownName(name string) bool {
	if d.own[name] {
		return true
	}
	final, ok := strings.CutPrefix(name, ".")
	if i := strings.LastIndex(final, ".tmp-"); ok && i > 0 {
		return d.own[final[:i]]
	}
	return false
}

// forgetAll forgets that anything is known.
func (w *outputWatch) forgetAll() {
	for _, d := range w.dirs {
		d.known = false
	}
	for _, f := range w.files {
		f.changed = true
	}
}

// fresh returns the directory at path when it is known, and each of the
// files wanted in it (by step id) known right: then nothing needs
// reading, and only the files missing (left in want) need writing; nil
// leaves want as it was.
func (w *outputWatch) fresh(path string, want map[string]*encoded) *watchedDir {
	if !w.init() {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil
	}
	w.drain()
	d := w.dirs[fileID{dev: st.Dev, ino: st.Ino}]
	if d == nil || !d.known {
		return nil
	}
	if len(d.names) > len(want) {
		return nil // a name not wanted: the whole check removes it
	}
	for name, fid := range d.names {
		stepID, isJSON := strings.CutSuffix(name, ".json")
		e, ok := want[stepID]
		if !ok || !isJSON {
			return nil
		}
		if f := w.files[fid]; f == nil || f.changed || f.sum != e.sum {
			return nil
		}
	}
	for name := range d.names {
		delete(want, strings.TrimSuffix(name, ".json"))
	}
	return d
}

// begin starts a whole check of the directory at path, which exists: its
// watch is added, and what a name event says from now on, but for the
// names this process announces (own), is news. Its listing is rebuilt by
// found and wrote, and stands once end has found no news.
func (w *outputWatch) begin(path string) *watchedDir {
	if !w.init() {
		return nil
	}
	wd, err := unix.InotifyAddWatch(w.fd, path, dirWatchMask)
	if err != nil {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil
	}
	w.drain() // what happened before the check is moot
	id := fileID{dev: st.Dev, ino: st.Ino}
	d := &watchedDir{wd: int32(wd), known: true, names: map[string]fileID{}, own: map[string]bool{}}
	w.wds[int32(wd)] = watchTarget{dir: true, id: id}
	w.dirs[id] = d
	return d
}

// watchFile adds the watch of the file at path, before it is checked: a
// change after the check is then an event. It returns the watch, and
// false when there is none.
func (w *outputWatch) watchFile(path string) (int32, bool) {
	if w.off || w.wds == nil {
		return 0, false
	}
	wd, err := unix.InotifyAddWatch(w.fd, path, fileWatchMask)
	if err != nil {
		return 0, false
	}
	return int32(wd), true
}

// found records that name in d is the file id, f its watch (added before
// it was checked) and its content.
func (w *outputWatch) found(d *watchedDir, name string, id fileID, f *watchedFile) {
	w.wds[f.wd] = watchTarget{id: id}
	w.files[id] = f
	d.names[name] = id
}

// write writes data to name in the directory d at dir as
// checkpoint.WriteFileAtomicNoSync does, with the new file's watch added
// before its name is published, and records it.
func (w *outputWatch) write(d *watchedDir, dir, name string, data []byte) error {
	d.own[name] = true
	f, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Chmod(0o644); err != nil {
		return fail(err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return fail(err)
	}
	wd, watched := w.watchFile(tmp)
	if err := f.Close(); err != nil {
		return fail(err)
	}
	if watched {
		// The close's event is this write's: read and dropped before the
		// watch is recorded. Nothing else knows the name yet.
		w.drain()
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		os.Remove(tmp)
		return err
	}
	if watched {
		w.found(d, name, fileID{dev: st.Dev, ino: st.Ino}, &watchedFile{wd: wd, sum: sha256.Sum256(data)})
	} else {
		d.partial = true
	}
	return nil
}

// end ends a whole check of d: the events of this process's own changes
// are read and dropped, and the listing stands unless another change came.
func (w *outputWatch) end(d *watchedDir) {
	w.drain()
	clear(d.own)
	if d.partial {
		d.known = false
	}
}

// check checks the file at path in d, wanted with the content b, its
// watch added first: true when it is right.
func (w *outputWatch) check(d *watchedDir, path string, b *encoded) bool {
	wd, watched := w.watchFile(path)
	id, right := readRight(path, b.text)
	if !right {
		return false
	}
	if watched {
		w.found(d, filepath.Base(path), id, &watchedFile{wd: wd, sum: b.sum})
	} else {
		d.partial = true
	}
	return true
}

// readRight reports whether the regular file at path has the content
// want, read through a descriptor that follows no link, and returns its
// inode. The descriptor is the kernel's, not an os.File: a resumed run's
// first step reads back a file per step before it, and an os.File costs an
// attempt to register each with the poller.
func readRight(path string, want []byte) (fileID, bool) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fileID{}, false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size != int64(len(want)) {
		return fileID{}, false
	}
	// One byte more than want, so that a file that grew since its stat
	// is not taken for it.
	cur := make([]byte, len(want)+1)
	n := 0
	for n < len(cur) {
		m, err := unix.Read(fd, cur[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fileID{}, false
		}
		if m == 0 {
			break
		}
		n += m
	}
	return fileID{dev: st.Dev, ino: st.Ino}, bytes.Equal(cur[:n], want)
}
