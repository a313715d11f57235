package workflow

import (
	"errors"
	"path/filepath"
	"strings"
)

// errEscapes is reported for a path that leaves the project directory.
var errEscapes = errors.New("is outside the project directory")

// confine resolves p, relative to dir unless absolute, and checks lexically
// that it stays inside dir. It returns the cleaned path relative to dir and
// the absolute path. With dir "" (comparing files without a project) only
// relative paths can be checked.
func confine(dir, p string) (rel, abs string, err error) {
	if dir == "" {
		clean := filepath.Clean(p)
		if filepath.IsAbs(clean) {
			return clean, clean, nil
		}
		if escapes(clean) {
			return "", "", errEscapes
		}
		return clean, clean, nil
	}
	abs = p
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(dir, p)
	}
	abs = filepath.Clean(abs)
	rel, err = filepath.Rel(dir, abs)
	if err != nil || escapes(rel) {
		return "", "", errEscapes
	}
	return rel, abs, nil
}

// escapes reports whether a clean relative path climbs out of its base.
func escapes(rel string) bool {
	return rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// confineReal repeats the check on the real path of an existing file, so a
// symbolic link inside the project cannot point a prompt or schema at a
// file outside it.
func confineReal(dir, abs string) error {
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil // the directory itself is gone; reading will say so
	}
	realFile, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil
	}
	rel, err := filepath.Rel(realDir, realFile)
	if err != nil || escapes(rel) {
		return errEscapes
	}
	return nil
}
