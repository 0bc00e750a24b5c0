package hostexec

import (
	"regexp"
	"testing"
)

// Every regular expression compiled on first use compiles (a typo must fail
// here, not in the run that first meets the file it reads).
func TestLazyRegexpsCompile(t *testing.T) {
	for _, re := range []func() *regexp.Regexp{installPython, preCommitModule, amPatch, yarn1Line, toolchainName,
		hgSection, hgItem, hgCont, hgInclude, hgPyHook, hgHookWord, basedirRef, yamlKey, versionLine} {
		if re() == nil {
			t.Fatal("nil regular expression")
		}
	}
}
