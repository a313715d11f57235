package handoff

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// CheckFile runs Check on a file handoff at path. A path that does not
// exist is class missing. A symbolic link or anything but a regular file is
// refused as missing too, with the reason in the detail: the agent must
// write the file itself, and cadence never follows a link an agent may have
// planted to read a file elsewhere. An empty file is class empty, and a file
// over opts.MaxBytes is class too_large without being read.
func CheckFile(path string, schema *Schema, opts Options) Result {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return failed(missingDiagnosis(path, "does not exist"))
	case err != nil:
		return failed(missingDiagnosis(path, fmt.Sprintf("cannot be read: %v", unwrapPathError(err))))
	case fi.Mode()&fs.ModeSymlink != 0:
		return failed(missingDiagnosis(path, "is a symbolic link, which is not read; write the JSON to the file itself"))
	case !fi.Mode().IsRegular():
		return failed(missingDiagnosis(path, "is not a regular file"))
	case opts.MaxBytes > 0 && fi.Size() > opts.MaxBytes:
		d := tooLargeDiagnosis(fi.Size(), opts.MaxBytes)
		d.Path = path
		return failed(d)
	case fi.Size() == 0:
		d := emptyDiagnosis(nil)
		d.Path = path
		d.Details = fmt.Sprintf("The handoff file %s is empty.", path)
		return failed(d)
	}
	data, err := readLimited(path, opts.MaxBytes)
	if err != nil {
		return failed(missingDiagnosis(path, fmt.Sprintf("cannot be read: %v", err)))
	}
	res := check(data, schema, opts, true)
	if res.Diagnosis != nil && res.Diagnosis.Path == "" {
		res.Diagnosis.Path = path
	}
	return res
}

// readLimited reads a file, at most limit+1 bytes when limit > 0, so that
// a file growing after it was measured still cannot exhaust memory (the
// extra byte makes Check report too_large).
func readLimited(path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|noFollow, 0)
	if err != nil {
		return nil, unwrapPathError(err)
	}
	defer f.Close()
	var r io.Reader = f
	if limit > 0 {
		r = io.LimitReader(f, limit+1)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	return data, nil
}
