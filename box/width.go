package box

import (
	"io"
	"os"
	"strconv"
)

// Width is how many columns the readable outputs (plan, verify) may use on
// w: none (0: no limit) with wide (--wide); the terminal's width when w is
// one; else $COLUMNS when it is a number; else no limit, since a file or a
// pipe has no width to fit (and --json holds every detail anyway).
func Width(w io.Writer, wide bool) int {
	if wide {
		return 0
	}
	if f, ok := w.(*os.File); ok {
		if n := terminalWidth(f); n > 0 {
			return n
		}
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	return 0
}
