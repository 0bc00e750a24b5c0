// Package buildinfo says which agentbox this is: its version, the commit
// and commit time it was built from, whether the tree had uncommitted
// changes, and the Go that built it. Everything but a release's version
// comes from the build information the Go toolchain stamps into every
// binary (runtime/debug), so a plain `go build` in a checkout is
// identified without -ldflags.
//
// What does not belong here: printing it in the CLI's voice (package main).
package buildinfo

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// Schema is the version of the JSON `agentbox version --json` prints.
const Schema = 1

// Info is which agentbox this is; its JSON form is `agentbox version --json`.
type Info struct {
	Schema int `json:"schema"`
	// Version is the release ("1.2.0"), the module version `go install
	// …@v1.2.0` or a tagged checkout gives ("v1.2.0"), a pseudo-version
	// for an untagged commit, or "dev" when nothing says.
	Version string `json:"version"`
	// Commit is the full VCS revision, "" when the build had none (a
	// build outside a checkout, or with -buildvcs=false).
	Commit string `json:"commit,omitempty"`
	// CommitTime is the commit's time, RFC 3339 in UTC.
	CommitTime string `json:"commit_time,omitempty"`
	// Modified is true when the checkout had uncommitted changes.
	Modified bool   `json:"modified"`
	Go       string `json:"go"`
	Platform string `json:"platform"` // GOOS/GOARCH
}

// Read returns this binary's Info. release is the version a release build
// sets with -ldflags "-X main.version=…"; "" or "dev" when it set none.
func Read(release string) Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return From(bi, release, runtime.GOOS+"/"+runtime.GOARCH)
}

// From makes the Info of a build from its build information (nil when the
// binary has none), the release version and the platform.
func From(bi *debug.BuildInfo, release, platform string) Info {
	i := Info{Schema: Schema, Version: "dev", Platform: platform}
	if bi != nil {
		i.Go = bi.GoVersion
		// "(devel)" is what Go records when it knows no version.
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			i.Version = v
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				i.Commit = s.Value
			case "vcs.time":
				i.CommitTime = s.Value
			case "vcs.modified":
				i.Modified = s.Value == "true"
			}
		}
	}
	if release != "" && release != "dev" {
		i.Version = release
	}
	if i.Go == "" {
		i.Go = runtime.Version()
	}
	return i
}

// Text writes i for people: the version on the first line, so that
// `agentbox --version | head -1` is the version.
func (i Info) Text(w io.Writer) error {
	commit := "unknown (built without version control information)"
	if i.Commit != "" {
		commit = short(i.Commit)
		if i.CommitTime != "" {
			commit += " (" + i.CommitTime + ")"
		}
		if i.Modified {
			commit += " with uncommitted changes"
		}
	}
	_, err := fmt.Fprintf(w, "agentbox %s\ncommit:   %s\ngo:       %s %s\n", i.Version, commit, i.Go, i.Platform)
	return err
}

// JSON writes i as indented JSON.
func (i Info) JSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(i)
}

// short is the first 12 hex digits of a revision.
func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}
