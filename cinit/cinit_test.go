//go:build linux && (amd64 || arm64)

package cinit

import (
	"os"
	"regexp"
	"strconv"
	"testing"
)

// The check buffer's size comes from the program, and is what init.c
// defines.
func TestCheckMax(t *testing.T) {
	src, err := os.ReadFile("c/init.c")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`#define CHECK_MAX \((\d+) << (\d+)\)`).FindSubmatch(src)
	if m == nil {
		t.Fatal("init.c defines no CHECK_MAX (n << s)")
	}
	n, _ := strconv.Atoi(string(m[1]))
	s, _ := strconv.Atoi(string(m[2]))
	if got, want := CheckMax(), n<<s; got != want {
		t.Errorf("CheckMax() = %d, init.c says %d", got, want)
	}
}
