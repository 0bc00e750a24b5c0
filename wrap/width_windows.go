package wrap

import (
	"os"

	"golang.org/x/sys/windows"
)

// terminalWidth is the width of f's console window in columns, 0 when f
// is not a console.
func terminalWidth(f *os.File) int {
	var info windows.ConsoleScreenBufferInfo
	if windows.GetConsoleScreenBufferInfo(windows.Handle(f.Fd()), &info) != nil {
		return 0
	}
	return int(info.Window.Right-info.Window.Left) + 1
}
