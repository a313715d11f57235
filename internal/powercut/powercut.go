// Package powercut is a FUSE filesystem for tests that lose the power.
//
// A crash test that kills a process proves little about durability: the
// kernel keeps every write of a killed process, synced or not. A power
// cut keeps only what was made durable. FS passes every operation through
// to a backing directory, as a loopback filesystem does, and remembers,
// beside it, the state a disk would hold after a power cut: the contents
// each file had at its last fsync, and the names each directory held when
// they were last made durable. Cut drops everything else: it unmounts,
// rewrites the backing directory to that durable state, and mounts again.
//
// Two models decide when a name is durable:
//
//   - POSIX, the strict reading of the standard: creating, renaming or
//     removing a name is durable once its directory is fsynced. An fsync
//     of a file makes its data durable, not its name.
//   - Ext4, as ext4 with delayed allocation behaves: any fsync commits the
//     journal, and so every pending name of the whole filesystem, while a
//     file's data is still durable only once that file is fsynced. A file
//     written and renamed but never fsynced survives with its name and
//     zero bytes.
//
// In both, a file's data is what it held at its last fsync (fdatasync
// alike), or at the mount for a file not written since; a file never
// fsynced is empty. Files are known by their backing inode numbers, which
// are forgotten when the last name of a file goes, so that a number the
// backing filesystem reuses is a new file.
//
// Mounting needs /dev/fuse and the right to mount (root, for the mount(2)
// that DirectMount makes; fusermount is not needed). Mount says which is
// missing.
//
// The filesystem is served by goroutines of the process that mounts it.
// That process must use its files only through system calls (a walk, a
// read), never through a memory mapping such as SQLite's shared memory:
// a page fault waiting for the server cannot be preempted, and a runtime
// that stops the world to collect garbage would then wait for it forever.
// Let child processes open databases on it.
package powercut

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// Model is when a name becomes durable.
type Model int

const (
	// POSIX makes a name durable when its directory is fsynced.
	POSIX Model = iota
	// Ext4 makes every pending name durable at any fsync.
	Ext4
)

func (m Model) String() string {
	if m == Ext4 {
		return "ext4"
	}
	return "posix"
}

// ErrNoFUSE reports a machine where the filesystem cannot be mounted.
var ErrNoFUSE = errors.New("FUSE is not available")

// Stats counts what the filesystem saw since it was made.
type Stats struct {
	FileSyncs int // fsync and fdatasync of files
	DirSyncs  int // fsync of directories
	Cuts      int
}

// entry is a durable name: a file (its id), a directory (its id) or a
// symbolic link.
type entry struct {
	id   uint64
	kind fs.FileMode // 0, fs.ModeDir or fs.ModeSymlink
	mode fs.FileMode // permission bits
	link string
}

// FS is a mounted power-cut filesystem.
type FS struct {
	backing, mountpoint string
	model               Model

	mu     sync.Mutex
	server *fuse.Server
	ids    map[uint64]uint64 // backing inode number → file id
	nextID uint64
	rootID uint64
	data   map[uint64][]byte           // file id → durable contents
	dirs   map[uint64]map[string]entry // directory id → durable names
	stats  Stats
}

// Mount mounts at mountpoint (an existing, empty directory) a filesystem
// showing backing, whose current contents are taken as durable.
func Mount(backing, mountpoint string, model Model) (*FS, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	f := &FS{backing: backing, mountpoint: mountpoint, model: model}
	if err := f.mount(); err != nil {
		return nil, err
	}
	return f, nil
}

// Available returns ErrNoFUSE, saying what is missing, when this machine
// cannot mount the filesystem.
func Available() error {
	fd, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("%w: open /dev/fuse: %v (on Linux: modprobe fuse; in a container: give it the device, e.g. --device /dev/fuse --cap-add SYS_ADMIN)", ErrNoFUSE, err)
	}
	_ = fd.Close()
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: mounting without fusermount needs root (running as uid %d)", ErrNoFUSE, os.Geteuid())
	}
	return nil
}

// Dir is the mounted directory.
func (f *FS) Dir() string { return f.mountpoint }

// Model is the filesystem's model.
func (f *FS) Model() Model { return f.model }

// Stats returns what the filesystem counted so far.
func (f *FS) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats
}

// mount takes the backing directory's contents as durable and mounts it.
func (f *FS) mount() error {
	f.ids, f.data, f.dirs, f.nextID = map[uint64]uint64{}, map[uint64][]byte{}, map[uint64]map[string]entry{}, 0
	root, err := f.snapshot(f.backing, true)
	if err != nil {
		return fmt.Errorf("powercut: read %s: %w", f.backing, err)
	}
	f.rootID = root
	lr := &gofs.LoopbackRoot{Path: f.backing}
	var st syscall.Stat_t
	if err := syscall.Stat(f.backing, &st); err != nil {
		return fmt.Errorf("powercut: %w", err)
	}
	lr.Dev = uint64(st.Dev)
	rootNode := &node{LoopbackNode: &gofs.LoopbackNode{RootData: lr}, fs: f}
	lr.RootNode = rootNode
	zero := time.Duration(0)
	server, err := gofs.Mount(f.mountpoint, rootNode, &gofs.Options{
		// No kernel caching of names or attributes: every operation
		// reaches the filesystem, and a remount after a cut starts clean.
		EntryTimeout: &zero, AttrTimeout: &zero, NegativeTimeout: &zero,
		MountOptions: fuse.MountOptions{
			DirectMount: true, DirectMountStrict: true,
			FsName: "powercut", Name: "powercut",
			DisableXAttrs: true,
		},
	})
	if err != nil {
		return fmt.Errorf("%w: mount %s: %v", ErrNoFUSE, f.mountpoint, err)
	}
	f.server = server
	return nil
}

// Unmount unmounts the filesystem, leaving the backing directory as it
// is (everything written, durable or not). It waits up to ten seconds for
// the last open file to close.
func (f *FS) Unmount() error {
	if f.server == nil {
		return nil
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := f.server.Unmount()
		if err == nil {
			f.server = nil
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("powercut: unmount %s: %w", f.mountpoint, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Cut loses the power: the filesystem is unmounted (every process using
// it must be dead by then), the backing directory is rewritten to hold
// exactly what was durable, and the filesystem is mounted again.
func (f *FS) Cut() error {
	if err := f.Unmount(); err != nil {
		return err
	}
	f.mu.Lock()
	err := f.restore()
	f.stats.Cuts++
	f.mu.Unlock()
	if err != nil {
		return fmt.Errorf("powercut: restore the durable state of %s: %w", f.backing, err)
	}
	return f.mount()
}

// restore empties the backing directory and writes the durable tree into
// it.
func (f *FS) restore() error {
	names, err := os.ReadDir(f.backing)
	if err != nil {
		return err
	}
	for _, e := range names {
		if err := os.RemoveAll(filepath.Join(f.backing, e.Name())); err != nil {
			return err
		}
	}
	return f.writeDir(f.backing, f.rootID)
}

// writeDir writes the durable names of directory id into path.
func (f *FS) writeDir(path string, id uint64) error {
	for name, e := range f.dirs[id] {
		p := filepath.Join(path, name)
		var err error
		switch e.kind {
		case fs.ModeDir:
			if err = os.Mkdir(p, e.mode); err == nil {
				err = f.writeDir(p, e.id)
			}
		case fs.ModeSymlink:
			err = os.Symlink(e.link, p)
		default:
			if err = os.WriteFile(p, f.data[e.id], e.mode); err == nil {
				err = os.Chmod(p, e.mode) // the umask does not apply
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// id is the file id of backing inode number ino.
func (f *FS) id(ino uint64) uint64 {
	id, ok := f.ids[ino]
	if !ok {
		f.nextID++
		id = f.nextID
		f.ids[ino] = id
	}
	return id
}

// snapshot records the tree at path as durable, contents too when
// withData (at the mount); it returns the directory's id.
func (f *FS) snapshot(path string, withData bool) (uint64, error) {
	st, err := lstat(path)
	if err != nil {
		return 0, err
	}
	id := f.id(st.Ino)
	list, err := f.listing(path)
	if err != nil {
		return 0, err
	}
	f.dirs[id] = list
	for name, e := range list {
		p := filepath.Join(path, name)
		switch {
		case e.kind == fs.ModeDir:
			if _, err := f.snapshot(p, withData); err != nil {
				return 0, err
			}
		case e.kind == 0 && withData:
			b, err := os.ReadFile(p)
			if err != nil {
				return 0, err
			}
			f.data[e.id] = b
		}
	}
	return id, nil
}

// listing reads the names of directory path as they are now.
func (f *FS) listing(path string) (map[string]entry, error) {
	des, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	out := make(map[string]entry, len(des))
	for _, de := range des {
		p := filepath.Join(path, de.Name())
		st, err := lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, err
		}
		e := entry{id: f.id(st.Ino), mode: fs.FileMode(st.Mode) & fs.ModePerm}
		switch st.Mode & syscall.S_IFMT {
		case syscall.S_IFDIR:
			e.kind = fs.ModeDir
		case syscall.S_IFLNK:
			e.kind = fs.ModeSymlink
			if e.link, err = os.Readlink(p); err != nil {
				return nil, err
			}
		case syscall.S_IFREG:
		default:
			continue // devices, fifos and sockets do not survive a cut
		}
		out[de.Name()] = e
	}
	return out, nil
}

// fileSynced records that the file at backing path was fsynced: its
// contents are durable (and, on ext4, every pending name).
func (f *FS) fileSynced(path string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stats.FileSyncs++
	st, err := lstat(path)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	f.data[f.id(st.Ino)] = b
	if f.model == Ext4 {
		return f.commitNames()
	}
	return nil
}

// dirSynced records that the directory at backing path was fsynced: its
// names are durable (on ext4, every pending name).
func (f *FS) dirSynced(path string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stats.DirSyncs++
	if f.model == Ext4 {
		return f.commitNames()
	}
	st, err := lstat(path)
	if err != nil {
		return err
	}
	list, err := f.listing(path)
	if err != nil {
		return err
	}
	f.dirs[f.id(st.Ino)] = list
	return nil
}

// commitNames makes every name of the filesystem durable, as they are
// now (an ext4 journal commit).
func (f *FS) commitNames() error {
	_, err := f.snapshot(f.backing, false)
	return err
}

// forget drops the id of backing inode number ino once its last name is
// gone: a later file given the same number is another file.
func (f *FS) forget(ino uint64, nlink uint64) {
	if nlink > 1 {
		return
	}
	f.mu.Lock()
	delete(f.ids, ino)
	f.mu.Unlock()
}

func lstat(path string) (*syscall.Stat_t, error) {
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: path, Err: err}
	}
	return &st, nil
}

// node is a loopback node whose fsyncs, removals and renames the
// filesystem hears of.
type node struct {
	*gofs.LoopbackNode
	fs *FS
}

var (
	_ gofs.NodeWrapChilder     = (*node)(nil)
	_ gofs.NodeFsyncer         = (*node)(nil)
	_ gofs.NodeOpendirHandler  = (*node)(nil)
	_ gofs.NodeUnlinker        = (*node)(nil)
	_ gofs.NodeRmdirer         = (*node)(nil)
	_ gofs.NodeRenamer         = (*node)(nil)
	_ gofs.NodeCopyFileRanger  = (*node)(nil)
	_ gofs.NodeAllocater       = (*node)(nil)
	_ gofs.FileFsyncdirer      = (*dirHandle)(nil)
	_ gofs.FileReaddirenter    = (*dirHandle)(nil)
	_ gofs.FileReleasedirer    = (*dirHandle)(nil)
	_ gofs.FileSeekdirer       = (*dirHandle)(nil)
	_ gofs.FilePassthroughFder = (*file)(nil)
)

// WrapChild makes every node of the tree a node of the filesystem.
func (n *node) WrapChild(ctx context.Context, ops gofs.InodeEmbedder) gofs.InodeEmbedder {
	if lb, ok := ops.(*gofs.LoopbackNode); ok {
		return &node{LoopbackNode: lb, fs: n.fs}
	}
	return ops
}

// backingPath is the node's path in the backing directory.
func (n *node) backingPath() string {
	return filepath.Join(n.RootData.Path, n.Path(n.Root()))
}

// Open and Create hand out file handles that never pass reads and writes
// to the kernel directly (FUSE passthrough): every operation is seen.
func (n *node) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	fh, fl, errno := n.LoopbackNode.Open(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	lf, ok := fh.(*gofs.LoopbackFile)
	if !ok {
		return nil, 0, syscall.ENOTSUP
	}
	return &file{lf}, fl, 0
}

func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	ch, fh, fl, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	lf, ok := fh.(*gofs.LoopbackFile)
	if !ok {
		return nil, nil, 0, syscall.ENOTSUP
	}
	return ch, &file{lf}, fl, 0
}

// Fsync makes the file's data durable, or a directory's names (an fsync
// of a directory with no open handle).
func (n *node) Fsync(ctx context.Context, fh gofs.FileHandle, flags uint32) syscall.Errno {
	path := n.backingPath()
	if n.IsDir() {
		if err := syncPath(path); err != nil {
			return gofs.ToErrno(err)
		}
		return gofs.ToErrno(n.fs.dirSynced(path))
	}
	if syncer, ok := fh.(gofs.FileFsyncer); ok {
		if errno := syncer.Fsync(ctx, flags); errno != 0 {
			return errno
		}
	} else if err := syncPath(path); err != nil {
		return gofs.ToErrno(err)
	}
	return gofs.ToErrno(n.fs.fileSynced(path))
}

// OpendirHandle hands out directory handles whose fsync the filesystem
// hears of.
func (n *node) OpendirHandle(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	ds, errno := gofs.NewLoopbackDirStream(n.backingPath())
	if errno != 0 {
		return nil, 0, errno
	}
	d, ok := ds.(loopbackDir)
	if !ok {
		ds.Close()
		return nil, 0, syscall.ENOTSUP
	}
	return &dirHandle{loopbackDir: d, n: n}, 0, 0
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	st, err := lstat(filepath.Join(n.backingPath(), name))
	errno := n.LoopbackNode.Unlink(ctx, name)
	if errno == 0 && err == nil {
		n.fs.forget(st.Ino, uint64(st.Nlink))
	}
	return errno
}

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	st, err := lstat(filepath.Join(n.backingPath(), name))
	errno := n.LoopbackNode.Rmdir(ctx, name)
	if errno == 0 && err == nil {
		n.fs.forget(st.Ino, 1)
	}
	return errno
}

func (n *node) Rename(ctx context.Context, name string, newParent gofs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	np, ok := newParent.(*node)
	if !ok {
		return syscall.EXDEV
	}
	from, to := filepath.Join(n.backingPath(), name), filepath.Join(np.backingPath(), newName)
	src, serr := lstat(from)
	dst, derr := lstat(to)
	errno := n.LoopbackNode.Rename(ctx, name, np.LoopbackNode, newName, flags)
	if errno == 0 && serr == nil && derr == nil && dst.Ino != src.Ino && flags&renameExchange == 0 {
		n.fs.forget(dst.Ino, uint64(dst.Nlink)) // replaced
	}
	return errno
}

// renameExchange swaps the two names: neither file loses one.
const renameExchange = 1 << 1

// CopyFileRange is refused, so that copies are made by reads and writes
// the filesystem sees.
func (n *node) CopyFileRange(ctx context.Context, fhIn gofs.FileHandle, offIn uint64, out *gofs.Inode, fhOut gofs.FileHandle, offOut uint64, length uint64, flags uint64) (uint32, syscall.Errno) {
	return 0, syscall.ENOTSUP
}

// Allocate passes fallocate through.
func (n *node) Allocate(ctx context.Context, fh gofs.FileHandle, off uint64, size uint64, mode uint32) syscall.Errno {
	if a, ok := fh.(gofs.FileAllocater); ok {
		return a.Allocate(ctx, off, size, mode)
	}
	return syscall.ENOTSUP
}

// syncPath fsyncs the file or directory at path.
func syncPath(path string) error {
	fd, err := os.Open(path)
	if err != nil {
		return err
	}
	err = fd.Sync()
	if cerr := fd.Close(); err == nil {
		err = cerr
	}
	return err
}

// file is a loopback file handle that the kernel may not bypass.
type file struct{ *gofs.LoopbackFile }

// PassthroughFd refuses FUSE passthrough.
func (f *file) PassthroughFd() (int, bool) { return -1, false }

// loopbackDir is what a loopback directory stream does.
type loopbackDir interface {
	gofs.FileReaddirenter
	gofs.FileReleasedirer
	gofs.FileSeekdirer
	gofs.FileFsyncdirer
}

// dirHandle is an open directory whose fsync makes its names durable.
type dirHandle struct {
	loopbackDir
	n *node
}

func (d *dirHandle) Fsyncdir(ctx context.Context, flags uint32) syscall.Errno {
	if errno := d.loopbackDir.Fsyncdir(ctx, flags); errno != 0 {
		return errno
	}
	return gofs.ToErrno(d.n.fs.dirSynced(d.n.backingPath()))
}

// Durable returns the durable tree: each file's path (slash-separated,
// relative to the root) and the contents it would have after a cut; a
// directory is listed with a trailing slash. For tests of the model.
func (f *FS) Durable() map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]string{}
	var walk func(prefix string, id uint64)
	walk = func(prefix string, id uint64) {
		names := make([]string, 0, len(f.dirs[id]))
		for name := range f.dirs[id] {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			e := f.dirs[id][name]
			switch e.kind {
			case fs.ModeDir:
				out[prefix+name+"/"] = ""
				walk(prefix+name+"/", e.id)
			case fs.ModeSymlink:
				out[prefix+name] = "-> " + e.link
			default:
				out[prefix+name] = string(f.data[e.id])
			}
		}
	}
	walk("", f.rootID)
	return out
}
