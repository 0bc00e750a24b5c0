package hostexec

import (
	"errors"
	"strings"

	"github.com/BurntSushi/toml"
)

// maxTOMLKeyParts bounds the dots and braces a box-written TOML file may
// hold before agentbox parses it: the TOML reader's time grows faster than
// the file with long dotted keys and nested inline tables (a 40 KB file of
// "a.a.a…" took 18 s), and a reader of what the box wrote must stay linear
// in its size. Real configuration files hold a few dozen.
const maxTOMLKeyParts = 2048

// errTOMLTooComplex is a file agentbox does not parse; what reads it treats
// it as unreadable (never as harmless).
var errTOMLTooComplex = errors.New("more dotted keys and inline tables than agentbox reads")

// decodeTOML is toml.Decode for files the box may have written, refusing
// one whose shape would make the parse slow.
func decodeTOML(data string, v any) error {
	if strings.Count(data, ".")+strings.Count(data, "{") > maxTOMLKeyParts {
		return errTOMLTooComplex
	}
	_, err := toml.Decode(data, v)
	return err
}
