package box

import (
	"io"

	"github.com/agentbox/agentbox/wrap"
)

// Width is how many columns the readable outputs (plan, verify) may use on
// w: none (0: no limit) with wide (--wide); else wrap.Width's: the
// terminal's width, $COLUMNS, or 100 columns for a file or a pipe, as every
// other output of agentbox (--json holds every detail).
func Width(w io.Writer, wide bool) int { return wrap.Width(w, wide) }
