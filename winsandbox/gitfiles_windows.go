package winsandbox

import (
	"bytes"
	"errors"
	"fmt"
	"os"
)

// makeGitPlaceholders makes each missing git file of the spec
// (gitfiles.go) with its content, and returns those it made. One that
// exists by now (git made it since the plan was made) is left alone: the
// deny ACE applies to it all the same, and the after-run check judges it.
// Something other than a plain file there, or a file that cannot be
// made, fails the run: what it stands for would be unprotected.
func makeGitPlaceholders(files []GitPlaceholder) ([]GitPlaceholder, error) {
	var made []GitPlaceholder
	for _, g := range files {
		f, err := os.OpenFile(g.Path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, os.ErrExist) {
			if fi, lerr := os.Lstat(g.Path); lerr == nil && fi.Mode().IsRegular() {
				continue
			}
			return made, fmt.Errorf("placeholder %s: something other than a file is there now", g.Path)
		}
		if err != nil {
			return made, fmt.Errorf("placeholder %s: %w", g.Path, err)
		}
		_, werr := f.WriteString(g.Content)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		made = append(made, g)
		if werr != nil {
			return made, fmt.Errorf("placeholder %s: %w", g.Path, werr)
		}
	}
	return made, nil
}

// removeGitPlaceholders removes the git files makeGitPlaceholders made
// that still hold exactly what it wrote; one that does not (written from
// outside the box during the run) stays, and the after-run check moves it
// away.
func removeGitPlaceholders(made []GitPlaceholder) {
	for _, g := range made {
		fi, err := os.Lstat(g.Path)
		if err != nil || !fi.Mode().IsRegular() || fi.Size() != int64(len(g.Content)) {
			continue
		}
		data, err := os.ReadFile(g.Path)
		if err == nil && bytes.Equal(data, []byte(g.Content)) {
			os.Remove(g.Path)
		}
	}
}
