package hostexec

import (
	"bytes"
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"path/filepath"

	"github.com/agentbox/agentbox/plan"
)

// The index of a search is kept from run to run, one file per writable
// root, in agentbox's state folder (which the box cannot write): the next
// search lists again only the folders that changed since (see
// Search.Index), which makes a search of a large tree that has not changed
// about twice as fast. An index is never trusted beyond that: a folder
// whose identity or ctime differ is listed again, and the index only ever
// says which entries a folder held when it had that very ctime.

// indexMagic starts an index file; a file without it is ignored.
const indexMagic = "agentbox-index-1\n"

// IndexFile is where the index of the search of root is kept.
func IndexFile(state, root string) string {
	sum := sha256.Sum256([]byte(root))
	return filepath.Join(state, "index", hex.EncodeToString(sum[:16]))
}

type indexFile struct {
	Root string
	Idx  plan.Index
}

// EncodeIndex encodes what idx says of the folders in root.
func EncodeIndex(idx *plan.Index, root string) []byte {
	f := indexFile{Root: root, Idx: plan.Index{Taken: idx.Taken, Dirs: map[string]plan.IndexDir{}}}
	for d, v := range idx.Dirs {
		if d == root || len(d) > len(root) && d[:len(root)] == root && d[len(root)] == '/' {
			f.Idx.Dirs[d] = v
		}
	}
	var b bytes.Buffer
	b.WriteString(indexMagic)
	if gob.NewEncoder(&b).Encode(&f) != nil {
		return nil
	}
	return b.Bytes()
}

// DecodeIndex reads an index of root; nil when data is not one.
func DecodeIndex(data []byte, root string) *plan.Index {
	if !bytes.HasPrefix(data, []byte(indexMagic)) {
		return nil
	}
	var f indexFile
	if gob.NewDecoder(bytes.NewReader(data[len(indexMagic):])).Decode(&f) != nil || f.Root != root || f.Idx.Dirs == nil {
		return nil
	}
	return &f.Idx
}
