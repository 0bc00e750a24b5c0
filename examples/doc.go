// Package examples holds real agentbox policies and deployment files. It has
// no code: its test loads and resolves every examples/*.toml in a fixed
// world and compares the bubblewrap argv and the Windows spec built from it
// with golden files, so an example that stops working fails the build.
package examples
