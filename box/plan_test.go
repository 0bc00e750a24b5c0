package box

import "testing"

// TestDefaultShell: `agentbox plan` without a command shows the user's
// shell, and on Windows never /bin/sh or a Unix $SHELL.
func TestDefaultShell(t *testing.T) {
	for _, tc := range []struct {
		name string
		goos string
		env  map[string]string
		want string
	}{
		{"linux with SHELL", "linux", map[string]string{"SHELL": "/bin/zsh"}, "/bin/zsh"},
		{"linux without SHELL", "linux", nil, "/bin/sh"},
		{"darwin with SHELL", "darwin", map[string]string{"SHELL": "/bin/bash"}, "/bin/bash"},
		{"windows with ComSpec", "windows", map[string]string{"ComSpec": `C:\Windows\system32\cmd.exe`}, `C:\Windows\system32\cmd.exe`},
		{"windows without ComSpec", "windows", nil, "cmd.exe"},
		{"windows with a Unix SHELL", "windows", map[string]string{"SHELL": "/usr/bin/bash"}, "cmd.exe"},
		{"windows with both", "windows", map[string]string{"SHELL": "/usr/bin/bash", "ComSpec": `D:\cmd.exe`}, `D:\cmd.exe`},
	} {
		got := defaultShell(tc.goos, func(k string) string { return tc.env[k] })
		if got != tc.want {
			t.Errorf("%s: defaultShell = %q, want %q", tc.name, got, tc.want)
		}
	}
}
