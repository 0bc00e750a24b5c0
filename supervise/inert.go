package supervise

import "strings"

// inert reports whether the entry at rel in a guard of rule is one no
// host program runs or reads, left out of the record and of the restore:
// git runs a hook by its exact name only, never one of its *.sample
// files, of which the box can make any number (a record bounded in size
// could otherwise be made to refuse every later run).
func inert(rule, rel string) bool {
	return rule == "git hooks" && rel != "" && !strings.ContainsAny(rel, `/\`) && strings.HasSuffix(rel, ".sample")
}
