package winsandbox

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
)

// CapabilitySID returns the capability SID of a writable root.
//
// Derivation: SHA-256 of "agentbox capability v1\x00" followed by the root's
// comparison form (winKey: backslashes, no trailing separator, lower case);
// the first 16 bytes, read as four little-endian uint32 values a, b, c, d,
// give S-1-5-21-a-b-c-d.
//
// Why this shape:
//   - Deterministic: the same root always gets the same SID, so a second run
//     finds and refreshes the ACEs of the first instead of adding new ones,
//     and `setup --uninstall` can recompute what it must remove.
//   - Per root: the runner's token is WRITE_RESTRICTED with exactly the SIDs
//     of this run's writable roots as restricting SIDs, so an ACE left on
//     another root by an earlier run (same group, different capability)
//     does not let this run write there.
//   - S-1-5-21 (NT authority, "non-unique" domain-relative form) rather than
//     S-1-15-3 (AppContainer capabilities): the kernel treats S-1-15-3 SIDs
//     specially and only matches them for AppContainer tokens, while a
//     restricting SID is compared by plain equality. Windows never issues a
//     domain SID that collides with 128 hashed bits in practice; such a SID
//     resolves to no account, and tools show it as an unknown SID.
//   - This is not a secret and need not be: holding the SID in an ACE grants
//     nothing to anyone whose token does not carry it, and only agentbox's
//     runner puts it in a token.
func CapabilitySID(root string) string {
	h := sha256.Sum256([]byte("agentbox capability v1\x00" + winKey(root)))
	return fmt.Sprintf("S-1-5-21-%d-%d-%d-%d",
		binary.LittleEndian.Uint32(h[0:]),
		binary.LittleEndian.Uint32(h[4:]),
		binary.LittleEndian.Uint32(h[8:]),
		binary.LittleEndian.Uint32(h[12:]))
}
